/* prof.c — see prof.h. */
#include "kernels/prof.h"
#include "kernels/quant.h"

#include <string.h>
#include <time.h>

static ox_prof prof;
static int enabled;
/* 1 while a timed call runs on the enabling thread; pool threads never enable */
static _Thread_local int owner, depth;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

void ox_prof_enable(int on) {
    memset(&prof, 0, sizeof prof);
    enabled = on;
    owner = on;
}

void ox_prof_get(ox_prof *out) { *out = prof; }

double ox_prof_begin(void) {
    if (!enabled || !owner || depth++) return -1;
    return now();
}

void ox_prof_add(int slot, double secs, uint64_t bytes) {
    prof.secs[slot] += secs;
    prof.calls[slot]++;
    prof.bytes[slot] += bytes;
}

double ox_prof_end(double t, int slot, uint64_t bytes) {
    if (!enabled || !owner) return 0;
    depth--;
    if (t < 0) return 0;
    double dt = now() - t;
    if (slot >= 0) ox_prof_add(slot, dt, bytes);
    return dt;
}

static const char *slot_name(int s) {
    static const char *names[] = {"act quantize", "attention (pool)", "rmsnorm", "rope", "softmax", "geglu"};
    return s < OX_PROF_ACTQ ? ox_type_name((ox_type)s) : names[s - OX_PROF_ACTQ];
}

void ox_prof_print(FILE *f, const char *title, const ox_prof *p, double wall) {
    double sum = 0;
    fprintf(f, "profile %s: %.3f s\n", title, wall);
    for (int s = 0; s < OX_PROF_SLOTS; s++) {
        if (!p->calls[s]) continue;
        sum += p->secs[s];
        fprintf(f, "  %-18s %-7s %9.2f ms %5.1f%% %7llu calls", slot_name(s), s < OX_PROF_ACTQ ? "matmul" : "",
                p->secs[s] * 1e3, 100 * p->secs[s] / wall, (unsigned long long)p->calls[s]);
        if (p->bytes[s]) fprintf(f, " %6.2f GB/s", p->bytes[s] / p->secs[s] / 1e9);
        fprintf(f, "\n");
    }
    fprintf(f, "  %-26s %9.2f ms %5.1f%%\n", "other", (wall - sum) * 1e3, 100 * (wall - sum) / wall);
}
