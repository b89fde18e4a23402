// A local stand-in for Hugging Face, for the demo's catalog tests: two servers on 127.0.0.1.
//   hub  GET|HEAD /<owner>/<repo>/resolve/main/<file>  -> 302 to the CDN (another port, so
//        another origin), with CORS headers on the redirect as the real hub sends them
//   cdn  GET|HEAD /blobs/<etag>  -> the file, with Range (206 / 416), ETag, Accept-Ranges,
//        Content-Length, CORS (Access-Control-Allow-Origin: *, exposed Content-Range, ETag,
//        Content-Length, Accept-Ranges) and answers to preflights
// Either server answers OPTIONS preflights (a Range header may need one). The CDN sends its
// body in slices with a pause between them (slowMs), so a page sees the download progress.
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import { parseRange } from '../../tools/serve.mjs';

const CORS = {
  'Access-Control-Allow-Origin': '*',
  'Access-Control-Allow-Headers': 'Range, If-Range, If-None-Match, Content-Type',
  'Access-Control-Allow-Methods': 'GET, HEAD, OPTIONS',
  'Access-Control-Expose-Headers': 'Content-Range, Content-Length, ETag, Accept-Ranges, Last-Modified, X-Repo-Commit',
  'Cross-Origin-Resource-Policy': 'cross-origin',
};

function listen(handler) {
  const s = http.createServer(handler);
  return new Promise((resolve, reject) => {
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      s.url = `http://127.0.0.1:${s.address().port}`;
      resolve(s);
    });
  });
}

/**
 * files: { 'owner/repo/file.gguf': localPath }. Returns { hub, cdn, log, close() }; log lists
 * every request as 'hub GET /path' / 'cdn GET /blobs/x bytes=0-' lines.
 */
export async function startHfServer(files, { slowMs = 15, sliceBytes = 256 << 10 } = {}) {
  const log = [];
  const blobs = new Map(); // etag -> path
  const etagOf = new Map();
  for (const [name, p] of Object.entries(files)) {
    const st = fs.statSync(p);
    const etag = crypto.createHash('sha256').update(`${name}:${st.size}:${st.mtimeMs}`).digest('hex').slice(0, 32);
    blobs.set(etag, p);
    etagOf.set(name, etag);
  }
  const cdn = await listen((req, res) => {
    const url = new URL(req.url, 'http://x');
    log.push(`cdn ${req.method} ${url.pathname}${req.headers.range ? ` ${req.headers.range}` : ''}`);
    if (req.method === 'OPTIONS') {
      res.writeHead(204, CORS);
      return res.end();
    }
    const etag = url.pathname.replace(/^\/blobs\//, '');
    const file = blobs.get(etag);
    if (!file) {
      res.writeHead(404, { ...CORS, 'Content-Type': 'text/plain' });
      return res.end('Entry not found');
    }
    const size = fs.statSync(file).size;
    const range = parseRange(req.headers.range, size);
    const head = {
      ...CORS,
      ETag: `"${etag}"`,
      'Accept-Ranges': 'bytes',
      'Content-Type': 'application/octet-stream',
      'Cache-Control': 'no-store',
    };
    if (range === 'bad') {
      res.writeHead(416, { ...head, 'Content-Range': `bytes */${size}` });
      return res.end();
    }
    const [start, end] = range || [0, size - 1];
    res.writeHead(range ? 206 : 200, {
      ...head,
      'Content-Length': end - start + 1,
      ...(range ? { 'Content-Range': `bytes ${start}-${end}/${size}` } : {}),
    });
    if (req.method === 'HEAD') return res.end();
    const fd = fs.openSync(file, 'r');
    let pos = start,
      closed = false;
    res.on('close', () => {
      closed = true;
    });
    const pump = () => {
      if (closed || pos > end) {
        fs.closeSync(fd);
        if (!closed) res.end();
        return;
      }
      const n = Math.min(sliceBytes, end - pos + 1),
        buf = Buffer.alloc(n);
      fs.readSync(fd, buf, 0, n, pos);
      pos += n;
      // small reads (headers, PLE rows) go at once; only the bulk download is paced
      if (res.write(buf) && end - start < sliceBytes) pump();
      else setTimeout(pump, slowMs);
    };
    pump();
  });
  const hub = await listen((req, res) => {
    const url = new URL(req.url, 'http://x');
    log.push(`hub ${req.method} ${url.pathname}`);
    if (req.method === 'OPTIONS') {
      res.writeHead(204, CORS);
      return res.end();
    }
    const m = /^\/([^/]+\/[^/]+)\/resolve\/main\/(.+)$/.exec(url.pathname);
    const etag = m && etagOf.get(`${m[1]}/${decodeURIComponent(m[2])}`);
    if (!etag) {
      res.writeHead(404, { ...CORS, 'Content-Type': 'text/plain', 'X-Error-Code': 'EntryNotFound' });
      return res.end('Entry not found');
    }
    res.writeHead(302, {
      ...CORS,
      Location: `${cdn.url}/blobs/${etag}`,
      ETag: `"${etag}"`,
      'X-Repo-Commit': '0'.repeat(40),
    });
    res.end();
  });
  return {
    hub,
    cdn,
    log,
    close() {
      hub.close();
      cdn.close();
    },
  };
}
