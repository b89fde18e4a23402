// measure.mjs — one timed greedy generation through our public API, shared by the page
// (tools/bench/page.mjs) and the Node child (tools/bench/node-engine.mjs).
export async function timeGenerate(model, tokens, nGen) {
  await model.resetChat();
  const t = performance.now();
  let stats = null,
    n = 0;
  for await (const c of model.generate(tokens, { maxTokens: nGen, temperature: 0, stopIds: [], speculative: false })) {
    if (c.stats) stats = c.stats;
    else n++;
  }
  return {
    wall_ms: performance.now() - t,
    generated: n,
    prompt_n: stats.prefillTokens,
    prefill_tps: stats.prefillTokPerSec,
    decode_tps: stats.decodeTokPerSec,
    decode_n: stats.decodeSteps,
    stats,
  };
}
