// Weights streamed from the host through the package (loadModel {streamWeights, weightCache},
// src/model/weights_cache.h), on the wasm engine in dist/: logits bitwise equal to the resident
// engine on a MoE model with an expert cache far smaller than its experts, and on a dense model
// with every layer weight streamed; the stats count what was streamed; a file that shrinks
// under a streamed read gives IO naming it and the model works again once the file is back;
// the options are checked.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { loadModel, OxError } from '../../js/main/index.js';
import { cli, tmpDir, requireDist } from '../oracle/fixtures.mjs';

let dir, moe, dense;
const TOKENS = [2, 17, 300, 301, 42, 7, 512, 900, 13, 77, 5, 6];

before(() => {
  requireDist();
  dir = tmpDir('stream');
  moe = path.join(dir, 'moe.gguf');
  dense = path.join(dir, 'tiny.gguf');
  cli(['synth', '--preset', 'moe', '--type', 'q8_0', '--experts', '16', '--top-k', '4', '-o', moe]);
  cli(['synth', '--preset', 'tiny', '--type', 'q4_0', '-o', dense]);
});

function isOx(e, code, re) {
  assert.ok(e instanceof OxError, `an OxError, got ${e?.constructor?.name}: ${e?.message}`);
  assert.equal(e.code, code, e.message);
  if (re) assert.match(e.message, re);
  return true;
}

// logits of every prefix, one token per call (decode) and the whole sequence (prefill)
async function logitsOf(file, opts) {
  const m = await loadModel(file, { threads: 2, ...opts });
  const out = [await m.logits(TOKENS)];
  const before = await m.stats();
  out.push(await m.logits(TOKENS.slice(0, 5)));
  const stats = await m.stats();
  await m.unload();
  return { out, before, stats };
}

const same = (a, b, what) => {
  assert.equal(a.length, b.length, what);
  assert.ok(
    Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(Buffer.from(b.buffer, b.byteOffset, b.byteLength)),
    `${what}: logits differ`,
  );
};

test('MoE: experts streamed through a cache of a few experts give the resident logits, bit for bit', async () => {
  const want = await logitsOf(moe, {});
  // an expert of this model: gate_up 256 rows + down 256 rows of Q8_0 (272 / 136 B) = 104448 B
  for (const weightCache of [104448, 8 * 104448]) {
    const got = await logitsOf(moe, { streamWeights: 'experts', weightCache });
    same(got.out[0], want.out[0], `cache ${weightCache}, 12 tokens`);
    same(got.out[1], want.out[1], `cache ${weightCache}, 5 tokens`);
    const { streamBytes, streamHits, streamMisses, residentBytes } = got.stats;
    assert.ok(streamMisses > 2 * 16 * 6, `experts read again after eviction: ${streamMisses} misses`);
    assert.ok(streamBytes >= streamMisses * 34816, `${streamBytes} bytes for ${streamMisses} misses`);
    assert.ok(streamHits >= 0 && residentBytes < want.stats.residentBytes, `${residentBytes} resident`);
    assert.equal(want.stats.streamBytes, 0);
  }
});

test('dense: every layer weight streamed gives the resident logits; a large cache keeps them', async () => {
  const want = await logitsOf(dense, {});
  // the smallest cache: the transit area alone (the RANGE error of a 1-byte cache names it)
  const min = await loadModel(dense, { streamWeights: 'all', weightCache: 1 }).then(
    () => assert.fail('loaded'),
    (e) => Number(/less than the (\d+)/.exec(e.message)?.[1]),
  );
  assert.ok(min > 0);
  const small = await logitsOf(dense, { streamWeights: 'all', weightCache: min });
  const large = await logitsOf(dense, { streamWeights: 'all', weightCache: 64 << 20 });
  for (const got of [small, large]) {
    same(got.out[0], want.out[0], 'prefill');
    same(got.out[1], want.out[1], 'second call');
  }
  assert.equal(small.stats.streamHits, 0, 'nothing admitted');
  assert.equal(small.stats.streamBytes, 2 * large.stats.streamBytes, 'everything read on each of the two calls');
  assert.ok(
    large.stats.streamHits > 0 && large.stats.streamBytes === large.before.streamBytes,
    'nothing read after the first call',
  );
});

test('a file that shrinks under a streamed read: IO naming it, and the model works once it is back', async () => {
  const file = path.join(dir, 'moe-cut.gguf');
  fs.copyFileSync(moe, file);
  const want = await logitsOf(moe, {});
  const m = await loadModel(file, { threads: 2, streamWeights: 'experts', weightCache: 104448 });
  const size = fs.statSync(file).size;
  fs.truncateSync(file, Math.floor(size / 2));
  await assert.rejects(m.logits(TOKENS), (e) => isOx(e, 'IO', /moe-cut\.gguf/));
  fs.copyFileSync(moe, file);
  same(await m.logits(TOKENS), want.out[0], 'after the error');
  await m.unload();
});

test('options: names checked, a cache smaller than one expert, experts on a dense model, conversions', async () => {
  await assert.rejects(loadModel(moe, { streamWeights: 'some' }), (e) => isOx(e, 'RANGE', /streamWeights/));
  await assert.rejects(loadModel(moe, { streamWeights: 'experts', weightCache: 0 }), (e) =>
    isOx(e, 'RANGE', /weightCache/),
  );
  await assert.rejects(loadModel(moe, { streamWeights: 'experts', weightCache: 1000 }), (e) =>
    isOx(e, 'RANGE', /less than the 104448/),
  );
  await assert.rejects(loadModel(dense, { streamWeights: 'experts' }), (e) => isOx(e, 'RANGE', /no routed experts/));
  const f32 = path.join(dir, 'tiny-f32.gguf');
  cli(['synth', '--preset', 'tiny', '--type', 'f32', '-o', f32]);
  await assert.rejects(loadModel(f32, { streamWeights: 'all', quant: 'q8' }), (e) =>
    isOx(e, 'UNSUPPORTED', /streamed weights run as stored/),
  );
});
