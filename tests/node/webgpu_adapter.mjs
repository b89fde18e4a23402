// webgpu_adapter.mjs — the GPU tests' adapter and their skip: a software adapter (lavapipe 25
// from tools/setup-lavapipe.sh, else Debian chromium's SwiftShader) unless VK_ICD_FILENAMES
// names one; gpuTests(dir) loads the tiny model there once and returns a `test` that runs where
// that worked and skips, saying why, where no adapter can be created (no `webgpu` package, no
// Vulkan driver). Any other failure of that load throws. bothBackends: a model on each backend.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { loadModel } from '../../js/main/index.js';
import { ROOT } from '../../tools/serve.mjs';
import { requireCli, requireDist, synth } from '../oracle/fixtures.mjs';

const LAVAPIPE = path.join(ROOT, 'build/lavapipe25/icd.json');
const SWIFTSHADER = '/usr/lib/chromium/vk_swiftshader_icd.json';
if (!process.env.VK_ICD_FILENAMES) process.env.VK_ICD_FILENAMES = [LAVAPIPE, SWIFTSHADER].filter(existsSync).join(':');

/** loadModel options for the GPU backend on a software adapter. */
export const GPU = { backend: 'webgpu', allowFallbackAdapter: true };

/** @param {string} dir where the probe's model is generated */
export async function gpuTests(dir) {
  let why = null;
  try {
    requireCli();
    requireDist();
    const m = await loadModel(synth(dir, { preset: 'tiny', type: 'f32' }), { threads: 1, maxContext: 64, ...GPU });
    await m.unload();
  } catch (e) {
    why = e.code === 'UNSUPPORTED' ? e.message : null;
    if (!why) throw e;
  }
  return (name, fn) => test(name, { skip: why ? `no WebGPU adapter: ${why}` : false, timeout: 600000 }, fn);
}

/** fn(model) on the file loaded on the CPU, then on the GPU (opts: loadModel's, over one thread):
 * {cpu, gpu: fn's results, model: the GPU model (unloaded by then: its info)}. */
export async function bothBackends(file, fn, opts = {}) {
  const cpu = await loadModel(file, { threads: 1, ...opts, backend: 'cpu' });
  const gpu = await loadModel(file, { threads: 1, ...opts, ...GPU });
  try {
    assert.equal(cpu.backend, 'cpu');
    assert.equal(gpu.backend, 'webgpu', gpu.info.backendNote);
    return { cpu: await fn(cpu), gpu: await fn(gpu), model: gpu };
  } finally {
    await cpu.unload();
    await gpu.unload();
  }
}
