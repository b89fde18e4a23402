// Runs in headless Chromium, driven by tests/oracle/llamacpp.mjs through
// window.oracle.  wllama (llama.cpp compiled to wasm) has no token-array
// prompts and no logits API, so:
//  - prompts are text made of the synthetic vocab's USER_DEFINED "<unusedN>"
//    tokens, which llama.cpp always maps to exactly those ids;
//  - the reference for position k is the top-K of the softmax of the RAW
//    logits (n_probs with post_sampling_probs false) of a one-token
//    completion of seq[1..k] (llama.cpp adds the BOS seq[0] itself), with the
//    KV cache reused between positions (cache_prompt).
import { Wllama } from '/wllama/esm/index.js';

let w = null;
let info = null;

function probEntries(res) {
  if (res.completion_probabilities) return res.completion_probabilities;
  return res.choices?.[0]?.logprobs?.content ?? null;
}

function idsToText(ids) {
  const lo = info.userFirst,
    hi = info.userFirst + info.userCount;
  return ids
    .map((id) => {
      if (!(id >= lo && id < hi)) throw new Error(`token ${id} is outside the <unusedN> block [${lo}, ${hi})`);
      return `<unused${id - lo}>`;
    })
    .join('');
}

async function load(url, o = {}) {
  if (w) await w.exit();
  const blob = await (await fetch(url)).blob();
  w = new Wllama(
    { default: '/wllama/esm/wasm/wllama.wasm' },
    {
      suppressNativeLog: !o.verbose,
      logger: o.verbose ? console : { ...console, debug: () => {}, log: () => {}, info: () => {} },
    },
  );
  w.setCompat?.(null); // never the CDN fallback build: this Chromium has JSPI and memory64
  await w.loadModel([blob], {
    n_threads: o.threads ?? 1,
    n_ctx: o.n_ctx ?? 512,
    n_batch: 512,
    n_ubatch: 512,
    n_parallel: 1,
    n_gpu_layers: 0,
    seed: 1,
    // f32 KV cache and no flash attention: llama.cpp's tightest CPU path
    // (the defaults, f16 cache + flash attention, drift by a few 1e-2)
    cache_type_k: o.cache_type ?? 'f32',
    cache_type_v: o.cache_type ?? 'f32',
    flash_attn: o.flash_attn ?? false,
  });
  const md = w.getModelMetadata();
  info = {
    nVocab: md.hparams.nVocab,
    userFirst: Number(md.meta['synthetic.user_token_first']),
    userCount: Number(md.meta['synthetic.user_token_count']),
    bos: w.getBOS?.() ?? null,
    multithread: w.isMultithread(),
    threads: w.getNumThreads(),
    crossOriginIsolated: self.crossOriginIsolated,
    libllama: Wllama.getLibllamaVersion?.() ?? null,
    modelBytes: blob.size,
  };
  if (!(info.userCount > 0)) throw new Error(`${url}: no synthetic.user_token_first/_count in the GGUF metadata`);
  return info;
}

// seq[0] must be the BOS llama.cpp adds; returns one entry per position k in
// [0, seq.length): the top-K log-probs of the token after seq[0..k].
async function logprobs(seq, topK) {
  const k1 = Math.min(topK > 0 ? topK : info.nVocab, info.nVocab);
  const positions = [];
  for (let k = 1; k <= seq.length; k++) {
    const res = await w.createCompletion({
      prompt: idsToText(seq.slice(1, k)),
      max_tokens: 1,
      temperature: 0,
      ignore_eos: true,
      cache_prompt: true,
      n_probs: k1,
      post_sampling_probs: false,
    });
    if (res.usage && res.usage.prompt_tokens !== k)
      throw new Error(`position ${k - 1}: prompt of ${k} tokens became ${res.usage.prompt_tokens} tokens`);
    const e = probEntries(res);
    if (!e || !e[0]) throw new Error('no log-probs in the response: ' + JSON.stringify(res).slice(0, 500));
    const top = e[0].top_logprobs || e[0].probs;
    positions.push({ pos: k - 1, argmax: e[0].id, top: top.map((x) => [x.id, x.logprob]) });
  }
  return positions;
}

// Raw completion, for experiments and for the tokenizer probe.
async function complete(body) {
  return await w.createCompletion(body);
}

async function exit() {
  if (w) await w.exit();
  w = null;
}

window.oracle = { load, logprobs, complete, exit, ready: true };
