// loadModel({kvType}): the KV storage type reaches the engine (f32 logits equal to the
// default's, f16 / q8_0 slightly different), resident memory drops by exactly the KV bytes
// (ox_kv_bytes: sliding layers keep a ring of window + 255 positions), bad values are RANGE
// errors naming the option.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadModel, OxError } from '../../js/main/index.js';
import { requireCli, requireDist, synth, tmpDir } from '../oracle/fixtures.mjs';
import { maxDlogp as dlogp } from './dlogp.mjs';

const N = 400; // past the tiny model's ring of 16 + 255 positions

const V = 1024; // the tiny preset's vocab

const maxDlogp = (a, b) => dlogp(a, b, V);

// the calm tiny model of tests/c/test_kv.c (post-branch norms and q/k norms at half gain)
const CALM = ['--branch-gain', '0.5', '--qk-norm-scale', '0.5'];

test('kvType reaches the engine: logits and resident bytes', { timeout: 600000 }, async (t) => {
  requireCli();
  requireDist();
  const file = synth(tmpDir('kv'), { preset: 'tiny', type: 'f32', extra: CALM });
  const tokens = Array.from({ length: N }, (_, i) => (i ? 7 + ((i * 7919) % 1000) : 2));
  const run = {};
  for (const kvType of [undefined, 'f32', 'f16', 'q8_0']) {
    const m = await loadModel(file, { threads: 2, maxContext: N, ...(kvType ? { kvType } : {}) });
    try {
      const logits = await m.logits(tokens, { all: true });
      run[kvType ?? 'default'] = { logits, resident: (await m.stats()).residentBytes };
    } finally {
      await m.unload();
    }
  }
  assert.deepEqual(run.f32.logits, run.default.logits, "the default is 'f32'");
  assert.equal(run.f32.resident, run.default.resident);
  const d16 = maxDlogp(run.f16.logits, run.f32.logits),
    d8 = maxDlogp(run.q8_0.logits, run.f32.logits);
  t.diagnostic(`max |dlogp| vs f32 over ${N} positions: f16 ${d16.toExponential(2)}, q8_0 ${d8.toExponential(2)}`);
  assert.ok(d16 > 0 && d16 < 0.03, `f16: ${d16}`); // measured 0.0097 and 0.35
  assert.ok(d8 > d16 && d8 < 1, `q8_0: ${d8}`);
  // tiny: 2 sliding own-KV layers (2 heads of 64, ring 271 rows), 1 full (2 heads of 128, N rows)
  const kvF32 = 2 * (2 * 271 * 2 * 64 * 4 + N * 2 * 128 * 4);
  assert.equal(run.f32.resident - run.f16.resident, kvF32 / 2, 'f16 halves the KV bytes');
  assert.equal(run.f32.resident - run.q8_0.resident, kvF32 - (kvF32 / 128) * 34, 'q8_0: 34 bytes per 32 values');
});

test('kvType: bad values are RANGE errors naming it', async () => {
  requireCli();
  const file = synth(tmpDir('kv'), { preset: 'tiny', type: 'f32' });
  for (const kvType of ['q4', 'F16', 1, null])
    await assert.rejects(
      loadModel(file, { kvType }),
      (e) => e instanceof OxError && e.code === 'RANGE' && /kvType/.test(e.message),
    );
});
