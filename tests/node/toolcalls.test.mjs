// Gemma 4 tool-call syntax: the parser against the outputs llama.cpp's Gemma 4 parser is tested
// on (its tests/test-chat.cpp cases, rewritten here as expectations), streaming = whole-text
// parsing at every split, formatValue/valueToJSON round trips, and the built-in chat format's
// tool turns against the checkpoint template.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseTurn, TurnStream, valueToJSON, formatValue } from '../../js/shared/toolcalls.js';
import { renderChat } from '../../js/engine/chat.js';

const Q = '<|"|>';
const call = (name, body) => `<|tool_call>call:${name}${body}<tool_call|>`;

// [model text, expected {content, reasoning, calls: [[name, args object]]}]
const CASES = [
  ['Hello, world!', { content: 'Hello, world!' }],
  [
    "<|channel>thought\nI'm\nthinking<channel|>Hello, world!\nWhat's up?",
    { reasoning: "I'm\nthinking", content: "Hello, world!\nWhat's up?" },
  ],
  ["<|channel>thought<channel|>Hello, world!\nWhat's up?", { content: "Hello, world!\nWhat's up?" }],
  [call('get_time', `{city:${Q}London${Q}}`), { calls: [['get_time', { city: 'London' }]] }],
  [call('get_time', `{city:${Q}San Francisco${Q}}`), { calls: [['get_time', { city: 'San Francisco' }]] }],
  [call('empty_args', '{}'), { calls: [['empty_args', {}]] }],
  [
    `Hello, world!\nWhat's up?${call('get_time', `{city:${Q}Paris${Q}}`)}`,
    { content: "Hello, world!\nWhat's up?", calls: [['get_time', { city: 'Paris' }]] },
  ],
  [
    `<|channel>thought\nI'm\nthinking<channel|>${call('get_time', `{city:${Q}Paris${Q}}`)}`,
    { reasoning: "I'm\nthinking", calls: [['get_time', { city: 'Paris' }]] },
  ],
  [
    call('get_time', `{city:${Q}London${Q}}`) + call('get_weather', `{city:${Q}Paris${Q}}`),
    {
      calls: [
        ['get_time', { city: 'London' }],
        ['get_weather', { city: 'Paris' }],
      ],
    },
  ],
  [call('special_function', '{arg1:42}'), { calls: [['special_function', { arg1: 42 }]] }],
  [call('special_function', '{arg1:-7}'), { calls: [['special_function', { arg1: -7 }]] }],
  [call('amount', '{orig:3.14}'), { calls: [['amount', { orig: 3.14 }]] }],
  [call('toggle', '{enabled:true}'), { calls: [['toggle', { enabled: true }]] }],
  [call('toggle', '{enabled:false}'), { calls: [['toggle', { enabled: false }]] }],
  [call('set_nullable', '{value:null}'), { calls: [['set_nullable', { value: null }]] }],
  [
    call('todo_list', `{todos:[${Q}buy milk${Q},${Q}walk dog${Q}]}`),
    { calls: [['todo_list', { todos: ['buy milk', 'walk dog'] }]] },
  ],
  [
    call('set_config', `{config:{theme:${Q}dark${Q},count:3}}`),
    { calls: [['set_config', { config: { theme: 'dark', count: 3 } }]] },
  ],
  [call('todo_list', '{todos:[]}'), { calls: [['todo_list', { todos: [] }]] }],
  [call('set_config', '{config:{}}'), { calls: [['set_config', { config: {} }]] }],
  [call('amount', '{orig:1.5e10}'), { calls: [['amount', { orig: 1.5e10 }]] }],
  // edge cases: empty thoughts and stray channel tokens around the content
  ["<|channel>thought\n<channel|>Hello, world!\nWhat's up?<channel|>", { content: "Hello, world!\nWhat's up?" }],
  [
    "<|channel>thought\n<channel|>Hello, world!\nWhat's up?<|channel>thought\n<channel|>",
    { content: "Hello, world!\nWhat's up?" },
  ],
  ["<|channel><|channel>thought\n<channel|>Hello, world!\nWhat's up?", { content: "Hello, world!\nWhat's up?" }],
  // strings keep what JSON must escape
  [call('say', `{text:${Q}a "quoted" \\ line\nnext${Q}}`), { calls: [['say', { text: 'a "quoted" \\ line\nnext' }]] }],
  // a broken call stays text
  ['<|tool_call>not a call<tool_call|>', { content: '<|tool_call>not a call<tool_call|>' }],
];

function check(text, want, got) {
  assert.equal(got.content, want.content ?? '', `content of ${JSON.stringify(text)}`);
  assert.equal(got.reasoning, want.reasoning ?? '', `reasoning of ${JSON.stringify(text)}`);
  const calls = got.toolCalls.map((c) => [c.name, JSON.parse(c.arguments)]);
  assert.deepEqual(calls, want.calls ?? [], `tool calls of ${JSON.stringify(text)}`);
}

test('parseTurn matches the outputs llama.cpp parses', () => {
  for (const [text, want] of CASES) check(text, want, parseTurn(text));
});

test('the generation prompt may lead the text', () => {
  check(
    `<|turn>model\n${call('f', '{a:1}')}`,
    { calls: [['f', { a: 1 }]] },
    parseTurn(`<|turn>model\n${call('f', '{a:1}')}`),
  );
});

// Control tokens are whole tokens, so a stream splits between them and anywhere in plain text:
// units are the control tokens and single characters; check every split between units.
const units = (text) => text.match(/<\|[a-z_"]*\|?>|<[a-z_]*\|>|[\s\S]/g);
function pieces(us, cuts) {
  const out = [];
  let k = 0;
  for (const c of cuts) (out.push(us.slice(k, c).join('')), (k = c));
  out.push(us.slice(k).join(''));
  return out.filter((p) => p.length);
}

test('streamed deltas add up to the whole-text parse at every split', () => {
  for (const [text] of CASES) {
    const us = units(text);
    for (let cut = 0; cut <= us.length; cut++) {
      for (const split of [[cut], [cut, Math.min(us.length, cut + 1)], [cut, Math.min(us.length, cut + 3)]]) {
        const st = new TurnStream();
        const acc = { content: '', reasoning: '', calls: [] };
        const apply = (d) => {
          if (d.content !== undefined) acc.content += d.content;
          if (d.reasoning !== undefined) acc.reasoning += d.reasoning;
          if (d.toolCall) {
            const c = (acc.calls[d.toolCall.index] ??= { name: '', arguments: '' });
            if (d.toolCall.name) c.name = d.toolCall.name;
            c.arguments += d.toolCall.arguments;
          }
        };
        for (const p of pieces(us, split)) st.push(p).forEach(apply);
        const { deltas, turn } = st.end();
        deltas.forEach(apply);
        assert.equal(acc.content, turn.content, `content, ${JSON.stringify(text)} split at ${split}`);
        assert.ok(
          turn.reasoning.startsWith(acc.reasoning.trimEnd()) && acc.reasoning.trimEnd() === turn.reasoning,
          `reasoning, ${JSON.stringify(text)} split at ${split}`,
        );
        assert.deepEqual(
          acc.calls.map((c) => [c.name, c.arguments]),
          turn.toolCalls.map((c) => [c.name, c.arguments]),
          `calls, ${JSON.stringify(text)} split at ${split}`,
        );
      }
    }
  }
});

test('a streamed call names its function once, before its arguments', () => {
  const st = new TurnStream();
  const deltas = [];
  for (const p of ['Sure.', '<|tool_call>', 'call:get_', 'time{', 'city:', Q, 'Par', 'is', Q, '}', '<tool_call|>'])
    deltas.push(...st.push(p));
  deltas.push(...st.end().deltas);
  const named = deltas.filter((d) => d.toolCall?.name);
  assert.equal(named.length, 1);
  assert.equal(named[0].toolCall.name, 'get_time');
  const args = deltas
    .filter((d) => d.toolCall)
    .map((d) => d.toolCall.arguments)
    .join('');
  assert.deepEqual(JSON.parse(args), { city: 'Paris' });
  assert.equal(
    deltas
      .filter((d) => d.content)
      .map((d) => d.content)
      .join(''),
    'Sure.',
  );
});

test('formatValue and valueToJSON round-trip JSON values', () => {
  const values = [
    { city: 'Paris' },
    { n: -7, x: 3.25, e: 1.5e10, t: true, f: false, z: null },
    { list: ['a', 'b', { deep: [1, [2, []]] }], empty: {} },
    [],
    'plain',
    42,
    { text: 'with "quotes", commas, {braces}, [brackets] and\nnewlines' },
  ];
  for (const v of values) assert.deepEqual(JSON.parse(valueToJSON(formatValue(v))), v, JSON.stringify(v));
  assert.equal(formatValue({ b: 1, a: 'x' }), `{a:${Q}x${Q},b:1}`); // keys sorted, as the template's dictsort
  assert.throws(() => valueToJSON('{a:'), /ends inside/);
  assert.throws(() => valueToJSON('{a:1} trailing'), /after the value/);
  assert.throws(() => valueToJSON('{a:wat}'), /unexpected/);
});

// The built-in format against the checkpoints' own template (llama.cpp ships a copy of
// Gemma 4's in its source tree, which tools/llamacpp.sh unpacks); skipped without it.

const TEMPLATE = path.join(
  process.env.OX_LLAMACPP_DIR ?? path.join(os.homedir(), '.cache', 'llamacpp'),
  'src',
  'models',
  'templates',
  'google-gemma-4-31B-it.jinja',
);

test('the built-in Gemma 4 format writes tools, calls and results as the checkpoint template does', async (t) => {
  if (!fs.existsSync(TEMPLATE)) return t.skip(`${TEMPLATE} not found (tools/llamacpp.sh unpacks llama.cpp's source)`);
  const template = fs.readFileSync(TEMPLATE, 'utf8');
  const tools = [
    {
      type: 'function',
      function: {
        name: 'get_weather',
        description: 'Weather',
        parameters: {
          type: 'object',
          properties: {
            city: { type: 'string', description: 'City' },
            unit: { type: 'string', enum: ['c', 'f'] },
            days: { type: 'array', items: { type: 'integer' } },
          },
          required: ['city'],
        },
      },
    },
  ];
  const call = {
    id: 'c1',
    type: 'function',
    function: { name: 'get_weather', arguments: { city: 'Paris', days: [1, 2] } },
  };
  const conversations = [
    [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Weather?' },
    ],
    [
      { role: 'user', content: 'Weather?' },
      { role: 'assistant', content: '', tool_calls: [call] },
      { role: 'tool', tool_call_id: 'c1', content: '{"temp": 21}' },
    ],
    [
      { role: 'user', content: 'Weather?' },
      { role: 'assistant', content: '', tool_calls: [call] },
      { role: 'tool', tool_call_id: 'c1', content: 'sunny' },
      { role: 'assistant', content: 'It is sunny.' },
      { role: 'user', content: 'Thanks' },
    ],
  ];
  // the template closes an empty thought after the generation prompt when thinking is off;
  // the built-in format leaves the turn open (the model may think or answer)
  const EMPTY_THOUGHT = '<|channel>thought\n<channel|>';
  for (const messages of conversations) {
    const want = (await renderChat(template, messages, { tools })).replace(
      new RegExp(`${EMPTY_THOUGHT.replace(/[|]/g, '\\|')}$`),
      '',
    );
    const got = await renderChat(null, messages, { tools });
    assert.equal(got, want, JSON.stringify(messages));
  }
});
