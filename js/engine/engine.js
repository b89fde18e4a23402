// engine.js — one loaded model in the engine worker: the Emscripten runtime, its host-file
// table, the C engine and its session. States: started (runtime up, no model) -> loaded ->
// unloaded (started again). A wasm trap ends it for good (protocol.js refuses every request).
import { estimateFields, gpuList, pooling as POOLING, statsFields, stream as STREAM } from '../shared/abi.js';
import { OxError } from '../shared/errors.js';
import { withBos } from '../shared/tokens.js';
import { GpuBridge, gpuBridgeUsable } from '../gpu/bridge.js';
import { GPU_TYPES } from '../gpu/kernels.js';
import { HostFiles } from '../host/hostfile.js';
import { Heap } from './heap.js';
import { ImageCache } from './image_cache.js';
import { startRuntime } from './runtime.js';
import { Session } from './session.js';

const STREAM_NAME = Object.fromEntries(Object.entries(STREAM).map(([k, v]) => [v, k]));
const gib = (n) => `${(n / 2 ** 30).toFixed(2)} GiB`;
// the ggml types the GPU has kernels for, as the C load's bit mask (an f64 across the ABI)
const GPU_TYPE_MASK = Object.keys(GPU_TYPES).reduce((a, t) => a + 2 ** Number(t), 0);

export class Engine {
  // init: {build, threads, assets, abortFlag, host}; onAbort(what): the wasm trapped; aborting():
  // the running request was aborted (src/host/hostfile_lib.js ox_js_aborted asks it)
  static async start(init, onAbort, aborting = () => false) {
    const M = await startRuntime({
      build: init.build,
      assets: init.assets,
      poolSize: Math.max(1, init.threads - 1),
      onAbort,
    });
    // an aborted load ends the host's waits too
    const e = new Engine(
      M,
      new HostFiles({ ...init.host, abortFlag: init.abortFlag ?? null }),
      init.abortFlag ?? null,
      aborting,
    );
    e.heap.check(e.heap.C.ox_wasm_set_threads(init.threads));
    return e;
  }

  constructor(M, host, abortFlag, aborting = () => false) {
    this.heap = new Heap(M);
    this.host = host;
    this.abortFlag = abortFlag; // Int32Array over a SharedArrayBuffer (load abort), or null
    this.ptr = 0; // the C engine, 0 until a model is loaded
    this.session = null;
    this.info = null;
    this.template = null; // the checkpoint's chat template, or null
    this.gpu = null; // the GpuBridge while the model runs on the GPU backend
    this.images = new ImageCache(); // the tower's rows of the images seen lately (js/engine/vision.js)
    host.onClose = (h) => this.heap.C.ox_host_wasm_forget(h);
    M.oxHost = host; // src/host/hostfile_lib.js reads through it
    M.oxAborted = aborting;
  }

  get threads() {
    return this.heap.C.ox_wasm_threads();
  }

  // this, if a model is loaded
  requireModel() {
    if (!this.ptr) throw new OxError('STATE', 'no model is loaded');
    return this;
  }

  // The memory a load of the open handles would take (src/model/estimate.h), from their
  // headers: m {quant, tablesOnHost, stream (an id), weightCache, context (0: the model's), kvType (0: f32), budget (bytes,
  // 0: none), fit (lower the context to the budget), gpu (on the GPU backend)} -> {weights, embeddingsOnHost, kv,
  // weightCache, scratch, runtime, total, fileBytes, context, backend, gpu ({weights, kv, scratch} or null)}
  estimateOpen(handles, m) {
    const { heap } = this;
    const n = estimateFields.length;
    const rec = heap.withInts(handles, (p) =>
      heap.scoped(
        n * 8,
        (out) => (
          heap.check(
            heap.C.ox_wasm_estimate(
              p,
              handles.length,
              m.quant,
              m.tablesOnHost === undefined ? (m.gpu ? -1 : 0) : m.tablesOnHost ? 1 : 0,
              m.stream ?? 0,
              m.weightCache ?? 0,
              m.context ?? 0,
              m.kvType ?? 0,
              m.budget ?? 0,
              m.fit ? 1 : 0,
              m.gpu ? 1 : 0,
              m.gpu ? GPU_TYPE_MASK : 0,
              out,
            ),
          ),
          heap.f64(out, n).slice()
        ),
      ),
    );
    const { gpu, gpuWeights, gpuKv, gpuScratch, ...est } = Object.fromEntries(
      estimateFields.map((f, i) => [f, rec[i]]),
    );
    return {
      ...est,
      backend: gpu ? 'webgpu' : 'cpu',
      gpu: gpu ? { weights: gpuWeights, kv: gpuKv, scratch: gpuScratch } : null,
    };
  }

  async estimate(m) {
    const handles = [];
    try {
      for (const src of m.sources) handles.push(await this.host.open(src));
      if (!m.budget) return { ...this.estimateOpen(handles, m), streamWeights: STREAM_NAME[m.stream ?? 0] };
      // under a budget: as the load would decide (streamed weights included)
      const { est, stream } = this.fitBudget(handles, {
        ...m,
        maxContext: m.context,
        budget: { bytes: m.budget, fit: m.fit ? 'context' : 'none' },
      });
      return { ...est, streamWeights: STREAM_NAME[stream] };
    } finally {
      for (const h of handles) this.host.close(h);
    }
  }

  // m: {sources, drafter (sources of an MTP drafter, or null), quant (an id of js/shared/abi.js),
  // tablesOnHost, maxContext, maxResident, stream (an id), weightCache, kvType (an id), budget ({bytes, fit} or null),
  // autoStream (weight cache bytes when streamWeights was not given, else 0)}; progress(done, total). With a budget the
  // estimate decides the context (and, with autoStream, whether weights are streamed), and the
  // memory for all of it is taken before the load (wasm memory grows once).
  async load(m, progress) {
    if (this.ptr) throw new OxError('STATE', 'a model is already loaded in this worker');
    this.loadArgs = m; // leaveGpu loads it again on the CPU
    const { heap, host } = this;
    const C = heap.C;
    const handles = [];
    const want = m.drafter ? 'cpu' : (m.backend ?? 'auto');
    let bridge = null,
      gpuNote =
        m.drafter && m.backend !== 'cpu'
          ? 'webgpu: the MTP drafter reads the CPU KV caches; the model runs on the CPU'
          : undefined;
    try {
      // the device first: the load uploads the matrices as it reads them (docs/architecture.md
      // "GPU backend", Memory)
      if (want !== 'cpu') ({ bridge, note: gpuNote } = await this.openGpu(want, !!m.allowFallbackAdapter));
      for (const src of m.sources) handles.push(await host.open(src));
      let est = null;
      let { stream = 0, weightCache = 0 } = m;
      if (m.budget) {
        // on the GPU the budget counts the device's memory too, and no CPU KV cache is taken
        ({ est, stream, weightCache } = this.fitBudget(handles, { ...m, gpu: !!bridge }));
        heap.check(C.ox_wasm_reserve(est.total));
      }
      heap.M.oxProgress = (done, total) => {
        progress(done, total);
        return this.abortFlag && Atomics.load(this.abortFlag, 0) ? 1 : 0;
      };
      heap.M.oxGpuLoad = bridge;
      // tablesOnHost unset: embedding rows from the host on the GPU (the head is there), else not
      const onHost = m.tablesOnHost === undefined ? (bridge ? -1 : 0) : m.tablesOnHost ? 1 : 0;
      this.ptr = heap.checkPtr(
        heap.withInts(handles, (p) =>
          C.ox_wasm_load(
            p,
            handles.length,
            m.quant,
            onHost,
            m.maxResident ?? 0,
            stream,
            weightCache,
            bridge && !m.gpuLayers && !m.gpuMemory ? 1 : 0, // a split uploads after the load
            bridge ? GPU_TYPE_MASK : 0,
          ),
        ),
      );
      this.info = {
        ...JSON.parse(C.ox_wasm_info(this.ptr)),
        files: handles.map((h) => host.name(h)),
        streamWeights: STREAM_NAME[stream],
      };
      if (m.drafter) {
        // the MTP drafter: its own files, checked against the model by the C side
        const dh = [];
        for (const src of m.drafter) dh.push(await host.open(src));
        heap.check(heap.withInts(dh, (p) => C.ox_wasm_load_drafter(this.ptr, p, dh.length, m.quant)));
        this.info.drafter = { files: dh.map((h) => host.name(h)) };
      }
      if (est?.gpu && !bridge.putIds.size) {
        // estimated for the GPU, loaded on the CPU (MoE, a type with no kernel, ...): as the CPU
        ({ est } = this.fitBudget(handles, { ...m, stream, weightCache, autoStream: 0 }));
        heap.check(C.ox_wasm_reserve(est.total));
      }
      this.session = new Session(
        heap,
        this.ptr,
        this.info.vocab,
        est ? est.context : (m.maxContext ?? 0),
        m.kvType ?? 0,
      );
      if (est) {
        if (!est.gpu) heap.check(C.ox_wasm_session_prealloc(this.session.ptr));
        this.info.context = est.context;
        this.info.memory = { ...est, streamWeights: STREAM_NAME[stream] };
      } else this.info.context = m.maxContext || this.info.contextSize;
      this.template = this.chatTemplate(handles);
      this.info.backend = 'cpu';
      if (bridge) {
        const b = bridge;
        bridge = null; // attachGpu owns it now
        await this.attachGpu(b, m.gpuLayers ?? 0, m.gpuMemory ?? 0);
      } else if (gpuNote) this.info.backendNote = gpuNote;
      return this.info;
    } catch (e) {
      await bridge?.close(); // (null once attachGpu has it: unload closes it)
      // a model that went to the GPU while loading has no CPU copy: with 'auto', a failed
      // upload loads it again on the CPU (a failed read fails the same way there)
      const retry = want === 'auto' && (bridge?.putFailed || e?.gpuUpload) && e?.code !== 'ABORTED';
      await this.unload();
      if (!retry) throw e;
      await this.load({ ...m, backend: 'cpu' }, progress);
      this.info.backendNote = `webgpu: ${e.message}; the model runs on the CPU`;
      return this.info;
    } finally {
      heap.M.oxProgress = null;
      heap.M.oxGpuLoad = null;
    }
  }

  // The GPU thread and its device for a load: {bridge} or, with 'auto' where there is none,
  // {bridge: null, note: why}; 'webgpu' throws instead.
  async openGpu(want, allowFallback) {
    try {
      if (!gpuBridgeUsable())
        throw new OxError(
          'UNSUPPORTED',
          'webgpu: the GPU backend needs SharedArrayBuffer (Node, or a crossOriginIsolated page with the threaded build)',
        );
      return { bridge: await GpuBridge.start({ allowFallback: want === 'webgpu' && allowFallback }) };
    } catch (e) {
      if (want === 'webgpu') throw e instanceof OxError ? e : new OxError('UNSUPPORTED', `webgpu: ${e?.message ?? e}`);
      return { bridge: null, note: e.message };
    }
  }

  // The estimate under m.budget ({bytes, fit}) at m.maxContext -> {est, stream, weightCache}:
  // the stream mode asked for, or one chosen by streamToFit.
  fitBudget(handles, m) {
    const { stream = 0, weightCache = 0 } = m;
    const ask = (s, cache, { budget = m.budget.bytes, context = m.maxContext ?? 0 } = {}) =>
      this.estimateOpen(handles, {
        ...m,
        stream: s,
        weightCache: cache,
        context,
        budget,
        fit: m.budget.fit === 'context',
      });
    try {
      return { est: ask(stream, weightCache), stream, weightCache };
    } catch (e) {
      // streamed only when the resident weights are what does not fit (not the context)
      if (
        e?.code !== 'NOMEM' ||
        !m.autoStream ||
        ask(stream, weightCache, { budget: 0, context: 1 }).total <= m.budget.bytes
      )
        throw e;
      return this.streamToFit(ask, m.autoStream, e);
    }
  }

  // Over the budget even at a context of 1 with every weight resident, and streamWeights not
  // chosen by the caller:
  // the first stream mode whose estimate fits ('experts', then 'all'), with a weight cache of
  // `cache` bytes; if none fits, NOMEM naming what each mode would need.
  streamToFit(ask, cache, err) {
    const needs = [];
    for (const [name, s] of Object.entries(STREAM)) {
      if (!s) continue;
      try {
        return { est: ask(s, cache), stream: s, weightCache: cache };
      } catch (e) {
        if (e?.code !== 'NOMEM') throw e;
        needs.push(`streamWeights: '${name}' needs ${gib(ask(s, cache, { budget: 0 }).total)}`);
      }
    }
    throw new OxError(
      'NOMEM',
      `${err.message}; with weights streamed from the file it does not fit either (${needs.join(', ')}, weightCache ${gib(cache)})`,
    );
  }

  // The backend (docs/architecture.md "GPU backend"): 'auto' takes WebGPU where a hardware
  // adapter exists, 'webgpu' insists (a software adapter only with allowFallback), 'cpu' never
  // tries (openGpu). Where the model can run on the GPU whole and no split was asked for, its
  // matrices went there during the load (bridge.putIds) and the vectors follow here; otherwise
  // they upload now from wasm memory: layers, the first layers on the GPU and the rest on the
  // CPU (0: all); gpuMemory: bytes of weights the GPU may hold (0: no limit), fewer layers until
  // they fit. A model the GPU backend cannot run (streamed weights, LoRA, bidirectional
  // attention) runs on the CPU, with the reason in info.backendNote.
  async attachGpu(bridge, layers = 0, gpuMemory = 0) {
    const { heap } = this;
    const C = heap.C;
    const streamed = bridge.putIds.size > 0;
    const onCpu = async (why) => {
      C.ox_wasm_gpu_detach(this.ptr);
      await bridge.close();
      this.info.backendNote = why;
    };
    const W = gpuList.entryWords;
    const L = this.info.layers;
    let table = null;
    for (let want = layers > 0 ? Math.min(layers, L) : L; want >= 1;) {
      const n = C.ox_wasm_gpu_attach(this.ptr, want, GPU_TYPE_MASK);
      if (n < 0) return onCpu(`${C.ox_wasm_err_msg()}; the model runs on the CPU`);
      table = heap.i32(C.ox_wasm_gpu_table(this.ptr), n * W).slice();
      const got = C.ox_wasm_gpu_layers(this.ptr);
      if (!gpuMemory || tableBytes(table) <= gpuMemory) break;
      C.ox_wasm_gpu_detach(this.ptr);
      table = null;
      want = got - 1;
    }
    if (!table)
      return onCpu(`webgpu: not one layer's weights fit gpuMemory (${gpuMemory} bytes); the model runs on the CPU`);
    try {
      await bridge.upload(table, () => new Uint8Array(heap.buffer));
    } catch (e) {
      if (!streamed) return onCpu(`webgpu: ${e.message}; the model runs on the CPU`);
      await bridge.close(); // no CPU copy of the matrices: the load fails (and 'auto' loads again on the CPU)
      e.gpuUpload = true;
      throw e;
    }
    this.session?.truncate(0); // its caches (if any) are the CPU's
    this.gpu = bridge;
    heap.M.oxGpu = bridge;
    C.ox_wasm_gpu_release(this.ptr); // the matrices live on the GPU only from now on
    const { description, fallback, features, maxBinding } = bridge.info;
    this.info.backend = 'webgpu';
    this.info.gpu = { adapter: description, fallbackAdapter: fallback, features, maxBinding };
    this.info.gpu.layers = C.ox_wasm_gpu_layers(this.ptr); // the rest (and the head, if any left) on the CPU
  }

  // After each request: a device lost during it puts the model back on the CPU (the request
  // itself already failed with that error). The sessions' positions were on the GPU: reset.
  async settleGpu() {
    if (this.gpu?.lost && this.ptr) await this.leaveGpu(this.gpu.lost);
  }

  // The model back on the CPU (why: info.backendNote): its matrices left wasm memory for the
  // GPU, so it is loaded again from its sources (the session restarts empty).
  async leaveGpu(why) {
    const m = this.loadArgs;
    await this.unload();
    await this.load({ ...m, backend: 'cpu' }, () => {});
    this.info.backendNote = why;
  }

  // resolves once the GPU thread has ended (the engine worker must outlive it: js/gpu/bridge.js)
  dropGpu() {
    const closed = this.gpu?.close();
    this.gpu = null;
    this.heap.M.oxGpu = null;
    return closed;
  }

  // The checkpoint's chat template: GGUF tokenizer.chat_template, chat_template.jinja or
  // tokenizer_config.json; null when none is shipped.
  chatTemplate(handles) {
    const { heap, host } = this;
    const fromGguf = heap.withString('tokenizer.chat_template', (k) => heap.C.ox_wasm_gguf_str(this.ptr, k));
    if (fromGguf !== null) return fromGguf;
    const byName = (n) => handles.find((h) => host.name(h) === n);
    const text = (h) => {
      const size = host.size(h);
      if (size > 16 << 20)
        throw new OxError('FORMAT', `${host.name(h)}: ${size} bytes is too large for a chat template file`);
      const b = new Uint8Array(size);
      host.read(h, 0, b);
      return new TextDecoder().decode(b);
    };
    const jinja = byName('chat_template.jinja');
    if (jinja !== undefined) return text(jinja);
    const tc = byName('tokenizer_config.json');
    if (tc === undefined) return null;
    let doc;
    try {
      doc = JSON.parse(text(tc));
    } catch (e) {
      throw new OxError('FORMAT', `tokenizer_config.json: ${e.message}`);
    }
    const t = doc.chat_template;
    if (typeof t === 'string') return t;
    if (Array.isArray(t)) return t.find((x) => x.name === 'default')?.template ?? t[0]?.template ?? null;
    return null;
  }

  // JSON schema (toolCalls: an array of tools) -> GBNF, by src/decode/json_schema.c; needs no model
  schemaGrammar(json, { toolCalls, afterName, parallel }) {
    const { heap } = this;
    return heap.withString(json, (p, n) => {
      const g = heap.C.ox_wasm_json_schema_grammar(p, n, toolCalls ? 1 : 0, afterName ? 1 : 0, parallel ? 1 : 0);
      if (g === null) throw heap.lastError();
      return g;
    });
  }

  // tests: whether the grammar takes the whole text (1/0), over this model's vocabulary
  grammarAccepts(gbnf, text) {
    const { heap } = this;
    return heap.withString(gbnf, (g, ng) =>
      heap.withString(text, (t, nt) => heap.check(heap.C.ox_wasm_grammar_accepts(this.ptr, g, ng, t, nt)) === 1),
    );
  }

  // text -> ids (special: match control tokens such as <bos> in the text)
  tokenize(text, special) {
    const { heap } = this;
    return heap.withString(text, (s, len) =>
      Array.from(
        heap.grown(
          (p, cap) => heap.C.ox_wasm_tokenize(this.ptr, s, len, special ? 1 : 0, p, cap),
          (p, n) => heap.i32(p, n),
          len + 16,
          4,
        ),
      ),
    );
  }

  // ids -> their bytes (UTF-8 may be split anywhere: the caller decodes in a stream)
  detokenize(ids, showSpecial) {
    const { heap } = this;
    const parts = ids.map((id) =>
      heap.grown(
        (p, cap) => heap.C.ox_wasm_token_bytes(this.ptr, id, showSpecial ? 1 : 0, p, cap),
        (p, n) => heap.u8(p, n),
        64,
        1,
      ),
    );
    const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    let k = 0;
    for (const p of parts) out.set(p, (k += p.length) - p.length);
    return out;
  }

  // texts -> one embedding each (a Float32Array of hidden floats); pooling: mean, last, cls
  embed(texts, { pooling = 'mean', normalize = true } = {}) {
    const { heap, info } = this;
    const mode = POOLING[pooling];
    if (mode === undefined)
      throw new OxError(
        'RANGE',
        `pooling must be one of ${Object.keys(POOLING).join(', ')}, not ${JSON.stringify(pooling)}`,
      );
    return texts.map((t) => {
      const ids = typeof t === 'string' ? this.tokenize(t, true) : Array.from(t);
      const tokens = withBos(ids, info.bos);
      return heap.withInts(tokens, (p) =>
        heap.scoped(
          info.hidden * 4,
          (out) => (
            heap.check(heap.C.ox_wasm_embed(this.ptr, p, tokens.length, mode, normalize ? 1 : 0, out)),
            heap.f32(out, info.hidden).slice()
          ),
        ),
      );
    });
  }

  stats() {
    const { heap } = this;
    const n = statsFields.length;
    const rec = heap.scoped(n * 8, (p) => (heap.check(heap.C.ox_wasm_stats(this.ptr, p)), heap.f64(p, n).slice()));
    return {
      ...Object.fromEntries(statsFields.map((f, i) => [f, rec[i]])),
      wasmMemoryBytes: heap.buffer.byteLength,
      backend: this.gpu ? 'webgpu' : 'cpu',
      gpuBytes: this.gpu ? Object.values(this.gpu.bytes).reduce((a, b) => a + b, 0) : 0,
      gpuMemory: this.gpu ? this.gpu.bytes : null,
      contextTokens: this.session.pos,
      hostCache: { ...this.host.stats },
      imageCache: this.images.stats,
    };
  }

  // true, or a promise of it while the GPU thread ends
  unload() {
    this.session?.free();
    const closed = this.dropGpu();
    if (this.ptr) this.heap.C.ox_wasm_free(this.ptr);
    this.ptr = 0;
    this.session = this.info = this.template = null;
    this.images = new ImageCache();
    this.host.closeAll();
    return closed ? closed.then(() => true) : true;
  }
}

// bytes of the weights in a GPU table (js/shared/abi.js gpuList: id, kind, type, rows, cols,
// pointer, row bytes, unit rows)
function tableBytes(table) {
  const W = gpuList.entryWords;
  let sum = 0;
  for (let i = 0; i < table.length; i += W) sum += table[i + 1] === 1 ? table[i + 4] * 4 : table[i + 3] * table[i + 6];
  return sum;
}
