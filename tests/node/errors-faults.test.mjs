// Faults of the environment through the JS API (js/main/index.js on the wasm engine in dist/):
// a model server that accepts and never answers (the load ends in IO naming the file and what
// timed out, or in ABORTED at once on the signal); wasm memory growth refused in the middle of
// a generation (OX_TEST_MAX_MEMORY caps the threaded build's memory: the generation ends in
// NOMEM and the model then gives the logits it gave before the fault); the engine worker
// killed while calls are pending (they reject with STATE, and loadModel works again).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { loadModel, OxError } from '../../js/main/index.js';
import { cli, tmpDir, requireDist } from '../oracle/fixtures.mjs';
import { startServer } from './hostfile_server.mjs';

// 2 layers x 4 KV heads x 256 dims: 16 KiB of KV cache per position, so the cache's doubling
// steps are what grows wasm memory during a generation
const KVHEAVY = [
  '--hidden',
  '64',
  '--layers',
  '2',
  '--heads',
  '4',
  '--kv-heads',
  '4',
  '--head-dim',
  '256',
  '--global-head-dim',
  '256',
  '--ffn',
  '64',
  '--ple',
  '16',
  '--vocab',
  '384',
  '--user-tokens',
  '4',
  '--swa-period',
  '2',
  '--kv-shared',
  '0',
  '--window',
  '4096',
  '--ctx',
  '4096',
  '--all-byte-tokens',
];

let dir, good, server;

before(async () => {
  requireDist();
  dir = tmpDir('faults');
  good = path.join(dir, 'kv.gguf');
  cli(['synth', '--preset', 'tiny', '--type', 'f32', ...KVHEAVY, '-o', good]);
  server = await startServer({ 'kv.gguf': good });
});

after(() => server?.close());

function isOx(e, code, re) {
  assert.ok(e instanceof OxError, `an OxError, got ${e?.constructor?.name}: ${e?.message}`);
  assert.equal(e.code, code, e.message);
  if (re) assert.match(e.message, re);
  return true;
}

const drain = async (it) => {
  let n = 0;
  for await (const c of it) if (c.token !== null) n++;
  return n;
};

test('a model server that never answers: IO after host.timeoutMs, ABORTED at once on the signal; then loads work', async () => {
  const url = `${server.base}/stall/kv.gguf`;
  const t0 = Date.now();
  await assert.rejects(loadModel(url, { threads: 1, host: { timeoutMs: 500 } }), (e) =>
    isOx(e, 'IO', /kv\.gguf: first request \(bytes 0-1\): no answer in 500 ms/),
  );
  assert.ok(Date.now() - t0 < 10000);
  const ac = new AbortController();
  setTimeout(() => ac.abort(), 300);
  const t1 = Date.now();
  await assert.rejects(loadModel(url, { threads: 1, signal: ac.signal }), (e) => isOx(e, 'ABORTED'));
  assert.ok(Date.now() - t1 < 5000, `aborted after ${Date.now() - t1} ms`);
  // a load stuck in a read (the probe answered, the reads never are)
  const ac2 = new AbortController();
  setTimeout(() => ac2.abort(), 300);
  await assert.rejects(loadModel(`${server.base}/stallread/kv.gguf`, { threads: 1, signal: ac2.signal }), (e) =>
    isOx(e, 'ABORTED'),
  );
  const m = await loadModel(`${server.base}/f/kv.gguf`, { threads: 1 });
  assert.equal((await m.logits([2, 3])).length, 384);
  await m.unload();
});

test('wasm memory growth refused mid-generation: NOMEM, then the same model gives the logits it gave before', async () => {
  // the memory a loaded model with a short context uses, plus 6 MiB: the KV cache outgrows it
  // after a few hundred positions
  const probe = await loadModel(good, { threads: 2 });
  await probe.logits([2, 3, 4]);
  const base = (await probe.stats()).wasmMemoryBytes;
  await probe.unload();
  process.env.OX_TEST_MAX_MEMORY = String(base + (6 << 20));
  let m;
  try {
    m = await loadModel(good, { threads: 2 });
  } finally {
    delete process.env.OX_TEST_MAX_MEMORY;
  }
  try {
    const prompt = [2, 100, 101, 102];
    const before = await m.logits(prompt);
    await assert.rejects(drain(m.generate([2, 5], { maxTokens: 4000, temperature: 0, stopIds: [] })), (e) =>
      isOx(e, 'NOMEM', /out of memory|cannot allocate/),
    );
    const s = await m.stats();
    assert.ok(s.wasmMemoryBytes <= base + (6 << 20), `wasm memory ${s.wasmMemoryBytes} stayed under the cap`);
    assert.deepEqual(Array.from(await m.logits(prompt)), Array.from(before));
    assert.equal(await drain(m.generate(prompt, { maxTokens: 5, temperature: 0, stopIds: [] })), 5);
  } finally {
    await m.unload();
  }
});

test('the engine worker killed with calls pending: they reject with STATE, later calls too; loadModel works again', async () => {
  const m = await loadModel(good, { threads: 1 });
  const want = await m.logits([2, 7, 8]);
  const pending = [m.logits(new Array(64).fill(9)), drain(m.generate([2, 9], { maxTokens: 500, stopIds: [] }))];
  // what a crash of the worker looks like from the page: it is gone (internal handle of index.js)
  m.engine.w.terminate();
  for (const p of pending) await assert.rejects(p, (e) => isOx(e, 'STATE'));
  await assert.rejects(m.logits([2]), (e) => isOx(e, 'STATE'));
  await m.unload();
  const again = await loadModel(good, { threads: 1 });
  assert.deepEqual(Array.from(await again.logits([2, 7, 8])), Array.from(want));
  await again.unload();
});
