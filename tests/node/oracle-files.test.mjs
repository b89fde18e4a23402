// llama.cpp's own files as fixtures: F16 models of our generator (`oxinfer
// synth`) quantized by llama.cpp's `llama-quantize` with the recipes published
// GGUFs use (Q4_K_M, Q5_K_M, Q6_K per-tensor mixes; IQ4_XS, IQ4_NL, IQ3_XXS,
// IQ2_XXS, the low-bit ones with an importance matrix: see imatrixFor).  Per
// file: `oxinfer inspect` loads it and lists the recipe's types; then the same check as tests/node/oracle.test.mjs (llama.cpp
// in wllama as the reference, teacher-forced positions, argmax at every
// position, max |Δ log p| over llama.cpp's top-20 within 0.15) for the native
// CLI and the wasm engine.
//
// llama-quantize comes from the native build of the llama.cpp source shipped
// in the npm package node-llama-cpp (`tools/llamacpp.sh llama-quantize`):
// $LLAMACPP_BIN, default ~/.cache/llamacpp/src/build/bin.  Without it the
// tests skip and say so.  Quantized files are cached under
// build/oracle-files/ keyed by the F16 file's hash and the recipe.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Oracle, compareToReference, sha256File } from '../oracle/llamacpp.mjs';
import { synth, tmpDir, cli } from '../oracle/fixtures.mjs';
import { nativeLogprobs, engineLogprobs, argmax } from '../oracle/engine.mjs';
import { ROOT } from '../../tools/serve.mjs';

const BIN = process.env.LLAMACPP_BIN || path.join(os.homedir(), '.cache', 'llamacpp', 'src', 'build', 'bin');
const QUANTIZE = path.join(BIN, 'llama-quantize');
const CACHE = path.join(ROOT, 'build', 'oracle-files');
const SKIP = fs.existsSync(QUANTIZE)
  ? false
  : `llama.cpp's llama-quantize not found in ${BIN}: build it with tools/llamacpp.sh (or set LLAMACPP_BIN)`;

const SYNTH = ['--branch-gain', '0.1', '--qk-norm-scale', '0.5']; // as oracle.test.mjs
const SEQ = { seqLen: 24, seqSeed: 7, topK: 20 };
const TOL = 0.15; // quantized weights: llama.cpp also quantizes the activations
const TIE = 1e-2;
const KNOWN_BENCHLIKE =
  'quantized benchlike files: random 10-layer weights amplify int8 activation-rounding flips (our own native and wasm engines differ by 0.67 nats on benchlike q8_0), so ~0.5 nats is not a verdict on the kernels';
// recipe -> the ggml type most weight matrices get (inspect must list it);
// imatrix: llama-quantize refuses the recipe without an importance matrix
const FILES = [
  { preset: 'tiny', recipe: 'Q4_K_M', main: 'Q4_K' },
  { preset: 'tiny', recipe: 'Q5_K_M', main: 'Q5_K' },
  { preset: 'tiny', recipe: 'Q6_K', main: 'Q6_K' },
  { preset: 'tiny', recipe: 'IQ4_XS', main: 'IQ4_XS' },
  { preset: 'tiny', recipe: 'IQ4_NL', main: 'IQ4_NL' },
  { preset: 'tiny', recipe: 'IQ3_XXS', main: 'IQ3_XXS', imatrix: true },
  { preset: 'tiny', recipe: 'IQ2_XXS', main: 'IQ2_XXS', imatrix: true },
  // E2B structure (head 256/512, KV sharing, PLE) at small width.  Every
  // quantized benchlike file differs from llama.cpp by ~0.4-0.6 nats with a few
  // argmax flips (F16: 7e-3).  Measured 2026-12-01: it is the fixture, not a
  // kernel: our native (AVX2) and wasm (SIMD128) engines, whose kernels match
  // their scalar references, differ from each other by 0.67 nats on benchlike
  // q8_0 (0.0000 on F16 and on tiny q8_0), 0.47 on a 12-layer tiny; within one
  // engine q8_0 vs F16 weights moves 0.45-0.66.  An f32 rounding difference
  // flips an int8 activation rounding and ten random layers amplify it (see
  // test_model's test_quant_vs_ref).  So these report without failing.
  { preset: 'benchlike', recipe: 'Q4_K_M', main: 'Q4_K', todo: KNOWN_BENCHLIKE },
  { preset: 'benchlike', recipe: 'IQ4_XS', main: 'IQ4_XS', todo: KNOWN_BENCHLIKE },
];

let dir, oracle;
const measured = [];

function run(bin, args) {
  const r = spawnSync(bin, args, { encoding: 'utf8', maxBuffer: 64 << 20 });
  if (r.error || r.status !== 0)
    throw new Error(
      `${path.basename(bin)} ${args.join(' ')}: ${r.error?.message || `exit ${r.status}`}\n${(r.stderr || '').slice(-2000)}`,
    );
  return r.stdout;
}

// An importance matrix for the recipes that need one, written here: per 2-D
// weight (names and widths from `oxinfer inspect`) one positive weight per
// input column, deterministic pseudo-random in [0.5, 1.5) (the weights are
// random too, so no column matters more than another; the point is that the
// weighted quantizer path runs).  llama.cpp's legacy imatrix layout:
// i32 n_entries, then per entry i32 name length, name, i32 ncall, i32 nval,
// f32 values (sums over ncall calls).
function imatrixFor(f16) {
  const out = path.join(CACHE, `${sha256File(f16).slice(0, 16)}.imatrix.dat`);
  if (fs.existsSync(out)) return out;
  const entries = [...cli(['inspect', f16]).matchAll(/^ {2}(\S+\.weight)\s+\S+\s+\[(\d+), \d+\]/gm)].map((m) => [
    m[1],
    +m[2],
  ]);
  const parts = [i32(entries.length)];
  let x = 12345;
  for (const [name, n] of entries) {
    const v = new Float32Array(n);
    for (let i = 0; i < n; i++) {
      x = (Math.imul(x, 1103515245) + 12345) >>> 0;
      v[i] = 0.5 + (x >>> 8) / 2 ** 24;
    }
    parts.push(i32(Buffer.byteLength(name)), Buffer.from(name), i32(1), i32(n), Buffer.from(v.buffer));
  }
  fs.writeFileSync(out, Buffer.concat(parts));
  return out;
}

function i32(v) {
  const b = Buffer.alloc(4);
  b.writeInt32LE(v);
  return b;
}

function quantize(f16, { recipe, imatrix }) {
  fs.mkdirSync(CACHE, { recursive: true });
  const out = path.join(CACHE, `${sha256File(f16).slice(0, 16)}-${recipe}.gguf`);
  if (!fs.existsSync(out)) {
    const tmp = `${out}.${process.pid}.tmp`;
    const args = imatrix ? ['--imatrix', imatrixFor(f16)] : [];
    run(QUANTIZE, [...args, f16, tmp, recipe, '2']);
    fs.renameSync(tmp, out);
  }
  return out;
}

before(() => {
  if (SKIP) return;
  dir = tmpDir('oracle-files');
  oracle = new Oracle({ log: (l) => console.log(l) });
});

after(async () => {
  await oracle?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
  if (measured.length) {
    console.log("\nllama.cpp-quantized files, max |Δ log p| over llama.cpp's top-20 ids (argmax agreement):");
    for (const line of measured) console.log(`  ${line}`);
  }
});

for (const f of FILES) {
  const label = `${f.preset} ${f.recipe}`;
  test(
    `${label} (llama-quantize): inspect loads it, native and wasm logits match llama.cpp`,
    { skip: SKIP, todo: f.todo, timeout: 900000 },
    async () => {
      const f16 = synth(dir, { preset: f.preset, type: 'f16', extra: SYNTH });
      const file = quantize(f16, f);

      const listing = cli(['inspect', file]);
      const types = new Map();
      for (const m of listing.matchAll(/^ {2}(\S+\.weight)\s+(\S+)\s+\[/gm))
        types.set(m[2], (types.get(m[2]) || 0) + 1);
      assert.ok(
        types.has(f.main),
        `${label}: inspect lists no ${f.main} tensor (types: ${[...types.keys()].join(', ')})`,
      );
      const mix = [...types].map(([t, n]) => `${n} ${t}`).join(', ');

      const ref = await oracle.reference(file, SEQ);
      assert.equal(ref.positions.length, SEQ.seqLen);
      const results = [];
      for (const [name, eng] of [
        ['native', nativeLogprobs(file, ref.seq)],
        ['wasm', await engineLogprobs(file, ref.seq)],
      ])
        results.push({
          name,
          ...compareToReference(
            ref,
            (pos, id) => eng.pos[pos][id],
            (pos) => argmax(eng.pos[pos]),
            { tieTol: TIE },
          ),
        });
      const line =
        `${label.padEnd(17)} [${mix}]: ` +
        results
          .map(
            (r) =>
              `${r.name} ${r.maxDelta.toExponential(2)} @pos ${r.worstPos}, argmax ${r.argmaxAgree}/${r.positions}` +
              (r.nearTies ? ` (${r.nearTies} near-tie)` : ''),
          )
          .join('; ') +
        (ref.cached ? ' [ref cached]' : '');
      measured.push(line);
      console.log(line);
      for (const r of results) {
        assert.deepEqual(
          r.mismatches,
          [],
          `${label} ${r.name}: argmax differs from llama.cpp at ${JSON.stringify(r.mismatches)}`,
        );
        assert.ok(
          r.maxDelta <= TOL,
          `${label} ${r.name}: max |Δ log p| ${r.maxDelta} > ${TOL} at position ${r.worstPos} (per position: ${r.perPos.map((x) => x.toExponential(1)).join(' ')})`,
        );
      }
    },
  );
}
