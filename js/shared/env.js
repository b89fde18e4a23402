// env.js — the one probe of where this code runs, for every context of the package.

/** True under Node (main thread or worker_threads), false in a page or a Web Worker (a bundler's
 * `process` shim is not Node: those have a window or a WorkerGlobalScope). */
export const isNode =
  typeof process === 'object' &&
  !!process.versions?.node &&
  typeof window === 'undefined' &&
  typeof WorkerGlobalScope === 'undefined';
