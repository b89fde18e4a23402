// An abort reaches a grammar while the engine worker is inside C: Connection.abort writes the
// request's id into the shared abort flag, the worker's Module.oxAborted answers true for it, and
// the grammar compile polls that and stops with ABORTED, so the generation ends as 'abort' before
// its prefill. The abort message alone is seen only when the worker next yields, after the
// compile and the first prefill chunk: the prefill count tells the two paths apart.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { loadModel } from '../../js/main/index.js';
import { synth, tmpDir, requireDist } from '../oracle/fixtures.mjs';

// a sequence of 50,000 literals: its parse alone is many poll intervals of work (a counted
// repetition is not: the compile keeps the count instead of expanding it)
const EXPENSIVE = `root ::= ${Array.from({ length: 50000 }, (_, i) => `"w${i % 10}"`).join(' ')}\n`;
const PROMPT = [2, 17, 300, 5, 99, 7, 8, 9];

let model;

before(async () => {
  requireDist();
  model = await loadModel(synth(tmpDir('abort-grammar')), { threads: 1 });
});

after(() => model?.unload());

const generate = (opts) => model.engine.start('generate', { tokens: PROMPT, opts });

test('the grammar compiles, and the prefill runs, when nothing aborts', async () => {
  const st = await generate({ grammar: EXPENSIVE, maxTokens: 0 }).done;
  assert.equal(st.reason, 'length');
  assert.equal(st.reusedTokens + st.prefillTokens, PROMPT.length);
  assert.ok(st.prefillTokens > 0);
  await model.engine.call('reset');
});

test('an abort right after the start stops the grammar compile inside C, before the prefill', async () => {
  for (let i = 0; i < 3; i++) {
    const job = generate({ grammar: EXPENSIVE, maxTokens: 4, seed: i });
    model.engine.abort(job.id);
    const st = await job.done;
    assert.equal(st.reason, 'abort');
    assert.equal(st.prefillTokens, 0, 'the compile returned ABORTED: no prefill ran');
    assert.equal(st.generatedTokens, 0);

    // the engine is free at once and the abort is not left over for the next request
    const next = await generate({ maxTokens: 2, seed: i }).done;
    assert.equal(next.reason, 'length');
    assert.equal(next.generatedTokens, 2);
    assert.equal(next.reusedTokens + next.prefillTokens, PROMPT.length);
    await model.engine.call('reset');
  }
});
