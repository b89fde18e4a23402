// Token streams of the package API for fixed seeds, against recorded streams
// (tests/node/api-streams.json). First recorded at d8e1338 from the JS decode loop, which the C
// step reproduced token for token; re-recorded once when the Q8_0 SIMD128 matvec began to sum 4
// blocks per vector (logits moved in the last bits, and sampled streams with them; greedy ones
// did not). Every sampler option takes part in at least one case, and the chat cases check the
// prefix reuse across turns. Re-record only on purpose, from a build whose streams are known to
// be right:  OX_RECORD=1 node --test tests/node/api-streams.test.mjs
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import { loadModel } from '../../js/main/index.js';
import { synth, tmpDir, requireDist } from '../oracle/fixtures.mjs';
import { collect } from './api_collect.mjs';

const FIXTURE = new URL('./api-streams.json', import.meta.url);
const RECORD = process.env.OX_RECORD === '1';
const TOKENS = [2, 5, 300, 301, 17, 900, 44, 6];
const MODEL = { preset: 'tiny', type: 'q8_0', extra: ['--all-byte-tokens'] };

// name -> [prompt (token ids or text), options]
const GENERATE = {
  'pure sampling': [TOKENS, { temperature: 1, topK: 0, topP: 1, seed: 1234, maxTokens: 24, stopIds: [] }],
  'default sampler': [TOKENS, { seed: 7, maxTokens: 24, stopIds: [] }],
  'top-k, top-p, min-p': [
    TOKENS,
    { temperature: 0.8, topK: 20, topP: 0.8, minP: 0.05, seed: 42, maxTokens: 24, stopIds: [] },
  ],
  'penalties, window 16': [
    TOKENS,
    {
      repetitionPenalty: 1.3,
      frequencyPenalty: 0.4,
      presencePenalty: 0.3,
      penaltyWindow: 16,
      seed: 5,
      maxTokens: 32,
      stopIds: [],
    },
  ],
  'repetition penalty, whole history': [
    TOKENS,
    { repetitionPenalty: 1.5, penaltyWindow: 0, seed: 6, maxTokens: 32, stopIds: [] },
  ],
  'logit bias': [TOKENS, { seed: 8, maxTokens: 24, stopIds: [], logitBias: { 300: 4, 301: 3, 17: -Infinity } }],
  greedy: [TOKENS, { temperature: 0, maxTokens: 16, stopIds: [] }],
  'small prefill chunks': [TOKENS, { seed: 9, maxTokens: 12, prefillChunk: 3, stopIds: [] }],
  'text prompt, checkpoint stop ids': ['Once upon a time', { seed: 3, maxTokens: 40 }],
};

const CHAT = [
  [
    { role: 'system', content: 'Be brief.' },
    { role: 'user', content: 'Hi there' },
  ],
  [{ role: 'user', content: 'And again?' }],
  [{ role: 'user', content: 'A third question, a bit longer than the others.' }],
];

let dir, file, model;
const recorded = RECORD ? { cases: {} } : JSON.parse(fs.readFileSync(FIXTURE, 'utf8'));

// the stream, with the stats that do not depend on timing
async function streamed(stream) {
  const { tokens, text, stats } = await collect(stream);
  const { reason, promptTokens, reusedTokens, prefillTokens, generatedTokens, decodeSteps, contextTokens } = stats;
  return {
    tokens,
    text,
    stats: { reason, promptTokens, reusedTokens, prefillTokens, generatedTokens, decodeSteps, contextTokens },
  };
}

function check(name, got) {
  if (RECORD) return void (recorded.cases[name] = got);
  const want = recorded.cases[name];
  assert.ok(want, `${name}: not in the fixture`);
  assert.deepEqual(got.tokens, want.tokens, `${name}: token stream`);
  assert.equal(got.text, want.text, `${name}: text`);
  assert.deepEqual(got.stats, want.stats, `${name}: stats`);
}

before(async () => {
  requireDist();
  dir = tmpDir('streams');
  file = synth(dir, MODEL);
  const sha256 = crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex');
  if (RECORD) recorded.model = { ...MODEL, sha256 };
  else
    assert.equal(
      sha256,
      recorded.model.sha256,
      `the synthetic model (oxinfer synth ${JSON.stringify(MODEL)}) is not the one the streams were recorded with`,
    );
  model = await loadModel(file, { threads: 2 });
});

after(async () => {
  await model?.unload();
  if (RECORD) fs.writeFileSync(FIXTURE, JSON.stringify(recorded, null, 1) + '\n');
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

for (const [name, [prompt, opts]] of Object.entries(GENERATE))
  test(`generate: ${name}`, async () => {
    await model.resetChat();
    check(name, await streamed(model.generate(prompt, opts)));
  });

test('generate: a second call reuses the cached prefix and samples the same tokens', async () => {
  const [prompt, opts] = GENERATE['default sampler'];
  await model.resetChat();
  await streamed(model.generate(prompt, opts));
  const again = await streamed(model.generate(prompt, opts));
  assert.equal(again.stats.reusedTokens, prompt.length - 1);
  check('default sampler, reused', again);
});

test('chat: three turns, each prefilling only what the cache lacks', async () => {
  await model.resetChat();
  const msgs = [];
  for (const [i, turn] of CHAT.entries()) {
    msgs.push(...turn);
    const r = await streamed(model.chat(msgs, { seed: 11 + i, maxTokens: 20, temperature: 0.9 }));
    check(`chat turn ${i + 1}`, r);
    msgs.push({ role: 'assistant', content: r.text });
  }
});

// (Not every case: at d8e1338 'penalties, window 16' already differed between the builds
// from its 31st token on, a near tie in logits the two builds sum in different orders.)
test('the single-threaded build samples the same streams', async () => {
  const st = await loadModel(file, { build: 'st' });
  try {
    for (const name of ['pure sampling', 'greedy', 'logit bias']) {
      const [prompt, opts] = GENERATE[name];
      await st.resetChat();
      const r = await streamed(st.generate(prompt, opts));
      if (!RECORD) check(name, r);
    }
  } finally {
    await st.unload();
  }
});
