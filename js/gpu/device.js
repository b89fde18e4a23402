// device.js — a WebGPU adapter and device for the kernels (js/gpu/kernels.js), with the optional
// features used only where the adapter has them and the limits the kernels need asked for
// explicitly (a device gets the spec's defaults otherwise: 128 MiB bindings, 256 MiB buffers).
//
//   const gpu = navigator.gpu ?? await nodeGpu();         // null: no WebGPU here
//   const { device, caps } = await openDevice(gpu);        // throws OxError UNSUPPORTED if none
//   const k = createKernels(device, caps);
//
// Software adapters (lavapipe, SwiftShader) report isFallbackAdapter: an engine should not pick
// one over its CPU path unless asked, so openDevice refuses them unless allowFallback is set.
import { OxError } from '../shared/errors.js';

/**
 * @typedef {object} GpuCaps What the kernels may use on this device (createKernels reads it).
 * @property {boolean} f16       'shader-f16' enabled (no kernel needs it; kept for the engine)
 * @property {boolean} subgroups 'subgroups' enabled: matmul reductions use subgroupAdd
 * @property {number} subgroupMinSize  the adapter's smallest subgroup (0 when unknown)
 * @property {boolean} dot4      WGSL language feature packed_4x8_integer_dot_product (dot4I8Packed)
 * @property {number} maxBinding maxStorageBufferBindingSize of the device (bytes)
 * @property {number} maxBuffer  maxBufferSize of the device (bytes)
 * @property {number} offsetAlign minStorageBufferOffsetAlignment (bytes)
 * @property {boolean} fallback  the adapter is a software one
 * @property {string} description the adapter's vendor / architecture / description, for model.info
 */

/** The `webgpu` npm package's GPU object (Dawn for Node), or null when the optional dependency
 * is not installed or cannot load. `options` go to its create() (e.g. ['adapter=llvmpipe']).
 * The caller drops the returned object when done, or Node stays alive. */
export async function nodeGpu(options = []) {
  let mod;
  try {
    // Node only: bundlers leave the specifier alone (a page has navigator.gpu)
    mod = await import(/* webpackIgnore: true */ /* @vite-ignore */ 'webgpu');
  } catch {
    return null;
  }
  Object.assign(globalThis, mod.globals); // GPUBufferUsage, GPUMapMode, ... as in a browser
  return mod.create(options);
}

const WANTED_LIMITS = [
  'maxBufferSize',
  'maxStorageBufferBindingSize',
  'maxComputeWorkgroupStorageSize',
  'maxComputeInvocationsPerWorkgroup',
  'maxComputeWorkgroupSizeX',
  'maxComputeWorkgroupsPerDimension',
  'maxStorageBuffersPerShaderStage',
];

/**
 * Request an adapter and a device with every optional feature the kernels can use that the
 * adapter has, and its full limits for the ones above.
 * @param {GPU} gpu navigator.gpu or nodeGpu()'s object
 * @param {{allowFallback?: boolean, powerPreference?: GPUPowerPreference,
 *          disable?: Array<'shader-f16'|'subgroups'|'dot4'>}} [opts] disable: features not to use
 *   even where present (tests cover the paths without them this way)
 * @returns {Promise<{adapter: GPUAdapter, device: GPUDevice, caps: GpuCaps}>}
 */
export async function openDevice(gpu, opts = {}) {
  if (!gpu) throw new OxError('UNSUPPORTED', 'js/gpu/device.js: WebGPU is not available here');
  const adapter = await gpu.requestAdapter({ powerPreference: opts.powerPreference ?? 'high-performance' });
  if (!adapter) throw new OxError('UNSUPPORTED', 'js/gpu/device.js: no WebGPU adapter');
  const info = adapter.info ?? {};
  const fallback = !!(adapter.isFallbackAdapter ?? info.isFallbackAdapter);
  if (fallback && !opts.allowFallback)
    throw new OxError(
      'UNSUPPORTED',
      'js/gpu/device.js: only a software (fallback) adapter is present; ask for it with allowFallback',
    );
  const off = new Set(opts.disable ?? []);
  const features = ['shader-f16', 'subgroups'].filter((f) => adapter.features.has(f) && !off.has(f));
  const requiredLimits = {};
  for (const k of WANTED_LIMITS) if (adapter.limits[k] !== undefined) requiredLimits[k] = adapter.limits[k];
  const device = await adapter.requestDevice({ requiredFeatures: features, requiredLimits });
  const lang = gpu.wgslLanguageFeatures;
  /** @type {GpuCaps} */
  const caps = {
    f16: device.features.has('shader-f16'),
    subgroups: device.features.has('subgroups'),
    subgroupMinSize: info.subgroupMinSize ?? 0,
    dot4: !off.has('dot4') && !!lang && lang.has('packed_4x8_integer_dot_product'),
    maxBinding: device.limits.maxStorageBufferBindingSize,
    maxBuffer: device.limits.maxBufferSize,
    offsetAlign: device.limits.minStorageBufferOffsetAlignment,
    fallback,
    description: [info.vendor, info.architecture, info.description].filter(Boolean).join(' / '),
  };
  return { adapter, device, caps };
}
