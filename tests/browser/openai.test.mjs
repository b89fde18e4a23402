// The official `openai` client in a page, against model.fetch of a model loaded in that page
// (headless Chromium, threaded build): a streamed tool-calling conversation (forced call,
// result back, answer) and a json_schema request whose answer validates.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { startServer, demoMounts, modelFiles, ROOT } from '../../tools/serve.mjs';
import { launchChromium, collectErrors, haveChromium } from '../oracle/browser.mjs';
import { synth, tmpDir, requireDist } from '../oracle/fixtures.mjs';

let server, browser, dir;
const missing = []; // 404s the page asked for

const PAGE = `<!doctype html><meta charset="utf-8">
<script type="importmap">{"imports": {
  "oxinfer-web": "/js/main/index.js",
  "@huggingface/jinja": "/node_modules/@huggingface/jinja/dist/index.js",
  "openai": "/node_modules/openai/index.mjs"}}</script>
<script type="module">
import { loadModel } from 'oxinfer-web';
import OpenAI from 'openai';
window.run = async () => {
  const model = await loadModel(new URL('/models/m.gguf', location.href).href, { threads: 2 });
  const client = new OpenAI({ apiKey: 'local', baseURL: location.origin + '/v1', fetch: model.fetch, dangerouslyAllowBrowser: true });
  const tools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object',
    properties: { city: { type: 'string', maxLength: 10 } }, required: ['city'], additionalProperties: false } } }];
  const messages = [{ role: 'user', content: 'Weather in Oslo?' }];
  const stream = await client.chat.completions.create({ model: 'local', messages, tools, tool_choice: 'required', stream: true, seed: 3, max_tokens: 80 });
  let name = null, args = '', id = null, finish = null;
  for await (const ch of stream) {
    for (const tc of ch.choices[0]?.delta?.tool_calls ?? []) {
      if (tc.function?.name) [name, id] = [tc.function.name, tc.id];
      args += tc.function?.arguments ?? '';
    }
    finish = ch.choices[0]?.finish_reason ?? finish;
  }
  messages.push({ role: 'assistant', content: null, tool_calls: [{ id, type: 'function', function: { name, arguments: args } }] },
    { role: 'tool', tool_call_id: id, content: '{"temp": 21}' });
  const answer = await client.chat.completions.create({ model: 'local', messages, tools, tool_choice: 'none', max_tokens: 8, temperature: 0 });
  const schema = { type: 'object', properties: { ok: { type: 'boolean' }, n: { type: 'integer' } }, required: ['ok', 'n'], additionalProperties: false };
  const json = await client.chat.completions.create({ model: 'local', messages: [{ role: 'user', content: 'JSON' }], seed: 2, max_tokens: 60,
    response_format: { type: 'json_schema', json_schema: { name: 's', schema } } });
  const out = { build: model.build, name, args, finish, answerRole: answer.choices[0].message.role, answerFinish: answer.choices[0].finish_reason,
    json: json.choices[0].message.content, jsonFinish: json.choices[0].finish_reason };
  await model.unload();
  return out;
};
window.ready = true;
</script>`;

before(async () => {
  if (!haveChromium()) return;
  requireDist();
  dir = tmpDir('openai-page');
  const model = synth(dir, { preset: 'tiny', type: 'q8_0', extra: ['--chat-tokens'] });
  fs.writeFileSync(path.join(dir, 'index.html'), PAGE);
  const mounts = { ...demoMounts(), '/node_modules/openai/': path.join(ROOT, 'node_modules/openai'), '/': dir };
  server = await startServer({
    files: { ...modelFiles([model]), '/models/m.gguf': model },
    mounts,
    log: (l) => l.startsWith('404') && missing.push(l),
  });
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  server?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

test(
  'the openai client in a page: a streamed forced tool call, its result, and a json_schema answer',
  { skip: !haveChromium() && 'no Chromium', timeout: 300000 },
  async () => {
    const page = await browser.newPage();
    const errors = [];
    collectErrors(page, errors);
    await page.goto(`${server.url}/index.html`);
    await page.waitForFunction(() => window.ready === true);
    const r = await page.evaluate(() => window.run());
    assert.deepEqual(
      errors.filter((e) => !/status of 404/.test(e)),
      [],
    );
    assert.deepEqual(
      missing.filter((l) => !l.endsWith('/favicon.ico')),
      [],
    );
    assert.equal(r.build, 'mt');
    assert.equal(r.name, 'get_weather');
    assert.equal(r.finish, 'tool_calls');
    const args = JSON.parse(r.args);
    assert.deepEqual(Object.keys(args), ['city']);
    assert.ok(typeof args.city === 'string' && [...args.city].length <= 10, r.args);
    assert.equal(r.answerRole, 'assistant');
    assert.ok(['stop', 'length'].includes(r.answerFinish));
    assert.equal(r.jsonFinish, 'stop');
    const v = JSON.parse(r.json);
    assert.deepEqual(Object.keys(v).sort(), ['n', 'ok']);
    assert.equal(typeof v.ok, 'boolean');
    assert.ok(Number.isInteger(v.n));
    await page.close();
  },
);
