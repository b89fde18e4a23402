// The OpenAI-shaped API (js/main/openai.js) on the wasm engine: response and chunk shapes, the
// official `openai` client against model.fetch, tool calls forced by tool_choice and kept valid
// by the grammar (a random-weight model: only the grammar makes the output parse), a multi-step
// tool loop rendered back through the template, json_schema answers that validate (ajv) over
// several schemas and seeds, and request errors.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import Ajv from 'ajv';
import { loadModel, OxError } from '../../js/main/index.js';
import { synth, tmpDir, requireDist } from '../oracle/fixtures.mjs';

let model, client;

before(async () => {
  requireDist();
  const file = synth(tmpDir('openai'), { preset: 'tiny', type: 'q8_0', extra: ['--chat-tokens'] });
  model = await loadModel(file, { threads: 2 });
  client = new OpenAI({ apiKey: 'local', baseURL: 'http://oxinfer.local/v1', fetch: model.fetch });
});

after(() => model?.unload());

const WEATHER = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'The weather in a city',
    parameters: {
      type: 'object',
      properties: {
        city: { type: 'string', maxLength: 12 },
        days: { type: 'integer' },
        unit: { type: 'string', enum: ['c', 'f'] },
      },
      required: ['city', 'unit'],
      additionalProperties: false,
    },
  },
};

test('a completion has the OpenAI shape and usage', async () => {
  const r = await model.createChatCompletion({
    messages: [{ role: 'user', content: 'Hello' }],
    max_tokens: 8,
    temperature: 0,
    seed: 1,
  });
  assert.equal(r.object, 'chat.completion');
  assert.match(r.id, /^chatcmpl-/);
  assert.equal(r.choices.length, 1);
  const c = r.choices[0];
  assert.equal(c.message.role, 'assistant');
  assert.equal(typeof c.message.content, 'string');
  assert.ok(['stop', 'length'].includes(c.finish_reason));
  assert.ok(r.usage.prompt_tokens > 0 && r.usage.completion_tokens <= 8);
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
  // the same request through generate gives the same text (greedy)
  let text = '';
  for await (const ev of model.chat([{ role: 'user', content: 'Hello' }], { maxTokens: 8, temperature: 0 }))
    if (!ev.stats) text += ev.text;
  assert.equal(c.message.content, text);
});

test('streamed chunks add up to the completion, usage last', async () => {
  const req = { messages: [{ role: 'user', content: 'Count' }], max_tokens: 12, temperature: 0 };
  const whole = await model.createChatCompletion(req);
  const chunks = [];
  for await (const ch of await model.createChatCompletion({
    ...req,
    stream: true,
    stream_options: { include_usage: true },
  }))
    chunks.push(ch);
  assert.ok(chunks.every((c) => c.object === 'chat.completion.chunk' && c.id === chunks[0].id));
  assert.equal(chunks[0].choices[0].delta.role, 'assistant');
  const text = chunks
    .flatMap((c) => c.choices)
    .map((c) => c.delta.content ?? '')
    .join('');
  assert.equal(text, whole.choices[0].message.content);
  const last = chunks.at(-1);
  assert.deepEqual(last.choices, []);
  assert.deepEqual(last.usage, whole.usage);
  assert.equal(chunks.at(-2).choices[0].finish_reason, whole.choices[0].finish_reason);
});

test('the official openai client runs against model.fetch (models, chat, stream)', async () => {
  const models = await client.models.list();
  assert.equal(models.data.length, 1);
  const r = await client.chat.completions.create({
    model: 'local',
    messages: [{ role: 'user', content: 'Hi' }],
    max_tokens: 6,
    temperature: 0,
  });
  assert.equal(r.choices[0].message.role, 'assistant');
  let streamed = '';
  const stream = await client.chat.completions.create({
    model: 'local',
    messages: [{ role: 'user', content: 'Hi' }],
    max_tokens: 6,
    temperature: 0,
    stream: true,
  });
  for await (const ch of stream) streamed += ch.choices[0]?.delta?.content ?? '';
  assert.equal(streamed, r.choices[0].message.content);
});

test('tool_choice required: the call parses and its arguments validate, streamed or not', async () => {
  const ajv = new Ajv();
  const valid = ajv.compile(WEATHER.function.parameters);
  for (const seed of [1, 2, 3, 4]) {
    const r = await client.chat.completions.create({
      model: 'local',
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
      tools: [WEATHER],
      tool_choice: 'required',
      temperature: 1,
      seed,
      max_tokens: 120,
    });
    const c = r.choices[0];
    // parallel calls may run into max_tokens: then 'length', and only the last call is cut
    assert.ok(
      c.finish_reason === 'tool_calls' || (c.finish_reason === 'length' && c.message.tool_calls.length > 1),
      `seed ${seed}: ${c.finish_reason} ${JSON.stringify(c.message)}`,
    );
    assert.doesNotMatch(c.message.content ?? '', /<\|tool_call>/, 'no call markup in content');
    const call = c.message.tool_calls[0];
    assert.equal(call.type, 'function');
    assert.equal(call.function.name, 'get_weather');
    const args = JSON.parse(call.function.arguments);
    assert.ok(valid(args), `seed ${seed}: ${call.function.arguments}: ${ajv.errorsText(valid.errors)}`);
  }
  // streamed: the name once, argument pieces that join into the same JSON
  const stream = await client.chat.completions.create({
    model: 'local',
    messages: [{ role: 'user', content: 'Weather?' }],
    tools: [WEATHER],
    tool_choice: { type: 'function', function: { name: 'get_weather' } },
    temperature: 1,
    seed: 5,
    max_tokens: 120,
    stream: true,
  });
  let name = null,
    args = '',
    finish = null;
  for await (const ch of stream) {
    for (const tc of ch.choices[0]?.delta?.tool_calls ?? []) {
      if (tc.function?.name) name = (assert.equal(name, null), tc.function.name);
      args += tc.function?.arguments ?? '';
    }
    finish = ch.choices[0]?.finish_reason ?? finish;
  }
  assert.equal(name, 'get_weather');
  assert.equal(finish, 'tool_calls');
  assert.ok(valid(JSON.parse(args)), args);
});

test('a multi-step tool loop renders calls and results back through the prompt', async () => {
  const messages = [{ role: 'user', content: 'Weather in Oslo?' }];
  const r1 = await model.createChatCompletion({
    messages,
    tools: [WEATHER],
    tool_choice: 'required',
    seed: 7,
    max_tokens: 120,
  });
  const call = r1.choices[0].message.tool_calls[0];
  messages.push(r1.choices[0].message, { role: 'tool', tool_call_id: call.id, content: JSON.stringify({ temp: 21 }) });
  const prompt = await model.renderChat(
    messages.map((m) =>
      m.tool_calls
        ? {
            ...m,
            tool_calls: m.tool_calls.map((t) => ({
              ...t,
              function: { ...t.function, arguments: JSON.parse(t.function.arguments) },
            })),
          }
        : m,
    ),
    { tools: [WEATHER] },
  );
  assert.ok(prompt.includes('<|tool>declaration:get_weather{'), prompt);
  assert.ok(prompt.includes(`<|tool_call>call:get_weather{`), prompt);
  assert.ok(prompt.includes('<|tool_response>response:get_weather{'), prompt);
  const r2 = await model.createChatCompletion({
    messages,
    tools: [WEATHER],
    tool_choice: 'none',
    max_tokens: 10,
    temperature: 0,
  });
  assert.equal(r2.choices[0].message.tool_calls, undefined);
  assert.equal(typeof r2.choices[0].message.content, 'string');
});

const SCHEMAS = [
  {
    type: 'object',
    properties: { name: { type: 'string', maxLength: 8 }, age: { type: 'integer' } },
    required: ['name', 'age'],
    additionalProperties: false,
  },
  {
    type: 'object',
    properties: { ok: { type: 'boolean' }, tags: { type: 'array', items: { enum: ['a', 'b', 'c'] }, maxItems: 3 } },
    required: ['ok'],
  },
  { type: 'array', items: { type: 'number' }, minItems: 1, maxItems: 4 },
  {
    type: 'object',
    properties: {
      when: { type: 'string', format: 'date' },
      id: { type: 'string', format: 'uuid' },
      v: { anyOf: [{ type: 'null' }, { type: 'integer' }] },
    },
    required: ['when', 'id', 'v'],
  },
  {
    type: 'object',
    properties: { point: { $ref: '#/$defs/pt' }, more: { type: 'array', items: { $ref: '#/$defs/pt' }, maxItems: 2 } },
    required: ['point', 'more'],
    $defs: {
      pt: { type: 'object', properties: { x: { type: 'integer' }, y: { type: 'integer' } }, required: ['x', 'y'] },
    },
  },
];

test('json_schema answers always parse and validate (random weights: only the grammar keeps them valid)', async () => {
  const ajv = new Ajv({ formats: { date: /^\d{4}-\d{2}-\d{2}$/, uuid: /^[0-9a-f-]{36}$/i } });
  for (const [k, schema] of SCHEMAS.entries()) {
    const valid = ajv.compile(schema);
    for (const seed of [1, 2, 3]) {
      const r = await model.createChatCompletion({
        messages: [{ role: 'user', content: 'Answer in JSON' }],
        temperature: 1,
        seed,
        max_tokens: 400,
        response_format: { type: 'json_schema', json_schema: { name: `s${k}`, schema, strict: true } },
      });
      const c = r.choices[0];
      assert.equal(c.finish_reason, 'stop', `schema ${k} seed ${seed}: ${c.message.content}`);
      const v = JSON.parse(c.message.content);
      assert.ok(valid(v), `schema ${k} seed ${seed}: ${c.message.content}: ${ajv.errorsText(valid.errors)}`);
    }
  }
});

test('bad requests: RANGE / UNSUPPORTED errors naming the field, HTTP errors through fetch', async () => {
  const base = { messages: [{ role: 'user', content: 'x' }] };
  const cases = [
    [{ ...base, n: 2 }, 'RANGE', /n must be 1/],
    [{ ...base, nope: 1 }, 'RANGE', /unknown field "nope"/],
    [{ messages: [] }, 'RANGE', /non-empty/],
    [{ ...base, tool_choice: 'required' }, 'RANGE', /needs tools/],
    [
      { ...base, tools: [WEATHER], tool_choice: { type: 'function', function: { name: 'other' } } },
      'RANGE',
      /not in tools/,
    ],
    [
      { ...base, response_format: { type: 'json_schema', json_schema: { schema: { type: 'string', pattern: 'a+' } } } },
      'UNSUPPORTED',
      /pattern/,
    ],
    [{ ...base, temperature: 5 }, 'RANGE', /temperature/],
    [{ messages: [{ role: 'robot', content: 'x' }] }, 'RANGE', /role/],
    [
      {
        messages: [
          {
            role: 'assistant',
            content: '',
            tool_calls: [{ type: 'function', function: { name: 'f', arguments: '{bad' } }],
          },
        ],
      },
      'RANGE',
      /not JSON/,
    ],
  ];
  for (const [req, code, msg] of cases) {
    await assert.rejects(
      model.createChatCompletion(req),
      (e) => e instanceof OxError && e.code === code && msg.test(e.message),
      JSON.stringify(req),
    );
  }
  const res = await model.fetch('http://oxinfer.local/v1/chat/completions', {
    method: 'POST',
    body: JSON.stringify({ ...base, n: 3 }),
  });
  assert.equal(res.status, 400);
  assert.match((await res.json()).error.message, /n must be 1/);
  await assert.rejects(client.chat.completions.create({ model: 'local', ...base, n: 2 }), (e) => e.status === 400);
  // an unknown route is 404 (named in the body), a known one with another method 405
  const missing = await model.fetch('http://oxinfer.local/v1/nothing', { method: 'POST', body: '{}' });
  assert.equal(missing.status, 404);
  assert.match(
    (await missing.json()).error.message,
    /POST \/v1\/nothing: not a route of this model \(POST \/v1\/chat\/completions/,
  );
  assert.equal((await model.fetch('http://oxinfer.local/v1/chat/completions')).status, 405);
  assert.equal((await model.fetch('http://oxinfer.local/v1/models', { method: 'POST', body: '{}' })).status, 405);
  // the model is still usable
  const r = await model.createChatCompletion({ ...base, max_tokens: 2 });
  assert.equal(r.object, 'chat.completion');
});

test('embeddings: model.embed and /v1/embeddings through the official client agree; unit length; pooling matters', async () => {
  const [a, b] = await model.embed(['The cat sat.', 'A dog ran.']);
  assert.equal(a.length, model.info.hidden);
  const norm = (v) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));
  assert.ok(Math.abs(norm(a) - 1) < 1e-5 && Math.abs(norm(b) - 1) < 1e-5);
  assert.notDeepEqual(Array.from(a), Array.from(b));
  const [last] = await model.embed('The cat sat.', { pooling: 'last', normalize: false });
  assert.ok(Math.abs(norm(last) - 1) > 1e-3, 'not normalized');
  const r = await client.embeddings.create({ model: 'local', input: ['The cat sat.', 'A dog ran.'] });
  assert.equal(r.data.length, 2);
  assert.deepEqual(r.data[0].embedding, Array.from(a));
  assert.ok(r.usage.prompt_tokens > 0);
  await assert.rejects(model.embed('x', { pooling: 'max' }), (e) => e.code === 'RANGE' && /pooling/.test(e.message));
});

test('soft tokens: the placeholder positions take the embeddings given, whatever the placeholder id', async () => {
  const H = model.info.hidden;
  const emb = new Float32Array(2 * H).map((_, i) => Math.sin(i * 0.37) * 0.5);
  const run = async (prompt, opts) => {
    const out = [];
    for await (const ev of model.generate(prompt, { temperature: 0, maxTokens: 6, ...opts }))
      if (!ev.stats) out.push(ev.token);
    return out;
  };
  const withA = await run([2, 40, 300, 41, 300, 42], { softTokens: { token: 300, embeddings: emb } });
  const withB = await run([2, 40, 301, 41, 301, 42], { softTokens: { token: 301, embeddings: emb } });
  const plain = await run([2, 40, 300, 41, 300, 42], {});
  assert.deepEqual(withA, withB, 'the ids at soft positions do not matter');
  assert.notDeepEqual(withA, plain, 'the soft embeddings change the output');
  await assert.rejects(
    run([2, 300, 5], { softTokens: { token: 300, embeddings: emb } }),
    (e) => e.code === 'RANGE' && /placeholder/.test(e.message),
  );
});
