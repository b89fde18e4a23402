// session.mjs — the soak's chat session, the same code in Node and in the page: `turns` user
// turns, each answered with exactly `gen` sampled tokens (end-of-turn ignored), the reply
// appended to the conversation, so each turn reuses the KV cache of the turns before; when
// the rendered conversation would not leave room for the reply in `ctx` tokens, the oldest
// exchange is dropped (truncation: the cache is recomputed from the system prompt on).
// onSample(s) is awaited every `every` turns and after the last with the turn's figures.

const WORDS = [
  'the',
  'model',
  'reads',
  'rows',
  'on',
  'demand',
  'from',
  'a',
  'host',
  'file',
  'while',
  'tokens',
  'stream',
  'out',
  'of',
  'the',
  'worker',
];

// a user message of 8..40 words, the same for a given turn on every engine
function userText(turn) {
  let x = ((turn + 1) * 2654435761) >>> 0;
  const n = 8 + (x % 33);
  const out = [];
  for (let i = 0; i < n; i++) {
    x = (x * 1664525 + 1013904223) >>> 0;
    out.push(WORDS[x % WORDS.length]);
  }
  return `${out.join(' ')} (${turn})`;
}

export async function chatSoak(model, { turns, gen, ctx, every = 10, onSample = async () => {} }) {
  const system = { role: 'system', content: 'You answer briefly.' };
  let messages = [];
  let generated = 0,
    truncations = 0,
    reused = 0,
    prefilled = 0;
  for (let turn = 0; turn < turns; turn++) {
    messages.push({ role: 'user', content: userText(turn) });
    for (;;) {
      const n = (await model.tokenize(await model.renderChat([system, ...messages]))).length;
      if (n + gen <= ctx || messages.length <= 1) break;
      messages = messages.slice(2);
      truncations++;
    }
    let reply = '',
      stats = null;
    for await (const c of model.chat([system, ...messages], {
      maxTokens: gen,
      temperature: 0.8,
      seed: turn,
      stopIds: [],
    }))
      if (c.stats) stats = c.stats;
      else reply += c.text;
    if (stats.generatedTokens !== gen)
      throw new Error(`turn ${turn}: ${stats.generatedTokens} tokens generated, ${gen} asked (${stats.reason})`);
    messages.push({ role: 'assistant', content: reply });
    generated += stats.generatedTokens;
    reused += stats.reusedTokens;
    prefilled += stats.prefillTokens;
    if (turn % every === 0 || turn === turns - 1) {
      const s = await model.stats();
      await onSample({
        turn,
        generated,
        truncations,
        reused,
        prefilled,
        contextTokens: stats.contextTokens,
        decodeTokPerSec: stats.decodeTokPerSec,
        prefillTokPerSec: stats.prefillTokPerSec,
        wasmMemoryBytes: s.wasmMemoryBytes,
        residentBytes: s.residentBytes,
      });
    }
  }
  return { generated, truncations, reused, prefilled };
}
