// Chat content arrays: a Jinja template receives a message's content array as the array
// itself (as Hugging Face's apply_chat_template passes it), and the built-in Gemma 4 format
// joins the text parts; both through the engine worker (model.renderChat / chat) and through
// js/engine/chat.js directly. Errors of a template rendered in the worker keep their code.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { loadModel, OxError } from '../../js/main/index.js';
import { renderChat } from '../../js/engine/chat.js';
import { synth, tmpDir, requireDist } from '../oracle/fixtures.mjs';
import { collect } from './api_collect.mjs';

// prints S:text for a string content, [type:text] per part for an array
const INSPECT =
  '{% for m in messages %}<{{ m.role }}>{% if m.content is string %}S:{{ m.content }}' +
  '{% else %}{{ m.content | length }}{% for p in m.content %}[{{ p.type }}:{{ p.text }}]{% endfor %}{% endif %}{% endfor %}';
const PARTS = [{ type: 'text', text: 'Hello ' }, 'there', { type: 'text', text: '!' }];
const MSGS = [
  { role: 'system', content: [{ type: 'text', text: 'Be brief.' }] },
  { role: 'user', content: PARTS },
];
const JOINED = [
  { role: 'system', content: 'Be brief.' },
  { role: 'user', content: 'Hello there!' },
];

let dir, model;

before(async () => {
  requireDist();
  dir = tmpDir('chat');
  model = await loadModel(synth(dir, { preset: 'tiny', type: 'q8_0', extra: ['--all-byte-tokens'] }), { threads: 1 });
});

after(async () => {
  await model?.unload();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

test('a template sees content arrays as arrays of {type, text} parts', async () => {
  const want = '<system>1[text:Be brief.]<user>3[text:Hello ][text:there][text:!]';
  assert.equal(await renderChat(INSPECT, MSGS), want);
  assert.equal(await model.renderChat(MSGS, { template: INSPECT }), want);
  assert.equal(await model.renderChat(JOINED, { template: INSPECT }), '<system>S:Be brief.<user>S:Hello there!');
});

test('the built-in Gemma 4 format joins the text parts', async () => {
  const want = '<bos><|turn>system\nBe brief.<turn|>\n<|turn>user\nHello there!<turn|>\n<|turn>model\n';
  assert.equal(await model.renderChat(MSGS), want);
  assert.equal(await model.renderChat(JOINED), want);
  // and chat() runs that same prompt: the same greedy tokens from arrays as from strings
  const run = async (msgs) => {
    await model.resetChat();
    return (await collect(model.chat(msgs, { temperature: 0, maxTokens: 6, stopIds: [] }))).tokens;
  };
  const fromArrays = await run(MSGS);
  assert.equal(fromArrays.length, 6);
  assert.deepEqual(fromArrays, await run(JOINED));
});

test('parts other than text and image, images for a model without a tower, and template errors, are OxErrors with their code', async () => {
  const audio = [{ role: 'user', content: [{ type: 'audio', url: 'x.wav' }] }];
  await assert.rejects(
    model.renderChat(audio),
    (e) => e instanceof OxError && e.code === 'RANGE' && /content part "audio"/.test(e.message),
  );
  await assert.rejects(renderChat(null, audio), (e) => e instanceof OxError && e.code === 'RANGE');
  // an image part renders as Gemma 4's marker (docs/images.md); running it needs a vision tower
  const image = [
    {
      role: 'user',
      content: [
        { type: 'image', url: 'x.png' },
        { type: 'text', text: 'What is it?' },
      ],
    },
  ];
  assert.equal(await model.renderChat(image), '<bos><|turn>user\n<|image|>What is it?<turn|>\n<|turn>model\n');
  await assert.rejects(
    collect(model.chat(image, { maxTokens: 1 })),
    (e) => e instanceof OxError && e.code === 'UNSUPPORTED' && /no vision tower/.test(e.message),
  );
  await assert.rejects(
    model.renderChat(MSGS, { template: '{{ raise_exception("no arrays here") }}' }),
    (e) => e instanceof OxError && e.code === 'FORMAT' && /no arrays here/.test(e.message),
  );
  // the engine stays usable after a template error
  assert.equal(await model.renderChat(JOINED, { template: '{{ messages | length }}' }), '2');
});
