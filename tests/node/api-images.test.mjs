// Images in, end to end through the wasm engine (docs/images.md), on a generated model with a
// vision tower (oxinfer synth --vision tiny: the text GGUF, and the tower as llama.cpp's mmproj
// GGUF, loaded together):
// - chat() with an image part runs the same tokens and log-probabilities as the prompt written
//   by hand (<|image> + n x <|image|> + <image|>) with the tower's rows (model.embedImage)
//   passed through softTokens; another image changes them (the image is really used);
// - the same through generate({images}), createChatCompletion (image_url with a data: URL) and
//   model.fetch (the JSON body of an OpenAI client);
// - maxImageTokens sets the soft tokens per image; text-only logits are the same with and
//   without the tower loaded;
// - a second turn takes the image's rows from the cache (no tower run) and its positions from
//   the KV cache (only the new turn is prefilled), with the tokens and log-probabilities of the
//   conversation from scratch, speculative decoding too; another image at the same place is
//   prefilled from its first soft token; a LoRA change empties the KV cache, not the rows;
// - errors: a model without a tower, an image that does not decode, markers that do not match
//   the images, a prompt that does not fit the context; the engine stays usable after each.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { loadModel, OxError } from '../../js/main/index.js';
import { imageSize } from '../../js/engine/image_size.js';
import { cli, patternPng, synth, tmpDir, requireDist } from '../oracle/fixtures.mjs';
import { collect } from './api_collect.mjs';

let dir, text, mmproj, model, plain;
const dataUrl = (bytes) => `data:image/png;base64,${Buffer.from(bytes).toString('base64')}`;

const IMG_A = patternPng(64, 40, 1);
const IMG_B = patternPng(64, 40, 7);
// (70 soft tokens per image keeps the tiny tower quick; the default, 280, is in the budget test)
const GREEDY = { temperature: 0, maxTokens: 6, logprobs: 3, speculative: false, maxImageTokens: 70 };
const err = (code, re) => (e) => e instanceof OxError && e.code === code && re.test(e.message);

before(async () => {
  requireDist();
  dir = tmpDir('images');
  text = synth(dir, { preset: 'tiny', type: 'f32', extra: ['--vision', 'tiny'] });
  mmproj = synth(dir, { preset: 'tiny', type: 'f32', extra: ['--vision', 'tiny', '--format', 'mmproj'] });
  model = await loadModel([text, mmproj], { threads: 1 });
  plain = await loadModel(text, { threads: 1 });
});

after(async () => {
  await model?.unload();
  await plain?.unload();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

// a stream's tokens, their log-probabilities and alternatives, and its stats
async function run(stream) {
  const out = { tokens: [], logprobs: [], stats: null };
  for await (const c of stream) {
    if (c.stats) out.stats = c.stats;
    else if (c.token !== null) (out.tokens.push(c.token), out.logprobs.push([c.logprob, c.topLogprobs]));
  }
  return out;
}

test('info.vision: the tower with the mmproj file, none without it', () => {
  const v = model.info.vision;
  assert.ok(v, 'info.vision');
  assert.equal(v.patchSize, 16);
  assert.equal(v.poolingKernel, 3);
  assert.equal(v.defaultSoftTokens, 280);
  for (const k of ['imageTokenId', 'boiTokenId', 'eoiTokenId']) assert.ok(Number.isInteger(v[k]) && v[k] >= 0, k);
  assert.ok(!plain.info.vision);
});

test('chat() with an image = the prompt by hand with the tower rows as softTokens', async () => {
  const v = model.info.vision;
  const messages = [
    {
      role: 'user',
      content: [
        { type: 'image', image: IMG_A },
        { type: 'text', text: 'What is it?' },
      ],
    },
  ];
  await model.resetChat();
  const viaChat = await run(model.chat(messages, GREEDY));
  // by hand: the template's prompt, the marker expanded, the tower's rows
  const rows = await model.embedImage(IMG_A, { maxImageTokens: 70 });
  const want = imageSize(40, 64, { patchSize: 16, poolingKernel: 3, maxSoftTokens: 70 });
  assert.deepEqual([rows.height, rows.width, rows.softTokens], [want.height, want.width, want.softTokens]);
  assert.equal(rows.embeddings.length, rows.softTokens * model.info.hidden);
  const rendered = await model.renderChat(messages);
  assert.equal(rendered.split('<|image|>').length, 2, 'one marker in the rendered prompt');
  const prompt = rendered.replace('<|image|>', `<|image>${'<|image|>'.repeat(rows.softTokens)}<image|>`);
  const ids = await model.tokenize(prompt);
  assert.equal(ids.filter((t) => t === v.imageTokenId).length, rows.softTokens);
  assert.equal(ids.filter((t) => t === v.boiTokenId).length, 1);
  await model.resetChat();
  const byHand = await run(
    model.generate(ids, {
      ...GREEDY,
      stopIds: [...model.info.eosIds, model.info.turnEnd],
      softTokens: { token: '<|image|>', embeddings: rows.embeddings },
    }),
  );
  assert.equal(viaChat.tokens.length, 6);
  assert.deepEqual(viaChat.tokens, byHand.tokens);
  assert.deepEqual(viaChat.logprobs, byHand.logprobs);
  assert.equal(viaChat.stats.promptTokens, ids.length);
  // another image: other log-probabilities
  await model.resetChat();
  const other = await run(
    model.chat(
      [
        {
          role: 'user',
          content: [
            { type: 'image', image: IMG_B },
            { type: 'text', text: 'What is it?' },
          ],
        },
      ],
      GREEDY,
    ),
  );
  assert.notDeepEqual(other.logprobs, viaChat.logprobs);
  // generate({images}) on the rendered prompt (one <|image|>) is the same run
  await model.resetChat();
  const viaGenerate = await run(
    model.generate(rendered, { ...GREEDY, stopIds: [...model.info.eosIds, model.info.turnEnd], images: [IMG_A] }),
  );
  assert.deepEqual(viaGenerate.logprobs, viaChat.logprobs);
});

test('createChatCompletion and model.fetch take image_url parts (data: URLs) as chat() does', async () => {
  const content = [
    { type: 'image_url', image_url: { url: dataUrl(IMG_A) } },
    { type: 'text', text: 'What is it?' },
  ];
  await model.resetChat();
  const viaChat = await collect(
    model.chat(
      [
        {
          role: 'user',
          content: [
            { type: 'image', image: IMG_A },
            { type: 'text', text: 'What is it?' },
          ],
        },
      ],
      { temperature: 0, maxTokens: 6, speculative: false, maxImageTokens: 70 },
    ),
  );
  assert.ok(viaChat.stats.generatedTokens > 0);
  const request = {
    messages: [{ role: 'user', content }],
    temperature: 0,
    max_tokens: 6,
    speculative: false,
    max_image_tokens: 70,
  };
  await model.resetChat();
  const r = await model.createChatCompletion(request);
  assert.equal(r.choices[0].message.content, viaChat.text);
  assert.equal(r.usage.prompt_tokens, viaChat.stats.promptTokens);
  await model.resetChat();
  const res = await model.fetch('http://oxinfer.local/v1/chat/completions', {
    method: 'POST',
    body: JSON.stringify(request),
  });
  assert.equal(res.status, 200);
  assert.equal((await res.json()).choices[0].message.content, viaChat.text);
  // the model without a tower: UNSUPPORTED, a 400 through fetch
  await assert.rejects(plain.createChatCompletion(request), err('UNSUPPORTED', /no vision tower/));
  const bad = await plain.fetch('http://oxinfer.local/v1/chat/completions', {
    method: 'POST',
    body: JSON.stringify(request),
  });
  assert.ok(bad.status >= 400);
  assert.match((await bad.json()).error.message, /no vision tower/);
});

test('maxImageTokens sets the soft tokens per image', async () => {
  const img = patternPng(160, 120, 2);
  for (const budget of [70, 140, 280]) {
    const rows = await model.embedImage(img, { maxImageTokens: budget });
    assert.equal(
      rows.softTokens,
      imageSize(120, 160, { patchSize: 16, poolingKernel: 3, maxSoftTokens: budget }).softTokens,
    );
    await model.resetChat();
    const r = await collect(
      model.chat([{ role: 'user', content: [{ type: 'image', image: img }] }], {
        maxTokens: 1,
        maxImageTokens: budget,
      }),
    );
    const bare = await model.tokenize(
      await model.renderChat([{ role: 'user', content: [{ type: 'image', image: img }] }]),
    );
    assert.equal(r.stats.promptTokens, bare.length - 1 + rows.softTokens + 2, `${budget}`);
  }
  // the budget of 560 needs 81 patches along a side: more than the generated tower's table holds
  await assert.rejects(
    model.embedImage(img, { maxImageTokens: 560 }),
    err('RANGE', /1296x960: 81 x 60 patches, the position table reaches 64 along a side/),
  );
  await assert.rejects(
    collect(model.chat([{ role: 'user', content: [{ type: 'image', image: img }] }], { maxImageTokens: 100 })),
    err('RANGE', /maxImageTokens must be one of/),
  );
});

test('text-only logits are the same with the tower loaded', async () => {
  const ids = await plain.tokenize('<bos>The sky is');
  const a = await model.logits(ids);
  const b = await plain.logits(ids);
  assert.deepEqual(Array.from(a), Array.from(b));
});

test('image errors are clear and leave the engine usable', async () => {
  const img = [
    {
      role: 'user',
      content: [
        { type: 'image', image: IMG_A },
        { type: 'text', text: 'x' },
      ],
    },
  ];
  await assert.rejects(collect(plain.chat(img, { maxTokens: 1 })), err('UNSUPPORTED', /no vision tower/));
  await assert.rejects(plain.embedImage(IMG_A), err('UNSUPPORTED', /no vision tower/));
  await assert.rejects(
    collect(plain.generate('<|image|>', { images: [IMG_A], maxTokens: 1 })),
    err('UNSUPPORTED', /no vision tower/),
  );
  const junk = [{ role: 'user', content: [{ type: 'image', image: new TextEncoder().encode('not an image') }] }];
  await assert.rejects(collect(model.chat(junk, { maxTokens: 1 })), err('FORMAT', /image 0: not a PNG or JPEG/));
  await assert.rejects(
    collect(model.generate('no marker here', { images: [IMG_A], maxTokens: 1 })),
    err('RANGE', /0 image markers .* for 1 image/),
  );
  await assert.rejects(
    collect(
      model.chat([{ role: 'user', content: [{ type: 'image', image: path.join(dir, 'missing.png') }] }], {
        maxTokens: 1,
      }),
    ),
    err('IO', /message 0: content part 0: cannot read/),
  );
  await assert.rejects(collect(model.chat(img, { images: [IMG_A] })), err('RANGE', /images go in the messages/));
  // a context too small for the image's tokens
  const small = await loadModel([text, mmproj], { threads: 1, maxContext: 64 });
  try {
    await assert.rejects(
      collect(small.chat(img, { maxTokens: 1, maxImageTokens: 70 })),
      err('RANGE', /more than the context of 64/),
    );
    const ok = await collect(small.chat([{ role: 'user', content: 'hi' }], { maxTokens: 2 }));
    assert.ok(ok.stats.generatedTokens >= 1, 'usable after the error');
  } finally {
    await small.unload();
  }
  await model.resetChat();
  const after = await collect(model.chat(img, { temperature: 0, maxTokens: 2 }));
  assert.equal(after.stats.generatedTokens, 2);
});

// the expanded prompt's index of the first soft token of the (one) image in messages
async function firstSoft(messages) {
  const ids = await model.tokenize(await model.renderChat(messages));
  return ids.indexOf(model.info.vision.imageTokenId) + 1; // after <|image>
}

test("a second turn after an image reuses the tower rows and the image's KV, and runs as the conversation from scratch", async () => {
  const turn1 = [
    {
      role: 'user',
      content: [
        { type: 'image', image: IMG_A },
        { type: 'text', text: 'What is it?' },
      ],
    },
  ];
  await model.resetChat();
  const encodes = () => model.stats().then((st) => st.imageCache.encodes);
  const first = await collect(model.chat(turn1, { temperature: 0, maxTokens: 4, maxImageTokens: 70 }));
  assert.deepEqual([first.stats.imagesEncoded, first.stats.imagesCached], [1, 0]);
  const towerRuns = await encodes();
  const turn2 = [...turn1, { role: 'assistant', content: first.text }, { role: 'user', content: 'And then?' }];
  const kept = await run(model.chat(turn2, GREEDY));
  // the image from the cache, the first turn's prompt (the image's run in it) from the KV cache:
  // only what is new since is prefilled
  assert.deepEqual([kept.stats.imagesEncoded, kept.stats.imagesCached], [0, 1]);
  assert.equal(await encodes(), towerRuns, 'the tower did not run again');
  assert.ok(kept.stats.reusedTokens >= first.stats.promptTokens, `${kept.stats.reusedTokens} reused`);
  assert.equal(kept.stats.prefillTokens, kept.stats.promptTokens - kept.stats.reusedTokens);
  assert.ok(kept.stats.prefillTokens <= kept.stats.promptTokens - first.stats.promptTokens);
  // the whole conversation from scratch (resetChat empties the image cache too: the tower runs)
  await model.resetChat();
  const fresh = await run(model.chat(turn2, GREEDY));
  assert.deepEqual([fresh.stats.reusedTokens, fresh.stats.imagesEncoded], [0, 1]);
  assert.deepEqual(kept.tokens, fresh.tokens);
  assert.deepEqual(kept.logprobs, fresh.logprobs);
  // speculative decoding (prompt lookup) on the reused prefix: the same greedy tokens
  await model.resetChat();
  await collect(model.chat(turn1, { temperature: 0, maxTokens: 4, maxImageTokens: 70 }));
  const spec = await run(model.chat(turn2, { ...GREEDY, logprobs: undefined, speculative: { draftTokens: 4 } }));
  assert.ok(spec.stats.reusedTokens >= first.stats.promptTokens);
  assert.deepEqual(spec.tokens, fresh.tokens);
  // another image at the same place: its rows differ from its first soft token on, so the KV
  // cache is kept only before them, and the run is the other conversation's from scratch
  const swapped = [{ ...turn2[0], content: [{ type: 'image', image: IMG_B }, turn2[0].content[1]] }, ...turn2.slice(1)];
  const other = await run(model.chat(swapped, GREEDY));
  assert.equal(other.stats.imagesEncoded, 1);
  assert.equal(other.stats.reusedTokens, await firstSoft(swapped));
  assert.equal(other.stats.prefillTokens, other.stats.promptTokens - other.stats.reusedTokens);
  await model.resetChat();
  assert.deepEqual(other.logprobs, (await run(model.chat(swapped, GREEDY))).logprobs);
  assert.notDeepEqual(other.logprobs, fresh.logprobs);
});

test('a LoRA change empties the KV cache but keeps the tower rows (adapters patch the decoder only)', async () => {
  const adapter = path.join(dir, 'lora.gguf');
  cli(['lora', text, '--rank', '4', '--alpha', '8', '--std', '0.05', '--seed', '1', '-o', adapter]);
  const turn = [
    {
      role: 'user',
      content: [
        { type: 'image', image: IMG_A },
        { type: 'text', text: 'What is it?' },
      ],
    },
  ];
  try {
    await model.resetChat();
    await collect(model.chat(turn, { ...GREEDY, maxTokens: 1 }));
    await model.setLora([{ source: adapter }]);
    const after = await run(model.chat(turn, GREEDY));
    assert.deepEqual([after.stats.reusedTokens, after.stats.imagesEncoded, after.stats.imagesCached], [0, 0, 1]);
    await model.resetChat();
    const fresh = await run(model.chat(turn, GREEDY));
    assert.equal(fresh.stats.imagesEncoded, 1);
    assert.deepEqual(after.logprobs, fresh.logprobs);
  } finally {
    await model.setLora([]);
  }
});

// (the bound itself, and what goes first: tests/node/image-preprocess.test.mjs)
test('the image cache holds the rows it counts, and resetChat empties it', async () => {
  await model.resetChat();
  const imgs = [1, 2, 3].map((k) => patternPng(64, 40, 10 + k));
  for (const img of imgs)
    await collect(
      model.chat([{ role: 'user', content: [{ type: 'image', image: img }] }], { maxTokens: 1, maxImageTokens: 70 }),
    );
  const st = (await model.stats()).imageCache;
  assert.equal(st.entries, 3);
  const rows = imageSize(40, 64, { patchSize: 16, poolingKernel: 3, maxSoftTokens: 70 }).softTokens;
  assert.equal(st.bytes, 3 * rows * model.info.hidden * 4, 'the rows, 4 bytes a float');
  assert.ok(st.bytes <= st.maxBytes);
  await model.resetChat();
  const empty = (await model.stats()).imageCache;
  assert.deepEqual([empty.entries, empty.bytes], [0, 0]);
});
