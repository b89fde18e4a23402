// bridge.js — sync calls from the engine's thread to the reader thread (reader_worker.js):
// a request by postMessage, the answer in a shared block the caller waits on with Atomics.wait.
import { codes } from '../shared/abi.js';
import { isNode } from '../shared/env.js';
import { OxError } from '../shared/errors.js';
import { aborted, bounded } from './bounded.js';
import { CHUNK, overShared } from './copy.js';

// Control words of the shared block: [state, status, nbytes, gate, progress]; state 0 = waiting,
// 1 = done; gate: see revoke(); progress counts the helper's copies (a long read that keeps
// arriving is not timed out as a whole).
export class Bridge {
  static async create(ctx) {
    const ctrl = new Int32Array(new SharedArrayBuffer(20));
    const data = new Uint8Array(new SharedArrayBuffer(CHUNK));
    const init = { ctrl, data, timeoutMs: ctx.timeoutMs };
    let w;
    // a thread start is slow on a loaded machine: bounded by 30 s, or timeoutMs if longer
    const ready = bounded(
      { ...ctx, timeoutMs: Math.max(ctx.timeoutMs, 30000) },
      'reader thread',
      'start',
      () =>
        new Promise((resolve, reject) => {
          if (isNode) {
            import(/* webpackIgnore: true */ 'node:worker_threads').then(({ Worker }) => {
              const here = import.meta.url; // (not the literal pattern, which is the page's: see below)
              w = new Worker(new URL('./reader_worker.js', here), { workerData: init });
              w.once('message', resolve);
              w.once('error', reject);
            }, reject);
          } else {
            // the literal pattern bundlers (Vite, webpack 5) recognise: they emit the worker and its imports
            w = new Worker(new URL('./reader_worker.js', import.meta.url), { type: 'module' });
            w.onmessage = () => resolve();
            w.onerror = (e) => reject(new OxError('IO', `reader thread: ${e.message ?? 'failed to start'}`));
            w.postMessage(init);
          }
        }),
    );
    try {
      await ready;
    } catch (e) {
      w?.terminate();
      throw e;
    }
    if (isNode) w.unref();
    return new Bridge(
      (m) => w.postMessage(m),
      () => w.terminate(),
      ctrl,
      data,
      ctx,
    );
  }

  constructor(post, stop, ctrl, data, ctx) {
    Object.assign(this, { post, stop, ctrl, data, ctx, broken: null });
  }

  // Send a request and block until the helper has put the bytes in dst: itself when dst is
  // over shared memory (then len is up to the source's `direct`), else through `data` (len <=
  // CHUNK), which costs a copy on each side, a large share of a URL load's time on the engine's
  // thread. Waits in slices so that an abort is seen within 50 ms. After a timeout
  // or an abort the helper may still answer late: the bridge is not used again, and its writes
  // into dst are revoked before this throws (that memory is the caller's again).
  call(msg, dst) {
    if (this.broken) throw new OxError('IO', this.broken);
    const direct = overShared(dst);
    if (direct) msg.into = dst;
    Atomics.store(this.ctrl, 0, 0);
    this.post(msg);
    // the helper bounds every wait for bytes by timeoutMs; this bounds the time without any
    // progress (a dead helper), the margin covering the helper's own latency
    const limit = this.ctx.timeoutMs + 5000;
    let t0 = Date.now(),
      seen = Atomics.load(this.ctrl, 4);
    while (Atomics.wait(this.ctrl, 0, 0, 50) === 'timed-out') {
      const p = Atomics.load(this.ctrl, 4);
      if (p !== seen) ((seen = p), (t0 = Date.now()));
      if (aborted(this.ctx)) {
        this.revoke(`${msg.name}: an earlier read was aborted`);
        throw new OxError('ABORTED', `${msg.name}: read of bytes ${msg.off}-${msg.off + msg.len - 1}: aborted`);
      }
      if (Date.now() - t0 > limit) {
        this.revoke(`${msg.name}: the reader thread made no progress for ${limit} ms`);
        throw new OxError('IO', this.broken);
      }
    }
    const status = this.ctrl[1],
      n = this.ctrl[2];
    if (status !== 0) {
      const text = new TextDecoder().decode(this.data.slice(0, n));
      const code = Object.keys(codes).find((k) => codes[k] === status) ?? 'IO';
      throw new OxError(code, text);
    }
    if (!direct) dst.set(this.data.subarray(0, n));
  }

  // Closes the write gate (ctrl[3]: 0 open, 1 the helper is copying into a request's dst, 2
  // closed for good) once a copy in progress has ended (a sync copy: it cannot stall).
  revoke(why) {
    this.broken = why;
    while (Atomics.compareExchange(this.ctrl, 3, 0, 2) === 1) Atomics.wait(this.ctrl, 3, 1, 50);
  }

  close() {
    this.stop();
  }
}
