// page.mjs — one engine per page, driven by tools/bench.mjs through page.evaluate():
// window.bench.fetchModel(url), .load(engine, opts), .run(prompt), .memory(), .unload(), and
// .probe(threads, mbytes, reps): the wasm read-bandwidth ceiling (tools/bench/probe-worker.js).
// Both engines load the model from the same in-memory Blob (the fetch is timed apart; ours can
// read the served file by HTTP Range requests instead) and
// run the same prompts: prefill of the whole prompt (no cache reuse), then nGen greedy tokens
// with end-of-sequence ignored.
let blob = null;
let engine = null; // {name, run(p), memory(), unload()}

async function fetchModel(url) {
  const t0 = performance.now();
  try {
    blob = await (await fetch(url)).blob();
  } catch (e) {
    throw new Error(`the browser could not hold the model file as a Blob (${e.message})`);
  }
  return {
    fetch_ms: performance.now() - t0,
    bytes: blob.size,
    isolated: self.crossOriginIsolated,
    cores: navigator.hardwareConcurrency,
    ua: navigator.userAgent,
  };
}

// source 'blob': the fetched Blob; 'url': HTTP Range reads of the served file (large models)
async function loadOxinfer({ threads, nCtx, source, url }) {
  const { loadModel } = await import('/js/main/index.js');
  const { timeGenerate } = await import('./measure.mjs');
  const t0 = performance.now();
  const model = await loadModel(source === 'url' ? { url, name: 'model.gguf' } : { blob, name: 'model.gguf' }, {
    threads,
    maxContext: nCtx,
  });
  const load_ms = performance.now() - t0;
  engine = {
    async run({ tokens, nGen }) {
      return timeGenerate(model, tokens, nGen);
    },
    async memory() {
      const s = await model.stats();
      return {
        wasm_bytes: s.wasmMemoryBytes,
        resident_bytes: s.residentBytes,
        host_bytes_read: s.hostBytesRead,
        host_read_calls: s.hostReadCalls,
        host_bytes_all: s.hostBytesReadAll,
      };
    },
    unload: () => model.unload(),
  };
  return { load_ms, build: model.build, threads: model.threads, note: model.engineNote, info: model.info };
}

// wllama keeps its wasm Memory in a module worker made from a Blob of source text, out of
// reach of the page; append one line to that source that exposes the Memory's size to
// tools/bench.mjs (playwright worker.evaluate). Nothing else changes.
function exposeWllamaMemory() {
  const B = globalThis.Blob;
  globalThis.Blob = class extends B {
    constructor(parts, opts) {
      if (Array.isArray(parts) && typeof parts[0] === 'string' && parts[0].includes('const getWModuleConfig'))
        parts = [
          ...parts,
          '\n;self.__oxWasmBytes = () => (Module && Module.wasmMemory ? Number(Module.wasmMemory.buffer.byteLength) : null);\n',
        ];
      super(parts, opts);
    }
  };
}

async function loadWllama({ threads, nCtx }) {
  exposeWllamaMemory();
  const { Wllama } = await import('/wllama/esm/index.js');
  const w = new Wllama(
    { default: '/wllama/esm/wasm/wllama.wasm' },
    { suppressNativeLog: true, logger: { ...console, debug: () => {}, log: () => {} } },
  );
  w.setCompat?.(null); // never its CDN fallback build (this Chromium has JSPI and memory64)
  const t0 = performance.now();
  await w.loadModel([blob], {
    n_threads: threads,
    n_ctx: nCtx,
    n_batch: 512,
    n_ubatch: 512,
    n_parallel: 1,
    n_gpu_layers: 0,
    seed: 1,
  });
  const load_ms = performance.now() - t0;
  engine = {
    async run({ text, tokens, nGen }) {
      const t = performance.now();
      const res = await w.createCompletion({
        prompt: text,
        max_tokens: nGen,
        temperature: 0,
        ignore_eos: true,
        cache_prompt: false,
      });
      const tm = res.timings ?? {};
      if (tm.prompt_n !== tokens.length)
        throw new Error(`wllama prefilled ${tm.prompt_n} tokens, expected ${tokens.length}`);
      return {
        wall_ms: performance.now() - t,
        generated: tm.predicted_n,
        prompt_n: tm.prompt_n,
        prefill_tps: tm.prompt_n / (tm.prompt_ms / 1000),
        decode_tps: tm.predicted_n / (tm.predicted_ms / 1000),
        decode_n: tm.predicted_n,
      };
    },
    // wllama's wasm memory lives in its worker: tools/bench.mjs reads it there
    memory: async () => ({}),
    unload: () => w.exit(),
  };
  return {
    load_ms,
    build: w.isMultithread() ? 'mt' : 'st',
    threads: w.getNumThreads(),
    libllama: Wllama.getLibllamaVersion?.(),
  };
}

// src/wasm/probe.c in a Worker of this (cross-origin-isolated) page, on the engine's own pool
function probe(threads, mbytes, reps) {
  return new Promise((resolve, reject) => {
    const w = new Worker('/bench/probe-worker.js');
    w.onmessage = ({ data }) => {
      w.terminate();
      if (data.error) reject(new Error(data.error));
      else resolve(data.bytes_per_s);
    };
    w.onerror = (e) => {
      w.terminate();
      reject(new Error(e.message));
    };
    w.postMessage({ threads, mbytes, reps, glue: new URL('/dist/oxinfer-mt.js', location.href).href });
  });
}

window.bench = {
  fetchModel,
  probe,
  load: (name, opts) => (name === 'wllama' ? loadWllama(opts) : loadOxinfer(opts)),
  run: (p) => engine.run(p),
  memory: () => engine.memory(),
  async unload() {
    await engine?.unload();
    engine = null;
    blob = null;
  },
};
window.benchReady = true;
