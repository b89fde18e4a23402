// features.js — run-time checks for choosing a wasm build.

// (module (func (param v128 v128) (result v128)
//   local.get 0 local.get 1 i16x8.relaxed_dot_i8x16_i7x16_s))
// The opcode is 0xfd 0x112 (LEB128: 0x92 0x02), the one the relaxed build's tiles use.
const RELAXED_DOT = new Uint8Array([
  0x00,
  0x61,
  0x73,
  0x6d,
  0x01,
  0x00,
  0x00,
  0x00,
  0x01,
  0x07,
  0x01,
  0x60,
  0x02,
  0x7b,
  0x7b,
  0x01,
  0x7b, // type: (v128, v128) -> v128
  0x03,
  0x02,
  0x01,
  0x00, // one function of that type
  0x0a,
  0x0b,
  0x01,
  0x09,
  0x00,
  0x20,
  0x00,
  0x20,
  0x01,
  0xfd,
  0x92,
  0x02,
  0x0b, // its body
]);

/**
 * Whether this engine runs relaxed SIMD (the dot product the dist/oxinfer-*-relaxed builds
 * use): Chromium and Node 22+ ship it; Node 20 and 21 only with
 * `--experimental-wasm-relaxed-simd` (see enableRelaxedSimd).
 * @returns {boolean}
 */
export function relaxedSimd() {
  try {
    return typeof WebAssembly === 'object' && WebAssembly.validate(RELAXED_DOT);
  } catch {
    return false;
  }
}

/**
 * Node 20 and 21 (V8 11) implement relaxed SIMD behind `--experimental-wasm-relaxed-simd`, the
 * feature Node 22 turns on by default. This sets that flag for the process (V8 reads it when it
 * validates or compiles a module, and every worker thread shares it): it only makes modules
 * with relaxed-SIMD opcodes valid and changes nothing for the others. Elsewhere it does nothing.
 * The relaxed build runs K-quant prefill ~1.7x and decode ~1.25x faster there than SIMD128
 * (docs/kernels.md). loadModel calls it unless `simd: 'simd128'`.
 * @returns {Promise<boolean>} relaxedSimd() afterwards
 */
export async function enableRelaxedSimd() {
  if (relaxedSimd()) return true;
  const node = typeof process === 'object' && typeof window === 'undefined' ? process.versions?.node : undefined;
  const major = node ? Number(node.split('.')[0]) : 0;
  if (major !== 20 && major !== 21) return false;
  const v8 = await import(/* webpackIgnore: true */ /* @vite-ignore */ 'node:v8');
  v8.setFlagsFromString('--experimental-wasm-relaxed-simd');
  return relaxedSimd();
}
