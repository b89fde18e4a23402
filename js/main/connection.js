// connection.js — the main thread's side of the engine worker (js/engine/worker.js; the protocol is
// described in js/engine/protocol.js). A Web Worker in browsers, a worker_threads Worker in
// Node; both are ES module workers, created with the pattern bundlers recognise.
import { isNode } from '../shared/env.js';
import { OxError } from '../shared/errors.js';

async function spawnWorker() {
  if (isNode) {
    const wt = await import(/* webpackIgnore: true */ 'node:worker_threads');
    const here = import.meta.url; // (not the literal pattern: a bundler would emit a copy)
    const w = new wt.Worker(new URL('../engine/worker.js', here));
    return {
      post: (m, t) => w.postMessage(m, t),
      listen: (onMsg, onFail) => {
        w.on('message', onMsg);
        w.on('error', onFail);
        w.on('exit', (code) => onFail(new Error(`the engine worker exited (code ${code})`)));
      },
      terminate: () => w.terminate(),
      hold: (on) => (on ? w.ref() : w.unref()),
    };
  }
  const w = new Worker(new URL('../engine/worker.js', import.meta.url), { type: 'module' });
  return {
    post: (m, t) => w.postMessage(m, t ?? []),
    listen: (onMsg, onFail) => {
      w.onmessage = (e) => onMsg(e.data);
      w.onerror = (e) => {
        e.preventDefault?.();
        onFail(new Error(e.message || 'the engine worker failed to start'));
      };
    },
    terminate: () => w.terminate(),
    hold: () => {},
  };
}

export class Connection {
  static async open() {
    return new Connection(await spawnWorker());
  }

  constructor(w) {
    this.w = w;
    this.next = 1;
    this.pending = new Map(); // id -> {resolve, reject, onEvent}
    this.dead = null; // the OxError every request fails with once the worker is gone
    this.abortFlag = null; // Int32Array over shared memory (loadModel's): slot 1 names an aborted request
    w.listen(
      (m) => this.receive(m),
      (e) => this.fail(new OxError('STATE', e.message)),
    );
    w.hold(false); // an idle model does not keep Node running
  }

  // -> {id, done: Promise of the reply's value}; onEvent(event) for the request's events
  start(op, args = {}, onEvent = null) {
    const id = this.next++;
    const done = new Promise((resolve, reject) => {
      if (this.dead) return reject(this.dead);
      try {
        this.w.post({ ...args, id, op });
      } catch (e) {
        // e.g. a Node file-backed Blob (fs.openAsBlob), which cannot be sent to a thread
        return reject(new OxError('UNSUPPORTED', `${op}: cannot send the request to the engine worker: ${e.message}`));
      }
      this.pending.set(id, { resolve, reject, onEvent });
      this.w.hold(true);
    });
    return { id, done };
  }

  call(op, args, onEvent) {
    return this.start(op, args, onEvent).done;
  }

  abort(target) {
    // the flag reaches the worker while it is inside a C call; the message when it next yields
    if (this.abortFlag) Atomics.store(this.abortFlag, 1, target);
    if (!this.dead) this.w.post({ op: 'abort', target });
  }

  receive(m) {
    const p = this.pending.get(m.id);
    if (!p) return;
    if (m.event) return void p.onEvent?.(m);
    this.pending.delete(m.id);
    if (!this.pending.size) this.w.hold(false);
    if (m.ok) p.resolve(m.value);
    else p.reject(new OxError(m.error.code, m.error.message));
  }

  fail(e) {
    if (this.dead) return;
    this.dead = e;
    for (const p of this.pending.values()) p.reject(e);
    this.pending.clear();
  }

  terminate(reason) {
    this.fail(reason ?? new OxError('STATE', 'the model was unloaded'));
    this.w.terminate();
  }
}
