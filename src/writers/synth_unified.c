/* synth_unified.c — the image embedder of a synthetic gemma4_unified (Gemma 4 12B) checkpoint
 * (synth.h: unified with v_hidden > 0 and no tower layers): its tensors in the plan (the
 * released checkpoint's HF names, model.vision_embedder.* and
 * model.embed_vision.embedding_projection.weight; the engine's names as the values' keys) and config.json's
 * vision_config (docs/gemma4.md §6.4), and llama.cpp's mmproj GGUF of it (projector gemma4uv). */
#define _POSIX_C_SOURCE 200809L /* open_memstream */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/json.h"
#include "writers/gguf_write.h"
#include "writers/synth_impl.h"

int synth_unified_plan_size(const ox_synth *s) { return s->unified && s->v_hidden > 0 ? 12 : 0; }

void synth_unified_plan(const ox_synth *s, plan *p) {
    if (!synth_unified_plan_size(s)) return;
    uint64_t side = (uint64_t)s->v_patch * (uint64_t)s->v_pool, K = 3 * side * side, D = (uint64_t)s->v_hidden;
    static const struct {
        const char *g, *h;
        int kind, nd, rows_of; /* rows_of: 0 = K, 1 = D, 2 = the patch matrix, 3 = the table, 4 = projection */
        float mean, sd;
    } t[] = {
        {"v.patch_ln1.weight", "patch_ln1.weight", K_NORM, 1, 0, 1, 0.1f},
        {"v.patch_ln1.bias", "patch_ln1.bias", K_NORM, 1, 0, 0, 0.1f},
        {"v.patch_dense.weight", "patch_dense.weight", K_WEIGHT, 2, 2, 0, 0},
        {"v.patch_dense.bias", "patch_dense.bias", K_NORM, 1, 1, 0, 0.1f},
        {"v.patch_ln2.weight", "patch_ln2.weight", K_NORM, 1, 1, 1, 0.1f},
        {"v.patch_ln2.bias", "patch_ln2.bias", K_NORM, 1, 1, 0, 0.1f},
        {"v.pos_embd_2d.weight", "pos_embedding", K_WEIGHT, 3, 3, 0, 0.5f},
        {"v.patch_ln3.weight", "pos_norm.weight", K_NORM, 1, 1, 1, 0.1f},
        {"v.patch_ln3.bias", "pos_norm.bias", K_NORM, 1, 1, 0, 0.1f},
        {"mm.input_projection.weight", "embedding_projection.weight", K_WEIGHT, 2, 4, 0, 0},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        char h[96]; /* the released checkpoint's names: the projection stays under embed_vision */
        snprintf(h, sizeof h, "model.%s.%s", t[i].rows_of == 4 ? "embed_vision" : "vision_embedder", t[i].h);
        uint64_t ne[3] = {t[i].rows_of ? D : K, 1, 1};
        if (t[i].rows_of == 2) ne[0] = K, ne[1] = D;
        if (t[i].rows_of == 3) ne[1] = 2, ne[2] = (uint64_t)s->v_pos;
        if (t[i].rows_of == 4) ne[1] = (uint64_t)s->hidden;
        ptensor *x = synth_plan_add(p, t[i].g, h, t[i].kind, t[i].nd, ne[0], ne[1], ne[2], t[i].mean,
                                    t[i].sd > 0 ? t[i].sd : s->std);
        x->where = VISION;
    }
}

void synth_unified_config_json(const ox_synth *s, ox_strbuf *b) {
    if (!synth_unified_plan_size(s)) return;
    ox_sb_printf(
        b,
        ",\n  \"vision_config\": {\n    \"model_type\": \"gemma4_unified_vision\", \"patch_size\": %d, "
        "\"pooling_kernel_size\": %d,\n    \"mm_embed_dim\": %d, \"mm_posemb_size\": %d, \"output_proj_dims\": "
        "%d, \"rms_norm_eps\": 1e-06, \"initializer_range\": 0.02\n  }",
        s->v_patch, s->v_pool, s->v_hidden, s->v_pos, s->v_hidden);
}

/* ---- llama.cpp's mmproj (projector gemma4uv), as its converter writes the 12B's embedder ---- */

static const char *const MM_NAME[][2] = {
    {"v.patch_ln1.weight", "v.patch_norm.1.weight"},    {"v.patch_ln1.bias", "v.patch_norm.1.bias"},
    {"v.patch_dense.weight", "v.patch_embd.weight"},    {"v.patch_dense.bias", "v.patch_embd.bias"},
    {"v.patch_ln2.weight", "v.patch_norm.2.weight"},    {"v.patch_ln2.bias", "v.patch_norm.2.bias"},
    {"v.patch_ln3.weight", "v.patch_norm.3.weight"},    {"v.patch_ln3.bias", "v.patch_norm.3.bias"},
    {"v.pos_embd_2d.weight", "v.position_embd.weight"}, {"mm.input_projection.weight", "mm.input_projection.weight"},
};

typedef struct uv_ctx {
    writer_ctx *x;
    int side;
} uv_ctx;

/* The plan's values (the HF layout), reordered as the converter does: the dense columns and
 * LayerNorm 1 from (row, col, channel) to (channel, row, col) pixels, the table from
 * [rows][2][width] to [2][rows][width]. */
static int uv_fill(void *ud, int i, FILE *f, ox_err *err) {
    uv_ctx *m = ud;
    const ptensor *t = m->x->t[i];
    int chw = !strcmp(t->name, "v.patch_dense.weight") || !strcmp(t->name, "v.patch_ln1.weight") ||
              !strcmp(t->name, "v.patch_ln1.bias");
    int table = !strcmp(t->name, "v.pos_embd_2d.weight");
    if (!chw && !table) return synth_emit(m->x, i, f, err);
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    if (!mem) return ox_errf(err, OX_E_NOMEM, "synth: out of memory");
    int rc = synth_emit(m->x, i, mem, err);
    fclose(mem);
    size_t K = (size_t)t->ne[0], rows = (size_t)(t->ne[1] * t->ne[2]), s = (size_t)m->side;
    if (!rc && len != K * rows * sizeof(float)) rc = ox_errf(err, OX_E_IO, "synth: %s: unexpected size", t->name);
    const float *src = (const float *)buf;
    float *out = rc ? NULL : malloc(len ? len : 1);
    if (!rc && !out) rc = ox_errf(err, OX_E_NOMEM, "synth: out of memory");
    for (size_t r = 0; !rc && chw && r < rows; r++)
        for (size_t ch = 0; ch < 3; ch++)
            for (size_t y = 0; y < s; y++)
                for (size_t x = 0; x < s; x++) out[r * K + (ch * s + y) * s + x] = src[r * K + (y * s + x) * 3 + ch];
    size_t S = (size_t)t->ne[2];
    for (size_t r = 0; !rc && table && r < S; r++)
        for (size_t a = 0; a < 2; a++) memcpy(out + (a * S + r) * K, src + (r * 2 + a) * K, K * sizeof(float));
    if (!rc && fwrite(out, 1, len, f) != len) rc = ox_errf(err, OX_E_IO, "synth: write failed");
    free(out);
    free(buf);
    return rc;
}

int synth_unified_write_mmproj(const ox_synth *s, const char *path, ox_err *err) {
    vocab v;
    plan p;
    writer_ctx x;
    ox_gguf_writer *w;
    int rc = synth_gguf_begin(s, &v, &p, &x, &w, err);
    if (rc) return rc;
    uv_ctx m = {&x, s->v_patch * s->v_pool};
    int bad = synth_mmproj_header(w, s, "gemma4uv", "synthetic-gemma4-unified-vision", 0, 0, 0);
    if (bad) rc = ox_errf(err, OX_E_NOMEM, "synth: %s: cannot add metadata", path);
    int n = 0;
    for (int i = 0; !rc && i < p.n; i++) {
        const ptensor *t = &p.t[i];
        const char *gname = NULL;
        for (size_t k = 0; k < sizeof MM_NAME / sizeof MM_NAME[0]; k++)
            if (!strcmp(t->name, MM_NAME[k][0])) gname = MM_NAME[k][1];
        if (t->where != VISION || !gname) continue;
        x.t[n] = t;
        x.type[n] = OX_F32;
        uint64_t ne[3] = {t->ne[0], t->ne[1], t->ne[2]};
        if (t->n_dims == 3) ne[1] = t->ne[2], ne[2] = 2; /* the table: [2][rows][width] */
        rc = ox_gguf_w_tensor(w, gname, OX_F32, t->n_dims, ne, NULL, err);
        n++;
    }
    if (!rc) rc = ox_gguf_w_write(w, path, uv_fill, &m, err);
    synth_gguf_end(w, &v, &p, &x);
    return rc;
}
