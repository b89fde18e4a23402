// HF checkpoints against llama.cpp: our logits from an HF directory (config.json, safetensors,
// tokenizer.json) against llama.cpp's (wllama in headless Chromium, tests/oracle/llamacpp.mjs)
// on the GGUF our generator writes with the same weights. llama.cpp cannot read the HF
// directory itself, and its converter does not run here (torch, transformers): the tensor
// names it would give are checked in hf-oracle-names.test.mjs, the values here — so the HF
// path (names, config.json, shapes, bf16/f32 reads) is checked against an engine that is not
// ours. The GGUF is only the carrier of the same numbers: the test first asserts that our
// engine gives it bit-identical logits to the HF directory.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { Oracle, compareToReference } from '../oracle/llamacpp.mjs';
import { cli, tmpDir, synth } from '../oracle/fixtures.mjs';
import { nativeLogprobs, engineLogprobs, argmax } from '../oracle/engine.mjs';

const SYNTH = ['--branch-gain', '0.1', '--qk-norm-scale', '0.5']; // as oracle.test.mjs
const SEQ = { seqLen: 24, seqSeed: 7, topK: 20 };
const TOL = 2e-2; // f32 weights, as oracle.test.mjs
const TIE = 1e-2;

let dir, oracle;
before(() => {
  dir = tmpDir('hf-oracle');
  oracle = new Oracle({ log: (l) => console.log(l) });
});
after(async () => {
  await oracle?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

for (const preset of ['tiny', 'moe', 'keqv']) {
  test(`${preset}: logits from the HF directory match llama.cpp on the same weights`, { timeout: 600000 }, async () => {
    const gguf = synth(dir, { preset, type: 'f32', extra: SYNTH });
    const hf = path.join(dir, `${preset}-hf`);
    cli(['synth', '--preset', preset, '--type', 'f32', ...SYNTH, '--format', 'hf', '--shards', '2', '-o', hf]);
    const hfFiles = fs.readdirSync(hf).map((f) => path.join(hf, f));
    const ref = await oracle.reference(gguf, SEQ);
    const fromHF = nativeLogprobs(hfFiles, ref.seq);
    assert.deepEqual(
      fromHF.pos.map((p) => Array.from(p)),
      nativeLogprobs(gguf, ref.seq).pos.map((p) => Array.from(p)),
      'the GGUF carries the HF weights',
    );
    for (const [name, eng] of [
      ['native', fromHF],
      ['wasm', await engineLogprobs(hfFiles, ref.seq)],
    ]) {
      const c = compareToReference(
        ref,
        (pos, id) => eng.pos[pos][id],
        (pos) => argmax(eng.pos[pos]),
        { tieTol: TIE },
      );
      console.log(
        `${preset} HF ${name}: max |Δ log p| ${c.maxDelta.toExponential(2)} @pos ${c.worstPos}, argmax ${c.argmaxAgree}/${c.positions}`,
      );
      assert.deepEqual(
        c.mismatches,
        [],
        `${preset} HF ${name}: argmax differs from llama.cpp at ${JSON.stringify(c.mismatches)}`,
      );
      assert.ok(
        c.maxDelta <= TOL,
        `${preset} HF ${name}: max |Δ log p| ${c.maxDelta} > ${TOL} at position ${c.worstPos}`,
      );
    }
  });
}
