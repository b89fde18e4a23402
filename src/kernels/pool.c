/* pool.c — the fixed thread pool (see pool.h).
 *
 * A job is published as one 64-bit word: generation | task count | next task index.
 * Threads claim a task with a compare-and-swap on that word. A thread that wakes late (or,
 * in wasm, starts late) can never run a task of a newer job with the older job's function:
 * its CAS fails once the word moves on, and while a job still has unclaimed tasks in the
 * word the caller cannot be rewriting the job's function and context. The caller takes
 * tasks too and waits for the count of finished tasks, never for the workers themselves,
 * so ox_pool_run is correct even if a worker has not started yet (a wasm pthread may only
 * start once the creating thread returns to the event loop, unless the pthread pool is
 * preallocated).
 *
 * Wake-ups cost a system call (more in wasm), so the caller signals only when a worker has
 * gone to sleep (`sleepers`), and the last task's thread only when the caller sleeps at the
 * join: the usual back-to-back jobs of a token, caught by spinning threads, take no lock. */
#include "kernels/pool.h"
#include "kernels/prof.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#define POOL_MAX 64
/* Spin about 0.1-0.5 ms before sleeping: covers the gap between two matmuls of a token
 * (a futex wake costs tens of microseconds, more in wasm). x86 spins with `pause`
 * (tens of cycles each); wasm has no pause, so it counts more iterations. */
#if defined(__x86_64__) || defined(__i386__)
#define SPIN_ITERS 20000
#else
#define SPIN_ITERS 200000
#endif
#define TASK_BITS          22 /* a job has < 2^22 tasks; ox_pool_run splits larger counts */
#define TASK_MASK          ((1u << TASK_BITS) - 1)
#define WORD(gen, n, next) ((uint64_t)(gen) << (2 * TASK_BITS) | (uint64_t)(n) << TASK_BITS | (uint64_t)(next))
#define GEN(w)             ((uint32_t)((w) >> (2 * TASK_BITS)))

static struct {
    int n_threads; /* including the caller */
    pthread_t th[POOL_MAX];
    pthread_mutex_t mu;
    pthread_cond_t work_cv, done_cv;
    /* the word every thread polls and claims from, and the count every finished task bumps,
     * on lines of their own: a finish does not take the line the claims and spins read */
    _Alignas(64) _Atomic uint64_t work;  /* see WORD() */
    _Alignas(64) _Atomic int done;       /* tasks finished in the current job */
    _Alignas(64) _Atomic(ox_task_fn) fn; /* the job: read by every claim, written between jobs */
    _Atomic(void *) ctx;
    _Atomic int base, total; /* this job runs tasks base + i of total */
    _Atomic int stop;
    _Atomic int timed;         /* this job is profiled (prof.h) */
    _Atomic int sleepers;      /* workers waiting on work_cv */
    _Atomic int sleeping_done; /* the caller is waiting on done_cv */
} pool = {.n_threads = 1,
          .mu = PTHREAD_MUTEX_INITIALIZER,
          .work_cv = PTHREAD_COND_INITIALIZER,
          .done_cv = PTHREAD_COND_INITIALIZER};

/* A profiled job's per-thread figures, each thread writing only its own (padded) entry; the
 * caller reads them after the join (the done counter orders the writes before it). */
static struct {
    _Alignas(64) double work, first;
    uint64_t tasks;
} tstat[POOL_MAX];
static _Thread_local int self; /* 0: the caller, i: worker i */

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Claim and run tasks of the published job until none are left. */
static void run_tasks(void) {
    for (;;) {
        uint64_t w = atomic_load_explicit(&pool.work, memory_order_acquire);
        int n = (int)((w >> TASK_BITS) & TASK_MASK), i = (int)(w & TASK_MASK);
        if (i >= n) return;
        ox_task_fn fn = atomic_load_explicit(&pool.fn, memory_order_relaxed);
        void *ctx = atomic_load_explicit(&pool.ctx, memory_order_relaxed);
        int base = atomic_load_explicit(&pool.base, memory_order_relaxed);
        int total = atomic_load_explicit(&pool.total, memory_order_relaxed);
        int timed = atomic_load_explicit(&pool.timed, memory_order_relaxed);
        if (!atomic_compare_exchange_weak_explicit(&pool.work, &w, w + 1, memory_order_acq_rel, memory_order_acquire))
            continue;
        if (timed) {
            double t0 = ox_prof_now();
            fn(ctx, base + i, total);
            if (!tstat[self].tasks++) tstat[self].first = t0;
            tstat[self].work += ox_prof_now() - t0;
        } else fn(ctx, base + i, total);
        if (atomic_fetch_add_explicit(&pool.done, 1, memory_order_seq_cst) + 1 == n &&
            atomic_load_explicit(&pool.sleeping_done, memory_order_seq_cst)) {
            pthread_mutex_lock(&pool.mu);
            pthread_cond_signal(&pool.done_cv);
            pthread_mutex_unlock(&pool.mu);
        }
    }
}

static void *worker(void *arg) {
    self = (int)(intptr_t)arg;
    uint32_t seen = GEN(atomic_load(&pool.work));
    run_tasks(); /* a thread that starts late joins the job already published */
    for (;;) {
        int spins = 0;
        while (GEN(atomic_load_explicit(&pool.work, memory_order_acquire)) == seen &&
               !atomic_load_explicit(&pool.stop, memory_order_relaxed) && spins < SPIN_ITERS) {
            cpu_relax();
            spins++;
        }
        if (spins == SPIN_ITERS) {
            /* sleepers is raised before the word is read again: a caller publishing now
             * either sees it and signals (under mu), or is seen here */
            pthread_mutex_lock(&pool.mu);
            atomic_fetch_add_explicit(&pool.sleepers, 1, memory_order_seq_cst);
            while (GEN(atomic_load(&pool.work)) == seen && !atomic_load(&pool.stop))
                pthread_cond_wait(&pool.work_cv, &pool.mu);
            atomic_fetch_sub_explicit(&pool.sleepers, 1, memory_order_relaxed);
            pthread_mutex_unlock(&pool.mu);
        }
        if (atomic_load(&pool.stop)) return NULL;
        seen = GEN(atomic_load_explicit(&pool.work, memory_order_acquire));
        run_tasks();
    }
}

void ox_pool_shutdown(void) {
    if (pool.n_threads <= 1) return;
    pthread_mutex_lock(&pool.mu);
    atomic_store(&pool.stop, 1);
    pthread_cond_broadcast(&pool.work_cv);
    pthread_mutex_unlock(&pool.mu);
    for (int i = 0; i < pool.n_threads - 1; i++) pthread_join(pool.th[i], NULL);
    atomic_store(&pool.stop, 0);
    pool.n_threads = 1;
}

int ox_pool_init(int n_threads, ox_err *err) {
    if (n_threads < 1 || n_threads > POOL_MAX)
        return ox_errf(err, OX_E_RANGE, "thread count %d out of range [1, %d]", n_threads, POOL_MAX);
    if (n_threads == pool.n_threads) return 0;
    ox_pool_shutdown();
    for (int i = 0; i < n_threads - 1; i++) {
        int rc = pthread_create(&pool.th[i], NULL, worker, (void *)(intptr_t)(i + 1));
        if (rc) {
            pool.n_threads = i + 1;
            ox_pool_shutdown();
            return ox_errf(err, OX_E_NOMEM, "cannot start pool thread %d of %d (%s)", i + 1, n_threads - 1, strerror(rc));
        }
        pool.n_threads = i + 2; /* so a failure above joins the ones already started */
    }
    return 0;
}

int ox_pool_threads(void) { return pool.n_threads; }

/* One job of n < 2^TASK_BITS tasks: base + i for i < n. */
static void run_job(ox_task_fn fn, void *ctx, int base, int n, int total, int timed) {
    /* The previous job is fully claimed and finished, so no thread reads these now. */
    atomic_store_explicit(&pool.fn, fn, memory_order_relaxed);
    atomic_store_explicit(&pool.ctx, ctx, memory_order_relaxed);
    atomic_store_explicit(&pool.base, base, memory_order_relaxed);
    atomic_store_explicit(&pool.total, total, memory_order_relaxed);
    atomic_store_explicit(&pool.timed, timed, memory_order_relaxed);
    atomic_store_explicit(&pool.done, 0, memory_order_relaxed);
    double t_pub = 0, t_own = 0;
    if (timed) {
        memset(tstat, 0, sizeof tstat);
        t_pub = ox_prof_now();
    }
    uint32_t gen = (GEN(atomic_load(&pool.work)) + 1) & ((1u << (64 - 2 * TASK_BITS)) - 1);
    atomic_store_explicit(&pool.work, WORD(gen, n, 0), memory_order_seq_cst);
    if (atomic_load_explicit(&pool.sleepers, memory_order_seq_cst)) {
        pthread_mutex_lock(&pool.mu);
        pthread_cond_broadcast(&pool.work_cv);
        pthread_mutex_unlock(&pool.mu);
    }

    run_tasks();
    if (timed) t_own = ox_prof_now();
    for (int spins = 0; atomic_load_explicit(&pool.done, memory_order_acquire) < n; spins++) {
        if (spins < SPIN_ITERS) {
            cpu_relax();
            continue;
        }
        pthread_mutex_lock(&pool.mu);
        atomic_store_explicit(&pool.sleeping_done, 1, memory_order_seq_cst);
        while (atomic_load_explicit(&pool.done, memory_order_seq_cst) < n) pthread_cond_wait(&pool.done_cv, &pool.mu);
        atomic_store_explicit(&pool.sleeping_done, 0, memory_order_relaxed);
        pthread_mutex_unlock(&pool.mu);
    }
    if (timed) {
        double t_end = ox_prof_now(), work[POOL_MAX], wake[POOL_MAX];
        uint64_t tasks[POOL_MAX];
        for (int t = 0; t < pool.n_threads; t++) {
            work[t] = tstat[t].work;
            tasks[t] = tstat[t].tasks;
            wake[t] = tstat[t].tasks ? tstat[t].first - t_pub : -1;
        }
        ox_prof_fork(pool.n_threads, t_end - t_pub, t_end - t_own, work, wake, tasks);
    }
}

void ox_pool_run(ox_task_fn fn, void *ctx, int n_tasks) {
    if (n_tasks <= 0) return;
    double pt = ox_prof_begin(); /* nested in a timed matmul: not counted here */
    int timed = ox_prof_forking();
    if (pool.n_threads <= 1 || n_tasks == 1) {
        for (int i = 0; i < n_tasks; i++) fn(ctx, i, n_tasks);
        if (timed) ox_prof_fork_slot(OX_PROF_POOL); /* no fork/join: the op's name is not used */
    } else {
        for (int base = 0; base < n_tasks; base += (int)TASK_MASK) {
            int n = n_tasks - base < (int)TASK_MASK ? n_tasks - base : (int)TASK_MASK;
            run_job(fn, ctx, base, n, n_tasks, timed);
        }
    }
    ox_prof_end(pt, OX_PROF_POOL, 0);
}
