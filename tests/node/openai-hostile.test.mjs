// The OpenAI handler (js/main/openai.js) against hostile or cut requests: a request body with a
// non-boolean `stream` (or bad stream_options) is answered 400 before any generation runs; a
// forced tool call cut by max_tokens answers finish_reason "length" with the partial call as
// a tool call and no raw `<|tool_call>` markup in content, streamed or not. A scripted model
// stands in for the engine (what it generated is fixed), then the real engine confirms the
// cut case on a random-weight model.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createFetchHandler, createChatCompletion } from '../../js/main/openai.js';
import { loadModel } from '../../js/main/index.js';
import { synth, tmpDir, requireDist } from '../oracle/fixtures.mjs';

const TOOL = {
  type: 'function',
  function: {
    name: 'get_weather',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};

// a model whose generation is the given pieces, then stats with the given reason
function scripted(pieces, reason) {
  const calls = { render: 0, generate: 0 };
  return {
    calls,
    info: { name: 'scripted', eosIds: [1], turnEnd: 106 },
    // the grammar is the engine's (src/decode/json_schema.c); a scripted turn ignores it
    async jsonSchemaGrammar() {
      return 'root ::= [^\\x00]*';
    },
    async renderChat() {
      calls.render++;
      return '<|turn>user\nhi<turn|>\n<|turn>model\n';
    },
    async *generate() {
      calls.generate++;
      for (const text of pieces) yield { token: 7, text };
      yield { stats: { reason, promptTokens: 5, generatedTokens: pieces.length } };
    },
  };
}

const post = (model, body) =>
  createFetchHandler(model)('http://x/v1/chat/completions', { method: 'POST', body: JSON.stringify(body) });

test('stream: 1 (or any non-boolean) and bad stream_options answer 400 before any generation runs', async () => {
  for (const extra of [
    { stream: 1 },
    { stream: 'yes' },
    { stream: {} },
    { stream: true, stream_options: 3 },
    { stream_options: [] },
  ]) {
    const m = scripted(['hello'], 'stop');
    const r = await post(m, { messages: [{ role: 'user', content: 'hi' }], ...extra });
    assert.equal(r.status, 400, JSON.stringify(extra));
    const body = await r.json();
    assert.equal(body.error.code, 'RANGE');
    assert.match(body.error.message, /stream/);
    assert.deepEqual(m.calls, { render: 0, generate: 0 }, 'nothing was rendered or generated');
  }
  const ok = scripted(['hello'], 'stop');
  const r = await post(ok, { messages: [{ role: 'user', content: 'hi' }], stream: false, stream_options: null });
  assert.equal(r.status, 200);
  assert.equal((await r.json()).choices[0].message.content, 'hello');
});

// what a forced call cut by max_tokens leaves: `<|tool_call>call:` is the prompt's prefix
const CUT = ['get_weather{', 'city:', '<|"|>Par', 'is and on and o'];

test('max_tokens cuts a forced tool call: finish_reason length, the partial call as a call, no markup in content', async () => {
  const req = {
    messages: [{ role: 'user', content: 'weather?' }],
    tools: [TOOL],
    tool_choice: 'required',
    max_tokens: 4,
  };
  const r = await createChatCompletion(scripted(CUT, 'length'), req);
  const c = r.choices[0];
  assert.equal(c.finish_reason, 'length');
  assert.ok(!c.message.content, `no content: ${JSON.stringify(c.message.content)}`);
  assert.equal(c.message.tool_calls.length, 1);
  assert.equal(c.message.tool_calls[0].function.name, 'get_weather');
  assert.equal(
    c.message.tool_calls[0].function.arguments,
    '{"city":"Paris and on and o',
    'the arguments as far as they went (not JSON: the answer was cut)',
  );
  // the same, streamed: no content delta carries markup, the call's deltas add up
  const chunks = [];
  for await (const ch of await createChatCompletion(scripted(CUT, 'length'), { ...req, stream: true })) chunks.push(ch);
  const content = chunks.map((ch) => ch.choices[0]?.delta.content ?? '').join('');
  const args = chunks
    .flatMap((ch) => ch.choices[0]?.delta.tool_calls ?? [])
    .map((t) => t.function.arguments)
    .join('');
  assert.equal(content, '');
  assert.equal(args, '{"city":"Paris and on and o');
  assert.equal(chunks.at(-1).choices[0].finish_reason, 'length');
  // a call that did close is still 'tool_calls' when the generation stopped by itself
  const done = await createChatCompletion(scripted([...CUT.slice(0, 3), '<|"|>}<tool_call|>'], 'stop'), req);
  assert.equal(done.choices[0].finish_reason, 'tool_calls');
  assert.equal(done.choices[0].message.tool_calls[0].function.arguments, '{"city":"Par"}');
});

test(
  'the engine: a forced tool call cut by max_tokens (random weights) never puts markup in content',
  { timeout: 120000 },
  async () => {
    requireDist();
    const model = await loadModel(
      synth(tmpDir('openai-hostile'), { preset: 'tiny', type: 'q8_0', extra: ['--chat-tokens'] }),
      { threads: 2 },
    );
    try {
      for (const seed of [1, 2, 3]) {
        const r = await model.createChatCompletion({
          messages: [{ role: 'user', content: 'weather?' }],
          tools: [TOOL],
          tool_choice: { type: 'function', function: { name: 'get_weather' } },
          max_tokens: 3,
          seed,
        });
        const c = r.choices[0];
        assert.equal(c.finish_reason, 'length', `seed ${seed}`);
        assert.doesNotMatch(c.message.content ?? '', /<\|tool_call>|call:/, `seed ${seed}: ${c.message.content}`);
        assert.equal(c.message.tool_calls?.[0]?.function.name, 'get_weather', `seed ${seed}`);
      }
    } finally {
      await model.unload();
    }
  },
);
