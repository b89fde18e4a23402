// cache_server.mjs — a local server for the cache tests (tests/node/cache.test.mjs,
// tests/browser/cache.test.mjs, tests/browser/coi.test.mjs) that behaves like a model host
// and can misbehave on request.
//
//   startCacheServer({ isolate, pages }) -> { url, files, plan, log, close() }
//   files: Map path -> { bytes } or { size, byteAt(off) } (a virtual file), plus etag
//   plan.dropAfter: cut the next download's connection after that many body bytes (once)
//   plan.slow: send downloads at that many bytes per 10 ms
//   plan.partialFrom: answer the next whole-file request 206 with the bytes from there (once)
//   a file without etag is served with neither ETag nor Last-Modified
//   log: [{url, range}] of the model requests
// A "download" is a whole-file or open-ended range request (`bytes=N-`); closed ranges
// (`bytes=a-b`, the engine's reads) are always answered at once and in full.
// Also serves js/, dist/ and node_modules/ of the repo, `pages` (path -> HTML) and `aliases`
// (path -> a file under js/); isolate adds COOP/COEP to every answer, `headers` its own.
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const TYPES = {
  '.js': 'text/javascript',
  '.mjs': 'text/javascript',
  '.wasm': 'application/wasm',
  '.json': 'application/json',
  '.html': 'text/html',
};

export function bodyOf(f, first, last) {
  if (f.bytes) return f.bytes.subarray(first, last + 1);
  const b = Buffer.alloc(last - first + 1);
  for (let i = 0; i < b.length; i++) b[i] = f.byteAt(first + i);
  return b;
}

export async function startCacheServer({ isolate = false, pages = {}, aliases = {}, headers: extra = {} } = {}) {
  const files = new Map();
  const log = [];
  const plan = { dropAfter: 0, slow: 0, partialFrom: 0 };
  const iso = {
    ...(isolate ? { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' } : {}),
    ...extra,
  };

  function model(req, res, f) {
    const size = f.bytes ? f.bytes.length : f.size;
    const head = { ...iso, ...(f.etag ? { ETag: f.etag } : {}), 'Accept-Ranges': 'bytes', 'Cache-Control': 'no-store' };
    const m = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? '');
    let first = 0,
      last = size - 1,
      status = 200;
    if (!m && plan.partialFrom > 0) {
      [first, status, plan.partialFrom] = [plan.partialFrom, 206, 0];
      head['Content-Range'] = `bytes ${first}-${last}/${size}`;
    }
    if (m) {
      first = Number(m[1]);
      if (m[2]) last = Math.min(size - 1, Number(m[2]));
      if (first >= size) return void res.writeHead(416, { ...head, 'Content-Range': `bytes */${size}` }).end();
      status = 206;
      head['Content-Range'] = `bytes ${first}-${last}/${size}`;
    }
    res.writeHead(status, { ...head, 'Content-Length': last - first + 1 });
    const data = bodyOf(f, first, last);
    const download = !m || !m[2];
    const drop = download && plan.dropAfter > 0 ? plan.dropAfter : 0;
    if (drop) plan.dropAfter = 0;
    // a FIN after a pause, not a reset: the bytes sent reach the reader, then the body ends short
    if (drop && drop < data.length)
      return void res.write(data.subarray(0, drop), () => setTimeout(() => res.socket.end(), 300));
    if (!(download && plan.slow)) return void res.end(data);
    let at = 0;
    const pump = () => {
      if (res.destroyed) return;
      if (at >= data.length) return void res.end();
      res.write(data.subarray(at, (at += plan.slow)));
      setTimeout(pump, 10);
    };
    pump();
  }

  const server = http.createServer((req, res) => {
    const p = new URL(req.url, 'http://x').pathname;
    const f = files.get(p);
    if (f) {
      log.push({ url: p, range: req.headers.range ?? null });
      return model(req, res, f);
    }
    const headers = { ...iso, 'Cache-Control': 'no-store' };
    if (pages[p] !== undefined)
      return void res.writeHead(200, { ...headers, 'Content-Type': 'text/html' }).end(pages[p]);
    if (p === '/favicon.ico') return void res.writeHead(204, headers).end();
    const top = aliases[p] ? 'js' : p.split('/')[1];
    const file = path.join(ROOT, path.normalize(decodeURIComponent(aliases[p] ?? p)));
    if (
      !['js', 'dist', 'node_modules'].includes(top) ||
      !file.startsWith(ROOT + path.sep) ||
      !fs.existsSync(file) ||
      !fs.statSync(file).isFile()
    )
      return void res.writeHead(404, headers).end('not found');
    res.writeHead(200, { ...headers, 'Content-Type': TYPES[path.extname(file)] ?? 'application/octet-stream' });
    fs.createReadStream(file).pipe(res);
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    files,
    plan,
    log,
    close() {
      server.close();
      server.closeAllConnections();
    },
  };
}

// The import map a test page needs for the package's bare imports.
export const IMPORT_MAP = `<script type="importmap">${JSON.stringify({
  imports: {
    '@huggingface/jinja': '/node_modules/@huggingface/jinja/dist/index.js',
    '@noble/hashes/': '/node_modules/@noble/hashes/',
  },
})}</script>`;
