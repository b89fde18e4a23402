// Property-based tests of the JS API (fast-check): option objects, token arrays, message
// arrays and chat templates drawn at random, valid and not. Every invalid input ends in an
// OxError with a stable code (options: RANGE naming the option), never a crash or a hang;
// every valid one generates; after all of it the model gives the logits it gave at the start.
// Runs are seeded (FC_SEED, default fixed) so a failure replays.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import fc from 'fast-check';
import { loadModel, OxError } from '../../js/main/index.js';
import { checkOptions, GENERATE_OPTIONS, CHAT_OPTIONS, LOAD_OPTIONS } from '../../js/main/options.js';
import { cli, tmpDir, requireDist } from '../oracle/fixtures.mjs';

const CODES = ['IO', 'FORMAT', 'TRUNCATED', 'UNSUPPORTED', 'MISSING', 'CONFIG', 'NOMEM', 'RANGE', 'ABORTED', 'STATE'];
const SEED = Number(process.env.FC_SEED ?? 20261201);
const VOCAB = 384;
const MINI = [
  '--hidden',
  '32',
  '--layers',
  '2',
  '--heads',
  '2',
  '--kv-heads',
  '1',
  '--head-dim',
  '16',
  '--global-head-dim',
  '32',
  '--ffn',
  '64',
  '--ple',
  '16',
  '--vocab',
  String(VOCAB),
  '--user-tokens',
  '4',
  '--swa-period',
  '2',
  '--kv-shared',
  '0',
  '--window',
  '4',
  '--ctx',
  '64',
  '--all-byte-tokens',
];

let model, reference;

before(async () => {
  requireDist();
  const file = path.join(tmpDir('property'), 'mini.gguf');
  cli(['synth', '--preset', 'tiny', '--type', 'f32', ...MINI, '-o', file]);
  model = await loadModel(file, { threads: 1, maxContext: 64 });
  reference = await model.logits([2, 100, 101]);
});

after(() => model?.unload());

// ---- arbitraries ----

const junk = fc.oneof(
  fc.constant(undefined),
  fc.constant(null),
  fc.boolean(),
  fc.integer({ min: -1e6, max: 1e6 }),
  fc.double(),
  fc.constantFrom(NaN, Infinity, -Infinity, -0, 2 ** 53, 1.5),
  fc.string({ maxLength: 8 }),
  fc.array(fc.integer(), { maxLength: 3 }),
  fc.object({ maxDepth: 1, maxKeys: 3 }),
);

// valid values of each generation option (small, so generations stay short)
const validGenerate = fc
  .record(
    {
      temperature: fc.double({ min: 0, max: 2, noNaN: true }),
      topK: fc.integer({ min: 0, max: 100 }),
      topP: fc.double({ min: 0.01, max: 1, noNaN: true }),
      minP: fc.double({ min: 0, max: 1, noNaN: true }),
      repetitionPenalty: fc.double({ min: 0.5, max: 2, noNaN: true }),
      frequencyPenalty: fc.double({ min: -1, max: 1, noNaN: true }),
      presencePenalty: fc.double({ min: -1, max: 1, noNaN: true }),
      penaltyWindow: fc.integer({ min: 0, max: 128 }),
      seed: fc.integer({ min: 0, max: 2 ** 32 }),
      maxTokens: fc.integer({ min: 0, max: 6 }),
      stop: fc.oneof(fc.string({ maxLength: 3 }), fc.array(fc.string({ maxLength: 3 }), { maxLength: 3 })),
      stopIds: fc.array(fc.integer({ min: 0, max: VOCAB - 1 }), { maxLength: 3 }),
      includeSpecial: fc.boolean(),
      prefillChunk: fc.integer({ min: 1, max: 64 }),
      logitBias: fc.dictionary(
        fc.integer({ min: 0, max: VOCAB - 1 }).map(String),
        fc.double({ min: -10, max: 10, noNaN: true }),
        { maxKeys: 4 },
      ),
    },
    { requiredKeys: [] },
  )
  .map((o) => ({ maxTokens: 4, ...o }));

// any key (known or not) with any value
const anyOptions = fc.dictionary(
  fc.oneof(fc.constantFrom(...Object.keys(CHAT_OPTIONS), ...Object.keys(LOAD_OPTIONS)), fc.string({ maxLength: 6 })),
  junk,
  { maxKeys: 4 },
);

const drain = async (it) => {
  let stats = null,
    n = 0;
  for await (const c of it)
    if (c.stats) stats = c.stats;
    else if (c.token !== null) n++;
  return { n, stats };
};

// the call ends (a result or an error) within 20 s
const bounded = (p) =>
  Promise.race([
    p,
    new Promise((_, reject) => setTimeout(() => reject(new Error('hang: no answer in 20 s')), 20000).unref()),
  ]);

function isCoded(e) {
  assert.ok(e instanceof OxError, `an OxError, got ${e?.constructor?.name}: ${e?.message}`);
  assert.ok(CODES.includes(e.code), `a stable code, got ${e.code}`);
  return true;
}

// ---- the option checks alone ----

test('checkOptions: every key it refuses is named, with code RANGE; valid generation options pass', () => {
  fc.assert(
    fc.property(anyOptions, (o) => {
      try {
        checkOptions('chat', CHAT_OPTIONS, o, VOCAB);
      } catch (e) {
        assert.ok(e instanceof OxError && e.code === 'RANGE', String(e));
        assert.ok(
          Object.keys(o).some(
            (k) =>
              e.message.includes(JSON.stringify(k)) ||
              e.message.includes(`${k} must be`) ||
              e.message.startsWith(`${k}: `),
          ),
          e.message,
        ); // nested: "speculative: unknown option ..."
      }
    }),
    { seed: SEED, numRuns: 500 },
  );
  fc.assert(
    fc.property(validGenerate, (o) => checkOptions('generate', GENERATE_OPTIONS, o, VOCAB)),
    { seed: SEED, numRuns: 300 },
  );
});

test('known gaps closed: logitBias keys that are not token ids, misspelled and misplaced options, non-string stops', () => {
  const bad = [
    [{ logitBias: { foo: 1 } }, /logitBias.*"foo"/],
    [{ logitBias: { 384: 1 } }, /logitBias.*384/],
    [{ logitBias: { '-1': 1 } }, /logitBias/],
    [{ logitBias: { 1.5: 1 } }, /logitBias/],
    [{ logitBias: new Map([[7, NaN]]) }, /logitBias.*7/],
    [{ temprature: 0 }, /unknown option "temprature"/],
    [{ quant: 'q8' }, /unknown option "quant"/],
    [{ stop: [1] }, /stop must be/],
    [{ stopIds: [400] }, /stopIds/],
    [{ includeSpecial: 1 }, /includeSpecial/],
  ];
  for (const [o, re] of bad)
    assert.throws(
      () => checkOptions('generate', GENERATE_OPTIONS, o, VOCAB),
      (e) => e.code === 'RANGE' && re.test(e.message),
      JSON.stringify(o),
    );
  assert.throws(
    () => checkOptions('loadModel', LOAD_OPTIONS, { host: { timeout: 5 } }),
    /loadModel: host: unknown option "timeout"/,
  );
  checkOptions(
    'generate',
    GENERATE_OPTIONS,
    { logitBias: new Map([[3, -Infinity]]), stop: 'x', signal: new AbortController().signal },
    VOCAB,
  );
});

// ---- through the engine ----

test('generate with random options: an OxError with a code, or a generation of at most maxTokens; never a hang', async () => {
  await fc.assert(
    fc.asyncProperty(fc.oneof(validGenerate, anyOptions), async (o) => {
      try {
        const { n, stats } = await bounded(drain(model.generate([2, 50, 51], o)));
        assert.ok(stats && n <= (o.maxTokens ?? 256), `${n} tokens`);
      } catch (e) {
        isCoded(e);
      }
    }),
    { seed: SEED, numRuns: 60 },
  );
  assert.deepEqual(Array.from(await model.logits([2, 100, 101])), Array.from(reference));
});

test('valid options always generate', async () => {
  await fc.assert(
    fc.asyncProperty(validGenerate, async (o) => {
      const { stats } = await bounded(drain(model.generate([2, 60], { ...o, stop: [], stopIds: [] })));
      assert.equal(stats.generatedTokens, o.maxTokens);
    }),
    { seed: SEED, numRuns: 25 },
  );
});

test('token arrays: in-vocabulary ones give logits, anything else is RANGE', async () => {
  const tok = fc.oneof(
    { weight: 8, arbitrary: fc.integer({ min: 0, max: VOCAB - 1 }) },
    { weight: 1, arbitrary: junk },
  );
  await fc.assert(
    fc.asyncProperty(fc.array(tok, { maxLength: 20 }), async (ids) => {
      const valid = ids.length > 0 && ids.every((t) => Number.isInteger(t) && t >= 0 && t < VOCAB);
      try {
        const l = await bounded(model.logits(ids));
        assert.ok(valid, `accepted ${JSON.stringify(ids)}`);
        assert.equal(l.length, VOCAB);
        assert.ok(l.every(Number.isFinite));
      } catch (e) {
        isCoded(e);
        assert.ok(!valid, `refused valid ids ${JSON.stringify(ids)}: ${e.message}`);
        assert.equal(e.code, 'RANGE', e.message);
      }
    }),
    { seed: SEED, numRuns: 80 },
  );
  assert.deepEqual(Array.from(await model.logits([2, 100, 101])), Array.from(reference));
});

test('message arrays: chat renders and generates, or ends in an OxError with a code', async () => {
  const content = fc.oneof(
    fc.string({ maxLength: 20 }),
    fc.array(fc.record({ type: fc.constantFrom('text', 'image'), text: fc.string({ maxLength: 8 }) }), {
      maxLength: 2,
    }),
    junk,
  );
  const msg = fc.record(
    { role: fc.oneof(fc.constantFrom('system', 'user', 'assistant', 'model'), fc.string({ maxLength: 5 })), content },
    { requiredKeys: ['role'] },
  );
  await fc.assert(
    fc.asyncProperty(fc.oneof(fc.array(msg, { maxLength: 4 }), junk), async (messages) => {
      try {
        const { stats } = await bounded(drain(model.chat(messages, { maxTokens: 2, temperature: 0 })));
        assert.ok(stats.generatedTokens <= 2);
      } catch (e) {
        isCoded(e);
      }
    }),
    { seed: SEED, numRuns: 60 },
  );
});

test('chat templates: random Jinja renders to a string or ends in an OxError, never a hang', async () => {
  const piece = fc.constantFrom(
    '{{ bos_token }}',
    '{% for m in messages %}',
    '{% endfor %}',
    '{{ m.content }}',
    '{{ m.role }}',
    '{% if add_generation_prompt %}',
    '{% endif %}',
    '{{ raise_exception("no") }}',
    '{{ messages[5].x }}',
    '{{ ',
    ' }}',
    '{%',
    'text ',
    '\n',
    '{{ tools | length }}',
    '{{ 1 / 0 }}',
    '{% set x = x + 1 %}',
    '{{ messages | tojson }}',
    '{{ "a" * 3 }}',
    '{% for i in range(3) %}{{ i }}',
    '{{ vars.missing.deep }}',
  );
  const template = fc.array(piece, { maxLength: 8 }).map((xs) => xs.join(''));
  const messages = [
    { role: 'user', content: 'hi' },
    { role: 'assistant', content: 'yo' },
  ];
  await fc.assert(
    fc.asyncProperty(template, async (t) => {
      try {
        assert.equal(typeof (await bounded(model.renderChat(messages, { template: t }))), 'string');
      } catch (e) {
        isCoded(e);
      }
    }),
    { seed: SEED, numRuns: 150 },
  );
  assert.deepEqual(Array.from(await model.logits([2, 100, 101])), Array.from(reference));
});
