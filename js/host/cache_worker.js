// cache_worker.js — the browser's cache download worker (a module worker started by
// js/main/cache.js): runs one download into OPFS and reports {type: 'ready'|'progress'|'done'|
// 'error'} to the page. Message in: {dir, job}, or {op: 'abort'}.
import { opfsStore, runDownload } from './cache_store.js';

const ac = new AbortController();
onmessage = async ({ data: m }) => {
  if (m.op === 'abort') return ac.abort();
  try {
    await runDownload(await opfsStore(m.dir), m.job, ac.signal, (ev) => postMessage(ev));
    postMessage({ type: 'done' });
  } catch (e) {
    postMessage({ type: 'error', code: e.code ?? 'IO', message: e.message });
  }
};
