// attention.js — the KV cache on the GPU (src/model/kv.c): storing a token's K and V rows at
// row p (or p mod cap on a sliding ring), as f32 or f16; and attention of n query tokens over
// it as forward.c's attn_task + ox_kv_attend do: per query head h (KV head h / group), keys
// j in [max(0, p - W + 1), p] (W = 0: all), scores q . k_j with scale 1 (Gemma's q/k norms
// replace 1/sqrt(d)), softmax in f32 (max, exp, sum, times 1/sum), out = sum_j p_j v_j.
// keys > 0: every query sees keys [0, keys) instead, without a mask (the vision tower's
// attention over an image's patches, K and V rows f32 in the step's scratch).
// A cache row holds nKv heads of hd values; f16 rows pack two halves per u32; q8_0 rows are
// GGML Q8_0 blocks of 32 per head (34 bytes: f16 scale, 32 int8), written two blocks (17 words)
// per invocation, so a row must hold an even number of blocks (every released model's does).
import { f32ToF16, roundQ8, loads, flatGroup, paramStruct, MAIN, wgReduce, bindings } from './common.js';

export const ATTN_WG = 64;
export const KV_TYPES = { f32: 0, f16: 1, q8_0: 2 };

export const KV_WRITE_PARAMS = ['width', 'nTok', 'pos', 'cap', 'ring', 'kOff', 'vOff', 'inStride'];
/** One invocation per (token, value) (f32), (token, pair of values) (f16) or (token, pair of
 * blocks) (q8_0: ox_quantize_row's Q8_0 rounding). */
export function kvWriteWgsl(kv) {
  const per = { f32: '1u', f16: '2u', q8_0: '64u' }[kv];
  const store = {
    f32: `KC[row * per + e] = bitcast<u32>(IN[k + e]);
  VC[row * per + e] = bitcast<u32>(IN[v + e]);`,
    f16: `KC[row * per + e] = f32_to_f16(IN[k + 2u * e]) | (f32_to_f16(IN[k + 2u * e + 1u]) << 16u);
  VC[row * per + e] = f32_to_f16(IN[v + 2u * e]) | (f32_to_f16(IN[v + 2u * e + 1u]) << 16u);`,
    q8_0: `store_q8_pair(true, row * per * 17u + e * 17u, k + 64u * e);
  store_q8_pair(false, row * per * 17u + e * 17u, v + 64u * e);`,
  }[kv];
  const q8 =
    kv !== 'q8_0'
      ? ''
      : /* wgsl */ `${roundQ8}
// two Q8_0 blocks of IN[x0 .. x0 + 64) as 68 bytes = 17 words at word w0 of KC or VC
fn store_q8_pair(toK : bool, w0 : u32, x0 : u32) {
  var words : array<u32, 17>;
  for (var blk = 0u; blk < 2u; blk++) {
    var amax = 0.0;
    for (var j = 0u; j < 32u; j++) { amax = max(amax, abs(IN[x0 + 32u * blk + j])); }
    let d = amax / 127.0;
    var id = 0.0;
    if (d != 0.0) { id = 1.0 / d; }
    if (id > 3.4e38) { id = 0.0; }
    let o = 34u * blk;
    words[o >> 2u] |= f32_to_f16(d) << ((o & 3u) * 8u);
    for (var j = 0u; j < 32u; j++) {
      let b = o + 2u + j;
      words[b >> 2u] |= (u32(round_q8(IN[x0 + 32u * blk + j] * id)) & 0xffu) << ((b & 3u) * 8u);
    }
  }
  for (var i = 0u; i < 17u; i++) { if (toK) { KC[w0 + i] = words[i]; } else { VC[w0 + i] = words[i]; } }
}
`;
  return /* wgsl */ `
${paramStruct(KV_WRITE_PARAMS)}
${bindings([
  ['IN', 'read', 'f32'],
  ['KC', 'read_write', 'u32'],
  ['VC', 'read_write', 'u32'],
])}
${kv === 'f32' ? '' : f32ToF16}
${q8}
@compute @workgroup_size(${ATTN_WG})
${MAIN} {
  let per = p.width / ${per};
  let g = (${flatGroup}) * ${ATTN_WG}u + li;
  if (g >= p.nTok * per) { return; }
  let t = g / per;
  let e = g % per;
  var row = p.pos + t;
  if (p.ring != 0u) { row = row % p.cap; }
  let k = p.kOff + t * p.inStride;
  let v = p.vOff + t * p.inStride;
  ${store}
}
`;
}

export const ATTN_PARAMS = [
  'nTok',
  'nh',
  'hd',
  'nKv',
  'pos',
  'window',
  'cap',
  'ring',
  'qOff',
  'qStride',
  'oOff',
  'oStride',
  'sStride',
  'nChunks',
  'keys',
];
/** Keys per workgroup of the split attention. */
export const ATTN_CHUNK = 256;
/** One workgroup per (token, query head); S is scratch of nTok * nh * sStride floats
 * (sStride >= the most keys a query sees). split: the keys of a query in chunks of ATTN_CHUNK,
 * one workgroup per (token, head, chunk), each writing its max m, sum l of e^(s - m) and
 * sum of e^(s - m) v to PART (hd + 2 floats); attnCombineWgsl merges them (flash decoding:
 * many workgroups on a long context). */
export function attentionWgsl(kv, split = false) {
  // kdot: q . the head-g key of a row; vterm: p_j times lane d of its value, with the C
  // kernels' operation order (attn.c: per Q8_0 block d * sum(q * k), y += (a * d) * v)
  const rowElems = 'p.nKv * p.hd';
  const fns = {
    f32: `fn kdot(row : u32, g : u32, q0 : u32) -> f32 {
  var s = 0.0;
  for (var d = 0u; d < p.hd; d++) { s += Q[q0 + d] * bitcast<f32>(KC[row * ${rowElems} + g * p.hd + d]); }
  return s;
}
fn vterm(row : u32, g : u32, d : u32, a : f32) -> f32 { return a * bitcast<f32>(VC[row * ${rowElems} + g * p.hd + d]); }`,
    f16: `fn half(i : u32, w : u32) -> f32 { let v = unpack2x16float(w); return select(v.x, v.y, (i & 1u) == 1u); }
fn kdot(row : u32, g : u32, q0 : u32) -> f32 {
  var s = 0.0;
  for (var d = 0u; d < p.hd; d++) { let i = row * ${rowElems} + g * p.hd + d; s += Q[q0 + d] * half(i, KC[i >> 1u]); }
  return s;
}
fn vterm(row : u32, g : u32, d : u32, a : f32) -> f32 { let i = row * ${rowElems} + g * p.hd + d; return a * half(i, VC[i >> 1u]); }`,
    q8_0: `${loads('KC', 'k')}
${loads('VC', 'v')}
fn kdot(row : u32, g : u32, q0 : u32) -> f32 {
  let o = (row * ${rowElems} + g * p.hd) / 32u * 34u;
  var s = 0.0;
  for (var b = 0u; b < p.hd / 32u; b++) {
    var bs = 0.0;
    for (var j = 0u; j < 32u; j++) { bs += Q[q0 + 32u * b + j] * f32(extractBits(i32(kb(o + 34u * b + 2u + j)), 0u, 8u)); }
    s += kf16(o + 34u * b) * bs;
  }
  return s;
}
fn vterm(row : u32, g : u32, d : u32, a : f32) -> f32 {
  let o = (row * ${rowElems} + g * p.hd + d) / 32u * 34u;
  return (a * vf16(o)) * f32(extractBits(i32(vb(o + 2u + d % 32u)), 0u, 8u));
}`,
  }[kv];
  const head = /* wgsl */ `
${paramStruct(ATTN_PARAMS)}
${bindings(
  split
    ? [
        ['Q', 'read', 'f32'],
        ['KC', 'read', 'u32'],
        ['VC', 'read', 'u32'],
        ['PART', 'read_write', 'f32'],
      ]
    : [
        ['Q', 'read', 'f32'],
        ['KC', 'read', 'u32'],
        ['VC', 'read', 'u32'],
        ['O', 'read_write', 'f32'],
        ['S', 'read_write', 'f32'],
      ],
)}
${fns}
fn row_of(j : u32) -> u32 { if (p.ring != 0u) { return j % p.cap; } return j; }
${wgReduce(ATTN_WG)}
`;
  // the query of `item` (token t, head h): its KV group and visible keys [lo, lo + n)
  const query = (item) => /* wgsl */ `
  let live = ${item} < p.nTok * p.nh;
  let t = ${item} / p.nh;
  let h = ${item} % p.nh;
  let g = h / (p.nh / p.nKv);
  let pos = p.pos + t;
  var lo = 0u;
  if (p.window > 0u && pos + 1u > p.window) { lo = pos + 1u - p.window; }
  var n = pos - lo + 1u;
  if (p.keys > 0u) { lo = 0u; n = p.keys; }
  let q0 = p.qOff + t * p.qStride + h * p.hd;`;
  if (split)
    return (
      head +
      /* wgsl */ `
var<workgroup> sc : array<f32, ${ATTN_CHUNK}>;
@compute @workgroup_size(${ATTN_WG})
${MAIN} {
  let item = (${flatGroup}) / p.nChunks;
  let c = (${flatGroup}) % p.nChunks;
  ${query('item')}
  let j0 = c * ${ATTN_CHUNK}u;
  let j1 = min(n, j0 + ${ATTN_CHUNK}u);
  var m = -3.4e38;
  if (live) {
    for (var j = j0 + li; j < j1; j += ${ATTN_WG}u) { let s = kdot(row_of(lo + j), g, q0); sc[j - j0] = s; m = max(m, s); }
  }
  let mx = reduce(m, li, true);
  var sum = 0.0;
  if (live) { for (var j = j0 + li; j < j1; j += ${ATTN_WG}u) { let e = exp(sc[j - j0] - mx); sc[j - j0] = e; sum += e; } }
  let total = reduce(sum, li, false);
  if (!live) { return; }
  let b = (item * p.nChunks + c) * (p.hd + 2u);
  if (li == 0u) { PART[b] = mx; PART[b + 1u] = total; }
  for (var d = li; d < p.hd; d += ${ATTN_WG}u) {
    var acc = 0.0;
    for (var j = j0; j < j1; j++) { acc += vterm(row_of(lo + j), g, d, sc[j - j0]); }
    PART[b + 2u + d] = acc;
  }
}
`
    );
  return (
    head +
    /* wgsl */ `
@compute @workgroup_size(${ATTN_WG})
${MAIN} {
  let item = ${flatGroup};
  ${query('item')}
  let s0 = item * p.sStride;
  var m = -3.4e38;
  if (live) {
    for (var j = li; j < n; j += ${ATTN_WG}u) {
      let s = kdot(row_of(lo + j), g, q0);
      S[s0 + j] = s;
      m = max(m, s);
    }
  }
  let mx = reduce(m, li, true);
  var sum = 0.0;
  if (live) { for (var j = li; j < n; j += ${ATTN_WG}u) { let e = exp(S[s0 + j] - mx); S[s0 + j] = e; sum += e; } }
  storageBarrier(); // every invocation reads every score below
  let total = reduce(sum, li, false);
  if (!live) { return; }
  let inv = 1.0 / total;
  let o0 = p.oOff + t * p.oStride + h * p.hd;
  for (var d = li; d < p.hd; d += ${ATTN_WG}u) {
    var acc = 0.0;
    for (var j = 0u; j < n; j++) { acc += vterm(row_of(lo + j), g, d, S[s0 + j] * inv); }
    O[o0 + d] = acc;
  }
}
`
  );
}

/** The split attention's second pass: per (token, head), out = sum_c e^(m_c - M) o_c /
 * sum_c e^(m_c - M) l_c, M the largest m_c (an empty chunk has m = -3.4e38: weight 0). */
export const attnCombineWgsl = () => /* wgsl */ `
${paramStruct(ATTN_PARAMS)}
${bindings([
  ['PART', 'read', 'f32'],
  ['O', 'read_write', 'f32'],
])}
@compute @workgroup_size(${ATTN_WG})
${MAIN} {
  let item = ${flatGroup};
  if (item >= p.nTok * p.nh) { return; }
  let b0 = item * p.nChunks * (p.hd + 2u);
  var mx = -3.4e38;
  for (var c = 0u; c < p.nChunks; c++) { mx = max(mx, PART[b0 + c * (p.hd + 2u)]); }
  var l = 0.0;
  for (var c = 0u; c < p.nChunks; c++) { let b = b0 + c * (p.hd + 2u); l += exp(PART[b] - mx) * PART[b + 1u]; }
  let o0 = p.oOff + (item / p.nh) * p.oStride + (item % p.nh) * p.hd;
  for (var d = li; d < p.hd; d += ${ATTN_WG}u) {
    var acc = 0.0;
    for (var c = 0u; c < p.nChunks; c++) { let b = b0 + c * (p.hd + 2u); acc += exp(PART[b] - mx) * PART[b + 2u + d]; }
    O[o0 + d] = acc / l;
  }
}
`;
