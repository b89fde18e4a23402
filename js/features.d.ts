// Type declarations for js/features.js.

/** Whether this engine runs relaxed SIMD (i16x8.relaxed_dot_i8x16_i7x16_s), i.e. whether the
 *  dist/oxinfer-*-relaxed builds can load here. */
export function relaxedSimd(): boolean;
