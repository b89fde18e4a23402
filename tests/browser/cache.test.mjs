// The model cache (js/main/cache.js) in headless Chromium on a cross-origin-isolated page, in the
// Origin Private File System: a download cut mid-body is resumed with a Range request by the
// next load (with a sha256 check in the cache worker) and gives the file's tokens; generation
// while the download runs gives the tokens of the finished file; list and delete, with the
// OPFS directory empty afterwards; the same on a page without cross-origin isolation
// (single-threaded build, no SharedArrayBuffer).
// Needs dist/ (make -f Makefile.emscripten) and the CLI ($OX_CLI or build/oxinfer).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import { launchChromium, collectErrors } from '../oracle/browser.mjs';
import { synth, tmpDir, requireDist } from '../oracle/fixtures.mjs';
import { startCacheServer, IMPORT_MAP } from '../node/cache_server.mjs';

const TOKENS = [2, 5, 300, 301, 17, 900, 44, 6];
const PAGE = `<!doctype html><meta charset="utf-8">${IMPORT_MAP}
<script type="module">
import * as ox from '/js/main/index.js';
window.ox = ox;
window.tokens = async (m) => {
  const out = [];
  for await (const c of m.generate(${JSON.stringify(TOKENS)}, { maxTokens: 12, temperature: 0, stopIds: [] })) if (c.token !== null) out.push(c.token);
  return out;
};
window.opfsEntries = async () => {
  const root = await navigator.storage.getDirectory();
  const dir = await root.getDirectoryHandle('oxinfer-web', { create: true });
  const names = [];
  for await (const n of dir.keys()) names.push(n);
  return names;
};
window.ready = true;
</script>`;
const T = 120000;
let dir, bytes, server, plain, browser, page, reference;

before(async () => {
  requireDist();
  dir = tmpDir('cache-browser');
  bytes = fs.readFileSync(synth(dir, { preset: 'tiny', type: 'q8_0' }));
  server = await startCacheServer({ isolate: true, pages: { '/': PAGE } });
  server.files.set('/ref/model.gguf', { bytes, etag: '"ref"' });
  plain = await startCacheServer({ pages: { '/': PAGE } }); // no COOP/COEP: no SharedArrayBuffer
  browser = await launchChromium();
  page = await browser.newPage();
  page.errors = [];
  collectErrors(page, page.errors);
  await page.goto(server.url + '/');
  await page.waitForFunction(() => window.ready, null, { timeout: T });
  assert.equal(await page.evaluate(() => crossOriginIsolated), true);
  reference = await page.evaluate(async () => {
    const m = await ox.loadModel('/ref/model.gguf', { threads: 2 });
    const t = await tokens(m);
    await m.unload();
    return t;
  });
  assert.equal(reference.length, 12);
});

after(async () => {
  await browser?.close();
  server?.close();
  plain?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

const downloads = () =>
  server.log
    .filter((l) => l.url === '/m/model.gguf' && (l.range === null || /^bytes=\d+-$/.test(l.range)))
    .map((l) => l.range);

test('OPFS: a download cut mid-body resumes with Range in the next load', { timeout: T }, async () => {
  server.files.set('/m/model.gguf', { bytes, etag: '"v1"' });
  server.plan.dropAfter = 2_000_000;
  const first = await page.evaluate(async () => {
    const m = await ox.loadModel('/m/model.gguf', { threads: 2, cache: { retries: 0 } });
    const error = await m.download.then(
      () => null,
      (e) => `${e.code}: ${e.message}`,
    );
    const t = await tokens(m);
    await m.unload();
    return { error, tokens: t, build: m.build, list: await ox.listCachedModels() };
  });
  // Chromium drops the chunks it had not handed over yet when the connection ends short
  const at = Number(/^IO: model\.gguf: download failed at byte (\d+) of \d+ after 1 attempts/.exec(first.error)?.[1]);
  assert.ok(at > 0 && at <= 2_000_000, first.error);
  assert.deepEqual(first.tokens, reference, 'tokens while half of the file is cached');
  assert.equal(first.build, 'mt');
  assert.equal(first.list.length, 1);
  assert.equal(first.list[0].complete, false);
  assert.equal(first.list[0].bytes, at);
  assert.equal(first.list[0].url, `${server.url}/m/model.gguf`);

  server.log.length = 0;
  const second = await page.evaluate(async (sha256) => {
    const events = [];
    const m = await ox.loadModel('/m/model.gguf', {
      threads: 2,
      cache: { sha256 },
      onProgress: (e) => e.phase === 'download' && events.push(e),
    });
    await m.download;
    const t = await tokens(m);
    await m.unload();
    return { tokens: t, last: events.at(-1), list: await ox.listCachedModels() };
  }, crypto.createHash('sha256').update(bytes).digest('hex')); // hashed in the cache worker, part of it after the resume
  assert.deepEqual(downloads(), [`bytes=${at}-`]);
  assert.deepEqual(second.tokens, reference);
  assert.equal(second.last.bytes, bytes.length);
  assert.equal(second.last.total, bytes.length);
  assert.equal(second.list[0].complete, true);
  assert.equal(second.list[0].bytes, bytes.length);

  // complete: the next load reads OPFS only (one 1-byte ETag check)
  server.log.length = 0;
  const third = await page.evaluate(async () => {
    const m = await ox.loadModel('/m/model.gguf', { threads: 2, cache: true });
    const t = await tokens(m);
    await m.unload();
    return t;
  });
  assert.deepEqual(third, reference);
  assert.deepEqual(
    server.log.map((l) => l.range),
    ['bytes=0-1'],
  );
  assert.deepEqual(page.errors, []);
});

test('OPFS: generation while the download runs gives the tokens of the finished file', { timeout: T }, async () => {
  server.files.set('/slow/model.gguf', { bytes, etag: '"s1"' });
  server.plan.slow = 16 << 10; // ~1.6 MB/s: ~4 s
  const r = await page.evaluate(async () => {
    let finished = false;
    const m = await ox.loadModel('/slow/model.gguf', { threads: 2, cache: true });
    m.download.then(() => (finished = true));
    const t = await tokens(m);
    const during = !finished;
    await m.download;
    const again = await tokens(m);
    await m.unload();
    return { t, during, again };
  });
  server.plan.slow = 0;
  assert.equal(r.during, true, 'generation ended before the download did');
  assert.deepEqual(r.t, reference);
  assert.deepEqual(r.again, reference);
});

test('OPFS: list and delete', { timeout: T }, async () => {
  const r = await page.evaluate(async () => {
    const before = (await ox.listCachedModels()).map((e) => [new URL(e.url).pathname, e.complete]);
    const deleted = [
      await ox.deleteCachedModel('/m/model.gguf'),
      await ox.deleteCachedModel('/slow/model.gguf'),
      await ox.deleteCachedModel('/m/model.gguf'),
    ];
    return { before, deleted, after: await ox.listCachedModels(), entries: await opfsEntries() };
  });
  assert.deepEqual(r.before, [
    ['/m/model.gguf', true],
    ['/slow/model.gguf', true],
  ]);
  assert.deepEqual(r.deleted, [true, true, false]);
  assert.deepEqual(r.after, []);
  assert.deepEqual(r.entries, []);
});

test(
  'OPFS without cross-origin isolation: the single-threaded build reads the cache during the download too',
  { timeout: T },
  async () => {
    plain.files.set('/slow/model.gguf', { bytes, etag: '"p1"' });
    plain.plan.slow = 16 << 10;
    const p = await browser.newPage();
    const errors = [];
    collectErrors(p, errors);
    await p.goto(plain.url + '/');
    await p.waitForFunction(() => window.ready, null, { timeout: T });
    const r = await p.evaluate(async () => {
      let finished = false;
      const m = await ox.loadModel('/slow/model.gguf', { cache: true });
      m.download.then(() => (finished = true));
      const t = await tokens(m);
      const during = !finished;
      await m.download;
      await m.unload();
      const list = await ox.listCachedModels();
      await ox.deleteCachedModel('/slow/model.gguf');
      return { t, during, build: m.build, isolated: crossOriginIsolated, complete: list[0]?.complete };
    });
    await p.close();
    assert.deepEqual({ ...r, t: null }, { t: null, during: true, build: 'st', isolated: false, complete: true });
    assert.deepEqual(r.t, reference);
    assert.deepEqual(errors, []);
  },
);
