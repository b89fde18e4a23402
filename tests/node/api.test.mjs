// The package API (js/main/index.js) on the wasm engine (dist/), with synthetic models made by the
// project's own `oxinfer synth` and checked against the native CLI (`oxinfer run --json`).
// Needs dist/ (make -f Makefile.emscripten) and the CLI ($OX_CLI or build/oxinfer).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { loadModel, OxError } from '../../js/main/index.js';
import { synth, cli, tmpDir, requireDist } from '../oracle/fixtures.mjs';
import { startServer } from './hostfile_server.mjs';
import { collect } from './api_collect.mjs';
import { spawnSync } from 'node:child_process';

const TOKENS = [2, 5, 300, 301, 17, 900, 44, 6];
let dir, gguf, ggufF32, hfDir, hfFiles, server, model;

function logSoftmax(row) {
  let mx = -Infinity;
  for (const x of row) mx = Math.max(mx, x);
  let s = 0;
  for (const x of row) s += Math.exp(x - mx);
  const lse = mx + Math.log(s);
  return Array.from(row, (x) => x - lse);
}

// native CLI: log-probs of every vocab entry after every position -> [pos][id]
function nativeLogprobs(files, tokens) {
  const out = cli(['run', ...files, '--tokens', tokens.join(','), '--all', '--json'], { json: true });
  return out.positions.map((p) => {
    const lp = [];
    for (const [id, v] of p.top) lp[id] = v;
    return lp;
  });
}

// max |log-prob difference| per position against the native CLI
function logprobDiffs(logits, vocab, want, label) {
  assert.equal(logits.length, want.length * vocab, `${label}: logits length`);
  return want.map((row, i) => {
    const lp = logSoftmax(logits.subarray(i * vocab, (i + 1) * vocab));
    let worst = 0;
    for (let v = 0; v < vocab; v++) worst = Math.max(worst, Math.abs(lp[v] - row[v]));
    return worst;
  });
}

// F32 weights: the wasm and native builds differ only in summation order.
function assertClose(logits, vocab, want, label) {
  const d = logprobDiffs(logits, vocab, want, label);
  assert.ok(
    Math.max(...d) < 5e-4,
    `${label}: max |log-prob difference| per position vs the native CLI: ${d.join(' ')}`,
  );
}

// Quantized weights: activations are rounded to Q8 per block, so a difference in the last bit
// of one activation (SIMD128 and x86 sum F32 dots in different orders) can move it to the
// next step and shift that position's logits by a few 1e-2 in a random model (seen: 0.059).
// Require the argmax wherever the native top two are clearly apart, and every entry within 0.2.
function assertCloseQuantized(logits, vocab, want, label) {
  const d = logprobDiffs(logits, vocab, want, label);
  assert.ok(Math.max(...d) < 0.2, `${label}: max |log-prob difference| per position vs the native CLI: ${d.join(' ')}`);
  want.forEach((row, i) => {
    const order = (a) => [...a.keys()].sort((x, y) => a[y] - a[x]);
    const [n0, n1] = order(row);
    const lp = logits.subarray(i * vocab, (i + 1) * vocab);
    if (row[n0] - row[n1] > 0.2) assert.equal(order(lp)[0], n0, `${label}: argmax at position ${i}`);
  });
}

// Byte positions of every tensor's data offset field in a GGUF header, and where the header
// ends (GGUF v3: magic, version, n_tensors, n_kv, key/values, tensor infos).
function ggufOffsetFields(buf) {
  const SIZE = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8 };
  let p = 8;
  const u64 = () => Number(buf.readBigUInt64LE((p += 8) - 8));
  const u32 = () => buf.readUInt32LE((p += 4) - 4);
  const str = () => {
    const n = u64(); // (read before p moves on: `p += u64()` would add to the old p)
    p += n;
  };
  const skip = (t) => {
    if (t === 8) str();
    else if (t === 9) {
      const et = u32();
      for (let n = u64(); n-- > 0;) skip(et);
    } else p += SIZE[t];
  };
  const nTensors = u64(),
    nKv = u64();
  for (let i = 0; i < nKv; i++) {
    str();
    skip(u32());
  }
  const fields = [];
  for (let i = 0; i < nTensors; i++) {
    str();
    const nd = u32();
    p += 8 * nd + 4;
    fields.push(p);
    p += 8;
  }
  return { fields, end: p };
}

before(async () => {
  requireDist();
  dir = tmpDir('api');
  // all byte tokens typed BYTE, so any UTF-8 text tokenizes
  gguf = synth(dir, { preset: 'tiny', type: 'q8_0', extra: ['--all-byte-tokens'] });
  ggufF32 = synth(dir, { preset: 'tiny', type: 'f32', extra: ['--all-byte-tokens'] });
  hfDir = path.join(dir, 'hf');
  fs.mkdirSync(hfDir);
  cli(['synth', '--preset', 'tiny', '--format', 'hf', '--shards', '2', '--all-byte-tokens', '-o', hfDir]);
  hfFiles = fs.readdirSync(hfDir).map((f) => path.join(hfDir, f));
  server = await startServer({ 'tiny.gguf': gguf, 'tiny-f32.gguf': ggufF32, 'far.gguf': path.join(dir, 'far.gguf') });
  model = await loadModel(gguf, { threads: 2 });
});

after(async () => {
  await model?.unload();
  server?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

test('model info and engine', () => {
  assert.equal(model.build, 'mt');
  assert.equal(model.threads, 2);
  assert.equal(model.engineNote, null);
  assert.equal(model.info.layers, 6);
  assert.equal(model.info.vocab, 1024);
  assert.equal(model.info.bos, 2);
  assert.equal(model.info.turnEnd, 6); // synth vocab: <pad> <eos> <bos> <unk> <mask> <|turn> <turn|>
  assert.deepEqual(model.info.files, [path.basename(gguf)]);
  assert.ok(model.info.pleDim > 0);
});

test('a path, a Blob and HTTP give the same logits, and those of the native CLI', async () => {
  const V = model.info.vocab;
  const ref = await model.logits(TOKENS, { all: true });
  assertCloseQuantized(ref, V, nativeLogprobs([gguf], TOKENS), 'Q8_0 path');
  // the last row again, through the decode path (the cache holds the rest): the same up to
  // summation order (prefill tiles several tokens per pass)
  const last = await model.logits(TOKENS);
  const tail = ref.subarray((TOKENS.length - 1) * V);
  assert.ok(
    last.every((v, i) => Math.abs(v - tail[i]) < 1e-4),
    'decode path = last row of the batch',
  );
  const wantF32 = nativeLogprobs([ggufF32], TOKENS);
  for (const [label, src, srcF32] of [
    ['path', gguf, ggufF32],
    [
      'Blob',
      { blob: new Blob([fs.readFileSync(gguf)]), name: 'tiny.gguf' },
      { blob: new Blob([fs.readFileSync(ggufF32)]), name: 'tiny-f32.gguf' },
    ],
    ['HTTP', `${server.base}/f/tiny.gguf`, `${server.base}/f/tiny-f32.gguf`],
  ]) {
    const m = await loadModel(src, { threads: 2 });
    try {
      assert.deepEqual(
        Array.from(await m.logits(TOKENS, { all: true })),
        Array.from(ref),
        `${label}: the same logits as from the path`,
      );
    } finally {
      await m.unload();
    }
    const f = await loadModel(srcF32, { threads: 2 });
    try {
      assertClose(await f.logits(TOKENS, { all: true }), V, wantF32, `F32 ${label}`);
    } finally {
      await f.unload();
    }
  }
});

test('an HF checkpoint in several files (safetensors shards, config.json, tokenizer.json)', async () => {
  const want = nativeLogprobs(hfFiles, TOKENS);
  const m = await loadModel(hfFiles, { threads: 2 });
  try {
    assert.equal(m.info.files.length, hfFiles.length);
    assertClose(await m.logits(TOKENS, { all: true }), m.info.vocab, want, 'HF (F32 safetensors)');
  } finally {
    await m.unload();
  }
});

test('the single-threaded build gives the same logits', async () => {
  const m = await loadModel(gguf, { build: 'st', threads: 4 });
  try {
    assert.equal(m.build, 'st');
    assert.equal(m.threads, 1);
    assert.match(m.engineNote, /threads=4 requested, 1 used/);
    assert.deepEqual(
      Array.from(await m.logits(TOKENS, { all: true })),
      Array.from(await model.logits(TOKENS, { all: true })),
    );
  } finally {
    await m.unload();
  }
});

test('the PLE table is never read whole: one host read per row used', async () => {
  const m = await loadModel(gguf, { threads: 1 });
  try {
    const s0 = await m.stats();
    assert.equal(s0.rowsFetched, 0);
    assert.equal(s0.hostBytesRead, 0);
    await m.logits(TOKENS);
    const s1 = await m.stats();
    assert.equal(s1.rowsFetched, TOKENS.length);
    assert.equal(s1.hostReadCalls - s0.hostReadCalls, TOKENS.length);
    const rowBytes = s1.hostBytesRead / s1.rowsFetched;
    assert.ok(Number.isInteger(rowBytes) && rowBytes > 0);
    // every PLE row spans all layers: layers * pleDim values of at least one byte each
    assert.ok(rowBytes >= m.info.layers * m.info.pleDim, `PLE row of ${rowBytes} bytes`);
    const table = m.info.vocab * rowBytes;
    const size = fs.statSync(gguf).size;
    // the load reads headers (GGUF, tokenizer metadata) and every resident tensor; 64 KiB of
    // slack for headers is far less than the table (1024 rows)
    assert.ok(table > 4 * 65536);
    assert.ok(
      s0.hostBytesReadAll <= size - table + 65536,
      `load read ${s0.hostBytesReadAll} bytes of ${size}; the table is ${table}`,
    );
    assert.equal(s1.hostBytesReadAll - s0.hostBytesReadAll, s1.hostBytesRead);
    assert.ok(s1.residentBytes > 0 && s1.residentBytes < size, 'resident weights exclude the table');
  } finally {
    await m.unload();
  }
});

test('tensors beyond 3 GiB in a sparse file: read at 64-bit offsets, from a path and over HTTP', async () => {
  // the same model with 3 GiB of holes between the header and the tensor data (GGUF offsets
  // are relative to the data section, which stays aligned)
  const src = fs.readFileSync(gguf);
  const { fields, end } = ggufOffsetFields(src);
  assert.equal(fields.length > 50, true);
  const dataStart = Math.ceil(end / 32) * 32;
  const header = Buffer.from(src.subarray(0, dataStart));
  const GAP = 3n << 30n;
  for (const f of fields) header.writeBigUInt64LE(header.readBigUInt64LE(f) + GAP, f);
  const far = path.join(dir, 'far.gguf');
  const fd = fs.openSync(far, 'w');
  fs.writeSync(fd, header, 0, header.length, 0);
  fs.writeSync(fd, src, dataStart, src.length - dataStart, dataStart + Number(GAP));
  fs.closeSync(fd);
  assert.equal(fs.statSync(far).size, src.length + Number(GAP));
  const want = Array.from(await model.logits(TOKENS, { all: true }));
  for (const source of [far, `${server.base}/f/far.gguf`]) {
    const m = await loadModel(source, { threads: 2 });
    try {
      assert.deepEqual(Array.from(await m.logits(TOKENS, { all: true })), want, String(source));
      const st = await m.stats();
      assert.ok(st.hostBytesReadAll < src.length, 'the holes were never read');
    } finally {
      await m.unload();
    }
  }
  fs.rmSync(far);
});

test('tablesOnHost reads token-embedding rows per token too, with the same logits', async () => {
  const m = await loadModel(gguf, { threads: 1, tablesOnHost: true });
  try {
    const want = Array.from(await model.logits(TOKENS, { all: true }));
    const s0 = await m.stats();
    assert.deepEqual(Array.from(await m.logits(TOKENS, { all: true })), want);
    const s1 = await m.stats();
    // one PLE row per distinct token, one embedding row per token
    assert.equal(s1.rowsFetched - s0.rowsFetched, new Set(TOKENS).size + TOKENS.length);
  } finally {
    await m.unload();
  }
});

test('quant on load: an F32 checkpoint held as Q8 takes less memory and stays close', async () => {
  const f = await loadModel(ggufF32, { threads: 2 });
  const q = await loadModel(ggufF32, { threads: 2, quant: 'q8' });
  try {
    const [sf, sq] = [await f.stats(), await q.stats()];
    assert.ok(sq.residentBytes < sf.residentBytes / 2, `q8 ${sq.residentBytes} vs f32 ${sf.residentBytes} bytes`);
    const a = logSoftmax(await f.logits(TOKENS)),
      b = logSoftmax(await q.logits(TOKENS));
    const d = a.map((v, i) => Math.abs(v - b[i]));
    assert.ok(Math.max(...d) < 0.5 && Math.max(...d) > 0, `max |log-prob difference| ${Math.max(...d)}`);
  } finally {
    await f.unload();
    await q.unload();
  }
});

test('tokenize / detokenize round trip, and special tokens', async () => {
  const text = 'Hello wörld ✓ 123';
  const ids = await model.tokenize(text);
  assert.ok(ids.length > 0 && ids.every((i) => Number.isInteger(i) && i >= 0 && i < model.info.vocab));
  assert.equal(await model.detokenize(ids), text);
  const withBos = await model.tokenize(text, { addBos: true });
  assert.deepEqual(withBos, [model.info.bos, ...ids]);
  assert.equal(await model.detokenize(withBos), `<bos>${text}`);
  assert.equal(await model.detokenize(withBos, { skipSpecial: true }), text);
  assert.deepEqual(await model.tokenize('<bos>'), [model.info.bos]);
  assert.notDeepEqual(await model.tokenize('<bos>', { special: false }), [model.info.bos]);
  // streaming: UTF-8 split across tokens comes out whole
  const d = model.detokenizer();
  let s = '';
  for (const id of ids) s += await d.push([id]);
  assert.equal(s + d.flush(), text);
});

test('seeded sampling is reproducible; greedy is the argmax', async () => {
  const o = { maxTokens: 12, temperature: 1, topK: 0, topP: 1, seed: 1234, stopIds: [] };
  const a = await collect(model.generate(TOKENS, o));
  const b = await collect(model.generate(TOKENS, o));
  assert.equal(a.tokens.length, 12);
  assert.deepEqual(a.tokens, b.tokens);
  assert.equal(a.stats.seed, 1234);
  const c = await collect(model.generate(TOKENS, { ...o, seed: 99 }));
  assert.notDeepEqual(c.tokens, a.tokens);
  const g = await collect(model.generate(TOKENS, { maxTokens: 1, temperature: 0, stopIds: [] }));
  const l = await model.logits(TOKENS);
  assert.equal(g.tokens[0], l.indexOf(Math.max(...l)));
  assert.equal(a.stats.reason, 'length');
  assert.equal(a.stats.generatedTokens, 12);
  assert.ok(a.stats.decodeTokPerSec > 0 && a.stats.prefillTokPerSec >= 0);
});

test('stop ids, stop strings and logit bias', async () => {
  const g = await collect(model.generate(TOKENS, { maxTokens: 8, temperature: 0, stopIds: [] }));
  const first = g.tokens[0];
  const s = await collect(model.generate(TOKENS, { maxTokens: 8, temperature: 0, stopIds: [first] }));
  assert.deepEqual(s.tokens, []);
  assert.equal(s.stats.reason, 'stop');
  const banned = await collect(
    model.generate(TOKENS, { maxTokens: 1, temperature: 0, stopIds: [], logitBias: { [first]: -Infinity } }),
  );
  assert.notEqual(banned.tokens[0], first);
  // a stop string made of the 3rd and 4th tokens' text: the text stops before it
  const full = await model.detokenize(g.tokens, { skipSpecial: true });
  const t2 = await model.detokenize(g.tokens.slice(0, 2), { skipSpecial: true });
  const t4 = await model.detokenize(g.tokens.slice(0, 4), { skipSpecial: true });
  const stop = t4.slice(t2.length);
  assert.ok(
    stop.length > 0 && full.indexOf(stop) === t2.length,
    `fixture: ${JSON.stringify(stop)} first occurs after ${JSON.stringify(t2)}`,
  );
  const r = await collect(model.generate(TOKENS, { maxTokens: 8, temperature: 0, stopIds: [], stop }));
  assert.equal(r.text, t2);
  assert.equal(r.stats.reason, 'stop');
  assert.equal(r.stats.stop, stop);
  // text before a possible stop string is held back, then released when it is not one
  const r2 = await collect(
    model.generate(TOKENS, { maxTokens: 8, temperature: 0, stopIds: [], stop: `${stop}\u0000never` }),
  );
  assert.equal(r2.text, full);
  assert.equal(r2.stats.reason, 'length');
});

test('abort mid-generation stops within a token and leaves the model usable', async () => {
  const before = await model.logits(TOKENS, { all: true });
  const ac = new AbortController();
  let n = 0;
  await assert.rejects(
    (async () => {
      for await (const c of model.generate(TOKENS, {
        maxTokens: 100000,
        temperature: 1,
        seed: 1,
        stopIds: [],
        signal: ac.signal,
      })) {
        if (c.stats) continue;
        if (++n === 3) ac.abort();
      }
    })(),
    (e) => e instanceof OxError && e.code === 'ABORTED' && e.name === 'AbortError',
  );
  assert.equal(n, 3);
  // leaving the loop early stops the job too
  for await (const c of model.generate(TOKENS, { maxTokens: 100000, temperature: 1, seed: 2, stopIds: [] }))
    if (c.token !== null) break;
  const st = await model.stats();
  assert.ok(st.contextTokens < TOKENS.length + 1000, `the worker stopped (context ${st.contextTokens})`);
  assert.deepEqual(Array.from(await model.logits(TOKENS, { all: true })), Array.from(before));
});

test('chat: KV reuse across turns gives the tokens of a fresh prefill', async () => {
  const o = { maxTokens: 6, temperature: 0, stopIds: [] };
  await model.resetChat();
  const msgs = [
    { role: 'system', content: 'Be brief.' },
    { role: 'user', content: 'Hi there' },
  ];
  const prompt = await model.renderChat(msgs);
  assert.equal(prompt, '<bos><|turn>system\nBe brief.<turn|>\n<|turn>user\nHi there<turn|>\n<|turn>model\n');
  const t1 = await collect(model.chat(msgs, o));
  assert.equal(t1.stats.reusedTokens, 0);
  const msgs2 = [...msgs, { role: 'assistant', content: t1.text }, { role: 'user', content: 'And again?' }];
  const t2 = await collect(model.chat(msgs2, o));
  const n1 = (await model.tokenize(prompt)).length;
  assert.ok(t2.stats.reusedTokens >= n1, `reused ${t2.stats.reusedTokens} of the ${n1} first-turn prompt tokens`);
  assert.equal(t2.stats.prefillTokens, t2.stats.promptTokens - t2.stats.reusedTokens);
  await model.resetChat();
  const fresh = await collect(model.chat(msgs2, o));
  assert.equal(fresh.stats.reusedTokens, 0);
  assert.deepEqual(t2.tokens, fresh.tokens);
  // a chat turn ends at <turn|> even where the checkpoint's stop ids lack it
  const forced = await collect(
    model.chat(msgs, { maxTokens: 5, temperature: 0, logitBias: { [model.info.turnEnd]: 100 } }),
  );
  assert.deepEqual([forced.tokens, forced.stats.reason], [[], 'stop']);
  // thinking switch in the built-in format
  assert.match(
    await model.renderChat(msgs, { thinking: true }),
    /^<bos><\|turn>system\n<\|think\|>Be brief\.<turn\|>\n/,
  );
  await assert.rejects(
    collect(
      model.chat([
        { role: 'user', content: 'a' },
        { role: 'system', content: 'b' },
      ]),
    ),
    (e) => e.code === 'RANGE',
  );
});

test('a jinja chat template from tokenizer_config.json is used', async () => {
  const tpl =
    '{{ bos_token }}{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}{% if add_generation_prompt %}[model]{% endif %}';
  const cfg = path.join(dir, 'tokenizer_config.json');
  fs.writeFileSync(cfg, JSON.stringify({ chat_template: tpl }));
  const m = await loadModel([gguf, cfg], { threads: 1 });
  try {
    assert.equal(m.chatTemplate, tpl);
    assert.equal(await m.renderChat([{ role: 'user', content: 'x' }]), '<bos>[user]x[model]');
    // the constructs Gemma 4's own template uses: macros with keyword arguments, namespace(),
    // split / trim / dictsort, slicing, `in`, enable_thinking
    const gemmaLike = `{%- macro strip(text) -%}{%- set ns = namespace(r='') -%}{%- for part in text.split('<channel|>') -%}
{%- if '<|channel>' in part -%}{%- set ns.r = ns.r + part.split('<|channel>')[0] -%}{%- else -%}{%- set ns.r = ns.r + part -%}{%- endif -%}
{%- endfor -%}{{- ns.r | trim -}}{%- endmacro -%}
{%- macro args(a, quote=True) -%}{%- for k, v in a | dictsort -%}{{ k }}={{ ('"' ~ v ~ '"') if quote else v }}{{ ',' if not loop.last }}{%- endfor -%}{%- endmacro -%}
{{ bos_token }}{%- set loop_messages = messages -%}
{%- if enable_thinking or messages[0]['role'] in ['system', 'developer'] -%}<|turn>system{{ nl }}{{ '<|think|>' if enable_thinking }}
{%- if messages[0]['role'] == 'system' -%}{{ messages[0]['content'] | trim }}{%- set loop_messages = messages[1:] -%}{%- endif -%}<turn|>{{ nl }}{%- endif -%}
{%- for m in loop_messages -%}{%- set role = 'model' if m['role'] == 'assistant' else m['role'] -%}<|turn>{{ role }}{{ nl }}
{%- if m['tool_calls'] -%}call:{{ args(m['tool_calls'][0]['arguments'], quote=False) }}{%- endif -%}
{{- strip(m['content']) if role == 'model' else m['content'] | trim -}}<turn|>{{ nl }}{%- endfor -%}
{%- if add_generation_prompt -%}<|turn>model{{ nl }}{%- endif -%}`;
    const msgs = [
      { role: 'system', content: ' S ' },
      { role: 'user', content: 'Hi ' },
      {
        role: 'assistant',
        content: '<|channel>thought\nhm<channel|>Yo',
        tool_calls: [{ arguments: { b: 2, a: 'x' } }],
      },
    ];
    assert.equal(
      await m.renderChat(msgs, { template: gemmaLike, thinking: true, vars: { nl: '\n' } }),
      '<bos><|turn>system\n<|think|>S<turn|>\n<|turn>user\nHi<turn|>\n<|turn>model\ncall:a=x,b=2Yo<turn|>\n<|turn>model\n',
    );
  } finally {
    await m.unload();
  }
});

test('errors reach the caller with codes; loading another model works after', async () => {
  const trunc = path.join(dir, 'truncated.gguf');
  fs.writeFileSync(trunc, fs.readFileSync(gguf).subarray(0, 4000));
  await assert.rejects(
    loadModel(trunc),
    (e) => e instanceof OxError && ['TRUNCATED', 'FORMAT'].includes(e.code) && /truncated\.gguf/.test(e.message),
  );
  const junk = path.join(dir, 'junk.gguf');
  fs.writeFileSync(junk, 'not a model at all');
  await assert.rejects(
    loadModel(junk),
    (e) => e instanceof OxError && typeof e.code === 'string' && /junk\.gguf/.test(e.message),
  );
  await assert.rejects(
    loadModel(path.join(dir, 'nope.gguf')),
    (e) => e.code === 'MISSING' && /nope\.gguf/.test(e.message),
  );
  await assert.rejects(
    loadModel(`${server.base}/f/absent.gguf`),
    (e) => e.code === 'MISSING' && /absent\.gguf: HTTP 404/.test(e.message),
  );
  await assert.rejects(
    loadModel(`${server.base}/norange/tiny.gguf`),
    (e) => e.code === 'UNSUPPORTED' && /Range/.test(e.message),
  );
  await assert.rejects(loadModel(gguf, { quant: 'q3' }), (e) => e.code === 'RANGE');
  await assert.rejects(loadModel(gguf, { threads: 0 }), (e) => e.code === 'RANGE');
  await assert.rejects(model.logits([model.info.vocab]), (e) => e.code === 'RANGE' && /out of range/.test(e.message));
  await assert.rejects(model.logits([]), (e) => e.code === 'RANGE');
  // an HTTP file that changes between the probe and the reads (ETag differs)
  await assert.rejects(
    loadModel(`${server.base}/changing/tiny.gguf`),
    (e) => e.code === 'IO' && /tiny\.gguf: the file changed on the server/.test(e.message),
  );
  const ok = await loadModel(gguf, { threads: 1 });
  assert.equal((await ok.logits([2])).length, ok.info.vocab);
  await ok.unload();
  await assert.rejects(ok.stats(), (e) => e.code === 'STATE');
});

test('load progress and abort', async () => {
  const seen = [];
  const m = await loadModel(gguf, { threads: 1, onProgress: (p) => seen.push(p) });
  await m.unload();
  assert.ok(seen.length >= 1);
  assert.equal(seen.at(-1).loaded, seen.at(-1).total);
  assert.ok(seen.every((p, i) => i === 0 || p.loaded >= seen[i - 1].loaded));
  const ac = new AbortController();
  await assert.rejects(
    loadModel(gguf, { threads: 1, signal: ac.signal, onProgress: () => ac.abort() }),
    (e) => e.code === 'ABORTED' && e.name === 'AbortError',
  );
  const pre = new AbortController();
  pre.abort();
  await assert.rejects(loadModel(gguf, { signal: pre.signal }), (e) => e.code === 'ABORTED');
  // an exception in onProgress stops the load and is what loadModel rejects with
  const oops = new Error('oops');
  await assert.rejects(
    loadModel(gguf, {
      threads: 1,
      onProgress: () => {
        throw oops;
      },
    }),
    (e) => e === oops,
  );
  // thrown at the last event, after the engine has read everything (it no longer looks at the
  // abort flag): the load still rejects with it
  await assert.rejects(
    loadModel(gguf, {
      threads: 1,
      onProgress: (p) => {
        if (p.loaded === p.total) throw oops;
      },
    }),
    (e) => e === oops,
  );
  const again = await loadModel(gguf, { threads: 1 });
  await again.unload();
});

test('the README example runs', () => {
  const r = spawnSync(process.execPath, [new URL('./readme-example.mjs', import.meta.url).pathname, gguf], {
    encoding: 'utf8',
    timeout: 120000,
  });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stderr, /synthetic-gemma4-6L-256: 6 layers, mt build, \d+ threads/);
  assert.match(r.stderr, /turn 1: \d+ tokens, first after \d+ ms, [\d.]+ tok\/s/);
  assert.match(r.stderr, /turn 2: \d+ tokens \(\d+ prompt tokens reused\)/);
});
