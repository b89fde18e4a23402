// features.js — run-time checks for choosing a wasm build.

// (module (func (param v128 v128) (result v128)
//   local.get 0 local.get 1 i16x8.relaxed_dot_i8x16_i7x16_s))
// The opcode is 0xfd 0x112 (LEB128: 0x92 0x02), the one the relaxed build's tiles use.
const RELAXED_DOT = new Uint8Array([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
  0x01, 0x07, 0x01, 0x60, 0x02, 0x7b, 0x7b, 0x01, 0x7b, // type: (v128, v128) -> v128
  0x03, 0x02, 0x01, 0x00, // one function of that type
  0x0a, 0x0b, 0x01, 0x09, 0x00, 0x20, 0x00, 0x20, 0x01, 0xfd, 0x92, 0x02, 0x0b, // its body
]);

/**
 * Whether this engine runs relaxed SIMD (the dot product the dist/oxinfer-*-relaxed builds
 * use): Chromium ships it; Node 20 only with `--experimental-wasm-relaxed-simd`.
 * @returns {boolean}
 */
export function relaxedSimd() {
  try {
    return typeof WebAssembly === 'object' && WebAssembly.validate(RELAXED_DOT);
  } catch {
    return false;
  }
}
