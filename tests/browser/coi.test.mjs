// js/main/coi-serviceworker.js in headless Chromium, on a server that sends no COOP/COEP: the page
// without it is not isolated and runs the single-threaded build; with it, the page registers
// the service worker, reloads once, ends up crossOriginIsolated and runs the threaded build,
// and generates the same tokens; a later visit is isolated without a reload. With data-coep="credentialless" too. (The worker must control
// the package's files too: a worker script outside its folder gets no COEP and is blocked.)
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { launchChromium, collectErrors } from '../oracle/browser.mjs';
import { synth, tmpDir, requireDist } from '../oracle/fixtures.mjs';
import { startCacheServer, IMPORT_MAP } from '../node/cache_server.mjs';

const T = 120000;
const run = `<script type="module">
import { loadModel } from '/js/main/index.js';
window.result = (async () => {
  const isolated = await window.oxinferIsolation;
  const m = await loadModel('/models/model.gguf', { threads: 2 });
  const tokens = [];
  for await (const c of m.generate([2, 5, 300, 301, 17], { maxTokens: 8, temperature: 0, stopIds: [] })) if (c.token !== null) tokens.push(c.token);
  await m.unload();
  return { isolated, crossOriginIsolated, build: m.build, threads: m.threads, tokens, controlled: !!navigator.serviceWorker.controller, loads: performance.getEntriesByType('navigation')[0].type };
})();
</script>`;
const page = (coi) => `<!doctype html><meta charset="utf-8">${coi}${IMPORT_MAP}${run}`;
let dir, server, browser;

before(async () => {
  requireDist();
  dir = tmpDir('coi');
  const bytes = fs.readFileSync(synth(dir, { preset: 'tiny', type: 'q8_0' }));
  server = await startCacheServer({
    isolate: false,
    pages: {
      '/plain.html': page('<script>window.oxinferIsolation = Promise.resolve(false)</script>'),
      '/coi.html': page('<script src="/coi-serviceworker.js"></script>'),
      '/coi-cl.html': page('<script src="/coi-serviceworker.js" data-coep="credentialless"></script>'),
      '/probe.html':
        '<!doctype html><meta charset="utf-8"><script src="/coi-serviceworker.js"></script><script>window.oxinferIsolation.then(async (isolated) => { window.probe = { isolated, controlled: !!navigator.serviceWorker.controller, registrations: (await navigator.serviceWorker.getRegistrations()).length, loads: performance.getEntriesByType("navigation")[0].type }; });</script>',
    },
    aliases: { '/coi-serviceworker.js': 'js/main/coi-serviceworker.js' },
  });
  server.files.set('/models/model.gguf', { bytes, etag: '"m"' });
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  server?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

async function open(path) {
  const ctx = await browser.newContext(); // a fresh profile: no service worker registered yet
  const p = await ctx.newPage();
  p.errors = [];
  collectErrors(p, p.errors);
  await p.goto(server.url + path);
  await p.waitForFunction(() => window.result, null, { timeout: T });
  const r = await p.evaluate(() => window.result);
  // a later visit: the worker answers the first request already, no reload
  await p.goto(server.url + path);
  await p.waitForFunction(() => window.result, null, { timeout: T });
  r.next = await p.evaluate(() =>
    window.result.then((x) => ({ crossOriginIsolated: x.crossOriginIsolated, loads: x.loads })),
  );
  const headers = (await ctx.request.get(server.url + path)).headers();
  await ctx.close();
  return { ...r, errors: p.errors, headers };
}

let plain;
test('without the service worker: not isolated, single-threaded', { timeout: T }, async () => {
  plain = await open('/plain.html');
  assert.equal(plain.headers['cross-origin-embedder-policy'], undefined, 'the server sends no COEP');
  assert.equal(plain.headers['cross-origin-opener-policy'], undefined, 'the server sends no COOP');
  assert.equal(plain.crossOriginIsolated, false);
  assert.equal(plain.build, 'st');
  assert.equal(plain.tokens.length, 8);
});

for (const [path, label] of [
  ['/coi.html', 'require-corp'],
  ['/coi-cl.html', 'credentialless'],
]) {
  test(
    `with coi-serviceworker.js (${label}): isolated after one reload, threaded, same tokens`,
    { timeout: T },
    async () => {
      const r = await open(path);
      assert.equal(r.isolated, true);
      assert.equal(r.crossOriginIsolated, true);
      assert.equal(r.controlled, true);
      assert.equal(r.loads, 'reload', 'the page reloaded once');
      assert.deepEqual(r.next, { crossOriginIsolated: true, loads: 'navigate' });
      assert.equal(r.build, 'mt');
      assert.equal(r.threads, 2);
      assert.deepEqual(r.tokens, plain.tokens);
      assert.deepEqual(r.errors, []);
    },
  );
}

test(
  'the service worker can be removed: ?nocoi unregisters it and reloads once uncontrolled; oxinferUnregisterIsolation() too',
  { timeout: T },
  async () => {
    const ctx = await browser.newContext();
    const p = await ctx.newPage();
    const errors = [];
    collectErrors(p, errors);
    const state = async (path) => {
      await p.goto(server.url + path);
      await p.waitForFunction(() => window.probe, null, { timeout: T });
      return p.evaluate(() => window.probe);
    };
    const on = await state('/probe.html');
    assert.deepEqual(
      on,
      { isolated: true, controlled: true, registrations: 1, loads: 'reload' },
      'registered, isolated after one reload',
    );
    const off = await state('/probe.html?nocoi');
    assert.deepEqual(
      off,
      { isolated: false, controlled: false, registrations: 0, loads: 'reload' },
      'unregistered, reloaded once, not controlled',
    );
    const later = await state('/probe.html?nocoi');
    assert.deepEqual(
      later,
      { isolated: false, controlled: false, registrations: 0, loads: 'navigate' },
      'stays off without another reload',
    );
    // the function: registered again by a plain visit, then removed from the page
    assert.equal((await state('/probe.html')).registrations, 1);
    assert.equal(await p.evaluate(() => window.oxinferUnregisterIsolation()), true);
    assert.equal(await p.evaluate(async () => (await navigator.serviceWorker.getRegistrations()).length), 0);
    assert.equal(await p.evaluate(() => window.oxinferUnregisterIsolation()), false, 'nothing left to remove');
    assert.deepEqual(errors, []);
    await ctx.close();
  },
);
