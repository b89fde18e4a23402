// Prompt-lookup speculative decoding through the public API: speculative: true / {draftTokens,
// fixedLength} on generate() and chat(). Greedy output equals plain decoding whatever the draft
// lengths; a model biased to repeat one token gets its drafts kept; fixed-length drafts (verifies
// of up to 17 tokens, several passes of the matmul tiles) change nothing either; bad options are
// coded errors naming the option.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { loadModel, OxError } from '../../js/main/index.js';
import { collect } from './api_collect.mjs';
import { synth, tmpDir, requireDist } from '../oracle/fixtures.mjs';

// a prompt that repeats itself: n-gram matches from the start
const TOKENS = [2, ...Array.from({ length: 30 }, (_, i) => 400 + (i % 7) * 13)];
const greedy = { temperature: 0, maxTokens: 24, stopIds: [] };
let dir, file;

before(() => {
  requireDist();
  dir = tmpDir('lookup');
  file = synth(dir, { type: 'q8_0' });
});

after(() => {
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

test('prompt lookup: greedy output equals plain decoding, chosen and fixed draft lengths', async () => {
  const m = await loadModel(file, { threads: 2 });
  try {
    for (const logitBias of [{}, { 300: 60 }]) {
      const plain = await collect(m.generate(TOKENS, { ...greedy, logitBias, speculative: false }));
      assert.equal(plain.stats.draftedTokens ?? 0, 0);
      const steps = [];
      // undefined: a greedy request drafts by default
      for (const speculative of [
        true,
        { draftTokens: 2 },
        { draftTokens: 5, fixedLength: true },
        { draftTokens: 16, fixedLength: true },
        undefined,
      ]) {
        const s = await collect(m.generate(TOKENS, { ...greedy, logitBias, speculative }));
        steps.push(s.stats.decodeSteps);
        assert.deepEqual(s.tokens, plain.tokens, JSON.stringify({ logitBias, speculative }));
        assert.ok(s.stats.acceptedTokens <= s.stats.draftedTokens);
        if (logitBias[300]) {
          // one token wins every step: after the first repeats every draft is right
          assert.ok(
            s.stats.draftedTokens > 0 && s.stats.acceptedTokens > 0.5 * s.stats.draftedTokens,
            JSON.stringify(s.stats),
          );
          assert.ok(
            s.stats.decodeSteps < plain.stats.decodeSteps,
            `${s.stats.decodeSteps} forwards vs ${plain.stats.decodeSteps}`,
          );
        }
      }
      // all drafts kept: the chosen length stays within one pass of the tiles (3 drafts, 4
      // tokens a forward), fixed lengths of 16 take 17 tokens a forward
      if (logitBias[300]) assert.ok(steps[0] >= 23 / 4 && steps[3] < steps[0], `forwards: ${steps}`);
    }
    const msgs = [{ role: 'user', content: 'say it again and again' }];
    const c0 = await collect(m.chat(msgs, { ...greedy, maxTokens: 12, speculative: false }));
    const c1 = await collect(
      m.chat(msgs, { ...greedy, maxTokens: 12, speculative: { draftTokens: 4, fixedLength: true } }),
    );
    assert.deepEqual(c1.tokens, c0.tokens);
  } finally {
    await m.unload();
  }
});

test('prompt lookup: on by default for greedy requests only', async () => {
  const m = await loadModel(file, { threads: 2 });
  try {
    const logitBias = { 300: 60 };
    const g = await collect(m.generate(TOKENS, { ...greedy, logitBias }));
    assert.ok(g.stats.draftedTokens > 0, 'greedy (temperature 0) drafts by default');
    const k1 = await collect(m.generate(TOKENS, { maxTokens: 24, stopIds: [], logitBias, topK: 1 }));
    assert.deepEqual(k1.tokens, g.tokens);
    assert.ok(k1.stats.draftedTokens > 0, 'topK 1 is greedy too');
    for (const opts of [
      { temperature: 0.8, seed: 5 },
      { ...greedy, logprobs: 2 },
      { ...greedy, speculative: false },
    ]) {
      const s = await collect(m.generate(TOKENS, { maxTokens: 24, stopIds: [], logitBias, ...opts }));
      assert.equal(s.stats.draftedTokens ?? 0, 0, JSON.stringify(opts));
    }
  } finally {
    await m.unload();
  }
});

test('prompt lookup: bad options name themselves', async () => {
  const m = await loadModel(file, { threads: 1 });
  try {
    for (const [speculative, what] of [
      [{ fixedLength: 'yes' }, /fixedLength/],
      [{ draftTokens: 17 }, /draftTokens/],
      [{ draftLength: 3 }, /draftLength/],
    ]) {
      await assert.rejects(
        collect(m.generate(TOKENS, { ...greedy, speculative })),
        (e) => e instanceof OxError && what.test(e.message),
        JSON.stringify(speculative),
      );
    }
    // the engine stays usable
    assert.equal((await collect(m.generate(TOKENS, { ...greedy, maxTokens: 3 }))).tokens.length, 3);
  } finally {
    await m.unload();
  }
});
