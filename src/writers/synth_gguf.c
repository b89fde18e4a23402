/* synth_gguf.c — a synthetic model as a GGUF file: llama.cpp's gemma4 layout and metadata
 * (synth_impl.h). */
#include "writers/synth_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/gguf.h"
#include "writers/gguf_write.h"

static uint32_t file_type_of(ox_type t) { /* llama_ftype */
    switch (t) {
    case OX_F32: return 0;
    case OX_F16: return 1;
    case OX_Q4_0: return 2;
    case OX_Q4_1: return 3;
    case OX_Q8_0: return 7;
    case OX_Q5_0: return 8;
    case OX_Q5_1: return 9;
    case OX_Q2_K: return 10;
    case OX_Q3_K: return 12;
    case OX_Q4_K: return 15;
    case OX_Q5_K: return 17;
    case OX_Q6_K: return 18;
    case OX_BF16: return 32;
    default: return 0;
    }
}

static int put_meta(ox_gguf_writer *w, const ox_synth *s, const vocab *v, float eps) {
    const char *A = s->assistant_of ? "gemma4-assistant." : "gemma4.";
    char k[128];
    int rc = 0, L = s->layers;
#define KEY(x) (snprintf(k, sizeof k, "%s%s", A, x), k)
    rc |= ox_gguf_w_str(w, "general.architecture", s->assistant_of ? "gemma4-assistant" : "gemma4");
    if (s->assistant_of) { /* as llama.cpp's converter writes a drafter: every block is a next-n layer */
        rc |= ox_gguf_w_u32(w, KEY("embedding_length_out"), (uint32_t)s->assistant_of);
        rc |= ox_gguf_w_u32(w, KEY("nextn_predict_layers"), (uint32_t)L);
    }
    rc |= ox_gguf_w_str(w, "general.type", "model");
    char name[96];
    snprintf(name, sizeof name, "%s-gemma4-%dL-%d",
             s->values_dir ? "oxinfer-trained"
             : s->widen    ? "oxinfer-widened"
                           : "synthetic",
             L, s->hidden);
    rc |= ox_gguf_w_str(w, "general.name", name);
    rc |= ox_gguf_w_u32(w, "general.file_type", file_type_of(s->type));
    rc |= ox_gguf_w_u32(w, "general.quantization_version", 2);
    rc |= ox_gguf_w_alignment(w, 32);
    rc |= ox_gguf_w_u32(w, KEY("context_length"), (uint32_t)s->ctx);
    rc |= ox_gguf_w_u32(w, KEY("embedding_length"), (uint32_t)s->hidden);
    rc |= ox_gguf_w_u32(w, KEY("block_count"), (uint32_t)L);
    int32_t ff[512];
    uint32_t kvh[512];
    uint8_t swa[512];
    int ff_same = 1, kv_same = 1;
    for (int l = 0; l < L; l++) {
        ff[l] = synth_ffn(s, l), kvh[l] = (uint32_t)synth_kv_heads(s, l), swa[l] = !synth_is_full(s, l);
        ff_same &= ff[l] == ff[0], kv_same &= kvh[l] == kvh[0];
    }
    rc |= ff_same ? ox_gguf_w_u32(w, KEY("feed_forward_length"), (uint32_t)ff[0])
                  : ox_gguf_w_arr(w, KEY("feed_forward_length"), OX_GGUF_I32, ff, (uint64_t)L);
    rc |= ox_gguf_w_u32(w, KEY("attention.head_count"), (uint32_t)s->heads);
    rc |= kv_same ? ox_gguf_w_u32(w, KEY("attention.head_count_kv"), kvh[0])
                  : ox_gguf_w_arr(w, KEY("attention.head_count_kv"), OX_GGUF_U32, kvh, (uint64_t)L);
    rc |= ox_gguf_w_f32(w, KEY("attention.layer_norm_rms_epsilon"), eps);
    rc |= ox_gguf_w_u32(w, KEY("attention.key_length"), (uint32_t)s->global_head_dim);
    rc |= ox_gguf_w_u32(w, KEY("attention.value_length"), (uint32_t)s->global_head_dim);
    rc |= ox_gguf_w_u32(w, KEY("attention.key_length_swa"), (uint32_t)s->head_dim);
    rc |= ox_gguf_w_u32(w, KEY("attention.value_length_swa"), (uint32_t)s->head_dim);
    rc |= ox_gguf_w_u32(w, KEY("attention.sliding_window"), (uint32_t)s->window);
    rc |= ox_gguf_w_arr(w, KEY("attention.sliding_window_pattern"), OX_GGUF_BOOL, swa, (uint64_t)L);
    rc |= ox_gguf_w_u32(w, KEY("attention.shared_kv_layers"), (uint32_t)s->kv_shared);
    rc |= ox_gguf_w_u32(w, KEY("embedding_length_per_layer_input"), (uint32_t)s->ple);
    rc |= ox_gguf_w_f32(w, KEY("rope.freq_base"), s->rope_base);
    rc |= ox_gguf_w_f32(w, KEY("rope.freq_base_swa"), s->rope_base_swa);
    rc |= ox_gguf_w_u32(w, KEY("rope.dimension_count"), (uint32_t)s->global_head_dim);
    rc |= ox_gguf_w_u32(w, KEY("rope.dimension_count_swa"), (uint32_t)s->head_dim);
    if (s->softcap > 0 && !s->assistant_of) rc |= ox_gguf_w_f32(w, KEY("final_logit_softcapping"), s->softcap);
    if (s->moe) {
        rc |= ox_gguf_w_u32(w, KEY("expert_count"), (uint32_t)s->n_experts);
        rc |= ox_gguf_w_u32(w, KEY("expert_used_count"), (uint32_t)s->top_k);
        rc |= ox_gguf_w_u32(w, KEY("expert_feed_forward_length"), (uint32_t)s->moe_ffn);
    }
#undef KEY
    rc |= ox_gguf_w_str(w, "tokenizer.ggml.model", "gemma4");
    rc |= ox_gguf_w_str(w, "tokenizer.ggml.pre", "gemma4");
    rc |= ox_gguf_w_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)v->tok, (uint64_t)v->n);
    rc |= ox_gguf_w_arr(w, "tokenizer.ggml.scores", OX_GGUF_F32, v->score, (uint64_t)v->n);
    rc |= ox_gguf_w_arr(w, "tokenizer.ggml.token_type", OX_GGUF_I32, v->type, (uint64_t)v->n);
    rc |= ox_gguf_w_arr_str(w, "tokenizer.ggml.merges", (const char *const *)v->merges, (uint64_t)v->n_merges);
    rc |= ox_gguf_w_u32(w, "tokenizer.ggml.bos_token_id", 2);
    rc |= ox_gguf_w_u32(w, "tokenizer.ggml.eos_token_id", 1);
    rc |= ox_gguf_w_u32(w, "tokenizer.ggml.unknown_token_id", 3);
    rc |= ox_gguf_w_u32(w, "tokenizer.ggml.padding_token_id", 0);
    rc |= ox_gguf_w_u32(w, "tokenizer.ggml.mask_token_id", 4);
    rc |= ox_gguf_w_bool(w, "tokenizer.ggml.add_bos_token", 1);
    rc |= ox_gguf_w_bool(w, "tokenizer.ggml.add_space_prefix", 0);
    rc |= ox_gguf_w_u32(w, "synthetic.user_token_first", (uint32_t)v->user_first);
    rc |= ox_gguf_w_u32(w, "synthetic.user_token_count", (uint32_t)(v->n - v->user_first));
    rc |= ox_gguf_w_u32(w, "synthetic.byte_token_first", (uint32_t)v->byte_first);
    rc |= ox_gguf_w_u32(w, "synthetic.seed", s->seed);
    return rc;
}

static int by_name(const void *a, const void *b) {
    return strcmp((*(const ptensor *const *)a)->name, (*(const ptensor *const *)b)->name);
}

int ox_synth_write_gguf(const ox_synth *s, const char *path, ox_err *err) {
    vocab v;
    plan p;
    writer_ctx x;
    ox_gguf_writer *w;
    int rc = synth_gguf_begin(s, &v, &p, &x, &w, err);
    if (rc) return rc;
    if (put_meta(w, s, &v, x.widen ? ox_widen_eps(x.widen) : s->eps)) {
        rc = ox_errf(err, OX_E_NOMEM, "synth: %s: cannot add metadata", path);
        goto done;
    }
    int n = 0;
    for (int i = 0; i < p.n; i++)
        if (p.t[i].where != VISION) x.t[n++] = &p.t[i]; /* the tower goes to the mmproj */
    if (s->by_name) qsort(x.t, (size_t)n, sizeof *x.t, by_name);
    for (int i = 0; i < n; i++) {
        x.type[i] = x.t[i]->type;
        if ((rc = ox_gguf_w_tensor(w, x.t[i]->name, x.t[i]->type, x.t[i]->n_dims, x.t[i]->ne, NULL, err))) goto done;
    }
    rc = ox_gguf_w_write(w, path, synth_fill, &x, err);
done:
    synth_gguf_end(w, &v, &p, &x);
    return rc;
}
