/* lora.c — attaching adapters to a model and the forward pass's hook (lora.h); the files are
 * read by lora_read.c. */
#include "model/lora_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/pool.h"

/* The patched linears by their GGUF names (tensors.c maps the HF ones to these). */
static const char *const target_names[OX_LORA_N_TARGETS] = {
    [OX_LORA_Q] = "attn_q.weight",      [OX_LORA_K] = "attn_k.weight",          [OX_LORA_V] = "attn_v.weight",
    [OX_LORA_O] = "attn_output.weight", [OX_LORA_GATE] = "ffn_gate.weight",     [OX_LORA_UP] = "ffn_up.weight",
    [OX_LORA_DOWN] = "ffn_down.weight", [OX_LORA_PLE_GATE] = "inp_gate.weight", [OX_LORA_PLE_PROJ] = "proj.weight",
};

const char *ox_lora_target_name(ox_lora_target t) { return target_names[t]; }

int ox_lora_target_of(const char *name, int *l, ox_lora_target *t) {
    unsigned layer;
    int used = 0;
    *l = -1;
    if (sscanf(name, "blk.%u.%n", &layer, &used) != 1 || used == 0 || layer > 1u << 20) return -1;
    *l = (int)layer;
    for (int i = 0; i < OX_LORA_N_TARGETS; i++)
        if (strcmp(name + used, target_names[i]) == 0) return *t = (ox_lora_target)i, 0;
    return -1;
}

const ox_matrix *ox_lora_base(const ox_model *m, int l, ox_lora_target t) {
    const layer_w *w = &m->L[l];
    const ox_matrix *mats[OX_LORA_N_TARGETS] = {&w->q,  &w->k,    &w->v,        &w->o,       &w->gate,
                                                &w->up, &w->down, &w->ple_gate, &w->ple_proj};
    return mats[t]->rows > 0 ? mats[t] : NULL; /* by shape: a streamed matrix has data NULL between uses */
}

void ox_lora_free(ox_lora *a) {
    if (!a) return;
    int n = a->m->c.n_layers * OX_LORA_N_TARGETS;
    for (int i = 0; a->mod && i < n; i++) free(a->mod[i].a), free(a->mod[i].bt);
    free(a->mod);
    free(a);
}

int ox_lora_modules(const ox_lora *a) { return a->n_modules; }
int ox_lora_skipped(const ox_lora *a) { return a->n_skipped; }
int ox_lora_rank_max(const ox_lora *a) { return a->rank_max; }
uint64_t ox_lora_bytes(const ox_lora *a) { return a->bytes; }

int ox_model_set_lora(ox_model *m, ox_lora *const *adapters, const float *scales, int n, ox_err *err) {
    if (n < 0 || n > OX_LORA_MAX)
        return ox_errf(err, OX_E_RANGE, "LoRA: %d adapters at once (at most %d)", n, OX_LORA_MAX);
    for (int i = 0; i < n; i++) {
        if (!adapters[i] || adapters[i]->m != m)
            return ox_errf(err, OX_E_STATE, "LoRA: adapter %d was not loaded for this model", i);
        if (!isfinite(scales[i]))
            return ox_errf(err, OX_E_RANGE, "LoRA: the scale of adapter %d is %g, not a finite number", i,
                           (double)scales[i]);
    }
    for (int i = 0; i < n; i++) m->lora[i].a = adapters[i], m->lora[i].scale = scales[i];
    m->n_lora = n;
    return 0;
}

int ox_lora_scratch(const ox_model *m) {
    int r = 0;
    for (int i = 0; i < m->n_lora; i++)
        if (m->lora[i].a->rank_max > r) r = m->lora[i].a->rank_max;
    return r;
}

/* y[t] += sum_j z[t][j] * Bt[j] over a slice of the output columns per task. */
typedef struct bt_job {
    const float *z, *bt;
    float *y;
    int n, r, out, chunk;
} bt_job;

static void bt_task(void *ctx, int task, int n_tasks) {
    const bt_job *J = ctx;
    int c0 = task * J->chunk, c1 = c0 + J->chunk < J->out ? c0 + J->chunk : J->out;
    for (int t = 0; t < J->n && c0 < c1; t++) {
        float *yt = J->y + (size_t)t * J->out + c0;
        const float *zt = J->z + (size_t)t * J->r;
        for (int j = 0; j < J->r; j++) ox_axpy(yt, zt[j], J->bt + (size_t)j * J->out + c0, c1 - c0);
    }
}

/* Below this many multiply-adds per slice the update runs on the calling thread: a decode step's
 * module (r * out ~ 1e5) takes well under the wake-up of a sleeping pool thread on a busy
 * machine, and a token meets ~8 modules per layer. */
#define LORA_TASK_MACS (1 << 20)

static void module_add(const lora_module *md, float s, const float *x, int n, float *y, float *z) {
    for (int t = 0; t < n; t++)
        for (int j = 0; j < md->r; j++)
            z[(size_t)t * md->r + j] = s * ox_dot_f32(md->a + (size_t)j * md->in, x + (size_t)t * md->in, md->in);
    long long macs = (long long)n * md->r * md->out;
    int tasks = ox_pool_threads();
    if (tasks < 1) tasks = 1;
    long long cap = macs / LORA_TASK_MACS;
    if (tasks > cap) tasks = cap > 1 ? (int)cap : 1;
    int chunk = ((md->out + tasks - 1) / tasks + 15) & ~15; /* 16-float slices: whole SIMD rows */
    bt_job J = {z, md->bt, y, n, md->r, md->out, chunk};
    ox_pool_run(bt_task, &J, (md->out + chunk - 1) / chunk);
}

void ox_lora_add(const ox_model *m, int l, const ox_lora_target *t, int nt, const float *x, int n, float *const *ys,
                 float *z) {
    for (int k = 0; k < m->n_lora; k++) {
        if (m->lora[k].scale == 0.0f) continue;
        for (int i = 0; i < nt; i++) {
            const lora_module *md = &m->lora[k].a->mod[(size_t)l * OX_LORA_N_TARGETS + t[i]];
            if (md->r) module_add(md, m->lora[k].scale * md->scale, x, n, ys[i], z);
        }
    }
}
