/* synth_widen.c — see synth_widen.h; the construction is described at ox_synth_widen_base
 * (synth.h). */
#include "writers/synth_widen.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/tensors.h"
#include "host/hostfile.h"

struct ox_widen {
    int file;
    ox_model_files *mf;
    const ox_config *c;
    int hidden;   /* D, the widened width */
    float scale;  /* sqrt(d / D) */
    uint8_t *row; /* one source row as stored */
    size_t row_cap;
};

/* the sliding/full pattern of c as a period p (layer l full iff l % p == p - 1), or 0 */
static int swa_period_of(const ox_config *c) {
    for (int p = 1; p <= c->n_layers + 1; p++) {
        int ok = 1;
        for (int l = 0; ok && l < c->n_layers; l++) ok = c->layers[l].full == (l % p == p - 1);
        if (ok) return p;
    }
    return 0;
}

static int open_src(const char *src, int *file, ox_model_files **mf, ox_err *err) {
    *file = ox_host_open_path(src, err);
    if (*file < 0) return err ? err->code : OX_E_IO;
    *mf = ox_files_open(file, 1, err);
    if (!*mf) {
        ox_host_close(*file);
        return err ? err->code : OX_E_FORMAT;
    }
    const ox_config *c = ox_files_config(*mf);
    const char *why = c->ple_dim          ? "per-layer embeddings"
                      : c->moe            ? "experts"
                      : c->n_kv_shared    ? "KV-shared layers"
                      : c->k_eq_v         ? "k_eq_v layers"
                      : c->assistant      ? "a drafter"
                      : !swa_period_of(c) ? "an irregular layer pattern"
                                          : NULL;
    if (!why && !ox_files_gguf(*mf)) why = "no GGUF vocabulary";
    for (int l = 0; !why && l < c->n_layers; l++)
        if (c->layers[l].ffn != c->intermediate) why = "per-layer FFN widths";
    if (why) {
        ox_files_free(*mf);
        ox_host_close(*file);
        return ox_errf(err, OX_E_UNSUPPORTED,
                       "synth: --widen %s: the source has %s (a plain dense gemma4 GGUF is needed)", src, why);
    }
    return 0;
}

int ox_synth_widen_base(ox_synth *s, const char *src, ox_err *err) {
    int file;
    ox_model_files *mf;
    int rc = open_src(src, &file, &mf, err);
    if (rc) return rc;
    const ox_config *c = ox_files_config(mf);
    ox_synth_preset(s, "tiny", NULL); /* the generator's knobs (std, gains, seed) for the extra layers */
    s->hidden = c->hidden, s->layers = c->n_layers, s->heads = c->n_heads, s->kv_heads = c->n_kv_heads;
    s->head_dim = c->head_dim, s->global_head_dim = c->global_head_dim, s->ffn = c->intermediate;
    s->double_wide = 0, s->ple = 0, s->vocab = c->vocab, s->user_tokens = 0, s->swa_period = swa_period_of(c);
    s->kv_shared = 0, s->window = c->sliding_window, s->ctx = c->ctx_max, s->k_eq_v = 0, s->moe = 0;
    s->rope_base = c->rope_base_full, s->rope_base_swa = c->rope_base_sliding, s->partial_rotary = c->partial_rotary;
    s->softcap = c->softcap, s->eps = c->rms_eps, s->chat_tokens = 0, s->assistant_of = 0;
    s->widen = src;
    ox_files_free(mf);
    ox_host_close(file);
    return 0;
}

ox_widen *ox_widen_open(const ox_synth *s, ox_err *err) {
    ox_widen *w = calloc(1, sizeof *w);
    if (!w) {
        ox_errf(err, OX_E_NOMEM, "synth: out of memory");
        return NULL;
    }
    if (open_src(s->widen, &w->file, &w->mf, err)) {
        free(w);
        return NULL;
    }
    w->c = ox_files_config(w->mf);
    const ox_config *c = w->c;
    int same = s->vocab == c->vocab && s->heads == c->n_heads && s->kv_heads == c->n_kv_heads &&
               s->head_dim == c->head_dim && s->global_head_dim == c->global_head_dim &&
               s->window == c->sliding_window && s->swa_period == swa_period_of(c) && !s->ple && !s->kv_shared &&
               !s->k_eq_v && !s->moe && !s->assistant_of;
    if (!same || s->hidden < c->hidden || s->ffn < c->intermediate || s->layers < c->n_layers) {
        ox_errf(
            err, OX_E_CONFIG,
            "synth: --widen %s keeps the source's vocab, attention shapes and layer pattern and takes hidden >= %d, "
            "ffn >= %d, layers >= %d",
            s->widen, c->hidden, c->intermediate, c->n_layers);
        ox_widen_close(w);
        return NULL;
    }
    w->hidden = s->hidden;
    w->scale = sqrtf((float)c->hidden / (float)s->hidden);
    return w;
}

void ox_widen_close(ox_widen *w) {
    if (!w) return;
    ox_files_free(w->mf);
    ox_host_close(w->file);
    free(w->row);
    free(w);
}

const struct ox_gguf *ox_widen_gguf(const ox_widen *w) { return ox_files_gguf(w->mf); }

float ox_widen_eps(const ox_widen *w) { return w->c->rms_eps * (float)w->c->hidden / (float)w->hidden; }

/* RMSNorm weights over the hidden channels (the final norm excepted, see synth.h) */
static int hidden_norm(const char *suffix) {
    return !strcmp(suffix, "attn_norm.weight") || !strcmp(suffix, "post_attention_norm.weight") ||
           !strcmp(suffix, "ffn_norm.weight") || !strcmp(suffix, "post_ffw_norm.weight");
}

int ox_widen_values(ox_widen *w, const char *name, uint64_t ne0, uint64_t rows, float *dst, ox_err *err) {
    int layer = -1, off = 0;
    const char *suffix = name;
    if (sscanf(name, "blk.%d.%n", &layer, &off) == 1 && off > 0) suffix = name + off;
    if (layer >= w->c->n_layers) { /* an extra layer: random but for what silences it */
        int post = !strcmp(suffix, "post_attention_norm.weight") || !strcmp(suffix, "post_ffw_norm.weight");
        if (!post && strcmp(suffix, "layer_output_scale.weight")) return 0;
        for (uint64_t i = 0; i < ne0 * rows; i++) dst[i] = post ? 0.0f : 1.0f;
        return 1;
    }
    const ox_tensor *t = ox_files_require(w->mf, name, err);
    if (!t) return err ? err->code : OX_E_MISSING;
    uint64_t sne0 = t->ne[0], srows = ox_tensor_rows(t), rb;
    if (sne0 > ne0 || srows > rows)
        return ox_errf(err, OX_E_CONFIG, "synth: --widen: %s is %llu x %llu in %s, larger than %llu x %llu", name,
                       (unsigned long long)sne0, (unsigned long long)srows, ox_files_describe(w->mf),
                       (unsigned long long)ne0, (unsigned long long)rows);
    if (ox_row_bytes(t->type, sne0, &rb, err)) return err ? err->code : OX_E_UNSUPPORTED;
    if (rb > w->row_cap) {
        free(w->row);
        w->row = malloc(rb);
        w->row_cap = w->row ? rb : 0;
        if (!w->row) return ox_errf(err, OX_E_NOMEM, "synth: out of memory reading %s", name);
    }
    float scale = !strcmp(name, "token_embd.weight") || hidden_norm(suffix) ? w->scale : 1.0f;
    memset(dst, 0, sizeof *dst * ne0 * rows);
    for (uint64_t r = 0; r < srows; r++) {
        int rc = ox_tensor_read_rows(t, r, 1, w->row, err);
        if (rc) return rc;
        float *d = dst + r * ne0;
        ox_dequantize_row(t->type, w->row, d, (size_t)sne0);
        for (uint64_t i = 0; i < sne0; i++) d[i] *= scale;
    }
    return 1;
}
