// index.js — the public API (main thread; never blocks). Each model runs in its own engine
// worker (js/engine/worker.js, reached through js/main/connection.js); every method here is one message
// to it: text is tokenized and chat templates are rendered there. See index.d.ts.
import {
  drafts as DRAFTS,
  genOptions as GEN_OPTIONS,
  kvType as KV_TYPE,
  quant as QUANT,
  stream as STREAM,
  weightCacheDefault as WEIGHT_CACHE_DEFAULT,
} from '../shared/abi.js';
import { engineAssets } from './assets.js';
import { enableRelaxedSimd, relaxedSimd } from './features.js';
import { Connection } from './connection.js';
import { isNode } from '../shared/env.js';
import { OxError, abortError, toOxError } from '../shared/errors.js';
import { withBos } from '../shared/tokens.js';
import { GpuBridge } from '../gpu/bridge.js';
import { describeSource } from '../host/source.js';
import { createChatCompletion, createFetchHandler } from './openai.js';
import {
  CHAT_OPTIONS,
  DETOKENIZE_OPTIONS,
  EMBED_OPTIONS,
  ESTIMATE_OPTIONS,
  GENERATE_OPTIONS,
  IMAGE_OPTIONS,
  LOAD_OPTIONS,
  LOGITS_OPTIONS,
  LORA_OPTIONS,
  SCHEMA_OPTIONS,
  TOKENIZE_OPTIONS,
  checkOptions,
} from './options.js';
import { tokenStream } from './stream.js';
import { splitThought } from './thought.js';
import { cacheSources } from './cache.js';
import { imageInput, splitImages } from './image_input.js';
import { visionOf } from '../engine/vision.js';

export { OxError };
export { listCachedModels, deleteCachedModel } from './cache.js';

const MAX_DEFAULT_THREADS = 8;

// Where the page's import map puts @huggingface/jinja, for an unbundled module worker (import
// maps do not reach workers); null where a bundler or Node resolves it.
function jinjaUrl() {
  if (isNode) return null;
  try {
    const resolve = import.meta.resolve; // read, not called in place: webpack rejects the call form
    return resolve?.('@huggingface/jinja') ?? null;
  } catch {
    return null;
  }
}

// js/main/options.js: an unknown or invalid option is a RANGE OxError naming it
function optionError(call, table, opts, vocab) {
  try {
    checkOptions(call, table, opts, vocab);
    return null;
  } catch (e) {
    return toOxError(e);
  }
}
function checked(call, table, opts, vocab) {
  const e = optionError(call, table, opts, vocab);
  if (e) throw e;
  return opts ?? {};
}

// ---- which build, how many threads ----

async function hardwareThreads() {
  if (isNode) {
    const os = await import(/* webpackIgnore: true */ 'node:os');
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
    if (!isolated)
      note =
        'crossOriginIsolated is false (no COOP/COEP headers): SharedArrayBuffer is unavailable, so the single-threaded build runs';
  } else if (build === 'mt' && !isolated) {
    throw new OxError('UNSUPPORTED', 'the threaded build needs crossOriginIsolated (COOP/COEP headers)');
  } else if (build !== 'mt' && build !== 'st') {
    throw new OxError('RANGE', `build must be 'auto', 'mt' or 'st', not ${JSON.stringify(build)}`);
  }
  let threads = opts.threads ?? Math.min(MAX_DEFAULT_THREADS, await hardwareThreads());
  if (!Number.isInteger(threads) || threads < 1 || threads > 64)
    throw new OxError('RANGE', `threads must be an integer from 1 to 64, not ${threads}`);
  if (build === 'st' && threads > 1) {
    if (opts.threads > 1) note = `${note ? note + '; ' : ''}threads=${opts.threads} requested, 1 used`;
    threads = 1;
  }
  return { build, threads, note };
}

// 'relaxed' where this engine runs relaxed SIMD (Node 20/21: once enableRelaxedSimd has set
// V8's flag) and the relaxed build is there (in Node: its files, in dist/ or where assetBase /
// locateFile put them; a page gets both builds from the package), else 'simd128'; opts.simd
// forces one.
async function simdBuild(build, opts) {
  const want = opts.simd ?? 'auto';
  if (want === 'simd128') return want;
  const can = relaxedSimd() || (isNode && (await enableRelaxedSimd()));
  if (want === 'relaxed' && !can) throw new OxError('UNSUPPORTED', 'simd: this WebAssembly engine has no relaxed SIMD');
  if (!can) return 'simd128';
  if (isNode) {
    const [{ existsSync }, { fileURLToPath }] = await Promise.all([
      import(/* webpackIgnore: true */ 'node:fs'),
      import(/* webpackIgnore: true */ 'node:url'),
    ]);
    let present = false;
    try {
      present = Object.values(engineAssets(`${build}-relaxed`, opts)).every(
        (u) => u.startsWith('file:') && existsSync(fileURLToPath(u)),
      );
    } catch {
      // a place the relaxed files cannot be at: the SIMD128 build's own lookup reports it
    }
    if (!present) {
      if (want === 'relaxed')
        throw new OxError(
          'MISSING',
          'simd: the relaxed-SIMD build is not where the engine files are (make -f Makefile.emscripten relaxed, with clang-16; or assetBase / locateFile)',
        );
      return 'simd128';
    }
  }
  return 'relaxed';
}

// ---- memory ----

const GiB = 2 ** 30;

/**
 * The memory budget loadModel({memoryBudget: 'auto'}) uses here: Node, the wasm32 limit (4 GiB,
 * less 64 MiB for the module and stacks); a mobile browser (Safari on iPhone/iPad, Android)
 * 1.5 GB, what such a tab can hold before it is killed; a desktop tab, half of
 * navigator.deviceMemory (Chromium reports at most 8) up to the wasm32 limit, or 2 GiB where
 * the browser does not say.
 */
export function defaultMemoryBudget() {
  const wasm32 = 4 * GiB - 64 * 2 ** 20;
  if (isNode) return wasm32;
  const nav = globalThis.navigator ?? {};
  const mobile = nav.userAgentData?.mobile ?? /iPhone|iPad|iPod|Android|Mobile/.test(nav.userAgent ?? '');
  if (mobile) return 1.5e9;
  return nav.deviceMemory > 0 ? Math.min(wasm32, (nav.deviceMemory * GiB) / 2) : 2 * GiB;
}

// memoryBudget option -> {bytes, fit} or null (js/main/options.js checked its shape)
function budgetOf(v) {
  if (v === undefined) return null;
  const o = typeof v === 'object' ? v : { bytes: v };
  const bytes = o.bytes === undefined || o.bytes === 'auto' ? defaultMemoryBudget() : o.bytes;
  return { bytes, fit: o.fit ?? 'none' };
}

function sourcesOf(sources, call) {
  const list = Array.isArray(sources) ? sources : [sources];
  if (!list.length) throw new OxError('RANGE', `${call}: no model files given`);
  try {
    return list.map((s) => describeSource(s));
  } catch (e) {
    throw toOxError(e);
  }
}

/**
 * What loadModel(sources, opts) would allocate, in bytes, from the files' headers only (GGUF
 * header, metadata and tensor infos; safetensors headers and config.json): on a URL this is a
 * few range reads before any download. The sums are the C loader's and allocator's own
 * (src/model/estimate.h), run in an engine worker started for the call.
 * @returns {Promise<{weights: number, embeddingsOnHost: number, weightCache: number, kv: number, scratch: number, runtime: number, total: number, fileBytes: number, context: number}>}
 */
export async function estimateMemory(sources, opts = {}) {
  checked('estimateMemory', ESTIMATE_OPTIONS, opts);
  const descs = sourcesOf(sources, 'estimateMemory');
  const { signal } = opts;
  if (signal?.aborted) throw abortError('estimate');
  const env = await chooseEngine(opts);
  const simd = await simdBuild(env.build, opts);
  const assets = engineAssets(simd === 'relaxed' ? `${env.build}-relaxed` : env.build, opts);
  const engine = await Connection.open();
  const onAbort = () => engine.terminate(abortError('estimate'));
  signal?.addEventListener('abort', onAbort, { once: true });
  const budget = budgetOf(opts.memoryBudget);
  // backend: 'webgpu' counts the GPU's memory (where the model can run there); 'auto' does so
  // where a hardware adapter exists; 'cpu' (default) never
  const backend = opts.backend ?? 'cpu';
  const gpu = backend === 'webgpu' || (backend === 'auto' && (await probeHardwareGpu()) === null);
  try {
    await engine.call('init', { build: env.build, threads: env.threads, assets, host: opts.host, jinjaUrl: null });
    return await engine.call('estimate', {
      sources: descs,
      quant: QUANT[opts.quant ?? 'stored'],
      tablesOnHost: opts.tablesOnHost === undefined ? undefined : !!opts.tablesOnHost,
      gpu,
      ...streamingOf(opts),
      context: opts.context ?? 0,
      kvType: KV_TYPE[opts.kvType ?? 'f32'],
      budget: budget?.bytes ?? 0,
      fit: budget?.fit === 'context',
      autoStream: autoStreamOf(opts),
    });
  } catch (e) {
    if (signal?.aborted) throw abortError('estimate');
    throw toOxError(e);
  } finally {
    signal?.removeEventListener('abort', onAbort);
    engine.terminate();
  }
}

// ---- loading ----

// backend 'auto' asks once per page / process whether a hardware WebGPU adapter exists (a GPU
// thread opens a device, answers and goes), so loads where there is none start no GPU thread.
// Resolves to null (there is one) or why not.
let hardwareGpu = null;
const probeHardwareGpu = () =>
  (hardwareGpu ??= GpuBridge.start({ allowFallback: false }).then(
    (b) => (b.close(), null),
    (e) => e.message,
  ));

// streamWeights: weights left on the host, read per use into weightCache bytes (src/model/weights_cache.h)
function streamingOf(opts) {
  const stream = STREAM[opts.streamWeights ?? 'none'];
  return { stream, weightCache: stream ? (opts.weightCache ?? WEIGHT_CACHE_DEFAULT) : 0 };
}

// Over a memory budget the worker may stream the weights, with a cache of this many bytes,
// unless the caller chose a mode (0)
const autoStreamOf = (opts) => (opts.streamWeights === undefined ? (opts.weightCache ?? WEIGHT_CACHE_DEFAULT) : 0);

export async function loadModel(sources, opts = {}) {
  checked('loadModel', LOAD_OPTIONS, opts);
  const list = Array.isArray(sources) ? sources : [sources];
  if (!list.length) throw new OxError('RANGE', 'loadModel: no model files given');
  let descs,
    drafter = null;
  try {
    descs = list.map((s) => describeSource(s));
    if (opts.drafter)
      drafter = (Array.isArray(opts.drafter) ? opts.drafter : [opts.drafter]).map((s) => describeSource(s));
  } catch (e) {
    throw toOxError(e);
  }
  const quant = QUANT[opts.quant ?? 'stored'];
  const { stream, weightCache } = streamingOf(opts);
  const { signal } = opts;
  if (signal?.aborted) throw abortError('load');
  // opts.cache: URL sources are downloaded into the model cache and read from there (js/main/cache.js)
  const cached = opts.cache
    ? await cacheSources(descs, opts).catch((e) => {
        throw toOxError(e);
      })
    : null;
  if (cached) descs = cached.sources;
  let backend = opts.backend ?? 'auto',
    backendNote = null;
  if (backend === 'auto' && (backendNote = await probeHardwareGpu())) backend = 'cpu';
  const env = await chooseEngine(opts);
  const simd = await simdBuild(env.build, opts);
  const assets = engineAssets(simd === 'relaxed' ? `${env.build}-relaxed` : env.build, opts);
  if (env.note) opts.onWarning?.(env.note);
  const engine = await Connection.open();
  // slot 0: the load's abort; slot 1: the id of the last aborted request (Connection.abort), which
  // a grammar compiling or masking in C polls (Module.oxAborted)
  const abortFlag = typeof SharedArrayBuffer === 'function' ? new Int32Array(new SharedArrayBuffer(8)) : null;
  engine.abortFlag = abortFlag;
  // With shared memory the C loader sees the flag at its next progress call and unwinds
  // (OX_E_ABORTED); without it the worker is terminated. A failed load never keeps its worker.
  // A wait the flag cannot reach (a browser's sync read of local data) is cut by terminating
  // the worker when the load has not unwound 2 s after the abort.
  let abortTimer = null;
  const onAbort = () => {
    if (!abortFlag) return engine.terminate(abortError('load'));
    Atomics.store(abortFlag, 0, 1);
    abortTimer ??= setTimeout(() => engine.terminate(abortError('load')), 2000);
  };
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
    const { threads } = await engine.call('init', {
      build: env.build,
      threads: env.threads,
      assets,
      abortFlag,
      host: opts.host,
      jinjaUrl: jinjaUrl(),
    });
    const info = await engine.call(
      'load',
      {
        sources: descs,
        drafter,
        quant,
        tablesOnHost: opts.tablesOnHost === undefined ? undefined : !!opts.tablesOnHost, // unset: the backend's choice
        maxContext: opts.maxContext ?? 0,
        maxResident: opts.maxResident ?? 0,
        stream,
        weightCache,
        kvType: KV_TYPE[opts.kvType ?? 'f32'],
        budget: budgetOf(opts.memoryBudget),
        autoStream: autoStreamOf(opts),
        backend,
        allowFallbackAdapter: !!opts.allowFallbackAdapter,
        gpuLayers: opts.gpuLayers ?? 0,
        gpuMemory: opts.gpuMemory ?? 0,
      },
      progress,
    );
    // onProgress may have thrown after the engine's last look at the abort flag: the load
    // finished, but it still fails with that exception (and its worker goes)
    if (callbackError) throw callbackError;
    if (signal?.aborted) throw abortError('load');
    if (backendNote) info.backendNote ??= backendNote;
    return Object.assign(new Model(engine, info, { ...env, threads, simd }), { download: cached?.done ?? null });
  } catch (e) {
    cached?.abort();
    engine.terminate();
    if (callbackError) throw callbackError;
    if (signal?.aborted) throw abortError('load');
    throw toOxError(e);
  } finally {
    clearTimeout(abortTimer);
    signal?.removeEventListener('abort', onAbort);
  }
}

// ---- the model ----

class Model {
  constructor(engine, info, env) {
    this.engine = engine;
    /** fetch() for /v1/chat/completions, /v1/embeddings, /v1/models (js/main/openai.js): pass it to an OpenAI client. */
    this.fetch = createFetchHandler(this);
    const { chatTemplate, ...rest } = info;
    this.info = rest;
    this.chatTemplate = chatTemplate;
    this.build = env.build;
    /** 'relaxed' (the K-quant tiles on relaxed SIMD's dot product) or 'simd128'. */
    this.simd = env.simd;
    this.threads = env.threads;
    this.engineNote = env.note;
    /** 'webgpu' or 'cpu': where the forward runs (stats() says it again after a lost device). */
    this.backend = rest.backend ?? 'cpu';
  }

  async tokenize(text, opts) {
    const { special = true, addBos = false } = checked('tokenize', TOKENIZE_OPTIONS, opts);
    if (typeof text !== 'string') throw new OxError('RANGE', 'tokenize: text must be a string');
    const ids = await this.engine.call('tokenize', { text, special });
    return addBos ? withBos(ids, this.info.bos) : ids;
  }

  async detokenize(ids, opts) {
    return new TextDecoder().decode(await this.detokenizeBytes(ids, opts));
  }

  // the raw bytes (a token may end inside a UTF-8 character)
  async detokenizeBytes(ids, opts) {
    const { skipSpecial = false } = checked('detokenize', DETOKENIZE_OPTIONS, opts);
    return this.engine.call('detokenize', { ids: Array.from(ids), skipSpecial });
  }

  // Streaming: push(ids) -> the text completed so far (a character split across tokens waits
  // for its last byte); flush() -> what is left.
  detokenizer(opts) {
    const { skipSpecial = false } = checked('detokenizer', DETOKENIZE_OPTIONS, opts);
    const d = new TextDecoder();
    return {
      push: async (ids) => d.decode(await this.detokenizeBytes(ids, { skipSpecial }), { stream: true }),
      flush: () => d.decode(),
    };
  }

  async logits(tokens, opts) {
    const { all = false } = checked('logits', LOGITS_OPTIONS, opts);
    return this.engine.call('logits', { tokens: Array.from(tokens), all });
  }

  generate(prompt, opts = {}) {
    // checked before the stream reads opts.signal; a bad option ends the stream with its error
    const bad = optionError('generate', GENERATE_OPTIONS, opts, this.info.vocab);
    const prepare = async () => {
      if (bad) throw bad;
      const args = await this.generationArgs(opts);
      if (typeof prompt === 'string') return { text: prompt, opts: args };
      return { tokens: Array.from(prompt), opts: args };
    };
    return tokenStream(this.engine, prepare, bad ? undefined : opts.signal);
  }

  // Keeps the KV cache across turns: only the part of the rendered conversation that differs
  // from what the cache holds is prefilled.
  chat(messages, opts = {}) {
    const bad =
      optionError('chat', CHAT_OPTIONS, opts, this.info.vocab) ??
      (opts.images !== undefined
        ? new OxError('RANGE', "chat: images go in the messages, as {type: 'image', image} content parts")
        : null);
    const prepare = async () => {
      if (bad) throw bad;
      const parts = await splitImages(messages, { read: false });
      const images = parts.images.length ? parts.images : undefined;
      const args = await this.generationArgs({ ...opts, images }, parts.where);
      return { messages: parts.messages, chat: chatArgs(opts), opts: args };
    };
    return splitThought(tokenStream(this.engine, prepare, bad ? undefined : opts.signal));
  }

  // the sampling options, soft tokens with their placeholder as an id, and the images read
  // (where[i] names image i in errors: a chat's say which message part it came from)
  async generationArgs(opts, where = []) {
    const args = samplingArgs(opts);
    if (opts.images?.length) {
      visionOf(this.info); // (before reading any image: UNSUPPORTED for a model without a tower)
      args.images = await Promise.all(opts.images.map((x, i) => imageInput(x, where[i] ?? `images[${i}]`)));
    }
    if (opts.maxImageTokens !== undefined) args.maxImageTokens = opts.maxImageTokens;
    if (opts.softTokens !== undefined) {
      const { token, embeddings } = opts.softTokens ?? {};
      if (!(embeddings instanceof Float32Array) || embeddings.length % this.info.hidden)
        throw new OxError(
          'RANGE',
          `softTokens.embeddings must be a Float32Array of rows of ${this.info.hidden} (the hidden size)`,
        );
      let id = token;
      if (typeof token === 'string') {
        const ids = await this.tokenize(token);
        if (ids.length !== 1)
          throw new OxError('RANGE', `softTokens.token ${JSON.stringify(token)} is not one token of the vocabulary`);
        [id] = ids;
      }
      if (!Number.isInteger(id) || id < 0 || id >= this.info.vocab)
        throw new OxError('RANGE', `softTokens.token must be a token id or piece, not ${JSON.stringify(token)}`);
      args.soft = { token: id, embeddings };
    }
    return args;
  }

  /**
   * Embeddings of texts (or token arrays): Float32Arrays of the hidden size.
   * @param {string | (string | number[])[]} texts
   * @param {{pooling?: 'mean' | 'last' | 'cls', normalize?: boolean}} [opts]
   */
  async embed(texts, opts = {}) {
    checked('embed', EMBED_OPTIONS, opts);
    const list = Array.isArray(texts) && (texts.length === 0 || typeof texts[0] !== 'number') ? texts : [texts];
    if (!list.length || !list.every((t) => typeof t === 'string' || Array.isArray(t)))
      throw new OxError('RANGE', 'embed: texts must be a string, a token array, or an array of them');
    return this.engine.call('embed', {
      texts: list,
      opts: { pooling: opts.pooling ?? 'mean', normalize: opts.normalize !== false },
    });
  }

  /**
   * The vision tower's soft-token rows for one image, as a prompt's image gets them
   * (docs/images.md): {embeddings (softTokens x hidden floats), softTokens, height, width (the
   * size the image was resized to)}. With softTokens of `<|image|>` they are what an image part
   * puts in a prompt.
   * @param {any} image  @param {{maxImageTokens?: number}} [opts]
   */
  async embedImage(image, opts = {}) {
    checked('embedImage', IMAGE_OPTIONS, opts);
    const args = await this.generationArgs({ images: [image] }, ['embedImage: image']);
    return this.engine.call('embedImage', { image: args.images[0], maxImageTokens: opts.maxImageTokens });
  }

  /**
   * GBNF for a JSON schema (pass it as the `grammar` option: the output is JSON valid under the
   * schema), converted in the engine (src/decode/json_schema.c; the subset: docs/grammar.md). With
   * `toolCalls`, `schema` is an array of OpenAI tools and the grammar is the rest of a forced
   * Gemma 4 tool call after `<|tool_call>call:` (afterName: the first tool's name is written;
   * parallel: more calls may follow). Outside the subset: OxError UNSUPPORTED naming the keyword.
   * @param {object | boolean | object[]} schema
   * @param {{toolCalls?: boolean, afterName?: boolean, parallel?: boolean}} [opts]
   * @returns {Promise<string>}
   */
  async jsonSchemaGrammar(schema, opts = {}) {
    const {
      toolCalls = false,
      afterName = false,
      parallel = false,
    } = checked('jsonSchemaGrammar', SCHEMA_OPTIONS, opts);
    let json;
    try {
      json = JSON.stringify(schema);
    } catch (e) {
      throw new OxError('RANGE', `jsonSchemaGrammar: the schema is not JSON (${e.message})`);
    }
    if (json === undefined) throw new OxError('RANGE', 'jsonSchemaGrammar: the schema is not JSON');
    return this.engine.call('schemaGrammar', { json, toolCalls, afterName, parallel });
  }

  /** OpenAI's chat.completions.create shape (js/main/openai.js). */
  createChatCompletion(request) {
    return createChatCompletion(this, request);
  }

  /** OpenAI's embeddings.create shape: {input, model?, encoding_format?}. */
  async createEmbedding(request) {
    const input = request?.input;
    const list = typeof input === 'string' || (Array.isArray(input) && typeof input[0] === 'number') ? [input] : input;
    if (!Array.isArray(list) || !list.length)
      throw new OxError('RANGE', 'createEmbedding: input must be a string, a token array, or an array of them');
    if (
      request.encoding_format !== undefined &&
      request.encoding_format !== 'float' &&
      request.encoding_format !== 'base64'
    )
      throw new OxError('RANGE', "createEmbedding: encoding_format must be 'float' or 'base64'");
    const vecs = await this.embed(list, { pooling: request.pooling, normalize: request.normalize });
    const tokens = (await Promise.all(list.map((t) => (typeof t === 'string' ? this.tokenize(t) : t)))).reduce(
      (n, t) => n + t.length + 1,
      0,
    );
    const encode = (v) =>
      request.encoding_format === 'base64'
        ? base64(new Uint8Array(v.buffer, v.byteOffset, v.byteLength))
        : Array.from(v);
    return {
      object: 'list',
      data: vecs.map((v, index) => ({ object: 'embedding', index, embedding: encode(v) })),
      model: typeof request.model === 'string' ? request.model : this.info.name || 'oxinfer',
      usage: { prompt_tokens: tokens, total_tokens: tokens },
    };
  }

  // the prompt text chat() would run
  async renderChat(messages, opts = {}) {
    checked('renderChat', CHAT_OPTIONS, opts, this.info.vocab);
    const parts = await splitImages(messages, { read: false });
    return this.engine.call('render', { messages: parts.messages, chat: chatArgs(opts) });
  }

  resetChat() {
    return this.engine.call('reset');
  }

  /**
   * Attach LoRA adapters in place of the attached ones (docs/lora.md): each {source, scale = 1},
   * source a GGUF adapter (path, URL, File/Blob) or [adapter_config.json, adapter_model.safetensors];
   * [] detaches all. The base weights are not reloaded; the KV cache is emptied.
   * @param {{source: any, scale?: number}[]} adapters
   * @returns {Promise<{adapters: number, modules: number}>}
   */
  async setLora(adapters) {
    if (!Array.isArray(adapters))
      throw new OxError('RANGE', 'setLora: adapters must be an array of {source, scale} ([] detaches)');
    const list = adapters.map((a, i) => {
      checked(`setLora: adapter ${i}`, LORA_OPTIONS, a);
      if (!a || a.source === undefined) throw new OxError('RANGE', `setLora: adapter ${i} has no source`);
      try {
        return {
          sources: (Array.isArray(a.source) ? a.source : [a.source]).map((s) => describeSource(s)),
          scale: a.scale ?? 1,
        };
      } catch (e) {
        throw toOxError(e);
      }
    });
    return this.engine.call('setLora', { adapters: list });
  }

  async stats() {
    const st = await this.engine.call('stats');
    this.backend = this.info.backend = st.backend; // a lost device moved it to the CPU
    return st;
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

function base64(bytes) {
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

// what the chat template needs (js/engine/chat.js renderChat's options)
function chatArgs(o) {
  const out = {};
  for (const k of ['template', 'thinking', 'addGenerationPrompt', 'tools', 'vars', 'bosToken', 'eosToken'])
    if (o[k] !== undefined) out[k] = o[k];
  return out;
}

// the top-level options that go to C as they are (js/shared/abi.js genOptions), and two the worker reads
const PASSED = [...GEN_OPTIONS.map((g) => g.option).filter((k) => !k.includes('.')), 'prefillChunk', 'grammar'];

// The request's generation arguments, from options js/main/options.js has checked (ranges such as
// top_p in (0, 1] are the C sampler's, sampler.h, whose messages use its names).
function samplingArgs(o) {
  const out = {};
  for (const k of PASSED) if (o[k] !== undefined) out[k] = o[k];
  if (o.stop !== undefined) out.stop = Array.isArray(o.stop) ? o.stop : [o.stop];
  if (o.stopIds !== undefined) out.stopIds = Array.from(o.stopIds);
  if (o.logitBias !== undefined)
    out.logitBias = o.logitBias instanceof Map ? Object.fromEntries(o.logitBias) : { ...o.logitBias };
  if (o.speculative) {
    out.speculative = o.speculative === true ? {} : { ...o.speculative };
  } else if (
    o.speculative === undefined &&
    (o.temperature === 0 || o.topK === 1) &&
    o.grammar === undefined &&
    o.logprobs === undefined
  ) {
    // greedy: prompt lookup by default, where it changes nothing but speed (bench:decoding
    // measured no model slower with it)
    out.speculative = { draftTokens: DRAFTS.greedyDefault };
  }
  return out;
}
