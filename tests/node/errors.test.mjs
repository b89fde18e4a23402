// Bad input and failure through the JS API (js/main/index.js on the wasm engine in dist/): corrupt
// files given as a path and as a Blob, HTTP sources that misbehave (404, 416, 200 without
// Range, a short body, a file that changes mid-load, a server that starts failing in the
// middle of generation), and a header that claims a tensor larger than wasm memory. Each
// failure must be an OxError with a stable `code` whose message names the file and the
// problem, and a model must load and run after it in the same process.
// Fixtures: a miniature model written by the project's own `oxinfer synth` ($OX_CLI or
// build/oxinfer), corrupted here byte by byte.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { loadModel, OxError } from '../../js/main/index.js';
import { cli, tmpDir, requireDist } from '../oracle/fixtures.mjs';

const CODES = ['IO', 'FORMAT', 'TRUNCATED', 'UNSUPPORTED', 'MISSING', 'CONFIG', 'NOMEM', 'RANGE', 'ABORTED', 'STATE'];
const MINI = [
  '--hidden',
  '32',
  '--layers',
  '2',
  '--heads',
  '2',
  '--kv-heads',
  '1',
  '--head-dim',
  '16',
  '--global-head-dim',
  '32',
  '--ffn',
  '64',
  '--ple',
  '16',
  '--vocab',
  '384',
  '--user-tokens',
  '4',
  '--swa-period',
  '2',
  '--kv-shared',
  '0',
  '--window',
  '4',
  '--ctx',
  '64',
  '--all-byte-tokens',
];

let dir, good, goodBytes, hfDir, server;

// ---------------------------------------------------------------- an HTTP server in its own thread
// (host reads block the calling thread, so the server cannot share the test's thread).
//   /f/NAME        Range requests answered 206, fixed ETag and Last-Modified
//   /norange/NAME  200 with the whole body, Range ignored
//   /r416/NAME     416 for every range after the first request
//   /short/NAME    206 whose body stops halfway (connection cut)
//   /etag/NAME     the ETag changes after the first request
//   /lastmod/NAME  no ETag; Last-Modified changes after the first request
//   /flaky/NAME    like /f until the test posts 'fail' (then 500 for everything), 'heal' undoes it
//   anything else  404
const SERVER = `
const { parentPort, workerData } = require('node:worker_threads');
const http = require('node:http');
const fs = require('node:fs');
let failing = false;
parentPort.on('message', (m) => { failing = m === 'fail'; parentPort.postMessage('ok:' + m); });
const hits = new Map();
const server = http.createServer((req, res) => {
  const m = /^\\/(f|norange|r416|short|etag|lastmod|flaky)\\/([^/]+)$/.exec(req.url);
  const file = m && workerData.files[decodeURIComponent(m[2])];
  if (!file) return res.writeHead(404).end('not found');
  const mode = m[1];
  if (mode === 'flaky' && failing) return res.writeHead(500).end('server error');
  const n = hits.get(req.url) ?? 0;
  hits.set(req.url, n + 1);
  const size = fs.statSync(file).size;
  const head = { 'Accept-Ranges': 'bytes', 'Last-Modified': new Date(Date.UTC(2024, 0, 1, 0, 0, mode === 'lastmod' ? n : 0)).toUTCString() };
  if (mode !== 'lastmod') head.ETag = mode === 'etag' ? '"v' + n + '"' : '"v0"';
  const r = /^bytes=(\\d+)-(\\d+)$/.exec(req.headers.range ?? '');
  if (mode === 'norange' || !r) {
    res.writeHead(200, { ...head, 'Content-Length': size });
    return req.method === 'HEAD' ? res.end() : fs.createReadStream(file).pipe(res);
  }
  const first = Number(r[1]), last = Math.min(Number(r[2]), size - 1);
  if (first >= size || (mode === 'r416' && n > 0)) return res.writeHead(416, { 'Content-Range': 'bytes */' + size }).end();
  const len = last - first + 1;
  res.writeHead(206, { ...head, 'Content-Length': len, 'Content-Range': 'bytes ' + first + '-' + last + '/' + size });
  if (mode === 'short' && n > 0) {
    const fd = fs.openSync(file, 'r');
    const half = Buffer.alloc(Math.max(1, len >> 1));
    fs.readSync(fd, half, 0, half.length, first);
    fs.closeSync(fd);
    return res.write(half, () => res.destroy());
  }
  fs.createReadStream(file, { start: first, end: last }).pipe(res);
});
server.listen(0, '127.0.0.1', () => parentPort.postMessage(server.address().port));
`;

async function startServer(files) {
  const w = new Worker(SERVER, { eval: true, workerData: { files } });
  const port = await new Promise((resolve, reject) => {
    w.once('message', resolve);
    w.once('error', reject);
  });
  const set = (mode) =>
    new Promise((resolve) => {
      w.once('message', resolve);
      w.postMessage(mode);
    });
  return { base: `http://127.0.0.1:${port}`, set, close: () => w.terminate() };
}

// ---------------------------------------------------------------- GGUF surgery

const u64 = (v) => {
  const b = Buffer.alloc(8);
  b.writeBigUInt64LE(BigInt(v));
  return b;
};

// Offset just past tensor `name`'s name in the tensor infos (then: u32 n_dims, u64 ne[n], u32 type, u64 offset).
function tensorInfo(buf, name) {
  const at = buf.indexOf(Buffer.concat([u64(name.length), Buffer.from(name)]));
  assert.ok(at > 0, `tensor ${name} in the fixture`);
  const p = at + 8 + name.length;
  const nd = buf.readUInt32LE(p);
  return { p, ne: (d) => p + 4 + 8 * d, type: p + 4 + 8 * nd, offset: p + 8 + 8 * nd };
}

function corrupt(fn) {
  const b = Buffer.from(goodBytes);
  fn(b);
  return b;
}

const Q = 'blk.0.attn_q.weight';
const CASES = [
  ['bad magic', 'FORMAT', /bad magic/, () => corrupt((b) => b.write('GGML', 0))],
  ['unsupported version', 'UNSUPPORTED', /GGUF version 7/, () => corrupt((b) => b.writeUInt32LE(7, 4))],
  ['truncated header', 'TRUNCATED', /truncated/, () => goodBytes.subarray(0, 100)],
  ['truncated tensor data', 'TRUNCATED', /beyond file end/, () => goodBytes.subarray(0, goodBytes.length - 100)],
  [
    'tensor offset beyond the file',
    'TRUNCATED',
    new RegExp(`${Q}.*beyond file end`),
    () => corrupt((b) => b.writeBigUInt64LE(1n << 40n, tensorInfo(b, Q).offset)),
  ],
  [
    'size overflowing 64 bits',
    'FORMAT',
    new RegExp(`${Q}.*overflows`),
    () => corrupt((b) => b.writeBigUInt64LE(1n << 62n, tensorInfo(b, Q).ne(1))),
  ],
  [
    'size beyond 32 bits',
    'TRUNCATED',
    new RegExp(`${Q}.*beyond file end`),
    () => corrupt((b) => b.writeBigUInt64LE((1n << 32n) + 1n, tensorInfo(b, Q).ne(1))),
  ],
  [
    'shape disagreeing with the config',
    'CONFIG',
    new RegExp(`${Q}.*disagrees with the config`),
    () => corrupt((b) => b.writeBigUInt64LE(8n, tensorInfo(b, Q).ne(1))),
  ],
  [
    'unknown tensor type',
    'UNSUPPORTED',
    new RegExp(`${Q}.*type 99`),
    () => corrupt((b) => b.writeUInt32LE(99, tensorInfo(b, Q).type)),
  ],
  [
    'missing tensor',
    'MISSING',
    new RegExp(`${Q} is missing`),
    () => corrupt((b) => b.write('attn_X', tensorInfo(b, Q).p - 'attn_q.weight'.length)),
  ],
  ['not a model at all', null, /bad\.gguf/, () => Buffer.from('not a model at all, just text')],
];

function isOx(e, code, re, file) {
  assert.ok(e instanceof OxError, `an OxError, got ${e?.constructor?.name}: ${e?.message}`);
  assert.ok(CODES.includes(e.code), `stable code, got ${e.code}`);
  if (code) assert.equal(e.code, code, e.message);
  if (file) assert.ok(e.message.includes(file), `message names ${file}: ${e.message}`);
  if (re) assert.match(e.message, re);
  return true;
}

// the good model's logits, taken before any fault (before()); "still usable" means these exactly
let goodLogits = null;

async function goodModelWorks() {
  const m = await loadModel(good, { threads: 1 });
  try {
    const l = Array.from(await m.logits([2, 300, 301]));
    assert.equal(l.length, 384);
    goodLogits ??= l;
    assert.deepEqual(l, goodLogits, 'the same logits as before the faults');
  } finally {
    await m.unload();
  }
}

before(async () => {
  requireDist();
  dir = tmpDir('errors');
  good = path.join(dir, 'good.gguf');
  cli(['synth', '--preset', 'tiny', '--type', 'f32', ...MINI, '-o', good]);
  goodBytes = fs.readFileSync(good);
  hfDir = path.join(dir, 'hf');
  fs.mkdirSync(hfDir);
  cli(['synth', '--preset', 'tiny', '--format', 'hf', '--shards', '2', ...MINI, '-o', hfDir]);
  fs.writeFileSync(path.join(dir, 'flaky.gguf'), goodBytes);
  server = await startServer({ 'good.gguf': good, 'flaky.gguf': path.join(dir, 'flaky.gguf') });
  await goodModelWorks();
});

after(async () => {
  server?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

test('corrupt GGUF files, as a path and as a Blob', async () => {
  for (const [what, code, re, make] of CASES) {
    const bytes = make();
    const p = path.join(dir, 'bad.gguf');
    fs.writeFileSync(p, bytes);
    await assert.rejects(loadModel(p, { threads: 1 }), (e) => isOx(e, code, re, 'bad.gguf'), `${what} (path)`);
    await assert.rejects(
      loadModel({ blob: new Blob([bytes]), name: 'bad.gguf' }, { threads: 1 }),
      (e) => isOx(e, code, re, 'bad.gguf'),
      `${what} (Blob)`,
    );
  }
  await goodModelWorks();
});

test('HF checkpoint: a missing shard, an inconsistent config, a tokenizer.json that is not BPE', async () => {
  const f = (n) => path.join(hfDir, n);
  const all = fs.readdirSync(hfDir).map(f);
  const noShard = all.filter((p) => !p.endsWith('model-00002-of-00002.safetensors'));
  await assert.rejects(loadModel(noShard, { threads: 1 }), (e) =>
    isOx(e, 'MISSING', /model-00002-of-00002\.safetensors/, 'model.safetensors.index.json'),
  );

  const cfg = fs.readFileSync(f('config.json'), 'utf8');
  const bad = path.join(dir, 'badcfg');
  fs.mkdirSync(bad);
  for (const p of all) fs.copyFileSync(p, path.join(bad, path.basename(p)));
  const files = all.map((p) => path.join(bad, path.basename(p)));
  fs.writeFileSync(path.join(bad, 'config.json'), cfg.replace('"num_key_value_heads": 1', '"num_key_value_heads": 3'));
  await assert.rejects(loadModel(files, { threads: 1 }), (e) =>
    isOx(e, 'CONFIG', /num_key_value_heads/, 'config.json'),
  );
  fs.writeFileSync(path.join(bad, 'config.json'), cfg.replace('{', '{,'));
  await assert.rejects(loadModel(files, { threads: 1 }), (e) => isOx(e, 'FORMAT', /config\.json:1:2/, 'config.json'));
  fs.writeFileSync(path.join(bad, 'config.json'), cfg);

  const tok = fs.readFileSync(f('tokenizer.json'), 'utf8');
  assert.ok(tok.includes('"type": "BPE"'));
  fs.writeFileSync(path.join(bad, 'tokenizer.json'), tok.replace('"type": "BPE"', '"type": "Unigram"'));
  await assert.rejects(loadModel(files, { threads: 1 }), (e) => isOx(e, 'UNSUPPORTED', /Unigram/, 'tokenizer.json'));
  await goodModelWorks();
});

test('HTTP sources that misbehave', async () => {
  const b = server.base;
  await assert.rejects(loadModel(`${b}/f/absent.gguf`), (e) => isOx(e, 'MISSING', /HTTP 404/, 'absent.gguf'));
  await assert.rejects(loadModel(`${b}/norange/good.gguf`), (e) => isOx(e, 'UNSUPPORTED', /Range/, 'good.gguf'));
  await assert.rejects(loadModel(`${b}/r416/good.gguf`, { threads: 1 }), (e) => isOx(e, null, /416/, 'good.gguf'));
  await assert.rejects(loadModel(`${b}/short/good.gguf`, { threads: 1 }), (e) => isOx(e, 'IO', null, 'good.gguf'));
  await assert.rejects(loadModel(`${b}/etag/good.gguf`, { threads: 1 }), (e) => isOx(e, 'IO', /changed/, 'good.gguf'));
  await assert.rejects(loadModel(`${b}/lastmod/good.gguf`, { threads: 1 }), (e) =>
    isOx(e, 'IO', /changed/, 'good.gguf'),
  );
  await goodModelWorks();
  const m = await loadModel(`${b}/f/good.gguf`, { threads: 1 });
  assert.equal((await m.logits([2])).length, 384);
  await m.unload();
});

test('a server that starts failing mid-generation: IO error, then the same model goes on', async () => {
  const ref = await loadModel(good, { threads: 1 });
  const want = await ref.logits([2, 200, 201]);
  await ref.unload();
  const m = await loadModel(`${server.base}/flaky/flaky.gguf`, { threads: 1, tablesOnHost: true });
  try {
    await m.logits([2, 100]);
    await server.set('fail');
    // tokens not seen yet: their table rows must come from the server
    await assert.rejects(m.logits([2, 200, 201]), (e) => isOx(e, 'IO', /500/, 'flaky.gguf'));
    const it = m.generate([2, 210, 211, 212], { maxTokens: 4, temperature: 0 });
    await assert.rejects(
      (async () => {
        for await (const c of it) void c;
      })(),
      (e) => isOx(e, 'IO', null, 'flaky.gguf'),
    );
    await server.set('heal');
    assert.deepEqual(Array.from(await m.logits([2, 200, 201])), Array.from(want));
    let n = 0;
    for await (const c of m.generate([2, 210, 211, 212], { maxTokens: 3, temperature: 0, stopIds: [] }))
      if (c.token !== null) n++;
    assert.equal(n, 3);
  } finally {
    await server.set('heal');
    await m.unload();
  }
  await goodModelWorks();
});

test('a header claiming tensors larger than wasm memory, and maxResident', async () => {
  // token_embd and the PLE table claim 50M rows (6.4 GB each): the file is sparse, so the data
  // "exists"; the engine must refuse (NOMEM / RANGE / CONFIG), not crash its worker.
  // 25M rows (3.2 GB: fits a 32-bit size, not the wasm heap) and 50M rows (6.4 GB: does not fit 32 bits)
  for (const [V, code, re] of [
    [25_000_000n, 'NOMEM', /out of memory: 3200000000 bytes for tensor token_embd\.weight/],
    [50_000_000n, null, /token_embd\.weight/],
  ]) {
    const b = corrupt((x) => {
      x.writeBigUInt64LE(V, tensorInfo(x, 'token_embd.weight').ne(1));
      x.writeBigUInt64LE(V, tensorInfo(x, 'per_layer_token_embd.weight').ne(1));
    });
    const p = path.join(dir, 'huge.gguf');
    fs.writeFileSync(p, b);
    fs.truncateSync(p, 20 * 2 ** 30); // sparse: 20 GB of holes
    await assert.rejects(
      loadModel(p, { threads: 1 }),
      (e) => isOx(e, code, re, 'huge.gguf') && ['NOMEM', 'RANGE', 'CONFIG'].includes(e.code),
    );
    fs.rmSync(p);
  }
  await assert.rejects(loadModel(good, { threads: 1, maxResident: 4096 }), (e) => isOx(e, 'NOMEM', /needs \d+ bytes/));
  await goodModelWorks();
});

const drain = async (it) => {
  const tokens = [];
  let stats = null;
  for await (const c of it)
    if (c.stats) stats = c.stats;
    else if (c.token !== null) tokens.push(c.token);
  return { tokens, stats };
};

test('limits: token ids, context, threads', async () => {
  await assert.rejects(loadModel(good, { threads: 1, maxContext: 1 << 30 }), (e) => isOx(e, 'RANGE', /context/));
  await assert.rejects(loadModel(good, { threads: -1 }), (e) => isOx(e, 'RANGE', /threads/));
  await assert.rejects(loadModel(good, { threads: 1e6 }), (e) => isOx(e, 'RANGE', /threads/));
  const m = await loadModel(good, { threads: 1, maxContext: 8 });
  try {
    for (const bad of [[384], [-1], [1.5], [NaN], []])
      await assert.rejects(m.logits(bad), (e) => isOx(e, 'RANGE'), JSON.stringify(bad));
    await assert.rejects(m.logits(new Array(9).fill(2)), (e) => isOx(e, null) && ['RANGE', 'STATE'].includes(e.code));
    await assert.rejects(drain(m.generate([2, 3], { seed: -1 })), (e) => isOx(e, 'RANGE', /seed/));
    await assert.rejects(drain(m.generate([2, 3], { topP: 7 })), (e) => isOx(e, 'RANGE', /top_p/));
    await assert.rejects(drain(m.generate([2, 3], { temperature: Infinity })), (e) => isOx(e, 'RANGE', /temperature/));
    assert.equal((await m.logits([2, 3])).length, 384);
  } finally {
    await m.unload();
  }
});

// Absurd generation options must be RANGE errors, not silently clamped or ignored.
test('limits: absurd generation options are RANGE errors', async () => {
  const m = await loadModel(good, { threads: 1, maxContext: 16 });
  try {
    for (const [k, v] of [
      ['maxTokens', -5],
      ['maxTokens', 2.5],
      ['topK', -1],
      ['temperature', -1],
      ['prefillChunk', 0],
      ['prefillChunk', -2],
      ['penaltyWindow', -3],
    ])
      await assert.rejects(
        drain(m.generate([2, 3], { [k]: v, maxTokens: k === 'maxTokens' ? v : 2 })),
        (e) => isOx(e, 'RANGE', new RegExp(k)),
        `${k}: ${v}`,
      );
  } finally {
    await m.unload();
  }
});

test('limits: absurd load options are RANGE errors', async () => {
  for (const o of [{ maxContext: -4 }, { maxContext: 2.5 }, { maxResident: -1 }])
    await assert.rejects(loadModel(good, { threads: 1, ...o }), (e) => isOx(e, 'RANGE'), JSON.stringify(o));
});

// index.d.ts: GenerationStats.reason 'context' — reaching the end of the context ends the
// generation, it is not an error.
test('generation that reaches the end of the context stops with reason "context"', async () => {
  const m = await loadModel(good, { threads: 1, maxContext: 8 });
  try {
    const r = await drain(m.generate([2, 3], { maxTokens: 100, stopIds: [], temperature: 0 }));
    assert.equal(r.stats.reason, 'context');
    assert.equal(r.tokens.length, 6);
    assert.equal(r.stats.contextTokens, 8);
  } finally {
    await m.unload();
  }
});
