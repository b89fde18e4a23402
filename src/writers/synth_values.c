/* synth_values.c — the values of a synthetic model's tensors, and the start and end both
 * writers share (synth_impl.h). */
#include "writers/synth_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/pool.h"

static uint64_t name_key(uint32_t seed, const char *name) {
    uint64_t h = 0xCBF29CE484222325ull; /* FNV-1a */
    for (const char *c = name; *c; c++) h = (h ^ (uint8_t)*c) * 0x100000001B3ull;
    return synth_mix64(h ^ synth_mix64((uint64_t)seed + 0x9E3779B97F4A7C15ull));
}

/* Row `row` of a tensor: mean + sd * N(0,1) from a generator keyed by (seed, name, row). */
static void gen_row(const ox_synth *s, const ptensor *t, uint64_t key, uint64_t row, float *dst) {
    uint64_t n = t->ne[0];
    if (t->kind == K_ROPE) { /* proportional RoPE: 1 for rotated pairs, 1e30 (no rotation) beyond */
        uint64_t rot = (uint64_t)(s->global_head_dim * s->partial_rotary / 2);
        for (uint64_t i = 0; i < n; i++) dst[i] = i < rot ? 1.0f : 1e30f;
        return;
    }
    if (t->kind == K_EYE) {
        for (uint64_t i = 0; i < n; i++) dst[i] = i == row ? 1.0f : 0.0f;
        return;
    }
    uint64_t st = key ^ synth_mix64(row + 1);
    for (uint64_t i = 0; i < n; i += 2) {
        st += 0x9E3779B97F4A7C15ull;
        uint64_t a = synth_mix64(st);
        st += 0x9E3779B97F4A7C15ull;
        uint64_t b = synth_mix64(st);
        double u1 = ((a >> 11) + 0.5) * (1.0 / 9007199254740992.0), u2 = (b >> 11) * (1.0 / 9007199254740992.0);
        double r = sqrt(-2.0 * log(u1));
        dst[i] = (float)(t->mean + t->sd * r * cos(6.283185307179586 * u2));
        if (i + 1 < n) dst[i + 1] = (float)(t->mean + t->sd * r * sin(6.283185307179586 * u2));
    }
    for (uint64_t i = 0; s->bf16_values && i < n; i++) dst[i] = ox_bf16_to_f32(ox_f32_to_bf16(dst[i]));
}

/* Generate and encode rows [r0, r0+nr) of t as `type` into out, split over the pool. */
typedef struct gen_job {
    const ox_synth *s;
    const ptensor *t;
    ox_type type;
    uint64_t key, r0, nr, row_bytes;
    float *f;          /* [tasks][ne0] */
    const float *vals; /* the whole tensor from values_dir, or NULL: generate */
    uint8_t *out;
    int bad;
} gen_job;

static void gen_task(void *ctx, int task, int n_tasks) {
    gen_job *J = ctx;
    uint64_t a = J->nr * (uint64_t)task / (uint64_t)n_tasks, b = J->nr * (uint64_t)(task + 1) / (uint64_t)n_tasks;
    float *f = J->f + (size_t)task * J->t->ne[0];
    for (uint64_t r = a; r < b; r++) {
        if (J->vals) memcpy(f, J->vals + (J->r0 + r) * J->t->ne[0], (size_t)J->t->ne[0] * sizeof(float));
        else gen_row(J->s, J->t, J->key, J->r0 + r, f);
        if (ox_quantize_row(J->type, f, J->out + r * J->row_bytes, (size_t)J->t->ne[0])) J->bad = 1;
    }
}

#define GEN_CHUNK (4u << 20)

/* room for tensor t's values in x->vals (trained tensors are small: the demo model's, or a
 * widened model's matrices) */
static int alloc_values(writer_ctx *x, const ptensor *t, ox_err *err) {
    free(x->vals);
    x->vals = malloc((size_t)(t->ne[0] * t->ne[1] * t->ne[2]) * sizeof(float));
    return x->vals ? 0 : ox_errf(err, OX_E_NOMEM, "synth: out of memory for the values of %s", t->name);
}

/* Tensor t's values from s->values_dir into x->vals. */
static int load_values(writer_ctx *x, const ptensor *t, ox_err *err) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.f32", x->s->values_dir, t->name);
    uint64_t n = t->ne[0] * t->ne[1] * t->ne[2];
    if (alloc_values(x, t, err)) return err ? err->code : OX_E_NOMEM;
    FILE *f = fopen(path, "rb");
    if (!f) return ox_errf(err, OX_E_IO, "synth: cannot open %s (tensor %s)", path, t->name);
    size_t got = fread(x->vals, sizeof(float), (size_t)n, f);
    int extra = fgetc(f) != EOF;
    fclose(f);
    if (got != n || extra)
        return ox_errf(err, OX_E_FORMAT, "synth: %s: expected %llu f32 values for tensor %s", path,
                       (unsigned long long)n, t->name);
    return 0;
}

/* Stream tensor i of the writer's list to f, in chunks of rows. */
int synth_emit(writer_ctx *x, int i, FILE *fp, ox_err *err) {
    const ptensor *t = x->t[i];
    ox_type type = x->type[i];
    uint64_t rb, rows = t->ne[1] * t->ne[2];
    if (ox_row_bytes(type, t->ne[0], &rb, err)) return ox_err_prefix(err, "synth: tensor %s", t->name);
    uint64_t per = GEN_CHUNK / (t->ne[0] * 4);
    if (per < 1) per = 1;
    if (per > rows) per = rows;
    int tasks = ox_pool_threads() > 0 ? ox_pool_threads() : 1;
    size_t fneed = (size_t)tasks * (size_t)t->ne[0] * sizeof(float), oneed = (size_t)(per * rb);
    if (fneed > x->f_cap) {
        free(x->f);
        x->f = malloc(fneed);
        x->f_cap = x->f ? fneed : 0;
    }
    if (oneed > x->out_cap) {
        free(x->out);
        x->out = malloc(oneed);
        x->out_cap = x->out ? oneed : 0;
    }
    if (!x->f || !x->out) return ox_errf(err, OX_E_NOMEM, "synth: out of memory generating %s", t->name);
    uint64_t key = name_key(x->s->seed, t->name);
    int trained = 0;
    if (t->kind != K_ROPE && x->s->values_dir) {
        if (load_values(x, t, err)) return err ? err->code : OX_E_IO;
        trained = 1;
    } else if (t->kind != K_ROPE && x->widen) {
        if (alloc_values(x, t, err)) return err ? err->code : OX_E_NOMEM;
        trained = ox_widen_values(x->widen, t->name, t->ne[0], t->ne[1] * t->ne[2], x->vals, err);
        if (trained < 0) return trained;
    }
    for (uint64_t r0 = 0; r0 < rows; r0 += per) {
        uint64_t nr = rows - r0 < per ? rows - r0 : per;
        gen_job J = {x->s, t, type, key, r0, nr, rb, x->f, trained ? x->vals : NULL, x->out, 0};
        ox_pool_run(gen_task, &J, (int)(nr < (uint64_t)tasks ? nr : (uint64_t)tasks));
        if (J.bad) return ox_errf(err, OX_E_UNSUPPORTED, "synth: cannot encode %s as %s", t->name, ox_type_name(type));
        if (fwrite(x->out, 1, (size_t)(nr * rb), fp) != (size_t)(nr * rb))
            return ox_errf(err, OX_E_IO, "synth: write failed for tensor %s", t->name);
    }
    return 0;
}

void synth_writer_ctx_free(writer_ctx *x) {
    free(x->t);
    free(x->type);
    free(x->f);
    free(x->out);
    free(x->vals);
    ox_widen_close(x->widen);
}

int synth_fill(void *ud, int i, FILE *f, ox_err *err) { return synth_emit(ud, i, f, err); }

void synth_writer_end(vocab *v, plan *p, writer_ctx *x) {
    synth_writer_ctx_free(x);
    free(p->t);
    synth_vocab_free(v);
}

/* What the GGUF and the HF writers start from: the checked settings, the vocab, the tensor
 * plan and a writer context with room for every tensor. On failure nothing is left allocated. */
int synth_writer_begin(const ox_synth *s, vocab *v, plan *p, writer_ctx *x, ox_err *err) {
    int rc = ox_synth_check(s, err);
    if (rc) return rc;
    *x = (writer_ctx){.s = s};
    if (s->widen && !(x->widen = ox_widen_open(s, err))) return err ? err->code : OX_E_IO;
    if ((rc = synth_build_vocab(s, x->widen, v, err))) {
        ox_widen_close(x->widen);
        return rc;
    }
    *p = (plan){0};
    if ((rc = synth_build_plan(s, p, err))) {
        synth_vocab_free(v);
        ox_widen_close(x->widen);
        return rc;
    }
    x->t = calloc((size_t)p->n, sizeof *x->t);
    x->type = calloc((size_t)p->n, sizeof *x->type);
    if (!x->t || !x->type) {
        synth_writer_end(v, p, x);
        return ox_errf(err, OX_E_NOMEM, "synth: out of memory");
    }
    return 0;
}

int synth_gguf_begin(const ox_synth *s, vocab *v, plan *p, writer_ctx *x, ox_gguf_writer **w, ox_err *err) {
    int rc = synth_writer_begin(s, v, p, x, err);
    if (rc) return rc;
    if (!(*w = ox_gguf_writer_new())) {
        synth_writer_end(v, p, x);
        return ox_errf(err, OX_E_NOMEM, "synth: out of memory");
    }
    return 0;
}

void synth_gguf_end(ox_gguf_writer *w, vocab *v, plan *p, writer_ctx *x) {
    ox_gguf_writer_free(w);
    synth_writer_end(v, p, x);
}
