/* synth_impl.h — what the files of the synthetic-model generator share (not part of its API,
 * synth.h is): the layer shape helpers, the tensor plan, the value writer's context and the
 * vocabulary. One file per section:
 *   synth.c         presets, the check, type names
 *   synth_plan.c    the tensor plan: every tensor with its GGUF and HF names, shape, type, law
 *   synth_values.c  the values: rows keyed by (seed, name, row), encoded over the pool, or read
 *                   from values_dir / the widened source; the writers' common start and end
 *   synth_vocab.c   the vocabulary builder (made-up, trained, or a widened model's)
 *   synth_gguf.c    the GGUF writer (llama.cpp's layout and metadata)
 *   synth_hf.c      the HF checkpoint writer (config.json, tokenizer.json, safetensors shards) */
#ifndef OX_SYNTH_IMPL_H
#define OX_SYNTH_IMPL_H

#include <stdint.h>
#include <stdio.h>
#include "writers/synth.h"
#include "writers/gguf_write.h"
#include "writers/synth_widen.h"

static inline int synth_is_full(const ox_synth *s, int l) { return l % s->swa_period == s->swa_period - 1; }
static inline int synth_is_shared(const ox_synth *s, int l) { return l >= s->layers - s->kv_shared; }
static inline int synth_head_dim(const ox_synth *s, int l) {
    return synth_is_full(s, l) ? s->global_head_dim : s->head_dim;
}
static inline int synth_kv_heads(const ox_synth *s, int l) {
    return s->k_eq_v && synth_is_full(s, l) ? s->global_kv_heads : s->kv_heads;
}
static inline int synth_ffn(const ox_synth *s, int l) {
    return s->ffn * (s->double_wide && synth_is_shared(s, l) ? 2 : 1);
}

static inline uint64_t synth_mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* ---- tensor plan (synth_plan.c) */

enum { K_WEIGHT, K_NORM, K_ROPE, K_EYE }; /* K_EYE: row r is the unit vector e_r */
enum { IN_BOTH, GGUF_ONLY, VISION };      /* VISION: the HF checkpoint (full name in hf) and the mmproj */

typedef struct ptensor {
    char name[64]; /* GGUF name: the key of the values */
    char hf[96];   /* HF name without "model.language_model." */
    int n_dims, kind, where;
    uint64_t ne[3];
    ox_type type; /* GGUF type */
    float mean, sd;
} ptensor;

typedef struct plan {
    ptensor *t;
    int n, cap;
} plan;

/* The vision tower's tensors (synth_vision.c), appended to p (room: synth_vision_plan_size). */
void synth_vision_plan(const ox_synth *s, plan *p);
int synth_vision_plan_size(const ox_synth *s);
/* config.json's "vision_config" member (with its leading comma), nothing without a tower. */
struct ox_strbuf;
void synth_vision_config_json(const ox_synth *s, struct ox_strbuf *b);
/* gemma4_unified's image embedder (synth_unified.c): its plan tensors and vision_config. */
int synth_unified_plan_size(const ox_synth *s);
void synth_unified_plan(const ox_synth *s, plan *p);
void synth_unified_config_json(const ox_synth *s, struct ox_strbuf *b);
/* llama.cpp's mmproj GGUF of that embedder (projector gemma4uv), written by ox_synth_write_mmproj. */
int synth_unified_write_mmproj(const ox_synth *s, const char *path, ox_err *err);
/* The metadata every synthetic mmproj GGUF carries (synth_vision.c): llama.cpp's clip keys for
 * `projector` with the tower's ffn, layers and heads (0 for an encoder-free embedder); nonzero
 * when a key could not be added. */
struct ox_gguf_writer;
int synth_mmproj_header(struct ox_gguf_writer *w, const ox_synth *s, const char *projector, const char *name, int ffn,
                        int layers, int heads);
ptensor *synth_plan_add(plan *p, const char *name, const char *hf, int kind, int nd, uint64_t ne0, uint64_t ne1,
                        uint64_t ne2, float mean, float sd);

/* The plan of s (the drafter's with assistant_of); its tensors in p->t (the caller frees). */
int synth_build_plan(const ox_synth *s, plan *p, ox_err *err);

/* ---- values (synth_values.c) */

typedef struct writer_ctx {
    const ox_synth *s;
    const ptensor **t; /* tensors in write order */
    ox_type *type;     /* their output types */
    float *f;
    uint8_t *out;
    size_t f_cap, out_cap;
    float *vals;     /* the current tensor's values from values_dir or the widened source */
    ox_widen *widen; /* s->widen, open */
} writer_ctx;

/* Tensor x->t[i]'s bytes, generated (or read) and encoded as x->type[i], into fp. */
int synth_emit(writer_ctx *x, int i, FILE *fp, ox_err *err);
/* synth_emit as the writers' fill callback (ud: the writer_ctx). */
int synth_fill(void *ud, int i, FILE *f, ox_err *err);
void synth_writer_ctx_free(writer_ctx *x);

/* ---- vocabulary (synth_vocab.c) */

enum { TOK_NORMAL = 1, TOK_UNKNOWN = 2, TOK_CONTROL = 3, TOK_USER = 4, TOK_UNUSED = 5, TOK_BYTE = 6 };

typedef struct vocab {
    char **tok;
    float *score;
    int32_t *type;
    char **merges;
    int n, n_merges, user_first, byte_first;
    char **set; /* open addressing over tok strings */
    size_t set_cap;
} vocab;

#define SPACE "\xE2\x96\x81" /* U+2581: the space of SentencePiece pieces */

int synth_build_vocab(const ox_synth *s, const ox_widen *widen, vocab *v, ox_err *err);
void synth_vocab_free(vocab *v);

/* ---- both writers (synth_values.c): the checked settings, the vocab, the plan and a writer
 * context with room for every tensor; on failure nothing is left allocated. The GGUF writers
 * (model, mmproj) also get an empty GGUF writer; synth_gguf_end frees all of it. */
int synth_writer_begin(const ox_synth *s, vocab *v, plan *p, writer_ctx *x, ox_err *err);
void synth_writer_end(vocab *v, plan *p, writer_ctx *x);
int synth_gguf_begin(const ox_synth *s, vocab *v, plan *p, writer_ctx *x, ox_gguf_writer **w, ox_err *err);
void synth_gguf_end(ox_gguf_writer *w, vocab *v, plan *p, writer_ctx *x);

#endif
