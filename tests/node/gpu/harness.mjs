// harness.mjs — what tests/node/gpu-kernels.test.mjs needs around the kernels: the software
// adapters (lavapipe 25 from tools/setup-lavapipe.sh, SwiftShader from Debian's chromium), the
// C engine's references (ref_helper.c, built here with cc), buffers in and out, seeded data.
import { existsSync, mkdtempSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../../..');
export const LAVAPIPE_ICD = join(ROOT, 'build/lavapipe25/icd.json');
export const SWIFTSHADER_ICD = '/usr/lib/chromium/vk_swiftshader_icd.json';

/** The software adapters present: [{name, select}] (select: the `adapter=` option of the
 * webgpu package). VK_ICD_FILENAMES must name the drivers before the first create(), so it is
 * set here (unless the environment already names drivers). */
export function softwareAdapters() {
  const found = [
    { name: 'lavapipe 25', icd: LAVAPIPE_ICD, select: 'llvmpipe', disable: [] },
    // SwiftShader runs with every optional feature off: the paths without them
    {
      name: 'SwiftShader (no optional features)',
      icd: SWIFTSHADER_ICD,
      select: 'SwiftShader',
      disable: ['dot4', 'subgroups', 'shader-f16'],
    },
  ].filter((a) => existsSync(a.icd));
  if (!process.env.VK_ICD_FILENAMES && found.length) process.env.VK_ICD_FILENAMES = found.map((a) => a.icd).join(':');
  return found;
}

/** The C reference helper: run(cmd, args, input bytes) -> output bytes. */
export function buildRefHelper() {
  const out = join(mkdtempSync(join(tmpdir(), 'oxgpu-')), 'ref_helper');
  const src = ['types', 'quant', 'iq', 'iq_grids', 'kernels', 'kernels_x86', 'pool', 'prof', 'attn'].map((f) =>
    join(ROOT, `src/kernels/${f}.c`),
  );
  execFileSync('cc', [
    '-O1',
    '-I',
    join(ROOT, 'src'),
    '-o',
    out,
    join(ROOT, 'tests/node/gpu/ref_helper.c'),
    ...src,
    join(ROOT, 'src/base/err.c'),
    '-lm',
    '-lpthread',
  ]);
  return (cmd, args, input) => {
    const b = execFileSync(out, [cmd, ...args.map(String)], {
      input: Buffer.from(input.buffer, input.byteOffset, input.byteLength),
      maxBuffer: 1 << 28,
    });
    return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
  };
}

export const f32 = (u8) => new Float32Array(u8.buffer.slice(u8.byteOffset, u8.byteOffset + u8.byteLength));

/** A STORAGE buffer holding `data` (bytes rounded up to 4). */
export function bufferOf(device, data, extra = 0) {
  const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  const size = Math.max(16, ((bytes.byteLength + 3) & ~3) + extra);
  const buffer = device.createBuffer({
    size,
    usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST,
    mappedAtCreation: true,
  });
  new Uint8Array(buffer.getMappedRange()).set(bytes);
  buffer.unmap();
  return buffer;
}

export const zeros = (device, bytes) => bufferOf(device, new Uint8Array(bytes));

/** Encode with fn(pass), submit, then read `bytes` of `buffer` back. Throws on a validation or
 * shader error. */
export async function runAndRead(k, fn, buffer, bytes = buffer.size) {
  const { device } = k;
  device.pushErrorScope('validation');
  device.pushErrorScope('internal');
  const enc = device.createCommandEncoder();
  const pass = enc.beginComputePass();
  fn(pass);
  pass.end();
  const rd = device.createBuffer({ size: bytes, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  enc.copyBufferToBuffer(buffer, 0, rd, 0, bytes);
  device.queue.submit([enc.finish()]);
  k.resetParams();
  const e1 = await device.popErrorScope(),
    e2 = await device.popErrorScope();
  if (e1 || e2) throw new Error(`GPU error: ${(e1 || e2).message}`);
  await rd.mapAsync(GPUMapMode.READ);
  const out = new Uint8Array(rd.getMappedRange().slice(0));
  rd.unmap();
  rd.destroy();
  return out;
}

/** Seeded uniform [0, 1). */
export function rng(seed) {
  let s = seed >>> 0;
  return () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 4294967296;
}

/** f16 bits of a value that is exactly an f16 (activation scales read back from the GPU). */
export function f16Bits(v) {
  if (v === 0) return Object.is(v, -0) ? 0x8000 : 0;
  const s = v < 0 ? 0x8000 : 0;
  v = Math.abs(v);
  let e = Math.floor(Math.log2(v));
  if (e < -14) return s | Math.round(v / 2 ** -24);
  let m = Math.round((v / 2 ** e - 1) * 1024);
  if (m === 1024) {
    m = 0;
    e++;
  }
  return s | ((e + 15) << 10) | m;
}

export function f16Value(h) {
  const s = h & 0x8000 ? -1 : 1,
    e = (h >> 10) & 31,
    m = h & 1023;
  return e === 0 ? s * m * 2 ** -24 : s * (1 + m / 1024) * 2 ** (e - 15);
}
