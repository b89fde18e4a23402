// http.js — the HTTP Range client: the response checks both the sync XHR path and the reader
// thread apply, the size probe, the fetch() transport and one bounded Range read.
import { OxError } from '../shared/errors.js';
import { bounded } from './bounded.js';
import { copyShared } from './copy.js';

export function parseContentRange(v) {
  const m = /^bytes\s+(\d+)-(\d+)\/(\d+|\*)$/i.exec((v ?? '').trim());
  return m ? { first: Number(m[1]), last: Number(m[2]), size: m[3] === '*' ? -1 : Number(m[3]) } : null;
}

// r: {status, header(name)}; returns {size, validator}, or throws OxError. `want` is
// {size, validator} as seen at open (null when probing): a different ETag / Last-Modified or
// size means the file changed under us.
export function checkRangeResponse(name, r, off, len, want) {
  const range = `bytes ${off}-${off + len - 1}`;
  if (r.status === 404 || r.status === 410)
    throw new OxError(want ? 'IO' : 'MISSING', `${name}: HTTP ${r.status} (not found) for ${range}`);
  if (r.status === 416)
    throw new OxError(
      'IO',
      `${name}: HTTP 416 (range not satisfiable) for ${range}; the file is shorter than expected`,
    );
  if (r.status === 200)
    throw new OxError(
      'UNSUPPORTED',
      `${name}: the server ignored the Range header (HTTP 200 instead of 206); HTTP Range requests are required`,
    );
  if (r.status !== 206) throw new OxError('IO', `${name}: HTTP ${r.status} for ${range}`);
  // A cross-origin server that does not expose Content-Range (CORS) hides it: then the body
  // length is the check (checkBodyLength) and the size comes from HEAD (probeUrl).
  const header = r.header('content-range');
  const cr = header === null ? null : parseContentRange(header);
  if (header !== null && !cr)
    throw new OxError('IO', `${name}: HTTP 206 with a bad Content-Range header (${header}) for ${range}`);
  if (cr && (cr.first !== off || cr.last !== off + len - 1))
    throw new OxError('IO', `${name}: server sent ${header} for ${range}`);
  const validator = r.header('etag') || r.header('last-modified') || null;
  if (want?.validator && validator && validator !== want.validator)
    throw new OxError('IO', `${name}: the file changed on the server while in use (${want.validator} -> ${validator})`);
  if (want && cr && cr.size >= 0 && cr.size !== want.size)
    throw new OxError('IO', `${name}: the file changed on the server while in use (size ${want.size} -> ${cr.size})`);
  return { size: cr ? cr.size : -1, validator };
}

export function checkBodyLength(name, got, len, off) {
  if (got !== len) throw new OxError('IO', `${name}: short body: got ${got} of ${len} bytes at offset ${off}`);
}

// The first request of a URL: two bytes, not one: some servers (Vite's dev server) read
// `bytes=0-0` as "from 0 to the end" and send the whole file.
export const PROBE_RANGE = 'bytes=0-1';

// Async probe: size and validator (ETag or Last-Modified) from a 2-byte range request.
export async function probeUrl(name, url, ctx) {
  return bounded(ctx, name, 'first request (bytes 0-1)', async (signal) => {
    let r;
    // one retry: a kept-alive connection the server has just closed fails the first attempt
    for (let attempt = 0; !r; attempt++) {
      try {
        r = await fetch(url, { headers: { Range: PROBE_RANGE }, signal });
      } catch (e) {
        if (signal.aborted) throw e;
        if (attempt > 0) throw new OxError('IO', `${name}: fetch failed: ${e.cause?.message ?? e.message}`);
      }
    }
    try {
      const tiny = parseContentRange(r.headers.get('content-range'))?.size === 1; // answered 0-0/1
      const got = checkRangeResponse(
        name,
        { status: r.status, header: (h) => r.headers.get(h) },
        0,
        tiny ? 1 : 2,
        null,
      );
      await r.arrayBuffer();
      if (got.size < 0) {
        const h = await fetch(url, { method: 'HEAD', signal }).catch(() => null);
        const n = h?.ok ? Number(h.headers.get('content-length') ?? NaN) : NaN;
        if (!Number.isSafeInteger(n) || n <= 0)
          throw new OxError(
            'UNSUPPORTED',
            `${name}: the server says neither Content-Range nor Content-Length (a cross-origin server must expose Content-Range)`,
          );
        got.size = n;
      }
      return got;
    } finally {
      if (!r.bodyUsed) r.body?.cancel().catch(() => {});
    }
  });
}

// A transport runs one Range GET: (url, range, signal) -> Promise<{status, header(name) ->
// string|null, chunks: AsyncIterable<Uint8Array>, cancel()}>. fetch() everywhere; the Node
// helper thread uses node:http (js/host/reader_worker.js), which costs less CPU per byte.
// A chunk is valid until the loop over `chunks` asks for the next one (copy it before).
//
// Where the body is a byte stream (Chromium), it is read with a BYOB reader into a staging
// buffer of STAGE bytes taken from a pool and returned to it when the body ends: a plain read
// makes a new chunk per read, which only the GC frees, and a large load then peaks higher in
// the renderer (npm run bench:memory). The staging buffer is only ever held by the one read that
// took it (a read transfers it; the answer's view is over the same memory), so no view that
// is still in use can be detached; one whose body fails or is cancelled stays with the stream.
const STAGE = 1 << 20;
const stages = [];

export async function fetchTransport(url, range, signal) {
  const r = await fetch(url, { headers: { Range: range }, signal });
  let byob = null;
  try {
    byob = r.body.getReader({ mode: 'byob' });
  } catch {
    // not a byte stream: default reads
  }
  const reader = byob ?? r.body.getReader();
  const chunks = {
    async *[Symbol.asyncIterator]() {
      if (!byob) {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) return;
          yield value;
        }
      }
      let buf = stages.pop() ?? new ArrayBuffer(STAGE);
      for (;;) {
        const { done, value } = await byob.read(new Uint8Array(buf));
        if (done) return void (value && stages.push(value.buffer)); // (no value: cancelled)
        buf = value.buffer;
        yield value;
      }
    },
  };
  return { status: r.status, header: (h) => r.headers.get(h), chunks, cancel: () => reader.cancel().catch(() => {}) };
}

// One async Range read (the helper thread); fills `into` (a Uint8Array of exactly len bytes,
// or a new one) from the response stream, so no second len-sized buffer is made.
export async function fetchRange(
  name,
  url,
  off,
  len,
  want,
  timeoutMs,
  into = new Uint8Array(len),
  transport = fetchTransport,
) {
  const what = `bytes ${off}-${off + len - 1}`;
  return bounded({ timeoutMs }, name, what, async (signal) => {
    let r;
    try {
      r = await transport(url, `bytes=${off}-${off + len - 1}`, signal);
    } catch (e) {
      if (signal.aborted) throw e;
      throw new OxError('IO', `${name}: fetch of ${what} failed: ${e.cause?.message ?? e.message}`);
    }
    let got = 0;
    try {
      checkRangeResponse(name, r, off, len, want);
      for await (const value of r.chunks) {
        if (got + value.length > len) throw new OxError('IO', `${name}: long body: more than ${len} bytes for ${what}`);
        copyShared(into, value, got);
        got += value.length;
      }
    } catch (e) {
      r.cancel();
      if (e instanceof OxError || signal.aborted) throw e;
      throw new OxError('IO', `${name}: short body at offset ${off}: ${e.cause?.message ?? e.message}`);
    }
    checkBodyLength(name, got, len, off);
    return into;
  });
}
