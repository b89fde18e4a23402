// protocol.js — the engine worker's side of the message protocol (js/main/connection.js is the
// main thread's):
//   request  {id, op, ...args}          ids grow; requests run one after another
//   reply    {id, ok: true, value} | {id, ok: false, error: {code, message}}
//   event    {id, event: 'progress' | 'token', ...}   while the request runs
//   abort    {op: 'abort', target: id}  acts at once: the job sees job.aborted at its next
//                                      check, or does not start if it is still queued
// An error without a code (a wasm trap, a bug) leaves the engine in an unknown state: from
// then on every request fails with STATE and that first message.
import { OxError } from '../shared/errors.js';

// Yield to the event loop (so an abort message is seen) and continue in a new task.
export const nextTask = (() => {
  if (typeof setImmediate === 'function') return () => new Promise((r) => setImmediate(r));
  const ch = new MessageChannel();
  const waiting = [];
  ch.port1.onmessage = () => waiting.shift()();
  return () =>
    new Promise((r) => {
      waiting.push(r);
      ch.port2.postMessage(0);
    });
})();

export class Protocol {
  // post(msg, transfer); ops (set by the owner): name -> async (request, job) => value
  constructor(post) {
    this.post = post;
    this.ops = {};
    this.jobs = new Map(); // id -> job of the running request
    this.abortedEarly = new Set(); // ids aborted while queued
    this.abortFlag = null; // Int32Array over shared memory (init): slot 1 is the id of an aborted request
    this.running = 0; // the id of the request being handled, 0 between requests
    this.lastStarted = 0;
    this.chain = Promise.resolve();
    this.dead = null; // why the engine cannot run anymore
  }

  // the wasm runtime stopped (Module.onAbort)
  kill(why) {
    this.dead ??= why;
  }

  // The running request was aborted by its caller (seen through shared memory, so also while the
  // worker is inside a C call: the grammars poll it through Module.oxAborted).
  aborting() {
    return this.running !== 0 && this.abortFlag !== null && Atomics.load(this.abortFlag, 1) === this.running;
  }

  receive(m) {
    if (m.op === 'abort') {
      const job = this.jobs.get(m.target);
      if (job) job.aborted = true;
      else if (m.target > this.lastStarted) this.abortedEarly.add(m.target);
      return;
    }
    this.chain = this.chain.then(() => this.handle(m));
  }

  async handle(m) {
    const { id } = m;
    this.lastStarted = id;
    this.running = id;
    const job = { id, aborted: this.abortedEarly.delete(id), emit: (ev) => this.post({ ...ev, id }) };
    this.jobs.set(id, job);
    try {
      if (this.dead) throw new OxError('STATE', this.dead);
      const op = this.ops[m.op];
      if (!op) throw new OxError('RANGE', `unknown op ${m.op}`);
      const value = await op(m, job);
      this.post({ id, ok: true, value }, ArrayBuffer.isView(value) ? [value.buffer] : []);
    } catch (e) {
      if (!(e instanceof OxError)) this.kill(`the wasm engine stopped: ${e?.message ?? e}`);
      this.post({
        id,
        ok: false,
        error: e instanceof OxError ? { code: e.code, message: e.message } : { code: 'STATE', message: this.dead },
      });
    } finally {
      this.running = 0;
      this.jobs.delete(id);
    }
  }
}
