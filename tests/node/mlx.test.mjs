// MLX checkpoints through the package: a synthetic bf16 HF checkpoint quantized by the
// project's own MLX writer (`oxinfer quantize --quant mlx4|mlx8`, with the dequantized F32
// reference), loaded from the directory's files as HF checkpoints are, checked against the native
// CLI on the same files and against the reference; `oxinfer inspect` lists the MLX tensors; a
// broken MLX directory is a coded error naming the tensor, and the engine stays usable.
// Needs dist/ (make -f Makefile.emscripten) and the CLI ($OX_CLI or build/oxinfer).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { loadModel, OxError } from '../../js/main/index.js';
import { logSoftmax, nativeLogprobs } from './dlogp.mjs';
import { cli, tmpDir, requireDist } from '../oracle/fixtures.mjs';
import { spawnSync } from 'node:child_process';
import { CLI } from '../oracle/fixtures.mjs';

const TOKENS = [2, 5, 300, 301, 17, 900, 44, 6];
let dir, hfDir;

const files = (d) => fs.readdirSync(d).map((f) => path.join(d, f));

// max |log-prob difference| per position of logits (n x vocab) against rows [pos][id]
function diffs(logits, vocab, want) {
  assert.equal(logits.length, want.length * vocab);
  return want.map((row, i) => {
    const lp = logSoftmax(logits.subarray(i * vocab, (i + 1) * vocab));
    let worst = 0;
    for (let v = 0; v < vocab; v++) worst = Math.max(worst, Math.abs(lp[v] - row[v]));
    return worst;
  });
}

// an MLX dir (+ reference dir) of the bf16 checkpoint
function mlxPair(name, quant, group) {
  const out = path.join(dir, name),
    ref = path.join(dir, `${name}-ref`);
  fs.mkdirSync(out);
  fs.mkdirSync(ref);
  cli(['quantize', ...files(hfDir), '-o', out, '--quant', quant, '--group', String(group), '--reference', ref]);
  return { out, ref };
}

before(() => {
  requireDist();
  dir = tmpDir('mlx');
  hfDir = path.join(dir, 'hf');
  fs.mkdirSync(hfDir);
  // calmer (as test_model.c): an activation rounding flip moves the logits less
  cli([
    'synth',
    '--preset',
    'tiny',
    '--type',
    'bf16',
    '--format',
    'hf',
    '--all-byte-tokens',
    '--branch-gain',
    '0.5',
    '--qk-norm-scale',
    '0.5',
    '-o',
    hfDir,
  ]);
});

after(() => {
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

for (const [quant, group] of [
  ['mlx4', 64],
  ['mlx8', 32],
]) {
  test(`an MLX ${quant} group ${group} directory loads and matches the native CLI and the reference`, async () => {
    const { out, ref } = mlxPair(`${quant}-g${group}`, quant, group);
    const cfg = JSON.parse(fs.readFileSync(path.join(out, 'config.json'), 'utf8'));
    assert.deepEqual(cfg.quantization, { group_size: group, bits: quant === 'mlx4' ? 4 : 8, mode: 'affine' });
    const native = nativeLogprobs(files(out), TOKENS),
      nativeRef = nativeLogprobs(files(ref), TOKENS);
    const m = await loadModel(files(out), { threads: 2 });
    try {
      assert.equal(m.info.files.length, 3);
      const lg = await m.logits(TOKENS, { all: true });
      // the same weights and integer block sums as native; the float summation order differs
      // (SIMD128 tiles vs the scalar reference dot), and through it an activation can round to
      // the next Q8_1 step and move a position's logits by a few 1e-2 (see api.test.mjs). A
      // position without such a flip matches to float rounding; a wrong kernel matches at none.
      const dn = diffs(lg, m.info.vocab, native);
      assert.ok(Math.max(...dn) < 0.2, `vs native on the MLX files: ${dn.join(' ')}`);
      assert.ok(
        dn.some((d) => d < 1e-4),
        `vs native, no position within 1e-4: ${dn.join(' ')}`,
      );
      native.forEach((row, i) => {
        const order = (a) => [...a.keys()].sort((x, y) => a[y] - a[x]);
        const [n0, n1] = order(row);
        if (row[n0] - row[n1] > 0.2)
          assert.equal(order(lg.subarray(i * m.info.vocab, (i + 1) * m.info.vocab))[0], n0, `argmax at ${i}`);
      });
      // against the dequantized reference (f32 weights, f32 activations): activation rounding only
      const dr = diffs(lg, m.info.vocab, nativeRef);
      assert.ok(Math.max(...dr) < 1.0, `vs the reference: ${dr.join(' ')}`);
      const text = [];
      for await (const { text: t } of m.generate('hello', { maxTokens: 4, temperature: 0 })) if (t) text.push(t);
      assert.ok(text.length > 0);
    } finally {
      await m.unload();
    }
  });
}

test('oxinfer inspect lists the MLX tensors', () => {
  const { out } = mlxPair('inspect', 'mlx4', 32);
  const r = spawnSync(CLI, ['inspect', ...files(out)], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /MLX quantization: bits 4, group 32/);
  assert.match(r.stdout, /token_embd\.weight\s+Q4_1\s.*MLX 4-bit group 32, BF16 scales/);
  assert.match(r.stdout, /per_layer_token_embd\.weight\s+Q4_1/);
});

test('a broken MLX directory is a coded error naming the tensor; the engine stays usable', async () => {
  const { out } = mlxPair('broken', 'mlx4', 64);
  const cfgPath = path.join(out, 'config.json');
  const good = fs.readFileSync(cfgPath, 'utf8');
  const cfg = JSON.parse(good);
  // the config claims group 32: every packed tensor disagrees with its scales
  cfg.quantization = { group_size: 32, bits: 4 };
  delete cfg.quantization_config;
  fs.writeFileSync(cfgPath, JSON.stringify(cfg));
  await assert.rejects(loadModel(files(out), { threads: 1 }), (e) => {
    assert.ok(e instanceof OxError);
    assert.equal(e.code, 'FORMAT');
    assert.match(e.message, /model\.safetensors: MLX tensor model\.language_model\.\S+\.weight: .*group_size 32/);
    return true;
  });
  cfg.quantization = { group_size: 64, bits: 3 };
  fs.writeFileSync(cfgPath, JSON.stringify(cfg));
  await assert.rejects(
    loadModel(files(out), { threads: 1 }),
    (e) => e.code === 'CONFIG' && /config\.json: quantization: bits 3/.test(e.message),
  );
  fs.writeFileSync(cfgPath, good);
  const m = await loadModel(files(out), { threads: 1 });
  assert.equal(m.info.layers, 6);
  await m.unload();
});
