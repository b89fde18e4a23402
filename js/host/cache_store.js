// cache_store.js — where the model cache keeps its files and how it fills them (js/main/cache.js
// is the API). A cached file is two entries: KEY.bin, the bytes downloaded so far (always a
// prefix of the remote file, written in order), and KEY.json, its record {url, size, etag,
// lastModified, addedAt, complete, bytes, sha256}. KEY is the SHA-256 of the URL. Because the
// data file only grows from the front, its current length says which bytes are there: a resumed
// download asks for `Range: bytes=LENGTH-`, and the engine, reading while the download runs,
// serves a range from the local copy when it ends below LENGTH and from the URL otherwise
// (source kind 'cached' of js/host/hostfile.js, opened through openCacheCopy()).
//
// Stores: a directory (Node) or an OPFS directory (browser). The download loop runs in Node on
// the calling thread, in a browser in js/host/cache_worker.js: only a worker may write OPFS files
// synchronously, and a synchronous handle is the only OPFS write that lands at once (a
// writable stream commits on close, copying the file).

import { isNode } from '../shared/env.js';
import { OxError } from '../shared/errors.js';
import { parseContentRange, PROBE_RANGE } from './http.js';

const RECORD_EVERY_MS = 1000; // how often the record's byte count is brought up to date
const PROGRESS_EVERY_MS = 100;
const RATE_WINDOW_MS = 3000;

export async function keyOf(url) {
  const d = await globalThis.crypto.subtle.digest('SHA-256', new TextEncoder().encode(url));
  return [...new Uint8Array(d)].map((b) => b.toString(16).padStart(2, '0')).join('');
}

// opts: the `cache` option of loadModel (true or an object), or the options of the list/delete
// calls. dir: a directory path (Node) or an OPFS directory name (browser).

// A record as read back, or null when it is not one (torn by a crash, edited, another
// version's): the cache then starts that file again.
const optional = (v, ok) => v === undefined || v === null || ok(v);
export function parseRecord(text) {
  let r;
  try {
    r = JSON.parse(text);
  } catch {
    return null;
  }
  const str = (v) => typeof v === 'string';
  const ok =
    r &&
    typeof r === 'object' &&
    str(r.url) &&
    Number.isSafeInteger(r.size) &&
    r.size > 0 &&
    optional(r.complete, (v) => typeof v === 'boolean') &&
    optional(r.bytes, (v) => Number.isSafeInteger(v) && v >= 0 && v <= r.size) &&
    optional(r.etag, str) &&
    optional(r.lastModified, str) &&
    optional(r.sha256, (v) => str(v) && /^[0-9a-f]{64}$/.test(v)) &&
    optional(r.addedAt, Number.isFinite);
  return ok ? r : null;
}

// ---- stores: where the two entries live ----
// readRecord/writeRecord/remove/list/dataSize/free are async and work on any thread;
// openData (synchronous reads and writes of KEY.bin) only in Node or a browser worker.

export async function nodeStore(dir) {
  const fs = await import(/* webpackIgnore: true */ 'node:fs');
  const path = await import(/* webpackIgnore: true */ 'node:path');
  fs.mkdirSync(dir, { recursive: true });
  const file = (key, ext) => path.join(dir, key + ext);
  return {
    where: dir,
    dataPath: (key) => file(key, '.bin'),
    async readRecord(key) {
      try {
        return parseRecord(fs.readFileSync(file(key, '.json'), 'utf8'));
      } catch {
        return null; // missing: start again
      }
    },
    async writeRecord(key, rec) {
      const tmp = file(key, '.json.tmp');
      fs.writeFileSync(tmp, JSON.stringify(rec));
      fs.renameSync(tmp, file(key, '.json'));
    },
    async remove(key) {
      for (const ext of ['.bin', '.json']) fs.rmSync(file(key, ext), { force: true });
    },
    async list() {
      return fs
        .readdirSync(dir)
        .filter((n) => /^[0-9a-f]{64}\.json$/.test(n))
        .map((n) => n.slice(0, 64));
    },
    async dataSize(key) {
      try {
        return fs.statSync(file(key, '.bin')).size;
      } catch {
        return 0;
      }
    },
    async free() {
      const s = fs.statfsSync(dir);
      return s.bavail * s.bsize;
    },
    async openData(key) {
      let fd = fs.openSync(file(key, '.bin'), fs.existsSync(file(key, '.bin')) ? 'r+' : 'w+');
      return {
        size: () => fs.fstatSync(fd).size,
        write(bytes, at) {
          for (let done = 0; done < bytes.length;)
            done += fs.writeSync(fd, bytes, done, bytes.length - done, at + done);
        },
        read: (bytes, at) => fs.readSync(fd, bytes, 0, bytes.length, at),
        truncate: (n) => fs.ftruncateSync(fd, n),
        flush: () => fs.fsyncSync(fd),
        close: () => fd >= 0 && (fs.closeSync(fd), (fd = -1)),
      };
    },
  };
}

export async function opfsStore(name) {
  if (!globalThis.navigator?.storage?.getDirectory)
    throw new OxError(
      'UNSUPPORTED',
      'the model cache needs the Origin Private File System (navigator.storage.getDirectory), which this browser does not offer here',
    );
  const dir = await (await navigator.storage.getDirectory()).getDirectoryHandle(name, { create: true });
  const handle = (key, ext, create = false) => dir.getFileHandle(key + ext, { create });
  const missing = (e) => e?.name === 'NotFoundError';
  return {
    where: `OPFS directory ${name}`,
    dataHandle: (key) => handle(key, '.bin'),
    async readRecord(key) {
      try {
        return parseRecord(await (await (await handle(key, '.json')).getFile()).text());
      } catch {
        return null;
      }
    },
    async writeRecord(key, rec) {
      const w = await (await handle(key, '.json', true)).createWritable();
      await w.write(JSON.stringify(rec));
      await w.close();
    },
    async remove(key) {
      for (const ext of ['.json', '.bin'])
        await dir.removeEntry(key + ext).catch((e) => {
          if (!missing(e)) throw new OxError('IO', `${this.where}: cannot delete ${key + ext}: ${e.message}`);
        });
    },
    async list() {
      const keys = [];
      for await (const n of dir.keys()) if (/^[0-9a-f]{64}\.json$/.test(n)) keys.push(n.slice(0, 64));
      return keys;
    },
    async dataSize(key) {
      try {
        return (await (await handle(key, '.bin')).getFile()).size;
      } catch {
        return 0;
      }
    },
    async free() {
      const e = await navigator.storage.estimate();
      return (e.quota ?? Infinity) - (e.usage ?? 0);
    },
    async openData(key) {
      // 'readwrite-unsafe': the engine's worker reads the same file while this one writes it
      const a = await (await handle(key, '.bin', true)).createSyncAccessHandle({ mode: 'readwrite-unsafe' });
      let open = true;
      return {
        size: () => a.getSize(),
        write(bytes, at) {
          for (let done = 0; done < bytes.length;) done += a.write(bytes.subarray(done), { at: at + done });
        },
        read: (bytes, at) => a.read(bytes, { at }),
        truncate: (n) => a.truncate(n),
        flush: () => a.flush(),
        close: () => open && (a.close(), (open = false)),
      };
    },
  };
}

export const openStore = (dir) => (isNode ? nodeStore(dir) : opfsStore(dir));

// ---- the download (Node: this thread; browser: the cache worker) ----

const validatorOf = (rec) => rec.etag || rec.lastModified || null;

// Progress: bytes/s over the last RATE_WINDOW_MS, ETA in seconds.
function progressMeter(url, emit) {
  const samples = [];
  let last = 0;
  return (bytes, total, final = false) => {
    const now = Date.now();
    samples.push([now, bytes]);
    while (samples.length > 2 && now - samples[0][0] > RATE_WINDOW_MS) samples.shift();
    if (!final && now - last < PROGRESS_EVERY_MS) return;
    last = now;
    const [t0, b0] = samples[0];
    const rate = now > t0 ? ((bytes - b0) * 1000) / (now - t0) : 0;
    emit({
      type: 'progress',
      phase: 'download',
      url,
      bytes,
      total,
      rate,
      eta: bytes >= total ? 0 : rate > 0 ? (total - bytes) / rate : Infinity,
    });
  };
}

// The hash of the bytes so far; on a resume, of the prefix already on disk. hashUrl: where the
// page's import map puts @noble/hashes/sha2.js (import maps do not reach workers), or null
// where a bundler or Node resolves it.
async function hasherFor(data, upTo, hashUrl) {
  const { sha256 } = await (hashUrl
    ? import(/* @vite-ignore */ /* webpackIgnore: true */ hashUrl)
    : import('@noble/hashes/sha2.js'));
  const h = sha256.create();
  const buf = new Uint8Array(4 << 20);
  for (let off = 0; off < upTo;) {
    const n = data.read(buf.subarray(0, Math.min(buf.length, upTo - off)), off);
    if (n <= 0) throw new OxError('IO', `cached copy: unexpected end at byte ${off} while hashing`);
    h.update(buf.subarray(0, n));
    off += n;
  }
  return h;
}

// job: {url, name, key, sha256, hashUrl, retries, maxBytes}; emit({type: 'ready'|'progress', ...}).
// Resolves when the copy is complete and verified; 'ready' (size and validator known, room
// checked) comes first.
export async function runDownload(store, job, signal, emit) {
  const { url, name, key } = job;
  let rec = await store.readRecord(key);
  if (rec?.url !== url) rec = null;
  // A complete copy is used as it is unless the file changed on the server (then it is
  // downloaded again) or a new sha256 is to be checked (then it is hashed first, below). So is
  // a whole one not yet marked complete (or with bytes past its end, cut below).
  const onDisk = rec ? await store.dataSize(key) : 0;
  if (rec && onDisk >= rec.size) {
    if (!(await stillCurrent(url, rec, signal))) rec = null;
    else if (rec.complete && onDisk === rec.size && (!job.sha256 || rec.sha256 === job.sha256)) {
      emit({ type: 'ready', complete: true, size: rec.size, validator: validatorOf(rec) });
      return;
    }
  }
  const data = await store.openData(key);
  let have = rec ? Math.min(data.size(), rec.size) : 0;
  if (data.size() > have) data.truncate(have); // bytes past the file's size are not the file's
  if (rec && have === rec.size && job.sha256) {
    // a whole copy to check against a new sha256: before it is used, so that a bad copy is
    // never read (and never deleted under a reader)
    const got = [...(await hasherFor(data, have, job.hashUrl)).digest()]
      .map((b) => b.toString(16).padStart(2, '0'))
      .join('');
    data.close();
    if (got !== job.sha256) {
      await store.remove(key).catch(() => {});
      throw new OxError(
        'IO',
        `${name}: sha256 mismatch: expected ${job.sha256}, got ${got}; the cached copy was deleted`,
      );
    }
    await store.writeRecord(key, { ...rec, sha256: job.sha256, complete: true, bytes: have });
    emit({ type: 'ready', complete: true, size: rec.size, validator: validatorOf(rec) });
    return;
  }
  let hash = null;
  let ready = false;
  let failures = 0;
  const meter = progressMeter(url, emit);
  const restart = () => {
    data.truncate(0);
    have = 0;
    hash = null;
    rec = null;
  };
  const becomeReady = async () => {
    if (ready) return;
    await checkRoom(store, name, rec.size - have, job.maxBytes, key);
    emit({ type: 'ready', complete: false, size: rec.size, validator: validatorOf(rec) });
    ready = true;
  };
  // Network failures (and bodies that end early) are retried, resuming from the bytes on disk,
  // `retries` times.
  const retry = async (e) => {
    if (signal.aborted) throw new OxError('ABORTED', `${name}: download aborted at byte ${have}`);
    if (++failures > job.retries)
      throw new OxError(
        'IO',
        `${name}: download failed at byte ${have}${rec ? ` of ${rec.size}` : ''} after ${failures} attempts: ${e.cause?.message ?? e.message}; loading it again resumes from there`,
      );
    await new Promise((res) => setTimeout(res, Math.min(4000, 250 * 2 ** (failures - 1))));
  };
  let mismatch = null;
  try {
    if (!rec) restart();
    while (!rec || have < rec.size) {
      // a resume needs a validator: without ETag or Last-Modified nothing tells whether the
      // server's bytes are still those on disk (two versions of one size would be spliced)
      if (have > 0 && !validatorOf(rec)) restart();
      let r;
      try {
        r = await fetch(url, { headers: have > 0 ? { Range: `bytes=${have}-` } : {}, signal });
      } catch (e) {
        await retry(e);
        continue;
      }
      const cancel = () => r.body?.cancel().catch(() => {});
      const range = parseContentRange(r.headers.get('content-range'));
      const total =
        r.status === 206 ? (range?.size >= 0 ? range.size : undefined) : Number(r.headers.get('content-length') ?? NaN);
      const seen = { etag: r.headers.get('etag'), lastModified: r.headers.get('last-modified') };
      if (r.status === 416 && have > 0) {
        cancel(); // the file is now shorter than the copy: it changed
        restart();
        continue;
      }
      if (r.status !== 200 && r.status !== 206) {
        cancel();
        const e = new OxError(
          r.status === 404 || r.status === 410 ? 'MISSING' : 'IO',
          `${name}: HTTP ${r.status} from ${url}`,
        );
        if (r.status < 500) throw e;
        await retry(e);
        continue;
      }
      if (!Number.isSafeInteger(total) || total <= 0) {
        cancel();
        throw new OxError(
          'UNSUPPORTED',
          `${name}: the server says neither Content-Range nor Content-Length, so the file cannot be cached`,
        );
      }
      if (r.status === 206 && range.first !== have && have === 0) {
        cancel(); // bytes from elsewhere in the file, for a request that asked for all of it
        throw new OxError(
          'IO',
          `${name}: the server answered a request for the whole file with bytes ${range.first}- of it`,
        );
      }
      const changed = rec && (total !== rec.size || (seen.etag || seen.lastModified || null) !== validatorOf(rec));
      if (have > 0 && (r.status === 200 || range.first !== have || changed)) {
        cancel(); // the server ignored the range, or the file changed (ETag / Last-Modified / size)
        restart();
        continue;
      }
      if (changed) rec = null; // nothing on disk yet: this response is the file
      if (!rec)
        rec = {
          url,
          size: total,
          etag: seen.etag,
          lastModified: seen.lastModified,
          addedAt: Date.now(),
          complete: false,
          bytes: 0,
          sha256: job.sha256,
        };
      try {
        await becomeReady();
      } catch (e) {
        cancel();
        throw e;
      }
      await store.writeRecord(key, { ...rec, bytes: have });
      if (job.sha256 && !hash) hash = await hasherFor(data, have, job.hashUrl);
      try {
        have = await receive(r.body, { data, have, rec, hash, store, key, meter, signal, name });
      } catch (e) {
        if (e instanceof OxError) throw e;
        have = data.size();
        hash = null; // rebuilt from the disk on the next round
        await retry(e);
        continue;
      }
      if (have < rec.size) await retry(new Error('the body ended early'));
    }
    await becomeReady(); // a copy that was whole but not yet verified
    meter(have, rec.size, true);
    data.flush();
    if (job.sha256) {
      const got = [...(hash ?? (await hasherFor(data, have, job.hashUrl))).digest()]
        .map((b) => b.toString(16).padStart(2, '0'))
        .join('');
      if (got !== job.sha256) {
        mismatch = got;
        data.truncate(0); // in a browser the engine may still hold KEY.bin open: it is empty now
      }
    }
    if (!mismatch) await store.writeRecord(key, { ...rec, sha256: job.sha256 ?? null, complete: true, bytes: have }); // only a checked sha256
  } catch (e) {
    if (rec && ready) await store.writeRecord(key, { ...rec, bytes: have }).catch(() => {}); // for listCachedModels
    throw e;
  } finally {
    data.close();
    if (!rec || (!ready && have === 0)) await store.remove(key).catch(() => {}); // nothing worth keeping
  }
  if (mismatch) {
    await store.remove(key).catch(() => {});
    throw new OxError(
      'IO',
      `${name}: sha256 mismatch: expected ${job.sha256}, got ${mismatch}; the cached copy was deleted`,
    );
  }
}

// Write a response body at `have`; returns the new length. The record's byte count follows
// every RECORD_EVERY_MS (the data file's own length is what a resume trusts).
async function receive(body, { data, have, rec, hash, store, key, meter, signal, name }) {
  let saved = Date.now();
  const reader = body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return have;
      if (have + value.length > rec.size)
        throw new OxError('IO', `${name}: the server sent more than the ${rec.size} bytes it announced`);
      data.write(value, have);
      hash?.update(value);
      have += value.length;
      meter(have, rec.size);
      if (Date.now() - saved > RECORD_EVERY_MS) {
        saved = Date.now();
        data.flush();
        await store.writeRecord(key, { ...rec, bytes: have });
      }
      if (signal.aborted) throw new OxError('ABORTED', `${name}: download aborted at byte ${have} of ${rec.size}`);
    }
  } finally {
    reader.releaseLock();
  }
}

// A complete copy is used if the server still has the same file, or cannot be asked.
async function stillCurrent(url, rec, signal) {
  try {
    const r = await fetch(url, { headers: { Range: PROBE_RANGE }, signal });
    r.body?.cancel().catch(() => {});
    if (!r.ok) return true;
    const v = r.headers.get('etag') || r.headers.get('last-modified') || null;
    const size = parseContentRange(r.headers.get('content-range'))?.size;
    return (!v || v === validatorOf(rec)) && (size === undefined || size < 0 || size === rec.size);
  } catch {
    return true; // offline: the copy is what we have
  }
}

async function checkRoom(store, name, need, maxBytes, key) {
  let free = await store.free();
  let what = `free in ${store.where}`;
  if (maxBytes !== undefined) {
    let used = 0;
    for (const k of await store.list()) if (k !== key) used += await store.dataSize(k);
    if (maxBytes - used < free) {
      free = maxBytes - used;
      what = `left of cache.maxBytes=${maxBytes}`;
    }
  }
  if (need > free)
    throw new OxError(
      'NOMEM',
      `${name}: not enough storage to cache it: ${need} more bytes needed, ${Math.max(0, free)} ${what}`,
    );
}

/**
 * The engine side of a 'cached' source (hostfile.js): the local copy, to be opened as a 'path'
 * (Node) or 'opfs' source while the download writes it, and its current length; null when it
 * is gone (a failed check, deleteCachedModel: then everything comes from the URL).
 * @returns {Promise<{source: object, length: () => number} | null>}
 */
export async function openCacheCopy(d) {
  if (isNode) {
    const fs = await import(/* webpackIgnore: true */ 'node:fs');
    const path = (await nodeStore(d.dir)).dataPath(d.key);
    if (!fs.existsSync(path)) return null;
    const length = () => {
      try {
        return fs.statSync(path).size;
      } catch {
        return 0; // deleted while in use
      }
    };
    return { source: { kind: 'path', path, name: d.name }, length };
  }
  let file;
  try {
    file = await (await opfsStore(d.dir)).dataHandle(d.key);
  } catch (e) {
    if (e.name === 'NotFoundError') return null;
    throw new OxError('IO', `${d.name}: cannot open the cached copy: ${e.message}`);
  }
  // 'readwrite-unsafe': the cache worker holds the file open for writing meanwhile
  let access = null;
  const handle = {
    createSyncAccessHandle: async () => (access = await file.createSyncAccessHandle({ mode: 'readwrite-unsafe' })),
  };
  return { source: { kind: 'opfs', handle, name: d.name }, length: () => access?.getSize() ?? 0 };
}
