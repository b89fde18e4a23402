// hostfile.js — the host-file table: model files stay on the host and the C core reads byte
// ranges of them synchronously (src/host/hostfile_wasm.c -> src/host/hostfile_lib.js -> HostFiles.readInto).
//
// One adapter per source kind, all with one interface (sources.js): a Node path
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
import { codes } from '../shared/abi.js';
import { OxError } from '../shared/errors.js';
import { Bridge } from './bridge.js';
import { CHUNK, overShared } from './copy.js';
import { describeSource } from './source.js';
import { SOURCES } from './sources.js';

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
    if (!open) throw new OxError('RANGE', `unknown source kind ${d.kind}`);
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
    this.bridgeP?.then(
      (b) => b.close(),
      () => {},
    );
    this.bridgeP = null;
  }

  // Sync read of dst.length bytes at off into dst (a Uint8Array, possibly over shared wasm
  // memory). Throws OxError.
  read(h, off, dst) {
    const f = this.get(h);
    if (!f) throw new OxError('IO', `read from unknown host file ${h}`);
    const len = dst.length;
    if (!(off >= 0) || off + len > f.size)
      throw new OxError(
        'TRUNCATED',
        `${f.name}: read of ${len} bytes at offset ${off} beyond file end (${f.size} bytes)`,
      );
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
    for (let done = 0; done < len;) {
      const n = Math.min(overShared(dst) ? (f.src.direct ?? CHUNK) : CHUNK, len - done);
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
      this.lastError = e instanceof OxError ? e.message : `${this.name(h)}: read failed: ${e.message}`;
      return codes[e.code] ?? codes.IO;
    }
  }

  cacheDrop(k) {
    this.cacheUsed -= this.cache.get(k).length;
    this.cache.delete(k);
  }
}
