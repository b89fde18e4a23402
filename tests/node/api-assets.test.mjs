// Where the engine's files come from: by default dist/ beside js/ (new URL(..., import.meta.url));
// loadModel's assetBase (a folder) or locateFile (one URL per file name) point elsewhere, and a
// wrong place fails with MISSING naming the file it looked for. Node runs the relaxed-SIMD build
// where its files are there too, else the SIMD128 one.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { loadModel, OxError } from '../../js/main/index.js';
import { ROOT } from '../../tools/serve.mjs';
import { synth, tmpDir, requireDist } from '../oracle/fixtures.mjs';

const TOKENS = [2, 5, 300, 301];
let dir, gguf, moved, plain, want;

before(async () => {
  requireDist();
  dir = tmpDir('assets');
  gguf = synth(dir, { preset: 'tiny', type: 'q8_0' });
  // the engine files copied to another folder, as an app that serves them elsewhere would
  moved = path.join(dir, 'static', 'engine');
  fs.mkdirSync(moved, { recursive: true });
  for (const f of fs.readdirSync(path.join(ROOT, 'dist')))
    fs.copyFileSync(path.join(ROOT, 'dist', f), path.join(moved, f));
  // and a folder with the SIMD128 builds only
  plain = path.join(dir, 'static', 'plain');
  fs.mkdirSync(plain, { recursive: true });
  for (const f of fs.readdirSync(path.join(ROOT, 'dist')).filter((f) => !f.includes('relaxed')))
    fs.copyFileSync(path.join(ROOT, 'dist', f), path.join(plain, f));
  const m = await loadModel(gguf, { threads: 1 });
  want = Array.from(await m.logits(TOKENS));
  await m.unload();
});

after(() => {
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

const files = (build, simd) =>
  (build === 'mt' ? ['js', 'mjs', 'wasm', 'worker.js'] : ['js', 'mjs', 'wasm']).map(
    (x) => `oxinfer-${build}${simd === 'relaxed' ? '-relaxed' : ''}.${x}`,
  );

for (const build of ['mt', 'st'])
  for (const [folder, simd] of [
    ['engine', 'relaxed'],
    ['plain', 'simd128'],
  ])
    test(`${build}: assetBase and locateFile load the engine from another folder (${folder}: the ${simd} build)`, async () => {
      const at = folder === 'engine' ? moved : plain;
      const seen = new Set();
      for (const opts of [
        { assetBase: pathToFileURL(at) }, // (no trailing slash: still a folder)
        { locateFile: (name) => (seen.add(name), pathToFileURL(path.join(at, name))) },
      ]) {
        const m = await loadModel(gguf, { build, threads: build === 'mt' ? 2 : 1, ...opts });
        try {
          assert.equal(m.simd, simd);
          assert.deepEqual(Array.from(await m.logits(TOKENS)), want);
        } finally {
          await m.unload();
        }
      }
      // the relaxed files are looked for first, the SIMD128 ones loaded where they are missing
      assert.deepEqual(
        [...seen].sort(),
        simd === 'relaxed' ? files(build, simd) : [...files(build, 'relaxed'), ...files(build, simd)].sort(),
      );
    });

test('a wrong asset place is an error naming the file', async () => {
  const nowhere = path.join(dir, 'nowhere');
  await assert.rejects(
    loadModel(gguf, { assetBase: pathToFileURL(nowhere) }),
    (e) =>
      e instanceof OxError &&
      e.code === 'MISSING' &&
      e.message.includes(path.join(nowhere, 'oxinfer-mt.js')) &&
      /assetBase/.test(e.message),
  );
  await assert.rejects(
    loadModel(gguf, { locateFile: () => 'not a url' }),
    (e) => e instanceof OxError && e.code === 'RANGE' && /locateFile\("oxinfer-mt.js"\)/.test(e.message),
  );
  await assert.rejects(
    loadModel(gguf, { assetBase: 'https://cdn.example/dist/' }),
    (e) => e instanceof OxError && e.code === 'UNSUPPORTED' && /must be a file/.test(e.message),
  );
});
