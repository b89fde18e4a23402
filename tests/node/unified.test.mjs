// Gemma 4 12B (gemma4_unified, docs/gemma4.md §6) through the package: a synthetic unified HF
// checkpoint (`oxinfer synth --preset unified --format hf`: its config.json with per_layer_config)
// loads through loadModel, gives the logits of the native CLI on the same files and of its GGUF
// twin (llama.cpp writes the 12B's text model as gemma4), and generates; a config that breaks the
// reference's strict types is a coded error naming the key; with its image embedder, info.vision.
// Needs dist/ (make -f Makefile.emscripten) and the CLI ($OX_CLI or build/oxinfer).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { loadModel, OxError } from '../../js/main/index.js';
import { logSoftmax, nativeLogprobs } from './dlogp.mjs';
import { cli, tmpDir, requireDist } from '../oracle/fixtures.mjs';

const TOKENS = [2, 5, 300, 301, 17, 900, 44, 6, 512, 77, 3, 600];
let dir, hfDir, gguf;

const files = (d) => fs.readdirSync(d).map((f) => path.join(d, f));

// max |log-prob difference| over positions of logits (n x vocab) against rows [pos][id]
function maxDiff(logits, vocab, want) {
  assert.equal(logits.length, want.length * vocab);
  let worst = 0;
  want.forEach((row, i) => {
    const lp = logSoftmax(logits.subarray(i * vocab, (i + 1) * vocab));
    for (let v = 0; v < vocab; v++) worst = Math.max(worst, Math.abs(lp[v] - row[v]));
  });
  return worst;
}

const SYNTH = ['--preset', 'unified', '--all-byte-tokens', '--branch-gain', '0.5', '--qk-norm-scale', '0.5'];

before(() => {
  requireDist();
  dir = tmpDir('unified');
  hfDir = path.join(dir, 'hf');
  fs.mkdirSync(hfDir);
  cli(['synth', ...SYNTH, '--format', 'hf', '-o', hfDir]);
  gguf = path.join(dir, 'unified.gguf');
  cli(['synth', ...SYNTH, '-o', gguf]);
});

after(() => {
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

test('the generator writes a gemma4_unified config.json', () => {
  const cfg = JSON.parse(fs.readFileSync(path.join(hfDir, 'config.json'), 'utf8'));
  assert.equal(cfg.model_type, 'gemma4_unified');
  assert.deepEqual(cfg.architectures, ['Gemma4UnifiedForConditionalGeneration']);
  const tc = cfg.text_config;
  assert.equal(tc.model_type, 'gemma4_unified_text');
  assert.equal(tc.use_bidirectional_attention, 'vision');
  assert.equal(tc.attention_k_eq_v, true);
  assert.equal(tc.global_head_dim, undefined);
  assert.equal(tc.hidden_size_per_layer_input, undefined);
  const full = tc.layer_types.flatMap((t, i) => (t === 'full_attention' ? [String(i)] : []));
  assert.deepEqual(Object.keys(tc.per_layer_config), full);
  for (const k of full) assert.deepEqual(Object.keys(tc.per_layer_config[k]), ['head_dim', 'num_key_value_heads']);
});

test('a unified HF checkpoint loads, matches the native CLI and its GGUF twin, and generates', async () => {
  const native = nativeLogprobs(files(hfDir), TOKENS);
  const m = await loadModel(files(hfDir), { threads: 2 });
  try {
    assert.equal(m.info.layers, 6);
    assert.equal(m.info.pleDim, 0);
    const V = m.info.vocab;
    const lg = await m.logits(TOKENS, { all: true });
    // F32 weights, no activation rounding: only the summation order differs (SIMD128 vs x86)
    const d = maxDiff(lg, V, native);
    assert.ok(d < 5e-4, `vs the native CLI: ${d}`);
    const g = await loadModel(gguf, { threads: 2 });
    try {
      const lg2 = await g.logits(TOKENS, { all: true });
      let w = 0;
      for (let i = 0; i < lg.length; i++) w = Math.max(w, Math.abs(lg[i] - lg2[i]));
      assert.ok(w < 1e-4, `HF vs GGUF: max |dlogit| ${w}`);
    } finally {
      await g.unload();
    }
    const ids = [];
    for await (const { token } of m.generate('hello world', { maxTokens: 6, temperature: 0 }))
      if (typeof token === 'number') ids.push(token);
    assert.ok(ids.length > 0, 'generated nothing');
    assert.ok(
      ids.every((t) => Number.isInteger(t) && t >= 0 && t < V),
      `ids ${ids}`,
    );
  } finally {
    await m.unload();
  }
});

test('a unified checkpoint with its image embedder (HF, or GGUF + gemma4uv mmproj) reports it in info.vision', async () => {
  const vdir = path.join(dir, 'hf-vision');
  fs.mkdirSync(vdir);
  cli(['synth', ...SYNTH, '--v-hidden', '32', '--v-pos', '8', '--format', 'hf', '-o', vdir]);
  const cfg = JSON.parse(fs.readFileSync(path.join(vdir, 'config.json'), 'utf8'));
  assert.equal(cfg.vision_config.model_type, 'gemma4_unified_vision');
  assert.equal(cfg.vision_config.mm_embed_dim, 32);
  const m = await loadModel(files(vdir), { threads: 2 });
  try {
    const v = m.info.vision;
    assert.ok(v, 'info.vision');
    assert.equal(v.patchSize, 16);
    assert.equal(v.poolingKernel, 3);
    assert.equal(v.defaultSoftTokens, 280);
    assert.equal(v.layers, 0);
    assert.equal(v.hidden, 32);
    assert.ok(v.imageTokenId > 0 && v.boiTokenId > 0 && v.eoiTokenId > 0);
    // llama.cpp's form: the text GGUF beside a gemma4uv mmproj
    const vg = path.join(dir, 'unified-vision.gguf'),
      vm = path.join(dir, 'unified-mmproj.gguf');
    cli(['synth', ...SYNTH, '--v-hidden', '32', '--v-pos', '8', '-o', vg]);
    cli(['synth', ...SYNTH, '--v-hidden', '32', '--v-pos', '8', '--format', 'mmproj', '-o', vm]);
    const g = await loadModel([vg, vm], { threads: 2 });
    try {
      assert.deepEqual(g.info.vision, v);
    } finally {
      await g.unload();
    }
    // the text side is the same model as without the embedder
    const t = await loadModel(files(hfDir), { threads: 2 });
    try {
      const a = await m.logits(TOKENS, { all: true }),
        b = await t.logits(TOKENS, { all: true });
      let w = 0;
      for (let i = 0; i < a.length; i++) w = Math.max(w, Math.abs(a[i] - b[i]));
      assert.equal(w, 0, 'text logits with and without the image embedder');
    } finally {
      await t.unload();
    }
  } finally {
    await m.unload();
  }
});

test('a unified config.json with an int where the reference declares a float is a coded error', async () => {
  const bad = path.join(dir, 'bad');
  fs.mkdirSync(bad);
  for (const f of fs.readdirSync(hfDir)) fs.copyFileSync(path.join(hfDir, f), path.join(bad, f));
  const p = path.join(bad, 'config.json');
  const text = fs.readFileSync(p, 'utf8');
  assert.match(text, /"final_logit_softcapping": 30\.0/);
  fs.writeFileSync(p, text.replace('"final_logit_softcapping": 30.0', '"final_logit_softcapping": 30'));
  await assert.rejects(loadModel(files(bad), { threads: 2 }), (e) => {
    assert.ok(e instanceof OxError, String(e));
    assert.match(e.message, /config\.json/);
    assert.match(e.message, /final_logit_softcapping: a float is expected/);
    return true;
  });
});
