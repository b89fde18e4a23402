// fetchRange over fetch() (js/host/hostfile.js), the read path of the browser's reader thread: a
// byte-stream body is read with a BYOB reader into pooled staging buffers (no chunk per read
// left to the GC). Exact bytes under concurrent reads that reuse the pool, into private and
// shared memory; a body that fails mid-read; the default-reader fallback of a body that is
// not a byte stream.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fetchRange } from '../../js/host/http.js';
import { OxError } from '../../js/shared/errors.js';
import { dataServer } from './hostfile_server.mjs';

const SIZE = (5 << 20) + 4321;
const fx = dataServer('oxfetch', SIZE);
const { bytes } = fx;
const want = { size: SIZE, validator: null };

test('concurrent Range reads give the exact bytes, round after round (pooled staging buffers)', async () => {
  const url = `${fx.server.base}/f/data.bin`;
  for (let round = 0; round < 3; round++) {
    const spans = Array.from({ length: 8 }, (_, i) => {
      const len = [1, 4096, (1 << 20) - 1, 1 << 20, (1 << 20) + 1, (3 << 20) + 17, 777, 2 << 20][i];
      return [(i * 611953 + round * 104729) % (SIZE - len), len];
    });
    const got = await Promise.all(spans.map(([off, len]) => fetchRange('data.bin', url, off, len, want, 30000)));
    spans.forEach(([off, len], i) =>
      assert.deepEqual(got[i], bytes.subarray(off, off + len), `round ${round} off ${off} len ${len}`),
    );
  }
  // into a view of shared memory (the reader thread's answer block), at an offset
  const shared = new Uint8Array(new SharedArrayBuffer(3 << 20));
  const into = shared.subarray(5, 5 + (2 << 20) + 3);
  assert.equal(await fetchRange('data.bin', url, 99, into.length, want, 30000, into), into);
  assert.deepEqual(shared.slice(5, 5 + into.length), bytes.slice(99, 99 + into.length));
  assert.equal(shared[4], 0);
});

test('a body cut mid-read is an IO error, and the reads after it are exact', async () => {
  await assert.rejects(
    fetchRange('data.bin', `${fx.server.base}/short/data.bin`, 100, 3 << 20, want, 30000),
    (e) => e instanceof OxError && e.code === 'IO' && /data\.bin: short body/.test(e.message),
  );
  const url = `${fx.server.base}/f/data.bin`;
  const got = await Promise.all([0, 1, 2].map((i) => fetchRange('data.bin', url, i * 1000003, 1500000, want, 30000)));
  got.forEach((g, i) => assert.deepEqual(g, bytes.subarray(i * 1000003, i * 1000003 + 1500000)));
});

// fetch() stubbed to answer a 206 with `body` (a ReadableStream) for bytes `off`..
async function withBody(makeBody, fn) {
  const real = globalThis.fetch;
  globalThis.fetch = async (url, init) => {
    const [, a, b] = /bytes=(\d+)-(\d+)/.exec(init.headers.Range).map(Number);
    return new Response(makeBody(a, b), { status: 206, headers: { 'Content-Range': `bytes ${a}-${b}/${SIZE}` } });
  };
  try {
    return await fn();
  } finally {
    globalThis.fetch = real;
  }
}

test('a byte-stream body delivered in odd pieces, and a body that is not a byte stream (default reads)', async () => {
  const pieces = (type) => (a, b) => {
    let at = a;
    return new ReadableStream({
      type,
      pull(c) {
        const n = Math.min(b + 1 - at, 1 + ((at * 7919) % 300000)); // 1..300000 bytes
        c.enqueue(bytes.slice(at, at + n));
        at += n;
        if (at > b) c.close();
      },
    });
  };
  for (const type of ['bytes', undefined]) {
    const got = await withBody(pieces(type), () =>
      Promise.all(
        [
          [3, 2500000],
          [1 << 20, 1 << 20],
          [SIZE - 10, 10],
        ].map(([off, len]) => fetchRange('data.bin', 'http://stub/data.bin', off, len, want, 30000)),
      ),
    );
    assert.deepEqual(got[0], bytes.subarray(3, 2500003), String(type));
    assert.deepEqual(got[1], bytes.subarray(1 << 20, 2 << 20), String(type));
    assert.deepEqual(got[2], bytes.subarray(SIZE - 10), String(type));
  }
  // a body longer than asked is refused, whichever reader
  for (const type of ['bytes', undefined])
    await withBody(
      (a, b) => pieces(type)(a, b + 5),
      () =>
        assert.rejects(
          fetchRange('data.bin', 'http://stub/data.bin', 0, 1000, want, 30000),
          (e) => e.code === 'IO' && /long body/.test(e.message),
        ),
    );
});
