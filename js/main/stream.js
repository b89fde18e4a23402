// stream.js — generate() and chat() results: an async iterator over a worker job's events.
import { abortError, toOxError } from '../shared/errors.js';

// An async iterator over a worker job's token events, ending with {token: null, text: '',
// stats}. Abort (signal, or leaving the loop early) tells the worker, which stops before its
// next token; the iterator stops at once.
export function tokenStream(engine, prepare, signal) {
  const queue = [];
  let wake = null;
  let error = null;
  let finished = false;
  let id = 0;
  const notify = () => {
    wake?.();
    wake = null;
  };
  const onAbort = () => {
    if (finished) return;
    if (id) engine.abort(id);
    error = abortError('generation');
    finished = true;
    notify();
  };
  const t0 = performance.now();
  let firstTokenMs = null; // time to the first token, from the call (template, tokenizing, prefill)
  const begin = (async () => {
    if (signal?.aborted) return onAbort();
    signal?.addEventListener('abort', onAbort, { once: true });
    let args;
    try {
      args = await prepare();
    } catch (e) {
      error = toOxError(e);
      finished = true;
      return;
    }
    if (finished) return;
    const job = engine.start('generate', args, (ev) => {
      if (finished) return notify();
      if (ev.token >= 0) firstTokenMs ??= performance.now() - t0;
      const chunk = { token: ev.token >= 0 ? ev.token : null, text: ev.text, thinking: ev.thinking };
      if (ev.logprob !== undefined) [chunk.logprob, chunk.topLogprobs] = [ev.logprob, ev.topLogprobs];
      queue.push(chunk);
      notify();
    });
    id = job.id;
    job.done.then(
      (stats) => {
        if (!finished) queue.push({ token: null, text: '', stats: { ...stats, firstTokenMs } });
        finished = true;
        notify();
      },
      (e) => {
        if (!finished) error = toOxError(e);
        finished = true;
        notify();
      },
    );
  })();
  const cleanup = () => signal?.removeEventListener('abort', onAbort);
  return {
    [Symbol.asyncIterator]() {
      return this;
    },
    async next() {
      await begin;
      for (;;) {
        if (error && (signal?.aborted || !queue.length)) {
          cleanup();
          queue.length = 0;
          const e = error;
          error = null;
          throw e;
        }
        if (queue.length) return { value: queue.shift(), done: false };
        if (finished) {
          cleanup();
          return { value: undefined, done: true };
        }
        await new Promise((r) => (wake = r));
      }
    },
    async return() {
      if (!finished && id) engine.abort(id);
      finished = true;
      queue.length = 0;
      cleanup();
      return { value: undefined, done: true };
    },
  };
}
