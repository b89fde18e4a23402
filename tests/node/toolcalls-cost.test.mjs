// The tool-call stream parser's cost (js/shared/toolcalls.js): a turn streamed in 4-character pieces
// costs operations (characters the parser looks at, TurnStream.ops) in proportion to its
// length, from 1x to 64x, for each shape a hostile model could stretch: plain text, a thought,
// a long string argument, a long array argument, many calls, a long key, a long number, a
// call that turns out not to be one. Counted, not timed. The text kept between pushes stays
// bounded too (an open call's text aside, which is read again if the call is not one).
// And: a text cut inside a call (max_tokens) ends with the call partial, out of the content.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { TurnStream, parseTurn, formatCall } from '../../js/shared/toolcalls.js';

const Q = '<|"|>';
const SHAPES = {
  text: (n) => 'word '.repeat(n / 5),
  thought: (n) => `<|channel>thought\n${'hmm '.repeat(n / 4)}<channel|>done`,
  'string argument': (n) => `<|tool_call>call:f{s:${Q}${'abc '.repeat(n / 4)}${Q}}<tool_call|>`,
  'array argument': (n) =>
    `<|tool_call>call:f{a:[${Array.from({ length: n / 6 }, (_, i) => i % 1000).join(',')}]}<tool_call|>`,
  'nested arrays': (n) => `<|tool_call>call:f{a:${'['.repeat(n / 8)}1${']'.repeat(n / 8)}}<tool_call|>`,
  'many calls': (n) => '<|tool_call>call:f{x:1}<tool_call|>'.repeat(n / 30),
  'long key': (n) => `<|tool_call>call:f{${'k'.repeat(n)}:1}<tool_call|>`,
  'long number': (n) => `<|tool_call>call:f{x:1${'0'.repeat(n)}}<tool_call|>`,
  'not a call': (n) => `<|tool_call>call:f{s:${Q}${'abc '.repeat(n / 4)}${Q} oops}`,
};

function stream(text, size = 4) {
  const st = new TurnStream();
  let kept = 0;
  for (let i = 0; i < text.length; i += size) {
    st.push(text.slice(i, i + size));
    kept = Math.max(kept, st.reader.buf.length);
  }
  const { turn } = st.end();
  return { ops: st.ops, kept, turn };
}

for (const [shape, make] of Object.entries(SHAPES)) {
  test(`stream cost is linear in the length: ${shape}`, () => {
    const per = [];
    for (const k of [1, 4, 16, 64]) {
      const text = make(1024 * k);
      const r = stream(text);
      per.push(r.ops / text.length);
      assert.deepEqual(r.turn, parseTurn(text), 'the streamed turn is the whole-text parse');
      assert.ok(r.kept <= 64, `${shape}: ${r.kept} characters kept between pushes`);
    }
    // operations per character: a small constant at every size (quadratic would grow 64x)
    for (const p of per)
      assert.ok(p <= 12, `${shape}: ${per.map((x) => x.toFixed(2)).join(' ')} operations per character`);
    assert.ok(
      per[3] <= per[0] * 1.5 + 1,
      `${shape}: no growth with the length (${per.map((x) => x.toFixed(2)).join(' ')})`,
    );
  });
}

test('a text cut inside a call (max_tokens): the call stays partial, its markup never reaches content', () => {
  const Qs = fc.string({ maxLength: 10 }).filter((s) => !s.includes('<'));
  const call = fc.record({
    name: fc.stringMatching(/^[a-z_]{1,8}$/),
    arguments: fc.dictionary(
      fc.stringMatching(/^[a-z]{1,6}$/),
      fc.oneof(Qs, fc.integer(), fc.array(fc.boolean(), { maxLength: 3 })),
      { minKeys: 1, maxKeys: 3 },
    ),
  });
  fc.assert(
    fc.property(Qs, call, fc.nat(), fc.integer({ min: 1, max: 7 }), (content, c, cutAt, size) => {
      const whole = content + formatCall(c);
      const open = whole.indexOf('{', content.length) + 1; // from the call's first brace to before its end
      const at = open + (cutAt % (whole.length - open));
      const text = whole.slice(0, at);
      const st = new TurnStream();
      for (let i = 0; i < text.length; i += size) st.push(text.slice(i, i + size));
      const { turn } = st.end({ cut: true });
      assert.deepEqual(turn, parseTurn(text, { partial: true }));
      assert.equal(turn.content, content, `content of ${JSON.stringify(text)}`);
      assert.equal(turn.toolCalls.length, 1);
      assert.equal(turn.toolCalls[0].name, c.name);
      // without cut, the same text is read as plain text (the call never closed)
      assert.ok(parseTurn(text).content.includes('<|tool_call>'));
    }),
    { seed: 20261204, numRuns: 500 },
  );
});
