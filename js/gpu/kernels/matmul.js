// matmul.js — y[t][row0 + r] = W[r] . x[t] over weights in their GGML block formats, read from
// u32 storage as uploaded (no f32 expansion). The same integer sums and float products per
// block as the C engine's scalar dots (src/kernels/quant.c, iq.c: ox_vec_dot_ref): quantized
// weights dot against activations quantized to the type's vec-dot format (Q8_0 or Q8_K, see
// quantize.js); F32 / F16 / BF16 dot against f32. Only the order of the per-block float sums
// differs (several lanes per row, then a tree).
//
// One workgroup: ROWS rows x LANES lanes (each lane a strided share of the row's blocks), and a
// tile of TT tokens (grid y): each weight block is read once for the TT tokens. TT = 1 is the
// decode matvec; 4 a speculative verify's few tokens; 8 a prefill batch (tokenTile). With the
// subgroups feature, a subgroup per row and subgroupAdd instead (matmulRows).
import { loads, dot4, dot4Requires, flatGroup, paramStruct, MAIN, bindings } from './common.js';

/** Activation word layout of one quantized activation buffer region of n_tok tokens x cols:
 *  qs: n_tok * cols/4 words (4 int8 each) at 0; d: n_tok * cols/BE f32 after them (Q8_0: the
 *  f16-rounded scale, as the C dots use it); Q8_K only: n_tok * cols/32 i32 sums of 32 quants.
 * @param {'f32'|'q8_0'|'q8_k'} act @returns {{words: number, dOff: number, sOff: number}} */
export function actLayout(act, cols, nTok) {
  if (act === 'f32') return { words: nTok * cols, dOff: 0, sOff: 0 };
  const be = act === 'q8_0' ? 32 : 256;
  const qs = (nTok * cols) / 4,
    d = (nTok * cols) / be,
    s = act === 'q8_k' ? (nTok * cols) / 32 : 0;
  return { words: qs + d + s, dOff: qs, sOff: qs + d };
}

// Per type: block elements, bytes, activation format, sub-units per block (sub, default 1: a
// lane's unit of work; the 256-element blocks split in 8 so neighbouring lanes read
// neighbouring bytes) and WGSL `fn blk(o, b, j, t) -> f32`: the dot of unit j of the weight
// block at byte o (block b of its row) with token t's activations.
// Helpers in scope: wb/wh/ww/wf16 (weight loads), xq(t, word), xd(t, block), xs(t, k32), xf(t, col).
const S8_4 = 'fn s8_4(v : u32) -> u32 { return (v + 0x78787878u) ^ 0x80808080u; }\n'; // 4 nibbles - 8
const IQ4_LUT = /* wgsl */ `
const KV4 = array<u32, 16>(0x81u, 0x98u, 0xadu, 0xbfu, 0xcfu, 0xddu, 0xeau, 0xf6u, 0x01u, 0x0du, 0x19u, 0x26u, 0x35u, 0x45u, 0x59u, 0x71u);
fn lut4(v : u32) -> u32 {
  return KV4[v & 15u] | (KV4[(v >> 8u) & 15u] << 8u) | (KV4[(v >> 16u) & 15u] << 16u) | (KV4[(v >> 24u) & 15u] << 24u);
}
`;
const SCALE_MIN_K4 = /* wgsl */ `
fn scale_min_k4(j : u32, q : u32) -> vec2<i32> {
  if (j < 4u) { return vec2<i32>(i32(wb(q + j) & 63u), i32(wb(q + j + 4u) & 63u)); }
  let sc = (wb(q + j + 4u) & 0xfu) | ((wb(q + j - 4u) >> 6u) << 4u);
  let mn = (wb(q + j + 4u) >> 4u) | ((wb(q + j) >> 6u) << 4u);
  return vec2<i32>(i32(sc), i32(mn));
}
`;
const q45k = (qh) => /* wgsl */ `
fn blk(o : u32, b : u32, j : u32, t : u32) -> f32 {
  let sm = scale_min_k4(j, o + 4u);
  var s = 0i;
  for (var w = 0u; w < 8u; w++) {
    var v = (ww(o + ${qh ? 48 : 16}u + 32u * (j >> 1u) + 4u * w) >> (4u * (j & 1u))) & 0x0f0f0f0fu;
    ${qh ? 'v = v | (((ww(o + 16u + 4u * w) >> j) & 0x01010101u) << 4u);' : ''}
    s += dot4(v, xq(t, b * 64u + j * 8u + w));
  }
  let ad = xd(t, b);
  return ad * wf16(o) * f32(sm.x * s) - ad * wf16(o + 2u) * f32(sm.y * xs(t, b * 8u + j));
}
`;

// Q4_0 / IQ4_NL: an f16 scale and 16 bytes of nibbles (low: elements 0..15, high: 16..31);
// map turns 4 nibbles into 4 signed bytes; scale is the C dot's float expression of s
const nibbles32 = (map, scale) => /* wgsl */ `
fn blk(o : u32, b : u32, j : u32, t : u32) -> f32 {
  var s = 0i;
  for (var w = 0u; w < 4u; w++) {
    let q = ww(o + 2u + 4u * w);
    s += dot4(${map}(q & 0x0f0f0f0fu), xq(t, b * 8u + w)) + dot4(${map}((q >> 4u) & 0x0f0f0f0fu), xq(t, b * 8u + 4u + w));
  }
  return ${scale};
}
`;

// F32 / F16 / BF16: "blocks" of 8 values against f32 activations; `load` reads value e
const floatBlk = (load) => /* wgsl */ `
fn blk(o : u32, b : u32, j : u32, t : u32) -> f32 {
  var s = 0.0;
  for (var e = 0u; e < 8u; e++) {
    let c = b * 8u + e;
    if (c < p.cols) { s += ${load} * xf(t, c); }
  }
  return s;
}
`;

/** @type {Record<number, {name: string, be: number, bb: number, act: 'f32'|'q8_0'|'q8_k', sub?: number, code: string}>} */
export const TYPES = {
  0: { name: 'F32', be: 8, bb: 32, act: 'f32', code: floatBlk('bitcast<f32>(W[(o >> 2u) + e])') },
  1: { name: 'F16', be: 8, bb: 16, act: 'f32', code: floatBlk('wf16(o + 2u * e)') },
  30: { name: 'BF16', be: 8, bb: 16, act: 'f32', code: floatBlk('bitcast<f32>(wh(o + 2u * e) << 16u)') },
  8: {
    name: 'Q8_0',
    be: 32,
    bb: 34,
    act: 'q8_0',
    code: /* wgsl */ `
fn blk(o : u32, b : u32, j : u32, t : u32) -> f32 {
  var s = 0i;
  for (var j = 0u; j < 8u; j++) { s += dot4(ww(o + 2u + 4u * j), xq(t, b * 8u + j)); }
  return f32(s) * (wf16(o) * xd(t, b));
}
`,
  },
  2: { name: 'Q4_0', be: 32, bb: 18, act: 'q8_0', code: S8_4 + nibbles32('s8_4', 'f32(s) * (wf16(o) * xd(t, b))') },
  20: { name: 'IQ4_NL', be: 32, bb: 18, act: 'q8_0', code: IQ4_LUT + nibbles32('lut4', 'xd(t, b) * wf16(o) * f32(s)') },
  12: { name: 'Q4_K', be: 256, bb: 144, act: 'q8_k', sub: 8, code: SCALE_MIN_K4 + q45k(false) },
  13: { name: 'Q5_K', be: 256, bb: 176, act: 'q8_k', sub: 8, code: SCALE_MIN_K4 + q45k(true) },
  14: {
    name: 'Q6_K',
    be: 256,
    bb: 210,
    act: 'q8_k',
    sub: 8,
    code: /* wgsl */ `
fn blk(o : u32, b : u32, j : u32, t : u32) -> f32 {
  var isum = 0i;
  for (var jj = 2u * j; jj < 2u * j + 2u; jj++) {
    let half = jj >> 3u;
    let quarter = (jj & 7u) >> 1u;
    let l0 = 16u * (jj & 1u);
    var s = 0i;
    for (var w = 0u; w < 4u; w++) {
      let lo = (ww(o + 64u * half + 32u * (quarter & 1u) + l0 + 4u * w) >> (4u * (quarter >> 1u))) & 0x0f0f0f0fu;
      let hi = (ww(o + 128u + 32u * half + l0 + 4u * w) >> (2u * quarter)) & 0x03030303u;
      let v = ((lo | (hi << 4u)) + 0x60606060u) ^ 0x80808080u;
      s += dot4(v, xq(t, b * 64u + jj * 4u + w));
    }
    isum += extractBits(i32(wb(o + 192u + jj)), 0u, 8u) * s;
  }
  return xd(t, b) * wf16(o + 208u) * f32(isum);
}
`,
  },
  23: {
    name: 'IQ4_XS',
    be: 256,
    bb: 136,
    act: 'q8_k',
    sub: 8,
    code:
      IQ4_LUT +
      /* wgsl */ `
fn blk(o : u32, b : u32, j : u32, t : u32) -> f32 {
  let ib = j;
  let ls = i32(((wb(o + 4u + (ib >> 1u)) >> (4u * (ib & 1u))) & 0xfu) | (((wh(o + 2u) >> (2u * ib)) & 3u) << 4u)) - 32;
  var s = 0i;
  for (var w = 0u; w < 4u; w++) {
    let q = ww(o + 8u + 16u * ib + 4u * w);
    s += dot4(lut4(q), xq(t, b * 64u + ib * 8u + w)) + dot4(lut4(q >> 4u), xq(t, b * 64u + ib * 8u + 4u + w));
  }
  return wf16(o) * xd(t, b) * f32(ls) * f32(s);
}
`,
  },
};

export const ROWS = 4;
export const LANES = 16;
/** Tokens per workgroup for a batch of nTok: each weight block is read once per tile. */
export const tokenTile = (nTok) => (nTok === 1 ? 1 : nTok <= 4 ? 4 : 8);

/** Uniform of a matmul dispatch (u32 words); the last four only for the MoE variant. */
export const MATMUL_PARAMS = [
  'rows',
  'cols',
  'nTok',
  'row0',
  'xOff',
  'yOff',
  'yStride',
  'rowBytes',
  'nb',
  'dOff',
  'sOff',
  'wOff',
  'xDiv',
  'e0',
  'ne',
  'expertBytes',
];

/** Rows per workgroup: with subgroups, each subgroup sums whole rows with subgroupAdd (no
 * barrier) and a workgroup holds 64 / the smallest subgroup of them; else ROWS rows of LANES
 * lanes and a tree in workgroup memory. */
export function matmulRows(caps) {
  return subgroupRows(caps) ? 64 / caps.subgroupMinSize : ROWS;
}
const subgroupRows = (caps) => caps.subgroups && caps.subgroupMinSize >= 4 && 64 % caps.subgroupMinSize === 0;

/** WGSL of the matmul for weight type `type`, TT tokens per workgroup. moe: the routed-expert
 * variant (TT = 1): grid y runs over slots (token x chosen expert); slot s multiplies expert
 * SEL[s] (stacked experts of `rows` rows each, experts [e0, e0 + ne) in this buffer at
 * expertBytes apiece; others are left to the part that holds them) with activation token
 * s / xDiv, into y row s.
 * @param {number} type ggml type id  @param {number} tt
 * @param {import('../device.js').GpuCaps} caps dot4, subgroups, subgroupMinSize */
export function matmulWgsl(type, tt, caps, moe = false) {
  const T = TYPES[type],
    sub = T.sub ?? 1;
  const sg = subgroupRows(caps);
  const R = matmulRows(caps),
    wgSize = sg ? 64 : ROWS * LANES;
  if (moe) tt = 1;
  // where this workgroup's rows live and which activation token / output row they use
  const where = moe
    ? `let slot = wg.y;
  let e = SEL[slot];
  let live_e = e >= p.e0 && e < p.e0 + p.ne;
  let base = p.wOff + select(0u, (e - p.e0) * p.expertBytes, live_e);
  let at0 = slot / p.xDiv;
  let out0 = slot;`
    : `let live_e = true;
  let base = p.wOff;
  let at0 = wg.y * TT;
  let out0 = at0;`;
  const head = /* wgsl */ `${dot4Requires(caps.dot4)}${sg ? 'enable subgroups;\ndiagnostic(off, subgroup_uniformity);\n' : ''}
${paramStruct(MATMUL_PARAMS)}
${bindings([['W', 'read', 'u32'], ['X', 'read', 'u32'], ['Y', 'read_write', 'f32'], moe && ['SEL', 'read', 'u32']])}
const TT : u32 = ${tt}u;
const BE : u32 = ${T.be}u;
${loads('W', 'w')}
${dot4(caps.dot4)}
fn xq(t : u32, k : u32) -> u32 { return X[p.xOff + t * (p.cols / 4u) + k]; }
fn xd(t : u32, b : u32) -> f32 { return bitcast<f32>(X[p.xOff + p.dOff + t * (p.cols / BE) + b]); }
fn xs(t : u32, k : u32) -> i32 { return bitcast<i32>(X[p.xOff + p.sOff + t * (p.cols / 32u) + k]); }
fn xf(t : u32, c : u32) -> f32 { return bitcast<f32>(X[p.xOff + t * p.cols + c]); }
${T.code}
// acc[t] += this lane's share (units lane, lane + step, ...) of the row at byte ro, tokens at0 + t
fn row_dot(ro : u32, lane : u32, step : u32, at0 : u32, acc : ptr<function, array<f32, ${tt}>>) {
  for (var u = lane; u < p.nb * ${sub}u; u += step) {
    let b = u / ${sub}u;
    for (var t = 0u; t < TT; t++) {
      if (at0 + t < p.nTok) { (*acc)[t] += blk(ro + b * ${T.bb}u, b, u % ${sub}u, at0 + t); }
    }
  }
}
fn put(r : u32, t : u32, v : f32) { Y[p.yOff + t * p.yStride + p.row0 + r] = v; }
`;
  const live = moe ? 'live_e && r < p.rows' : 'r < p.rows';
  const okTok = moe ? 'true' : 'at0 + t < p.nTok';
  if (sg)
    return (
      head +
      /* wgsl */ `
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wg : vec3<u32>, @builtin(num_workgroups) nwg : vec3<u32>,
        @builtin(subgroup_id) sgid : u32, @builtin(num_subgroups) nsg : u32,
        @builtin(subgroup_invocation_id) si : u32, @builtin(subgroup_size) ssz : u32) {
  ${where}
  for (var rl = sgid; rl < ${R}u; rl += nsg) {
    let r = (${flatGroup}) * ${R}u + rl;
    var acc : array<f32, ${tt}>;
    if (${live}) { row_dot(base + r * p.rowBytes, si, ssz, at0, &acc); }
    for (var t = 0u; t < TT; t++) {
      let v = subgroupAdd(acc[t]);
      if (si == 0u && ${live} && ${okTok}) { put(r, out0 + t, v); }
    }
  }
}
`
    );
  return (
    head +
    /* wgsl */ `
var<workgroup> red : array<f32, ${wgSize * tt}>;
@compute @workgroup_size(${wgSize})
${MAIN} {
  ${where}
  let r = (${flatGroup}) * ${ROWS}u + li / ${LANES}u;
  let lane = li % ${LANES}u;
  var acc : array<f32, ${tt}>;
  if (${live}) { row_dot(base + r * p.rowBytes, lane, ${LANES}u, at0, &acc); }
  for (var t = 0u; t < TT; t++) { red[t * ${wgSize}u + li] = acc[t]; }
  workgroupBarrier();
  for (var s = ${LANES / 2}u; s > 0u; s >>= 1u) {
    if (lane < s) {
      for (var t = 0u; t < TT; t++) { red[t * ${wgSize}u + li] += red[t * ${wgSize}u + li + s]; }
    }
    workgroupBarrier();
  }
  if (lane == 0u && ${live}) {
    for (var t = 0u; t < TT; t++) {
      if (${okTok}) { put(r, out0 + t, red[t * ${wgSize}u + li]); }
    }
  }
}
`
  );
}
