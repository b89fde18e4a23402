// The GPU backend in headless Chromium (--enable-unsafe-webgpu: a SwiftShader adapter on a
// machine without a GPU), in a crossOriginIsolated page (the threaded build; the engine worker
// starts the GPU thread as a nested module worker with navigator.gpu): the tiny F32 model's
// logits on the GPU against the CPU engine in the same page, 'auto' on the CPU with only a
// software adapter, and a page that is not isolated refusing backend 'webgpu' with UNSUPPORTED.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { chromium } from 'playwright-core';
import { CHROMIUM, haveChromium, collectErrors } from '../oracle/browser.mjs';
import { synth, tmpDir, requireDist, requireCli } from '../oracle/fixtures.mjs';
import { startCacheServer, IMPORT_MAP } from '../node/cache_server.mjs';

const T = 300000;
const run = `<script type="module">
import { loadModel } from '/js/main/index.js';
window.result = (async () => {
  const tokens = [2, 5, 300, 301, 17, 40, 41, 900, 3, 77];
  const out = { crossOriginIsolated };
  try {
    const cpu = await loadModel('/models/model.gguf', { threads: 2, simd: 'simd128', maxContext: 64, backend: 'cpu' });
    const gpu = await loadModel('/models/model.gguf', { threads: 2, simd: 'simd128', maxContext: 64, backend: 'webgpu', allowFallbackAdapter: true });
    const auto = await loadModel('/models/model.gguf', { threads: 2, simd: 'simd128', maxContext: 64 });
    const a = await cpu.logits(tokens, { all: true }), b = await gpu.logits(tokens, { all: true });
    let d = 0;
    for (let i = 0; i < a.length; i++) d = Math.max(d, Math.abs(a[i] - b[i]));
    Object.assign(out, { backends: [cpu.backend, gpu.backend, auto.backend], adapter: gpu.info.gpu?.adapter, maxAbs: d, n: a.length, build: gpu.build });
    for (const m of [cpu, gpu, auto]) await m.unload();
  } catch (e) {
    out.error = { code: e.code, message: e.message };
  }
  return out;
})();
</script>`;
let dir, server, plain, browser; // plain: the same pages without COOP/COEP

before(async () => {
  if (!haveChromium()) return;
  requireCli();
  requireDist();
  dir = tmpDir('gpu-browser');
  const bytes = fs.readFileSync(synth(dir, { preset: 'tiny', type: 'f32' }));
  server = await startCacheServer({
    isolate: true,
    pages: { '/gpu.html': `<!doctype html><meta charset="utf-8">${IMPORT_MAP}${run}` },
  });
  server.files.set('/models/model.gguf', { bytes, etag: '"m"' });
  plain = await startCacheServer({
    isolate: false,
    pages: { '/gpu.html': `<!doctype html><meta charset="utf-8">${IMPORT_MAP}${run}` },
  });
  plain.files.set('/models/model.gguf', { bytes, etag: '"m"' });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--enable-unsafe-webgpu',
      '--enable-webgpu-developer-features',
      '--disable-background-networking',
      '--no-first-run',
    ],
  });
});

after(async () => {
  await browser?.close();
  server?.close();
  plain?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

async function open(srv) {
  const p = await browser.newPage();
  p.errors = [];
  collectErrors(p, p.errors);
  await p.goto(srv.url + '/gpu.html');
  await p.waitForFunction(() => window.result, null, { timeout: T });
  const r = await p.evaluate(() => window.result);
  await p.close();
  return { ...r, errors: p.errors };
}

test(
  'Chromium, isolated page: the GPU forward equals the CPU engine; auto stays on the CPU',
  { timeout: T, skip: !haveChromium() && 'no Chromium' },
  async (t) => {
    const r = await open(server);
    if (r.error?.code === 'UNSUPPORTED' && /adapter|navigator\.gpu/.test(r.error.message))
      return t.skip(`no WebGPU adapter in this Chromium: ${r.error.message}`);
    assert.equal(r.error, undefined, JSON.stringify(r.error));
    t.diagnostic(`${r.adapter}: max |dlogit| ${r.maxAbs} over ${r.n / 1024} positions (${r.build})`);
    assert.equal(r.crossOriginIsolated, true);
    assert.deepEqual(r.backends, ['cpu', 'webgpu', 'cpu']);
    assert.ok(r.maxAbs < 1e-3, String(r.maxAbs));
  },
);

test(
  'Chromium, page not isolated: backend webgpu is UNSUPPORTED, saying why',
  { timeout: T, skip: !haveChromium() && 'no Chromium' },
  async () => {
    const r = await open(plain);
    assert.equal(r.crossOriginIsolated, false);
    assert.equal(r.error?.code, 'UNSUPPORTED');
    assert.match(r.error.message, /SharedArrayBuffer|crossOriginIsolated/);
  },
);
