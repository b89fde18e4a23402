// reader_worker.js — helper thread of the host-file table (js/hostfile.js, class Bridge): runs
// the async reads (HTTP Range fetch, Node Blob slices) that have no fast sync form, and hands
// the bytes back through shared memory while the engine thread waits in Atomics.wait. A Node
// worker_threads Worker (init in workerData) or a module Web Worker (init in the first message).
// Control words: ctrl[0] state (1 = answered), ctrl[1] status (0 or an err.h code),
// ctrl[2] byte count (of the data, or of a UTF-8 error message).
//
// URLs are read ahead: along a sequential scan (a model load), the next AHEAD windows of CHUNK
// bytes are fetched in parallel, so several requests are in flight instead of one round trip
// per read. Window buffers are reused: the read-ahead holds about AHEAD * CHUNK bytes. Every request is bounded by timeoutMs (fetchRange; Blob reads here).
import { fetchRange, ERROR_CODES, HostError, CHUNK } from './hostfile.js';

const isNode = typeof process === 'object' && !!process.versions?.node;

const AHEAD = 4;
// Node: node:http with keep-alive (the reads of one file reuse their connections); set before
// the first message is taken. (No top-level await: bundlers emit workers as classic scripts.)
let transport;

async function nodeTransport() {
  const http = await import(/* webpackIgnore: true */ 'node:http'), https = await import(/* webpackIgnore: true */ 'node:https');
  const agents = { 'http:': new http.Agent({ keepAlive: true }), 'https:': new https.Agent({ keepAlive: true }) };
  return (url, range, signal) => new Promise((resolve, reject) => {
    const u = new URL(url);
    const lib = u.protocol === 'https:' ? https : http;
    const req = lib.get(u, { agent: agents[u.protocol], headers: { Range: range }, signal }, (res) =>
      resolve({ status: res.statusCode, header: (h) => res.headers[h] ?? null, chunks: res, cancel: () => res.destroy() }));
    req.on('error', reject);
  });
}
const GAP = 1 << 20;  // bytes a scan may skip between two reads
const SCAN = 1 << 20; // bytes read in a row before the read-ahead starts
const IDLE_MS = 1000;
let port, ctrl, data, timeoutMs;
const blobs = new Map();
const windows = new Map(); // url -> {list: [{off, len, buf, p}] (contiguous, in order), last: end of the last read}
const spare = [];          // window buffers not in use

function answer(status, n) {
  Atomics.store(ctrl, 1, status);
  Atomics.store(ctrl, 2, n);
  Atomics.store(ctrl, 0, 1);
  Atomics.notify(ctrl, 0);
}

function fail(e, m) {
  const msg = e instanceof HostError ? e.message : `${m.name}: read failed: ${e.message}`;
  const bytes = new TextEncoder().encode(msg).subarray(0, data.length);
  data.set(bytes);
  answer(ERROR_CODES[e.code] ?? ERROR_CODES.IO, bytes.length);
}

// A dropped window's buffer is reused once its fetch has settled (keep), or left to the GC.
// A window a read has awaited is settled: its buffer is free at once, so the next window
// takes it and a scan holds AHEAD buffers (+ those of windows dropped in flight, at most
// AHEAD spare ones).
function dropWindow(w, keep = true) {
  const free = () => spare.length < AHEAD && spare.push(w.buf);
  if (!keep) return;
  if (w.settled) free();
  else w.p.then(free, free);
}

function addWindow(m, list, from) {
  const len = Math.min(CHUNK, m.want.size - from);
  const buf = spare.pop() ?? new Uint8Array(CHUNK);
  const w = { off: from, len, buf, settled: false, p: fetchRange(m.name, m.url, from, len, m.want, timeoutMs, buf.subarray(0, len), transport) };
  // (first callback: it has run when a read's await of w.p resumes)
  const settle = () => (w.settled = true);
  w.p.then(settle, settle); // a failure is seen when a read needs this window
  list.push(w);
}

const spanEnd = (list) => (list.length ? list.at(-1).off + list.at(-1).len : -1);

// A read that continues the previous one (a small gap is an alignment pad) after at least
// SCAN bytes read in a row is a scan: it is served from windows, and the next windows are
// started. Any other read (rows of a table, a jump back for a few bytes) is fetched on its
// own and leaves the windows alone. A second without reads ends the scan: its windows and
// buffers are released.
async function readUrl(m) {
  const st = windows.get(m.url) ?? { list: [], last: -1, run: 0, idle: null };
  windows.set(m.url, st);
  const { list } = st, end = m.off + m.len;
  const next = st.last >= 0 && m.off >= st.last && m.off - st.last <= GAP;
  st.run = next ? st.run + m.len : m.len;
  st.last = end;
  clearTimeout(st.idle);
  try {
    if (!next || st.run < SCAN) return void (await fetchRange(m.name, m.url, m.off, m.len, m.want, timeoutMs, data.subarray(0, m.len), transport));
    if (!(list.length && list[0].off <= m.off && m.off < spanEnd(list))) {
      for (const w of list.splice(0)) dropWindow(w);
      addWindow(m, list, m.off);
    }
    while (list[0].off + list[0].len <= m.off) dropWindow(list.shift());
    while (spanEnd(list) < end) addWindow(m, list, spanEnd(list));
    while (list.length < AHEAD && spanEnd(list) < m.want.size) addWindow(m, list, spanEnd(list));
    for (const w of list) {
      if (w.off >= end) break;
      const bytes = await w.p;
      const a = Math.max(m.off, w.off), b = Math.min(end, w.off + w.len);
      data.set(bytes.subarray(a - w.off, b - w.off), a - m.off);
    }
  } catch (e) {
    for (const w of list.splice(0)) dropWindow(w); // a later read starts afresh (the host may recover)
    throw e;
  } finally {
    // counted from the end of this read: a slow window is not dropped while it is awaited
    st.idle = setTimeout(() => {
      for (const w of list.splice(0)) dropWindow(w, false);
      spare.length = 0;
    }, IDLE_MS);
  }
}

async function readBlob(m) {
  const blob = blobs.get(m.id);
  if (!blob) throw new HostError('IO', `${m.name}: blob not registered with the reader thread`);
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new HostError('IO', `${m.name}: Blob read at offset ${m.off}: no answer in ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    const bytes = new Uint8Array(await Promise.race([blob.slice(m.off, m.off + m.len).arrayBuffer(), late]));
    if (bytes.length !== m.len) throw new HostError('IO', `${m.name}: short read: got ${bytes.length} of ${m.len} bytes at offset ${m.off}`);
    data.set(bytes);
  } finally {
    clearTimeout(timer);
  }
}

async function receive(m) {
  if (m.op === 'blob') return void blobs.set(m.id, m.blob);
  if (m.op === 'drop') return void blobs.delete(m.id);
  if (m.op === 'drop-url') {
    const st = windows.get(m.url);
    if (st) clearTimeout(st.idle);
    for (const w of st?.list ?? []) dropWindow(w, false);
    return void windows.delete(m.url);
  }
  try {
    await (m.kind === 'url' ? readUrl(m) : readBlob(m));
    answer(0, m.len);
  } catch (e) {
    fail(e, m);
  }
}

function start(init) {
  ({ ctrl, data, timeoutMs } = init);
  port.postMessage('ready');
}

if (isNode) {
  Promise.all([nodeTransport(), import(/* webpackIgnore: true */ 'node:worker_threads')]).then(([t, wt]) => {
    transport = t;
    port = wt.parentPort;
    port.on('message', receive);
    start(wt.workerData);
  });
} else {
  port = self;
  self.onmessage = (e) => {
    self.onmessage = (ev) => receive(ev.data);
    start(e.data);
  };
}
