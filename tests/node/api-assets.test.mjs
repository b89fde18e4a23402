// Where the engine's files come from: by default dist/ beside js/ (new URL(..., import.meta.url));
// loadModel's assetBase (a folder) or locateFile (one URL per file name) point elsewhere, and a
// wrong place fails with MISSING naming the file it looked for.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { loadModel, OxError } from '../../js/index.js';
import { ROOT } from '../../tools/serve.mjs';
import { synth, tmpDir, requireDist } from '../oracle/fixtures.mjs';

const TOKENS = [2, 5, 300, 301];
let dir, gguf, moved, want;

before(async () => {
  requireDist();
  dir = tmpDir('assets');
  gguf = synth(dir, { preset: 'tiny', type: 'q8_0' });
  // the engine files copied to another folder, as an app that serves them elsewhere would
  moved = path.join(dir, 'static', 'engine');
  fs.mkdirSync(moved, { recursive: true });
  for (const f of fs.readdirSync(path.join(ROOT, 'dist'))) fs.copyFileSync(path.join(ROOT, 'dist', f), path.join(moved, f));
  const m = await loadModel(gguf, { threads: 1 });
  want = Array.from(await m.logits(TOKENS));
  await m.unload();
});

after(() => {
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

for (const build of ['mt', 'st'])
  test(`${build}: assetBase and locateFile load the engine from another folder`, async () => {
    const seen = [];
    for (const opts of [
      { assetBase: pathToFileURL(moved) }, // (no trailing slash: still a folder)
      { locateFile: (name) => (seen.push(name), pathToFileURL(path.join(moved, name))) },
    ]) {
      const m = await loadModel(gguf, { build, threads: build === 'mt' ? 2 : 1, ...opts });
      try {
        assert.deepEqual(Array.from(await m.logits(TOKENS)), want);
      } finally {
        await m.unload();
      }
    }
    assert.deepEqual(seen.sort(), build === 'mt' ? ['oxinfer-mt.js', 'oxinfer-mt.wasm', 'oxinfer-mt.worker.js'] : ['oxinfer-st.js', 'oxinfer-st.wasm']);
  });

test('a wrong asset place is an error naming the file', async () => {
  const nowhere = path.join(dir, 'nowhere');
  await assert.rejects(loadModel(gguf, { assetBase: pathToFileURL(nowhere) }),
    (e) => e instanceof OxError && e.code === 'MISSING' && e.message.includes(path.join(nowhere, 'oxinfer-mt.js')) && /assetBase/.test(e.message));
  await assert.rejects(loadModel(gguf, { locateFile: () => 'not a url' }), (e) => e instanceof OxError && e.code === 'RANGE' && /locateFile\("oxinfer-mt.js"\)/.test(e.message));
  await assert.rejects(loadModel(gguf, { assetBase: 'https://cdn.example/dist/' }), (e) => e instanceof OxError && e.code === 'UNSUPPORTED' && /must be a file/.test(e.message));
});
