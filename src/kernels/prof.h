/* prof.h — optional per-op time split of the kernels layer (diagnostics, off by default).
 *
 * When enabled, ox_matmul* adds its wall time (activation quantization apart) and weight
 * bytes under the weight type, ox_pool_run the time of the other pool jobs (the model's
 * attention), and the row kernels (RMSNorm, RoPE, softmax, GEGLU) their own time. Only
 * calls made from the thread that enabled it, outside a pool task, are timed, so nested
 * kernels are not counted twice. Process-global, like the pool it sits beside; a disabled
 * profile costs one branch per kernel call. `oxinfer run --bench --profile` prints it for
 * prefill and decode. */
#ifndef OX_PROF_H
#define OX_PROF_H

#include <stdio.h>
#include <stdint.h>

enum {
    OX_PROF_ACTQ = 32, /* quantizing matmul activations (slots 0..30: matmul by ox_type) */
    OX_PROF_POOL,      /* pool jobs other than matmul (attention) */
    OX_PROF_NORM,
    OX_PROF_ROPE,
    OX_PROF_SOFTMAX,
    OX_PROF_GEGLU,
    OX_PROF_SLOTS
};

typedef struct ox_prof {
    double secs[OX_PROF_SLOTS];
    uint64_t calls[OX_PROF_SLOTS], bytes[OX_PROF_SLOTS];
} ox_prof;

void ox_prof_enable(int on); /* also clears the counters */
void ox_prof_get(ox_prof *out);
/* Prints one line per op with time, share of `wall` seconds, calls and GB/s of weights,
 * and the rest of `wall` as "other" (embedding, host reads, model glue). */
void ox_prof_print(FILE *f, const char *title, const ox_prof *p, double wall);

/* For the kernels: t = ox_prof_begin() ... ox_prof_end(t, slot, bytes). begin returns < 0
 * when this call is not timed (disabled, nested, or on a pool thread); end returns the
 * seconds it added (0 if none). ox_prof_add books a share of a timed call to a slot. */
double ox_prof_begin(void);
double ox_prof_end(double t, int slot, uint64_t bytes);
void ox_prof_add(int slot, double secs, uint64_t bytes);

#endif
