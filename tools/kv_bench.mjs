// kv_bench.mjs — kvType f32 / f16 / q8_0 side by side in Node (wasm): load each once, then per rep a prompt of P
// tokens (default 2048) prefilled whole and 32 greedy tokens; prints prefill / decode tok/s and resident bytes.
//   node tools/kv_bench.mjs FILE.gguf [P]
import { loadModel } from '../js/main/index.js';
const file = process.argv[2],
  P = +process.argv[3] || 2048,
  G = 32;
const prompt = Array.from({ length: P }, (_, i) => (i ? 7 + ((i * 7919) % 8000) : 2));
const models = {};
for (const kvType of ['f32', 'f16', 'q8_0'])
  models[kvType] = await loadModel(file, { threads: 2, maxContext: 4096, kvType });
for (let rep = 0; rep < 3; rep++)
  for (const [kvType, m] of Object.entries(models)) {
    prompt[1] = 100 + rep;
    let st;
    for await (const ev of m.generate(prompt, {
      maxTokens: G,
      temperature: 0,
      stopIds: [],
      seed: 1,
      speculative: false,
    }))
      if (ev.stats) st = ev.stats;
    const s = await m.stats();
    console.log(
      JSON.stringify({
        rep,
        kvType,
        prefill: st?.prefillTokPerSec?.toFixed(1),
        decode: st?.decodeTokPerSec?.toFixed(2),
        reused: st?.reusedTokens,
        ctx: st?.contextTokens,
        residentMiB: (s.residentBytes / 1048576).toFixed(1),
        wasmMiB: s.wasmMemoryBytes ? (s.wasmMemoryBytes / 1048576).toFixed(0) : undefined,
      }),
    );
  }
for (const m of Object.values(models)) await m.unload();
