// reader_worker.js — helper thread of the host-file table (js/host/hostfile.js, class Bridge): runs
// the async reads (HTTP Range fetch, Node Blob slices) that have no fast sync form, and hands
// the bytes back through shared memory while the engine thread waits in Atomics.wait. A Node
// worker_threads Worker (init in workerData) or a module Web Worker (init in the first message).
// Control words: ctrl[0] state (1 = answered), ctrl[1] status (0 or an err.h code),
// ctrl[2] byte count (of the data, or of a UTF-8 error message), ctrl[3] the write gate (see put),
// ctrl[4] a count of the copies made (the caller's sign of progress on a long read).

//
// URLs are read ahead: along a sequential scan (a model load) one Range request streams a span
// of up to SPAN bytes, and its body fills the next AHEAD windows of CHUNK bytes in order; a read
// waits only for the windows it covers. One long request rather than one per window: each
// request costs Chromium's network service and the browser CPU, and in a Chromium worker a
// 1.3 GB scan through this table took 3.0-4.3 s in 8 MiB requests (4 in flight) against
// 2.0-2.7 s streamed; a whole E2B load spent about 1 s less CPU in all. The body is only read
// as far as there is a window for it (the rest waits in the socket), so the read-ahead holds
// about AHEAD * CHUNK bytes. Every request and every wait for more of a body is bounded by
// timeoutMs (fetchRange, the span pump; Blob reads here).
//
// A request over shared memory (m.into: a view of wasm memory, a threaded build) gets its bytes
// there, not in `data`, and a scan of such requests reads the span's body straight into them,
// with no windows: two copies fewer per byte, and the engine thread asks for the next bytes at
// once (the socket holds what arrives meanwhile). E2B Q4_K_M from a loopback URL in Chromium:
// 3.7-4.0 s -> 3.3-3.8 s with the load's page touching (src/model/load.c).
import { codes } from '../shared/abi.js';
import { isNode } from '../shared/env.js';
import { OxError } from '../shared/errors.js';
import { CHUNK, copyShared } from './copy.js';
import { checkRangeResponse, fetchRange, fetchTransport } from './http.js';

const AHEAD = 4;
const SPAN = 32 * CHUNK;
// Node: node:http with keep-alive (the reads of one file reuse their connections); set before
// the first message is taken. (No top-level await: bundlers emit workers as classic scripts.)
let transport;

async function nodeTransport() {
  const http = await import(/* webpackIgnore: true */ 'node:http'),
    https = await import(/* webpackIgnore: true */ 'node:https');
  const agents = { 'http:': new http.Agent({ keepAlive: true }), 'https:': new https.Agent({ keepAlive: true }) };
  return (url, range, signal) =>
    new Promise((resolve, reject) => {
      const u = new URL(url);
      const lib = u.protocol === 'https:' ? https : http;
      const req = lib.get(u, { agent: agents[u.protocol], headers: { Range: range }, signal }, (res) =>
        resolve({
          status: res.statusCode,
          header: (h) => res.headers[h] ?? null,
          chunks: res,
          cancel: () => res.destroy(),
        }),
      );
      req.on('error', reject);
    });
}
const GAP = 1 << 20; // bytes a scan may skip between two reads
const SCAN = 1 << 20; // bytes read in a row before the read-ahead starts
const IDLE_MS = 1000;
let port, ctrl, data, timeoutMs;
const blobs = new Map();
const windows = new Map(); // url -> {list: [{off, len, buf, got, p, ...}] (contiguous, in order), last: end of the last read, run, idle, span: the request streaming into the windows, pumping}
const spare = []; // window buffers not in use

function answer(status, n) {
  Atomics.store(ctrl, 1, status);
  Atomics.store(ctrl, 2, n);
  Atomics.store(ctrl, 0, 1);
  Atomics.notify(ctrl, 0);
}

// src to offset `at` of request m's bytes. Into shared memory only while holding the gate: the
// caller closes it when it gives up (abort, timeout), and the memory is then no longer its.
function put(m, src, at) {
  Atomics.add(ctrl, 4, 1);
  if (!m.into) return void copyShared(data, src, at);
  if (Atomics.compareExchange(ctrl, 3, 0, 1) !== 0) throw new OxError('ABORTED', `${m.name}: the read was given up`);
  copyShared(m.into, src, at);
  Atomics.store(ctrl, 3, 0);
  Atomics.notify(ctrl, 3);
}

// Request m (with m.into) read from the scan's span; a span is opened where there is none that
// reaches m.off (a gap of up to GAP bytes, an alignment pad, is read and dropped).
async function directScan(m, st) {
  if (st.list.length) dropAll(st); // (windows of reads into `data`: their pump uses the span)
  const end = m.off + m.len;
  let at = m.off;
  while (at < end) {
    let span = st.span;
    if (!span || span.pos > at || at - span.pos > GAP || span.pos === span.end) {
      closeSpan(st);
      span = await openSpan(m, st, at);
    }
    if (!span.chunk?.length) {
      const { done, value } = await within(m, span.what, span.it.next(), span);
      if (done)
        throw new OxError(
          'IO',
          `${m.name}: short body: got ${span.pos - span.from} of ${span.end - span.from} bytes at offset ${span.from}`,
        );
      span.chunk = value;
    }
    if (span.pos < at) {
      const skip = Math.min(span.chunk.length, at - span.pos);
      span.chunk = span.chunk.subarray(skip);
      span.pos += skip;
      continue;
    }
    const n = Math.min(span.chunk.length, end - at, span.end - span.pos);
    put(m, span.chunk.subarray(0, n), at - m.off);
    span.chunk = span.chunk.subarray(n);
    at += n;
    span.pos += n;
  }
}

function fail(e, m) {
  const msg = e instanceof OxError ? e.message : `${m.name}: read failed: ${e.message}`;
  const bytes = new TextEncoder().encode(msg).subarray(0, data.length);
  data.set(bytes);
  answer(codes[e.code] ?? codes.IO, bytes.length);
}

// A window's buffer is reused once the window is settled (filled, failed or abandoned by the
// pump); a window a read has awaited is settled, so the next window takes its buffer at once
// and a scan holds AHEAD buffers. A dropped window the pump is still filling is abandoned by
// it: only then is its buffer free (keep), or left to the GC.
function release(w) {
  if (w.keep && spare.length < AHEAD) spare.push(w.buf);
}

function dropWindow(w, keep = true) {
  w.dropped = true;
  w.keep = keep;
  if (w.settled) release(w);
}

// every window of a scan, and its span
function dropAll(st, keep = true) {
  for (const w of st.list.splice(0)) dropWindow(w, keep);
  closeSpan(st);
}

function addWindow(m, st, from) {
  const len = Math.min(CHUNK, m.want.size - from);
  const w = {
    off: from,
    len,
    buf: spare.pop() ?? new Uint8Array(CHUNK),
    got: 0,
    settled: false,
    dropped: false,
    keep: true,
  };
  w.p = new Promise((resolve, reject) => Object.assign(w, { resolve, reject }));
  w.p.catch(() => {}); // a failure is seen when a read needs this window
  st.list.push(w);
  pump(m, st);
}

function settle(w, e) {
  w.settled = true;
  if (e) w.reject(e);
  else w.resolve(w.buf.subarray(0, w.len));
  if (w.dropped) release(w);
}

// The span request: one Range GET from `from` (up to SPAN bytes, to the end of the file at most),
// read chunk by chunk (a chunk is consumed before the next is asked for: BYOB staging reuses it).
// It is st.span from the start, so that closeSpan also stops a request still opening.
async function openSpan(m, st, from) {
  const end = Math.min(m.want.size, from + SPAN),
    what = `bytes ${from}-${end - 1}`;
  const ac = new AbortController();
  const span = { from, end, pos: from, chunk: null, it: null, what, cancel: () => ac.abort() };
  st.span = span;
  let r;
  try {
    r = await within(m, what, (transport ?? fetchTransport)(m.url, `bytes=${from}-${end - 1}`, ac.signal), span);
  } catch (e) {
    if (e instanceof OxError || ac.signal.aborted) throw e;
    throw new OxError('IO', `${m.name}: fetch of ${what} failed: ${e.cause?.message ?? e.message}`);
  }
  span.cancel = () => (ac.abort(), r.cancel());
  if (ac.signal.aborted) r.cancel();
  checkRangeResponse(m.name, r, from, end - from, m.want);
  span.it = r.chunks[Symbol.asyncIterator]();
  return span;
}

function closeSpan(st) {
  st.span?.cancel();
  st.span = null;
}

// p, or an IO error after timeoutMs without it (the span is cancelled: a stalled body)
function within(m, what, p, span) {
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => {
      span.cancel();
      reject(new OxError('IO', `${m.name}: ${what}: no answer in ${timeoutMs} ms`));
    }, timeoutMs);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

// Fills the scan's windows in order from the span (a new span where the last one ended or does
// not continue the window). One pump per scan at a time. A window dropped meanwhile is
// abandoned (its span was closed with it); a failure fails every waiting window (the read that
// meets it drops them all, and the next read starts afresh).
async function pump(m, st) {
  if (st.pumping) return;
  st.pumping = true;
  try {
    for (let w; (w = st.list.find((x) => !x.settled));) {
      try {
        while (w.got < w.len && !w.dropped) {
          let span = st.span;
          const at = w.off + w.got;
          if (!span || span.pos !== at || span.pos === span.end) {
            closeSpan(st);
            span = await openSpan(m, st, at);
            if (w.dropped) break;
          }
          if (!span.chunk?.length) {
            const { done, value } = await within(m, span.what, span.it.next(), span);
            if (w.dropped) break;
            if (done)
              throw new OxError(
                'IO',
                `${m.name}: short body: got ${span.pos - span.from} of ${span.end - span.from} bytes at offset ${span.from}`,
              );
            span.chunk = value;
          }
          const n = Math.min(span.chunk.length, w.len - w.got, span.end - span.pos);
          if (n === 0)
            throw new OxError('IO', `${m.name}: long body: more than ${span.end - span.from} bytes for ${span.what}`);
          w.buf.set(span.chunk.subarray(0, n), w.got);
          span.chunk = span.chunk.subarray(n);
          w.got += n;
          span.pos += n;
        }
        settle(w, null);
      } catch (e) {
        if (w.dropped) {
          settle(w, null);
          continue;
        }
        closeSpan(st);
        const err =
          e instanceof OxError
            ? e
            : new OxError('IO', `${m.name}: short body at offset ${w.off + w.got}: ${e.cause?.message ?? e.message}`);
        for (const x of st.list) if (!x.settled) settle(x, err);
      }
    }
  } finally {
    st.pumping = false;
  }
}

const spanEnd = (list) => (list.length ? list.at(-1).off + list.at(-1).len : -1);

// A read that continues the previous one (a small gap is an alignment pad) after at least
// SCAN bytes read in a row is a scan: it is served from windows, and the next windows are
// started. Any other read (rows of a table, a jump back for a few bytes) is fetched on its
// own and leaves the windows alone. A second without reads ends the scan: its windows and
// buffers are released.
async function readUrl(m) {
  const st = windows.get(m.url) ?? { list: [], last: -1, run: 0, idle: null, span: null, pumping: false };
  windows.set(m.url, st);
  const { list } = st,
    end = m.off + m.len;
  const next = st.last >= 0 && m.off >= st.last && m.off - st.last <= GAP;
  st.run = next ? st.run + m.len : m.len;
  st.last = end;
  clearTimeout(st.idle);
  try {
    if (m.into && (m.len > CHUNK || (next && st.run >= SCAN))) return void (await directScan(m, st));
    if (!next || st.run < SCAN)
      return void put(
        m,
        await fetchRange(m.name, m.url, m.off, m.len, m.want, timeoutMs, data.subarray(0, m.len), transport),
        0,
      );
    if (!(list.length && list[0].off <= m.off && m.off < spanEnd(list))) {
      dropAll(st);
      addWindow(m, st, m.off);
    }
    while (list[0].off + list[0].len <= m.off) dropWindow(list.shift());
    while (spanEnd(list) < end) addWindow(m, st, spanEnd(list));
    while (list.length < AHEAD && spanEnd(list) < m.want.size) addWindow(m, st, spanEnd(list));
    for (const w of list) {
      if (w.off >= end) break;
      const bytes = await w.p;
      const a = Math.max(m.off, w.off),
        b = Math.min(end, w.off + w.len);
      copyShared(data, bytes.subarray(a - w.off, b - w.off), a - m.off);
    }
  } catch (e) {
    dropAll(st); // a later read starts afresh (the host may recover)
    throw e;
  } finally {
    // counted from the end of this read: a slow window is not dropped while it is awaited
    st.idle = setTimeout(() => {
      dropAll(st, false);
      spare.length = 0;
    }, IDLE_MS);
  }
}

async function readBlob(m) {
  const blob = blobs.get(m.id);
  if (!blob) throw new OxError('IO', `${m.name}: blob not registered with the reader thread`);
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(
      () => reject(new OxError('IO', `${m.name}: Blob read at offset ${m.off}: no answer in ${timeoutMs} ms`)),
      timeoutMs,
    );
  });
  try {
    const bytes = new Uint8Array(await Promise.race([blob.slice(m.off, m.off + m.len).arrayBuffer(), late]));
    if (bytes.length !== m.len)
      throw new OxError('IO', `${m.name}: short read: got ${bytes.length} of ${m.len} bytes at offset ${m.off}`);
    put(m, bytes, 0);
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
    if (st) dropAll(st, false);
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
