// The soak's short CI variant (the long run is `npm run soak`, tools/soak.mjs): a chat of 40
// turns with KV reuse and truncation on the wasm engine in Node. Wasm memory may grow by the
// KV cache (the engine's resident-bytes growth) and the allocator's doubling steps, never more,
// and not at all in the second half, once the cache is at full size. No timing is asserted.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { loadModel } from '../../js/main/index.js';
import { cli, tmpDir, requireDist } from '../oracle/fixtures.mjs';
import { chatSoak } from '../../tools/soak/session.mjs';

const SHAPE = [
  '--hidden',
  '64',
  '--layers',
  '2',
  '--heads',
  '2',
  '--kv-heads',
  '1',
  '--head-dim',
  '64',
  '--global-head-dim',
  '64',
  '--ffn',
  '128',
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
  '64',
  '--ctx',
  '1024',
  '--all-byte-tokens',
];

test('40 chat turns with reuse and truncation: memory bounded by the KV cache, no growth once it is full', async () => {
  requireDist();
  const file = path.join(tmpDir('soak'), 'soak.gguf');
  cli(['synth', '--preset', 'tiny', '--type', 'q8_0', ...SHAPE, '-o', file]);
  const m = await loadModel(file, { threads: 2, maxContext: 256 });
  try {
    const loaded = await m.stats();
    const samples = [];
    const turns = 40,
      gen = 24;
    const totals = await chatSoak(m, { turns, gen, ctx: 256, every: 2, onSample: async (s) => void samples.push(s) });
    assert.equal(totals.generated, turns * gen);
    assert.ok(totals.truncations >= 5, `the conversation was truncated (${totals.truncations} times)`);
    assert.ok(totals.reused > 1000, `turns reused the cache (${totals.reused} tokens)`);
    const kv = samples.at(-1).residentBytes - loaded.residentBytes;
    assert.ok(kv > 0 && kv <= 2 * 256 * 2 * 64 * 4 * 2, `KV cache ${kv} bytes for 256 positions`);
    const peak = Math.max(...samples.map((s) => s.wasmMemoryBytes));
    // the cache's growth, its realloc copies (old + new block) and one 20% overgrowth step of wasm memory
    const bound = loaded.wasmMemoryBytes + 3 * kv + 0.2 * loaded.wasmMemoryBytes;
    assert.ok(peak <= bound, `wasm memory ${peak} <= ${bound}`);
    const half = samples.filter((s) => s.turn >= turns / 2);
    assert.equal(
      Math.max(...half.map((s) => s.wasmMemoryBytes)),
      samples.find((s) => s.turn >= turns / 2 - 2).wasmMemoryBytes,
      'no growth in the second half',
    );
    assert.equal(new Set(half.map((s) => s.residentBytes)).size, 1, 'the KV cache is at full size and stays so');
  } finally {
    await m.unload();
  }
});
