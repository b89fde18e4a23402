// The reader thread's read-ahead windows (js/reader_worker.js) reuse their buffers: a window a
// read has awaited gives its buffer to the next window at once, one dropped while its request
// is still in flight only once that request has ended. A scan that jumps away from windows
// still arriving (slowly) must not get their late bytes: the scan after the jump is checked
// byte for byte while those old requests keep writing.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Worker } from 'node:worker_threads';
import { HostFiles, CHUNK } from '../../js/hostfile.js';

const MiB = 1 << 20;
const SIZE = 64 * MiB;
const SLOW = 32 * MiB; // bodies below this offset come in 4 pieces, later windows slower
const byteAt = (i) => Math.imul(i, 2654435761) >>> 24;

// in its own thread: the host-file table blocks the test's thread during a read
const SERVER = `
const http = require('node:http');
const { parentPort, workerData: { size, slow, chunk } } = require('node:worker_threads');
const byteAt = ${byteAt.toString()};
const server = http.createServer((req, res) => {
  const [, a, b] = /bytes=(\\d+)-(\\d+)/.exec(req.headers.range ?? '') ?? [];
  if (a === undefined) return res.writeHead(200, { 'Content-Length': size }).end();
  const from = Number(a), to = Math.min(Number(b), size - 1), body = Buffer.alloc(to - from + 1);
  for (let k = 0; k < body.length; k++) body[k] = byteAt(from + k);
  res.writeHead(206, { 'Content-Range': 'bytes ' + from + '-' + to + '/' + size, 'Content-Length': body.length, ETag: '"v"' });
  const pause = from < slow ? (Math.floor(from / chunk) + 1) * 150 : 0;
  const piece = Math.ceil(body.length / 4);
  const send = (k) => {
    if (k * piece >= body.length) return res.end();
    res.write(body.subarray(k * piece, (k + 1) * piece));
    setTimeout(() => send(k + 1), pause);
  };
  send(0);
});
server.listen(0, '127.0.0.1', () => parentPort.postMessage(server.address().port));
`;

let server, base;
before(async () => {
  server = new Worker(SERVER, { eval: true, workerData: { size: SIZE, slow: SLOW, chunk: CHUNK } });
  base = `http://127.0.0.1:${await new Promise((resolve, reject) => server.once('message', resolve).once('error', reject))}`;
});
after(() => server?.terminate());

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function check(host, h, off, len) {
  const dst = new Uint8Array(len);
  host.read(h, off, dst);
  for (let k = 0; k < len; k++) if (dst[k] !== byteAt(off + k)) assert.fail(`byte ${off + k}: ${dst[k]}, want ${byteAt(off + k)}`);
}

test('a scan that jumps away from windows still in flight reads exact bytes while they arrive', { timeout: 60000 }, async () => {
  const host = new HostFiles({ cacheBytes: 0 });
  const h = await host.open(`${base}/data.bin`);
  // a scan starts: windows at 1, 9, 17 and 25 MiB, the later ones slower (up to 2.4 s)
  check(host, h, 0, MiB);
  check(host, h, MiB, MiB);
  // a jump, then a scan there: the old windows are dropped, three of them still arriving
  check(host, h, 40 * MiB, MiB);
  for (let off = 41 * MiB; off < SIZE; off += MiB) {
    check(host, h, off, MiB);
    await sleep(150); // (under the reader's 1 s idle bound: the windows stay)
  }
  host.closeAll();
});
