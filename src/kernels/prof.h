/* prof.h — optional per-op and per-thread time split of the kernels layer (diagnostics, off
 * by default).
 *
 * When enabled, ox_matmul* adds its wall time (activation quantization apart) and weight
 * bytes under the weight type (matrices of OX_PROF_WIDE_ROWS rows or more, a vocabulary
 * head, apart from the rest), ox_pool_run the time of the other pool jobs (the model's
 * attention), the row kernels (RMSNorm, RoPE, softmax, GEGLU) their own time, and the model
 * its table-row reads (embedding and PLE rows, from the host or resident). Only calls made
 * from the thread that enabled it, outside a pool task, are timed, so nested kernels are not
 * counted twice.
 *
 * The pool's side: every fork/join (ox_pool_run job) is counted under the op that forked it,
 * with its wall time on the calling thread, every thread's time inside tasks, the busiest
 * thread's, the caller's wait at the join after its own last task, and per thread the time
 * from the job's publication to its first task (the wake-up). Process-global, like the pool
 * it sits beside; a disabled profile costs one branch per kernel call and per pool job.
 * `oxinfer run --bench --profile` prints it for prefill and decode, natively and in wasm. */
#ifndef OX_PROF_H
#define OX_PROF_H

#include <stdio.h>
#include <stdint.h>

#include "kernels/blocks.h"

#define OX_PROF_WIDE_ROWS 32768 /* a matmul of this many rows or more is booked as "wide" */
#define OX_PROF_THREADS   64    /* as many as the pool has at most */

enum {
    /* slots [0, OX_TYPE_COUNT): matmul by ox_type; then the same for wide matrices */
    OX_PROF_WIDE = OX_TYPE_COUNT,
    OX_PROF_ACTQ = 2 * OX_TYPE_COUNT, /* quantizing matmul activations */
    OX_PROF_POOL,                     /* pool jobs other than matmul (attention) */
    OX_PROF_NORM,
    OX_PROF_ROPE,
    OX_PROF_SOFTMAX,
    OX_PROF_GEGLU,
    OX_PROF_TABLE, /* table rows read and dequantized (embedding, PLE) */
    OX_PROF_SLOTS
};

/* The fork/joins of one op. */
typedef struct ox_prof_forks {
    uint64_t n;
    double wall;      /* publication to join, on the calling thread */
    double work;      /* time inside tasks, summed over the threads */
    double busiest;   /* the busiest thread's time inside tasks, summed over the fork/joins */
    double join_wait; /* the caller's wait after its own last task */
} ox_prof_forks;

typedef struct ox_prof {
    double secs[OX_PROF_SLOTS];
    uint64_t calls[OX_PROF_SLOTS], bytes[OX_PROF_SLOTS];
    ox_prof_forks forks[OX_PROF_SLOTS]; /* by the op that forked */
    int threads;                        /* the pool's size when last forked */
    /* per thread (0: the caller): time inside tasks, tasks run, fork/joins it took part in and
     * the sum of its wake-ups (publication to its first task) over those */
    double thread_work[OX_PROF_THREADS], thread_wake[OX_PROF_THREADS];
    uint64_t thread_tasks[OX_PROF_THREADS], thread_jobs[OX_PROF_THREADS];
} ox_prof;

void ox_prof_enable(int on); /* also clears the counters */
void ox_prof_get(ox_prof *out);
/* Prints one line per op with time, share of `wall` seconds, calls and GB/s of weights,
 * and the rest of `wall` as "other" (host reads of streamed weights, model glue); then the
 * fork/joins per op (per token of `n_tok`, their cost beyond the busiest thread, the
 * imbalance between threads) and the per-thread work and wake-up. */
void ox_prof_print(FILE *f, const char *title, const ox_prof *p, double wall, int n_tok);

/* For the kernels: t = ox_prof_begin() ... ox_prof_end(t, slot, bytes). begin returns < 0
 * when this call is not timed (disabled, nested, or on a pool thread); end returns the
 * seconds it added (0 if none). ox_prof_add books a share of a timed call to a slot. */
double ox_prof_begin(void);
double ox_prof_end(double t, int slot, uint64_t bytes);
void ox_prof_add(int slot, double secs, uint64_t bytes);
/* The matmul slot of a weight of `type` with `rows` rows. */
int ox_prof_matmul_slot(int type, int rows);

/* For the pool: ox_prof_forking() is nonzero when the next fork/join on this thread is to be
 * timed; ox_prof_fork_slot(slot) names the op of the next one (else OX_PROF_POOL);
 * ox_prof_fork books one. work, wake: per thread, wake < 0 for a thread that ran no task. */
int ox_prof_forking(void);
void ox_prof_fork_slot(int slot);
void ox_prof_fork(int n_threads, double wall, double join_wait, const double *work, const double *wake,
                  const uint64_t *tasks);
double ox_prof_now(void);

#endif
