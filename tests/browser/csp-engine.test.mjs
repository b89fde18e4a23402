// The engine under a strict Content-Security-Policy, in headless Chromium: every response
// (the page, the package's modules, the engine and pthread worker scripts, dist/) carries
// `script-src 'self' 'wasm-unsafe-eval'` with no 'unsafe-eval' and no blob: (workers get their
// policy from their own response), and the engine still loads and generates the tokens of a
// page without a CSP, threaded (cross-origin isolated) and single-threaded. Before, the glue
// was run through `new Function` and the load failed with an EvalError under this policy.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { launchChromium, collectErrors } from '../oracle/browser.mjs';
import { synth, tmpDir, requireDist } from '../oracle/fixtures.mjs';
import { startCacheServer, IMPORT_MAP } from '../node/cache_server.mjs';

const T = 120000;
const NONCE = 'cspt3st';
const STRICT_CSP = `default-src 'self'; script-src 'self' 'wasm-unsafe-eval' 'nonce-${NONCE}'; worker-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'`;
const run = `<script type="module" nonce="${NONCE}">
import { loadModel } from '/js/main/index.js';
window.violations = [];
document.addEventListener('securitypolicyviolation', (e) => window.violations.push(e.violatedDirective + ' ' + e.blockedURI));
window.result = (async () => {
  try {
    const m = await loadModel('/models/model.gguf', { threads: 2 });
    const tokens = [];
    for await (const c of m.generate([2, 5, 300, 301, 17], { maxTokens: 8, temperature: 0, stopIds: [] })) if (c.token !== null) tokens.push(c.token);
    await m.unload();
    return { build: m.build, tokens, violations: window.violations };
  } catch (e) {
    return { error: e.code + ' ' + e.message, violations: window.violations };
  }
})();
</script>`;
const page = `<!doctype html><meta charset="utf-8">${IMPORT_MAP.replace('<script', `<script nonce="${NONCE}"`)}${run}`;
let dir, bytes, browser;
const servers = [];

before(async () => {
  requireDist();
  dir = tmpDir('csp-engine');
  bytes = fs.readFileSync(synth(dir, { preset: 'tiny', type: 'q8_0' }));
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  for (const s of servers) s.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

async function generate({ isolate, csp }) {
  const server = await startCacheServer({
    isolate,
    pages: { '/run.html': page },
    headers: csp ? { 'Content-Security-Policy': STRICT_CSP } : {},
  });
  servers.push(server);
  server.files.set('/models/model.gguf', { bytes, etag: '"m"' });
  const ctx = await browser.newContext();
  const p = await ctx.newPage();
  const errors = [];
  collectErrors(p, errors);
  await p.goto(server.url + '/run.html');
  if (csp)
    assert.equal(
      (await ctx.request.get(server.url + '/dist/oxinfer-mt.worker.js')).headers()['content-security-policy'],
      STRICT_CSP,
      'worker scripts carry the policy',
    );
  await p.waitForFunction(() => window.result, null, { timeout: T });
  const r = await p.evaluate(() => window.result);
  await ctx.close();
  return { ...r, errors };
}

for (const [isolate, build] of [
  [true, 'mt'],
  [false, 'st'],
]) {
  test(
    `a strict CSP without 'unsafe-eval' or blob: (${build} build): the engine loads and generates the same tokens`,
    { timeout: T },
    async () => {
      const plain = await generate({ isolate, csp: false });
      assert.equal(plain.error, undefined, plain.error);
      const strict = await generate({ isolate, csp: true });
      assert.equal(strict.error, undefined, `${strict.error}\n${strict.errors.join('\n')}`);
      assert.equal(strict.build, build);
      assert.equal(strict.tokens.length, 8);
      assert.deepEqual(strict.tokens, plain.tokens);
      assert.deepEqual(strict.violations, [], 'nothing was blocked');
      assert.deepEqual(strict.errors, []);
    },
  );
}
