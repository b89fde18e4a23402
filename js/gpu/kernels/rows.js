// rows.js — the row and elementwise kernels of the forward, after src/kernels/kernels.c and
// src/model/forward.c: RMSNorm (with weight, without, per head: rows of any width sharing one
// weight), RoPE (NEOX rotate-half over the first n_pairs pairs, angles from a host table),
// softmax, the GELU(tanh) gate, the logit soft-cap and the residual arithmetic.
// All buffers are f32 arrays; offsets and strides are in elements (uniform P).
import { flatGroup, paramStruct, MAIN, wgReduce, bindings } from './common.js';

export const ROW_WG = 64;

/** y[r] = x[r] * (mean(x[r]^2) + eps)^-1/2 (* w), rows of n; in place when y is x (one binding).
 * The sum of squares in f32, as ox_rmsnorm (the reference sums in double). */
export const RMSNORM_PARAMS = ['n', 'rows', 'xOff', 'xStride', 'yOff', 'yStride', 'wOff', 'hasW', 'eps'];
export function rmsnormWgsl(inPlace) {
  return /* wgsl */ `
${paramStruct(RMSNORM_PARAMS)}
${bindings([['X', 'read_write', 'f32'], ['Wt', 'read', 'f32'], !inPlace && ['Y', 'read_write', 'f32']])}
${wgReduce(ROW_WG)}
@compute @workgroup_size(${ROW_WG})
${MAIN} {
  let r = ${flatGroup};
  let x0 = p.xOff + r * p.xStride;
  var ss = 0.0;
  if (r < p.rows) { for (var i = li; i < p.n; i += ${ROW_WG}u) { ss += X[x0 + i] * X[x0 + i]; } }
  let total = reduce(ss, li, false);
  if (r >= p.rows) { return; }
  let scale = 1.0 / sqrt(total / f32(p.n) + p.eps);
  let y0 = p.yOff + r * p.yStride;
  for (var i = li; i < p.n; i += ${ROW_WG}u) {
    var v = X[x0 + i] * scale;
    if (p.hasW != 0u) { v = v * Wt[p.wOff + i]; }
    ${inPlace ? 'X' : 'Y'}[y0 + i] = v;
  }
}
`;
}

/** RoPE over heads: head h of token t at xOff + t * tokStride + h * headStride, hd lanes; pair
 * i < nPairs turns by the angle whose (cos, sin) is cs[csOff + t * 2 * nPairs + 2i, +1]
 * (ropeTable: computed on the host in double, as ox_rope_ref; f32 on the GPU would lose the
 * angle at large positions). One invocation per (token, head, pair). */
export const ROPE_PARAMS = ['hd', 'nPairs', 'nHeads', 'nTok', 'xOff', 'tokStride', 'headStride', 'csOff'];
export const ropeWgsl = () => /* wgsl */ `
${paramStruct(ROPE_PARAMS)}
${bindings([
  ['X', 'read_write', 'f32'],
  ['CS', 'read', 'f32'],
])}
@compute @workgroup_size(${ROW_WG})
${MAIN} {
  let g = (${flatGroup}) * ${ROW_WG}u + li;
  if (g >= p.nTok * p.nHeads * p.nPairs) { return; }
  let i = g % p.nPairs;
  let h = (g / p.nPairs) % p.nHeads;
  let t = g / (p.nPairs * p.nHeads);
  let o = p.xOff + t * p.tokStride + h * p.headStride + i;
  let c = CS[p.csOff + t * 2u * p.nPairs + 2u * i];
  let s = CS[p.csOff + t * 2u * p.nPairs + 2u * i + 1u];
  let x0 = X[o];
  let x1 = X[o + p.hd / 2u];
  X[o] = x0 * c - x1 * s;
  X[o + p.hd / 2u] = x0 * s + x1 * c;
}
`;

/** (cos, sin) per token and pair for ropeWgsl: angle pos * base^(-2i/hd) / factor, in double,
 * rounded to f32 (ox_rope_ref). nPairs as forward.c's rope_pairs (clamped to [0, hd/2]).
 * @param {ArrayLike<number>} positions one per token */
export function ropeTable(positions, hd, nPairs, base, factor) {
  const n = Math.max(0, Math.min(nPairs, hd >> 1));
  const cs = new Float32Array(positions.length * 2 * n);
  for (let t = 0; t < positions.length; t++)
    for (let i = 0; i < n; i++) {
      const th = (positions[t] * Math.pow(Math.fround(base), (-2 * i) / hd)) / Math.fround(factor);
      cs[2 * (t * n + i)] = Math.cos(th);
      cs[2 * (t * n + i) + 1] = Math.sin(th);
    }
  return cs;
}

/** Softmax in place over rows of n (ox_softmax: max, exp(x - max), sum, divide). */
export const SOFTMAX_PARAMS = ['n', 'rows', 'xOff', 'xStride'];
export const softmaxWgsl = () => /* wgsl */ `
${paramStruct(SOFTMAX_PARAMS)}
${bindings([['X', 'read_write', 'f32']])}
${wgReduce(ROW_WG)}
@compute @workgroup_size(${ROW_WG})
${MAIN} {
  let r = ${flatGroup};
  let x0 = p.xOff + r * p.xStride;
  let live = r < p.rows;
  var m = -3.4e38;
  if (live) { for (var i = li; i < p.n; i += ${ROW_WG}u) { m = max(m, X[x0 + i]); } }
  let mx = reduce(m, li, true);
  var sum = 0.0;
  if (live) {
    for (var i = li; i < p.n; i += ${ROW_WG}u) { let e = exp(X[x0 + i] - mx); X[x0 + i] = e; sum += e; }
  }
  let total = reduce(sum, li, false);
  if (!live) { return; }
  let inv = 1.0 / total;
  for (var i = li; i < p.n; i += ${ROW_WG}u) { X[x0 + i] = X[x0 + i] * inv; }
}
`;

/** Elementwise ops over n elements, one invocation each (A read-write, B read):
 *   geglu   A[a] = gelu_tanh(A[a]) * B[b]     (ox_geglu's x / (1 + exp(-2z)) form)
 *   geglu2  A[a] = gelu_tanh(B[b]) * B[b + cOff]  (a fused [gate | up] row into its own rows)
 *   add     A[a] = A[a] + B[b]                (the residual)
 *   axpby   A[a] = (A[a] + B[b] * s0) * s1    (PLE: (ctx + row * sqrt(P)) / sqrt(2))
 *   scale   A[a] = A[a] * s0                  (layer scale, PLE's 1/sqrt(H))
 *   softcap A[a] = s0 * tanh(A[a] / s0)       (final logits)
 *   clamp   A[a] = min(max(A[a], s0), s1)     (a vision tower's clipped linears)
 * a = aOff + (e / cols) * aStride + e % cols, b likewise: rows of cols inside wider rows (a
 * token's layer slice of the PLE rows). */
export const ELT_OPS = {
  geglu: /* wgsl */ `let x = A[a]; A[a] = gelu(x) * B[b];`,
  geglu2: /* wgsl */ `A[a] = gelu(B[b]) * B[b + p.cOff];`,
  add: 'A[a] = A[a] + B[b];',
  axpby: 'A[a] = (A[a] + B[b] * p.s0) * p.s1;',
  scale: 'A[a] = A[a] * p.s0;',
  clamp: 'A[a] = min(max(A[a], p.s0), p.s1);',
  // tanh only where it cannot overflow inside the implementation (tanh(10) is 1 in f32)
  softcap: 'let v = A[a] / p.s0; A[a] = p.s0 * select(sign(v), tanh(v), abs(v) < 10.0);',
};
/** Whether op reads a second operand B (the others bind A and the uniform only). */
export const eltUsesB = (op) => ELT_OPS[op].includes('B[b]');
export const ELT_PARAMS = ['n', 'cols', 'aOff', 'aStride', 'bOff', 'bStride', 's0', 's1', 'cOff'];
export const eltWgsl = (op) => /* wgsl */ `
${paramStruct(ELT_PARAMS)}
fn gelu(x : f32) -> f32 { return x / (1.0 + exp(-2.0 * (0.7978845608028654 * x * (1.0 + 0.044715 * x * x)))); }
${bindings([['A', 'read_write', 'f32'], eltUsesB(op) && ['B', 'read', 'f32']])}
@compute @workgroup_size(${ROW_WG})
${MAIN} {
  let e = (${flatGroup}) * ${ROW_WG}u + li;
  if (e >= p.n) { return; }
  let a = p.aOff + (e / p.cols) * p.aStride + e % p.cols;
  let b = p.bOff + (e / p.cols) * p.bStride + e % p.cols;
  ${ELT_OPS[op]}
}
`;

/** The vision tower's pooling (src/vision/vision_forward.c op_pool): the rows of width n of an
 * ph x pw grid of patches averaged over k x k blocks, y[t] = sum of s0 * x over block t's
 * patches (row by row, as the C engine adds them), then (y - B) * S when standardize. One invocation
 * per (pooled row, lane). */
export const POOL_PARAMS = ['n', 'ph', 'pw', 'k', 'xOff', 'yOff', 's0', 'standardize', 'bOff', 'sOff'];
export const poolWgsl = () => /* wgsl */ `
${paramStruct(POOL_PARAMS)}
${bindings([
  ['X', 'read', 'f32'],
  ['Y', 'read_write', 'f32'],
  ['B', 'read', 'f32'],
  ['S', 'read', 'f32'],
])}
@compute @workgroup_size(${ROW_WG})
${MAIN} {
  let e = (${flatGroup}) * ${ROW_WG}u + li;
  let ow = p.pw / p.k;
  if (e >= (p.ph / p.k) * ow * p.n) { return; }
  let i = e % p.n;
  let t = e / p.n;
  let py0 = (t / ow) * p.k;
  let px0 = (t % ow) * p.k;
  var acc = 0.0;
  for (var dy = 0u; dy < p.k; dy++) {
    for (var dx = 0u; dx < p.k; dx++) { acc += p.s0 * X[p.xOff + ((py0 + dy) * p.pw + px0 + dx) * p.n + i]; }
  }
  if (p.standardize != 0u) { acc = (acc - B[p.bOff + i]) * S[p.sOff + i]; }
  Y[p.yOff + t * p.n + i] = acc;
}
`;
