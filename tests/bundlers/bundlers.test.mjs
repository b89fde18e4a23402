// The packed package (`npm pack`) installed into a fresh app outside the repo, the way a user
// gets it, then: Vite 8 (`vite build`, and the `vite` dev server), webpack 5, plain ESM in a
// page (an import map onto node_modules), each served with COOP/COEP and run in headless
// Chromium; and Node. Every one must load a synthetic model, generate the same greedy tokens
// as the repo's own package in Node, and do it again through the model cache (with a sha256
// check: the download worker and its hash library must be emitted by the bundlers too).
//
// Needs dist/ (make -f Makefile.emscripten), the CLI (build/oxinfer or $OX_CLI) and the npm
// registry (or ~/.npm holding vite/webpack); without the registry the tests are skipped with a
// message. To try another branch: OX_PACKAGE_ROOT=CHECKOUT packs its package.json, README.md,
// dist/ and js/; OX_PACKAGE_JS=DIR packs DIR in place of js/.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync, spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { startServer, ROOT } from '../../tools/serve.mjs';
import { launchChromium, collectErrors } from '../oracle/browser.mjs';
import { synth, tmpDir, requireDist } from '../oracle/fixtures.mjs';
import { loadModel } from '../../js/main/index.js';

const VERSIONS = { vite: '8', webpack: '5', 'webpack-cli': '7' };
const PROMPT = [2, 5, 300, 301, 17];
const GREEDY = { maxTokens: 8, temperature: 0, stopIds: [] };
const T = 180000;
let dir,
  app,
  model,
  sha256,
  want,
  browser,
  skip = null;
const servers = [];

function sh(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 64 << 20, timeout: 150000, ...opts });
  if (r.status !== 0)
    throw new Error(
      `${cmd} ${args.join(' ')} (in ${opts.cwd ?? process.cwd()}) exited ${r.status ?? r.signal}:\n${(r.stdout + r.stderr).slice(-4000)}`,
    );
  return r.stdout;
}

// The app's code: the same for every bundler. window.result: tokens, directly and cached.
const MAIN = (sha256) => `import { loadModel, listCachedModels, deleteCachedModel } from 'oxinfer-web';
const url = new URL('model.gguf', location.href).href;
async function tokens(m) {
  const out = [];
  for await (const c of m.generate(${JSON.stringify(PROMPT)}, ${JSON.stringify(GREEDY)})) if (c.token !== null) out.push(c.token);
  return out;
}
window.result = (async () => {
  const m = await loadModel(url, { threads: 2 });
  const direct = await tokens(m);
  await m.unload();
  await deleteCachedModel(url);
  const c = await loadModel(url, { threads: 2, cache: { sha256: '${sha256}' } }); // the hash runs in the cache worker
  await c.download;
  const cached = await tokens(c);
  await c.unload();
  const list = await listCachedModels();
  return { build: m.build, direct, cached, complete: list.find((e) => e.url === url)?.complete ?? false };
})().catch((e) => ({ error: (e.code ?? e.name) + ': ' + e.message }));
`;
const HTML = (script) => `<!doctype html><meta charset="utf-8"><title>app</title>${script}`;
const ISOLATION = { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' };

function registryReachable() {
  const r = spawnSync('npm', ['ping'], { encoding: 'utf8', timeout: 20000 });
  return r.status === 0;
}

before(async () => {
  requireDist();
  dir = tmpDir('bundlers');
  model = synth(dir, { preset: 'tiny', type: 'q8_0' });
  sha256 = crypto.createHash('sha256').update(fs.readFileSync(model)).digest('hex');
  const m = await loadModel(model, { threads: 2 });
  want = [];
  for await (const c of m.generate(PROMPT, GREEDY)) if (c.token !== null) want.push(c.token);
  await m.unload();

  // the package as npm would publish it (package.json "files"), js/ possibly from elsewhere
  const stage = path.join(dir, 'pkg');
  fs.mkdirSync(stage);
  const from = process.env.OX_PACKAGE_ROOT || ROOT;
  for (const f of ['package.json', 'README.md']) fs.copyFileSync(path.join(from, f), path.join(stage, f));
  fs.cpSync(path.join(from, 'dist'), path.join(stage, 'dist'), { recursive: true });
  fs.cpSync(process.env.OX_PACKAGE_JS || path.join(from, 'js'), path.join(stage, 'js'), { recursive: true });
  const tarball = path.join(stage, sh('npm', ['pack', '--silent'], { cwd: stage }).trim().split('\n').pop());

  app = path.join(dir, 'app');
  fs.mkdirSync(path.join(app, 'src'), { recursive: true });
  fs.mkdirSync(path.join(app, 'public'));
  fs.copyFileSync(model, path.join(app, 'public', 'model.gguf'));
  const deps = Object.fromEntries(Object.entries(VERSIONS).map(([k, v]) => [k, v]));
  fs.writeFileSync(
    path.join(app, 'package.json'),
    JSON.stringify({
      name: 'app',
      private: true,
      type: 'module',
      dependencies: { 'oxinfer-web': `file:${tarball}`, ...deps },
    }),
  );
  // offline: only what ~/.npm holds
  const online = registryReachable();
  const install = spawnSync(
    'npm',
    ['install', '--no-audit', '--no-fund', online ? '--prefer-offline' : '--offline', '--loglevel=error'],
    { cwd: app, encoding: 'utf8', timeout: 150000 },
  );
  if (install.status !== 0) {
    if (!online) {
      skip = `the npm registry is unreachable and ~/.npm lacks ${Object.keys(VERSIONS).join('/')}: bundler tests skipped`;
      return;
    }
    throw new Error(`npm install in ${app} failed:\n${(install.stdout + install.stderr).slice(-4000)}`);
  }
  fs.writeFileSync(path.join(app, 'src', 'main.js'), MAIN(sha256));
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  for (const s of servers) await s.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

// open url in a fresh context, wait for window.result
async function runPage(url) {
  const ctx = await browser.newContext();
  const page = await ctx.newPage();
  const errors = [];
  collectErrors(page, errors);
  const failed = [];
  page.on('requestfailed', (r) => failed.push(`${r.url()} ${r.failure()?.errorText}`));
  page.on('response', (r) => r.status() >= 400 && failed.push(`${r.url()} HTTP ${r.status()}`));
  await page.goto(url);
  await page.waitForFunction(() => window.result, null, { timeout: T });
  const r = await page.evaluate(() => window.result);
  await ctx.close();
  return { ...r, errors, failed };
}

function check(r, label) {
  assert.equal(
    r.error,
    undefined,
    `${label}: ${r.error}\nfailed requests: ${r.failed.join('\n')}\npage errors: ${r.errors.join('\n')}`,
  );
  assert.equal(r.build, 'mt', `${label}: threaded build under COOP/COEP`);
  assert.deepEqual(r.direct, want, `${label}: tokens`);
  assert.deepEqual(r.cached, want, `${label}: tokens through the cache`);
  assert.equal(r.complete, true, `${label}: cached copy complete`);
}

async function serveDir(root) {
  const s = await startServer({ mounts: { '/': root }, files: { '/model.gguf': model } });
  servers.push({ close: () => s.close() });
  return s.url;
}

test('Vite 8: vite build, served with COOP/COEP', { timeout: T }, async (t) => {
  if (skip) return t.skip(skip);
  fs.writeFileSync(path.join(app, 'index.html'), HTML('<script type="module" src="/src/main.js"></script>'));
  fs.writeFileSync(
    path.join(app, 'vite.config.js'),
    `export default { logLevel: 'warn', server: { headers: ${JSON.stringify(ISOLATION)} } };\n`,
  );
  sh(
    process.execPath,
    [path.join(app, 'node_modules/vite/bin/vite.js'), 'build', '--outDir', 'dist-vite', '--emptyOutDir'],
    { cwd: app },
  );
  check(await runPage(`${await serveDir(path.join(app, 'dist-vite'))}/`), 'vite build');
});

test('Vite 8: the vite dev server', { timeout: T }, async (t) => {
  if (skip) return t.skip(skip);
  const vite = spawn(
    process.execPath,
    [path.join(app, 'node_modules/vite/bin/vite.js'), '--port', '0', '--host', '127.0.0.1', '--logLevel', 'info'],
    { cwd: app, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  servers.push({ close: () => vite.kill() });
  let out = '';
  const url = await new Promise((resolve, reject) => {
    const look = (d) => {
      out += d.toString().replace(/\x1b\[[0-9;]*m/g, '');
      const m = /Local:\s+(http:\/\/127\.0\.0\.1:\d+\/)/.exec(out);
      if (m) resolve(m[1]);
    };
    vite.stdout.on('data', look);
    vite.stderr.on('data', look);
    vite.once('exit', (c) => reject(new Error(`vite exited ${c}: ${out}`)));
    setTimeout(() => reject(new Error(`vite dev server did not start: ${out}`)), 30000);
  });
  check(await runPage(url), 'vite dev');
});

test('webpack 5: production build, served with COOP/COEP', { timeout: T }, async (t) => {
  if (skip) return t.skip(skip);
  const out = path.join(app, 'dist-webpack');
  fs.writeFileSync(
    path.join(app, 'webpack.config.cjs'),
    `module.exports = { mode: 'production', entry: './src/main.js', output: { path: ${JSON.stringify(out)}, filename: 'main.js', publicPath: 'auto' } };\n`,
  );
  sh(process.execPath, [path.join(app, 'node_modules/webpack-cli/bin/cli.js'), '--config', 'webpack.config.cjs'], {
    cwd: app,
  });
  fs.writeFileSync(path.join(out, 'index.html'), HTML('<script src="main.js"></script>'));
  check(await runPage(`${await serveDir(out)}/`), 'webpack');
});

test('plain ESM in a page: an import map onto node_modules', { timeout: T }, async (t) => {
  if (skip) return t.skip(skip);
  const nm = path.join(app, 'node_modules');
  const map = {
    imports: {
      'oxinfer-web': '/node_modules/oxinfer-web/js/main/index.js',
      '@huggingface/jinja': '/node_modules/@huggingface/jinja/dist/index.js',
      '@noble/hashes/': '/node_modules/@noble/hashes/',
    },
  };
  const root = path.join(dir, 'plain');
  fs.mkdirSync(root);
  fs.writeFileSync(path.join(root, 'main.js'), MAIN(sha256));
  fs.writeFileSync(
    path.join(root, 'index.html'),
    HTML(`<script type="importmap">${JSON.stringify(map)}</script><script type="module" src="main.js"></script>`),
  );
  const s = await startServer({ mounts: { '/node_modules/': nm, '/': root }, files: { '/model.gguf': model } });
  servers.push({ close: () => s.close() });
  check(await runPage(`${s.url}/`), 'plain ESM');
});

test('Node: the installed package', { timeout: T }, async (t) => {
  if (skip) return t.skip(skip);
  const script = `import { loadModel } from 'oxinfer-web';
const m = await loadModel(${JSON.stringify(model)}, { threads: 2 });
const out = [];
for await (const c of m.generate(${JSON.stringify(PROMPT)}, ${JSON.stringify(GREEDY)})) if (c.token !== null) out.push(c.token);
await m.unload();
console.log(JSON.stringify(out));`;
  fs.writeFileSync(path.join(app, 'node.mjs'), script);
  assert.deepEqual(JSON.parse(sh(process.execPath, ['node.mjs'], { cwd: app }).trim()), want);
});
