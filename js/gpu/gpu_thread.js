// gpu_thread.js — the GPU thread: owns the WebGPU device for one engine (js/gpu/bridge.js is the
// engine thread's side). A Node worker_threads Worker (WebGPU from the optional `webgpu`
// package) or a module Web Worker (navigator.gpu). Requests {id, op, ...} answered {id, ok,
// value | error}; a step ('run') answers through shared memory instead, since the engine thread
// waits for it in Atomics.wait:
//   ctrl[0] state (1 = answered), ctrl[1] status (0 or an err.h code), ctrl[2] bytes (of the
//   read-back in resp, or of a UTF-8 message in msg), ctrl[3] 1 when the device is lost.
import { codes } from '../shared/abi.js';
import { isNode } from '../shared/env.js';
import { OxError } from '../shared/errors.js';
import { openDevice, nodeGpu } from './device.js';
import { StepRunner } from './step.js';
import { WeightUpload } from './upload.js';

let runner = null,
  device = null,
  gpu = null;
let ctrl = null,
  resp = null,
  msg = null,
  held = null;

// the bytes held on the GPU, where the engine thread reads them synchronously (stats())
const report = () => held && runner && held.set([runner.bytes.weights, runner.bytes.kv, runner.bytes.scratch]);

// the matrices being put during a load (id -> WeightUpload), until their last rows came
const putting = new Map();

// wake the engine thread waiting in Atomics.wait (a step or a put): status 0 or an err.h code
function answer(status, n, lost = 0) {
  Atomics.store(ctrl, 1, status);
  Atomics.store(ctrl, 2, n);
  Atomics.store(ctrl, 3, lost);
  Atomics.store(ctrl, 0, 1);
  Atomics.notify(ctrl, 0);
}

function failure(e) {
  const text = new TextEncoder().encode(String(e?.message ?? e)).subarray(0, msg.length);
  msg.set(text);
  return text.length;
}

const ops = {
  async init({ allowFallback, powerPreference }) {
    gpu = isNode ? await nodeGpu() : (navigator.gpu ?? null);
    if (!gpu)
      throw new OxError(
        'UNSUPPORTED',
        isNode
          ? 'webgpu: the optional package `webgpu` is not installed'
          : 'webgpu: navigator.gpu is not available here',
      );
    const d = await openDevice(gpu, { allowFallback, powerPreference });
    device = d.device;
    runner = new StepRunner(device, d.caps);
    const { f16, subgroups, dot4, maxBinding, maxBuffer, fallback, description } = d.caps;
    return { description, fallback, features: { f16, subgroups, dot4 }, maxBinding, maxBuffer };
  },
  upload({ entry, bytes }) {
    if (entry.kind === 0 && !StepRunner.supports(entry.type))
      throw new OxError('UNSUPPORTED', `webgpu: weight type ${entry.type} has no GPU kernel`);
    runner.upload(entry, bytes);
    report();
    return true;
  },
  // rows of a matrix while the C load reads them (js/gpu/bridge.js put); answered through ctrl
  put({ entry, row0, rows, bytes }) {
    try {
      if (!StepRunner.supports(entry.type))
        throw new OxError('UNSUPPORTED', `webgpu: weight type ${entry.type} has no GPU kernel`);
      let u = putting.get(entry.id);
      if (!u) putting.set(entry.id, (u = new WeightUpload(device, entry, runner.caps.maxBinding)));
      u.put(row0, rows, bytes);
      if (u.done) {
        putting.delete(entry.id);
        runner.weights.set(entry.id, u.weight());
        runner.bytes.weights += u.size;
        report();
      }
      answer(0, 0);
    } catch (e) {
      answer(codes[e?.code] ?? codes.IO, failure(e), runner?.lost ? 1 : 0);
    }
    return undefined;
  },
  shared(m) {
    ({ ctrl, resp, msg, held } = m);
    return true;
  },
  async run({ list, uploads, resp: r }) {
    if (r) resp = r;
    let status = 0,
      n = 0,
      lost = 0;
    try {
      const out = await runner.run(list, uploads);
      resp.set(out);
      n = out.length;
    } catch (e) {
      status = codes[e?.code] ?? codes.IO;
      lost = e?.lost || runner?.lost ? 1 : 0;
      const text = new TextEncoder().encode(String(e?.message ?? e)).subarray(0, msg.length);
      msg.set(text);
      n = text.length;
    }
    report();
    Atomics.store(ctrl, 1, status);
    Atomics.store(ctrl, 2, n);
    Atomics.store(ctrl, 3, lost);
    Atomics.store(ctrl, 0, 1);
    Atomics.notify(ctrl, 0);
    return undefined; // answered through ctrl
  },
  forget({ session }) {
    runner?.forget(session);
    report();
    return true;
  },
  // tests: lose the device as a driver reset would
  destroyDevice() {
    device.destroy();
    return true;
  },
  async close() {
    // queued work first: destroying a device with work in flight made Dawn abort
    await device?.queue.onSubmittedWorkDone().catch(() => {});
    device?.destroy();
    gpu = runner = device = null;
    return true;
  },
};

async function receive(m, post) {
  try {
    const value = await ops[m.op](m);
    if (m.op !== 'run' && m.op !== 'put') post({ id: m.id, ok: true, value });
  } catch (e) {
    post({ id: m.id, ok: false, error: { code: e?.code ?? 'IO', message: String(e?.message ?? e) } });
  }
}

if (isNode) {
  import(/* webpackIgnore: true */ 'node:worker_threads').then(({ parentPort }) => {
    parentPort.on('message', (m) => receive(m, (r) => parentPort.postMessage(r)));
  });
} else {
  self.onmessage = (e) => receive(e.data, (r) => self.postMessage(r));
}
