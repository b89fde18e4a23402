/* prof.c — see prof.h. */
#include "kernels/prof.h"
#include "kernels/quant.h"

#include <string.h>
#include <time.h>

static ox_prof prof;
static int enabled;
static int fork_slot = OX_PROF_POOL;
/* 1 while a timed call runs on the enabling thread; pool threads never enable */
static _Thread_local int owner, depth;

double ox_prof_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

void ox_prof_enable(int on) {
    memset(&prof, 0, sizeof prof);
    enabled = on;
    owner = on;
    fork_slot = OX_PROF_POOL;
}

void ox_prof_get(ox_prof *out) { *out = prof; }

double ox_prof_begin(void) {
    if (!enabled || !owner || depth++) return -1;
    return ox_prof_now();
}

void ox_prof_add(int slot, double secs, uint64_t bytes) {
    if (slot < 0 || slot >= OX_PROF_SLOTS) return;
    prof.secs[slot] += secs;
    prof.calls[slot]++;
    prof.bytes[slot] += bytes;
}

double ox_prof_end(double t, int slot, uint64_t bytes) {
    if (!enabled || !owner) return 0;
    depth--;
    if (t < 0) return 0;
    double dt = ox_prof_now() - t;
    if (slot >= 0) ox_prof_add(slot, dt, bytes);
    return dt;
}

int ox_prof_matmul_slot(int type, int rows) {
    if (type < 0 || type >= OX_TYPE_COUNT) return -1;
    return rows >= OX_PROF_WIDE_ROWS ? OX_PROF_WIDE + type : type;
}

int ox_prof_forking(void) { return enabled && owner; }

void ox_prof_fork_slot(int slot) {
    if (enabled && owner) fork_slot = slot >= 0 && slot < OX_PROF_SLOTS ? slot : OX_PROF_POOL;
}

void ox_prof_fork(int n_threads, double wall, double join_wait, const double *work, const double *wake,
                  const uint64_t *tasks) {
    ox_prof_forks *f = &prof.forks[fork_slot];
    fork_slot = OX_PROF_POOL;
    if (n_threads > OX_PROF_THREADS) n_threads = OX_PROF_THREADS;
    double busiest = 0;
    for (int t = 0; t < n_threads; t++) {
        f->work += work[t];
        busiest = work[t] > busiest ? work[t] : busiest;
        prof.thread_work[t] += work[t];
        prof.thread_tasks[t] += tasks[t];
        if (wake[t] >= 0) prof.thread_jobs[t]++, prof.thread_wake[t] += wake[t];
    }
    f->n++;
    f->wall += wall;
    f->busiest += busiest;
    f->join_wait += join_wait;
    prof.threads = n_threads;
}

/* a slot's name, e.g. "Q4_K", "Q6_K wide", "rmsnorm" (buf: at least 32 bytes) */
static const char *slot_name(int s, char *buf) {
    static const char *names[] = {"act quantize", "attention (pool)", "rmsnorm", "rope", "softmax",
                                  "geglu",        "table rows"};
    if (s >= OX_PROF_ACTQ) return names[s - OX_PROF_ACTQ];
    const char *t = ox_type_name((ox_type)(s % OX_TYPE_COUNT));
    snprintf(buf, 32, "%s%s", t ? t : "?", s >= OX_PROF_WIDE ? " wide" : "");
    return buf;
}

static void print_forks(FILE *f, const ox_prof *p, double wall, int n_tok) {
    ox_prof_forks all = {0};
    for (int s = 0; s < OX_PROF_SLOTS; s++) {
        const ox_prof_forks *k = &p->forks[s];
        all.n += k->n, all.wall += k->wall, all.work += k->work, all.busiest += k->busiest;
        all.join_wait += k->join_wait;
    }
    if (!all.n) return;
    int T = p->threads;
    fprintf(f,
            "  pool, %d threads: %llu fork/joins, %.1f per token, %.1f%% of the time; per op: fork/joins per "
            "token, wall, cost beyond the busiest thread (us per fork/join), imbalance (busiest / mean - 1), "
            "caller's wait at the join\n",
            T, (unsigned long long)all.n, n_tok > 0 ? (double)all.n / n_tok : 0, 100 * all.wall / wall);
    char buf[32];
    for (int s = 0; s <= OX_PROF_SLOTS; s++) {
        const ox_prof_forks *k = s < OX_PROF_SLOTS ? &p->forks[s] : &all;
        if (!k->n) continue;
        double mean = k->work / (T > 0 ? T : 1);
        fprintf(f, "    %-18s %7.2f/tok %9.2f ms %7.1f us %6.1f%% %9.2f ms\n",
                s < OX_PROF_SLOTS ? slot_name(s, buf) : "all", n_tok > 0 ? (double)k->n / n_tok : 0, k->wall * 1e3,
                (k->wall - k->busiest) / k->n * 1e6, mean > 0 ? 100 * (k->busiest / mean - 1) : 0, k->join_wait * 1e3);
    }
    fprintf(f, "  per thread: work in tasks (share of the fork/joins' wall), tasks, mean wake-up\n");
    for (int t = 0; t < T; t++)
        fprintf(f, "    thread %-2d%s %9.2f ms %5.1f%% %8llu tasks %7.1f us\n", t, t ? "        " : " (caller)",
                p->thread_work[t] * 1e3, all.wall > 0 ? 100 * p->thread_work[t] / all.wall : 0,
                (unsigned long long)p->thread_tasks[t],
                p->thread_jobs[t] ? p->thread_wake[t] / (double)p->thread_jobs[t] * 1e6 : 0);
}

void ox_prof_print(FILE *f, const char *title, const ox_prof *p, double wall, int n_tok) {
    double sum = 0;
    char buf[32];
    fprintf(f, "profile %s: %.3f s, %d tokens\n", title, wall, n_tok);
    for (int s = 0; s < OX_PROF_SLOTS; s++) {
        if (!p->calls[s]) continue;
        sum += p->secs[s];
        fprintf(f, "  %-18s %-7s %9.2f ms %5.1f%% %7llu calls", slot_name(s, buf), s < OX_PROF_ACTQ ? "matmul" : "",
                p->secs[s] * 1e3, 100 * p->secs[s] / wall, (unsigned long long)p->calls[s]);
        if (p->bytes[s]) fprintf(f, " %6.2f GB/s", p->bytes[s] / p->secs[s] / 1e9);
        fprintf(f, "\n");
    }
    fprintf(f, "  %-26s %9.2f ms %5.1f%%\n", "other", (wall - sum) * 1e3, 100 * (wall - sum) / wall);
    print_forks(f, p, wall, n_tok);
}
