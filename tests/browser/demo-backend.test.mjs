// The demo's backend indicator and switch in headless Chromium with WebGPU on
// (--enable-unsafe-webgpu: SwiftShader, a software adapter). 'Auto' runs on the CPU there (a
// software adapter is never taken unasked) and the badge says so, with the reason as its title;
// choosing GPU loads the model again on WebGPU (the page's ?fallbackAdapter=1 lets it take the
// software adapter) and the badge names the adapter; the model still answers; CPU goes back.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { chromium } from 'playwright-core';
import { startServer } from '../../tools/serve.mjs';
import { CHROMIUM, haveChromium, collectErrors } from '../oracle/browser.mjs';
import { synth, tmpDir, requireDist } from '../oracle/fixtures.mjs';

const TIMEOUT = 300000;
let dir, iso, browser;

before(async () => {
  if (!haveChromium()) return;
  requireDist();
  dir = tmpDir('demo-backend');
  iso = await startServer({ files: { '/models/demo.gguf': synth(dir, { preset: 'tiny', type: 'f32' }) } });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--enable-unsafe-webgpu', '--disable-background-networking', '--no-first-run'],
  });
});

after(async () => {
  await browser?.close();
  iso?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

// the badge once the model for `backend` is in (or the page's error)
async function badgeFor(page, backend) {
  await page.waitForFunction(
    (b) =>
      (window.oxinfer.model?.backend === b && document.getElementById('badge-backend').dataset.backend === b) ||
      !document.getElementById('error').hidden,
    backend,
    { timeout: TIMEOUT },
  );
  const err = await page.evaluate(() =>
    document.getElementById('error').hidden ? null : document.getElementById('error-text').textContent,
  );
  assert.equal(err, null, `page error: ${err}\n${page.errors.join('\n')}`);
  return page.evaluate(() => {
    const b = document.getElementById('badge-backend');
    return { text: b.textContent, title: b.title };
  });
}

async function answers(page) {
  const before = await page.locator('.msg.assistant').count();
  await page.fill('#prompt', 'Hello');
  await page.press('#prompt', 'Enter');
  await page.waitForFunction(
    (n) => {
      const all = document.querySelectorAll('.msg.assistant');
      return all.length > n && !document.getElementById('send').hidden && !document.getElementById('send').disabled;
    },
    before,
    { timeout: TIMEOUT },
  );
  return page.evaluate(() => [...document.querySelectorAll('.msg.assistant .body')].pop()?.textContent ?? '');
}

test(
  'the backend badge and the CPU / GPU switch',
  { skip: !haveChromium() && 'no Chromium', timeout: 3 * TIMEOUT },
  async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
    page.errors = [];
    collectErrors(page, page.errors);
    await page.goto(`${iso.url}/?fallbackAdapter=1`);
    await page.waitForFunction(() => window.oxinfer, null, { timeout: TIMEOUT });
    assert.equal(await page.evaluate(() => crossOriginIsolated), true);
    assert.equal(await page.inputValue('#backend'), 'auto');
    await page.click('#more-sources summary'); // the file and URL inputs are under this disclosure
    await page.fill('#url-input', `${iso.url}/models/demo.gguf`);
    await page.click('#url-form button[type=submit]');
    const cpu = await badgeFor(page, 'cpu');
    assert.equal(cpu.text, 'CPU');
    assert.match(cpu.title, /software|fallback/i, 'auto says why the software adapter was not taken');

    await page.click('#settings summary');
    await page.selectOption('#backend', 'webgpu');
    const gpu = await badgeFor(page, 'webgpu');
    assert.match(gpu.text, /^GPU · ./);
    assert.match(gpu.title, /software adapter/);
    assert.ok((await answers(page)).length > 0, 'an answer on the GPU');

    await page.selectOption('#backend', 'cpu');
    assert.equal((await badgeFor(page, 'cpu')).text, 'CPU');
    await page.close();
  },
);
