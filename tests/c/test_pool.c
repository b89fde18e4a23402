/* test_pool.c — the thread pool: every task runs exactly once, back-to-back jobs, resizing,
 * bad sizes, and more than one thread really taking part. */
#include "check.h"
#include "kernels/pool.h"
#include "kernels/prof.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

typedef struct {
    _Atomic int hits[1000];
    _Atomic int total;
    _Atomic int n_seen;
} counts;

static void count_task(void *ctx, int task, int n_tasks) {
    counts *c = ctx;
    atomic_fetch_add(&c->hits[task], 1);
    atomic_fetch_add(&c->total, task + 1);
    atomic_store(&c->n_seen, n_tasks); /* same value from every task */
}

static int run_and_check(int n_tasks) {
    static counts c;
    memset(&c, 0, sizeof c);
    ox_pool_run(count_task, &c, n_tasks);
    int ok = atomic_load(&c.total) == n_tasks * (n_tasks + 1) / 2 && (n_tasks == 0 || c.n_seen == n_tasks);
    for (int i = 0; i < n_tasks; i++) ok &= atomic_load(&c.hits[i]) == 1;
    return ok;
}

static void test_inline(void) {
    CHECK(ox_pool_threads() == 1);
    CHECK(run_and_check(0));
    CHECK(run_and_check(1));
    CHECK(run_and_check(17));
}

static void test_threads(void) {
    ox_err e = {0};
    for (int n = 2; n <= 4; n++) {
        CHECK(ox_pool_init(n, &e) == 0);
        CHECK(ox_pool_threads() == n);
        int ok = 1;
        for (int rep = 0; rep < 2000; rep++) ok &= run_and_check(1 + rep % 40);
        CHECK_MSG(ok, "%d threads: a task ran zero or several times", n);
        CHECK(run_and_check(1000));
    }
    CHECK(ox_pool_init(2, &e) == 0);
    CHECK(run_and_check(5));
}

/* Tasks that wait until two distinct threads are inside at the same time: proves the workers
 * take tasks. A task leaves (decrements `inside`) when done, so a pool that runs the tasks one
 * after another never sees two inside. The wait is bounded in time (30 s: a loaded machine may
 * take long to schedule the worker), so a broken pool fails instead of hanging. Each task
 * records its thread: the two must differ. */
typedef struct {
    _Atomic int inside;
    _Atomic int met;
    pthread_t who[2];
} meet_ctx;

static void meet_task(void *ctx, int task, int n_tasks) {
    meet_ctx *m = ctx;
    m->who[task] = pthread_self();
    atomic_fetch_add(&m->inside, 1);
    double t0 = now_s();
    while (atomic_load(&m->inside) < 2 && !atomic_load(&m->met) && now_s() - t0 < 30) sched_yield();
    if (atomic_load(&m->inside) >= 2) atomic_store(&m->met, 1);
    atomic_fetch_sub(&m->inside, 1);
}

static void test_parallel(void) {
    ox_err e = {0};
    CHECK(ox_pool_init(2, &e) == 0);
    meet_ctx m = {0};
    ox_pool_run(meet_task, &m, 2);
    CHECK_MSG(atomic_load(&m.met), "two tasks never ran at the same time");
    CHECK_MSG(!pthread_equal(m.who[0], m.who[1]), "both tasks ran on the same thread");
}

static void test_errors(void) {
    ox_err e = {0};
    CHECK(ox_pool_init(0, &e) == OX_E_RANGE);
    CHECK_STR_CONTAINS(e.msg, "thread count 0");
    CHECK(ox_pool_init(100000, &e) == OX_E_RANGE);
    ox_pool_shutdown();
    CHECK(ox_pool_threads() == 1);
    CHECK(run_and_check(9));
    ox_pool_shutdown(); /* twice is fine */
}

/* The profile's pool side: every fork/join counted under the op that named it (a run that
 * does not fork uses no name), every task counted on some thread, and the times consistent
 * (the busiest thread's work within the fork/join's wall, at least the mean); disabled, nothing. */
static void test_profile(void) {
    ox_err e = {0};
    CHECK(ox_pool_init(3, &e) == 0);
    ox_prof_enable(1);
    for (int i = 0; i < 2; i++) {
        ox_prof_fork_slot(OX_PROF_NORM);
        CHECK(run_and_check(10));
    }
    ox_prof_fork_slot(OX_PROF_ROPE);
    CHECK(run_and_check(1)); /* inline: no fork/join, and the name is dropped */
    for (int i = 0; i < 3; i++) CHECK(run_and_check(7));
    ox_prof p;
    ox_prof_get(&p);
    CHECK(p.threads == 3);
    CHECK(p.forks[OX_PROF_NORM].n == 2);
    CHECK(p.forks[OX_PROF_ROPE].n == 0);
    CHECK(p.forks[OX_PROF_POOL].n == 3);
    uint64_t tasks = 0;
    for (int t = 0; t < OX_PROF_THREADS; t++) tasks += p.thread_tasks[t];
    CHECK_MSG(tasks == 2 * 10 + 3 * 7, "%llu tasks counted", (unsigned long long)tasks);
    for (int s = 0; s < OX_PROF_SLOTS; s++) {
        const ox_prof_forks *f = &p.forks[s];
        if (!f->n) continue;
        CHECK(f->busiest <= f->wall && f->busiest <= f->work && f->busiest * 3 >= f->work);
        CHECK(f->join_wait <= f->wall);
    }
    char buf[4096] = {0};
    FILE *f = tmpfile();
    CHECK(f != NULL);
    if (f) {
        ox_prof_print(f, "test", &p, 1.0, 5);
        rewind(f);
        CHECK(fread(buf, 1, sizeof buf - 1, f) > 0);
        fclose(f);
        CHECK_STR_CONTAINS(buf, "5 fork/joins, 1.0 per token");
        CHECK_STR_CONTAINS(buf, "rmsnorm               0.40/tok");
    }
    ox_prof_enable(0);
    CHECK(run_and_check(10));
    ox_prof_get(&p);
    CHECK(p.forks[OX_PROF_POOL].n == 0 && p.thread_tasks[0] == 0);
}

int main(void) {
    RUN(test_inline);
    RUN(test_profile);
    RUN(test_threads);
    RUN(test_parallel);
    RUN(test_errors);
    return check_summary("test_pool");
}
