// The decode loop makes one call into wasm per generated token (ox_wasm_gen_step), and a
// generation is the same with the engine driven directly on this thread: the worker's modules
// (js/engine/engine.js, generate.js) run here on a runtime whose exports count their calls.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { pathToFileURL } from 'node:url';
import path from 'node:path';
import { exports as EXPORTS } from '../../js/shared/abi.js';
import { HostFiles } from '../../js/host/hostfile.js';
import { describeSource } from '../../js/host/source.js';
import { Engine } from '../../js/engine/engine.js';
import { generate } from '../../js/engine/generate.js';
import { startRuntime } from '../../js/engine/runtime.js';
import { ROOT } from '../../tools/serve.mjs';
import { synth, tmpDir, requireDist } from '../oracle/fixtures.mjs';

const TOKENS = [2, 5, 300, 301, 17, 900, 44, 6];
const recorded = JSON.parse(fs.readFileSync(new URL('./api-streams.json', import.meta.url), 'utf8'));
let dir, engine, calls;

before(async () => {
  requireDist();
  dir = tmpDir('step');
  const file = synth(dir, { preset: 'tiny', type: 'q8_0', extra: ['--all-byte-tokens'] });
  const dist = (f) => pathToFileURL(path.join(ROOT, 'dist', f)).href;
  // the single-threaded build: no pool threads to keep this process alive
  const M = await startRuntime({
    build: 'st',
    assets: { glue: dist('oxinfer-st.js'), wasm: dist('oxinfer-st.wasm') },
    poolSize: 1,
  });
  // every export of the ABI, and malloc/free, counted by name
  calls = new Map();
  for (const name of [...EXPORTS.map((e) => e.name), 'malloc', 'free']) {
    const f = M[`_${name}`];
    M[`_${name}`] = (...a) => (calls.set(name, (calls.get(name) ?? 0) + 1), f(...a));
  }
  engine = new Engine(M, new HostFiles(), null);
  await engine.load({ sources: [describeSource(file)], quant: 0 }, () => {});
});

after(() => {
  engine?.unload();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

const total = () => [...calls.values()].reduce((a, b) => a + b, 0);

test('one wasm call per decode step, and the recorded token stream', async () => {
  const opts = { temperature: 1, topK: 0, topP: 1, seed: 1234, maxTokens: 24, stopIds: [] };
  const at = []; // calls made before each token event
  const tokens = [];
  const job = { aborted: false, emit: (ev) => (at.push(total()), tokens.push(ev.token)) };
  const st = await generate(engine, TOKENS, opts, job);
  assert.deepEqual(tokens, recorded.cases['pure sampling'].tokens);
  assert.equal(st.generatedTokens, 24);
  assert.equal(st.decodeSteps, 23);
  const perToken = at.slice(1).map((n, i) => n - at[i]);
  assert.deepEqual(perToken, Array(23).fill(1), `wasm calls between two tokens: ${perToken}`);
});

test('an abort between two tokens ends the generation at once; the session holds what ran', async () => {
  const job = { aborted: false, emit: () => (job.aborted = tokens.push(1) === 3) };
  const tokens = [];
  engine.session.truncate(0);
  const st = await generate(engine, TOKENS, { seed: 1, maxTokens: 1000, stopIds: [] }, job);
  assert.equal(st.reason, 'abort');
  assert.equal(st.generatedTokens, 3);
  // the third token was returned but never run: the cache holds the prompt and two tokens
  assert.equal(st.contextTokens, TOKENS.length + 2);
});
