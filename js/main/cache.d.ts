// Type declarations for the model cache (js/main/cache.js); re-exported by index.d.ts.

/** loadModel's `cache` option as an object (`cache: true` = all defaults). */
export interface CacheOptions {
  /** Expected SHA-256 of the file (64 hex digits; one URL only). loadModel then resolves only
   *  once the copy is complete and matches (the engine never reads an unverified byte); a
   *  mismatch rejects loadModel with an OxError IO and deletes the copy. */
  sha256?: string;
  /** Browser: OPFS directory name (default 'oxinfer-web'). Node: a directory path
   *  (default $XDG_CACHE_HOME/oxinfer-web or ~/.cache/oxinfer-web). */
  dir?: string;
  /** Network failures in a row that are retried (resuming with Range) before the download
   *  fails: integer >= 0, default 5. */
  retries?: number;
  /** At most this many bytes for all cached files together; more is an OxError NOMEM before
   *  the download starts (the storage's own free space is always checked). */
  maxBytes?: number;
}

/** onProgress events of a cached download. */
export interface DownloadProgress {
  phase: 'download';
  url: string;
  /** bytes in the cache so far, of total */
  bytes: number;
  total: number;
  /** bytes per second over the last seconds */
  rate: number;
  /** seconds left at that rate (Infinity before a rate is known, 0 when done) */
  eta: number;
}

export interface CachedModel {
  url: string;
  size: number;
  /** downloaded in full (and verified, when a sha256 was given) */
  complete: boolean;
  /** bytes downloaded so far */
  bytes: number;
  etag: string | null;
  lastModified: string | null;
  /** Date.now() when the download started */
  addedAt: number;
}

/** The cached model files (complete or not), oldest first. */
export function listCachedModels(opts?: { dir?: string }): Promise<CachedModel[]>;

/** Delete a cached file (a running download of it is stopped first); resolves to whether there
 *  was one. */
export function deleteCachedModel(url: string | URL, opts?: { dir?: string }): Promise<boolean>;
