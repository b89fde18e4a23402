// The relaxed-SIMD builds: js/main/features.js detects the opcode, every dist/*-relaxed.wasm really
// uses it (it fails validation where relaxed SIMD is off, validates where it is on) while the
// SIMD128 builds validate without it, and the kernel test (every weight type's fast matmul
// against the scalar reference) passes on the relaxed tiles. Node 20 runs relaxed SIMD only
// with --experimental-wasm-relaxed-simd (loadModel sets it for its process), so the checks that
// need it run in a child process.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { relaxedSimd } from '../../js/main/features.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const FLAG = '--experimental-wasm-relaxed-simd';

// runs `code` (an ES module) in a child node with the flag, returns its stdout
function withFlag(code) {
  return execFileSync(process.execPath, [FLAG, '--input-type=module', '-e', code], { cwd: root, encoding: 'utf8' });
}

const validate = (file) =>
  `import { readFileSync } from 'node:fs'; process.stdout.write(String(WebAssembly.validate(readFileSync(${JSON.stringify(file)}))));`;

test('relaxedSimd() follows the engine; enableRelaxedSimd() turns it on in Node 20', () => {
  assert.equal(relaxedSimd(), false, 'Node 20 without the flag has no relaxed SIMD');
  assert.equal(
    withFlag(`import { relaxedSimd } from './js/main/features.js'; process.stdout.write(String(relaxedSimd()));`),
    'true',
  );
  const enable = `import { relaxedSimd, enableRelaxedSimd } from './js/main/features.js';
    const before = relaxedSimd(), on = await enableRelaxedSimd();
    process.stdout.write(JSON.stringify([before, on, relaxedSimd()]));`;
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', enable], { cwd: root, encoding: 'utf8' });
  assert.deepEqual(JSON.parse(out), [false, true, true]);
});

for (const build of ['mt', 'st']) {
  const relaxed = `dist/oxinfer-${build}-relaxed.wasm`,
    plain = `dist/oxinfer-${build}.wasm`;
  test(
    `${relaxed} uses relaxed SIMD and validates where it runs`,
    { skip: !existsSync(`${root}/${relaxed}`) && `${relaxed} not built (make -f Makefile.emscripten relaxed)` },
    async () => {
      const { readFileSync } = await import('node:fs');
      assert.equal(
        WebAssembly.validate(readFileSync(`${root}/${relaxed}`)),
        false,
        'a relaxed opcode must be in the module',
      );
      assert.equal(
        withFlag(validate(relaxed)),
        'true',
        'the module must be valid (clang 16 once emitted an invalid relaxed body)',
      );
      if (existsSync(`${root}/${plain}`)) assert.equal(WebAssembly.validate(readFileSync(`${root}/${plain}`)), true);
    },
  );
}

const kernelTest = 'build-wasm/tools/test_kernels_relaxed.js';
test(
  'the kernel test passes on the relaxed tiles',
  {
    skip: !existsSync(`${root}/${kernelTest}`) && `${kernelTest} not built (make -f Makefile.emscripten relaxed-test)`,
    timeout: 600000,
  },
  () => {
    const out = execFileSync(process.execPath, [FLAG, '--no-experimental-fetch', 'test_kernels_relaxed.js'], {
      cwd: `${root}/build-wasm/tools`,
      encoding: 'utf8',
    });
    const m = /test_kernels: (\d+) passed, (\d+) failed/.exec(out);
    assert.ok(m, `no summary in:\n${out}`);
    assert.equal(m[2], '0', out);
    assert.ok(Number(m[1]) > 1000);
  },
);

test(
  'loadModel picks the relaxed build in plain Node 20 (and with simd: simd128 the other); its K-quant logits match the SIMD128 build',
  { timeout: 600000 },
  async () => {
    const { synth, tmpDir } = await import('../oracle/fixtures.mjs');
    const file = synth(tmpDir('relaxed'), { preset: 'tiny', type: 'q4_k', extra: ['--embd-type', 'q6_k'] });
    const script = path.join(tmpDir('relaxed-run'), 'run.mjs');
    fs.writeFileSync(
      script,
      `
    import { loadModel } from ${JSON.stringify(pathToFileURL(path.join(root, 'js', 'main', 'index.js')).href)};
    const tokens = [2, 40, 41, 300, 301, 302, 77, 78];
    const b = await loadModel(${JSON.stringify(file)}, { threads: 2, simd: 'simd128' });
    const a = await loadModel(${JSON.stringify(file)}, { threads: 2 });
    const la = await a.logits(tokens, { all: true }), lb = await b.logits(tokens, { all: true });
    let d = 0;
    for (let i = 0; i < la.length; i++) d = Math.max(d, Math.abs(la[i] - lb[i]));
    process.stdout.write(JSON.stringify({ a: a.simd, b: b.simd, d }));
    await a.unload(); await b.unload();`,
    );
    // (a file, not -e: the engine's worker thread cannot take --input-type); no flag: loadModel
    // sets it, and the engine's worker threads see it
    const out = execFileSync(process.execPath, [script], { cwd: root, encoding: 'utf8' });
    const r = JSON.parse(out);
    assert.equal(r.a, 'relaxed');
    assert.equal(r.b, 'simd128');
    // the same integer dots in another order: equal up to float rounding of the sums
    assert.ok(r.d < 1e-3, `max |logit difference| relaxed vs SIMD128: ${r.d}`);
  },
);
