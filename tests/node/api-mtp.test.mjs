// The MTP drafter through the public API: loadModel(sources, {drafter}) and
// speculative: {method: 'mtp'} on generate() and chat(), on synthetic gemma4-assistant drafters
// (oxinfer synth --assistant-of). Greedy output equals plain decoding; a drafter built to agree
// with its target gets its drafts accepted; bad drafters are coded errors at load.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { loadModel, OxError } from '../../js/main/index.js';
import { collect } from './api_collect.mjs';
import { synth, tmpDir, requireDist } from '../oracle/fixtures.mjs';

const TOKENS = [2, 10, 400, 33, 500, 77, 901, 12, 300, 41, 600, 8, 250, 19, 700, 5, 66, 810, 3];
const DRAFTER = [
  '--ple',
  '0',
  '--kv-shared',
  '0',
  '--hidden',
  '128',
  '--layers',
  '4',
  '--swa-period',
  '4',
  '--ffn',
  '256',
];
let dir, target, quiet, drafter, agree, wide;

before(() => {
  requireDist();
  dir = tmpDir('mtp');
  target = synth(dir, { extra: ['--branch-gain', '0.1', '--qk-norm-scale', '0.5'] });
  quiet = synth(dir, { extra: ['--branch-gain', '0.02', '--qk-norm-scale', '0.5'] });
  drafter = synth(dir, { extra: [...DRAFTER, '--assistant-of', '256', '--seed', '77'] });
  agree = synth(dir, { extra: [...DRAFTER, '--assistant-of', '256', '--agree', '--branch-gain', '0.01'] });
  wide = synth(dir, { extra: [...DRAFTER, '--assistant-of', '512'] });
});

after(() => {
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

const greedy = { temperature: 0, maxTokens: 24, stopIds: [] };

test('mtp: greedy output equals plain decoding, on generate() and chat()', async () => {
  const m = await loadModel(target, { threads: 2, drafter });
  try {
    assert.deepEqual(m.info.drafter.files, [drafter.split('/').pop()]);
    const plain = await collect(m.generate(TOKENS, greedy));
    // minProbability 0: every draft of this random drafter is verified (and rejected)
    const mtp = await collect(
      m.generate(TOKENS, { ...greedy, speculative: { method: 'mtp', draftTokens: 4, minProbability: 0 } }),
    );
    assert.deepEqual(mtp.tokens, plain.tokens);
    assert.ok(mtp.stats.draftedTokens > 0 && mtp.stats.acceptedTokens === 0, `drafted ${mtp.stats.draftedTokens}`);
    // the default (0.3): it is unsure of everything, so nothing is drafted
    const gated = await collect(m.generate(TOKENS, { ...greedy, speculative: { method: 'mtp', draftTokens: 4 } }));
    assert.deepEqual(gated.tokens, plain.tokens);
    assert.equal(gated.stats.draftedTokens, 0);
    const msgs = [{ role: 'user', content: 'hello' }];
    const c0 = await collect(m.chat(msgs, { ...greedy, maxTokens: 8 }));
    const c1 = await collect(
      m.chat(msgs, { ...greedy, maxTokens: 8, speculative: { method: 'mtp', draftTokens: 3, minProbability: 0 } }),
    );
    assert.deepEqual(c1.tokens, c0.tokens);
    assert.ok(c1.stats.draftedTokens > 0);
  } finally {
    await m.unload();
  }
});

test('mtp: a drafter that agrees with its target gets most drafts accepted', async () => {
  const m = await loadModel(quiet, { threads: 2, drafter: [agree] });
  try {
    const plain = await collect(m.generate(TOKENS, greedy));
    const mtp = await collect(m.generate(TOKENS, { ...greedy, speculative: { method: 'mtp', draftTokens: 4 } }));
    assert.deepEqual(mtp.tokens, plain.tokens);
    const { draftedTokens: d, acceptedTokens: a } = mtp.stats;
    assert.ok(a > 0 && a * 2 > d, `accepted ${a} of ${d}`);
  } finally {
    await m.unload();
  }
});

test('mtp: bad drafters and a missing one are coded errors; the model stays usable', async () => {
  const rejects = (p, code, re) =>
    assert.rejects(p, (e) => e instanceof OxError && e.code === code && re.test(e.message));
  await rejects(loadModel(target, { threads: 1, drafter: wide }), 'CONFIG', /width 512/);
  await rejects(loadModel(target, { threads: 1, drafter: target }), 'CONFIG', /not a gemma4-assistant/);
  await rejects(loadModel(drafter, { threads: 1 }), 'CONFIG', /load it as the drafter/);
  await rejects(loadModel(target, { threads: 1, drafter: [] }), 'RANGE', /drafter/);
  await rejects(
    loadModel(target, { threads: 1, drafter }).then(async (m) => {
      try {
        await collect(m.generate(TOKENS, { speculative: { method: 'mtp', minProbability: 2 } }));
      } finally {
        await m.unload();
      }
    }),
    'RANGE',
    /minProbability/,
  );
  const m = await loadModel(target, { threads: 1 });
  try {
    await rejects(
      collect(m.generate(TOKENS, { ...greedy, speculative: { method: 'mtp' } })),
      'STATE',
      /no MTP drafter/,
    );
    const ok = await collect(m.generate(TOKENS, { ...greedy, maxTokens: 4 }));
    assert.equal(ok.tokens.length, 4);
  } finally {
    await m.unload();
  }
});
