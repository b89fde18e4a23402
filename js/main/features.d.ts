// Type declarations for js/main/features.js.

/** Whether this engine runs relaxed SIMD (i16x8.relaxed_dot_i8x16_i7x16_s), i.e. whether the
 *  dist/oxinfer-*-relaxed builds can load here. */
export function relaxedSimd(): boolean;

/** Node 20/21: turns on V8's `--experimental-wasm-relaxed-simd` for the process (on by default
 *  from Node 22; it only makes relaxed-SIMD modules valid), so the relaxed builds load there.
 *  Elsewhere it does nothing. Resolves to relaxedSimd() afterwards. loadModel calls it unless
 *  `simd: 'simd128'`. */
export function enableRelaxedSimd(): Promise<boolean>;
