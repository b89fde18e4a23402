#!/usr/bin/env node
// Static server for the demo page and the browser tests, on 127.0.0.1.
//
// Sends COOP/COEP (cross-origin isolation: SharedArrayBuffer, so the threaded
// wasm build can run) unless isolation is off, and answers HTTP Range
// requests (the package's URL source reads model files by range).
//
//   node tools/serve.mjs [--port 8080] [--no-isolation] [--model FILE]...
//
// Serves web/ at /, js/ at /js/, dist/ at /dist/, @huggingface/jinja, marked and dompurify
// under /node_modules/, and each --model FILE at /models/NAME.
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

const MIME = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.wasm': 'application/wasm',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.map': 'application/json',
  '.txt': 'text/plain; charset=utf-8',
};

// The demo's mounts: URL prefix -> directory.
export function demoMounts(root = ROOT) {
  return {
    '/js/': path.join(root, 'js'),
    '/dist/': path.join(root, 'dist'),
    '/node_modules/@huggingface/jinja/': path.join(root, 'node_modules/@huggingface/jinja'),
    // the page's markdown renderer and sanitizer (web/markdown.js)
    '/node_modules/marked/lib/': path.join(root, 'node_modules/marked/lib'),
    '/node_modules/dompurify/dist/': path.join(root, 'node_modules/dompurify/dist'),
    // threads on hosts that send no COOP/COEP (docs/deploy.md), served above the page
    '/coi-serviceworker.js': path.join(root, 'js/main/coi-serviceworker.js'),
    '/': path.join(root, 'web'),
  };
}

// "bytes=a-b" -> [start, end] (inclusive), null for no/ignored header, 'bad' if unsatisfiable.
export function parseRange(header, size) {
  if (!header) return null;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === '' && m[2] === '')) return null; // multi-range or junk: send the whole file
  let start, end;
  if (m[1] === '') {
    // suffix range: the last N bytes
    const n = Number(m[2]);
    if (n === 0) return 'bad';
    start = Math.max(0, size - n);
    end = size - 1;
  } else {
    start = Number(m[1]);
    end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  }
  if (start >= size || start > end) return 'bad';
  return [start, end];
}

function resolveFile(urlPath, files, mounts) {
  if (files[urlPath]) return files[urlPath];
  // longest prefix first, so '/' is the fallback
  const prefixes = Object.keys(mounts).sort((a, b) => b.length - a.length);
  for (const prefix of prefixes) {
    if (!urlPath.startsWith(prefix)) continue;
    const dir = path.resolve(mounts[prefix]);
    let rel;
    try {
      rel = decodeURIComponent(urlPath.slice(prefix.length));
    } catch {
      return null;
    }
    let f = path.resolve(dir, '.' + path.sep + rel);
    if (f !== dir && !f.startsWith(dir + path.sep)) return null; // no escaping the mount
    if (fs.existsSync(f) && fs.statSync(f).isDirectory()) f = path.join(f, 'index.html');
    return f;
  }
  return null;
}

// Start a server. files: exact URL path -> file; mounts: URL prefix -> directory.
// isolate: send COOP/COEP. log: function for one line per request (or null).
export function startServer({
  files = {},
  mounts = demoMounts(),
  isolate = true,
  port = 0,
  host = '127.0.0.1',
  log = null,
} = {}) {
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://localhost');
    const headers = { 'Cache-Control': 'no-store', 'Accept-Ranges': 'bytes' };
    if (isolate) {
      headers['Cross-Origin-Opener-Policy'] = 'same-origin';
      headers['Cross-Origin-Embedder-Policy'] = 'require-corp';
    }
    headers['Cross-Origin-Resource-Policy'] = 'same-origin';
    const done = (code, body, extra = {}) => {
      res.writeHead(code, { ...headers, 'Content-Type': 'text/plain; charset=utf-8', ...extra });
      res.end(req.method === 'HEAD' ? undefined : body);
      if (log) log(`${code} ${req.method} ${url.pathname}`);
    };
    if (req.method !== 'GET' && req.method !== 'HEAD') return done(405, 'method not allowed\n', { Allow: 'GET, HEAD' });
    const file = resolveFile(url.pathname, files, mounts);
    let st = null;
    try {
      st = file && fs.statSync(file);
    } catch {}
    if (!st || !st.isFile()) return done(404, `not found: ${url.pathname}\n`);
    const type = MIME[path.extname(file).toLowerCase()] || 'application/octet-stream';
    const range = parseRange(req.headers.range, st.size);
    if (range === 'bad') return done(416, 'range not satisfiable\n', { 'Content-Range': `bytes */${st.size}` });
    const [start, end] = range || [0, st.size - 1];
    const len = st.size === 0 ? 0 : end - start + 1;
    res.writeHead(range ? 206 : 200, {
      ...headers,
      'Content-Type': type,
      'Content-Length': len,
      ...(range ? { 'Content-Range': `bytes ${start}-${end}/${st.size}` } : {}),
    });
    if (log) log(`${range ? 206 : 200} ${req.method} ${url.pathname}${range ? ` ${start}-${end}` : ''}`);
    if (req.method === 'HEAD' || len === 0) return res.end();
    const stream = fs.createReadStream(file, { start, end, highWaterMark: 1 << 20 }); // (the 64 KiB default serves loopback at ~550 MB/s, 1 MiB at ~1.2 GB/s);
    stream.on('error', () => res.destroy());
    stream.pipe(res);
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.url = `http://${host}:${server.address().port}`;
      resolve(server);
    });
  });
}

function parseArgs(argv) {
  const a = { port: 8080, isolate: true, models: [], quiet: false };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i];
    if (k === '--port') a.port = Number(argv[++i]);
    else if (k === '--no-isolation') a.isolate = false;
    else if (k === '--model') a.models.push(argv[++i]);
    else if (k === '--quiet') a.quiet = true;
    else if (k === '-h' || k === '--help') {
      console.log('usage: node tools/serve.mjs [--port N] [--no-isolation] [--model FILE]... [--quiet]');
      process.exit(0);
    } else throw new Error(`serve: unknown option ${k}`);
  }
  if (!Number.isInteger(a.port) || a.port < 0 || a.port > 65535) throw new Error('serve: --port must be 0..65535');
  return a;
}

// Model files served under /models/<basename>.
export function modelFiles(models) {
  const files = {};
  for (const m of models) {
    const f = path.resolve(m);
    if (!fs.existsSync(f) || !fs.statSync(f).isFile()) throw new Error(`serve: model file not found: ${m}`);
    files['/models/' + encodeURIComponent(path.basename(f))] = f;
  }
  return files;
}

if (import.meta.url === pathToFileURL(process.argv[1] || '').href) {
  try {
    const a = parseArgs(process.argv.slice(2));
    const files = modelFiles(a.models);
    const server = await startServer({
      files,
      isolate: a.isolate,
      port: a.port,
      log: a.quiet ? null : (l) => console.log(l),
    });
    console.log(
      `serving ${path.join(ROOT, 'web')} at ${server.url}/ (${a.isolate ? 'cross-origin isolated' : 'NOT isolated: single-threaded'})`,
    );
    for (const p of Object.keys(files)) console.log(`  model: ${server.url}/?model=${encodeURIComponent(p)}`);
  } catch (e) {
    console.error(e.message || e);
    process.exit(1);
  }
}
