// index.js — the public API (main thread; never blocks). Each model runs in its own engine
// worker (js/worker.js, reached through js/connection.js); every method here is one message
// to it: text is tokenized and chat templates are rendered there. See index.d.ts.
import { quant as QUANT } from './abi.js';
import { engineAssets } from './assets.js';
import { Connection } from './connection.js';
import { OxError, abortError, toOxError } from './errors.js';
import { describeSource } from './hostfile.js';
import { tokenStream } from './stream.js';
import { cacheSources } from './cache.js';

export { OxError };
export { listCachedModels, deleteCachedModel } from './cache.js';

const isNode = typeof process === 'object' && !!process.versions?.node && typeof window === 'undefined';
const MAX_DEFAULT_THREADS = 8;

// Where the page's import map puts @huggingface/jinja, for an unbundled module worker (import
// maps do not reach workers); null where a bundler or Node resolves it.
function jinjaUrl() {
  if (isNode) return null;
  try {
    return import.meta.resolve?.('@huggingface/jinja') ?? null;
  } catch {
    return null;
  }
}

// ---- which build, how many threads ----

async function hardwareThreads() {
  if (isNode) {
    const os = await import('node:os');
    return os.availableParallelism?.() ?? os.cpus().length;
  }
  return globalThis.navigator?.hardwareConcurrency || 1;
}

// {build: 'mt'|'st', threads, note}: the threaded build needs SharedArrayBuffer, which a
// browser gives only to cross-origin-isolated pages (COOP + COEP headers).
export async function chooseEngine(opts = {}) {
  const isolated = isNode || globalThis.crossOriginIsolated === true;
  let build = opts.build ?? 'auto';
  let note = null;
  if (build === 'auto') {
    build = isolated ? 'mt' : 'st';
    if (!isolated) note = 'crossOriginIsolated is false (no COOP/COEP headers): SharedArrayBuffer is unavailable, so the single-threaded build runs';
  } else if (build === 'mt' && !isolated) {
    throw new OxError('UNSUPPORTED', 'the threaded build needs crossOriginIsolated (COOP/COEP headers)');
  } else if (build !== 'mt' && build !== 'st') {
    throw new OxError('RANGE', `build must be 'auto', 'mt' or 'st', not ${JSON.stringify(build)}`);
  }
  let threads = opts.threads ?? Math.min(MAX_DEFAULT_THREADS, await hardwareThreads());
  if (!Number.isInteger(threads) || threads < 1 || threads > 64) throw new OxError('RANGE', `threads must be an integer from 1 to 64, not ${threads}`);
  if (build === 'st' && threads > 1) {
    if (opts.threads > 1) note = `${note ? note + '; ' : ''}threads=${opts.threads} requested, 1 used`;
    threads = 1;
  }
  return { build, threads, note };
}

// ---- loading ----

export async function loadModel(sources, opts = {}) {
  const list = Array.isArray(sources) ? sources : [sources];
  if (!list.length) throw new OxError('RANGE', 'loadModel: no model files given');
  let descs;
  try {
    descs = list.map((s) => describeSource(s));
  } catch (e) {
    throw toOxError(e);
  }
  const quant = QUANT[opts.quant ?? 'stored'];
  if (quant === undefined) throw new OxError('RANGE', `quant must be one of ${Object.keys(QUANT).join(', ')}`);
  for (const k of ['maxContext', 'maxResident'])
    if (opts[k] !== undefined && !(Number.isSafeInteger(opts[k]) && opts[k] >= 0))
      throw new OxError('RANGE', `${k} must be an integer >= 0 (0 = no limit), not ${opts[k]}`);
  const { signal } = opts;
  if (signal?.aborted) throw abortError('load');
  // opts.cache: URL sources are downloaded into the model cache and read from there (js/cache.js)
  const cached = opts.cache ? await cacheSources(descs, opts).catch((e) => { throw toOxError(e); }) : null;
  if (cached) descs = cached.sources;
  const env = await chooseEngine(opts);
  const assets = engineAssets(env.build, opts);
  if (env.note) opts.onWarning?.(env.note);
  const engine = await Connection.open();
  const abortFlag = typeof SharedArrayBuffer === 'function' ? new Int32Array(new SharedArrayBuffer(4)) : null;
  // With shared memory the C loader sees the flag at its next progress call and unwinds
  // (OX_E_ABORTED); without it the worker is terminated. A failed load never keeps its worker.
  const onAbort = () => (abortFlag ? Atomics.store(abortFlag, 0, 1) : engine.terminate(abortError('load')));
  signal?.addEventListener('abort', onAbort, { once: true });
  let callbackError = null; // an exception from onProgress stops the load and is rethrown
  const progress = (ev) => {
    try {
      opts.onProgress?.({ loaded: ev.done, total: ev.total, fraction: ev.total > 0 ? ev.done / ev.total : 0 });
    } catch (e) {
      callbackError ??= e;
      onAbort();
    }
  };
  try {
    const { threads } = await engine.call('init', { build: env.build, threads: env.threads, assets, abortFlag, host: opts.host, jinjaUrl: jinjaUrl() });
    const info = await engine.call(
      'load',
      { sources: descs, quant, tablesOnHost: !!opts.tablesOnHost, maxContext: opts.maxContext ?? 0, maxResident: opts.maxResident ?? 0 },
      progress,
    );
    if (signal?.aborted) throw abortError('load');
    return Object.assign(new Model(engine, info, { ...env, threads }), { download: cached?.done ?? null });
  } catch (e) {
    cached?.abort();
    engine.terminate();
    if (callbackError) throw callbackError;
    if (signal?.aborted) throw abortError('load');
    throw toOxError(e);
  } finally {
    signal?.removeEventListener('abort', onAbort);
  }
}

// ---- the model ----

class Model {
  constructor(engine, info, env) {
    this.engine = engine;
    const { chatTemplate, ...rest } = info;
    this.info = rest;
    this.chatTemplate = chatTemplate;
    this.build = env.build;
    this.threads = env.threads;
    this.engineNote = env.note;
  }

  async tokenize(text, { special = true, addBos = false } = {}) {
    if (typeof text !== 'string') throw new OxError('RANGE', 'tokenize: text must be a string');
    const ids = await this.engine.call('tokenize', { text, special });
    return addBos && ids[0] !== this.info.bos ? [this.info.bos, ...ids] : ids;
  }

  async detokenize(ids, { skipSpecial = false } = {}) {
    return new TextDecoder().decode(await this.detokenizeBytes(ids, { skipSpecial }));
  }

  // the raw bytes (a token may end inside a UTF-8 character)
  detokenizeBytes(ids, { skipSpecial = false } = {}) {
    return this.engine.call('detokenize', { ids: Array.from(ids), skipSpecial });
  }

  // Streaming: push(ids) -> the text completed so far (a character split across tokens waits
  // for its last byte); flush() -> what is left.
  detokenizer({ skipSpecial = false } = {}) {
    const d = new TextDecoder();
    return {
      push: async (ids) => d.decode(await this.detokenizeBytes(ids, { skipSpecial }), { stream: true }),
      flush: () => d.decode(),
    };
  }

  async logits(tokens, { all = false } = {}) {
    return this.engine.call('logits', { tokens: Array.from(tokens), all });
  }

  generate(prompt, opts = {}) {
    const prepare = () => {
      if (typeof prompt === 'string') return { text: prompt, opts: samplingArgs(opts) };
      return { tokens: Array.from(prompt), opts: samplingArgs(opts) };
    };
    return tokenStream(this.engine, prepare, opts.signal);
  }

  // Keeps the KV cache across turns: only the part of the rendered conversation that differs
  // from what the cache holds is prefilled.
  chat(messages, opts = {}) {
    return tokenStream(this.engine, () => ({ messages, chat: chatArgs(opts), opts: samplingArgs(opts) }), opts.signal);
  }

  // the prompt text chat() would run
  renderChat(messages, opts = {}) {
    return this.engine.call('render', { messages, chat: chatArgs(opts) });
  }

  resetChat() {
    return this.engine.call('reset');
  }

  stats() {
    return this.engine.call('stats');
  }

  async unload() {
    if (this.engine.dead) return;
    try {
      await this.engine.call('unload');
    } finally {
      this.engine.terminate();
    }
  }

  dispose() {
    return this.unload();
  }
}

// Options checked here with their JS names; top_p, min_p, the penalties and the bias are
// checked by the C sampler (sampler.h), whose messages use its names.
const INT_OPTS = { topK: 0, maxTokens: 0, prefillChunk: 1, penaltyWindow: 0, seed: 0 }; // name -> minimum

// what the chat template needs (js/chat.js renderChat's options)
function chatArgs(o) {
  const out = {};
  for (const k of ['template', 'thinking', 'addGenerationPrompt', 'tools', 'vars', 'bosToken', 'eosToken']) if (o[k] !== undefined) out[k] = o[k];
  return out;
}

function samplingArgs(o) {
  const out = {};
  for (const k of ['temperature', 'topK', 'topP', 'minP', 'repetitionPenalty', 'frequencyPenalty', 'presencePenalty', 'penaltyWindow', 'seed', 'maxTokens', 'prefillChunk']) {
    const v = o[k];
    if (v === undefined) continue;
    if (typeof v !== 'number' || !Number.isFinite(v)) throw new OxError('RANGE', `${k} must be a finite number, not ${v}`);
    if (k in INT_OPTS && (!Number.isInteger(v) || v < INT_OPTS[k] || v > Number.MAX_SAFE_INTEGER))
      throw new OxError('RANGE', `${k} must be an integer >= ${INT_OPTS[k]}, not ${v}`);
    if (k === 'temperature' && v < 0) throw new OxError('RANGE', `temperature must be >= 0 (0 = greedy), not ${v}`);
    out[k] = v;
  }
  if (o.stop !== undefined) out.stop = (Array.isArray(o.stop) ? o.stop : [o.stop]).map(String);
  if (o.stopIds !== undefined) out.stopIds = Array.from(o.stopIds, Number);
  if (o.logitBias !== undefined) out.logitBias = o.logitBias instanceof Map ? Object.fromEntries(o.logitBias) : { ...o.logitBias };
  if (o.includeSpecial !== undefined) out.includeSpecial = !!o.includeSpecial;
  return out;
}
