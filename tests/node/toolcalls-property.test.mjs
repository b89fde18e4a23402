// Property-based tests of the Gemma 4 tool-call parser (js/shared/toolcalls.js, fast-check): over
// arbitrary text built from the syntax's own pieces, parseTurn and TurnStream never throw and
// a stream's deltas add up to the whole-text parse at every split point (characters, not only
// control tokens); over arbitrary call objects (nested JSON values), rendering a turn and
// parsing it back gives the same content, reasoning and calls. valueToJSON refuses what it
// cannot read with a SyntaxError only. Seeded (FC_SEED, default fixed) so a failure replays.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { parseTurn, TurnStream, valueToJSON, formatValue, formatCall } from '../../js/shared/toolcalls.js';

const SEED = Number(process.env.FC_SEED ?? 20261201);
const Q = '<|"|>';
const MARKERS = ['<|channel>', '<channel|>', '<|tool_call>', '<tool_call|>', Q];

// ---- arbitraries ----

// text made of the syntax's pieces (markers, keywords, brackets, numbers, literals) and free
// characters, so that random draws reach the parser's every branch, broken and whole
const piece = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.constantFrom(
      ...MARKERS,
      'thought',
      'thought\n',
      'call:',
      'call:f',
      'get_time',
      '<|turn>model\n',
      '{',
      '}',
      '[',
      ']',
      ',',
      ':',
      'a:',
      'city:',
      ' ',
      '\n',
    ),
  },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      'true',
      'fals',
      'null',
      'nu',
      '-',
      '-7',
      '3.',
      '3.14',
      '1e',
      '1.5e10',
      '0',
      '00',
      'e+',
      '.5',
    ),
  },
  { weight: 2, arbitrary: fc.string({ maxLength: 6 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 3 }) },
);
const syntaxText = fc.array(piece, { maxLength: 40 }).map((xs) => xs.join(''));

// JSON values Gemma 4 notation can carry: strings without the <|"|> delimiter (the format
// has no escapes), object keys that are bare words (no ':' or '}', no leading space, not
// empty), numbers as JSON spells them (no -0)
const noMarker = (s) =>
  !MARKERS.some((m) => s.includes(m)) && !s.includes('<|"') && !s.endsWith('<|') && !s.endsWith('<');
const text = fc.string({ maxLength: 12 }).filter(noMarker);
const key = fc.string({ minLength: 1, maxLength: 8 }).filter((k) => !/[:}]/.test(k) && !/^\s/.test(k));
const { value: jsonValue } = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    text,
    fc.boolean(),
    fc.constant(null),
    fc.integer({ min: -1e9, max: 1e9 }),
    fc.double({ noNaN: true, noDefaultInfinity: true }).map((x) => JSON.parse(JSON.stringify(x))),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(key, tie('value'), { maxKeys: 4, noNullPrototype: true }),
  ),
}));
const name = fc.stringMatching(/^[\w.-]{1,12}$/);
const call = fc.record(
  { name, arguments: fc.dictionary(key, jsonValue, { maxKeys: 5, noNullPrototype: true }) },
  { noNullPrototype: true },
);

// a whole turn: an optional thought, content, calls (content may not hold the syntax's markers)
const turn = fc.record({
  reasoning: fc.option(fc.string({ maxLength: 20 }).filter(noMarker), { nil: null }),
  content: fc.string({ maxLength: 20 }).filter((s) => noMarker(s) && !s.startsWith('<|turn>')),
  calls: fc.array(call, { maxLength: 3 }),
});
const render = (t) =>
  (t.reasoning === null ? '' : `<|channel>thought\n${t.reasoning}<channel|>`) +
  t.content +
  t.calls.map(formatCall).join('');

// split points of a text: sorted distinct character offsets
const withSplits = (arb) =>
  arb.chain((s) =>
    fc.tuple(
      fc.constant(s),
      fc.uniqueArray(fc.integer({ min: 0, max: s.length }), { maxLength: 8 }).map((xs) => xs.sort((a, b) => a - b)),
    ),
  );
const cut = (s, at) => [0, ...at, s.length].slice(1).map((e, i, xs) => s.slice(i ? xs[i - 1] : 0, e));

// what a client builds from the deltas of a stream
function streamed(pieces, opts) {
  const st = new TurnStream(opts);
  const acc = { content: '', reasoning: '', calls: [] };
  const apply = (d) => {
    if (d.content !== undefined) acc.content += d.content;
    else if (d.reasoning !== undefined) acc.reasoning += d.reasoning;
    else {
      const c = (acc.calls[d.toolCall.index] ??= { name: null, arguments: '' });
      if (d.toolCall.name) {
        assert.equal(c.name, null, 'a call is named once');
        c.name = d.toolCall.name;
      }
      c.arguments += d.toolCall.arguments;
    }
  };
  for (const p of pieces) st.push(p).forEach(apply);
  const { deltas, turn: whole } = st.end();
  deltas.forEach(apply);
  return { acc, whole };
}

function sameAsWhole({ acc, whole }, what) {
  assert.equal(acc.content, whole.content, `content of ${what}`);
  // partial parses keep the thought's trailing whitespace (more may follow); the end trims it
  assert.equal(acc.reasoning.trimEnd(), whole.reasoning, `reasoning of ${what}`);
  assert.deepEqual(
    acc.calls.map((c) => [c.name, c.arguments]),
    whole.toolCalls.map((c) => [c.name, c.arguments]),
    `calls of ${what}`,
  );
}

// ---- properties ----

test('parseTurn never throws on arbitrary text, whole or partial, with or without tools; calls carry JSON', () => {
  fc.assert(
    fc.property(syntaxText, fc.boolean(), fc.boolean(), (s, partial, tools) => {
      const t = parseTurn(s, { partial, tools });
      assert.equal(typeof t.content, 'string');
      assert.equal(typeof t.reasoning, 'string');
      for (const c of t.toolCalls) {
        assert.match(c.name, /^[\w.-]+$/);
        if (!c.partial) JSON.parse(c.arguments); // a complete call's arguments are JSON
      }
      if (!partial)
        assert.ok(
          t.toolCalls.every((c) => !c.partial),
          'a whole text has no partial call',
        );
      if (!tools) assert.equal(t.toolCalls.length, 0);
    }),
    { seed: SEED, numRuns: 3000 },
  );
});

test('streaming equals the whole-text parse at every split of arbitrary text', () => {
  fc.assert(
    fc.property(withSplits(syntaxText), fc.boolean(), ([s, at], tools) => {
      sameAsWhole(streamed(cut(s, at), { tools }), JSON.stringify(s) + ` split at ${at}`);
    }),
    { seed: SEED, numRuns: 2000 },
  );
});

test('streaming equals the whole-text parse at every split of rendered turns, one character at a time too', () => {
  fc.assert(
    fc.property(withSplits(turn.map(render)), ([s, at]) => {
      sameAsWhole(streamed(cut(s, at)), JSON.stringify(s) + ` split at ${at}`);
    }),
    { seed: SEED, numRuns: 500 },
  );
  fc.assert(
    fc.property(turn.map(render), (s) => sameAsWhole(streamed([...s]), JSON.stringify(s) + ' char by char')),
    { seed: SEED, numRuns: 100 },
  );
});

test('render -> parse round trip of arbitrary turns and call objects (nested values)', () => {
  fc.assert(
    fc.property(turn, (t) => {
      const s = render(t);
      const got = parseTurn(s);
      assert.equal(got.content, t.content, `content of ${JSON.stringify(s)}`);
      // the parser drops the thought's leading whitespace and the format's final newline
      assert.equal(
        got.reasoning,
        t.reasoning === null ? '' : t.reasoning.replace(/^\s+/, '').trimEnd(),
        `reasoning of ${JSON.stringify(s)}`,
      );
      assert.deepEqual(
        got.toolCalls.map((c) => ({ name: c.name, arguments: JSON.parse(c.arguments) })),
        t.calls,
        `calls of ${JSON.stringify(s)}`,
      );
    }),
    { seed: SEED, numRuns: 1000 },
  );
});

test('formatValue -> valueToJSON round trip; anything else valueToJSON refuses with a SyntaxError', () => {
  fc.assert(
    fc.property(jsonValue, (v) => assert.deepEqual(JSON.parse(valueToJSON(formatValue(v))), v)),
    { seed: SEED, numRuns: 1000 },
  );
  fc.assert(
    fc.property(syntaxText, (s) => {
      try {
        JSON.parse(valueToJSON(s)); // what it accepts is JSON
      } catch (e) {
        assert.ok(
          e instanceof SyntaxError && (e.message.startsWith('Gemma 4 value:') || e.message.includes('JSON')),
          `${e?.constructor?.name}: ${e?.message}`,
        );
        assert.ok(
          e.message.startsWith('Gemma 4 value:'),
          `valueToJSON returned text that is not JSON for ${JSON.stringify(s)}: ${e.message}`,
        );
      }
    }),
    { seed: SEED, numRuns: 3000 },
  );
});
