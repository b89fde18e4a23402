// Loading a model by URL, through the package's model cache when it has one
// (`loadModel(url, { cache: true })`, js/main/cache.js: OPFS, resumable, generation may start before
// the download ends), else straight from the URL. Progress comes out in one shape either way:
//   { phase: 'download' | 'load', bytes, total, rate (bytes/s), eta (s) }
// The cache makes one attempt; the caller retries (a new load resumes the download).

/** True when the engine package has the model cache (listCachedModels / deleteCachedModel). */
export const hasCache = (ox) => typeof ox?.listCachedModels === 'function';

/**
 * @param {object} ox the package (import('oxinfer-web'))
 * @param {string} url
 * @param {object} opts loadModel options; onProgress receives the shape above
 */
export async function loadUrl(ox, url, { onProgress, ...opts } = {}) {
  if (hasCache(ox)) {
    // download events come as they are; load events read the cached copy
    const report = (p) =>
      onProgress?.(p.phase === 'download' ? p : { phase: 'load', bytes: p.loaded, total: p.total, rate: 0, eta: 0 });
    // no retries inside the cache: the page retries a failed download itself and says so
    // (app.js), resuming from the bytes already kept
    return ox.loadModel(url, { ...opts, cache: { retries: 0 }, onProgress: report });
  }
  // no cache: the weights the engine reads come over the network, so their progress is the
  // download's, with the rate and the time left measured here
  const t0 = performance.now();
  const report = (p) => {
    const secs = (performance.now() - t0) / 1000,
      bytes = p.loaded ?? 0,
      total = p.total ?? 0;
    const rate = secs > 0.2 ? bytes / secs : 0;
    onProgress?.({
      phase: 'download',
      bytes,
      total,
      rate,
      eta: rate > 0 ? Math.max(0, total - bytes) / rate : Infinity,
    });
  };
  return ox.loadModel(url, { ...opts, onProgress: report });
}
