// reader_worker.js — helper thread of the host-file table (js/hostfile.js, class Bridge): runs
// the async reads (HTTP Range fetch, Node Blob slices) that have no fast sync form, and hands
// the bytes back through shared memory while the engine thread waits in Atomics.wait. A Node
// worker_threads Worker (init in workerData) or a module Web Worker (init in the first message).
// Control words: ctrl[0] state (1 = answered), ctrl[1] status (0 or an err.h code),
// ctrl[2] byte count (of the data, or of a UTF-8 error message).
//
// URLs are read ahead: after a large read, the next AHEAD windows of CHUNK bytes are fetched
// in parallel, so a sequential scan (a model load) has several requests in flight instead of
// one round trip per chunk. Window buffers are reused, so the read-ahead holds AHEAD * CHUNK
// bytes at most. Every request is bounded by timeoutMs (fetchRange; Blob reads here).
import { fetchRange, ERROR_CODES, HostError, CHUNK } from './hostfile.js';

const AHEAD = 4;
const isNode = typeof process === 'object' && !!process.versions?.node;
let port, ctrl, data, timeoutMs;
const blobs = new Map();
const windows = new Map(); // url -> [{off, len, buf, p}], in offset order, contiguous
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

function dropWindow(w) {
  w.p.then(() => spare.push(w.buf), () => spare.push(w.buf));
}

// start windows after `from` until AHEAD are in flight (never past the file's end)
function readAhead(m, list, from) {
  while (list.length < AHEAD && from < m.want.size) {
    const len = Math.min(CHUNK, m.want.size - from);
    const buf = spare.pop() ?? new Uint8Array(CHUNK);
    const w = { off: from, len, buf, p: fetchRange(m.name, m.url, from, len, m.want, timeoutMs, buf.subarray(0, len)) };
    w.p.catch(() => {}); // seen when a read needs this window
    list.push(w);
    from += len;
  }
}

async function readUrl(m) {
  const list = windows.get(m.url) ?? [];
  windows.set(m.url, list);
  // drop the windows that end before this read: the scan moved past them (or jumped)
  while (list.length && list[0].off + list[0].len <= m.off) dropWindow(list.shift());
  const end = m.off + m.len;
  try {
    await readRange(m, list, end);
  } catch (e) {
    for (const w of list.splice(0)) dropWindow(w); // a later read starts afresh (the host may recover)
    throw e;
  }
  // a large read is a scan: keep the next windows coming
  if (m.len >= CHUNK / 2) readAhead(m, list, list.length ? list[list.length - 1].off + list[list.length - 1].len : end);
}

async function readRange(m, list, end) {
  const covered = list.length && list[0].off <= m.off && list[list.length - 1].off + list[list.length - 1].len >= end;
  if (!covered) {
    for (const w of list.splice(0)) dropWindow(w);
    await fetchRange(m.name, m.url, m.off, m.len, m.want, timeoutMs, data.subarray(0, m.len));
  } else {
    for (const w of list) {
      if (w.off >= end) break;
      const bytes = await w.p;
      const a = Math.max(m.off, w.off), b = Math.min(end, w.off + w.len);
      data.set(bytes.subarray(a - w.off, b - w.off), a - m.off);
    }
    while (list.length && list[0].off + list[0].len <= end) dropWindow(list.shift());
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
    for (const w of windows.get(m.url) ?? []) dropWindow(w);
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
  const wt = await import('node:worker_threads');
  port = wt.parentPort;
  port.on('message', receive);
  start(wt.workerData);
} else {
  port = self;
  self.onmessage = (e) => {
    self.onmessage = (ev) => receive(ev.data);
    start(e.data);
  };
}
