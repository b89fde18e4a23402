// attention.js — the KV cache on the GPU (src/model/kv.c): storing a token's K and V rows at
// row p (or p mod cap on a sliding ring), as f32 or f16; and attention of n query tokens over
// it as forward.c's attn_task + ox_kv_attend do: per query head h (KV head h / group), keys
// j in [max(0, p - W + 1), p] (W = 0: all), scores q . k_j with scale 1 (Gemma's q/k norms
// replace 1/sqrt(d)), softmax in f32 (max, exp, sum, times 1/sum), out = sum_j p_j v_j.
// A cache row holds nKv heads of hd values; f16 rows pack two halves per u32.
import { f32ToF16, flatGroup } from './common.js';

export const ATTN_WG = 64;
export const KV_TYPES = { f32: 0, f16: 1 };

export const KV_WRITE_PARAMS = ['width', 'nTok', 'pos', 'cap', 'ring', 'kOff', 'vOff', 'inStride'];
/** One invocation per (token, value) (f32) or (token, pair of values) (f16). */
export function kvWriteWgsl(kv) {
  const f16 = kv === 'f16';
  return /* wgsl */ `
struct P { ${KV_WRITE_PARAMS.map((k) => `${k} : u32`).join(', ')} }
@group(0) @binding(0) var<storage, read> IN : array<f32>;
@group(0) @binding(1) var<storage, read_write> KC : array<u32>;
@group(0) @binding(2) var<storage, read_write> VC : array<u32>;
@group(0) @binding(3) var<uniform> p : P;
${f16 ? f32ToF16 : ''}
@compute @workgroup_size(${ATTN_WG})
fn main(@builtin(workgroup_id) wg : vec3<u32>, @builtin(num_workgroups) nwg : vec3<u32>,
        @builtin(local_invocation_index) li : u32) {
  let per = p.width / ${f16 ? 2 : 1}u;
  let g = (${flatGroup}) * ${ATTN_WG}u + li;
  if (g >= p.nTok * per) { return; }
  let t = g / per;
  let e = g % per;
  var row = p.pos + t;
  if (p.ring != 0u) { row = row % p.cap; }
  let k = p.kOff + t * p.inStride;
  let v = p.vOff + t * p.inStride;
  ${
    f16
      ? `KC[row * per + e] = f32_to_f16(IN[k + 2u * e]) | (f32_to_f16(IN[k + 2u * e + 1u]) << 16u);
  VC[row * per + e] = f32_to_f16(IN[v + 2u * e]) | (f32_to_f16(IN[v + 2u * e + 1u]) << 16u);`
      : `KC[row * per + e] = bitcast<u32>(IN[k + e]);
  VC[row * per + e] = bitcast<u32>(IN[v + e]);`
  }
}
`;
}

export const ATTN_PARAMS = ['nTok', 'nh', 'hd', 'nKv', 'pos', 'window', 'cap', 'ring', 'qOff', 'qStride', 'oOff', 'oStride', 'sStride'];
/** One workgroup per (token, query head); S is scratch of nTok * nh * sStride floats
 * (sStride >= the most keys a query sees). */
export function attentionWgsl(kv) {
  const f16 = kv === 'f16';
  const load = f16
    ? (buf) => `fn ${buf}at(row : u32, e : u32) -> f32 { let i = row * p.nKv * p.hd + e; let w = unpack2x16float(${buf}[i >> 1u]); return select(w.x, w.y, (i & 1u) == 1u); }`
    : (buf) => `fn ${buf}at(row : u32, e : u32) -> f32 { return bitcast<f32>(${buf}[row * p.nKv * p.hd + e]); }`;
  return /* wgsl */ `
struct P { ${ATTN_PARAMS.map((k) => `${k} : u32`).join(', ')} }
@group(0) @binding(0) var<storage, read> Q : array<f32>;
@group(0) @binding(1) var<storage, read> KC : array<u32>;
@group(0) @binding(2) var<storage, read> VC : array<u32>;
@group(0) @binding(3) var<storage, read_write> O : array<f32>;
@group(0) @binding(4) var<storage, read_write> S : array<f32>;
@group(0) @binding(5) var<uniform> p : P;
${load('KC')}
${load('VC')}
fn row_of(j : u32) -> u32 { if (p.ring != 0u) { return j % p.cap; } return j; }
var<workgroup> red : array<f32, ${ATTN_WG}>;
@compute @workgroup_size(${ATTN_WG})
fn main(@builtin(workgroup_id) wg : vec3<u32>, @builtin(num_workgroups) nwg : vec3<u32>,
        @builtin(local_invocation_index) li : u32) {
  let item = ${flatGroup};
  let live = item < p.nTok * p.nh;
  let t = item / p.nh;
  let h = item % p.nh;
  let g = h / (p.nh / p.nKv);
  let pos = p.pos + t;
  var lo = 0u;
  if (p.window > 0u && pos + 1u > p.window) { lo = pos + 1u - p.window; }
  let n = pos - lo + 1u;
  let q0 = p.qOff + t * p.qStride + h * p.hd;
  let s0 = item * p.sStride;
  var m = -3.4e38;
  if (live) {
    for (var j = li; j < n; j += ${ATTN_WG}u) {
      let row = row_of(lo + j);
      var s = 0.0;
      for (var d = 0u; d < p.hd; d++) { s += Q[q0 + d] * KCat(row, g * p.hd + d); }
      S[s0 + j] = s;
      m = max(m, s);
    }
  }
  red[li] = m;
  workgroupBarrier();
  for (var st = ${ATTN_WG / 2}u; st > 0u; st >>= 1u) {
    if (li < st) { red[li] = max(red[li], red[li + st]); }
    workgroupBarrier();
  }
  let mx = red[0];
  workgroupBarrier();
  var sum = 0.0;
  if (live) { for (var j = li; j < n; j += ${ATTN_WG}u) { let e = exp(S[s0 + j] - mx); S[s0 + j] = e; sum += e; } }
  red[li] = sum;
  storageBarrier();
  workgroupBarrier();
  for (var st = ${ATTN_WG / 2}u; st > 0u; st >>= 1u) {
    if (li < st) { red[li] += red[li + st]; }
    workgroupBarrier();
  }
  if (!live) { return; }
  let inv = 1.0 / red[0];
  let o0 = p.oOff + t * p.oStride + h * p.hd;
  for (var d = li; d < p.hd; d += ${ATTN_WG}u) {
    var acc = 0.0;
    for (var j = 0u; j < n; j++) { acc += (S[s0 + j] * inv) * VCat(row_of(lo + j), g * p.hd + d); }
    O[o0 + d] = acc;
  }
}
`;
}
