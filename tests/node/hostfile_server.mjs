// hostfile_server.mjs — a local HTTP server with Range support for the Node tests, run in its
// own thread (the host-file table blocks its thread in Atomics.wait during a read, so a server
// on the same thread would never answer). startServer(files) -> {base, close()};
// dataServer(tag, size) -> {file, bytes, server}: a file of `size` pseudo-random bytes served as
// data.bin for the calling test file (node:test hooks start the server and remove the file).
//   /f/NAME        the file, with Range support (206), ETag and Last-Modified
//   /norange/NAME  ignores Range (200 with the whole body)
//   /short/NAME    206 whose body stops halfway (the connection is cut)
//   /stallbody/NAME 206 whose body stops halfway (the connection stays open, silent)
//   /changing/NAME ETag changes after the first request
//   /shrinking/NAME answers the probe, then 416 for every range
//   /hidden/NAME   206 without Content-Range (as a CORS server that does not expose it looks)
//   /stall/NAME    accepts the connection and never answers
//   /stallread/NAME answers the probe (bytes 0-1), never answers a read after it
//   /count/NAME    as /f, and GET /hits/NAME tells how many range requests /count/NAME had,
//                  GET /bytes/NAME how many body bytes they asked for
//   anything else  404
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { before, after } from 'node:test';
import http from 'node:http';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export function dataServer(tag, size) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `${tag}-`));
  const d = { dir, file: path.join(dir, 'data.bin'), bytes: new Uint8Array(size), server: null };
  for (let i = 0; i < size; i++) d.bytes[i] = (i * 2654435761) >>> 24;
  fs.writeFileSync(d.file, d.bytes);
  before(async () => {
    d.server = await startServer({ 'data.bin': d.file });
  });
  after(() => {
    d.server?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  return d;
}

export async function startServer(files) {
  const w = new Worker(new URL(import.meta.url), { workerData: { files } });
  const port = await new Promise((resolve, reject) => {
    w.once('message', resolve);
    w.once('error', reject);
  });
  return { base: `http://127.0.0.1:${port}`, close: () => w.terminate() };
}

function serve(files) {
  const hits = new Map(); // per url
  const bytes = new Map(); // per url: range bytes
  const server = http.createServer((req, res) => {
    const m =
      /^\/(f|norange|short|stallbody|changing|shrinking|hidden|stall|stallread|count|hits|bytes)\/([^/]+)$/.exec(
        req.url,
      );
    const path = m && files[decodeURIComponent(m[2])];
    if (!path) {
      res.writeHead(404).end('not found');
      return;
    }
    const mode = m[1];
    if (mode === 'hits') {
      res.writeHead(200).end(String(hits.get(`/count/${m[2]}`) ?? 0));
      return;
    }
    if (mode === 'bytes') {
      res.writeHead(200).end(String(bytes.get(`/count/${m[2]}`) ?? 0));
      return;
    }
    if (mode === 'stall') return; // the request stays open until the client gives up
    const size = fs.statSync(path).size;
    const n = hits.get(req.url) ?? 0;
    hits.set(req.url, n + 1);
    const etag = mode === 'changing' ? `"v${n}"` : '"v0"';
    const common = { ETag: etag, 'Last-Modified': 'Mon, 01 Jan 2024 00:00:00 GMT', 'Accept-Ranges': 'bytes' };
    const r = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? '');
    if (mode === 'norange' || !r) {
      res.writeHead(200, { ...common, 'Content-Length': size });
      if (req.method === 'HEAD') res.end();
      else fs.createReadStream(path).pipe(res);
      return;
    }
    const first = Number(r[1]),
      last = Math.min(Number(r[2]), size - 1);
    if (first >= size || (mode === 'shrinking' && first > 0)) {
      res.writeHead(416, { 'Content-Range': `bytes */${size}` }).end();
      return;
    }
    if (mode === 'stallread' && first > 0) return;
    const len = last - first + 1;
    bytes.set(req.url, (bytes.get(req.url) ?? 0) + len);
    res.writeHead(206, {
      ...common,
      'Content-Length': len,
      ...(mode === 'hidden' ? {} : { 'Content-Range': `bytes ${first}-${last}/${size}` }),
    });
    if ((mode === 'short' || mode === 'stallbody') && first > 0) {
      const fd = fs.openSync(path, 'r');
      const half = Buffer.alloc(Math.max(1, len >> 1));
      fs.readSync(fd, half, 0, half.length, first);
      fs.closeSync(fd);
      res.write(half, () => mode === 'short' && res.destroy());
      return;
    }
    fs.createReadStream(path, { start: first, end: last }).pipe(res);
  });
  server.listen(0, '127.0.0.1', () => parentPort.postMessage(server.address().port));
}

if (!isMainThread && workerData?.files) serve(workerData.files);
