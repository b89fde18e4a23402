// list.js — reading the GPU backend's command list (src/gpu/record.h; the format comes from
// js/abi.js gpuOps / gpuList). Both the engine thread (uploads, read-backs) and the GPU thread
// (every op) walk it.
import { gpuOps, gpuList } from '../shared/abi.js';
import { OxError } from '../shared/errors.js';

const BY_CODE = new Map(Object.entries(gpuOps).map(([name, o]) => [o.code, { name, args: o.args }]));
// operands that are floats (their bit patterns in the list)
const FLOATS = new Set(['eps', 'base', 'factor', 'a', 'b', 'cap', 'scale', 'lo', 'hi']);
// operands that are signed (weight ids, -1: none)
const SIGNED = new Set(['w', 'layer', 'bias', 'std']);

/** The header of a list: {session, maxCtx, kvLen, actBytes, nOps, regions (start offsets)}. */
export function listHeader(list) {
  if (list.length < gpuList.header || list[0] !== gpuList.magic)
    throw new OxError('FORMAT', 'js/gpu/list.js: not a GPU command list of this build (magic)');
  const nReg = list[6];
  return {
    session: list[1],
    maxCtx: list[2],
    kvLen: list[3],
    actBytes: list[4] >>> 0,
    nOps: list[5],
    regions: Array.from(list.subarray(gpuList.header, gpuList.header + nReg), (x) => x >>> 0),
  };
}

/** Call fn(name, operands) for each op, operands by name (offsets, counts, pointers unsigned). */
export function walkList(list, fn) {
  const h = listHeader(list);
  const f32 = new Float32Array(list.buffer, list.byteOffset, list.length);
  let i = gpuList.header + h.regions.length;
  for (let k = 0; k < h.nOps; k++) {
    const op = BY_CODE.get(list[i]);
    if (!op || i + op.args.length >= list.length + 1)
      throw new OxError('FORMAT', `js/gpu/list.js: op ${list[i]} at word ${i} is not in the list format`);
    const a = {};
    op.args.forEach(
      (n, j) => (a[n] = FLOATS.has(n) ? f32[i + 1 + j] : SIGNED.has(n) ? list[i + 1 + j] : list[i + 1 + j] >>> 0),
    );
    fn(op.name, a);
    i += 1 + op.args.length;
  }
  return h;
}
