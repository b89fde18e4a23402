// Every host operation is bounded (js/host/hostfile.js): a server that accepts and never answers
// ends the probe and the reads in IO naming the file and what timed out; the abort flag and an
// AbortSignal end the same waits in ABORTED at once; the helper thread's read-ahead gives the
// same bytes as direct reads, for sequential scans with gaps and for random reads, a scan
// streamed by one request; a streamed body cut or stalled midway fails the read that needs it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { Worker } from 'node:worker_threads';
import { HostFiles } from '../../js/host/hostfile.js';
import { CHUNK } from '../../js/host/copy.js';
import { OxError } from '../../js/shared/errors.js';
import { dataServer } from './hostfile_server.mjs';

const SIZE = 5 * CHUNK + 77;
const fx = dataServer('oxbounds', SIZE);
const { bytes } = fx;

const isHostError = (code, pattern) => (e) => {
  assert.ok(e instanceof OxError, `not a OxError: ${e}`);
  assert.equal(e.code, code, e.message);
  assert.match(e.message, pattern);
  return true;
};

// sets flag[0] = 1 after ms from another thread (the test's own thread may be blocked in a read)
function raiseLater(flag, ms) {
  return new Worker(
    `const { workerData: f } = require('node:worker_threads'); setTimeout(() => { Atomics.store(f, 0, 1); Atomics.notify(f, 0); }, ${ms});`,
    { eval: true, workerData: flag },
  );
}

test('a server that never answers the probe: IO after timeoutMs, naming the file and the request', async () => {
  const host = new HostFiles({ timeoutMs: 300 });
  const t0 = Date.now();
  await assert.rejects(
    host.open(`${fx.server.base}/stall/data.bin`),
    isHostError('IO', /^data\.bin: first request \(bytes 0-1\): no answer in 300 ms$/),
  );
  assert.ok(Date.now() - t0 < 5000);
  host.closeAll();
});

test('a stalled probe ends in ABORTED on the signal or the abort flag, long before the timeout', async () => {
  const ac = new AbortController();
  const host = new HostFiles({ timeoutMs: 60000, signal: ac.signal });
  setTimeout(() => ac.abort(), 100);
  const t0 = Date.now();
  await assert.rejects(
    host.open(`${fx.server.base}/stall/data.bin`),
    isHostError('ABORTED', /data\.bin: first request \(bytes 0-1\): aborted/),
  );
  assert.ok(Date.now() - t0 < 5000);

  const flag = new Int32Array(new SharedArrayBuffer(4));
  const host2 = new HostFiles({ timeoutMs: 60000, abortFlag: flag });
  setTimeout(() => Atomics.store(flag, 0, 1), 100);
  await assert.rejects(host2.open(`${fx.server.base}/stall/data.bin`), isHostError('ABORTED', /aborted/));
  // already aborted: nothing is even tried
  await assert.rejects(host2.open(`${fx.server.base}/f/data.bin`), isHostError('ABORTED', /aborted/));
});

test('a read the server never answers: IO after timeoutMs; the next file still reads', async () => {
  const host = new HostFiles({ timeoutMs: 400 });
  const h = await host.open(`${fx.server.base}/stallread/data.bin`);
  assert.equal(host.size(h), SIZE);
  const t0 = Date.now();
  assert.throws(
    () => host.read(h, 1000, new Uint8Array(10)),
    isHostError('IO', /^data\.bin: bytes 1000-1009: no answer in 400 ms$/),
  );
  assert.ok(Date.now() - t0 < 6000);
  assert.equal(host.readInto(h, 2000, new Uint8Array(10)), -1);
  host.closeAll();
  const host2 = new HostFiles({ timeoutMs: 400 });
  const ok = await host2.open(`${fx.server.base}/f/data.bin`);
  const dst = new Uint8Array(10);
  host2.read(ok, 1000, dst);
  assert.deepEqual(dst, bytes.slice(1000, 1010));
  host2.closeAll();
});

test('a blocked read ends in ABORTED within a moment of the abort flag; the table does not reuse the abandoned thread', async () => {
  const flag = new Int32Array(new SharedArrayBuffer(4));
  const host = new HostFiles({ timeoutMs: 60000, abortFlag: flag });
  const h = await host.open(`${fx.server.base}/stallread/data.bin`);
  const w = raiseLater(flag, 200);
  const t0 = Date.now();
  assert.throws(
    () => host.read(h, 1000, new Uint8Array(10)),
    isHostError('ABORTED', /data\.bin: read of bytes 1000-1009: aborted/),
  );
  const ms = Date.now() - t0;
  assert.ok(ms >= 150 && ms < 3000, `aborted after ${ms} ms`);
  Atomics.store(flag, 0, 0);
  assert.throws(() => host.read(h, 3000, new Uint8Array(10)), isHostError('IO', /an earlier read was aborted/));
  await w.terminate();
  host.closeAll();
});

test("read-ahead: a sequential scan with gaps, small reads and jumps gives the file's bytes, the scan in one streamed request", async () => {
  const host = new HostFiles({ cacheBytes: 0 });
  const h = await host.open(`${fx.server.base}/count/data.bin`);
  // a whole-file scan in CHUNK pieces: the probe, the first piece on its own, then one request
  // streams the rest into the windows
  const all = new Uint8Array(SIZE);
  host.read(h, 0, all);
  assert.deepEqual(all, bytes);
  const hits = Number(
    await new Promise((resolve, reject) =>
      http
        .get(`${fx.server.base}/hits/data.bin`, { agent: false }, (r) => {
          let t = '';
          r.on('data', (b) => (t += b)).on('end', () => resolve(t));
        })
        .on('error', reject),
    ),
  );
  assert.equal(hits, 3);
  // tensors as a model file lays them out: big reads separated by small gaps, small reads
  // between them, then random rows (no read-ahead) and a jump back
  const spans = [
    [100, CHUNK + 5],
    [CHUNK + 200, 3 * CHUNK],
    [4 * CHUNK + 300, 4096],
    [4 * CHUNK + 5000, CHUNK - 6000],
    [77, 10],
    [3 * CHUNK + 1, 999],
    [5 * CHUNK, 77],
    [0, CHUNK],
  ];
  for (const [off, len] of spans) {
    const dst = new Uint8Array(len);
    host.read(h, off, dst);
    assert.deepEqual(dst, bytes.subarray(off, off + len), `off ${off} len ${len}`);
  }
  host.closeAll();
});

test('a scan whose streamed body is cut or stalls midway: IO naming the file; the table still reads', async () => {
  const cases = [
    ['short', /^data\.bin: short body/],
    ['stallbody', new RegExp(`^data\\.bin: bytes ${CHUNK}-${SIZE - 1}: no answer in 400 ms$`)],
  ];
  for (const [mode, pattern] of cases) {
    const host = new HostFiles({ cacheBytes: 0, timeoutMs: 400 });
    const h = await host.open(`${fx.server.base}/${mode}/data.bin`);
    const first = new Uint8Array(CHUNK);
    host.read(h, 0, first); // alone: the scan starts with the next read
    assert.deepEqual(first, bytes.subarray(0, CHUNK));
    const t0 = Date.now();
    assert.throws(
      () => {
        for (let off = CHUNK; off < SIZE; off += CHUNK) {
          const dst = new Uint8Array(Math.min(CHUNK, SIZE - off));
          host.read(h, off, dst);
          assert.deepEqual(dst, bytes.subarray(off, off + dst.length), `${mode}: bytes at ${off}`);
        }
      },
      isHostError('IO', pattern),
    );
    assert.ok(Date.now() - t0 < 6000);
    const again = new Uint8Array(100);
    host.read(h, 0, again);
    assert.deepEqual(again, bytes.subarray(0, 100), mode);
    host.closeAll();
  }
});
