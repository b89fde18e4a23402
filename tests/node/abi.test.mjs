// abi.test.mjs — the JS<->C contract (src/wasm/abi.h -> js/shared/abi.js) holds on both sides:
// js/shared/abi.js is what tools/gen_abi.mjs makes of the headers now, every declared export exists in
// both built engines with its arity, every import is provided by src/host/hostfile_lib.js, and the
// wasm names each error code as js/shared/abi.js does. Needs dist/ (make -f Makefile.emscripten).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { generate } from '../../tools/gen_abi.mjs';
import * as abi from '../../js/shared/abi.js';

const root = fileURLToPath(new URL('../../', import.meta.url));

async function engine(build) {
  const glue = `${root}dist/oxinfer-${build}.js`;
  const factory = createRequire(glue)(glue);
  return factory({
    oxPoolSize: 1,
    wasmBinary: readFileSync(glue.replace(/\.js$/, '.wasm')),
    print() {},
    printErr() {},
  });
}

test('js/shared/abi.js is up to date with the headers (node tools/gen_abi.mjs)', () => {
  assert.equal(readFileSync(`${root}js/shared/abi.js`, 'utf8'), generate());
});

test('the contract lists what the worker needs', () => {
  const names = abi.exports.map((e) => e.name);
  for (const n of ['ox_wasm_load', 'ox_wasm_gen_step', 'ox_wasm_gen_prefill', 'ox_wasm_stats', 'ox_wasm_session_reuse'])
    assert.ok(names.includes(n), n);
  assert.equal(new Set(names).size, names.length, 'an export is declared twice');
  assert.equal(abi.codes.OK, 0);
  assert.ok(Object.values(abi.codes).every((c) => Number.isInteger(c) && c <= 0));
  assert.equal(new Set(Object.values(abi.codes)).size, Object.keys(abi.codes).length, 'two codes share a number');
  assert.deepEqual(Object.keys(abi.genStatus), ['token', 'stop', 'length', 'context']);
  assert.ok(
    abi.statsFields.includes('residentBytes') && abi.genOut.includes('token') && abi.genParams.includes('seed'),
  );
});

for (const build of ['st', 'mt']) {
  test(`the ${build} engine has every declared export, and names the codes as js/shared/abi.js`, async () => {
    const M = await engine(build);
    const glue = readFileSync(`${root}dist/oxinfer-${build}.js`, 'utf8');
    for (const e of abi.exports) {
      assert.equal(typeof M[`_${e.name}`], 'function', `${e.name} is not exported by dist/oxinfer-${build}`);
      // Module._name is a lazy JS wrapper; the wasm function behind it (minified name) has the arity
      // (minified names may hold a '$': one more export made ox_wasm_embed's "$")
      const wasmName = new RegExp(`Module\\["_${e.name}"\\]=Module\\["asm"\\]\\["([\\w$]+)"\\]`).exec(glue)?.[1];
      const arity = M.asm[wasmName]?.length;
      assert.equal(arity, e.args.length, `${e.name}: ${arity} parameters in the wasm, ${e.args.length} in abi.h`);
    }
    for (const [name, code] of Object.entries(abi.codes))
      assert.equal(M.UTF8ToString(M._ox_wasm_code_name(code)), name);
    assert.equal(M.UTF8ToString(M._ox_wasm_code_name(-1000)), 'UNKNOWN');
    if (build === 'mt') M.PThread?.terminateAllThreads?.();
  });
}

test('the JS libraries (src/host/hostfile_lib.js, src/gpu/gpu_lib.js) provide every declared import', () => {
  const lib = ['src/host/hostfile_lib.js', 'src/gpu/gpu_lib.js']
    .map((f) => readFileSync(`${root}${f}`, 'utf8'))
    .join('\n');
  for (const i of abi.imports) {
    const m = new RegExp(`\\b${i.name}: function \\(([^)]*)\\)`).exec(lib);
    assert.ok(m, `${i.name} is missing from the JS libraries`);
    assert.equal(m[1].split(',').filter((s) => s.trim()).length, i.args.length, `${i.name}: arity`);
  }
});
