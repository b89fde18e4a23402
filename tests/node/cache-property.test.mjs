// Property-based tests of the model cache's index (js/main/cache.js, js/host/cache_store.js, fast-check):
// arbitrary sequences of downloads (whole, cut short by network faults, resumed), changes of
// the remote file, deletes, lists and corruptions of the index files (KEY.json, KEY.bin) run
// against a fake server (fetch stubbed) and the Node store in a temporary directory. After
// every step: what cacheSources hands the engine is the server's current file (a complete
// local copy byte for byte, or a partial one that is a prefix of it, with the right size);
// a finished download leaves exactly the file; a resumed one asks only for the missing bytes;
// every failure is a OxError with a stable code; listCachedModels and deleteCachedModel
// never throw and agree with the files. A second property drives runDownload directly over
// an in-memory store whose writes and free space fail. Seeded (FC_SEED, default fixed).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { cacheSources, listCachedModels, deleteCachedModel } from '../../js/main/cache.js';
import { keyOf, runDownload, parseRecord } from '../../js/host/cache_store.js';
import { PROBE_RANGE } from '../../js/host/http.js';
import { OxError } from '../../js/shared/errors.js';
import { tmpDir } from '../oracle/fixtures.mjs';

const SEED = Number(process.env.FC_SEED ?? 20261201);
const CODES = ['IO', 'FORMAT', 'TRUNCATED', 'UNSUPPORTED', 'MISSING', 'CONFIG', 'NOMEM', 'RANGE', 'ABORTED', 'STATE'];
const HOST = 'http://cache.invalid';
const URLS = ['/a.gguf', '/b.gguf'].map((p) => HOST + p);
const PIECE = 97; // body chunk size: cuts land inside the body

// ---- the fake server: each URL has a current version {bytes, etag}; each request takes the
// next fault of the plan of the step that runs ----

const server = { files: new Map(), versions: new Map(), plan: [], log: [] }; // versions: etag -> bytes
let version = 0;
function publish(url, bytes) {
  const f = { bytes, etag: `"v${++version}"` };
  server.files.set(url, f);
  server.versions.set(f.etag, bytes);
}

function respond(url, init) {
  const f = server.files.get(url);
  const range = /^bytes=(\d+)-(\d*)$/.exec(init?.headers?.Range ?? '');
  const fault = server.plan.shift() ?? 'ok';
  server.log.push({ url, range: init?.headers?.Range ?? null, fault });
  if (fault === 'throw') return Promise.reject(new TypeError('fetch failed'));
  if (fault === '404' || !f) return new Response('gone', { status: 404 });
  if (fault === '503') return new Response('busy', { status: 503 });
  const total = f.bytes.length;
  let first = 0,
    last = total - 1,
    status = 200;
  if (range && fault !== 'ignore-range') {
    first = Number(range[1]);
    if (range[2]) last = Math.min(last, Number(range[2]));
    if (first >= total) return new Response('', { status: 416, headers: { 'content-range': `bytes */${total}` } });
    status = 206;
  }
  let body = f.bytes.subarray(first, last + 1);
  const headers = { etag: f.etag };
  if (fault !== 'no-length') headers['content-length'] = String(body.length);
  if (status === 206) headers['content-range'] = `bytes ${first}-${last}/${total}`;
  if (fault === 'extra') body = Buffer.concat([body, Buffer.from('junk')]);
  // 'cut': the connection drops after some bytes; 'short': the body ends early, cleanly
  const upTo = fault === 'cut' || fault === 'short' ? Math.floor(body.length / 2) : body.length;
  let at = 0;
  const stream = new ReadableStream({
    pull(c) {
      if (at >= upTo) return fault === 'cut' ? c.error(new TypeError('terminated')) : c.close();
      c.enqueue(body.slice(at, Math.min(upTo, at + PIECE)));
      at += PIECE;
    },
  });
  return new Response(stream, { status, headers });
}

const realFetch = globalThis.fetch;
const realTimeout = globalThis.setTimeout;
before(() => {
  globalThis.fetch = async (url, init) =>
    String(url).startsWith(HOST) ? respond(String(url), init) : realFetch(url, init);
  globalThis.setTimeout = (f, ms, ...a) => realTimeout(f, Math.min(ms ?? 0, 1), ...a); // no retry back-off waits here
});
after(() => {
  globalThis.fetch = realFetch;
  globalThis.setTimeout = realTimeout;
});

// ---- steps ----

const bytesOf = (n, seed) => {
  const b = Buffer.alloc(n);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) ((x = (Math.imul(x, 1664525) + 1013904223) >>> 0), (b[i] = x >>> 24));
  return b;
};

const FAULTS = ['ok', 'throw', 'cut', 'short', '503', 'ignore-range', 'no-length', 'extra', '404'];
const RECORD_JUNK = [null, -1, 0, '7', 1.5, 2 ** 53, 1e300, true, [], {}, 'x'];

const step = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      op: fc.constant('load'),
      u: fc.nat(1),
      retries: fc.nat(3),
      plan: fc.array(fc.constantFrom(...FAULTS), { maxLength: 4 }),
      sha: fc.constantFrom(null, 'right', 'wrong'),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('change'),
      u: fc.nat(1),
      size: fc.integer({ min: 1, max: 3000 }),
      seed: fc.nat(),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('delete'), u: fc.nat(1) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('list') }) },
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant('corrupt'),
      u: fc.nat(1),
      what: fc.constantFrom(
        'record-text',
        'record-cut',
        'record-empty',
        'record-field',
        'data-cut',
        'data-extend',
        'stray',
        'tmp',
      ),
      field: fc.constantFrom('url', 'size', 'complete', 'bytes', 'etag', 'lastModified', 'sha256', 'addedAt'),
      junk: fc.constantFrom(...RECORD_JUNK),
      text: fc.string({ maxLength: 20 }),
      at: fc.double({ min: 0, max: 1, noNaN: true }),
    }),
  },
);

const isCoded = (e) => e instanceof OxError && CODES.includes(e.code);
const sha256 = async (b) => Buffer.from(await crypto.subtle.digest('SHA-256', b)).toString('hex');

async function runLoad(dir, s) {
  const url = URLS[s.u];
  const f = server.files.get(url);
  const key = await keyOf(url);
  const bin = path.join(dir, key + '.bin');
  const before = record(dir, key);
  const had = fs.existsSync(bin) ? fs.readFileSync(bin) : null;
  server.plan = [...s.plan];
  server.log.length = 0;
  const cache = { dir, retries: s.retries };
  if (s.sha) cache.sha256 = s.sha === 'right' ? await sha256(f.bytes) : 'f'.repeat(64);
  let got;
  try {
    got = await cacheSources([{ kind: 'url', url, name: path.basename(url) }], { cache });
  } catch (e) {
    assert.ok(isCoded(e), `cacheSources failed with ${e?.constructor?.name} ${e?.code}: ${e?.message}`);
    return;
  }
  // what the engine would read now. A complete copy is checked against the server first; when
  // that check fails (offline, busy) the copy is used as it is: then it is the version it was.
  // With a sha256 (of the current file) the engine gets only a complete copy that matched it.
  const src = got.sources[0];
  const probed = server.log[0]?.range === PROBE_RANGE && !['throw', '503', '404'].includes(server.log[0].fault);
  if (s.sha) assert.equal(src.kind, 'path', 'with a sha256, a complete and verified copy');
  if (src.kind === 'path') {
    const want = probed || before?.etag === f.etag || s.sha ? f.bytes : server.versions.get(before?.etag);
    assert.ok(
      want && fs.readFileSync(src.path).equals(want),
      `a complete local copy is the current file${probed ? '' : ' or, unchecked, the version it was'}`,
    );
    if (want !== f.bytes) return; // a stale copy, knowingly served: the next load checks again
  } else {
    assert.equal(src.kind, 'cached');
    assert.equal(src.size, f.bytes.length, 'the partial copy has the current size');
    assert.equal(src.want.validator, f.etag);
    const now = fs.readFileSync(bin);
    assert.ok(f.bytes.subarray(0, now.length).equals(now), 'the partial copy is a prefix of the current file');
  }
  // a resumed download asks for the missing bytes only, when the copy was a prefix of the same version
  const first = server.log.find((r) => r.range !== PROBE_RANGE);
  if (
    before?.url === url &&
    before.etag === f.etag &&
    before.size === f.bytes.length &&
    !before.complete &&
    had &&
    had.length > 0 &&
    had.length < f.bytes.length &&
    f.bytes.subarray(0, had.length).equals(had) &&
    first
  )
    assert.equal(first.range, `bytes=${had.length}-`, 'resumed from the bytes on disk');
  try {
    await got.done;
  } catch (e) {
    assert.ok(isCoded(e), `the download failed with ${e?.constructor?.name} ${e?.code}: ${e?.message}`);
    if (fs.existsSync(bin)) {
      const now = fs.readFileSync(bin);
      assert.ok(f.bytes.subarray(0, now.length).equals(now), 'what a failed download keeps is a prefix of the file');
    }
    return;
  }
  assert.ok(fs.readFileSync(bin).equals(f.bytes), 'a finished download is the file, byte for byte');
  const r = record(dir, key);
  assert.equal(r.complete, true);
  assert.equal(r.size, f.bytes.length);
  if (s.sha === 'wrong') assert.fail('a wrong sha256 was accepted');
}

// the record as the cache reads it (null: not a valid one)
function record(dir, key) {
  try {
    return parseRecord(fs.readFileSync(path.join(dir, key + '.json'), 'utf8'));
  } catch {
    return null;
  }
}

async function corrupt(dir, s) {
  const key = await keyOf(URLS[s.u]);
  const json = path.join(dir, key + '.json');
  const bin = path.join(dir, key + '.bin');
  const text = fs.existsSync(json) ? fs.readFileSync(json, 'utf8') : null;
  switch (s.what) {
    case 'record-text':
      return fs.writeFileSync(json, s.text);
    case 'record-cut':
      return text !== null && fs.writeFileSync(json, text.slice(0, Math.floor(s.at * text.length)));
    case 'record-empty':
      return fs.writeFileSync(json, '');
    case 'record-field': {
      const r = record(dir, key);
      if (!r) return;
      return fs.writeFileSync(json, JSON.stringify({ ...r, [s.field]: s.junk }));
    }
    case 'data-cut':
      return fs.existsSync(bin) && fs.truncateSync(bin, Math.floor(s.at * fs.statSync(bin).size));
    // past the end of a complete copy (bytes appended to a partial one are indistinguishable
    // from downloaded ones without a sha256, as a flipped byte is: the data file is trusted)
    case 'data-extend':
      return (
        fs.existsSync(bin) &&
        record(dir, key)?.complete &&
        fs.appendFileSync(bin, bytesOf(1 + Math.floor(s.at * 500), 7))
      );
    case 'stray':
      return fs.writeFileSync(path.join(dir, `${'0'.repeat(63)}${s.u}.json`), s.text); // a record with no data, not a URL's
    case 'tmp':
      return fs.writeFileSync(json + '.tmp', s.text); // a write torn by a crash
  }
}

async function checkList(dir) {
  const list = await listCachedModels({ dir });
  for (const m of list) {
    assert.equal(typeof m.url, 'string');
    assert.ok(Number.isSafeInteger(m.size) && m.size > 0, `size ${m.size}`);
    assert.ok(Number.isSafeInteger(m.bytes) && m.bytes >= 0 && m.bytes <= m.size, `bytes ${m.bytes} of ${m.size}`);
    assert.equal(typeof m.complete, 'boolean');
    if (m.complete) assert.equal(m.bytes, m.size);
  }
  return list;
}

test('cache index: arbitrary sequences of loads, faults, changes, deletes, lists and corruptions', async () => {
  const root = tmpDir('cache-property');
  let run = 0;
  try {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 14 }), async (steps) => {
        const dir = path.join(root, String(++run));
        URLS.forEach((u, i) => publish(u, bytesOf(500 + 700 * i, i + 1)));
        for (const s of steps) {
          if (s.op === 'load') await runLoad(dir, s);
          else if (s.op === 'change') publish(URLS[s.u], bytesOf(s.size, s.seed));
          else if (s.op === 'corrupt') (fs.mkdirSync(dir, { recursive: true }), await corrupt(dir, s));
          else if (s.op === 'list') await checkList(dir);
          else if (s.op === 'delete') {
            await deleteCachedModel(URLS[s.u], { dir });
            const key = await keyOf(URLS[s.u]);
            assert.ok(
              !fs.existsSync(path.join(dir, key + '.json')) && !fs.existsSync(path.join(dir, key + '.bin')),
              'deleted',
            );
            assert.ok(!(await checkList(dir)).some((m) => m.url === URLS[s.u]), 'a deleted model is not listed');
          }
        }
        // whatever happened before, a clean load (no faults) ends with the current file
        for (const u of [0, 1]) await runLoad(dir, { u, retries: 0, plan: [], sha: null });
        for (const u of [0, 1]) {
          const f = server.files.get(URLS[u]);
          assert.ok(
            fs.readFileSync(path.join(dir, (await keyOf(URLS[u])) + '.bin')).equals(f.bytes),
            `after the steps, a clean load of ${URLS[u]} gives the file`,
          );
        }
        const list = await checkList(dir);
        assert.deepEqual(
          list
            .filter((m) => URLS.includes(m.url))
            .map((m) => [m.url, m.complete, m.size])
            .sort(),
          URLS.map((u) => [u, true, server.files.get(u).bytes.length]).sort(),
        );
      }),
      { seed: SEED, numRuns: 150, includeErrorInReport: true },
    );
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
});

// ---- runDownload over a store that fails: full disks, writes that throw, no room ----

function memoryStore({ failWriteAt, free, recordFails }) {
  const records = new Map(),
    data = new Map();
  let written = 0;
  return {
    where: 'memory',
    data,
    readRecord: async (k) => (records.has(k) ? JSON.parse(records.get(k)) : null),
    async writeRecord(k, r) {
      if (recordFails) throw new OxError('IO', 'memory: the record cannot be written');
      records.set(k, JSON.stringify(r));
    },
    remove: async (k) => void (records.delete(k), data.delete(k)),
    list: async () => [...records.keys()],
    dataSize: async (k) => data.get(k)?.length ?? 0,
    free: async () => free,
    async openData(k) {
      if (!data.has(k)) data.set(k, new Uint8Array(0));
      return {
        size: () => data.get(k).length,
        write(bytes, at) {
          if ((written += bytes.length) > failWriteAt) throw new Error('ENOSPC: no space left on device'); // as fs throws it
          const cur = data.get(k);
          const next = new Uint8Array(Math.max(cur.length, at + bytes.length));
          next.set(cur);
          next.set(bytes, at);
          data.set(k, next);
        },
        read: (bytes, at) => (
          bytes.set(data.get(k).subarray(at, at + bytes.length)),
          Math.min(bytes.length, Math.max(0, data.get(k).length - at))
        ),
        truncate: (n) => data.set(k, data.get(k).slice(0, n)),
        flush() {},
        close() {},
      };
    },
  };
}

test('runDownload over a failing store: a coded error or the whole file, never a wrong one', async () => {
  const url = URLS[0];
  const key = await keyOf(url);
  await fc.assert(
    fc.asyncProperty(
      fc.integer({ min: 1, max: 3000 }),
      fc.integer({ min: 0, max: 4000 }),
      fc.integer({ min: 0, max: 5000 }),
      fc.boolean(),
      fc.array(fc.constantFrom('ok', 'cut', 'throw'), { maxLength: 3 }),
      async (size, failWriteAt, free, recordFails, plan) => {
        publish(url, bytesOf(size, size));
        const f = server.files.get(url);
        const store = memoryStore({ failWriteAt, free, recordFails });
        server.plan = plan;
        let ready = null;
        try {
          await runDownload(
            store,
            { url, name: 'a.gguf', key, sha256: null, hashUrl: null, retries: 2 },
            new AbortController().signal,
            (ev) => ev.type === 'ready' && (ready = ev),
          );
        } catch (e) {
          assert.ok(isCoded(e), `${e?.constructor?.name}: ${e?.message}`);
          if (free < size) assert.equal(ready, null, 'no room: refused before it is used');
          const d = store.data.get(key);
          if (d)
            assert.ok(Buffer.from(f.bytes.subarray(0, d.length)).equals(Buffer.from(d)), 'what is kept is a prefix');
          return;
        }
        assert.ok(free >= size, `${size} bytes cached with ${free} free`);
        assert.ok(Buffer.from(store.data.get(key)).equals(f.bytes));
        assert.equal(ready.size, size);
      },
    ),
    { seed: SEED, numRuns: 300, includeErrorInReport: true },
  );
});
