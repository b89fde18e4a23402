// Smoke test of the packed package in a Vite 8 app: `npm pack`, install into a fresh app with
// vite@8, `vite build`, serve the output with and without COOP/COEP, and generate in headless
// Chromium (threaded and single-threaded builds): the recorded token stream, and a Jinja
// template rendered in the bundled worker. It installs vite@8 from the npm registry. (The
// bundler matrix with vite dev, webpack and the cache is bundlers.test.mjs.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { startServer, ROOT } from '../../tools/serve.mjs';
import { launchChromium, collectErrors } from '../oracle/browser.mjs';
import { synth, tmpDir, requireDist } from '../oracle/fixtures.mjs';

const recorded = JSON.parse(fs.readFileSync(new URL('../node/api-streams.json', import.meta.url), 'utf8'));
const MAIN = `import { loadModel } from 'oxinfer-web';
window.run = async (url) => {
  const m = await loadModel(url);
  const tokens = [];
  for await (const c of m.generate([2, 5, 300, 301, 17, 900, 44, 6], { temperature: 1, topK: 0, topP: 1, seed: 1234, maxTokens: 24, stopIds: [] }))
    if (c.token != null) tokens.push(c.token);
  const rendered = await m.renderChat([{ role: 'user', content: [{ type: 'text', text: 'hi' }] }], { template: '{{ messages[0].content[0].text }}!' });
  const out = { build: m.build, tokens, rendered };
  await m.unload();
  return out;
};
window.ready = true;
`;

test('the packed package works in a vite build, threaded and single-threaded', { timeout: 600000 }, async () => {
  requireDist();
  const dir = tmpDir('vite');
  try {
    const npm = (args, cwd) => execFileSync('npm', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    const tgz = path.join(dir, npm(['pack', '--pack-destination', dir], ROOT).trim().split('\n').at(-1));
    const app = path.join(dir, 'app');
    fs.mkdirSync(app);
    fs.writeFileSync(path.join(app, 'package.json'), '{ "name": "vite-smoke", "private": true, "type": "module" }\n');
    fs.writeFileSync(path.join(app, 'index.html'), '<!doctype html><script type="module" src="./main.js"></script>\n');
    fs.writeFileSync(path.join(app, 'main.js'), MAIN);
    npm(['install', '--no-audit', '--no-fund', 'vite@8', tgz], app);
    execFileSync(path.join(app, 'node_modules', '.bin', 'vite'), ['build', '--logLevel', 'error'], {
      cwd: app,
      stdio: 'pipe',
    });
    const model = synth(dir, recorded.model);
    const browser = await launchChromium();
    try {
      for (const [isolate, build] of [
        [true, 'mt'],
        [false, 'st'],
      ]) {
        const server = await startServer({
          files: { '/models/m.gguf': model },
          mounts: { '/': path.join(app, 'dist') },
          isolate,
        });
        const page = await browser.newPage();
        const errors = [];
        collectErrors(page, errors);
        try {
          await page.goto(`${server.url}/`);
          await page.waitForFunction(() => window.ready, null, { timeout: 60000 });
          const r = await page.evaluate(() => window.run('/models/m.gguf'));
          assert.equal(r.build, build);
          assert.deepEqual(r.tokens, recorded.cases['pure sampling'].tokens, `${build}: token stream`);
          assert.equal(r.rendered, 'hi!');
        } finally {
          await page.close();
          server.close();
        }
      }
    } finally {
      await browser.close();
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
