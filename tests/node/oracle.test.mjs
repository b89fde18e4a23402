// llama.cpp (wllama in headless Chromium, tests/oracle/) as an independent
// reference for our engines, on synthetic fixtures made by our own generator
// (`oxinfer synth`).  Per fixture, over teacher-forced positions of a token
// sequence (BOS + ids from the <unusedN> block, longer than the sliding
// window): the argmax agrees at every position (a near-tie counts) and the
// log-probs of llama.cpp's top-20 ids agree within 2e-2 (F32/F16 weights) or
// 0.15 (quantized weights, where llama.cpp also quantizes the activations).
// Both the native CLI (`oxinfer run`) and the wasm engine (the package's Node
// API) are checked.  The measured maxima are printed.
//
// References are cached by model hash under build/oracle-cache/ ($OX_ORACLE_CACHE).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { Oracle, compareToReference } from '../oracle/llamacpp.mjs';
import { synth, tmpDir, cli } from '../oracle/fixtures.mjs';
import { nativeLogprobs, engineLogprobs, argmax, loadPackage } from '../oracle/engine.mjs';

// small branch outputs and softer attention: a random model that is not
// chaotic, so one rounding flip does not swing the rest of the sequence
const SYNTH = ['--branch-gain', '0.1', '--qk-norm-scale', '0.5'];
const SEQ = { seqLen: 24, seqSeed: 7, topK: 20 }; // tiny preset window: 16
const FIXTURES = [
  { preset: 'tiny', type: 'f32', tol: 2e-2 },
  { preset: 'tiny', type: 'f16', tol: 2e-2 },
  { preset: 'tiny', type: 'q8_0', tol: 0.15 },
  { preset: 'tiny', type: 'q4_0', tol: 0.15 },
  { preset: 'tiny', type: 'q4_k', tol: 0.15 },
  { preset: 'tiny', type: 'q6_k', tol: 0.15 },
  // E2B structure at small hidden size: head 256/512, 8 q / 1 kv heads, 10
  // layers (5 KV-shared), PLE 256, window 512
  { preset: 'benchlike', type: 'f32', tol: 2e-2 },
  // 26B-A4B-like mixture of experts (8 experts, top-2) and 31B-like full
  // layers without attn_v (K = V).  Quantized MoE files are left out: with
  // llama.cpp's activation quantization a near-tie in the router picks
  // another expert at some positions (0.5-0.6 nats there, ~4e-2 elsewhere).
  { preset: 'moe', type: 'f32', tol: 2e-2 },
  { preset: 'keqv', type: 'f32', tol: 2e-2 },
  { preset: 'keqv', type: 'q8_0', tol: 0.15 },
];
const TIE = 1e-2; // a different argmax within this many nats of llama.cpp's is a near-tie

let dir, oracle;
const measured = [];

before(() => {
  dir = tmpDir('oracle');
  oracle = new Oracle({ log: (l) => console.log(l) });
});

after(async () => {
  await oracle?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
  if (measured.length) {
    console.log("\nllama.cpp oracle, max |Δ log p| over llama.cpp's top-20 ids (argmax agreement):");
    for (const m of measured) console.log(`  ${m.line}`);
  }
});

function check(name, ref, eng, tol) {
  const c = compareToReference(
    ref,
    (pos, id) => eng.pos[pos][id],
    (pos) => argmax(eng.pos[pos]),
    { tieTol: TIE },
  );
  return { name, ...c, tol };
}

for (const { preset, type, tol } of FIXTURES) {
  const label = `${preset} ${type}`;
  test(`${label}: native and wasm logits match llama.cpp`, { timeout: 600000 }, async () => {
    const file = synth(dir, { preset, type, extra: SYNTH });
    const ref = await oracle.reference(file, SEQ);
    assert.equal(ref.positions.length, SEQ.seqLen);
    const results = [check('native', ref, nativeLogprobs(file, ref.seq), tol)];
    results.push(check('wasm', ref, await engineLogprobs(file, ref.seq), tol));
    const line =
      `${label.padEnd(14)} tol ${tol}: ` +
      results
        .map(
          (r) =>
            `${r.name} ${r.maxDelta.toExponential(2)} @pos ${r.worstPos}, argmax ${r.argmaxAgree}/${r.positions}` +
            (r.nearTies ? ` (${r.nearTies} near-tie)` : ''),
        )
        .join('; ') +
      (ref.cached ? ' [ref cached]' : '');
    measured.push({ label, line, results });
    console.log(line);
    for (const r of results) {
      assert.deepEqual(
        r.mismatches,
        [],
        `${label} ${r.name}: argmax differs from llama.cpp at ${JSON.stringify(r.mismatches)}`,
      );
      assert.ok(
        r.maxDelta <= tol,
        `${label} ${r.name}: max |Δ log p| ${r.maxDelta} > ${tol} at position ${r.worstPos} (per position: ${r.perPos.map((x) => x.toExponential(1)).join(' ')})`,
      );
    }
  });
}

// The check must tell a slightly different model apart: the F32 reference
// against our engine on files that differ in one detail of the graph.
test('the comparison catches a model that differs in one detail', { timeout: 600000 }, async () => {
  const file = synth(dir, { preset: 'tiny', type: 'f32', extra: SYNTH });
  const ref = await oracle.reference(file, SEQ);
  for (const change of [
    ['--window', '8'],
    ['--rope-base-swa', '20000'],
    ['--softcap', '25'],
  ]) {
    const other = synth(dir, { preset: 'tiny', type: 'f32', extra: [...SYNTH, ...change] });
    const r = check('native', ref, nativeLogprobs(other, ref.seq), 2e-2);
    console.log(`F32 reference vs engine with ${change.join(' ')}: max |Δ log p| ${r.maxDelta.toExponential(2)}`);
    assert.ok(r.maxDelta > 0.2, `${change.join(' ')} changes the log-probs by ${r.maxDelta}, expected > 0.2`);
  }
});

// plain texts through the synthetic vocab: ASCII words and punctuation,
// digits, runs of spaces, newlines and tabs, multi-byte UTF-8 (byte fallback)
const TEXTS = [
  'hello world',
  'The quick brown fox jumps over the lazy dog.',
  'a  b   c\n\nnew line\tand a tab',
  '12345 + 678 = 7023!',
  'café, naïve, 日本語 and emoji 🙂',
  ' leading space and trailing ',
];

// default vocab: byte tokens <0x80>..<0xFF> typed UNUSED (see src/writers/synth.c), which
// llama.cpp still uses for byte fallback; --all-byte-tokens types them BYTE
for (const [label, extra] of [
  ['default vocab', []],
  ['--all-byte-tokens', ['--all-byte-tokens']],
]) {
  test(`tokenizer (${label}): native and wasm tokenize like llama.cpp`, { timeout: 600000 }, async () => {
    const file = synth(dir, { preset: 'tiny', type: 'q8_0', extra });
    const theirs = await oracle.tokenize(file, TEXTS);
    const { loadModel } = await loadPackage();
    const m = await loadModel(file, { threads: 1 });
    try {
      for (let i = 0; i < TEXTS.length; i++) {
        assert.ok(theirs[i].length > 0);
        // like llama.cpp's probe: no BOS, special-token text not parsed
        const ours = cli(['tokenize', file, '--text', TEXTS[i], '--json', '--no-bos', '--no-special'], { json: true });
        assert.deepEqual(ours, theirs[i], `native tokens of ${JSON.stringify(TEXTS[i])}`);
        assert.deepEqual(
          await m.tokenize(TEXTS[i], { addBos: false, special: false }),
          theirs[i],
          `wasm tokens of ${JSON.stringify(TEXTS[i])}`,
        );
      }
    } finally {
      await m.dispose();
    }
  });
}
