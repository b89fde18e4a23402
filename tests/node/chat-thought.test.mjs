// chat() keeps the thought channel apart from the answer: chunks inside `<|channel>thought\n…
// <channel|>` carry the thought in `thought` (without the channel's name) and '' in `text`;
// every reply's stats hold the time to its first token; loadModel() without a source says
// what is missing. On the trained demo model (web/models/oxinfer-demo.gguf), which thinks
// "The user asks a simple question. …" in thinking mode.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { loadModel } from '../../js/main/index.js';
import { splitThought } from '../../js/main/thought.js';
import { requireDist } from '../oracle/fixtures.mjs';

const DEMO = path.join(import.meta.dirname, '..', '..', 'web', 'models', 'oxinfer-demo.gguf');

async function* chunks(list) {
  for (const c of list) yield c;
}
async function all(it) {
  const out = [];
  for await (const c of it) out.push(c);
  return out;
}

test('splitThought: the channel name is dropped however the tokens split it', async () => {
  const stats = { token: null, text: '', stats: { reason: 'stop' } };
  const out = await all(
    splitThought(
      chunks([
        { token: 5, text: '', thinking: true },
        { token: 6, text: 'thou', thinking: true },
        { token: 7, text: 'ght', thinking: true },
        { token: 8, text: '\nI think', thinking: true },
        { token: 9, text: '.', thinking: true },
        { token: 10, text: '', thinking: true },
        { token: 11, text: 'Hi', thinking: false },
        stats,
      ]),
    ),
  );
  assert.deepEqual(
    out.map((c) => (c.stats ? 'stats' : [c.text, c.thought])),
    [['', ''], ['', ''], ['', ''], ['', 'I think'], ['', '.'], ['', ''], ['Hi', ''], 'stats'],
  );
  // a thought that does not start with the name is kept whole; a second channel starts afresh
  const other = await all(
    splitThought(
      chunks([
        { token: 1, text: 'thumb', thinking: true },
        { token: 2, text: 'x', thinking: false },
        { token: 3, text: 'thought\nagain', thinking: true },
        stats,
      ]),
    ),
  );
  assert.deepEqual(
    other.map((c) => (c.stats ? 'stats' : [c.text, c.thought])),
    [['', 'thumb'], ['x', ''], ['', 'again'], 'stats'],
  );
  // cut inside the name: what was held comes out before the stats
  const cut = await all(splitThought(chunks([{ token: 1, text: 'tho', thinking: true }, stats])));
  assert.deepEqual(
    cut.map((c) => (c.stats ? 'stats' : c.thought)),
    ['', 'tho', 'stats'],
  );
});

test('chat with thinking: the answer in text, the thought in thought, time to first token in the stats', async () => {
  requireDist();
  const model = await loadModel(DEMO, { threads: 1 });
  try {
    let text = '',
      thought = '',
      stats = null,
      n = 0;
    const t0 = performance.now();
    for await (const c of model.chat([{ role: 'user', content: 'What does a duck say?' }], {
      thinking: true,
      temperature: 0,
      maxTokens: 80,
    })) {
      if (c.stats) {
        stats = c.stats;
        continue;
      }
      if (c.thinking) assert.equal(c.text, '', 'no thought in text');
      text += c.text;
      thought += c.thought;
      n++;
    }
    const wall = performance.now() - t0;
    assert.equal(text, 'A duck says quack.');
    assert.equal(thought, 'The user asks a simple question. I will answer it in one line.');
    assert.ok(n > 0 && stats.generatedTokens > 0);
    assert.ok(
      stats.firstTokenMs > 0 && stats.firstTokenMs <= wall,
      `firstTokenMs ${stats.firstTokenMs} within the call's ${wall} ms`,
    );
    assert.ok(stats.firstTokenMs >= stats.prefillMs, 'the first token comes after the prefill');
    // generate() is unchanged: the channel's text stays in text
    let raw = '';
    const prompt = '<bos><|turn>system\n<|think|><turn|>\n<|turn>user\nWhat does a duck say?<turn|>\n<|turn>model\n';
    for await (const c of model.generate(prompt, { temperature: 0, maxTokens: 80 })) if (!c.stats) raw += c.text;
    assert.match(raw, /^thought\nThe user asks a simple question\./);
  } finally {
    await model.unload();
  }
});

test('loadModel() without a source says what is missing', async () => {
  for (const arg of [undefined, null, [undefined]]) {
    await assert.rejects(loadModel(arg), (e) => {
      assert.equal(e.code, 'RANGE');
      assert.match(e.message, /no model source given \((undefined|null)\): pass a path, URL, File\/Blob/);
      assert.doesNotMatch(e.message, /\[object/);
      return true;
    });
  }
});
