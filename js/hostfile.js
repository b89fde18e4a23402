// hostfile.js — the host-file table: model files stay on the host and the C core reads byte
// ranges of them synchronously (src/host/hostfile_wasm.c -> js/hostfile_lib.js -> HostFiles.readInto).
//
// Sources: a Node path (fs.readSync), a File/Blob (FileReaderSync in a browser worker), a URL
// (HTTP Range requests: sync XHR in a browser worker; in Node a helper thread runs fetch() and the
// caller waits on a SharedArrayBuffer with Atomics.wait), an OPFS file (sync access handle).
// Opening is async (it probes sizes and validators); reads are sync and run on the thread that
// called into wasm. Large reads are split into CHUNK-sized pieces, so no source ever hands over
// more than CHUNK bytes in one ArrayBuffer. A small LRU keeps recently read small ranges
// (embedding / PLE rows repeat across tokens).
//
// This file is an ES module with no static imports, so a classic Web Worker can load it with
// import() and the main thread can import describeSource() from it.

export const CHUNK = 8 << 20;

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

function parseContentRange(v) {
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

// Async probe: size and validator (ETag or Last-Modified) from a 1-byte range request.
async function probeUrl(name, url) {
  let r;
  try {
    r = await fetch(url, { headers: { Range: 'bytes=0-0' } });
  } catch (e) {
    throw new HostError('IO', `${name}: fetch failed: ${e.cause?.message ?? e.message}`);
  }
  try {
    const got = checkRangeResponse(name, { status: r.status, header: (h) => r.headers.get(h) }, 0, 1, null);
    await r.arrayBuffer();
    if (got.size < 0) {
      const h = await fetch(url, { method: 'HEAD' }).catch(() => null);
      const n = h?.ok ? Number(h.headers.get('content-length') ?? NaN) : NaN;
      if (!Number.isSafeInteger(n) || n <= 0)
        throw new HostError('UNSUPPORTED', `${name}: the server says neither Content-Range nor Content-Length (a cross-origin server must expose Content-Range)`);
      got.size = n;
    }
    return got;
  } finally {
    if (!r.bodyUsed) r.body?.cancel().catch(() => {});
  }
}

// One async Range read, used by the Node helper thread; returns a Uint8Array of exactly len bytes.
export async function fetchRange(name, url, off, len, want, timeoutMs) {
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(), timeoutMs);
  try {
    let r;
    try {
      r = await fetch(url, { headers: { Range: `bytes=${off}-${off + len - 1}` }, signal: ac.signal });
    } catch (e) {
      throw new HostError('IO', `${name}: fetch of bytes ${off}-${off + len - 1} failed: ${ac.signal.aborted ? `no answer in ${timeoutMs} ms` : e.cause?.message ?? e.message}`);
    }
    try {
      checkRangeResponse(name, { status: r.status, header: (h) => r.headers.get(h) }, off, len, want);
    } catch (e) {
      r.body?.cancel().catch(() => {});
      throw e;
    }
    let body;
    try {
      body = new Uint8Array(await r.arrayBuffer());
    } catch (e) {
      throw new HostError('IO', `${name}: short body at offset ${off}: ${e.cause?.message ?? e.message}`);
    }
    checkBodyLength(name, body.length, len, off);
    return body;
  } finally {
    clearTimeout(timer);
  }
}

// ---- Node: sync calls answered by a helper thread ----------------------------------------

// Control words of the shared block: [state, status, nbytes]; state 0 = waiting, 1 = done.
class NodeBridge {
  static async create(timeoutMs) {
    const { Worker } = await import('node:worker_threads');
    const ctrl = new Int32Array(new SharedArrayBuffer(12));
    const data = new Uint8Array(new SharedArrayBuffer(CHUNK));
    const w = new Worker(new URL('./reader_worker.js', import.meta.url), { workerData: { ctrl, data, timeoutMs } });
    await new Promise((resolve, reject) => {
      w.once('message', resolve);
      w.once('error', reject);
    });
    w.unref();
    return new NodeBridge(w, ctrl, data, timeoutMs);
  }

  constructor(w, ctrl, data, timeoutMs) {
    Object.assign(this, { w, ctrl, data, timeoutMs, broken: null });
  }

  // Send a request (len <= CHUNK) and block until the helper has put the bytes in `data`.
  call(msg, dst) {
    if (this.broken) throw new HostError('IO', this.broken);
    Atomics.store(this.ctrl, 0, 0);
    this.w.postMessage(msg);
    // the helper enforces timeoutMs on the request itself; the margin covers its own latency
    if (Atomics.wait(this.ctrl, 0, 0, this.timeoutMs + 5000) === 'timed-out') {
      this.broken = `${msg.name}: the reader thread did not answer in ${this.timeoutMs + 5000} ms`;
      throw new HostError('IO', this.broken);
    }
    const status = this.ctrl[1], n = this.ctrl[2];
    if (status !== 0) {
      const text = new TextDecoder().decode(this.data.slice(0, n));
      const code = Object.keys(ERROR_CODES).find((k) => ERROR_CODES[k] === status) ?? 'IO';
      throw new HostError(code, text);
    }
    dst.set(this.data.subarray(0, n));
  }

  close() {
    this.w.terminate();
  }
}

// ---- the table -----------------------------------------------------------------------------

export class HostFiles {
  // opts: cacheBytes (LRU capacity, default 8 MiB), cacheMaxRead (largest cached read, 64 KiB),
  // timeoutMs (one HTTP read, default 60 s)
  constructor(opts = {}) {
    this.files = [];
    this.cacheBytes = opts.cacheBytes ?? 8 << 20;
    this.cacheMaxRead = opts.cacheMaxRead ?? 64 << 10;
    this.timeoutMs = opts.timeoutMs ?? 60000;
    this.cache = new Map(); // key -> Uint8Array, in recency order
    this.cacheUsed = 0;
    this.stats = { reads: 0, bytesRead: 0, cacheHits: 0, cacheBytesServed: 0 };
    this.lastError = null;
    this.onClose = null; // (handle) => void, set by the wasm side to drop its name cache
    this.bridge = null;
    this.blobIds = 0;
    this.tmp = null; // OPFS reads: a private buffer (sync access handles refuse shared memory)
  }

  async open(source) {
    const d = describeSource(source);
    const f = { kind: d.kind, name: d.name ?? 'file', size: 0 };
    if (d.kind === 'path') {
      const fs = (this.fs ??= await import('node:fs'));
      try {
        f.fd = fs.openSync(d.path, 'r');
        const st = fs.fstatSync(f.fd);
        if (!st.isFile()) {
          fs.closeSync(f.fd);
          throw new HostError('IO', `${f.name}: not a regular file`);
        }
        f.size = st.size;
      } catch (e) {
        if (e instanceof HostError) throw e;
        throw new HostError(e.code === 'ENOENT' ? 'MISSING' : 'IO', `${d.path}: cannot open: ${e.message}`);
      }
    } else if (d.kind === 'blob') {
      f.blob = d.blob;
      f.size = d.blob.size;
      if (typeof FileReaderSync === 'undefined') {
        if (!isNode) throw new HostError('UNSUPPORTED', `${f.name}: reading a Blob needs FileReaderSync (a Web Worker)`);
        this.bridge ??= await NodeBridge.create(this.timeoutMs);
        f.blobId = ++this.blobIds;
        this.bridge.w.postMessage({ op: 'blob', id: f.blobId, blob: d.blob });
      } else {
        f.reader = new FileReaderSync();
      }
    } else if (d.kind === 'url') {
      f.url = d.url;
      const p = await probeUrl(f.name, d.url);
      f.size = p.size;
      f.want = { size: p.size, validator: p.validator };
      if (typeof XMLHttpRequest === 'undefined' || isNode) {
        if (!isNode) throw new HostError('UNSUPPORTED', `${f.name}: sync HTTP reads need XMLHttpRequest (a Web Worker)`);
        this.bridge ??= await NodeBridge.create(this.timeoutMs);
      }
    } else if (d.kind === 'opfs') {
      if (typeof d.handle.createSyncAccessHandle !== 'function')
        throw new HostError('UNSUPPORTED', `${f.name}: OPFS sync access handles exist only in a dedicated worker`);
      try {
        f.access = await d.handle.createSyncAccessHandle();
        f.size = await f.access.getSize();
      } catch (e) {
        throw new HostError('IO', `${f.name}: cannot open OPFS file: ${e.message}`);
      }
    } else if (d.kind === 'cached') {
      // a file still downloading into the model cache (js/cache.js): the bytes written so far
      // are read from the local copy, the rest from the URL
      f.size = d.size;
      f.remote = { kind: 'url', name: f.name, url: d.url, size: d.size, want: d.want };
      if (isNode) {
        this.fs ??= await import('node:fs');
        this.bridge ??= await NodeBridge.create(this.timeoutMs);
      }
      f.local = await (await import('./cache_store.js')).openCacheCopy(d);
    } else {
      throw new HostError('RANGE', `unknown source kind ${d.kind}`);
    }
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
    if (f.fd !== undefined) this.fs.closeSync(f.fd);
    if (f.access) f.access.close();
    f.local?.close();
    if (f.blobId) this.bridge?.w.postMessage({ op: 'drop', id: f.blobId });
    for (const k of [...this.cache.keys()]) if (k.startsWith(h + ':')) this.cacheDrop(k);
    this.files[h] = null;
    this.onClose?.(h);
  }

  closeAll() {
    for (const h of this.handles()) this.close(h);
    this.bridge?.close();
    this.bridge = null;
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
      const n = Math.min(CHUNK, len - done);
      this.readSource(f, off + done, dst.subarray(done, done + n));
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

  // one piece of at most CHUNK bytes
  readSource(f, off, dst) {
    const len = dst.length;
    switch (f.kind) {
      case 'cached':
        return this.readSource(f.local.has(off + len) ? f.local.file : f.remote, off, dst);
      case 'path': {
        for (let done = 0; done < len; ) {
          let r;
          try {
            r = this.fs.readSync(f.fd, dst, done, len - done, off + done);
          } catch (e) {
            throw new HostError('IO', `${f.name}: read failed at offset ${off + done}: ${e.message}`);
          }
          if (r === 0) throw new HostError('IO', `${f.name}: unexpected end of file at offset ${off + done} (the file shrank?)`);
          done += r;
        }
        return;
      }
      case 'blob': {
        if (f.blobId) return this.bridge.call({ op: 'read', kind: 'blob', id: f.blobId, name: f.name, off, len }, dst);
        let ab;
        try {
          ab = f.reader.readAsArrayBuffer(f.blob.slice(off, off + len));
        } catch (e) {
          throw new HostError('IO', `${f.name}: read failed at offset ${off}: ${e.message}`);
        }
        checkBodyLength(f.name, ab.byteLength, len, off);
        dst.set(new Uint8Array(ab));
        return;
      }
      case 'url': {
        if (this.bridge && isNode)
          return this.bridge.call({ op: 'read', kind: 'url', url: f.url, name: f.name, off, len, want: f.want }, dst);
        const x = new XMLHttpRequest();
        x.open('GET', f.url, false);
        x.responseType = 'arraybuffer';
        x.setRequestHeader('Range', `bytes=${off}-${off + len - 1}`);
        try {
          x.send();
        } catch (e) {
          throw new HostError('IO', `${f.name}: request for bytes ${off}-${off + len - 1} failed: ${e.message}`);
        }
        checkRangeResponse(f.name, { status: x.status, header: (h) => x.getResponseHeader(h) }, off, len, f.want);
        const ab = x.response;
        checkBodyLength(f.name, ab ? ab.byteLength : 0, len, off);
        dst.set(new Uint8Array(ab));
        return;
      }
      case 'opfs': {
        // sync access handles refuse views over shared memory: go through a private buffer
        if (!this.tmp || this.tmp.length < len) this.tmp = new Uint8Array(Math.max(len, 1 << 20));
        const t = this.tmp.subarray(0, len);
        for (let done = 0; done < len; ) {
          const r = f.access.read(t.subarray(done), { at: off + done });
          if (r <= 0) throw new HostError('IO', `${f.name}: unexpected end of file at offset ${off + done}`);
          done += r;
        }
        dst.set(t);
        return;
      }
    }
  }
}
