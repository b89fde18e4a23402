// quantize.js — activations f32 -> Q8_0 / Q8_K in the word layout of matmul.js's actLayout,
// with the C engine's rounding (src/kernels/quant.c quant_q8_0 / quant_q8_k; kernels.c
// ox_quantize_q8_0_act): Q8_0 d = amax/127 stored as f16, q = round half away from zero of
// x * (1/d); Q8_K iscale = -127/max (max: the first element of largest |x|), q = round half to
// even of iscale * x, d = 1/iscale. One invocation per (token, block): no barriers.
// WGSL division is not required to be correctly rounded, so a quant next to a .5 boundary
// may differ by one from the CPU's on some devices (the tests bound how often).
import { f32ToF16, roundQ8, flatGroup, paramStruct, MAIN, bindings } from './common.js';

export const QUANTIZE_PARAMS = ['cols', 'nTok', 'xOff', 'yOff', 'dOff', 'sOff'];
export const QUANTIZE_WG = 64;

/** @param {'q8_0'|'q8_k'} act */
export function quantizeWgsl(act) {
  const be = act === 'q8_0' ? 32 : 256;
  const body =
    act === 'q8_0'
      ? /* wgsl */ `
  var amax = 0.0;
  for (var j = 0u; j < 32u; j++) { amax = max(amax, abs(X[x0 + j])); }
  let d = amax / 127.0;
  var id = 0.0;
  if (d != 0.0) { id = 1.0 / d; }
  if (id > 3.4e38) { id = 0.0; }
  let h = f32_to_f16(d);
  Y[p.yOff + p.dOff + g] = bitcast<u32>(unpack2x16float(h).x);
  for (var w = 0u; w < 8u; w++) {
    var word = 0u;
    for (var k = 0u; k < 4u; k++) {
      let v = X[x0 + 4u * w + k] * id;
      word |= (u32(round_q8(v)) & 0xffu) << (8u * k);
    }
    Y[p.yOff + q0 + w] = word;
  }`
      : /* wgsl */ `
  var amax = 0.0;
  var mx = 0.0;
  for (var j = 0u; j < 256u; j++) {
    let v = X[x0 + j];
    if (amax < abs(v)) { amax = abs(v); mx = v; }
  }
  var iscale = 0.0;
  if (amax != 0.0) { iscale = -127.0 / mx; }
  let zero = amax == 0.0 || abs(iscale) > 3.4e38;
  Y[p.yOff + p.dOff + g] = bitcast<u32>(select(1.0 / iscale, 0.0, zero));
  for (var s = 0u; s < 8u; s++) {
    var sum = 0i;
    for (var w = 0u; w < 8u; w++) {
      var word = 0u;
      for (var k = 0u; k < 4u; k++) {
        var q = i32(min(round(iscale * X[x0 + 32u * s + 4u * w + k]), 127.0));
        if (zero) { q = 0; }
        sum += q;
        word |= (u32(q) & 0xffu) << (8u * k);
      }
      Y[p.yOff + q0 + 8u * s + w] = word;
    }
    Y[p.yOff + p.sOff + g * 8u + s] = bitcast<u32>(sum);
  }`;
  return /* wgsl */ `
${paramStruct(QUANTIZE_PARAMS)}
${bindings([
  ['X', 'read', 'f32'],
  ['Y', 'read_write', 'u32'],
])}
${f32ToF16}
${roundQ8}
@compute @workgroup_size(${QUANTIZE_WG})
${MAIN} {
  let g = (${flatGroup}) * ${QUANTIZE_WG}u + li;      // block of all tokens' blocks
  if (g >= p.nTok * (p.cols / ${be}u)) { return; }
  let x0 = p.xOff + g * ${be}u;                       // tokens are contiguous rows of cols
  let q0 = g * ${be / 4}u;${body}
}
`;
}
