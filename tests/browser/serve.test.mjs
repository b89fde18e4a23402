// tools/serve.mjs, the demo's static server: COOP/COEP (or not), HTTP Range
// (the package's URL source reads model files by range), no escaping the
// served folders.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startServer, parseRange, modelFiles } from '../../tools/serve.mjs';

let dir, file, iso, plain;
const bytes = Buffer.from(Array.from({ length: 1000 }, (_, i) => (i * 7) & 255));

before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'oxinfer-serve-'));
  file = path.join(dir, 'm.gguf');
  fs.writeFileSync(file, bytes);
  fs.writeFileSync(path.join(dir, 'index.html'), '<!doctype html><p>hi</p>');
  iso = await startServer({ files: modelFiles([file]), mounts: { '/': dir } });
  plain = await startServer({ files: modelFiles([file]), mounts: { '/': dir }, isolate: false });
});

after(() => {
  iso?.close();
  plain?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

test('isolation headers on by default, off on request', async () => {
  const a = await fetch(`${iso.url}/`);
  assert.equal(a.status, 200);
  assert.equal(a.headers.get('cross-origin-opener-policy'), 'same-origin');
  assert.equal(a.headers.get('cross-origin-embedder-policy'), 'require-corp');
  assert.match(a.headers.get('content-type'), /text\/html/);
  assert.equal(await a.text(), '<!doctype html><p>hi</p>');
  const b = await fetch(`${plain.url}/`);
  assert.equal(b.status, 200);
  assert.equal(b.headers.get('cross-origin-opener-policy'), null);
  assert.equal(b.headers.get('cross-origin-embedder-policy'), null);
});

test('Range requests: 206 with the exact bytes, suffix ranges, 416 past the end', async () => {
  const url = `${iso.url}/models/m.gguf`;
  const whole = await fetch(url);
  assert.equal(whole.status, 200);
  assert.equal(whole.headers.get('accept-ranges'), 'bytes');
  assert.equal(Number(whole.headers.get('content-length')), 1000);
  assert.deepEqual(Buffer.from(await whole.arrayBuffer()), bytes);

  const r = await fetch(url, { headers: { Range: 'bytes=10-19' } });
  assert.equal(r.status, 206);
  assert.equal(r.headers.get('content-range'), 'bytes 10-19/1000');
  assert.deepEqual(Buffer.from(await r.arrayBuffer()), bytes.subarray(10, 20));

  const open = await fetch(url, { headers: { Range: 'bytes=990-' } });
  assert.equal(open.status, 206);
  assert.deepEqual(Buffer.from(await open.arrayBuffer()), bytes.subarray(990));

  const suffix = await fetch(url, { headers: { Range: 'bytes=-5' } });
  assert.equal(suffix.status, 206);
  assert.equal(suffix.headers.get('content-range'), 'bytes 995-999/1000');
  assert.deepEqual(Buffer.from(await suffix.arrayBuffer()), bytes.subarray(995));

  const clipped = await fetch(url, { headers: { Range: 'bytes=998-5000' } });
  assert.equal(clipped.status, 206);
  assert.equal(clipped.headers.get('content-range'), 'bytes 998-999/1000');

  const past = await fetch(url, { headers: { Range: 'bytes=1000-1001' } });
  assert.equal(past.status, 416);
  assert.equal(past.headers.get('content-range'), 'bytes */1000');
  await past.arrayBuffer();

  const head = await fetch(url, { method: 'HEAD' });
  assert.equal(head.status, 200);
  assert.equal(Number(head.headers.get('content-length')), 1000);
});

test('parseRange edge cases', () => {
  assert.equal(parseRange(undefined, 10), null);
  assert.equal(parseRange('bytes=0-1,3-4', 10), null); // multi-range: whole file
  assert.equal(parseRange('items=0-1', 10), null);
  assert.deepEqual(parseRange('bytes=0-0', 10), [0, 0]);
  assert.deepEqual(parseRange('bytes=-20', 10), [0, 9]);
  assert.equal(parseRange('bytes=5-4', 10), 'bad');
  assert.equal(parseRange('bytes=-0', 10), 'bad');
  assert.equal(parseRange('bytes=0-', 0), 'bad');
});

test('404 for missing files and for paths escaping the served folder', async () => {
  assert.equal((await fetch(`${iso.url}/nope.js`)).status, 404);
  const esc = await fetch(`${iso.url}/%2e%2e/%2e%2e/etc/passwd`);
  assert.equal(esc.status, 404);
  const esc2 = await fetch(`${iso.url}/..%2f..%2fetc%2fpasswd`);
  assert.equal(esc2.status, 404);
  assert.equal((await fetch(`${iso.url}/`, { method: 'POST' })).status, 405);
  assert.throws(() => modelFiles([path.join(dir, 'absent.gguf')]), /not found/);
});
