// The model cache (js/main/cache.js, js/host/cache_store.js) against a hostile or careless server:
// with cache.sha256 the engine reads no byte before the hash is checked (the load resolves
// with the copy complete and verified; a mismatch fails the load, and the engine never sent a
// read); a server with neither ETag nor Last-Modified gets no resume (a file replaced by
// another of the same size between two attempts is not spliced: the download starts again);
// a 206 answering a request without Range is refused, nothing written at offset 0.
// Needs dist/ (make -f Makefile.emscripten) and the CLI ($OX_CLI or build/oxinfer).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { loadModel, listCachedModels } from '../../js/main/index.js';
import { synth, tmpDir, requireDist } from '../oracle/fixtures.mjs';
import { startCacheServer } from './cache_server.mjs';

let dir, modelBytes, server;
let n = 0;

before(async () => {
  requireDist();
  dir = tmpDir('cache-hostile');
  modelBytes = fs.readFileSync(synth(dir, { preset: 'tiny', type: 'q8_0' }));
  server = await startCacheServer();
});

after(() => {
  server?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

function fresh(file) {
  const name = `/h${++n}/model.gguf`;
  server.files.set(name, file);
  Object.assign(server.plan, { dropAfter: 0, slow: 0, partialFrom: 0 });
  server.log.length = 0;
  return { url: server.url + name, name, cacheDir: path.join(dir, `cache${n}`) };
}
const sha = (b) => crypto.createHash('sha256').update(b).digest('hex');
const engineReads = () => server.log.filter((l) => /^bytes=\d+-\d+$/.test(l.range ?? ''));
const keyOf = (url) => crypto.createHash('sha256').update(url).digest('hex');

test('sha256 match: the load resolves with the copy complete and verified; the engine read nothing before', async () => {
  const { url, cacheDir } = fresh({ bytes: modelBytes, etag: '"a"' });
  server.plan.slow = 1 << 20; // the download takes a while: an engine reading early would show
  const m = await loadModel(url, { threads: 2, cache: { dir: cacheDir, sha256: sha(modelBytes) } });
  try {
    assert.deepEqual(engineReads(), [], 'no read of the URL by the engine');
    const [entry] = await listCachedModels({ dir: cacheDir });
    assert.equal(entry.complete, true, 'complete when the load resolved');
    await m.download;
    const out = [];
    for await (const c of m.generate([2, 5, 300], { maxTokens: 3, temperature: 0, stopIds: [] }))
      if (c.token !== null) out.push(c.token);
    assert.equal(out.length, 3);
  } finally {
    await m.unload();
  }
});

test('sha256 mismatch: the load fails, the engine never read a byte, the copy is gone', async () => {
  const { url, cacheDir } = fresh({ bytes: modelBytes, etag: '"b"' });
  const bad = sha(Buffer.from('not the model'));
  await assert.rejects(
    loadModel(url, { threads: 2, cache: { dir: cacheDir, sha256: bad } }),
    (e) => e.code === 'IO' && /sha256 mismatch/.test(e.message),
  );
  assert.deepEqual(engineReads(), []);
  assert.deepEqual(fs.readdirSync(cacheDir), []);
});

test('no ETag and no Last-Modified: no resume, the download starts again (no splice of two versions)', async () => {
  const other = Buffer.from(modelBytes);
  for (let i = 1 << 20; i < other.length; i += 997) other[i] ^= 0x5a; // another version, same size (weights only)
  const f = fresh({ bytes: modelBytes });
  server.plan.dropAfter = 3_000_000;
  const m = await loadModel(f.url, { threads: 2, cache: { dir: f.cacheDir, retries: 0 } });
  await assert.rejects(m.download, (e) => e.code === 'IO');
  await m.unload();
  const bin = path.join(f.cacheDir, keyOf(f.url) + '.bin');
  assert.ok(fs.statSync(bin).size > 0, 'a partial copy is on disk');
  server.files.set(f.name, { bytes: other }); // the server now has the other version
  server.log.length = 0;
  const m2 = await loadModel(f.url, { threads: 2, cache: { dir: f.cacheDir } });
  await m2.download;
  await m2.unload();
  assert.ok(
    server.log.every((l) => !/^bytes=[1-9]\d*-$/.test(l.range ?? '')),
    `no resume was asked: ${server.log.map((l) => l.range).join(' ')}`,
  );
  assert.ok(fs.readFileSync(bin).equals(other), 'the copy is the current version, byte for byte');
});

test('a 206 answering a request without Range is refused; nothing is written at offset 0', async () => {
  const { url, cacheDir } = fresh({ bytes: modelBytes, etag: '"c"' });
  server.plan.partialFrom = 1000;
  await assert.rejects(
    loadModel(url, { threads: 2, cache: { dir: cacheDir } }),
    (e) => e.code === 'IO' && /bytes 1000-/.test(e.message),
  );
  assert.deepEqual(await listCachedModels({ dir: cacheDir }), []);
  assert.ok(!fs.existsSync(path.join(cacheDir, keyOf(url) + '.bin')), 'no data file');
});
