// worker.js — the engine thread: one model per worker. The same file runs as a classic Web
// Worker (the Emscripten glue is loaded with importScripts) and as a Node worker_threads
// Worker (the glue is loaded with createRequire), so it has no static import/export and no
// top-level await; js/hostfile.js comes in through import().
//
// Protocol (js/index.js is the other side): requests {id, op, ...}; replies {id, ok: true,
// value} or {id, ok: false, error: {code, message}}; events {id, event: 'progress'|'token', ...}.
// Requests run one after another, except {op: 'abort', target}, which acts at once. Generation
// runs one forward step per task and yields to the event loop in between, so an abort message
// is seen between two tokens, with or without SharedArrayBuffer.
'use strict';

(function () {
  const isBrowser = typeof importScripts === 'function';
  let post, base;             // post(msg, transfer), URL of this script
  let M = null;               // the Emscripten module instance
  let host = null;            // HostFiles (js/hostfile.js)
  let dead = null;            // message, once wasm trapped: nothing runs after that
  let engine = 0, session = 0, info = null;
  let sessionTokens = [];     // tokens in the session's KV cache, in order
  let logitsPtr = 0;
  let contextLimit = 0;       // tokens the session holds at most
  let abortFlag = null;       // Int32Array over a SharedArrayBuffer (load abort), or null
  const jobs = new Map();     // request id -> {aborted}
  const abortedEarly = new Set(); // ids aborted before their request ran
  let lastStarted = 0;          // ids grow: a smaller one has run already
  let chain = Promise.resolve();

  const queued = []; // browser: messages that came before setup() finished
  let ready = false;

  class EngineError extends Error {
    constructor(code, message) {
      super(message);
      this.code = code;
    }
  }

  // ---- wasm helpers ----

  function check(rc) {
    if (rc < 0) throw lastError();
    return rc;
  }
  function lastError() {
    const code = M._ox_wasm_err_code();
    return new EngineError(M.UTF8ToString(M._ox_wasm_code_name(code)), M.UTF8ToString(M._ox_wasm_err_msg()));
  }
  // the current wasm memory (a grown shared memory is a new, longer SharedArrayBuffer)
  function buffer() {
    return (M.wasmMemory ?? M.HEAPU8).buffer;
  }
  function f32(ptr, n) {
    return new Float32Array(buffer(), ptr >>> 0, n);
  }
  function i32(ptr, n) {
    return new Int32Array(buffer(), ptr >>> 0, n);
  }
  function alloc(bytes) {
    const p = M._malloc(Math.max(8, bytes)) >>> 0;
    if (!p) throw new EngineError('NOMEM', `wasm memory: cannot allocate ${bytes} bytes`);
    return p;
  }
  function withInts(arr, fn) {
    const p = alloc(arr.length * 4);
    try {
      i32(p, arr.length).set(arr);
      return fn(p);
    } finally {
      M._free(p);
    }
  }
  function withString(s, fn) {
    const n = M.lengthBytesUTF8(s) + 1;
    const p = alloc(n);
    try {
      M.stringToUTF8(s, p, n);
      return fn(p);
    } finally {
      M._free(p);
    }
  }
  function needModel() {
    if (!engine) throw new EngineError('STATE', 'no model is loaded');
  }

  // yield to the event loop (messages are handled) and continue in a new task
  const nextTask = (() => {
    if (typeof setImmediate === 'function') return () => new Promise((r) => setImmediate(r));
    const ch = new MessageChannel();
    const waiting = [];
    ch.port1.onmessage = () => waiting.shift()();
    return () => new Promise((r) => {
      waiting.push(r);
      ch.port2.postMessage(0);
    });
  })();

  // ---- ops ----

  async function init(m) {
    const name = m.build === 'mt' ? 'oxinfer-mt' : 'oxinfer-st';
    const glueUrl = new URL(`../dist/${name}.js`, base).href;
    const cfg = {
      oxPoolSize: Math.max(1, m.threads - 1),
      print: (s) => console.log(s),
      printErr: (s) => console.error(s),
      onAbort: (what) => {
        dead = `the wasm engine stopped: ${what}`;
      },
    };
    // tests (Node): OX_TEST_MAX_MEMORY caps the threaded build's wasm memory, so that growth
    // is refused in the middle of a generation
    const cap = isBrowser ? 0 : Number(process.env.OX_TEST_MAX_MEMORY ?? 0);
    if (cap > 0 && m.build === 'mt') cfg.wasmMemory = new WebAssembly.Memory({ initial: 1024, maximum: Math.ceil(cap / 65536), shared: true });
    let factory;
    if (isBrowser) {
      try {
        importScripts(glueUrl);
      } catch (e) {
        throw new EngineError('MISSING', `${glueUrl}: cannot load the engine (${e.message}); build it with make -f Makefile.emscripten`);
      }
      factory = self[m.build === 'mt' ? 'OxinferMT' : 'OxinferST'];
      cfg.mainScriptUrlOrBlob = glueUrl;
      cfg.locateFile = (p) => new URL(p, glueUrl).href;
    } else {
      const { createRequire } = await import('node:module');
      const { fileURLToPath } = await import('node:url');
      const fs = await import('node:fs');
      const gluePath = fileURLToPath(glueUrl);
      if (!fs.existsSync(gluePath)) throw new EngineError('MISSING', `${gluePath} is missing: build it with make -f Makefile.emscripten`);
      factory = createRequire(gluePath)(gluePath);
      cfg.wasmBinary = fs.readFileSync(gluePath.replace(/\.js$/, '.wasm'));
    }
    M = await factory(cfg);
    const hf = await import(new URL('./hostfile.js', base).href);
    host = new hf.HostFiles({ ...m.host, abortFlag: m.abortFlag ?? null }); // an aborted load ends host waits too
    host.onClose = (h) => M._ox_host_wasm_forget(h);
    M.oxHost = host;
    abortFlag = m.abortFlag ?? null;
    check(M._ox_wasm_set_threads(m.threads));
    return { threads: M._ox_wasm_threads() };
  }

  async function load(m, id) {
    if (engine) throw new EngineError('STATE', 'a model is already loaded in this worker');
    const handles = [];
    try {
      for (const src of m.sources) handles.push(await host.open(src));
      let last = 0;
      M.oxProgress = (done, total) => {
        const now = performance.now();
        if (now - last > 50 || done === total) {
          last = now;
          post({ id, event: 'progress', done, total });
        }
        return abortFlag && Atomics.load(abortFlag, 0) ? 1 : 0;
      };
      engine = withInts(handles, (p) => M._ox_wasm_load(p, handles.length, m.quant, m.tablesOnHost ? 1 : 0, m.maxResident ?? 0)) >>> 0;
      if (!engine) throw lastError();
      info = JSON.parse(M.UTF8ToString(M._ox_wasm_info(engine)));
      info.files = handles.map((h) => host.name(h));
      session = M._ox_wasm_session_new(engine, m.maxContext ?? 0) >>> 0;
      if (!session) throw lastError();
      contextLimit = m.maxContext || info.contextSize;
      logitsPtr = alloc(info.vocab * 4);
      info.chatTemplate = chatTemplate(handles);
      return info;
    } catch (e) {
      unload();
      throw e;
    } finally {
      M.oxProgress = null;
    }
  }

  // the checkpoint's chat template: GGUF tokenizer.chat_template, chat_template.jinja or
  // tokenizer_config.json; null when none is shipped
  function chatTemplate(handles) {
    const fromGguf = withString('tokenizer.chat_template', (k) => M._ox_wasm_gguf_str(engine, k) >>> 0);
    if (fromGguf) return M.UTF8ToString(fromGguf);
    const byName = (n) => handles.find((h) => host.name(h) === n);
    const text = (h) => {
      const size = host.size(h);
      if (size > 16 << 20) throw new EngineError('FORMAT', `${host.name(h)}: ${size} bytes is too large for a chat template file`);
      const b = new Uint8Array(size);
      host.read(h, 0, b);
      return new TextDecoder().decode(b);
    };
    const jinja = byName('chat_template.jinja');
    if (jinja !== undefined) return text(jinja);
    const tc = byName('tokenizer_config.json');
    if (tc !== undefined) {
      let doc;
      try {
        doc = JSON.parse(text(tc));
      } catch (e) {
        throw new EngineError('FORMAT', `tokenizer_config.json: ${e.message}`);
      }
      const t = doc.chat_template;
      if (typeof t === 'string') return t;
      if (Array.isArray(t)) return t.find((x) => x.name === 'default')?.template ?? t[0]?.template ?? null;
    }
    return null;
  }

  function truncate(n) {
    check(M._ox_wasm_session_truncate(session, n));
    sessionTokens.length = n;
  }

  function forward(tokens, logits, all) {
    withInts(tokens, (p) => check(M._ox_wasm_forward(session, p, tokens.length, logits, all ? 1 : 0)));
    for (const t of tokens) sessionTokens.push(t);
  }

  // keep the longest common prefix of the cache and `tokens`, but always recompute the last
  // token (its logits are needed)
  function reuse(tokens) {
    let k = 0;
    const n = Math.min(sessionTokens.length, tokens.length - 1);
    while (k < n && sessionTokens[k] === tokens[k]) k++;
    if (k < sessionTokens.length) truncate(k);
    return k;
  }

  function checkTokens(tokens) {
    if (!tokens.length) throw new EngineError('RANGE', 'no tokens to run');
    for (const t of tokens)
      if (!Number.isInteger(t) || t < 0 || t >= info.vocab) throw new EngineError('RANGE', `token id ${t} is out of range (vocab ${info.vocab})`);
  }

  function tokenize(text, special) {
    const bytes = new TextEncoder().encode(text);
    const s = alloc(bytes.length + 1);
    try {
      new Uint8Array(buffer(), s, bytes.length).set(bytes);
      let cap = bytes.length + 16;
      for (;;) {
        const p = alloc(cap * 4);
        try {
          const n = check(M._ox_wasm_tokenize(engine, s, bytes.length, special ? 1 : 0, p, cap));
          if (n <= cap) return Array.from(i32(p, n));
          cap = n;
        } finally {
          M._free(p);
        }
      }
    } finally {
      M._free(s);
    }
  }

  // bytes of a token's text (control tokens: nothing, unless showSpecial)
  function tokenBytes(id, showSpecial) {
    if (!scratch.ptr) scratch.grow(256);
    const n = check(M._ox_wasm_token_bytes(engine, id, showSpecial ? 1 : 0, scratch.ptr, scratch.cap));
    if (n > scratch.cap) {
      scratch.grow(n);
      return tokenBytes(id, showSpecial);
    }
    return new Uint8Array(buffer(), scratch.ptr, n).slice();
  }
  const scratch = {
    ptr: 0,
    cap: 0,
    grow(n) {
      if (this.ptr) M._free(this.ptr);
      this.ptr = 0;
      this.cap = Math.max(n, 256);
      this.ptr = alloc(this.cap);
    },
  };

  // the bytes ids decode to (UTF-8 may be split anywhere: the caller decodes in a stream)
  function detokenize(ids, showSpecial) {
    const parts = ids.map((id) => tokenBytes(id, showSpecial));
    const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    let k = 0;
    for (const p of parts) out.set(p, (k += p.length) - p.length);
    return out;
  }

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

  function newSampler(o, seed) {
    const bias = Object.entries(o.logitBias ?? {});
    return withInts(bias.map(([k]) => Number(k)), (ids) => {
      const vals = alloc(bias.length * 4);
      try {
        f32(vals, bias.length).set(bias.map(([, v]) => v));
        const s = M._ox_wasm_sampler_new(o.temperature ?? 1, o.topK ?? 64, o.topP ?? 0.95, o.minP ?? 0,
          o.repetitionPenalty ?? 1, o.frequencyPenalty ?? 0, o.presencePenalty ?? 0, o.penaltyWindow ?? 64,
          seed, ids, vals, bias.length) >>> 0;
        if (!s) throw lastError();
        return s;
      } finally {
        M._free(vals);
      }
    });
  }

  async function generate(m, id) {
    needModel();
    const o = m.opts ?? {};
    const tokens = m.tokens;
    checkTokens(tokens);
    const maxTokens = o.maxTokens ?? 256;
    const stopIds = new Set(o.stopIds ?? info.eosIds);
    const stops = (o.stop ?? []).filter((s) => s.length);
    const match = stopMatcher(stops);
    const seed = o.seed ?? Math.floor(Math.random() * 2 ** 32);
    if (!Number.isInteger(seed) || seed < 0 || seed > Number.MAX_SAFE_INTEGER) throw new EngineError('RANGE', `seed must be an integer from 0 to 2^53-1, not ${seed}`);
    const window = o.penaltyWindow ?? 64;
    const st = { promptTokens: tokens.length, reusedTokens: 0, prefillTokens: 0, generatedTokens: 0, prefillMs: 0, decodeSteps: 0, decodeMs: 0, reason: 'length' };
    const decoder = new TextDecoder();
    const think = [info.channelOpen, info.channelClose];
    let thinking = false;
    let sampler = 0;
    let r = null; // the stop-string matcher's last answer
    const job = { aborted: abortedEarly.delete(id) };
    jobs.set(id, job);
    try {
      if (job.aborted) return done('abort');
      let t = performance.now();
      st.reusedTokens = reuse(tokens);
      const chunk = Math.max(1, o.prefillChunk ?? 256);
      for (let i = st.reusedTokens; i < tokens.length; i += chunk) {
        const part = tokens.slice(i, i + chunk);
        forward(part, i + part.length === tokens.length ? logitsPtr : 0, false);
        st.prefillTokens += part.length;
        if (i + part.length < tokens.length) {
          await nextTask();
          if (job.aborted) return done('abort');
        }
      }
      st.prefillMs = performance.now() - t;
      if (maxTokens <= 0) return done('length');
      sampler = newSampler(o, seed);
      // the penalties look at the last `window` tokens, prompt included (all when window <= 0)
      const history = window > 0 ? tokens.slice(-window) : tokens.slice();
      t = performance.now();
      for (;;) {
        await nextTask();
        if (job.aborted) return done('abort');
        // every token generated must fit in the context (the last one is run too)
        if (sessionTokens.length >= contextLimit) return done('context', null, r?.flush?.());
        const tok = withInts(history, (h) => check(M._ox_wasm_sample(engine, sampler, logitsPtr, h, history.length)));
        if (stopIds.has(tok)) return done('stop', null, r?.flush?.());
        history.push(tok);
        if (window > 0 && history.length > window) history.shift();
        st.generatedTokens++;
        const piece = decoder.decode(tokenBytes(tok, !!o.includeSpecial), { stream: true });
        if (tok === think[0]) thinking = true;
        r = match(piece);
        post({ id, event: 'token', token: tok, text: r.text, thinking });
        if (tok === think[1]) thinking = false;
        if (r.stop !== null) return done('stop', r.stop);
        if (st.generatedTokens >= maxTokens) return done('length', null, r.flush?.());
        forward([tok], logitsPtr, false);
        st.decodeSteps++;
        st.decodeMs = performance.now() - t;
      }
    } finally {
      if (sampler) M._ox_wasm_sampler_free(sampler);
      jobs.delete(id);
    }
    function done(reason, stop, tail) {
      if (tail) post({ id, event: 'token', token: -1, text: tail, thinking });
      st.reason = reason;
      if (stop) st.stop = stop;
      st.prefillTokPerSec = st.prefillMs > 0 ? (st.prefillTokens * 1000) / st.prefillMs : 0;
      st.decodeTokPerSec = st.decodeMs > 0 ? (st.decodeSteps * 1000) / st.decodeMs : 0;
      st.seed = seed;
      st.contextTokens = sessionTokens.length;
      return st;
    }
  }

  function logits(m) {
    needModel();
    const tokens = m.tokens;
    checkTokens(tokens);
    const v = info.vocab;
    if (m.all) {
      truncate(0);
      const p = alloc(tokens.length * v * 4);
      try {
        forward(tokens, p, true);
        return f32(p, tokens.length * v).slice();
      } finally {
        M._free(p);
      }
    }
    const k = reuse(tokens);
    forward(tokens.slice(k), logitsPtr, false);
    return f32(logitsPtr, v).slice();
  }

  function stats() {
    const p = alloc(8 * 8);
    try {
      const n = check(M._ox_wasm_stats(engine, p));
      const d = new Float64Array(buffer(), p, n);
      return {
        residentBytes: d[0], hostBytesRead: d[1], rowsFetched: d[2],
        hostReadCalls: d[3], hostBytesReadAll: d[4],
        wasmMemoryBytes: buffer().byteLength,
        contextTokens: sessionTokens.length,
        hostCache: { ...host.stats },
      };
    } finally {
      M._free(p);
    }
  }

  function unload() {
    if (session) M._ox_wasm_session_free(session);
    if (engine) M._ox_wasm_free(engine);
    if (logitsPtr) M._free(logitsPtr);
    if (scratch.ptr) M._free(scratch.ptr);
    session = engine = logitsPtr = scratch.ptr = scratch.cap = 0;
    sessionTokens = [];
    host?.closeAll();
    return true;
  }

  const ops = {
    init,
    load,
    generate,
    logits,
    stats: () => (needModel(), stats()),
    tokenize: (m) => (needModel(), tokenize(m.text, m.special !== false)),
    detokenize: (m) => (needModel(), detokenize(m.ids, !m.skipSpecial)),
    reset: () => (needModel(), truncate(0), true),
    unload,
  };

  async function handle(m) {
    lastStarted = m.id;
    try {
      if (dead) throw new EngineError('STATE', dead);
      const f = ops[m.op];
      if (!f) throw new EngineError('RANGE', `unknown op ${m.op}`);
      const value = await f(m, m.id);
      const transfer = ArrayBuffer.isView(value) ? [value.buffer] : [];
      post({ id: m.id, ok: true, value }, transfer);
    } catch (e) {
      let error;
      if (e instanceof EngineError || (e && typeof e.code === 'string' && e.name === 'HostError')) error = { code: e.code, message: e.message };
      else {
        // a trap or a JS bug: the engine's state is unknown from here on
        dead = dead ?? `the wasm engine stopped: ${e?.message ?? e}`;
        error = { code: 'STATE', message: dead };
      }
      post({ id: m.id, ok: false, error });
    }
  }

  function receive(m) {
    if (m.op === 'abort') {
      const job = jobs.get(m.target);
      if (job) job.aborted = true;
      else if (m.target > lastStarted) abortedEarly.add(m.target); // still queued behind another request
      return;
    }
    chain = chain.then(() => handle(m));
  }

  async function setup() {
    if (isBrowser) {
      post = (msg, t) => self.postMessage(msg, t ?? []);
      base = self.location.href;
    } else {
      const wt = await import('node:worker_threads');
      post = (msg, t) => wt.parentPort.postMessage(msg, t ?? []);
      base = wt.workerData.workerUrl;
      wt.parentPort.on('message', (m) => receive(m));
    }
  }

  if (isBrowser) self.onmessage = (e) => (ready ? receive(e.data) : queued.push(e.data));
  setup().then(() => {
    ready = true;
    for (const m of queued.splice(0)) receive(m);
  });
})();
