// The host-file table alone (js/host/hostfile.js): the same bytes from a path, a Blob and HTTP
// Range; every HTTP failure mode is an error with a code and the file's name; a 3 GB sparse
// file reads at high offsets without a 3 GB buffer; the small-read LRU; copies into shared memory
// at any alignment.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { HostFiles } from '../../js/host/hostfile.js';
import { CHUNK, copyShared } from '../../js/host/copy.js';
import { describeSource } from '../../js/host/source.js';
import { OxError } from '../../js/shared/errors.js';
import { dataServer } from './hostfile_server.mjs';

const SIZE = CHUNK + 123457; // more than one chunk, odd tail
const fx = dataServer('oxhost', SIZE);
const { dir, file, bytes } = fx;

function readAt(host, h, off, len) {
  const dst = new Uint8Array(len);
  host.read(h, off, dst);
  return dst;
}

function throwsCode(fn, code, pattern) {
  assert.throws(fn, (e) => {
    assert.ok(e instanceof OxError, `not a OxError: ${e}`);
    assert.equal(e.code, code, e.message);
    assert.match(e.message, pattern);
    return true;
  });
}

// copyShared moves misaligned chunks through a bounce buffer (V8's byte-by-byte path into shared
// memory is 4-5x slower): the bytes must be exactly dst.set's, whatever the two alignments
// and lengths (across the 64 KiB bounce size), and nothing outside [at, at + length) changes.
test('copyShared writes exactly what set() writes, at any alignment', () => {
  const src = new Uint8Array(200_000).map((_, i) => (i * 131 + 7) & 255);
  fc.assert(
    fc.property(fc.nat(15), fc.integer({ min: 0, max: 140_000 }), fc.nat(15), fc.nat(16), (so, len, dof, at) => {
      const part = src.subarray(so, so + len);
      const want = new Uint8Array(new SharedArrayBuffer(150_000)).fill(9),
        got = new Uint8Array(new SharedArrayBuffer(150_000)).fill(9);
      want.subarray(dof).set(part, at);
      copyShared(got.subarray(dof), part, at);
      return Buffer.compare(want, got) === 0;
    }),
    { numRuns: 200 },
  );
});

test('describeSource: paths, URLs, blobs, named objects', () => {
  assert.deepEqual(describeSource('/a/b/model.gguf'), { kind: 'path', path: '/a/b/model.gguf', name: 'model.gguf' });
  assert.deepEqual(describeSource('http://h/x/config.json?x=1'), {
    kind: 'url',
    url: 'http://h/x/config.json?x=1',
    name: 'config.json',
  });
  assert.equal(describeSource(new URL('file:///t/m%201.gguf')).path, '/t/m 1.gguf');
  const b = new Blob([new Uint8Array(4)]);
  assert.equal(describeSource(b).kind, 'blob');
  assert.equal(describeSource({ blob: b, name: 'tokenizer.json' }).name, 'tokenizer.json');
  assert.equal(describeSource({ url: 'http://h/a/b', name: 'model.gguf' }).name, 'model.gguf');
  assert.throws(
    () => describeSource(42),
    (e) => e.code === 'RANGE',
  );
});

test('path, Blob and HTTP give the same bytes, across chunk boundaries', async () => {
  const host = new HostFiles({ cacheBytes: 0 });
  const hp = await host.open(file);
  const hb = await host.open({ blob: new Blob([bytes]), name: 'data.bin' });
  const hu = await host.open(`${fx.server.base}/f/data.bin`);
  // a server that hides Content-Range (CORS): the size comes from HEAD, reads check the length
  const hh = await host.open(`${fx.server.base}/hidden/data.bin`);
  assert.equal(host.size(hh), SIZE);
  assert.deepEqual(readAt(host, hh, CHUNK - 10, 20), bytes.subarray(CHUNK - 10, CHUNK + 10));
  for (const h of [hp, hb, hu]) {
    assert.equal(host.size(h), SIZE);
    assert.equal(host.name(h), 'data.bin');
  }
  const spans = [
    [0, 1],
    [0, 4096],
    [CHUNK - 10, 20],
    [SIZE - 7, 7],
    [12345, CHUNK + 1000],
    [0, SIZE],
  ];
  for (const [off, len] of spans) {
    const want = bytes.subarray(off, off + len);
    for (const h of [hp, hb, hu])
      assert.deepEqual(readAt(host, h, off, len), want, `handle ${h} off ${off} len ${len}`);
  }
  // into shared memory (what wasm memory is with pthreads)
  const shared = new Uint8Array(new SharedArrayBuffer(64));
  for (const h of [hp, hb, hu]) {
    shared.fill(0);
    host.read(h, 1000, shared.subarray(8, 40));
    assert.deepEqual(shared.slice(8, 40), bytes.slice(1000, 1032));
    assert.equal(shared[7], 0);
  }
  throwsCode(
    () => readAt(host, hu, SIZE - 3, 4),
    'TRUNCATED',
    /data\.bin: read of 4 bytes at offset \d+ beyond file end/,
  );
  host.closeAll();
});

test('HTTP failures are errors with codes and the file name', async () => {
  const host = new HostFiles();
  await assert.rejects(
    host.open(`${fx.server.base}/nope/missing.gguf`),
    (e) => e.code === 'MISSING' && /missing\.gguf: HTTP 404/.test(e.message),
  );
  await assert.rejects(
    host.open(`${fx.server.base}/norange/data.bin`),
    (e) =>
      e.code === 'UNSUPPORTED' &&
      /data\.bin: the server ignored the Range header \(HTTP 200 instead of 206\)/.test(e.message),
  );
  await assert.rejects(
    host.open('http://127.0.0.1:9/x.gguf'),
    (e) => e.code === 'IO' && /x\.gguf: fetch failed/.test(e.message),
  );

  const short = await host.open(`${fx.server.base}/short/data.bin`);
  throwsCode(() => readAt(host, short, 100, 5000), 'IO', /data\.bin: short body/);

  const changing = await host.open(`${fx.server.base}/changing/data.bin`);
  throwsCode(
    () => readAt(host, changing, 0, 10),
    'IO',
    /data\.bin: the file changed on the server while in use \("v0" -> "v1"\)/,
  );

  const shrinking = await host.open(`${fx.server.base}/shrinking/data.bin`);
  throwsCode(() => readAt(host, shrinking, 10, 10), 'IO', /data\.bin: HTTP 416/);

  // readInto (the wasm entry point) turns the same errors into err.h codes + a message
  assert.equal(host.readInto(shrinking, 10, new Uint8Array(10)), -1);
  assert.match(host.lastError, /data\.bin: HTTP 416/);
  assert.equal(host.readInto(shrinking, SIZE, new Uint8Array(1)), -3);
  assert.equal(host.readInto(99, 0, new Uint8Array(1)), -1);
  assert.match(host.lastError, /unknown host file 99/);

  // a good file still reads after all that
  const ok = await host.open(`${fx.server.base}/f/data.bin`);
  assert.deepEqual(readAt(host, ok, 5, 3), bytes.slice(5, 8));
  host.closeAll();
});

test('missing path and directory are clear errors', async () => {
  const host = new HostFiles();
  await assert.rejects(
    host.open(path.join(dir, 'nope.gguf')),
    (e) => e.code === 'MISSING' && /nope\.gguf: cannot open/.test(e.message),
  );
  await assert.rejects(host.open(dir), (e) => e.code === 'IO' && /not a regular file/.test(e.message));
});

test('a 3 GB sparse file reads at high offsets without a 3 GB buffer', async () => {
  const big = path.join(dir, 'big.bin');
  const size = 3 * 1024 ** 3 + 17;
  fs.closeSync(fs.openSync(big, 'w'));
  fs.truncateSync(big, size);
  const tail = new TextEncoder().encode('tail!');
  const fd = fs.openSync(big, 'r+');
  fs.writeSync(fd, tail, 0, tail.length, size - tail.length);
  fs.writeSync(fd, tail, 0, tail.length, 2 ** 31 + 3);
  fs.closeSync(fd);
  const rss0 = process.memoryUsage().rss;
  const host = new HostFiles();
  const h = await host.open(big);
  assert.equal(host.size(h), size);
  assert.deepEqual(readAt(host, h, size - 5, 5), tail);
  assert.deepEqual(readAt(host, h, 2 ** 31 + 3, 5), tail);
  assert.deepEqual(readAt(host, h, 3 * 2 ** 30 - 2, 4), new Uint8Array(4));
  assert.ok(process.memoryUsage().rss - rss0 < 256 * 1024 ** 2, 'resident memory grew by less than 256 MiB');
  throwsCode(
    () => readAt(host, h, size - 2, 3),
    'TRUNCATED',
    /big\.bin: read of 3 bytes at offset 3221225487 beyond file end \(3221225489 bytes\)/,
  );
  host.closeAll();
});

test('small reads are served from the LRU; large ones are not cached', async () => {
  const host = new HostFiles({ cacheBytes: 3000, cacheMaxRead: 1000 });
  const h = await host.open(file);
  readAt(host, h, 0, 1000);
  readAt(host, h, 1000, 1000);
  assert.deepEqual(host.stats, { reads: 2, bytesRead: 2000, cacheHits: 0, cacheBytesServed: 0 });
  assert.deepEqual(readAt(host, h, 0, 1000), bytes.slice(0, 1000));
  assert.equal(host.stats.cacheHits, 1);
  readAt(host, h, 2000, 1000);
  readAt(host, h, 3000, 1000); // evicts the least recent: 1000..2000
  readAt(host, h, 1000, 1000);
  assert.equal(host.stats.cacheHits, 1);
  assert.equal(host.stats.reads, 5);
  readAt(host, h, 0, 2000); // too big to cache
  readAt(host, h, 0, 2000);
  assert.equal(host.stats.reads, 7);
  assert.ok(host.cacheUsed <= 3000);
  host.closeAll();
});
