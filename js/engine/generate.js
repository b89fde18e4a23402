// generate.js — one generation. The C generator (ox_wasm_gen_*, src/decode/generate.h) owns the
// sampler, the penalty history, the stop ids and the limits, and runs one forward per step;
// this loop keeps what is JS's: abort between calls, UTF-8 assembly, stop strings, the
// thinking flag, token events and the timing in the stats.
import { drafts, genOptions, genOut, genParams, genStatus, prefillChunk } from '../shared/abi.js';
import { OxError } from '../shared/errors.js';
import { nextTask } from './protocol.js';

const P = Object.fromEntries(genParams.map((f, i) => [f, i]));
const O = Object.fromEntries(genOut.map((f, i) => [f, i]));
const REASON = Object.fromEntries(Object.entries(genStatus).map(([reason, v]) => [v, reason]));
// the option at path "a" or "a.b" of o
const optionAt = (o, path) => path.split('.').reduce((v, k) => v?.[k], o);

// Text stop strings: hold back text that may be the start of one.
function stopMatcher(stops) {
  let pending = '';
  return (piece) => {
    pending += piece;
    for (const s of stops) {
      const i = pending.indexOf(s);
      if (i >= 0) return { text: pending.slice(0, i), stop: s };
    }
    let keep = 0;
    for (const s of stops)
      for (let k = Math.min(s.length - 1, pending.length); k > keep; k--)
        if (pending.endsWith(s.slice(0, k))) {
          keep = k;
          break;
        }
    const text = pending.slice(0, pending.length - keep);
    pending = pending.slice(pending.length - keep);
    return { text, stop: null, flush: () => pending };
  };
}

// The C generator for options o (index.js checked them); stopIds given: only those stop,
// else the checkpoint's eos ids.
function newGenerator(engine, o, seed) {
  const { heap } = engine;
  const bias = Object.entries(o.logitBias ?? {});
  const stopIds = o.stopIds ?? [];
  const n = genParams.length;
  return heap.withInts(
    bias.map(([id]) => Number(id)),
    (biasIds) =>
      heap.withFloats(
        bias.map(([, v]) => v),
        (biasValues) =>
          heap.withInts(stopIds, (stops) =>
            heap.withString(o.grammar ?? '', (grammar, grammarBytes) =>
              heap.scoped(n * 8, (p) => {
                const rec = heap.f64(p, n).fill(NaN);
                // options that go to C as they are; unset ones stay NaN, which C reads as its default
                for (const { option, field, type } of genOptions) {
                  const v = optionAt(o, option);
                  if (v !== undefined) rec[P[field]] = type === 'boolean' ? +v : v;
                }
                rec[P.seed] = seed;
                rec[P.eos] = o.stopIds ? 0 : 1;
                [rec[P.biasIds], rec[P.bias], rec[P.nBias]] = [biasIds, biasValues, bias.length];
                [rec[P.stopIds], rec[P.nStop]] = [stops, stopIds.length];
                if (o.grammar) [rec[P.grammar], rec[P.nGrammar]] = [grammar, grammarBytes];
                rec[P.draftTokens] = o.speculative ? (o.speculative.draftTokens ?? drafts.asked) : 0;
                rec[P.mtp] = o.speculative?.method === 'mtp' ? 1 : 0;
                return heap.checkPtr(heap.C.ox_wasm_gen_new(engine.ptr, engine.session.ptr, p));
              }),
            ),
          ),
      ),
  );
}

// Soft tokens: every position of the placeholder token takes the next row of embeddings (before
// the start, which then keeps the cached positions that took the same rows).
function setSoft(engine, g, tokens, soft) {
  const { heap, info } = engine;
  const at = tokens.flatMap((t, i) => (t === soft.token ? [i] : []));
  const rows = soft.embeddings.length / info.hidden;
  if (at.length !== rows)
    throw new OxError(
      'RANGE',
      `softTokens: ${rows} embeddings of ${info.hidden} for ${at.length} placeholder tokens (id ${soft.token}) in the prompt`,
    );
  const all = new Float32Array(tokens.length * info.hidden);
  const mask = new Uint8Array(tokens.length);
  at.forEach((pos, k) => {
    all.set(soft.embeddings.subarray(k * info.hidden, (k + 1) * info.hidden), pos * info.hidden);
    mask[pos] = 1;
  });
  heap.withFloats(all, (ps) =>
    heap.scoped(
      mask.length,
      (pm) => (heap.u8(pm, mask.length).set(mask), heap.check(heap.C.ox_wasm_gen_soft(g, ps, pm, mask.length))),
    ),
  );
}

// the token's log-probability and the top alternatives (as {token, text, logprob}) onto ev
function logprobsOf(engine, out, ev) {
  const { heap } = engine;
  const n = out[O.nTop];
  const ids = n ? Array.from(heap.i32(out[O.topIds], n)) : [];
  const lps = n ? Array.from(heap.f32(out[O.topLogprobs], n)) : [];
  const dec = new TextDecoder();
  ev.logprob = out[O.logprob];
  ev.topLogprobs = ids.map((id, k) => ({
    token: id,
    text: dec.decode(engine.detokenize([id], true)),
    logprob: lps[k],
  }));
}

// Generate from prompt tokens; job: {aborted, emit}. -> the stats (index.d.ts GenerationStats)
export async function generate(engine, tokens, o, job) {
  const { heap, info } = engine;
  const C = heap.C;
  const seed = o.seed ?? Math.floor(Math.random() * 2 ** 32);
  const match = stopMatcher((o.stop ?? []).filter((s) => s.length));
  const st = {
    promptTokens: tokens.length,
    reusedTokens: 0,
    prefillTokens: 0,
    generatedTokens: 0,
    prefillMs: 0,
    decodeSteps: 0,
    decodeMs: 0,
    reason: 'length',
  };
  const decoder = new TextDecoder();
  let thinking = false;
  let r = null; // the stop-string matcher's last answer
  const finish = (reason, stop, tail) => {
    if (tail) job.emit({ event: 'token', token: -1, text: tail, thinking });
    st.reason = reason;
    if (stop) st.stop = stop;
    st.prefillTokPerSec = st.prefillMs > 0 ? (st.prefillTokens * 1000) / st.prefillMs : 0;
    // speculative steps return several tokens per forward: count tokens, not forwards
    const decoded = o.speculative ? st.generatedTokens - 1 : st.decodeSteps;
    st.decodeTokPerSec = st.decodeMs > 0 ? (decoded * 1000) / st.decodeMs : 0;
    st.seed = seed;
    st.contextTokens = engine.session.pos;
    return st;
  };
  if (job.aborted) return finish('abort');
  // a grammar compiling (gen_new) or masking (a step) stops with ABORTED when the caller aborts
  const aborted = (e) => e instanceof OxError && e.code === 'ABORTED';
  let g;
  try {
    g = newGenerator(engine, o, seed);
  } catch (e) {
    if (aborted(e)) return finish('abort');
    throw e;
  }
  try {
    const outAt = C.ox_wasm_gen_out(g); // the step's output record, at a fixed address
    let t = performance.now();
    if (o.soft) setSoft(engine, g, tokens, o.soft);
    st.reusedTokens = heap.check(heap.withInts(tokens, (p) => C.ox_wasm_gen_start(g, p, tokens.length)));
    const chunk = o.prefillChunk ?? prefillChunk;
    for (let left = tokens.length - st.reusedTokens; left > 0;) {
      left = heap.check(C.ox_wasm_gen_prefill(g, chunk));
      st.prefillTokens = tokens.length - st.reusedTokens - left;
      if (left > 0) {
        await nextTask();
        if (job.aborted) return finish('abort');
      }
    }
    st.prefillMs = performance.now() - t;
    t = performance.now();
    for (;;) {
      await nextTask();
      if (job.aborted) return finish('abort');
      const status = heap.check(C.ox_wasm_gen_step(g));
      const out = heap.f64(outAt, genOut.length); // (a new view: memory may have grown)
      if (out[O.decoded] > st.decodeSteps || (o.speculative && out[O.generated] > st.generatedTokens))
        [st.decodeSteps, st.decodeMs] = [out[O.decoded], performance.now() - t];
      st.generatedTokens = out[O.generated];
      if (o.speculative) [st.draftedTokens, st.acceptedTokens] = [out[O.drafted], out[O.accepted]];
      const tok = status === genStatus.stop ? -1 : out[O.token];
      if (tok < 0) return finish(REASON[status], null, r?.flush?.());
      // (a copy: TextDecoder refuses views of shared memory)
      const piece = decoder.decode(heap.u8(out[O.bytes], out[O.nBytes]).slice(), { stream: true });
      if (tok === info.channelOpen) thinking = true;
      r = match(piece);
      const ev = { event: 'token', token: tok, text: r.text, thinking };
      if (o.logprobs !== undefined) logprobsOf(engine, out, ev);
      job.emit(ev);
      if (tok === info.channelClose) thinking = false;
      if (r.stop !== null) return finish('stop', r.stop);
      if (status !== genStatus.token) return finish(REASON[status], null, r.flush());
    }
  } catch (e) {
    if (aborted(e)) return finish('abort');
    throw e;
  } finally {
    C.ox_wasm_gen_free(g);
  }
}
