// common.js — WGSL pieces shared by the kernels: byte / half-word / unaligned word loads from a
// u32 storage array (GGML blocks are 18, 34, 210... bytes: a block or row need not start on a
// word), the signed 4 x int8 dot with and without dot4I8Packed, and f32 -> f16 rounding done
// with integer ops (pack2x16float's rounding is left to the implementation).

/** Loads from `arr` (a u32 storage array): byte, u16 at an even byte offset, u32 at any byte
 * offset, f16 at an even byte offset. `p` prefixes the function names. */
export const loads = (arr, p) => /* wgsl */ `
fn ${p}b(o : u32) -> u32 { return (${arr}[o >> 2u] >> ((o & 3u) * 8u)) & 0xffu; }
fn ${p}h(o : u32) -> u32 { return (${arr}[o >> 2u] >> ((o & 2u) * 8u)) & 0xffffu; }
fn ${p}w(o : u32) -> u32 {
  let i = o >> 2u;
  let s = (o & 3u) * 8u;
  if (s == 0u) { return ${arr}[i]; }
  return (${arr}[i] >> s) | (${arr}[i + 1u] << (32u - s));
}
fn ${p}f16(o : u32) -> f32 { return unpack2x16float(${p}h(o)).x; }
`;

/** dot4(a, b): the dot of two words of 4 signed bytes. */
export const dot4 = (hasDot4) =>
  hasDot4
    ? /* wgsl */ `fn dot4(a : u32, b : u32) -> i32 { return dot4I8Packed(a, b); }\n`
    : /* wgsl */ `
fn i8x4(a : u32) -> vec4<i32> {
  let s = bitcast<i32>(a);
  return vec4<i32>(extractBits(s, 0u, 8u), extractBits(s, 8u, 8u), extractBits(s, 16u, 8u), extractBits(s, 24u, 8u));
}
fn dot4(a : u32, b : u32) -> i32 { return dot(i8x4(a), i8x4(b)); }
`;

/** The preamble a module using dot4 needs. */
export const dot4Requires = (hasDot4) => (hasDot4 ? 'requires packed_4x8_integer_dot_product;\n' : '');

/** f32 -> f16 bits, round to nearest even, as ox_f32_to_f16 (src/kernels/types.c). */
export const f32ToF16 = /* wgsl */ `
fn f32_to_f16(f : f32) -> u32 {
  let u = bitcast<u32>(f);
  let sign = (u >> 16u) & 0x8000u;
  let a = u & 0x7fffffffu;
  if (a > 0x7f800000u) { return sign | 0x7e00u | ((a >> 13u) & 0x3ffu); }
  if (a >= 0x477ff000u) { return sign | 0x7c00u; }
  if (a < 0x38800000u) {
    if (a < 0x33000000u) { return sign; }
    let e = a >> 23u;
    let m = (a & 0x7fffffu) | 0x800000u;
    let shift = 126u - e;
    var q = m >> shift;
    let rem = m & ((1u << shift) - 1u);
    let half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (q & 1u) == 1u)) { q = q + 1u; }
    return sign | q;
  }
  let r = a + 0xfffu + ((a >> 13u) & 1u);
  return sign | ((r - 0x38000000u) >> 13u);
}
`;

/** q8_0 quant of v = x * (1/d): round half away from zero, clamped to +-127 (NaN -> 0), as
 * round_q8 (src/kernels/quant.c); below 0.5 it is 0 (trunc(v + 0.5) could round up there). */
export const roundQ8 = /* wgsl */ `
fn round_q8(v : f32) -> i32 {
  if (v >= 127.0) { return 127; }
  if (v <= -127.0) { return -127; }
  if (abs(v) >= 0.5) { return i32(trunc(v + select(-0.5, 0.5, v > 0.0))); }
  return 0;
}
`;

/** Uniform fields that are f32 (the others are u32). */
export const FLOAT_PARAMS = new Set(['eps', 's0', 's1']);

/** The uniform struct P of a kernel with these fields. */
export const paramStruct = (names) =>
  `struct P { ${names.map((k) => `${k} : ${FLOAT_PARAMS.has(k) ? 'f32' : 'u32'}`).join(', ')} }`;

/** Storage bindings 0.. in order ([name, 'read' | 'read_write', element type]; null entries
 * are skipped), then the uniform p. */
export const bindings = (list) => {
  const l = list.filter(Boolean);
  return [
    ...l.map(([name, access, type], i) => `@group(0) @binding(${i}) var<storage, ${access}> ${name} : array<${type}>;`),
    `@group(0) @binding(${l.length}) var<uniform> p : P;`,
  ].join('\n');
};

/** The entry point's signature: workgroup id, grid size, invocation index. */
export const MAIN = `fn main(@builtin(workgroup_id) wg : vec3<u32>, @builtin(num_workgroups) nwg : vec3<u32>,
        @builtin(local_invocation_index) li : u32)`;

/** reduce(v, li, isMax): the workgroup's sum (or max) of v, every invocation calling it (from
 * uniform control flow). It waits for earlier readers of the scratch first, so calls chain. */
export const wgReduce = (wg) => /* wgsl */ `
var<workgroup> red : array<f32, ${wg}>;
fn reduce(v : f32, li : u32, isMax : bool) -> f32 {
  workgroupBarrier();
  red[li] = v;
  workgroupBarrier();
  for (var s = ${wg / 2}u; s > 0u; s >>= 1u) {
    if (li < s) { red[li] = select(red[li] + red[li + s], max(red[li], red[li + s]), isMax); }
    workgroupBarrier();
  }
  return red[0];
}
`;

/** Workgroup index over a 2-D grid (x, then z): dispatches larger than 65535 groups. */
export const flatGroup = 'wg.x + wg.z * nwg.x';

/** Split n workgroups into a dispatch grid within maxComputeWorkgroupsPerDimension. */
export function grid(n, max = 65535) {
  if (n <= max) return [n, 1, 1];
  return [max, 1, Math.ceil(n / max)];
}
