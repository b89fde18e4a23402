// moe.js — routed experts as forward.c's moe_branch computes them (docs/gemma4.md §2.5), kept on
// the GPU so a step reads nothing back: the router's top-K (softmax over all E in place, the K
// most probable with ties to the lower id, renormalized to sum 1, times expert_scale[e]) and the
// weighted sum of the K experts' outputs, added in increasing expert id as the C loop over
// experts does. The expert matmuls themselves are matmul.js's MoE variant.
import { flatGroup, paramStruct, MAIN, bindings } from './common.js';

export const MOE_WG = 64;
export const ROUTE_PARAMS = ['nTok', 'nExp', 'topK', 'zOff', 'selOff', 'wOff'];

/** One invocation per token (E and K are small: 128 and 8 on the released model). */
export const routeWgsl = () => /* wgsl */ `
${paramStruct(ROUTE_PARAMS)}
${bindings([
  ['Z', 'read_write', 'f32'],
  ['SCALE', 'read', 'f32'],
  ['SEL', 'read_write', 'u32'],
  ['WT', 'read_write', 'f32'],
])}
@compute @workgroup_size(${MOE_WG})
${MAIN} {
  let t = (${flatGroup}) * ${MOE_WG}u + li;
  if (t >= p.nTok) { return; }
  let z0 = p.zOff + t * p.nExp;
  var mx = Z[z0];
  for (var e = 1u; e < p.nExp; e++) { mx = max(mx, Z[z0 + e]); }
  var sum = 0.0;
  for (var e = 0u; e < p.nExp; e++) { let v = exp(Z[z0 + e] - mx); Z[z0 + e] = v; sum += v; }
  let inv = 1.0 / sum;
  for (var e = 0u; e < p.nExp; e++) { Z[z0 + e] = Z[z0 + e] * inv; }
  let s0 = p.selOff + t * p.topK;
  let w0 = p.wOff + t * p.topK;
  var picked = 0.0;
  for (var k = 0u; k < p.topK; k++) {
    var best = 0xffffffffu;
    for (var e = 0u; e < p.nExp; e++) {
      var taken = false;
      for (var q = 0u; q < k; q++) { taken = taken || SEL[s0 + q] == e; }
      if (!taken && (best == 0xffffffffu || Z[z0 + e] > Z[z0 + best])) { best = e; }
    }
    SEL[s0 + k] = best;
    WT[w0 + k] = Z[z0 + best];
    picked += Z[z0 + best];
  }
  for (var k = 0u; k < p.topK; k++) { WT[w0 + k] = WT[w0 + k] / picked * SCALE[SEL[s0 + k]]; }
}
`;

export const COMBINE_PARAMS = ['nTok', 'topK', 'n', 'ysOff', 'selOff', 'wOff', 'outOff'];
/** out[t][c] = sum over token t's K slots, in increasing expert id, of w * ys[slot][c] (from 0). */
export const combineWgsl = () => /* wgsl */ `
${paramStruct(COMBINE_PARAMS)}
${bindings([
  ['YS', 'read', 'f32'],
  ['SEL', 'read', 'u32'],
  ['WT', 'read', 'f32'],
  ['OUT', 'read_write', 'f32'],
])}
@compute @workgroup_size(${MOE_WG})
${MAIN} {
  let g = (${flatGroup}) * ${MOE_WG}u + li;
  if (g >= p.nTok * p.n) { return; }
  let t = g / p.n;
  let c = g % p.n;
  let s0 = p.selOff + t * p.topK;
  var acc = 0.0;
  var last = -1i;
  for (var k = 0u; k < p.topK; k++) {
    var next = 0u;
    var ne = 0x7fffffffi;
    for (var q = 0u; q < p.topK; q++) {
      let e = i32(SEL[s0 + q]);
      if (e > last && e < ne) { ne = e; next = q; }
    }
    last = ne;
    acc += WT[p.wOff + t * p.topK + next] * YS[p.ysOff + (t * p.topK + next) * p.n + c];
  }
  OUT[p.outOff + t * p.n + c] = acc;
}
`;
