// The model cache (js/main/cache.js) in Node, against a local server: a download lands in the cache
// directory byte for byte; a connection dropped mid-body is resumed with a Range request (in
// the same load, and in the next one); a changed ETag restarts it; a sha256 mismatch is an
// error and leaves nothing behind; not enough room is a NOMEM error before any byte moves;
// generating while the download runs gives the tokens of the finished file; offsets past 4 GiB;
// an abort keeps the bytes for the next load.
// Needs dist/ (make -f Makefile.emscripten) and the CLI ($OX_CLI or build/oxinfer).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { loadModel, listCachedModels, deleteCachedModel } from '../../js/main/index.js';
import { cacheSources } from '../../js/main/cache.js';
import { Worker } from 'node:worker_threads';
import { synth, tmpDir, requireDist } from '../oracle/fixtures.mjs';
import { startCacheServer, bodyOf } from './cache_server.mjs';

const TOKENS = [2, 5, 300, 301, 17, 900, 44, 6];
const GREEDY = { maxTokens: 12, temperature: 0, stopIds: [] };
let dir, model, modelBytes, server, base;

let files, log, plan;

before(async () => {
  requireDist();
  dir = tmpDir('cache');
  model = synth(dir, { preset: 'tiny', type: 'q8_0' });
  modelBytes = fs.readFileSync(model);
  server = await startCacheServer();
  ({ url: base, files, log, plan } = server);
});

after(() => {
  server?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

let n = 0;
// a fresh URL, cache directory and server state per test
function fresh(etag = '"v1"') {
  const name = `/m${++n}/model.gguf`;
  files.set(name, { bytes: modelBytes, etag });
  Object.assign(plan, { dropAfter: 0, slow: 0 });
  log.length = 0;
  return { url: base + name, name, cacheDir: path.join(dir, `cache${n}`) };
}

async function collect(stream) {
  const out = [];
  for await (const c of stream) if (c.token !== null) out.push(c.token);
  return out;
}

let expected;
async function referenceTokens() {
  if (!expected) {
    const m = await loadModel(model, { threads: 2 });
    expected = await collect(m.generate(TOKENS, GREEDY));
    await m.unload();
  }
  return expected;
}

// HostFiles reads of `len` bytes at each offset, on a worker thread
function readInWorker(src, offsets, len) {
  const code = `
    import { workerData, parentPort } from 'node:worker_threads';
    const { HostFiles } = await import(workerData.lib);
    const host = new HostFiles();
    const h = await host.open(workerData.src);
    parentPort.postMessage(workerData.offsets.map((off) => { const b = new Uint8Array(workerData.len); host.read(h, off, b); return b; }));
    host.closeAll();`;
  const w = new Worker(new URL(`data:text/javascript,${encodeURIComponent(code)}`), {
    workerData: { src, offsets, len, lib: new URL('../../js/host/hostfile.js', import.meta.url).href },
  });
  return new Promise((resolve, reject) => {
    w.once('message', resolve);
    w.once('error', reject);
  });
}

const cachedCopy = (cacheDir) =>
  fs
    .readdirSync(cacheDir)
    .filter((f) => f.endsWith('.bin'))
    .map((f) => path.join(cacheDir, f));

test('download into the cache directory, list, load again from the copy, delete', async () => {
  const { url, cacheDir } = fresh();
  const events = [];
  const m = await loadModel(url, {
    threads: 2,
    cache: { dir: cacheDir },
    onProgress: (e) => e.phase === 'download' && events.push(e),
  });
  await m.download;
  assert.deepEqual(await collect(m.generate(TOKENS, GREEDY)), await referenceTokens());
  await m.unload();
  const [copy] = cachedCopy(cacheDir);
  assert.ok(fs.readFileSync(copy).equals(modelBytes), 'the cached copy is the file');
  const last = events.at(-1);
  assert.equal(last.bytes, modelBytes.length);
  assert.equal(last.total, modelBytes.length);
  assert.equal(last.eta, 0);
  assert.ok(
    events.every(
      (e) => e.rate >= 0 && e.url === url && Object.keys(e).sort().join() === 'bytes,eta,phase,rate,total,url',
    ),
    'progress events: {phase, url, bytes, total, rate, eta}',
  );
  const list = await listCachedModels({ dir: cacheDir });
  assert.equal(list.length, 1);
  assert.deepEqual(
    { ...list[0], addedAt: 0 },
    {
      url,
      size: modelBytes.length,
      complete: true,
      bytes: modelBytes.length,
      etag: '"v1"',
      lastModified: null,
      addedAt: 0,
    },
  );

  // a second load reads the copy: one 1-byte check of the ETag, no body
  log.length = 0;
  const again = await loadModel(url, { threads: 2, cache: { dir: cacheDir } });
  await again.download;
  assert.deepEqual(await collect(again.generate(TOKENS, GREEDY)), await referenceTokens());
  await again.unload();
  assert.deepEqual(
    log.map((l) => l.range),
    ['bytes=0-1'],
  );

  assert.equal(await deleteCachedModel(url, { dir: cacheDir }), true);
  assert.deepEqual(await listCachedModels({ dir: cacheDir }), []);
  assert.deepEqual(fs.readdirSync(cacheDir), []);
  assert.equal(await deleteCachedModel(url, { dir: cacheDir }), false);
});

test('a connection dropped mid-body: resumed with Range in the same load', async () => {
  const { url, cacheDir } = fresh();
  plan.dropAfter = 2_000_000;
  const m = await loadModel(url, { threads: 2, cache: { dir: cacheDir } });
  await m.download;
  await m.unload();
  const downloads = log.filter((l) => l.range === null || /^bytes=\d+-$/.test(l.range)).map((l) => l.range);
  assert.deepEqual(downloads, [null, 'bytes=2000000-']);
  assert.ok(fs.readFileSync(cachedCopy(cacheDir)[0]).equals(modelBytes));
});

test('a download stopped by a failure resumes in the next load; an ETag change restarts it, also for a complete copy', async () => {
  const { url, name, cacheDir } = fresh();
  plan.dropAfter = 1_500_000;
  const m = await loadModel(url, { threads: 2, cache: { dir: cacheDir, retries: 0 } });
  await assert.rejects(
    m.download,
    (e) => e.code === 'IO' && /model\.gguf: download failed at byte 1500000 of \d+ after 1 attempts/.test(e.message),
  );
  await m.unload();
  const [entry] = await listCachedModels({ dir: cacheDir });
  assert.equal(entry.complete, false);
  assert.equal(entry.bytes, 1_500_000);

  // next load: continues from byte 1500000
  log.length = 0;
  plan.dropAfter = 1_000_000;
  const m2 = await loadModel(url, { threads: 2, cache: { dir: cacheDir, retries: 0 } });
  await assert.rejects(m2.download, /failed at byte 2500000/);
  await m2.unload();
  assert.deepEqual(
    log.filter((l) => /^bytes=\d+-$/.test(l.range ?? '')).map((l) => l.range),
    ['bytes=1500000-'],
  );

  // the file changed on the server: the resume sees the new ETag and starts over
  files.get(name).etag = '"v2"';
  log.length = 0;
  const m3 = await loadModel(url, { threads: 2, cache: { dir: cacheDir } });
  await m3.download;
  await m3.unload();
  assert.deepEqual(
    log.filter((l) => l.range === null || /^bytes=\d+-$/.test(l.range)).map((l) => l.range),
    ['bytes=2500000-', null],
  );
  assert.ok(fs.readFileSync(cachedCopy(cacheDir)[0]).equals(modelBytes));
  const [done] = await listCachedModels({ dir: cacheDir });
  assert.equal(done.etag, '"v2"');
  assert.equal(done.complete, true);

  // a complete copy whose file changed on the server is downloaded again
  files.get(name).etag = '"v3"';
  log.length = 0;
  const m4 = await loadModel(url, { threads: 2, cache: { dir: cacheDir } });
  await m4.download;
  await m4.unload();
  assert.deepEqual(
    log.filter((l) => l.range === null || /^bytes=\d+-$/.test(l.range)).map((l) => l.range),
    [null],
  );
  assert.equal((await listCachedModels({ dir: cacheDir }))[0].etag, '"v3"');
});

test('sha256: a match completes, a mismatch is an error and deletes the partial copy', async () => {
  const good = crypto.createHash('sha256').update(modelBytes).digest('hex');
  const a = fresh();
  plan.dropAfter = 3_000_000; // the hash survives the resume
  const m = await loadModel(a.url, { threads: 2, cache: { dir: a.cacheDir, sha256: good } });
  await m.download;
  await m.unload();
  assert.equal((await listCachedModels({ dir: a.cacheDir }))[0].complete, true);
  const bad = good.replace(/^./, (c) => (c === '0' ? '1' : '0'));
  // a complete copy asked for with another sha256 is checked again before it is used (from
  // the disk: no download): the load fails, the copy is deleted
  log.length = 0;
  await assert.rejects(
    loadModel(a.url, { threads: 2, cache: { dir: a.cacheDir, sha256: bad } }),
    (e) => e.code === 'IO' && /sha256 mismatch/.test(e.message),
  );
  assert.ok(
    log.every((l) => /^bytes=\d+-\d+$/.test(l.range ?? '')),
    'no download',
  );
  assert.deepEqual(await listCachedModels({ dir: a.cacheDir }), []);

  // the engine is handed the copy only once it is verified: a mismatch fails the load itself
  const b = fresh();
  await assert.rejects(
    loadModel(b.url, { threads: 2, cache: { dir: b.cacheDir, sha256: bad } }),
    (e) =>
      e.code === 'IO' &&
      e.message.includes(`model.gguf: sha256 mismatch: expected ${bad}, got ${good}; the cached copy was deleted`),
  );
  assert.deepEqual(await listCachedModels({ dir: b.cacheDir }), []);
  assert.deepEqual(fs.readdirSync(b.cacheDir), []);
  await assert.rejects(
    loadModel(b.url, { cache: { dir: b.cacheDir, sha256: 'abc' } }),
    (e) => e.code === 'RANGE' && /64 hex digits/.test(e.message),
  );
});

test('not enough room: NOMEM naming the file and the bytes, before the download', async () => {
  const { url, cacheDir } = fresh();
  await assert.rejects(
    loadModel(url, { cache: { dir: cacheDir, maxBytes: 1000 } }),
    (e) =>
      e.code === 'NOMEM' &&
      e.message ===
        `model.gguf: not enough storage to cache it: ${modelBytes.length} more bytes needed, 1000 left of cache.maxBytes=1000`,
  );
  assert.deepEqual(await listCachedModels({ dir: cacheDir }), []);
  assert.ok(
    log.every((l) => l.range === null),
    'no body was read',
  );
});

test('generation while the download runs gives the tokens of the finished file', async () => {
  const { url, cacheDir } = fresh();
  plan.slow = 16 << 10; // ~1.6 MB/s: the download takes ~4 s
  let finished = false;
  const m = await loadModel(url, { threads: 2, cache: { dir: cacheDir } });
  m.download.then(() => (finished = true));
  const tokens = await collect(m.generate(TOKENS, GREEDY));
  const during = !finished;
  const engineReads = log.filter((l) => /^bytes=\d+-\d+$/.test(l.range ?? '') && l.range !== 'bytes=0-1').length;
  await m.download;
  await m.unload();
  assert.ok(during, 'generation ended before the download did');
  assert.ok(engineReads > 0, 'the engine read ranges not yet cached from the URL');
  assert.deepEqual(tokens, await referenceTokens());
  assert.ok(fs.readFileSync(cachedCopy(cacheDir)[0]).equals(modelBytes));
});

test('files over 4 GiB: a resume past 2^32 and reads there from the copy and the URL', async () => {
  const big = 2 ** 32 + (3 << 20),
    have = 2 ** 32 + (1 << 20);
  const byteAt = (off) => (off < 2 ** 32 ? 0 : (off * 31 + (off >>> 12)) & 255);
  const name = '/big/huge.bin';
  files.set(name, { size: big, byteAt, etag: '"big"' });
  const url = base + name;
  const cacheDir = path.join(dir, 'cache-big');
  fs.mkdirSync(cacheDir);
  // a partial copy as an earlier session left it: sparse below 2^32, then 1 MiB of real bytes
  const key = crypto.createHash('sha256').update(url).digest('hex');
  const fd = fs.openSync(path.join(cacheDir, key + '.bin'), 'w');
  fs.ftruncateSync(fd, 2 ** 32);
  fs.writeSync(fd, bodyOf({ byteAt }, 2 ** 32, have - 1), 0, 1 << 20, 2 ** 32);
  fs.closeSync(fd);
  fs.writeFileSync(
    path.join(cacheDir, key + '.json'),
    JSON.stringify({ url, size: big, etag: '"big"', lastModified: null, addedAt: 1, complete: false, bytes: have }),
  );

  // the host-file table blocks its thread while it reads: read from another one
  const src = {
    kind: 'cached',
    name: 'huge.bin',
    url,
    size: big,
    want: { size: big, validator: '"big"' },
    dir: cacheDir,
    key,
  };
  const offsets = [2 ** 32 + 100, have - 10, have + 12345];
  log.length = 0;
  const got = await readInWorker(src, offsets, 100);
  offsets.forEach((off, i) =>
    assert.deepEqual(Buffer.from(got[i]), bodyOf({ byteAt }, off, off + 99), `bytes at ${off}`),
  );
  // the URL's probe at open, then only the reads past the copy's end went to the server
  assert.deepEqual(
    log.map((l) => l.range),
    ['bytes=0-1', `bytes=${have - 10}-${have + 89}`, `bytes=${have + 12345}-${have + 12444}`],
  );

  log.length = 0;
  const { done } = await cacheSources([{ kind: 'url', url, name: 'huge.bin' }], { cache: { dir: cacheDir } });
  await done;
  assert.deepEqual(
    log.map((l) => l.range),
    [`bytes=${have}-`],
  );
  const tail = Buffer.alloc(2 << 20);
  const fd2 = fs.openSync(path.join(cacheDir, key + '.bin'), 'r');
  fs.readSync(fd2, tail, 0, tail.length, have);
  fs.closeSync(fd2);
  assert.ok(tail.equals(bodyOf({ byteAt }, have, big - 1)), 'the resumed tail');
  assert.equal((await listCachedModels({ dir: cacheDir }))[0].complete, true);
});

test('an abort stops the download (ABORTED) and keeps what it had for the next load', async () => {
  const { url, cacheDir } = fresh();
  plan.slow = 16 << 10;
  const ac = new AbortController();
  const m = await loadModel(url, { threads: 2, cache: { dir: cacheDir }, signal: ac.signal });
  await new Promise((r) => setTimeout(r, 500));
  ac.abort();
  await assert.rejects(
    m.download,
    (e) => e.code === 'ABORTED' && /model\.gguf: download aborted at byte \d+/.test(e.message),
  );
  await m.unload();
  const [entry] = await listCachedModels({ dir: cacheDir });
  assert.equal(entry.complete, false);
  assert.ok(entry.bytes > 0 && entry.bytes < modelBytes.length, `kept ${entry.bytes} bytes`);
  plan.slow = 0;
  log.length = 0;
  const again = await loadModel(url, { threads: 2, cache: { dir: cacheDir } });
  await again.download;
  await again.unload();
  assert.deepEqual(
    log.filter((l) => /^bytes=\d+-$/.test(l.range ?? '')).map((l) => l.range),
    [`bytes=${entry.bytes}-`],
  );
  assert.ok(fs.readFileSync(cachedCopy(cacheDir)[0]).equals(modelBytes));
});
