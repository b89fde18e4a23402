// The chat template path (js/engine/chat.js) on random input: random messages (roles valid and not,
// contents as strings / part arrays / junk, unicode including lone surrogates and special-token
// text), the built-in Gemma 4 format and random Jinja templates assembled from fragments.
// Each case must render to a string or throw an Error with a stable code (RANGE / FORMAT);
// anything else, or a hang, fails. Cases run in a worker thread under a watchdog, because a
// hung synchronous render could not be interrupted on this thread. Seeded: reproducible.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Worker } from 'node:worker_threads';
import { spawnSync } from 'node:child_process';

const CHAT = new URL('../../js/engine/chat.js', import.meta.url).href;

// Runs `body` (source of an async function (renderChat, workerData) -> result) in a worker;
// rejects if it does not finish within `ms` (the watchdog of a hang, not a timing check).
function inWorker(body, data, ms) {
  const src = `const { parentPort, workerData } = require('node:worker_threads');
import(${JSON.stringify(CHAT)}).then(async ({ renderChat }) => {
  const run = ${body};
  parentPort.postMessage({ ok: await run(renderChat, workerData) });
}).catch((e) => parentPort.postMessage({ err: String(e && e.stack || e) }));`;
  const w = new Worker(src, { eval: true, workerData: data });
  let last = null;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      w.terminate();
      reject(new Error(`no result within ${ms / 1000} s (hang?); last case started: ${last}`));
    }, ms);
    w.on('message', (m) => {
      if (m.progress !== undefined) return void (last = m.progress);
      clearTimeout(timer);
      w.terminate();
      if (m.err) reject(new Error(m.err));
      else resolve(m.ok);
    });
    w.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
  });
}

// The fuzz loop, as source for the worker (self-contained: its own PRNG and generators).
const FUZZ = `async (renderChat, { seed, cases, jinjaEvery }) => {
  const { parentPort } = require('node:worker_threads');
  let s = seed >>> 0;
  const rnd = () => ((s = (s * 1664525 + 1013904223) >>> 0) / 2 ** 32);
  const pick = (a) => a[Math.floor(rnd() * a.length)];
  const POOL = ['a', 'Hello', ' ', '  ', '\\n', '\\n\\n', '\\t', '<|turn>', '<turn|>', '<bos>', '<eos>', '<|channel>',
    '<channel|>', '<|think|>', 'system', 'model', '{{', '}}', '{%', '%}', '{#', '\\u00e9', '\\u4e2d\\u6587', '\\u{1F600}',
    '\\uD800', '\\uDFFF', '\\u0000', '\\u202E', 'e\\u0301', '\\uFEFF', '"', "'", '\\\\', '<script>', '\\r\\n', 'x'.repeat(300)];
  const str = () => { let t = ''; for (let n = Math.floor(rnd() * 6); n-- > 0;) t += pick(POOL); return t; };
  const ROLES = ['system', 'user', 'assistant', 'model', 'user', 'model', 'tool', '', 'User', undefined, null, 42, {}];
  const content = () => {
    const r = rnd();
    if (r < 0.6) return str();
    if (r < 0.8) return Array.from({ length: Math.floor(rnd() * 4) }, () => pick([{ type: 'text', text: str() }, str(), { type: 'image', url: 'x' }, { type: 'text', text: 5 }, null]));
    return pick([null, undefined, 7, {}, true]);
  };
  const message = () => (rnd() < 0.03 ? pick([null, 'hi', 3]) : { role: pick(ROLES), content: content() });
  const FRAG = ['{% for m in messages %}', '{% endfor %}', '{{ m.content }}', '{{ m.role }}', '{% if m.role == "user" %}',
    '{% elif m.role == "model" %}', '{% else %}', '{% endif %}', '{{ bos_token }}', '{% if add_generation_prompt %}<|turn>model\\n{% endif %}',
    '{{', '}}', '{%', '%}', '{{ messages[0]["content"] | trim }}', '{{ raise_exception("bad role") }}', '{% set n = 3 %}',
    '{{ n * 2 }}', '{% for i in range(7) %}{{ i }}{% endfor %}', '{{ m.content.upper() }}', '{{ nothing.x }}', 'text', '\\n',
    '{# c #}', '{{ "a" ~ "b" }}', '{{ messages | length }}', '{{ tools | tojson }}', '{{ enable_thinking }}', '{% if %}',
    '{{ messages[99].content }}', '{{ 1 / 0 }}', '{% for m in messages %}{% for k in messages %}{{ k.role }}{% endfor %}{% endfor %}',
    '{{ m.content | length }}', '{% macro f(x) %}[{{ x }}]{% endmacro %}{{ f(1) }}', '{{ "\\u00e9" | upper }}'];
  const template = () => { let t = ''; for (let n = 1 + Math.floor(rnd() * 8); n-- > 0;) t += pick(FRAG); return t; };
  const bad = [];
  let rendered = 0, refused = 0;
  for (let i = 0; i < cases; i++) {
    const msgs = rnd() < 0.02 ? pick([null, [], 'hi', {}]) : Array.from({ length: 1 + Math.floor(rnd() * 5) }, message);
    const tpl = i % jinjaEvery === 0 ? template() : null;
    const opts = { thinking: rnd() < 0.3, addGenerationPrompt: rnd() < 0.8 };
    if (i % 50 === 0) parentPort.postMessage({ progress: i + ': ' + JSON.stringify(tpl) });
    let out, err;
    try { out = await renderChat(tpl, msgs, opts); } catch (e) { err = e; }
    const what = () => JSON.stringify({ tpl, msgs, opts }).slice(0, 400);
    if (err) {
      refused++;
      if (!(err instanceof Error) || !['RANGE', 'FORMAT'].includes(err.code) || typeof err.message !== 'string' || !err.message)
        bad.push('bad error ' + (err && err.name) + ' code=' + (err && err.code) + ': ' + (err && err.message) + ' <- ' + what());
      continue;
    }
    rendered++;
    if (typeof out !== 'string') { bad.push('non-string result <- ' + what()); continue; }
    if (tpl === null) {
      if (!out.startsWith('<bos>')) bad.push('built-in format without <bos> <- ' + what());
      if (opts.addGenerationPrompt && !out.endsWith('<|turn>model\\n')) bad.push('no generation prompt <- ' + what());
      const turns = out.split('<turn|>\\n').length - 1;
      if (turns < msgs.length - (msgs[0] && msgs[0].role === 'system' ? 1 : 0)) bad.push('a message lost <- ' + what());
    }
    if (bad.length >= 5) break;
  }
  return { bad, rendered, refused };
}`;

test('random messages and templates render or throw clean errors, never hang', async () => {
  for (const seed of [1, 2, 3]) {
    const r = await inWorker(FUZZ, { seed, cases: 1500, jinjaEvery: 3 }, 120000);
    assert.deepEqual(r.bad, [], `seed ${seed}`);
    assert.ok(r.rendered > 100 && r.refused > 100, `seed ${seed}: ${r.rendered} rendered, ${r.refused} refused`);
  }
});

test('valid conversations in the built-in format', async () => {
  const r = await inWorker(
    `async (renderChat) => [
    await renderChat(null, [{ role: 'system', content: ' Be brief. ' }, { role: 'user', content: 'Hi \u{1F600}' },
      { role: 'assistant', content: '<|channel>thought<channel|>Hello' }, { role: 'user', content: [{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }] }]),
    await renderChat(null, [{ role: 'user', content: 'x' }], { thinking: true, addGenerationPrompt: false }),
  ]`,
    {},
    30000,
  );
  assert.equal(
    r[0],
    '<bos><|turn>system\nBe brief.<turn|>\n<|turn>user\nHi \u{1F600}<turn|>\n<|turn>model\nHello<turn|>\n<|turn>user\nab<turn|>\n<|turn>model\n',
  );
  assert.equal(r[1], '<bos><|turn>system\n<|think|><turn|>\n<|turn>user\nx<turn|>\n');
});

// A chat template comes from the model file (GGUF tokenizer.chat_template, tokenizer_config.json)
// and chat() renders it on the caller's thread: a hostile one must not stall or kill the
// process. Each runs in a child process: when V8 runs out of array size it aborts the whole
// process, which no try/catch or worker can contain.
function renderInChild(template) {
  const code = `import { renderChat } from ${JSON.stringify(CHAT)};
    try { const out = await renderChat(process.argv[1], [{ role: 'user', content: 'hi' }]);
      console.log(JSON.stringify({ out: out.length })); }
    catch (e) { console.log(JSON.stringify({ code: e.code, message: e.message })); }`;
  // the timeout is the watchdog of a hang (hours of work), not a timing check
  return spawnSync(process.execPath, ['--input-type=module', '-e', code, template], {
    encoding: 'utf8',
    timeout: 60000,
  });
}

for (const [what, template] of [
  ['loops 10^9 times', '{% for i in range(1000000000) %}{% endfor %}x'],
  [
    'nests three loops of 65536 (2.8e14 steps)',
    '{% for a in range(65536) %}{% for b in range(65536) %}{% for c in range(65536) %}{% endfor %}{% endfor %}{% endfor %}x',
  ],
  [
    'doubles a string 40 times',
    "{% set ns = namespace(s='xx') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s }}",
  ],
  [
    'doubles a list 40 times',
    '{% set ns = namespace(l=[1]) %}{% for i in range(40) %}{% set ns.l = ns.l + ns.l %}{% endfor %}{{ ns.l | length }}',
  ],
]) {
  test(`a template that ${what} is refused with an error, not a crash or a hang`, () => {
    const r = renderInChild(template);
    assert.notEqual(r.error?.code, 'ETIMEDOUT', 'still rendering after 60 s (a hang)');
    assert.equal(r.signal, null, `the process died (${r.signal}): ${r.stderr.split('\n').slice(0, 3).join(' ')}`);
    assert.equal(r.status, 0, r.stderr);
    const res = JSON.parse(r.stdout.trim().split('\n').at(-1));
    assert.ok(['RANGE', 'FORMAT'].includes(res.code), JSON.stringify(res));
  });
}
