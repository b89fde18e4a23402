// hostfile.js — the host-file table: model files stay on the host and the C core reads byte
// ranges of them synchronously (src/host/hostfile_wasm.c -> src/host/hostfile_lib.js -> HostFiles.readInto).
//
// One adapter per source kind, all with one interface (see SOURCES below): a Node path
// (fs.readSync), a File/Blob (FileReaderSync in a browser worker), a URL (HTTP Range requests),
// an OPFS file (sync access handle). Opening is async (it probes sizes and validators); reads
// are sync and run on the thread that called into wasm. Node has no sync form of fetch() or of
// Blob reads, and a browser's sync XHR is slow: those reads run on a helper thread
// (js/host/reader_worker.js) while the caller waits on a SharedArrayBuffer with Atomics.wait; for
// URLs the helper reads ahead of a sequential scan with a few requests in flight.
// Large reads are split into CHUNK-sized pieces, so no source ever hands over more than CHUNK
// bytes at once. A small LRU keeps recently read small ranges (embedding / PLE rows repeat).
//
// Every host operation is bounded: opening (probe, OPFS handle, helper start) and each read
// end within timeoutMs in an IO error naming the file and what timed out, and the abort flag
// / signal of a load ends a wait at once in ABORTED. The only waits that cannot be bounded are
// the browser's own sync reads of local data (FileReaderSync, OPFS read, fs.readSync).
//
// This file is an ES module with no static imports, so a classic Web Worker can load it with
// import() and the main thread can import describeSource() from it.

export const CHUNK = 8 << 20;

// dst.set(src, at) for a dst over shared memory (the answer block; wasm memory of a threaded
// build) and a private src. V8 copies into a SharedArrayBuffer by words where source and
// destination are equally aligned, and byte by byte where not: 4-5x slower. Network chunks land
// at any offset (an E2B load from a URL in Node: 22,500 socket chunks, 1.0 s of copying ->
// 0.25 s), so a misaligned copy goes through a private bounce buffer placed at the
// destination's alignment.
const BOUNCE = 1 << 16;
let bounce = null;
export function copyShared(dst, src, at = 0) {
  const shared = typeof SharedArrayBuffer === 'function' && dst.buffer instanceof SharedArrayBuffer;
  if (!shared || src.length < 256 || ((dst.byteOffset + at - src.byteOffset) & 7) === 0) return void dst.set(src, at);
  bounce ??= new Uint8Array(BOUNCE + 8);
  for (let i = 0; i < src.length; i += BOUNCE) {
    const part = src.subarray(i, i + BOUNCE), k = (dst.byteOffset + at + i) & 7;
    bounce.set(part, k);
    dst.set(bounce.subarray(k, k + part.length), at + i);
  }
}
// A source with a `direct` field takes reads of up to that many bytes into shared memory (wasm
// memory of a threaded build), since it puts them there with no buffer of its own.
const overShared = (a) => typeof SharedArrayBuffer === 'function' && a.buffer instanceof SharedArrayBuffer;

// err.h codes (js side of ox_err_code_name)
export const ERROR_CODES = {
  IO: -1, FORMAT: -2, TRUNCATED: -3, UNSUPPORTED: -4, MISSING: -5, CONFIG: -6, NOMEM: -7,
  RANGE: -8, ABORTED: -9, STATE: -10,
};

export class HostError extends Error {
  constructor(code, message) {
    super(message);
    this.name = 'HostError';
    this.code = code;
  }
}

const isNode = typeof process === 'object' && !!process.versions?.node;

// last part of a path, or of a URL's pathname (percent-decoded)
function baseName(s, isUrl = false) {
  const clean = s.replace(/\/+$/, '');
  const b = clean.slice(Math.max(clean.lastIndexOf('/'), isUrl ? -1 : clean.lastIndexOf('\\')) + 1) || s;
  if (!isUrl) return b;
  try {
    return decodeURIComponent(b);
  } catch {
    return b;
  }
}

// Normalize what a caller passed into a structured-cloneable descriptor
// {kind: 'path'|'url'|'blob'|'opfs', name, path|url|blob|handle}. Strings are URLs when they
// have an http(s) scheme, or always in a browser (resolved against `base`); else Node paths.
const KINDS = ['path', 'url', 'blob', 'opfs', 'cached'];

export function describeSource(src, base) {
  if (src && typeof src === 'object' && KINDS.includes(src.kind)) return src; // already described
  if (typeof src === 'string' || src instanceof URL) {
    const s = String(src);
    if (/^https?:\/\//i.test(s)) return { kind: 'url', url: s, name: baseName(new URL(s).pathname, true) };
    if (/^file:/i.test(s)) {
      const p = decodeURIComponent(new URL(s).pathname);
      return { kind: 'path', path: p, name: baseName(p) };
    }
    if (!isNode) {
      const u = new URL(s, base ?? globalThis.location?.href);
      return { kind: 'url', url: u.href, name: baseName(u.pathname, true) };
    }
    return { kind: 'path', path: s, name: baseName(s) };
  }
  if (typeof Blob !== 'undefined' && src instanceof Blob)
    return { kind: 'blob', blob: src, name: typeof src.name === 'string' && src.name ? src.name : 'blob' };
  if (src && typeof src === 'object') {
    if (src.kind === 'file' && typeof src.getFile === 'function')        // FileSystemFileHandle
      return { kind: 'opfs', handle: src, name: src.name };
    const named = (d) => (typeof src.name === 'string' && src.name ? { ...d, name: src.name } : d);
    if (typeof src.path === 'string') return named({ kind: 'path', path: src.path, name: baseName(src.path) });
    if (typeof src.url === 'string' || src.url instanceof URL) {
      let u;
      try {
        u = new URL(src.url, base ?? globalThis.location?.href);
      } catch {
        throw new HostError('RANGE', `not a valid URL: ${src.url}`);
      }
      return named({ kind: 'url', url: u.href, name: baseName(u.pathname, true) });
    }
    if (typeof Blob !== 'undefined' && src.blob instanceof Blob) return named(describeSource(src.blob));
    if (src.handle) return named({ kind: 'opfs', handle: src.handle, name: src.handle.name });
  }
  throw new HostError('RANGE', `unsupported model source: ${Object.prototype.toString.call(src)} (use a path, URL, File/Blob, OPFS file handle, or {path|url|blob|handle, name})`);
}

// ---- HTTP: the checks both the sync XHR path and the Node helper thread apply ----------------

export function parseContentRange(v) {
  const m = /^bytes\s+(\d+)-(\d+)\/(\d+|\*)$/i.exec((v ?? '').trim());
  return m ? { first: Number(m[1]), last: Number(m[2]), size: m[3] === '*' ? -1 : Number(m[3]) } : null;
}

// r: {status, header(name)}; returns {size, validator}, or throws HostError. `want` is
// {size, validator} as seen at open (null when probing): a different ETag / Last-Modified or
// size means the file changed under us.
export function checkRangeResponse(name, r, off, len, want) {
  const range = `bytes ${off}-${off + len - 1}`;
  if (r.status === 404 || r.status === 410)
    throw new HostError(want ? 'IO' : 'MISSING', `${name}: HTTP ${r.status} (not found) for ${range}`);
  if (r.status === 416)
    throw new HostError('IO', `${name}: HTTP 416 (range not satisfiable) for ${range}; the file is shorter than expected`);
  if (r.status === 200)
    throw new HostError('UNSUPPORTED', `${name}: the server ignored the Range header (HTTP 200 instead of 206); HTTP Range requests are required`);
  if (r.status !== 206)
    throw new HostError('IO', `${name}: HTTP ${r.status} for ${range}`);
  // A cross-origin server that does not expose Content-Range (CORS) hides it: then the body
  // length is the check (checkBodyLength) and the size comes from HEAD (probeUrl).
  const header = r.header('content-range');
  const cr = header === null ? null : parseContentRange(header);
  if (header !== null && !cr) throw new HostError('IO', `${name}: HTTP 206 with a bad Content-Range header (${header}) for ${range}`);
  if (cr && (cr.first !== off || cr.last !== off + len - 1))
    throw new HostError('IO', `${name}: server sent ${header} for ${range}`);
  const validator = r.header('etag') || r.header('last-modified') || null;
  if (want?.validator && validator && validator !== want.validator)
    throw new HostError('IO', `${name}: the file changed on the server while in use (${want.validator} -> ${validator})`);
  if (want && cr && cr.size >= 0 && cr.size !== want.size)
    throw new HostError('IO', `${name}: the file changed on the server while in use (size ${want.size} -> ${cr.size})`);
  return { size: cr ? cr.size : -1, validator };
}

function checkBodyLength(name, got, len, off) {
  if (got !== len) throw new HostError('IO', `${name}: short body: got ${got} of ${len} bytes at offset ${off}`);
}

// ---- bounds: every async host operation ends in time, or when the load is aborted ----------

// ctx: {timeoutMs, abortFlag (Int32Array over shared memory, 1 = abort), signal (AbortSignal)}
function aborted(ctx) {
  return !!(ctx.signal?.aborted || (ctx.abortFlag && Atomics.load(ctx.abortFlag, 0)));
}

// Runs fn(signal) with a signal that fires after ctx.timeoutMs or on abort; the result, or a
// HostError: IO `${name}: ${what}: no answer in N ms`, or ABORTED.
async function bounded(ctx, name, what, fn) {
  if (aborted(ctx)) throw new HostError('ABORTED', `${name}: ${what}: aborted`);
  const ac = new AbortController();
  let why = null;
  const stop = (w) => {
    why ??= w;
    ac.abort();
  };
  const timer = setTimeout(() => stop('timeout'), ctx.timeoutMs);
  // the abort flag is a word in shared memory: poll it (no event fires)
  const poll = ctx.abortFlag ? setInterval(() => aborted(ctx) && stop('abort'), 25) : null;
  const onAbort = () => stop('abort');
  ctx.signal?.addEventListener('abort', onAbort, { once: true });
  // fn may ignore its signal (an OPFS call): the race ends the wait anyway
  const stopped = new Promise((_, reject) => ac.signal.addEventListener('abort', () => reject(null), { once: true }));
  stopped.catch(() => {});
  try {
    return await Promise.race([fn(ac.signal), stopped]);
  } catch (e) {
    if (why === 'abort') throw new HostError('ABORTED', `${name}: ${what}: aborted`);
    if (why === 'timeout') throw new HostError('IO', `${name}: ${what}: no answer in ${ctx.timeoutMs} ms`);
    throw e;
  } finally {
    clearTimeout(timer);
    if (poll) clearInterval(poll);
    ctx.signal?.removeEventListener('abort', onAbort);
  }
}

// ---- HTTP ------------------------------------------------------------------------------------

// The first request of a URL: two bytes, not one: some servers (Vite's dev server) read
// `bytes=0-0` as "from 0 to the end" and send the whole file.
export const PROBE_RANGE = 'bytes=0-1';

// Async probe: size and validator (ETag or Last-Modified) from a 2-byte range request.
async function probeUrl(name, url, ctx) {
  return bounded(ctx, name, 'first request (bytes 0-1)', async (signal) => {
    let r;
    // one retry: a kept-alive connection the server has just closed fails the first attempt
    for (let attempt = 0; !r; attempt++) {
      try {
        r = await fetch(url, { headers: { Range: PROBE_RANGE }, signal });
      } catch (e) {
        if (signal.aborted) throw e;
        if (attempt > 0) throw new HostError('IO', `${name}: fetch failed: ${e.cause?.message ?? e.message}`);
      }
    }
    try {
      const tiny = parseContentRange(r.headers.get('content-range'))?.size === 1; // answered 0-0/1
      const got = checkRangeResponse(name, { status: r.status, header: (h) => r.headers.get(h) }, 0, tiny ? 1 : 2, null);
      await r.arrayBuffer();
      if (got.size < 0) {
        const h = await fetch(url, { method: 'HEAD', signal }).catch(() => null);
        const n = h?.ok ? Number(h.headers.get('content-length') ?? NaN) : NaN;
        if (!Number.isSafeInteger(n) || n <= 0)
          throw new HostError('UNSUPPORTED', `${name}: the server says neither Content-Range nor Content-Length (a cross-origin server must expose Content-Range)`);
        got.size = n;
      }
      return got;
    } finally {
      if (!r.bodyUsed) r.body?.cancel().catch(() => {});
    }
  });
}

// A transport runs one Range GET: (url, range, signal) -> Promise<{status, header(name) ->
// string|null, chunks: AsyncIterable<Uint8Array>, cancel()}>. fetch() everywhere; the Node
// helper thread uses node:http (js/host/reader_worker.js), which costs half the CPU per byte.
// A chunk is valid until the loop over `chunks` asks for the next one (copy it before).
//
// Where the body is a byte stream (Chromium), it is read with a BYOB reader into a staging
// buffer of STAGE bytes taken from a pool and returned to it when the body ends: a plain read
// makes a new chunk per read, which only the GC frees, and a 2.6 GB load then peaked 120-230
// MB higher in the renderer (npm run bench:memory). The staging buffer is only ever held by the one read that
// took it (a read transfers it; the answer's view is over the same memory), so no view that
// is still in use can be detached; one whose body fails or is cancelled stays with the stream.
const STAGE = 1 << 20;
const stages = [];

export async function fetchTransport(url, range, signal) {
  const r = await fetch(url, { headers: { Range: range }, signal });
  let byob = null;
  try {
    byob = r.body.getReader({ mode: 'byob' });
  } catch {
    // not a byte stream: default reads
  }
  const reader = byob ?? r.body.getReader();
  const chunks = {
    async *[Symbol.asyncIterator]() {
      if (!byob) {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) return;
          yield value;
        }
      }
      let buf = stages.pop() ?? new ArrayBuffer(STAGE);
      for (;;) {
        const { done, value } = await byob.read(new Uint8Array(buf));
        if (done) return void (value && stages.push(value.buffer)); // (no value: cancelled)
        buf = value.buffer;
        yield value;
      }
    },
  };
  return { status: r.status, header: (h) => r.headers.get(h), chunks, cancel: () => reader.cancel().catch(() => {}) };
}

// One async Range read (the helper thread); fills `into` (a Uint8Array of exactly len bytes,
// or a new one) from the response stream, so no second len-sized buffer is made.
export async function fetchRange(name, url, off, len, want, timeoutMs, into = new Uint8Array(len), transport = fetchTransport) {
  const what = `bytes ${off}-${off + len - 1}`;
  return bounded({ timeoutMs }, name, what, async (signal) => {
    let r;
    try {
      r = await transport(url, `bytes=${off}-${off + len - 1}`, signal);
    } catch (e) {
      if (signal.aborted) throw e;
      throw new HostError('IO', `${name}: fetch of ${what} failed: ${e.cause?.message ?? e.message}`);
    }
    let got = 0;
    try {
      checkRangeResponse(name, r, off, len, want);
      for await (const value of r.chunks) {
        if (got + value.length > len) throw new HostError('IO', `${name}: long body: more than ${len} bytes for ${what}`);
        copyShared(into, value, got);
        got += value.length;
      }
    } catch (e) {
      r.cancel();
      if (e instanceof HostError || signal.aborted) throw e;
      throw new HostError('IO', `${name}: short body at offset ${off}: ${e.cause?.message ?? e.message}`);
    }
    checkBodyLength(name, got, len, off);
    return into;
  });
}

// ---- the helper thread: sync calls answered by js/host/reader_worker.js ---------------------------

// Control words of the shared block: [state, status, nbytes, gate, progress]; state 0 = waiting,
// 1 = done; gate: see revoke(); progress counts the helper's copies (a long read that keeps
// arriving is not timed out as a whole).
class Bridge {
  static async create(ctx) {
    const ctrl = new Int32Array(new SharedArrayBuffer(20));
    const data = new Uint8Array(new SharedArrayBuffer(CHUNK));
    const init = { ctrl, data, timeoutMs: ctx.timeoutMs };
    let w;
    // a thread start is slow on a loaded machine: bounded by 30 s, or timeoutMs if longer
    const ready = bounded({ ...ctx, timeoutMs: Math.max(ctx.timeoutMs, 30000) }, 'reader thread', 'start', () => new Promise((resolve, reject) => {
      if (isNode) {
        import(/* webpackIgnore: true */ 'node:worker_threads').then(({ Worker }) => {
          const here = import.meta.url; // (not the literal pattern, which is the page's: see below)
          w = new Worker(new URL('./reader_worker.js', here), { workerData: init });
          w.once('message', resolve);
          w.once('error', reject);
        }, reject);
      } else {
        // the literal pattern bundlers (Vite, webpack 5) recognise: they emit the worker and its imports
        w = new Worker(new URL('./reader_worker.js', import.meta.url), { type: 'module' });
        w.onmessage = () => resolve();
        w.onerror = (e) => reject(new HostError('IO', `reader thread: ${e.message ?? 'failed to start'}`));
        w.postMessage(init);
      }
    }));
    try {
      await ready;
    } catch (e) {
      w?.terminate();
      throw e;
    }
    if (isNode) w.unref();
    return new Bridge((m) => w.postMessage(m), () => w.terminate(), ctrl, data, ctx);
  }

  constructor(post, stop, ctrl, data, ctx) {
    Object.assign(this, { post, stop, ctrl, data, ctx, broken: null });
  }

  // Send a request and block until the helper has put the bytes in dst: itself when dst is
  // over shared memory (then len is up to the source's `direct`), else through `data` (len <=
  // CHUNK), which costs a copy on each side: with both, the engine's thread spent a third of an
  // E2B URL load copying. Waits in slices so that an abort is seen within 50 ms. After a timeout
  // or an abort the helper may still answer late: the bridge is not used again, and its writes
  // into dst are revoked before this throws (that memory is the caller's again).
  call(msg, dst) {
    if (this.broken) throw new HostError('IO', this.broken);
    const direct = overShared(dst);
    if (direct) msg.into = dst;
    Atomics.store(this.ctrl, 0, 0);
    this.post(msg);
    // the helper bounds every wait for bytes by timeoutMs; this bounds the time without any
    // progress (a dead helper), the margin covering the helper's own latency
    const limit = this.ctx.timeoutMs + 5000;
    let t0 = Date.now(), seen = Atomics.load(this.ctrl, 4);
    while (Atomics.wait(this.ctrl, 0, 0, 50) === 'timed-out') {
      const p = Atomics.load(this.ctrl, 4);
      if (p !== seen) (seen = p), (t0 = Date.now());
      if (aborted(this.ctx)) {
        this.revoke(`${msg.name}: an earlier read was aborted`);
        throw new HostError('ABORTED', `${msg.name}: read of bytes ${msg.off}-${msg.off + msg.len - 1}: aborted`);
      }
      if (Date.now() - t0 > limit) {
        this.revoke(`${msg.name}: the reader thread made no progress for ${limit} ms`);
        throw new HostError('IO', this.broken);
      }
    }
    const status = this.ctrl[1], n = this.ctrl[2];
    if (status !== 0) {
      const text = new TextDecoder().decode(this.data.slice(0, n));
      const code = Object.keys(ERROR_CODES).find((k) => ERROR_CODES[k] === status) ?? 'IO';
      throw new HostError(code, text);
    }
    if (!direct) dst.set(this.data.subarray(0, n));
  }

  // Closes the write gate (ctrl[3]: 0 open, 1 the helper is copying into a request's dst, 2
  // closed for good) once a copy in progress has ended (a sync copy: it cannot stall).
  revoke(why) {
    this.broken = why;
    while (Atomics.compareExchange(this.ctrl, 3, 0, 2) === 1) Atomics.wait(this.ctrl, 3, 1, 50);
  }

  close() {
    this.stop();
  }
}

// ---- one adapter per source kind -------------------------------------------------------------
//
// SOURCES[kind](d, ctx, host) -> Promise<{size, read(off, dst), close()}>: read fills dst (at
// most CHUNK bytes, possibly a view of shared wasm memory) from offset off, or throws a
// HostError naming the file; host.bridge() gives the shared helper thread.

const sharedOk = () => typeof SharedArrayBuffer === 'function' && typeof Atomics?.wait === 'function' && (isNode || globalThis.crossOriginIsolated === true);

const SOURCES = {
  async path(d, ctx, host) {
    const fs = (host.fs ??= await import(/* webpackIgnore: true */ 'node:fs'));
    let fd;
    try {
      fd = fs.openSync(d.path, 'r');
      const st = fs.fstatSync(fd);
      if (!st.isFile()) throw new HostError('IO', `${d.name}: not a regular file`);
      return {
        size: st.size,
        direct: 8 * CHUNK,
        read(off, dst) {
          for (let done = 0; done < dst.length; ) {
            let r;
            try {
              r = fs.readSync(fd, dst, done, dst.length - done, off + done);
            } catch (e) {
              throw new HostError('IO', `${d.name}: read failed at offset ${off + done}: ${e.message}`);
            }
            if (r === 0) throw new HostError('IO', `${d.name}: unexpected end of file at offset ${off + done} (the file shrank?)`);
            done += r;
          }
        },
        close: () => fs.closeSync(fd),
      };
    } catch (e) {
      if (fd !== undefined) fs.closeSync(fd);
      if (e instanceof HostError) throw e;
      throw new HostError(e.code === 'ENOENT' ? 'MISSING' : 'IO', `${d.path}: cannot open: ${e.message}`);
    }
  },

  async blob(d, ctx, host) {
    const { blob, name } = d;
    if (typeof FileReaderSync !== 'undefined') {
      const reader = new FileReaderSync();
      return {
        size: blob.size,
        read(off, dst) {
          let ab;
          try {
            ab = reader.readAsArrayBuffer(blob.slice(off, off + dst.length));
          } catch (e) {
            throw new HostError('IO', `${name}: read failed at offset ${off}: ${e.message}`);
          }
          checkBodyLength(name, ab.byteLength, dst.length, off);
          copyShared(dst, new Uint8Array(ab));
        },
        close() {},
      };
    }
    if (!isNode) throw new HostError('UNSUPPORTED', `${name}: reading a Blob needs FileReaderSync (a Web Worker)`);
    const bridge = await host.bridge();
    const id = ++host.blobIds;
    bridge.post({ op: 'blob', id, blob });
    return {
      size: blob.size,
      read: (off, dst) => bridge.call({ op: 'read', kind: 'blob', id, name, off, len: dst.length }, dst),
      close: () => bridge.post({ op: 'drop', id }),
    };
  },

  async url(d, ctx, host) {
    const { url, name } = d;
    // the reader thread starts while the size is probed (a thread start is ~0.1 s)
    const [p, bridge] = await Promise.all([probeUrl(name, url, ctx), sharedOk() ? host.bridge() : null]);
    const want = { size: p.size, validator: p.validator };
    if (bridge) {
      return {
        size: p.size,
        direct: 8 * CHUNK,
        read: (off, dst) => bridge.call({ op: 'read', kind: 'url', url, name, off, len: dst.length, want }, dst),
        close: () => bridge.post({ op: 'drop-url', url }),
      };
    }
    // no shared memory (a page without COOP/COEP): sync XHR, bounded by its timeout
    if (typeof XMLHttpRequest === 'undefined') throw new HostError('UNSUPPORTED', `${name}: sync HTTP reads need XMLHttpRequest (a Web Worker)`);
    return {
      size: p.size,
      read(off, dst) {
        const len = dst.length, what = `bytes ${off}-${off + len - 1}`;
        const x = new XMLHttpRequest();
        x.open('GET', url, false);
        x.responseType = 'arraybuffer';
        x.timeout = ctx.timeoutMs; // allowed for sync requests in workers
        x.setRequestHeader('Range', `bytes=${off}-${off + len - 1}`);
        try {
          x.send();
        } catch (e) {
          if (e.name === 'TimeoutError') throw new HostError('IO', `${name}: ${what}: no answer in ${ctx.timeoutMs} ms`);
          throw new HostError('IO', `${name}: request for ${what} failed: ${e.message}`);
        }
        checkRangeResponse(name, { status: x.status, header: (h) => x.getResponseHeader(h) }, off, len, want);
        const ab = x.response;
        checkBodyLength(name, ab ? ab.byteLength : 0, len, off);
        copyShared(dst, new Uint8Array(ab));
      },
      close() {},
    };
  },

  async opfs(d, ctx, host) {
    const { handle, name } = d;
    if (typeof handle.createSyncAccessHandle !== 'function')
      throw new HostError('UNSUPPORTED', `${name}: OPFS sync access handles exist only in a dedicated worker`);
    let access;
    try {
      access = await bounded(ctx, name, 'opening the OPFS file', () => handle.createSyncAccessHandle());
      const size = await bounded(ctx, name, 'OPFS getSize', async () => access.getSize());
      return {
        size,
        read(off, dst) {
          // sync access handles refuse views over shared memory: go through a private buffer
          const len = dst.length;
          if (!host.tmp || host.tmp.length < len) host.tmp = new Uint8Array(Math.max(len, 1 << 20));
          const t = host.tmp.subarray(0, len);
          for (let done = 0; done < len; ) {
            const r = access.read(t.subarray(done), { at: off + done });
            if (r <= 0) throw new HostError('IO', `${name}: unexpected end of file at offset ${off + done}`);
            done += r;
          }
          copyShared(dst, t);
        },
        close: () => access.close(),
      };
    } catch (e) {
      access?.close();
      if (e instanceof HostError) throw e;
      throw new HostError('IO', `${name}: cannot open OPFS file: ${e.message}`);
    }
  },
};

// A file still downloading into the model cache (js/main/cache.js): the bytes written so far are
// read from the local copy (a 'path' or 'opfs' source), the rest from the URL.
SOURCES.cached = async (d, ctx, host) => {
  const copy = await (await import('./cache_store.js')).openCacheCopy(d); // null: deleted meanwhile
  const remote = await SOURCES.url({ ...d, kind: 'url' }, ctx, host);
  let local = null;
  try {
    if (remote.size !== d.size) throw new HostError('IO', `${d.name}: the file changed on the server since its download started (size ${d.size} -> ${remote.size})`);
    // the copy may be deleted between the two steps (a failed sha256 check): then all is remote
    local = copy && (await SOURCES[copy.source.kind](copy.source, ctx, host).catch((e) => {
      if (e?.code === 'MISSING') return null;
      throw e;
    }));
  } catch (e) {
    remote.close();
    throw e;
  }
  let whole = false;
  const has = (end) => !!local && (whole || (whole = copy.length() >= d.size) || end <= copy.length());
  // the local copy is a shortcut: if it goes away under a read (a failed sha256 check empties
  // and deletes it), the URL has the same bytes
  const readLocal = (off, dst) => {
    try {
      return local.read(off, dst);
    } catch (e) {
      if (!(e instanceof HostError)) throw e;
      local.close();
      local = null;
      return remote.read(off, dst);
    }
  };
  return {
    size: d.size,
    read: (off, dst) => (has(off + dst.length) ? readLocal(off, dst) : remote.read(off, dst)),
    close() {
      local?.close();
      remote.close();
    },
  };
};

// ---- the table -----------------------------------------------------------------------------

export class HostFiles {
  // opts: cacheBytes (LRU capacity, default 8 MiB), cacheMaxRead (largest cached read, 64 KiB),
  // timeoutMs (bound of every host operation, default 60 s), abortFlag (Int32Array over shared
  // memory; nonzero aborts the waits), signal (an AbortSignal, same)
  constructor(opts = {}) {
    this.files = [];
    this.cacheBytes = opts.cacheBytes ?? 8 << 20;
    this.cacheMaxRead = opts.cacheMaxRead ?? 64 << 10;
    this.timeoutMs = opts.timeoutMs ?? 60000;
    this.ctx = { timeoutMs: this.timeoutMs, abortFlag: opts.abortFlag ?? null, signal: opts.signal ?? null };
    this.cache = new Map(); // key -> Uint8Array, in recency order
    this.cacheUsed = 0;
    this.stats = { reads: 0, bytesRead: 0, cacheHits: 0, cacheBytesServed: 0 };
    this.lastError = null;
    this.onClose = null; // (handle) => void, set by the wasm side to drop its name cache
    this.bridgeP = null;
    this.blobIds = 0;
    this.tmp = null; // OPFS reads: a private buffer
  }

  // the helper thread, started on first use
  bridge() {
    this.bridgeP ??= Bridge.create(this.ctx);
    this.bridgeP.catch(() => (this.bridgeP = null)); // a failed start is retried next time
    return this.bridgeP;
  }

  async open(source) {
    const d = describeSource(source);
    const name = d.name ?? 'file';
    const open = SOURCES[d.kind];
    if (!open) throw new HostError('RANGE', `unknown source kind ${d.kind}`);
    const src = await open({ ...d, name }, this.ctx, this);
    const f = { name, size: src.size, src };
    let h = this.files.indexOf(null);
    if (h < 0) h = this.files.push(null) - 1;
    this.files[h] = f;
    return h;
  }

  get(h) {
    return (Number.isInteger(h) && this.files[h]) || null;
  }
  size(h) {
    return this.get(h)?.size ?? -1;
  }
  name(h) {
    return this.get(h)?.name ?? '?';
  }
  handles() {
    return this.files.flatMap((f, h) => (f ? [h] : []));
  }

  close(h) {
    const f = this.get(h);
    if (!f) return;
    try {
      f.src.close();
    } catch {
      // closing is best effort: the file is dropped from the table either way
    }
    for (const k of [...this.cache.keys()]) if (k.startsWith(h + ':')) this.cacheDrop(k);
    this.files[h] = null;
    this.onClose?.(h);
  }

  closeAll() {
    for (const h of this.handles()) this.close(h);
    this.bridgeP?.then((b) => b.close(), () => {});
    this.bridgeP = null;
  }

  // Sync read of dst.length bytes at off into dst (a Uint8Array, possibly over shared wasm
  // memory). Throws HostError.
  read(h, off, dst) {
    const f = this.get(h);
    if (!f) throw new HostError('IO', `read from unknown host file ${h}`);
    const len = dst.length;
    if (!(off >= 0) || off + len > f.size)
      throw new HostError('TRUNCATED', `${f.name}: read of ${len} bytes at offset ${off} beyond file end (${f.size} bytes)`);
    if (len === 0) return;
    const small = len <= this.cacheMaxRead;
    const key = small ? `${h}:${off}:${len}` : null;
    if (small) {
      const hit = this.cache.get(key);
      if (hit) {
        this.cache.delete(key);
        this.cache.set(key, hit);
        dst.set(hit);
        this.stats.cacheHits++;
        this.stats.cacheBytesServed += len;
        return;
      }
    }
    for (let done = 0; done < len; ) {
      const n = Math.min(overShared(dst) ? f.src.direct ?? CHUNK : CHUNK, len - done);
      f.src.read(off + done, dst.subarray(done, done + n));
      done += n;
    }
    this.stats.reads++;
    this.stats.bytesRead += len;
    if (small && this.cacheBytes >= len) {
      while (this.cacheUsed + len > this.cacheBytes) this.cacheDrop(this.cache.keys().next().value);
      this.cache.set(key, dst.slice());
      this.cacheUsed += len;
    }
  }

  // The C side's entry point: 0, or a negative err.h code with the message in lastError.
  readInto(h, off, dst) {
    try {
      this.read(h, off, dst);
      return 0;
    } catch (e) {
      this.lastError = e instanceof HostError ? e.message : `${this.name(h)}: read failed: ${e.message}`;
      return ERROR_CODES[e.code] ?? ERROR_CODES.IO;
    }
  }

  cacheDrop(k) {
    this.cacheUsed -= this.cache.get(k).length;
    this.cache.delete(k);
  }
}
