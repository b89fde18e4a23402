// bridge.js — the engine thread's side of the GPU backend (docs/architecture.md "GPU backend").
// The C forward records a step's ops and calls the import ox_js_gpu_run (js/gpu/gpu_lib.js),
// which lands in runStep here: the list and the bytes the CPU wrote for it (embedding and PLE
// rows) go to the GPU thread (js/gpu/gpu_thread.js, which owns the device) in one message, and
// this thread waits on shared memory with Atomics.wait, as host reads do (js/hostfile.js), until
// the step's read-backs (the logits rows) are there; they are copied into wasm memory where the
// READ ops say. So the C step stays synchronous while WebGPU stays asynchronous on its thread.
// Needs SharedArrayBuffer and Atomics.wait: Node, or a crossOriginIsolated page's worker.
import { codes, gpuList } from '../shared/abi.js';
import { isNode } from '../shared/env.js';
import { OxError } from '../shared/errors.js';
import { walkList } from './list.js';

const MSG = 1024;

/** Whether this context can run the GPU backend's synchronous hand-over. */
export const gpuBridgeUsable = () =>
  typeof SharedArrayBuffer === 'function' &&
  typeof Atomics?.wait === 'function' &&
  (isNode || globalThis.crossOriginIsolated === true);

export class GpuBridge {
  /**
   * Start the GPU thread and open a device on it.
   * @param {{allowFallback?: boolean, powerPreference?: string, timeoutMs?: number}} opts
   * @returns {Promise<GpuBridge>} info: {description, fallback, features, maxBinding, maxBuffer}
   */
  static async start(opts = {}) {
    if (!gpuBridgeUsable())
      throw new OxError(
        'UNSUPPORTED',
        'webgpu: the GPU backend needs SharedArrayBuffer (Node, or a crossOriginIsolated page)',
      );
    let w;
    if (isNode) {
      const { Worker } = await import(/* webpackIgnore: true */ 'node:worker_threads');
      const here = import.meta.url;
      w = new Worker(new URL('./gpu_thread.js', here));
    } else w = new Worker(new URL('./gpu_thread.js', import.meta.url), { type: 'module' });
    const b = new GpuBridge(w, opts.timeoutMs ?? 300000);
    try {
      b.info = await b.call('init', { allowFallback: !!opts.allowFallback, powerPreference: opts.powerPreference });
      await b.call('shared', { ctrl: b.ctrl, resp: b.resp, msg: b.msg, held: b.held });
    } catch (e) {
      await b.close();
      throw e;
    }
    return b;
  }

  constructor(worker, timeoutMs) {
    this.worker = worker;
    this.timeoutMs = timeoutMs;
    this.pending = new Map();
    this.ids = 0;
    this.ctrl = new Int32Array(new SharedArrayBuffer(16));
    this.resp = new Uint8Array(new SharedArrayBuffer(1 << 20));
    this.msg = new Uint8Array(new SharedArrayBuffer(MSG));
    this.held = new Float64Array(new SharedArrayBuffer(24)); // bytes on the GPU: weights, KV, scratch
    this.lost = null; // the message of a lost device, once a step saw it
    this.putIds = new Set(); // the weights put during the load (put)
    this.putFailed = null; // the message of a put that failed
    const onMessage = (m) => {
      const p = this.pending.get(m.id);
      if (!p) return;
      this.pending.delete(m.id);
      if (!this.pending.size) worker.unref?.(); // an idle GPU thread does not keep Node alive
      if (m.ok) p.resolve(m.value);
      else p.reject(new OxError(m.error.code in codes ? m.error.code : 'IO', m.error.message));
    };
    const onError = (e) => {
      for (const p of this.pending.values())
        p.reject(new OxError('IO', `webgpu: the GPU thread failed: ${e?.message ?? e}`));
      this.pending.clear();
    };
    if (isNode) {
      worker.on('message', onMessage);
      worker.on('error', onError);
    } else {
      worker.onmessage = (e) => onMessage(e.data);
      worker.onerror = onError;
    }
  }

  post(m, transfer = []) {
    this.worker.postMessage(m, transfer);
  }

  call(op, args = {}, transfer = []) {
    const id = ++this.ids;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.worker.ref?.();
      this.post({ ...args, id, op }, transfer);
    });
  }

  /** Upload the weights of the engine's table (Int32Array, js/abi.js gpuList.entryWords per
   * entry) from wasm memory (a Uint8Array over it, read at call time), but those put already
   * during the load. */
  async upload(table, heapU8) {
    const W = gpuList.entryWords;
    for (let i = 0; i < table.length; i += W) {
      const [id, kind, type, rows, cols, ptr, rowBytes, unitRows] = table.subarray(i, i + W);
      if (this.putIds.has(id)) continue;
      const size = kind === 1 ? cols * 4 : rows * rowBytes;
      const bytes = heapU8().slice(ptr >>> 0, (ptr >>> 0) + size);
      await this.call('upload', { entry: { id, kind, type, rows, cols, unitRows }, bytes }, [bytes.buffer]);
    }
  }

  /** ox_js_gpu_run: run the list at listPtr (words int32) over the activations at act; wait.
   * @returns {{code: number, message?: string}} */
  runStep(buffer, listPtr, words, act) {
    if (this.lost) return { code: codes.IO, message: this.lost };
    const list = new Int32Array(buffer, listPtr, words).slice();
    const uploads = [],
      reads = [];
    let readBytes = 0;
    try {
      walkList(list, (name, a) => {
        if (name === 'UPLOAD') uploads.push(new Uint8Array(buffer, act + a.off, a.bytes).slice());
        else if (name === 'READ') {
          reads.push(a);
          readBytes += a.bytes;
        }
      });
    } catch (e) {
      return { code: codes.FORMAT, message: e.message };
    }
    let resp;
    if (readBytes > this.resp.length)
      resp = this.resp = new Uint8Array(new SharedArrayBuffer(Math.max(readBytes, 2 * this.resp.length)));
    Atomics.store(this.ctrl, 0, 0);
    this.post({ op: 'run', list, uploads, resp }, [list.buffer, ...uploads.map((u) => u.buffer)]);
    const r = this.wait('finish a step');
    if (r.code !== 0) return r;
    let o = 0;
    for (const a of reads) {
      new Uint8Array(buffer, a.dst, a.bytes).set(this.resp.subarray(o, o + a.bytes));
      o += a.bytes;
    }
    return { code: 0 };
  }

  /** ox_js_gpu_put, while the C load reads: rows [row0, row0 + rows) of the matrix of the entry
   * at entryPtr (gpuList.entryWords int32), their bytes at bytesPtr, copied to the GPU thread;
   * waits until it wrote them into the matrix's buffers, so the load reuses its chunk and the
   * bytes in flight are one chunk.
   * @returns {{code: number, message?: string}} */
  put(buffer, entryPtr, row0, rows, bytesPtr) {
    if (this.lost) return { code: codes.IO, message: this.lost };
    const [id, kind, type, nrows, cols, , rowBytes] = new Int32Array(buffer, entryPtr, gpuList.entryWords);
    const bytes = new Uint8Array(buffer, bytesPtr, rows * rowBytes).slice();
    Atomics.store(this.ctrl, 0, 0);
    this.post({ op: 'put', entry: { id, kind, type, rows: nrows, cols }, row0, rows, bytes }, [bytes.buffer]);
    const r = this.wait('upload rows');
    if (r.code === 0) this.putIds.add(id);
    else this.putFailed = r.message;
    return r;
  }

  // wait for the GPU thread's answer in ctrl (run, put): {code, message?}
  wait(what) {
    const t0 = Date.now();
    while (Atomics.wait(this.ctrl, 0, 0, 1000) === 'timed-out')
      if (Date.now() - t0 > this.timeoutMs)
        return { code: codes.IO, message: `the GPU thread did not ${what} in ${this.timeoutMs / 1000} s` };
    const status = this.ctrl[1],
      n = this.ctrl[2];
    if (status === 0) return { code: 0 };
    const message = new TextDecoder().decode(this.msg.slice(0, n));
    if (this.ctrl[3]) this.lost = message;
    return { code: status, message };
  }

  /** ox_js_gpu_forget: a session's KV caches may go. */
  forget(session) {
    this.post({ op: 'forget', session });
  }

  /** Bytes held on the GPU now: {weights, kv, scratch}. */
  get bytes() {
    const [weights, kv, scratch] = this.held;
    return { weights, kv, scratch };
  }

  /** Lose the device as a driver reset would (tests). */
  destroyDevice() {
    return this.call('destroyDevice');
  }

  // The thread ends once its device is destroyed, never while it may be inside Dawn: in Node a
  // worker terminated there (by terminate(), or with the engine worker that started it) aborts
  // the whole process, as Dawn throws with the termination pending. So close() resolves once
  // the thread has answered and ended; a page's thread that does not answer is terminated after
  // a few seconds, a Node one is only unref'd (it cannot keep the process alive) and given up on
  // after longer.
  close() {
    const w = this.worker;
    return new Promise((done) => {
      const end = () => (clearTimeout(late), w.terminate(), done());
      const late = setTimeout(isNode ? done : end, isNode ? 30000 : 5000);
      this.call('close').then(end, isNode ? () => (clearTimeout(late), done()) : end);
      if (isNode) w.unref?.(); // after the call, which refs it
    });
  }
}
