// Chat-template limits checked before the work (js/engine/chat.js): an operation that would build a
// string over 16 MiB characters or a list over 2^20 elements fails with FORMAT before it
// allocates: string doubling with `~` and `+`, list doubling, split() with and without a
// separator, replace() (method and filter), indent, join (of a list and of a string's
// characters), tojson. Memory is bounded by construction: the templates render in a worker
// whose V8 heap is capped at 192 MB, so an operation that built its value first would kill the
// worker (out of memory) instead of answering FORMAT. Legitimate uses of the same operations
// still render.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Worker } from 'node:worker_threads';

const grow = (init, k) =>
  `{% set ns = namespace(s=${init}, l=[]) %}{% for i in range(${k}) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}`;
const CASES = {
  '~ doubling': [`${grow("'x'", 40)}{{ ns.s|length }}`, /'~' would make a string of 33554432 characters/],
  '+ doubling': [
    "{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}{% endfor %}",
    /'\+' would make a string/,
  ],
  'list doubling': [
    '{% set ns = namespace(l=[1]) %}{% for i in range(40) %}{% set ns.l = ns.l + ns.l %}{% endfor %}',
    /'\+' would make a list of 2097152 elements/,
  ],
  'split(sep)': [`${grow("' '", 23)}{{ (ns.s ~ 'a').split(' ')|length }}`, /split\(\) would make a list/],
  'split()': [`${grow("'a '", 22)}{{ ns.s.split()|length }}`, /split\(\) would make a list/],
  'replace()': [
    `${grow("'a'", 23)}{{ ns.s.replace('a', '${'b'.repeat(64)}')|length }}`,
    /replace\(\) would make a string/,
  ],
  '|replace': [
    `${grow("'a'", 23)}{{ ns.s|replace('a', '${'b'.repeat(64)}')|length }}`,
    /replace\(\) would make a string/,
  ],
  '|indent': [`${grow("'\\n'", 22)}{{ ns.s|indent(1000, true, true)|length }}`, /indent would make a string/],
  '|join of a list': [
    `${grow("'a'", 23)}{% for i in range(200) %}{% set ns.l = ns.l + [ns.s] %}{% endfor %}{{ ns.l|join(',')|length }}`,
    /join would make a string/,
  ],
  '|join of a string': [`${grow("'a'", 23)}{{ ns.s|join(',')|length }}`, /join would make a list of 8388608 elements/],
  '|tojson': [
    `${grow("'a'", 23)}{% for i in range(200) %}{% set ns.l = ns.l + [ns.s] %}{% endfor %}{{ ns.l|tojson|length }}`,
    /tojson would make a string/,
  ],
};
const FINE =
  "{% for m in messages %}{{ m.content.split(' ')|join('-') ~ m.content.replace('o', '0') ~ (m.content|indent(2)) }}{{ messages|tojson }}{% endfor %}";

// render each template in a worker with a capped heap: [{code, message}] or the worker's death
function renderCapped(templates) {
  const src = `
    const { parentPort, workerData } = require('node:worker_threads');
    import(workerData.chat).then(async ({ renderChat }) => {
      const out = [];
      for (const t of workerData.templates) {
        try { out.push({ ok: await renderChat(t, [{ role: 'user', content: 'hello world' }]) }); }
        catch (e) { out.push({ code: e.code, message: e.message }); }
      }
      parentPort.postMessage(out);
    });`;
  const w = new Worker(src, {
    eval: true,
    workerData: { templates, chat: new URL('../../js/engine/chat.js', import.meta.url).href },
    resourceLimits: { maxOldGenerationSizeMb: 192 },
  });
  return new Promise((resolve, reject) => {
    w.once('message', (m) => resolve(m));
    w.once('error', reject);
    w.once('exit', (code) => reject(new Error(`the worker exited (${code}) without an answer`)));
  }).finally(() => w.terminate());
}

test(
  'template operations that would build a huge value fail with FORMAT before allocating (heap capped at 192 MB)',
  { timeout: 120000 },
  async () => {
    const names = Object.keys(CASES);
    const out = await renderCapped([...names.map((k) => CASES[k][0]), FINE]);
    names.forEach((k, i) => {
      assert.equal(out[i].code, 'FORMAT', `${k}: ${JSON.stringify(out[i]).slice(0, 200)}`);
      assert.match(out[i].message, CASES[k][1], k);
    });
    assert.equal(
      out.at(-1).ok,
      'hello-worldhell0 w0rldhello world[{"role": "user", "content": "hello world"}]',
      'ordinary uses still render',
    );
  },
);
