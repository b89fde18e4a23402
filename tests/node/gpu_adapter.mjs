// What the GPU tests share: a software Vulkan driver for Dawn (lavapipe 25 from
// tools/setup-lavapipe.sh, else Debian chromium's SwiftShader), the load options that take it,
// and a `test` that is skipped, saying why, when no adapter can be created here (no `webgpu`
// package, no Vulkan driver). Any other failure of the probe load is a failure of the file.
import { test } from 'node:test';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { loadModel } from '../../js/main/index.js';
import { ROOT } from '../../tools/serve.mjs';
import { requireCli, requireDist, synth } from '../oracle/fixtures.mjs';

const LAVAPIPE = path.join(ROOT, 'build/lavapipe25/icd.json');
const SWIFTSHADER = '/usr/lib/chromium/vk_swiftshader_icd.json';
if (!process.env.VK_ICD_FILENAMES) process.env.VK_ICD_FILENAMES = [LAVAPIPE, SWIFTSHADER].filter(existsSync).join(':');

export const GPU = { backend: 'webgpu', allowFallbackAdapter: true };

/** node:test's `test`, skipped with the reason when loading the tiny model on the GPU (in dir) is UNSUPPORTED. */
export async function gpuTestIn(dir) {
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
