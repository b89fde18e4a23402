// probe.js — the GPU's read bandwidth, for the benchmark's "share of the GPU's bandwidth" (as
// src/wasm/probe.c is the CPU's): a kernel that reads a buffer once per pass (every invocation
// a strided run of vec4<u32>, folded with xor and written out so nothing is optimized away),
// several passes in one command buffer, timed from submit to onSubmittedWorkDone. A wall-clock
// figure: it includes the submit's overhead, so it is a floor of what the GPU can read.
import { OxError } from '../shared/errors.js';

const WG = 256;
const GROUPS = 1024;

const WGSL = `
@group(0) @binding(0) var<storage, read> src: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read_write> sink: array<u32>;
@compute @workgroup_size(${WG})
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let n = arrayLength(&src);
  let stride = ${WG * GROUPS}u;
  var acc = vec4<u32>(0u);
  for (var i = gid.x; i < n; i += stride) { acc ^= src[i]; }
  sink[gid.x] = acc.x ^ acc.y ^ acc.z ^ acc.w;
}`;

/**
 * Bytes per second the device reads from a storage buffer.
 * @param {GPUDevice} device
 * @param {{mbytes?: number, reps?: number, maxBinding?: number}} [opts] the buffer (capped at
 *   one binding), passes per timing, and the binding limit (device.limits' by default)
 * @returns {Promise<{bytesPerSec: number, bytes: number, reps: number}>}
 */
export async function gpuReadBandwidth(device, { mbytes = 256, reps = 20, maxBinding } = {}) {
  const cap = Math.min(maxBinding ?? device.limits.maxStorageBufferBindingSize, device.limits.maxBufferSize);
  const bytes = Math.floor(Math.min(mbytes * 2 ** 20, cap) / 16) * 16;
  if (bytes < 1 << 20) throw new OxError('RANGE', `js/gpu/probe.js: a ${bytes}-byte buffer is too small to time`);
  const src = device.createBuffer({ size: bytes, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
  const sink = device.createBuffer({ size: WG * GROUPS * 4, usage: GPUBufferUsage.STORAGE });
  try {
    const pipe = device.createComputePipeline({
      layout: 'auto',
      compute: { module: device.createShaderModule({ code: WGSL }), entryPoint: 'main' },
    });
    const bind = device.createBindGroup({
      layout: pipe.getBindGroupLayout(0),
      entries: [
        { binding: 0, resource: { buffer: src } },
        { binding: 1, resource: { buffer: sink } },
      ],
    });
    const pass = async (n) => {
      const enc = device.createCommandEncoder();
      const p = enc.beginComputePass();
      p.setPipeline(pipe);
      p.setBindGroup(0, bind);
      for (let i = 0; i < n; i++) p.dispatchWorkgroups(GROUPS);
      p.end();
      const t = performance.now();
      device.queue.submit([enc.finish()]);
      await device.queue.onSubmittedWorkDone();
      return (performance.now() - t) / 1000;
    };
    await pass(1); // the pipeline, the pages of the buffer
    let best = Infinity;
    for (let k = 0; k < 3; k++) best = Math.min(best, await pass(reps));
    return { bytesPerSec: (bytes * reps) / best, bytes, reps };
  } finally {
    src.destroy();
    sink.destroy();
  }
}
