// Runtime LoRA through the package API (model.setLora, docs/lora.md) on the wasm engine, with
// adapters written by `oxinfer lora` for a synthetic F32 model, checked against the native
// CLI (`oxinfer run --lora`): GGUF and PEFT adapters, scale, two at once, detach, the KV cache
// emptied on a change, and bad adapters that leave the attached set as it was.
// Needs dist/ (make -f Makefile.emscripten) and the CLI ($OX_CLI or build/oxinfer).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { loadModel, OxError } from '../../js/main/index.js';
import { synth, cli, tmpDir, requireDist } from '../oracle/fixtures.mjs';
import { logSoftmax } from '../oracle/llamacpp.mjs';

const TOKENS = [2, 5, 300, 301, 17, 900, 44, 6];
let dir, gguf, loraA, loraB, peft, model, vocab, base;

// native CLI log-probs [pos][id] with the given `--lora` arguments
function native(loraArgs) {
  const out = cli(['run', gguf, '--tokens', TOKENS.join(','), '--all', '--json', ...loraArgs], { json: true });
  return out.positions.map((p) => {
    const lp = [];
    for (const [id, v] of p.top) lp[id] = v;
    return lp;
  });
}

function maxLogprobDiff(logits, want) {
  let worst = 0;
  want.forEach((row, i) => {
    const lp = logSoftmax(logits.subarray(i * vocab, (i + 1) * vocab));
    for (let v = 0; v < vocab; v++) worst = Math.max(worst, Math.abs(lp[v] - row[v]));
  });
  return worst;
}

const maxDiff = (a, b) => a.reduce((m, x, i) => Math.max(m, Math.abs(x - b[i])), 0);
const allLogits = () => model.logits(TOKENS, { all: true });

before(async () => {
  requireDist();
  dir = tmpDir('lora');
  gguf = synth(dir, { preset: 'tiny', type: 'f32' });
  const common = ['--rank', '4', '--alpha', '8', '--std', '0.05'];
  loraA = path.join(dir, 'a.gguf');
  loraB = path.join(dir, 'b.gguf');
  peft = path.join(dir, 'a-peft');
  cli(['lora', gguf, ...common, '--seed', '1', '-o', loraA]);
  cli(['lora', gguf, ...common, '--seed', '2', '--targets', 'q,v,down', '-o', loraB]);
  cli(['lora', gguf, ...common, '--seed', '1', '--format', 'peft', '--type', 'bf16', '-o', peft]);
  model = await loadModel(gguf, { threads: 2 });
  vocab = model.info.vocab;
  base = await allLogits();
});

after(async () => {
  await model?.unload();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

test('oxinfer inspect lists a GGUF adapter: kind, alpha, rank, its tensors', () => {
  const out = cli(['inspect', loraB]);
  assert.match(out, /^adapter: lora for gemma4, alpha 8$/m);
  assert.match(out, /rank 4,/);
  assert.match(out, /^ {2}blk\.0\.attn_v\.weight\.lora_a\s+F32\s+\[256, 4\]/m);
  assert.doesNotMatch(out, /attn_k\.weight\.lora/); // --targets q,v,down
});

test('a GGUF adapter: the native logits with it, the KV cache recomputed', async () => {
  await model.logits(TOKENS); // fills the cache with the base's keys and values
  const r = await model.setLora([{ source: loraA, scale: 0.7 }]);
  assert.equal(r.adapters, 1);
  assert.ok(r.modules > 20, `modules patched: ${r.modules}`);
  const last = await model.logits(TOKENS); // would reuse the base's cached prefix, had setLora kept it
  const got = await allLogits();
  assert.ok(maxDiff(got, base) > 0.05, 'the adapter changes the logits');
  const d = maxLogprobDiff(got, native(['--lora', loraA, '--lora-scale', '0.7']));
  assert.ok(d < 5e-4, `wasm vs native with the adapter: ${d}`);
  assert.ok(maxDiff(last, got.subarray((TOKENS.length - 1) * vocab)) < 1e-5, 'no stale KV entries');
});

test("PEFT files (either order) give the GGUF adapter's logits", async () => {
  const files = [path.join(peft, 'adapter_model.safetensors'), path.join(peft, 'adapter_config.json')];
  await model.setLora([{ source: files, scale: 0.7 }]);
  const got = await allLogits();
  const d = maxLogprobDiff(got, native(['--lora', loraA, '--lora-scale', '0.7']));
  assert.ok(d < 0.02, `bf16 PEFT vs the f32 GGUF adapter: ${d}`); // bf16-rounded A and B
  await model.setLora([{ source: [...files].reverse(), scale: 0.7 }]);
  assert.deepEqual(await allLogits(), got);
});

test('scale, two adapters at once, detach', async () => {
  await model.setLora([{ source: loraA, scale: 0 }]);
  assert.deepEqual(await allLogits(), base, 'scale 0 is the base, bit for bit');
  await model.setLora([
    { source: loraA, scale: 0.7 },
    { source: loraB, scale: -1.5 },
  ]);
  const two = await allLogits();
  const d = maxLogprobDiff(
    two,
    native(['--lora', loraA, '--lora-scale', '0.7', '--lora', loraB, '--lora-scale', '-1.5']),
  );
  assert.ok(d < 5e-4, `two adapters vs native: ${d}`);
  assert.deepEqual(await model.setLora([]), { adapters: 0, modules: 0 });
  assert.deepEqual(await allLogits(), base, 'detached: the base, bit for bit');
  // generation runs with an adapter attached
  await model.setLora([{ source: loraA }]);
  let n = 0;
  for await (const ev of model.generate(TOKENS, { maxTokens: 4, temperature: 0 })) if (!ev.stats) n++;
  assert.equal(n, 4);
});

test('bad adapters: coded errors, the attached set unchanged', async () => {
  await model.setLora([{ source: loraA, scale: 0.7 }]);
  const want = await allLogits();
  const rejects = (p, code, re) =>
    assert.rejects(p, (e) => e instanceof OxError && e.code === code && re.test(e.message));
  await rejects(model.setLora({ source: loraA }), 'RANGE', /array/);
  await rejects(model.setLora([{ source: loraA, scale: NaN }]), 'RANGE', /scale/);
  await rejects(model.setLora([{ scale: 1 }]), 'RANGE', /source/);
  await rejects(model.setLora([{ source: loraA, weight: 1 }]), 'RANGE', /unknown option "weight"/);
  await rejects(model.setLora([{ source: gguf }]), 'FORMAT', /general\.type/);
  await rejects(model.setLora([{ source: path.join(dir, 'missing.gguf') }]), 'MISSING', /missing\.gguf/);
  await rejects(
    model.setLora([{ source: [path.join(peft, 'adapter_config.json')] }]),
    'FORMAT',
    /adapter_config\.json/,
  );
  const cut = path.join(dir, 'cut.gguf');
  fs.writeFileSync(cut, fs.readFileSync(loraA).subarray(0, 4000));
  await rejects(model.setLora([{ source: loraB }, { source: cut }]), 'TRUNCATED', /cut\.gguf/);
  assert.deepEqual(await allLogits(), want, 'still the adapter attached before');
});
