// bounded.js — every async host operation ends in time, or when the load is aborted.
import { OxError } from '../shared/errors.js';

// ctx: {timeoutMs, abortFlag (Int32Array over shared memory, 1 = abort), signal (AbortSignal)}
export function aborted(ctx) {
  return !!(ctx.signal?.aborted || (ctx.abortFlag && Atomics.load(ctx.abortFlag, 0)));
}

// Runs fn(signal) with a signal that fires after ctx.timeoutMs or on abort; the result, or a
// OxError: IO `${name}: ${what}: no answer in N ms`, or ABORTED.
export async function bounded(ctx, name, what, fn) {
  if (aborted(ctx)) throw new OxError('ABORTED', `${name}: ${what}: aborted`);
  const ac = new AbortController();
  let why = null;
  const stop = (w) => {
    why ??= w;
    ac.abort();
  };
  const timer = setTimeout(() => stop('timeout'), ctx.timeoutMs);
  // the abort flag is a word in shared memory: poll it (no event fires)
  const poll = ctx.abortFlag ? setInterval(() => aborted(ctx) && stop('abort'), 25) : null;
  const onAbort = () => stop('abort');
  ctx.signal?.addEventListener('abort', onAbort, { once: true });
  // fn may ignore its signal (an OPFS call): the race ends the wait anyway
  const stopped = new Promise((_, reject) => ac.signal.addEventListener('abort', () => reject(null), { once: true }));
  stopped.catch(() => {});
  try {
    return await Promise.race([fn(ac.signal), stopped]);
  } catch (e) {
    if (why === 'abort') throw new OxError('ABORTED', `${name}: ${what}: aborted`);
    if (why === 'timeout') throw new OxError('IO', `${name}: ${what}: no answer in ${ctx.timeoutMs} ms`);
    throw e;
  } finally {
    clearTimeout(timer);
    if (poll) clearInterval(poll);
    ctx.signal?.removeEventListener('abort', onAbort);
  }
}
