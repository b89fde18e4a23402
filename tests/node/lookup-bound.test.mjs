// The bench's offline costing of drafting schedules (tools/bench/lookup_bound.mjs): a small case
// worked by hand, and for any text and cost curve 1 <= best lookup schedule <= every draft right
// (fast-check).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { bestLookup, allRight } from '../../tools/bench/lookup_bound.mjs';

test('lookup bound: a hand-worked case', () => {
  // 5 tokens, forwards of 1..3 tokens cost 1, 1.5, 2: plain decoding takes 4 forwards (the first
  // token comes from the prompt); with every draft right the best is 3 (e.g. the pending token
  // + 2 drafts, then one plain forward)
  const cost = [0, 1, 1.5, 2];
  assert.equal(allRight([5, 6, 7, 8, 9], cost), 4 / 3);
  // the prompt holds the answer after a 2-gram: lookup's candidates are right, the same bound
  assert.equal(bestLookup([1, 2, 5, 6, 7, 8, 9, 3, 4, 1, 2], [5, 6, 7, 8, 9], cost), 4 / 3);
  // nothing repeats: no draft pays, plain decoding
  assert.equal(bestLookup([1, 2, 3], [5, 6, 7, 8, 9], cost), 1);
  // a wrong draft is never chosen: the prompt's 2-gram continues differently
  assert.equal(bestLookup([1, 2, 7, 7, 1, 2], [5, 6, 7, 8, 9], cost), 1);
});

test('lookup bound: 1 <= best lookup schedule <= every draft right', () => {
  const tokens = fc.array(fc.integer({ min: 0, max: 5 }), { minLength: 2, maxLength: 40 });
  const curve = fc
    .array(fc.double({ min: 0.05, max: 1, noNaN: true }), { minLength: 1, maxLength: 8 })
    .map((steps) => [0, 1, ...steps.map((_, i) => 1 + steps.slice(0, i + 1).reduce((a, b) => a + b, 0))]);
  fc.assert(
    fc.property(tokens, tokens, curve, (prompt, out, cost) => {
      const best = bestLookup(prompt, out, cost),
        ceil = allRight(out, cost);
      return best >= 1 - 1e-12 && best <= ceil + 1e-12;
    }),
  );
});
