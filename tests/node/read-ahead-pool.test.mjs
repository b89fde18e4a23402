// The reader thread's read-ahead windows (js/host/reader_worker.js) reuse their buffers: a window a
// read has awaited gives its buffer to the next window at once, one dropped while its request
// is still in flight only once that request has ended. A scan that jumps away from windows
// still arriving (slowly) must not get their late bytes: the scan after the jump is checked
// byte for byte while those old requests keep writing.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Worker } from 'node:worker_threads';
import { HostFiles } from '../../js/host/hostfile.js';
import { CHUNK } from '../../js/host/copy.js';

const MiB = 1 << 20;
const SIZE = 64 * MiB;
const SLOW = 32 * MiB; // bodies below this offset come in 4 pieces, later windows slower
const byteAt = (i) => Math.imul(i, 2654435761) >>> 24;

// in its own thread: the host-file table blocks the test's thread during a read
const SERVER = `
const http = require('node:http');
const { parentPort, workerData: { size, slow, chunk } } = require('node:worker_threads');
const byteAt = ${byteAt.toString()};
const server = http.createServer((req, res) => {
  const [, a, b] = /bytes=(\\d+)-(\\d+)/.exec(req.headers.range ?? '') ?? [];
  if (a === undefined) return res.writeHead(200, { 'Content-Length': size }).end();
  const from = Number(a), to = Math.min(Number(b), size - 1), body = Buffer.alloc(to - from + 1);
  for (let k = 0; k < body.length; k++) body[k] = byteAt(from + k);
  res.writeHead(206, { 'Content-Range': 'bytes ' + from + '-' + to + '/' + size, 'Content-Length': body.length, ETag: '"v"' });
  const pause = from < slow ? (Math.floor(from / chunk) + 1) * 150 : 0;
  const piece = Math.ceil(body.length / 4);
  const send = (k) => {
    if (k * piece >= body.length) return res.end();
    res.write(body.subarray(k * piece, (k + 1) * piece));
    setTimeout(() => send(k + 1), pause);
  };
  send(0);
});
server.listen(0, '127.0.0.1', () => parentPort.postMessage(server.address().port));
`;

let server, base;
before(async () => {
  server = new Worker(SERVER, { eval: true, workerData: { size: SIZE, slow: SLOW, chunk: CHUNK } });
  base = `http://127.0.0.1:${await new Promise((resolve, reject) => server.once('message', resolve).once('error', reject))}`;
});
after(() => server?.terminate());

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function check(host, h, off, len) {
  const dst = new Uint8Array(len);
  host.read(h, off, dst);
  for (let k = 0; k < len; k++)
    if (dst[k] !== byteAt(off + k)) assert.fail(`byte ${off + k}: ${dst[k]}, want ${byteAt(off + k)}`);
}

test(
  'a scan that jumps away from windows still in flight reads exact bytes while they arrive',
  { timeout: 60000 },
  async () => {
    const host = new HostFiles({ cacheBytes: 0 });
    const h = await host.open(`${base}/data.bin`);
    // a scan starts: windows at 1, 9, 17 and 25 MiB, the later ones slower (up to 2.4 s)
    check(host, h, 0, MiB);
    check(host, h, MiB, MiB);
    // a jump, then a scan there: the old windows are dropped, three of them still arriving
    check(host, h, 40 * MiB, MiB);
    for (let off = 41 * MiB; off < SIZE; off += MiB) {
      check(host, h, off, MiB);
      await sleep(150); // (under the reader's 1 s idle bound: the windows stay)
    }
    host.closeAll();
  },
);

// Reads into shared memory (wasm memory of a threaded build) take their bytes straight from the
// span's body: exact bytes across small and large reads, alignment gaps and a jump, and not one
// byte outside the places read.
test('reads into shared memory: a scan with gaps, reads larger than a chunk, a jump', { timeout: 60000 }, async () => {
  const host = new HostFiles({ cacheBytes: 0 });
  const h = await host.open(`${base}/data.bin`);
  const mem = new Uint8Array(new SharedArrayBuffer(SIZE + 64));
  const reads = [
    [0, MiB],
    [MiB, MiB],
    [2 * MiB + 32, 3 * MiB],
    [5 * MiB + 40, 2 * CHUNK + 7],
    [48 * MiB, MiB],
    [49 * MiB + 16, 3 * MiB],
    [52 * MiB + 16, 12 * MiB - 16],
  ];
  mem.fill(0xee);
  for (const [off, len] of reads) host.read(h, off, mem.subarray(off + 32, off + 32 + len));
  let k = 0;
  for (const [off, len] of reads) {
    for (; k < off + 32; k++) if (mem[k] !== 0xee) assert.fail(`byte ${k} written outside the reads`);
    for (; k < off + 32 + len; k++)
      if (mem[k] !== byteAt(k - 32)) assert.fail(`byte ${k - 32}: ${mem[k]}, want ${byteAt(k - 32)}`);
  }
  host.closeAll();
});

// A read into shared memory that is aborted while its body still arrives: nothing lands in that
// memory after the read has thrown (the memory is the caller's again), and the table says why
// its next read fails.
test('an aborted read into shared memory writes nothing after it throws', { timeout: 60000 }, async () => {
  const abortFlag = new Int32Array(new SharedArrayBuffer(4));
  const host = new HostFiles({ cacheBytes: 0, abortFlag });
  const h = await host.open(`${base}/data.bin`);
  const mem = new Uint8Array(new SharedArrayBuffer(20 * MiB)).fill(0xee);
  // the body from 20 MiB comes in 4 pieces 450 ms apart: the abort falls after the first
  const timer = new Worker(
    'const { workerData: f } = require("node:worker_threads"); setTimeout(() => { Atomics.store(f, 0, 1); }, 250);',
    { eval: true, workerData: abortFlag },
  );
  assert.throws(
    () => host.read(h, 20 * MiB, mem),
    (e) => e.code === 'ABORTED' && /data\.bin: read of bytes/.test(e.message),
  );
  const seen = mem.slice();
  assert.ok(
    seen.some((b) => b === 0xee),
    'the whole body arrived before the abort',
  );
  await sleep(2000); // the rest of the body reaches the reader thread
  assert.deepEqual(mem, seen, 'bytes written after the read threw');
  Atomics.store(abortFlag, 0, 0);
  assert.throws(
    () => host.read(h, 0, new Uint8Array(16)),
    (e) => /an earlier read was aborted/.test(e.message),
  );
  await timer.terminate();
  host.closeAll();
});

// A long read into shared memory whose body keeps arriving, slowly, for longer than the host's
// timeout plus the bridge's margin: each wait for bytes is bounded, not the read as a whole.
const DRIP = `
const http = require('node:http');
const { parentPort, workerData: { size } } = require('node:worker_threads');
const byteAt = ${byteAt.toString()};
http.createServer((req, res) => {
  const [, a, b] = /bytes=(\\d+)-(\\d+)/.exec(req.headers.range ?? '') ?? [];
  if (a === undefined) return res.writeHead(200, { 'Content-Length': size }).end();
  const from = Number(a), to = Math.min(Number(b), size - 1), body = Buffer.alloc(to - from + 1);
  for (let k = 0; k < body.length; k++) body[k] = byteAt(from + k);
  res.writeHead(206, { 'Content-Range': 'bytes ' + from + '-' + to + '/' + size, 'Content-Length': body.length, ETag: '"v"' });
  const piece = 256 << 10;
  const send = (k) => {
    if (k * piece >= body.length) return res.end();
    res.write(body.subarray(k * piece, (k + 1) * piece));
    setTimeout(() => send(k + 1), 150);
  };
  send(0);
}).listen(0, '127.0.0.1', function () { parentPort.postMessage(this.address().port); });
`;

test('a long read into shared memory that keeps arriving outlasts the timeout', { timeout: 60000 }, async () => {
  const drip = new Worker(DRIP, { eval: true, workerData: { size: 16 * MiB } });
  try {
    const port = await new Promise((resolve, reject) => drip.once('message', resolve).once('error', reject));
    const host = new HostFiles({ cacheBytes: 0, timeoutMs: 1000 });
    const h = await host.open(`http://127.0.0.1:${port}/data.bin`);
    const mem = new Uint8Array(new SharedArrayBuffer(12 * MiB));
    const t0 = Date.now();
    host.read(h, MiB, mem); // 48 pieces 150 ms apart: 7 s, past 1 s + the bridge's 5 s margin
    assert.ok(Date.now() - t0 > 6000, `the read took only ${Date.now() - t0} ms`);
    for (let k = 0; k < mem.length; k++)
      if (mem[k] !== byteAt(MiB + k)) assert.fail(`byte ${MiB + k}: ${mem[k]}, want ${byteAt(MiB + k)}`);
    host.closeAll();
  } finally {
    await drip.terminate();
  }
});
