// index.js — the public API (main thread; never blocks). Each model runs in its own worker
// (js/worker.js: a Web Worker in browsers, a worker_threads Worker in Node); every method
// here is a message to it. See index.d.ts for the documented types.
import { describeSource } from './hostfile.js';
import { renderChat } from './chat.js';
import { cacheSources } from './cache.js';
export { listCachedModels, deleteCachedModel } from './cache.js';

const isNode = typeof process === 'object' && !!process.versions?.node && typeof window === 'undefined';
const QUANT = { stored: 0, bf16: 1, q8: 2, q4: 3 };
const MAX_DEFAULT_THREADS = 8;

export class OxError extends Error {
  constructor(code, message) {
    super(message);
    this.name = code === 'ABORTED' ? 'AbortError' : 'OxError';
    this.code = code;
  }
}

const toOxError = (e) => (e instanceof OxError ? e : new OxError(typeof e?.code === 'string' ? e.code : 'STATE', e?.message ?? String(e)));

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

// ---- the worker connection ----

async function spawnWorker() {
  const url = new URL('./worker.js', import.meta.url);
  if (isNode) {
    const { Worker } = await import('node:worker_threads');
    const w = new Worker(url, { workerData: { workerUrl: url.href } });
    return {
      post: (m, t) => w.postMessage(m, t),
      listen: (onMsg, onFail) => {
        w.on('message', onMsg);
        w.on('error', onFail);
        w.on('exit', (code) => onFail(new Error(`the engine worker exited (code ${code})`)));
      },
      terminate: () => w.terminate(),
      hold: (on) => (on ? w.ref() : w.unref()),
    };
  }
  const w = new Worker(url); // classic: it importScripts() the Emscripten glue
  return {
    post: (m, t) => w.postMessage(m, t ?? []),
    listen: (onMsg, onFail) => {
      w.onmessage = (e) => onMsg(e.data);
      w.onerror = (e) => {
        e.preventDefault?.();
        onFail(new Error(e.message || 'the engine worker failed to start'));
      };
    },
    terminate: () => w.terminate(),
    hold: () => {},
  };
}

class Engine {
  constructor(w) {
    this.w = w;
    this.next = 1;
    this.pending = new Map();
    this.dead = null;
    w.listen((m) => this.receive(m), (e) => this.fail(new OxError('STATE', e.message)));
    w.hold(false);
  }

  // -> {id, done: Promise}
  start(op, args = {}, onEvent = null) {
    const id = this.next++;
    const done = new Promise((resolve, reject) => {
      if (this.dead) return reject(this.dead);
      try {
        this.w.post({ ...args, id, op });
      } catch (e) {
        // e.g. a Node file-backed Blob (fs.openAsBlob), which cannot be sent to a thread
        return reject(new OxError('UNSUPPORTED', `${op}: cannot send the request to the engine worker: ${e.message}`));
      }
      this.pending.set(id, { resolve, reject, onEvent });
      this.w.hold(true);
    });
    return { id, done };
  }

  call(op, args, onEvent) {
    return this.start(op, args, onEvent).done;
  }

  abort(target) {
    if (!this.dead) this.w.post({ op: 'abort', target });
  }

  receive(m) {
    const p = this.pending.get(m.id);
    if (!p) return;
    if (m.event) return void p.onEvent?.(m);
    this.pending.delete(m.id);
    if (!this.pending.size) this.w.hold(false);
    if (m.ok) p.resolve(m.value);
    else p.reject(new OxError(m.error.code, m.error.message));
  }

  fail(e) {
    if (this.dead) return;
    this.dead = e;
    for (const p of this.pending.values()) p.reject(e);
    this.pending.clear();
  }

  terminate(reason) {
    this.fail(reason ?? new OxError('STATE', 'the model was unloaded'));
    this.w.terminate();
  }
}

// ---- loading ----

const abortError = (what) => new OxError('ABORTED', `${what} aborted`);

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
  if (env.note) opts.onWarning?.(env.note);
  const engine = new Engine(await spawnWorker());
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
    const { threads } = await engine.call('init', { build: env.build, threads: env.threads, abortFlag, host: opts.host });
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

// ---- streams ----

// An async iterator over a worker job's token events, ending with {token: null, text: '',
// stats}. Abort (signal, or leaving the loop early) tells the worker, which stops before its
// next token; the iterator stops at once.
function tokenStream(engine, prepare, signal) {
  const queue = [];
  let wake = null;
  let error = null;
  let finished = false;
  let id = 0;
  const notify = () => {
    wake?.();
    wake = null;
  };
  const onAbort = () => {
    if (finished) return;
    if (id) engine.abort(id);
    error = abortError('generation');
    finished = true;
    notify();
  };
  const begin = (async () => {
    if (signal?.aborted) return onAbort();
    signal?.addEventListener('abort', onAbort, { once: true });
    let args;
    try {
      args = await prepare();
    } catch (e) {
      error = toOxError(e);
      finished = true;
      return;
    }
    if (finished) return;
    const job = engine.start('generate', args, (ev) => {
      if (!finished) queue.push({ token: ev.token >= 0 ? ev.token : null, text: ev.text, thinking: ev.thinking });
      notify();
    });
    id = job.id;
    job.done.then(
      (stats) => {
        if (!finished) queue.push({ token: null, text: '', stats });
        finished = true;
        notify();
      },
      (e) => {
        if (!finished) error = toOxError(e);
        finished = true;
        notify();
      },
    );
  })();
  const cleanup = () => signal?.removeEventListener('abort', onAbort);
  return {
    [Symbol.asyncIterator]() {
      return this;
    },
    async next() {
      await begin;
      for (;;) {
        if (error && (signal?.aborted || !queue.length)) {
          cleanup();
          queue.length = 0;
          const e = error;
          error = null;
          throw e;
        }
        if (queue.length) return { value: queue.shift(), done: false };
        if (finished) {
          cleanup();
          return { value: undefined, done: true };
        }
        await new Promise((r) => (wake = r));
      }
    },
    async return() {
      if (!finished && id) engine.abort(id);
      finished = true;
      queue.length = 0;
      cleanup();
      return { value: undefined, done: true };
    },
  };
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
    const prepare = async () => {
      const tokens = typeof prompt === 'string' ? await this.tokenize(prompt, { addBos: true }) : Array.from(prompt);
      return { tokens, opts: samplingArgs(opts) };
    };
    return tokenStream(this.engine, prepare, opts.signal);
  }

  // Keeps the KV cache across turns: only the part of the rendered conversation that differs
  // from what the cache holds is prefilled.
  chat(messages, opts = {}) {
    const prepare = async () => {
      const text = await renderChat(opts.template ?? this.chatTemplate, messages, opts);
      const args = samplingArgs(opts);
      // a model turn ends at <turn|> by the format's definition, listed by the checkpoint or not
      const { eosIds, turnEnd } = this.info;
      if (!args.stopIds && turnEnd >= 0 && !eosIds.includes(turnEnd)) args.stopIds = [...eosIds, turnEnd];
      return { tokens: await this.tokenize(text), opts: args };
    };
    return tokenStream(this.engine, prepare, opts.signal);
  }

  // the prompt text chat() would run
  renderChat(messages, opts = {}) {
    return renderChat(opts.template ?? this.chatTemplate, messages, opts);
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
