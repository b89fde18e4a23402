// The oracle harness's own logic (tests/oracle/llamacpp.mjs), without a
// browser: log-softmax, the comparison (argmax, near-ties, max |Δ|), the
// token sequences, and the result cache keyed by the model file's hash.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Oracle, logSoftmax, compareToReference, tokenSeq, sha256File } from '../oracle/llamacpp.mjs';

test('logSoftmax: normalized, shift-invariant, stable for large logits', () => {
  const a = logSoftmax([1, 2, 3]);
  const s = a.reduce((x, y) => x + Math.exp(y), 0);
  assert.ok(Math.abs(s - 1) < 1e-12);
  assert.ok(Math.abs(a[2] - a[1] - 1) < 1e-12);
  const b = logSoftmax([1001, 1002, 1003]);
  for (let i = 0; i < 3; i++) assert.ok(Math.abs(a[i] - b[i]) < 1e-9);
  assert.ok(Math.abs(a[2] - -0.40760596444438) < 1e-12);
});

test('compareToReference: max |Δ| over the reference ids, argmax, near-ties, NaN', () => {
  const ref = {
    positions: [
      {
        pos: 0,
        argmax: 1,
        top: [
          [1, -0.1],
          [0, -2.5],
        ],
      },
      {
        pos: 1,
        argmax: 0,
        top: [
          [0, -0.69],
          [2, -0.7],
        ],
      },
    ],
  };
  const ours = [Float64Array.from([-2.4, -0.1, -9]), Float64Array.from([-0.695, -9, -0.694])];
  const argmax = (p) => ours[p].indexOf(Math.max(...ours[p]));
  const c = compareToReference(ref, (p, id) => ours[p][id], argmax, { tieTol: 1e-2 });
  assert.equal(c.positions, 2);
  assert.ok(Math.abs(c.maxDelta - 0.1) < 1e-12, `max delta ${c.maxDelta}`);
  assert.equal(c.worstPos, 0);
  assert.equal(c.argmaxAgree, 2);
  assert.equal(c.nearTies, 1); // position 1: ours picks id 2, 0.001 nats from id 0
  const strict = compareToReference(ref, (p, id) => ours[p][id], argmax, { tieTol: 1e-4 });
  assert.deepEqual(strict.mismatches, [{ pos: 1, ours: 2, llamacpp: 0 }]);
  // a NaN at the first position is not hidden by a finite one after it
  const nan = compareToReference(ref, (p, id) => (p === 0 ? NaN : ours[p][id]), argmax);
  assert.ok(Number.isNaN(nan.maxDelta), 'a NaN from the engine is not hidden');
  assert.equal(nan.worstPos, 0);
  assert.equal(nan.positions, 2);
});

test('tokenSeq: deterministic ids inside the range', () => {
  const a = tokenSeq(50, 7, 896, 1024);
  assert.deepEqual(a, tokenSeq(50, 7, 896, 1024));
  assert.notDeepEqual(a, tokenSeq(50, 8, 896, 1024));
  assert.ok(a.every((x) => Number.isInteger(x) && x >= 896 && x < 1024));
  assert.deepEqual(tokenSeq(3, 7, 896, 1024), [999, 903, 963]); // the shared harness's sequence
});

test('cache: keyed by the file contents and the request; hits need no browser', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'oxinfer-oracle-cache-'));
  try {
    const f = path.join(dir, 'm.gguf');
    fs.writeFileSync(f, 'one');
    const o = new Oracle({ cacheDir: path.join(dir, 'cache') });
    let calls = 0;
    const compute = async () => ({ value: ++calls });
    assert.deepEqual(await o.cached(f, { k: 1 }, compute), { value: 1, cached: false });
    assert.deepEqual(await o.cached(f, { k: 1 }, compute), { value: 1, cached: true });
    assert.deepEqual(await o.cached(f, { k: 2 }, compute), { value: 2, cached: false });
    const h1 = sha256File(f);
    fs.writeFileSync(f, 'two');
    fs.utimesSync(f, new Date(), new Date(Date.now() + 5000)); // a new mtime: hash again
    assert.notEqual(sha256File(f), h1);
    assert.deepEqual(await o.cached(f, { k: 1 }, compute), { value: 3, cached: false });
    assert.equal(o.browser, null, 'no browser was started');
    await o.close();
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('bench GGUF header: tensor directory and the bytes one decode step reads', async () => {
  const { ggufHeader, weightsPerToken } = await import('../../tools/bench/lib.mjs');
  const { synth, tmpDir } = await import('../oracle/fixtures.mjs');
  const file = synth(tmpDir('benchlib'), { preset: 'tiny', type: 'q4_k', extra: ['--embd-type', 'q6_k'] });
  const h = ggufHeader(file);
  assert.equal(h.kv['general.architecture'], 'gemma4');
  assert.equal(h.size, fs.statSync(file).size);
  const emb = h.tensors.find((t) => t.name === 'token_embd.weight');
  assert.deepEqual([emb.type, ...emb.dims], ['Q6_K', 256, 1024]);
  // independent of the offsets: elements / block size * block bytes per type
  const BLOCK = { F32: [1, 4], F16: [1, 2], Q8_0: [32, 34], Q4_K: [256, 144], Q6_K: [256, 210] };
  let expect = 0;
  for (const t of h.tensors) {
    const [n, b] = BLOCK[t.type] ?? assert.fail(`unexpected type ${t.type} of ${t.name}`);
    const bytes = (t.dims.reduce((p, d) => p * d, 1) / n) * b;
    expect += t.name === 'per_layer_token_embd.weight' ? bytes / t.dims[1] : bytes;
  }
  const w = weightsPerToken(file);
  // offsets carry the 32-byte alignment padding of each tensor
  assert.ok(w.bytes >= expect && w.bytes <= expect + 32 * h.tensors.length, `${w.bytes} vs ${expect}`);
  assert.match(w.mix, /^Q4_K ×\d+, .*Q6_K ×1/);
});
