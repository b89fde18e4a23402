// The trained demo model (web/models/oxinfer-demo.gguf, made by tools/train_demo/train.py), in
// Node through the package: it loads as a Gemma 4 model, its logits match the float64 C
// reference forward pass (tests/c/ref_forward.c, through tools/train_demo/refcheck.c), and
// greedy answers are English: at least 80% of the words are words of the corpus generator,
// and simple questions get the generator's answers.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT } from '../../tools/serve.mjs';
import { loadPackage } from '../oracle/engine.mjs';
import { tmpDir } from '../oracle/fixtures.mjs';

const MODEL = process.env.OX_DEMO_MODEL || path.join(ROOT, 'web', 'models', 'oxinfer-demo.gguf');
let model, dir;

function run(cmd, args) {
  const r = spawnSync(cmd, args, { cwd: ROOT, encoding: 'utf8', maxBuffer: 256 << 20 });
  if (r.error || r.status !== 0)
    throw new Error(`${cmd} ${args.slice(0, 3).join(' ')}: ${r.error?.message ?? r.stderr}`);
  return r.stdout;
}

before(async () => {
  const { loadModel } = await loadPackage();
  model = await loadModel(MODEL, { threads: 2 });
  dir = tmpDir('demo-model');
});

after(async () => {
  await model?.unload();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

async function answer(question) {
  let text = '';
  for await (const c of model.chat([{ role: 'user', content: question }], { temperature: 0, maxTokens: 160 }))
    if (!c.stats && !c.thinking) text += c.text;
  return text.trim();
}

test('the demo model is a Gemma 4 model with the Gemma 4 control tokens', () => {
  const i = model.info;
  assert.equal(i.vocab, 1024);
  assert.ok(i.layers >= 2, `layers ${i.layers}`);
  for (const k of ['bos', 'turnEnd', 'channelOpen', 'channelClose'])
    assert.ok(i[k] >= 0, `${k} token present (${i[k]})`);
});

test('its logits match the float64 C reference', async () => {
  const bin = path.join(dir, 'refcheck');
  run('cc', [
    '-O2',
    '-Isrc',
    '-Itests/c',
    'tools/train_demo/refcheck.c',
    path.join(ROOT, 'build', 'liboxcore.a'),
    '-lm',
    '-lpthread',
    '-o',
    bin,
  ]);
  const prompt = await model.renderChat([{ role: 'user', content: 'Tell me a story about a fox.' }]);
  const tokens = await model.tokenize(prompt + 'Once upon a time, there was a');
  const ref = JSON.parse(run(bin, [MODEL, tokens.join(',')]));
  const got = await model.logits(tokens, { all: true });
  assert.equal(got.length, ref.logits.length, 'same shape');
  let maxd = 0,
    agree = 0;
  for (let i = 0; i < got.length; i++) maxd = Math.max(maxd, Math.abs(got[i] - ref.logits[i]));
  for (let p = 0; p < tokens.length; p++) {
    const row = (a) => Array.prototype.slice.call(a, p * ref.vocab, (p + 1) * ref.vocab);
    const am = (r) => r.indexOf(Math.max(...r));
    agree += am(row(got)) === am(row(ref.logits));
  }
  console.log(
    `demo model vs float64 reference: ${tokens.length} positions, max |logit diff| ${maxd.toExponential(2)}, argmax agrees at ${agree}/${tokens.length}`,
  );
  assert.ok(maxd < 2e-3, `max |logit difference| ${maxd}`);
  assert.equal(agree, tokens.length, 'the same greedy token at every position');
});

test("greedy answers are English made of the generator's words, and right on simple questions", async () => {
  const dict = new Set(JSON.parse(run('python3', ['tools/train_demo/corpus.py', '--words'])));
  const story = await answer('Tell me a story about a cat.');
  const words = story.toLowerCase().match(/[a-z']+/g) ?? [];
  const known = words.filter((w) => dict.has(w)).length;
  console.log(`story (${words.length} words, ${known} known): ${story}`);
  assert.ok(words.length >= 20, `a story of some length: ${story}`);
  assert.ok(known / words.length >= 0.8, `at least 80% dictionary words (${known}/${words.length}): ${story}`);
  assert.match(story, /\bcat\b/, 'the story is about the cat');
  assert.match(await answer('What color is the sky?'), /\bblue\b/i);
  assert.match(await answer('What does a cow say?'), /\bmoo\b/i);
  assert.match(await answer('Where does a fish live?'), /\bwater\b/i);
});
