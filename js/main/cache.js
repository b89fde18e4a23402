// cache.js — the model cache API: `loadModel(url, { cache })` keeps model files in the Origin
// Private File System (browser) or a cache directory (Node, ~/.cache/oxinfer-web), downloads
// them in the background, and lets the engine read while the download runs; list and delete.
// The files and the download loop: js/host/cache_store.js; the browser's download worker:
// js/host/cache_worker.js.

import { isNode } from '../shared/env.js';
import { OxError } from '../shared/errors.js';
import { keyOf, nodeStore, opfsStore, openStore, runDownload } from '../host/cache_store.js';

const DEFAULT_DIR = 'oxinfer-web';

// Where the page's import map puts the hash library, for the unbundled cache worker; null
// where a bundler or Node resolves it. import.meta.resolve is read, not called in place:
// webpack compiles a call into a module lookup (and fails on packages without a browser
// export), while a plain read becomes undefined there; in a bundled page without the import
// map the native resolve throws.
function hashUrl() {
  if (isNode) return null;
  const resolve = import.meta.resolve;
  try {
    return typeof resolve === 'function' ? resolve('@noble/hashes/sha2.js') : null;
  } catch {
    return null;
  }
}

async function cacheDir(opts) {
  const dir = (typeof opts === 'object' && opts?.dir) || null;
  if (!isNode) return dir ?? DEFAULT_DIR;
  if (dir) return dir;
  const os = await import(/* webpackIgnore: true */ 'node:os');
  const path = await import(/* webpackIgnore: true */ 'node:path');
  return path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), DEFAULT_DIR);
}

function checkSha256(s) {
  if (s === undefined || s === null) return null;
  if (typeof s !== 'string' || !/^[0-9a-f]{64}$/i.test(s))
    throw new OxError('RANGE', `cache.sha256 must be 64 hex digits, not ${JSON.stringify(s)}`);
  return s.toLowerCase();
}

// ---- the page / Node side ----

const active = new Map(); // dir + url -> running download {ready, done, abort}

// -> {ready: Promise<{complete, size, validator}>, done: Promise, abort()}
function startDownload(dir, job, onEvent) {
  const id = `${dir}\n${job.url}`;
  let settle;
  const ready = new Promise((res, rej) => (settle = { res, rej }));
  ready.catch(() => {}); // awaited by cacheSources; a second file's failure must not go unhandled meanwhile
  const emit = ({ type, ...ev }) => (type === 'ready' ? settle.res(ev) : onEvent(ev)); // ev: DownloadProgress
  let done, abort;
  if (isNode) {
    const ac = new AbortController();
    abort = () => ac.abort();
    done = openStore(dir).then((store) => runDownload(store, job, ac.signal, emit));
  } else {
    const w = new Worker(new URL('../host/cache_worker.js', import.meta.url), { type: 'module' });
    abort = () => w.postMessage({ op: 'abort' });
    done = new Promise((res, rej) => {
      w.onmessage = ({ data: ev }) => {
        if (ev.type === 'done') res();
        else if (ev.type === 'error') rej(new OxError(ev.code, ev.message));
        else emit(ev);
      };
      w.onerror = (e) => rej(new OxError('IO', `${job.name}: the cache worker failed: ${e.message}`));
    }).finally(() => w.terminate());
    w.postMessage({ dir, job });
  }
  done = done.finally(() => active.delete(id));
  done.catch((e) => settle.rej(e)); // an error before 'ready' fails the load
  const d = { ready, done, abort };
  active.set(id, d);
  return d;
}

// The local copy as a source: complete -> a plain path / OPFS handle; still downloading -> a
// 'cached' source (hostfile.js) that reads written bytes locally and the rest from the URL.
async function sourceFor(dir, key, desc, ready) {
  if (ready.complete) {
    if (isNode) return { kind: 'path', path: (await nodeStore(dir)).dataPath(key), name: desc.name };
    return { kind: 'opfs', handle: await (await opfsStore(dir)).dataHandle(key), name: desc.name };
  }
  return {
    kind: 'cached',
    name: desc.name,
    url: desc.url,
    size: ready.size,
    want: { size: ready.size, validator: ready.validator },
    dir,
    key,
  };
}

/**
 * loadModel's `cache` option: URL sources are downloaded into the cache (in the background)
 * and replaced by their local copies. Resolves once every download knows its size and has the
 * room (with `sha256`: once the file is complete and verified); `done` resolves when all are
 * complete and verified.
 * @param {object[]} descs described sources (hostfile.js describeSource)
 * @param {{cache: true|{sha256?: string, dir?: string, retries?: number, maxBytes?: number}, onProgress?: Function, signal?: AbortSignal}} opts
 * @returns {Promise<{sources: object[], done: Promise<void>, abort: () => void}>}
 */
export async function cacheSources(descs, opts) {
  const c = typeof opts.cache === 'object' ? opts.cache : {};
  const urls = descs.filter((d) => d.kind === 'url');
  if (c.sha256 !== undefined && urls.length !== 1)
    throw new OxError('RANGE', `cache.sha256 checks one file, but ${urls.length} URLs were given`);
  const sha256 = checkSha256(c.sha256);
  const retries = c.retries ?? 5; // retries, maxBytes, dir: checked by options.js
  const dir = await cacheDir(c);
  if (!isNode) await navigator.storage?.persist?.().catch(() => false); // ask not to be evicted
  const jobs = [];
  for (const d of urls) {
    const url = new URL(d.url).href; // as deleteCachedModel spells it
    const job = {
      url,
      name: d.name,
      key: await keyOf(url),
      sha256,
      hashUrl: sha256 && hashUrl(),
      retries,
      maxBytes: c.maxBytes,
    };
    const running = active.get(`${dir}\n${url}`);
    jobs.push({ d, key: job.key, dl: running ?? startDownload(dir, job, (ev) => opts.onProgress?.(ev)) });
  }
  const abort = () => jobs.forEach((j) => j.dl.abort());
  const signal = opts.signal;
  if (signal?.aborted) abort();
  signal?.addEventListener('abort', abort, { once: true });
  const done = Promise.all(jobs.map((j) => j.dl.done)).then(() => {});
  done.catch(() => {}).finally(() => signal?.removeEventListener('abort', abort));
  try {
    const map = new Map();
    // with sha256 the engine gets the copy only once it is whole and its hash checked: it
    // never reads a byte that was not verified (and a mismatch fails the load)
    if (sha256) await done;
    for (const j of jobs)
      map.set(
        j.d,
        await sourceFor(dir, j.key, j.d, sha256 ? { ...(await j.dl.ready), complete: true } : await j.dl.ready),
      );
    return { sources: descs.map((d) => map.get(d) ?? d), done, abort };
  } catch (e) {
    abort();
    throw e;
  }
}

/**
 * The cached models.
 * @param {{dir?: string}} [opts]
 * @returns {Promise<Array<{url: string, size: number, complete: boolean, bytes: number, etag: string|null, lastModified: string|null, addedAt: number}>>}
 */
export async function listCachedModels(opts = {}) {
  const store = await openStore(await cacheDir(opts));
  const out = [];
  for (const key of await store.list()) {
    const r = await store.readRecord(key);
    if (!r) continue;
    const bytes = r.complete ? r.size : Math.min(r.size, Math.max(r.bytes ?? 0, await store.dataSize(key)));
    out.push({
      url: r.url,
      size: r.size,
      complete: !!r.complete,
      bytes,
      etag: r.etag ?? null,
      lastModified: r.lastModified ?? null,
      addedAt: r.addedAt,
    });
  }
  return out.sort((a, b) => a.addedAt - b.addedAt);
}

/**
 * Delete a cached model (a running download of it is stopped first). Resolves to whether
 * there was one.
 * @param {string|URL} url
 * @param {{dir?: string}} [opts]
 */
export async function deleteCachedModel(url, opts = {}) {
  const dir = await cacheDir(opts);
  const href = new URL(String(url), globalThis.location?.href).href;
  const running = active.get(`${dir}\n${href}`);
  if (running) {
    running.abort();
    await running.done.catch(() => {});
  }
  const store = await openStore(dir);
  const key = await keyOf(href);
  const had = (await store.readRecord(key)) !== null;
  await store.remove(key);
  return had;
}
