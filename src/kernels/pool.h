/* pool.h — fixed-size thread pool (process-global by design: wasm pthreads are costly to
 * create, so one pool is made at init and reused; the second exception to "no hidden
 * globals", with the host-file table).
 *
 * ox_pool_run(fn, ctx, n_tasks) runs fn(ctx, i, n_tasks) for i in [0, n_tasks) spread over
 * the pool's threads plus the caller, and returns when all are done. Workers spin briefly
 * then sleep on a futex/condvar, so back-to-back calls don't pay a wakeup each. Tasks must
 * not call ox_host_read (host reads belong to the calling thread). */
#ifndef OX_POOL_H
#define OX_POOL_H

#include "base/err.h"

typedef void (*ox_task_fn)(void *ctx, int task, int n_tasks);

/* (Re)size the pool to n_threads total (the caller counts as one). 1 = run inline.
 * In wasm, n_threads-1 must not exceed the preallocated pthread pool. */
int ox_pool_init(int n_threads, ox_err *err);
int ox_pool_threads(void);
void ox_pool_run(ox_task_fn fn, void *ctx, int n_tasks);
void ox_pool_shutdown(void);

#endif
