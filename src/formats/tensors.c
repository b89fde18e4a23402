/* tensors.c — see tensors.h.
 *
 * Pre-quantized safetensors (written by `oxinfer quantize`, metadata oxinfer_quant = "q8"|"q4"):
 * a quantized weight NAME with PyTorch shape [..., rows, cols] is stored as two tensors,
 *   NAME         I8 [..., rows, cols]     (Q8_0: the blocks' qs, in order)        or
 *                U8 [..., rows, cols/2]   (Q4_0: the blocks' 16 qs bytes per 32 values, as ggml packs them:
 *                                          low nibble = value j, high nibble = value j+16, offset by 8)
 *   NAME.scales  F16 [..., rows, cols/32] (the blocks' d)
 * Names are already internal (GGUF-style). Rows are presented as OX_Q8_0 / OX_Q4_0 and
 * ox_tensor_read_rows interleaves d and qs back into ggml blocks, byte for byte. */
#include "formats/tensors.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/gguf.h"
#include "host/hostfile.h"
#include "formats/json.h"
#include "formats/mlx.h"
#include "formats/names.h"
#include "formats/safetensors.h"

#define MAX_AUX 32

typedef struct {
    char *base;
    int file;
} aux_file;

struct ox_model_files {
    ox_config cfg;
    ox_tensor *t;
    int n, cap;
    uint32_t *by_name;
    ox_gguf **gguf;
    int n_gguf;
    ox_gguf *mmproj; /* llama.cpp's projector file (general.architecture "clip"): kept apart */
    ox_safetensors **st;
    int n_st;
    aux_file aux[MAX_AUX];
    int n_aux;
    const char *stored_quant; /* points into a safetensors' metadata */
    ox_mlx_config mlx;        /* config.json's quantization block (dflt.bits 0: none) */
    char mlx_what[48];        /* "bits 4, group 64" */
    char what[160];           /* "a.gguf, b.json, ..." for messages */
};

static const char *base_name(const char *p) {
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

static int ends_with(const char *s, const char *suf) {
    size_t n = strlen(s), k = strlen(suf);
    return n >= k && strcmp(s + n - k, suf) == 0;
}

/* ---- HF -> internal names ---- */

static const char *const global_map[][2] = {
    {"embed_tokens.weight", "token_embd.weight"},
    {"norm.weight", "output_norm.weight"},
    {"embed_tokens_per_layer.weight", "per_layer_token_embd.weight"},
    {"per_layer_model_projection.weight", "per_layer_model_proj.weight"},
    {"per_layer_projection_norm.weight", "per_layer_proj_norm.weight"},
    {"lm_head.weight", "output.weight"},
};

static const char *const layer_map[][2] = {
    {"input_layernorm.weight", "attn_norm.weight"},
    {"self_attn.q_proj.weight", "attn_q.weight"},
    {"self_attn.k_proj.weight", "attn_k.weight"},
    {"self_attn.v_proj.weight", "attn_v.weight"},
    {"self_attn.o_proj.weight", "attn_output.weight"},
    {"self_attn.q_norm.weight", "attn_q_norm.weight"},
    {"self_attn.k_norm.weight", "attn_k_norm.weight"},
    {"post_attention_layernorm.weight", "post_attention_norm.weight"},
    {"pre_feedforward_layernorm.weight", "ffn_norm.weight"},
    {"mlp.gate_proj.weight", "ffn_gate.weight"},
    {"mlp.up_proj.weight", "ffn_up.weight"},
    {"mlp.down_proj.weight", "ffn_down.weight"},
    {"post_feedforward_layernorm.weight", "post_ffw_norm.weight"},
    {"layer_scalar", "layer_output_scale.weight"},
    {"per_layer_input_gate.weight", "inp_gate.weight"},
    {"per_layer_projection.weight", "proj.weight"},
    {"post_per_layer_input_norm.weight", "post_norm.weight"},
    {"router.proj.weight", "ffn_gate_inp.weight"},
    {"router.scale", "ffn_gate_inp.scale"},
    {"router.per_expert_scale", "ffn_down_exps.scale"},
    {"experts.gate_up_proj", "ffn_gate_up_exps.weight"},
    {"experts.down_proj", "ffn_down_exps.weight"},
    {"pre_feedforward_layernorm_2.weight", "pre_ffw_norm_2.weight"},
    {"post_feedforward_layernorm_1.weight", "post_ffw_norm_1.weight"},
    {"post_feedforward_layernorm_2.weight", "post_ffw_norm_2.weight"},
};

static const char *const towers[] = {"vision_tower.", "audio_tower.",           "embed_vision.",
                                     "embed_audio.",  "multi_modal_projector.", "vision_embedder."};

int ox_map_hf_name(const char *hf, char *out, size_t cap) {
    const char *n = hf;
    if (strncmp(n, "model.language_model.", 21) == 0) n += 21;
    else if (strncmp(n, "language_model.model.", 21) == 0) n += 21;
    else if (strncmp(n, "model.", 6) == 0) n += 6;
    else if (strncmp(n, "language_model.", 15) == 0) n += 15;
    for (size_t i = 0; i < sizeof towers / sizeof towers[0]; i++)
        if (strncmp(n, towers[i], strlen(towers[i])) == 0) return 1;
    for (size_t i = 0; i < sizeof global_map / sizeof global_map[0]; i++)
        if (strcmp(n, global_map[i][0]) == 0) return snprintf(out, cap, "%s", global_map[i][1]) >= (int)cap ? -1 : 0;
    unsigned layer;
    int used = 0;
    if (sscanf(n, "layers.%u.%n", &layer, &used) == 1 && used > 0) {
        for (size_t i = 0; i < sizeof layer_map / sizeof layer_map[0]; i++)
            if (strcmp(n + used, layer_map[i][0]) == 0)
                return snprintf(out, cap, "blk.%u.%s", layer, layer_map[i][1]) >= (int)cap ? -1 : 0;
    }
    return snprintf(out, cap, "%s", n) >= (int)cap ? -1 : 0; /* internal names (and unknowns) kept */
}

/* ---- directory ---- */

void ox_files_free(ox_model_files *mf) {
    if (!mf) return;
    for (int i = 0; i < mf->n; i++) free(mf->t[i].name);
    for (int i = 0; i < mf->n_gguf; i++) ox_gguf_free(mf->gguf[i]);
    ox_gguf_free(mf->mmproj);
    for (int i = 0; i < mf->n_st; i++) ox_st_free(mf->st[i]);
    for (int i = 0; i < mf->n_aux; i++) free(mf->aux[i].base);
    ox_mlx_config_free(&mf->mlx);
    free(mf->t);
    free(mf->by_name);
    free(mf->gguf);
    free(mf->st);
    free(mf);
}

static ox_tensor *add_tensor(ox_model_files *mf, const char *name, ox_err *err) {
    if (mf->n == mf->cap) {
        int cap = mf->cap ? mf->cap * 2 : 256;
        ox_tensor *t = realloc(mf->t, (size_t)cap * sizeof *t);
        if (!t) return ox_errf(err, OX_E_NOMEM, "out of memory for the tensor directory"), NULL;
        mf->t = t, mf->cap = cap;
    }
    ox_tensor *t = &mf->t[mf->n];
    memset(t, 0, sizeof *t);
    if (!(t->name = strdup(name))) return ox_errf(err, OX_E_NOMEM, "out of memory for the tensor directory"), NULL;
    t->scale_file = t->bias_file = -1;
    mf->n++;
    return t;
}

static int add_gguf_tensors(ox_model_files *mf, const ox_gguf *g, ox_err *err) {
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const ox_gguf_tensor *gt = &g->tensors[i];
        ox_tensor *t = add_tensor(mf, gt->name, err);
        if (!t) return err ? err->code : OX_E_NOMEM;
        t->type = gt->type, t->n_dims = gt->n_dims, t->file = g->file, t->offset = gt->offset, t->nbytes = gt->nbytes;
        memcpy(t->ne, gt->ne, sizeof t->ne);
    }
    return 0;
}

/* PyTorch shape -> ggml ne (reversed); scalars become [1]. */
static int set_shape(ox_tensor *t, const ox_st_tensor *s, const char *fn, ox_err *err) {
    if (s->n_dims > 4)
        return ox_errf(err, OX_E_UNSUPPORTED, "%s: tensor %s has %d dimensions (at most 4)", fn, s->name, s->n_dims);
    t->n_dims = s->n_dims ? s->n_dims : 1;
    for (int d = 0; d < 4; d++) t->ne[d] = 1;
    for (int d = 0; d < s->n_dims; d++) t->ne[d] = s->shape[s->n_dims - 1 - d];
    return 0;
}

/* A quantized pair NAME (+ NAME.scales) -> one Q8_0/Q4_0 tensor. */
static int add_quant_pair(ox_model_files *mf, const ox_safetensors *st, const ox_st_tensor *v, const ox_st_tensor *s,
                          ox_err *err) {
    const char *fn = ox_host_name(st->file);
    int q4 = v->dtype == OX_ST_U8;
    if ((v->dtype != OX_ST_I8 && !q4) || s->dtype != OX_ST_F16 || v->n_dims < 1 || v->n_dims != s->n_dims || v->n_dims > 4)
        return ox_errf(err, OX_E_FORMAT,
                       "%s: quantized tensor %s: values must be I8 (q8) or U8 (q4) and scales F16 of the same rank", fn,
                       v->name);
    int nd = v->n_dims;
    uint64_t cols = v->shape[nd - 1] * (q4 ? 2 : 1);
    int ok = cols % OX_QK == 0 && s->shape[nd - 1] == cols / OX_QK;
    for (int d = 0; d < nd - 1; d++) ok = ok && s->shape[d] == v->shape[d];
    if (!ok)
        return ox_errf(err, OX_E_FORMAT, "%s: quantized tensor %s: scales shape does not match %llu values per row", fn,
                       v->name, (unsigned long long)cols);
    ox_tensor *t = add_tensor(mf, v->name, err);
    if (!t) return err ? err->code : OX_E_NOMEM;
    set_shape(t, v, fn, err);
    t->ne[0] = cols;
    t->type = q4 ? OX_Q4_0 : OX_Q8_0;
    t->file = st->file, t->offset = v->offset;
    t->scale_file = st->file, t->scale_offset = s->offset;
    t->nbytes = v->nbytes + s->nbytes;
    return 0;
}

/* A tensor by its file name in any of the safetensors files (MLX triples may straddle shards). */
static const ox_st_tensor *find_st(const ox_model_files *mf, const char *name, const ox_safetensors **in) {
    for (int k = 0; k < mf->n_st; k++) {
        const ox_st_tensor *t = ox_st_find(mf->st[k], name);
        if (t) return *in = mf->st[k], t;
    }
    return NULL;
}

/* NAME.weight (U32) + NAME.scales + NAME.biases -> one Q4_1 / Q8_A tensor (formats/mlx.h). */
static int add_mlx_triple(ox_model_files *mf, const ox_safetensors *st, const ox_st_tensor *w, const char *internal,
                          ox_err *err) {
    const char *fn = ox_host_name(st->file);
    char module[512], sname[520], bname[520];
    snprintf(module, sizeof module, "%.*s", (int)(strlen(w->name) - 7), w->name);
    snprintf(sname, sizeof sname, "%s.scales", module);
    snprintf(bname, sizeof bname, "%s.biases", module);
    if (!mf->mlx.dflt.bits)
        return ox_errf(err, OX_E_MISSING,
                       "%s: tensor %s is U32 (MLX-quantized) but no config.json with a quantization "
                       "block is among the model files (%s)",
                       fn, w->name, mf->what);
    ox_mlx_q q = ox_mlx_config_for(&mf->mlx, module);
    if (!q.bits)
        return ox_errf(err, OX_E_CONFIG, "%s: tensor %s is MLX-quantized but the config's quantization.%s says it is not",
                       fn, w->name, module);
    const ox_safetensors *ss, *bs;
    const ox_st_tensor *s = find_st(mf, sname, &ss), *b = find_st(mf, bname, &bs);
    if (!s || !b)
        return ox_errf(err, OX_E_MISSING, "%s: MLX tensor %s: %s is missing from the model files (%s)", fn, w->name,
                       s ? bname : sname, mf->what);
    uint64_t cols;
    int rc = ox_mlx_check(fn, w, s, b, q, &cols, err);
    if (rc) return rc;
    ox_tensor *t = add_tensor(mf, internal, err);
    if (!t) return err ? err->code : OX_E_NOMEM;
    if ((rc = set_shape(t, w, fn, err))) return rc;
    t->ne[0] = cols;
    t->type = ox_mlx_type(q.bits);
    t->file = st->file, t->offset = w->offset;
    t->scale_file = ss->file, t->scale_offset = s->offset;
    t->bias_file = bs->file, t->bias_offset = b->offset;
    t->mlx_bits = q.bits, t->mlx_group = q.group, t->mlx_dtype = (int)s->dtype;
    t->nbytes = w->nbytes + s->nbytes + b->nbytes;
    return 0;
}

/* NAME.scales / NAME.biases of an MLX checkpoint: part of NAME.weight's triple. */
static int is_mlx_part(const ox_model_files *mf, const ox_safetensors *st, const ox_st_tensor *s, ox_err *err) {
    if (!ends_with(s->name, ".scales") && !ends_with(s->name, ".biases")) return 0;
    char wname[520];
    const ox_safetensors *ws;
    snprintf(wname, sizeof wname, "%.*s.weight", (int)(strlen(s->name) - 7), s->name);
    const ox_st_tensor *w = find_st(mf, wname, &ws);
    if (w && w->dtype == OX_ST_U32) return 1;
    if (!mf->mlx.dflt.bits) return 0; /* not an MLX checkpoint: an ordinary tensor */
    return ox_errf(err, OX_E_FORMAT, "%s: MLX tensor %s has no U32 values tensor %s", ox_host_name(st->file), s->name,
                   wname);
}

static int add_st_tensors(ox_model_files *mf, const ox_safetensors *st, ox_err *err) {
    const char *fn = ox_host_name(st->file);
    int quant = ox_st_meta(st, "oxinfer_quant") != NULL;
    char name[512], partner[512];
    for (int i = 0; i < st->n_tensors; i++) {
        const ox_st_tensor *s = &st->tensors[i];
        const ox_st_tensor *sc = NULL;
        if (!quant) {
            int part = is_mlx_part(mf, st, s, err);
            if (part < 0) return part;
            if (part) continue; /* added with its .weight */
        }
        if (quant) {
            if (ends_with(s->name, ".scales")) {
                size_t k = strlen(s->name) - 7;
                snprintf(partner, sizeof partner, "%.*s", (int)k, s->name);
                if (!ox_st_find(st, partner))
                    return ox_errf(err, OX_E_FORMAT, "%s: %s has no values tensor %s", fn, s->name, partner);
                continue; /* added with its values */
            }
            snprintf(partner, sizeof partner, "%s.scales", s->name);
            sc = ox_st_find(st, partner);
        }
        if (sc) {
            int rc = add_quant_pair(mf, st, s, sc, err);
            if (rc) return rc;
            continue;
        }
        int m = ox_map_hf_name(s->name, name, sizeof name);
        if (m < 0) return ox_errf(err, OX_E_FORMAT, "%s: tensor name too long: %.60s...", fn, s->name);
        if (m > 0 && ox_map_hf_vision_name(s->name, name, sizeof name) != 0) continue; /* audio, unknown */
        if (!quant && s->dtype == OX_ST_U32 && ends_with(s->name, ".weight")) {
            int rc = add_mlx_triple(mf, st, s, name, err);
            if (rc) return rc;
            continue;
        }
        ox_type type;
        switch (s->dtype) {
        case OX_ST_F32: type = OX_F32; break;
        case OX_ST_F16: type = OX_F16; break;
        case OX_ST_BF16: type = OX_BF16; break;
        default:
            return ox_errf(err, OX_E_UNSUPPORTED, "%s: tensor %s: dtype %s is not a weight type (F32, F16, BF16)", fn,
                           s->name, ox_st_dtype_name(s->dtype));
        }
        ox_tensor *t = add_tensor(mf, name, err);
        if (!t) return err ? err->code : OX_E_NOMEM;
        int rc = set_shape(t, s, fn, err);
        if (rc) return rc;
        t->type = type, t->file = st->file, t->offset = s->offset, t->nbytes = s->nbytes;
    }
    return 0;
}

static int sniff_is_gguf(int f) {
    uint32_t magic;
    return ox_host_size(f) >= 4 && ox_host_read(f, 0, 4, &magic, NULL) == 0 && magic == OX_GGUF_MAGIC;
}

static int sniff_is_safetensors(int f) {
    uint8_t h[9];
    int64_t size = ox_host_size(f);
    if (size < 10 || ox_host_read(f, 0, 9, h, NULL)) return 0;
    uint64_t n;
    memcpy(&n, h, 8);
    return n >= 2 && n <= (uint64_t)size - 8 && h[8] == '{';
}

static int add_aux(ox_model_files *mf, int f, ox_err *err) {
    const char *b = base_name(ox_host_name(f));
    if (ox_files_aux(mf, b) >= 0) return ox_errf(err, OX_E_FORMAT, "%s given twice", b);
    if (mf->n_aux == MAX_AUX) return ox_errf(err, OX_E_RANGE, "too many auxiliary files (at most %d)", MAX_AUX);
    if (!(mf->aux[mf->n_aux].base = strdup(b))) return ox_errf(err, OX_E_NOMEM, "out of memory");
    mf->aux[mf->n_aux++].file = f;
    return 0;
}

/* Parse a small JSON host file. */
static ox_json *load_json(int f, ox_err *err) {
    int64_t size = ox_host_size(f);
    const char *fn = ox_host_name(f);
    if (size < 0 || (uint64_t)size > OX_JSON_MAX_BYTES)
        return ox_errf(err, OX_E_FORMAT, "%s: bad JSON file size", fn), NULL;
    char *text = malloc((size_t)size + 1);
    if (!text) return ox_errf(err, OX_E_NOMEM, "%s: out of memory", fn), NULL;
    ox_json *j = ox_host_read(f, 0, (size_t)size, text, err) ? NULL : ox_json_parse(text, (size_t)size, fn, err);
    free(text);
    return j;
}

static int match_shards(ox_model_files *mf, int index_file, ox_err *err) {
    ox_st_index *ix = ox_st_index_open(index_file, err);
    if (!ix) return err ? err->code : OX_E_FORMAT;
    const char *fn = ox_host_name(index_file);
    int rc = 0;
    for (int s = 0; s < ix->n_shards && !rc; s++) {
        int found = 0;
        for (int k = 0; k < mf->n_st && !found; k++)
            found = strcmp(base_name(ox_host_name(mf->st[k]->file)), ix->shards[s]) == 0;
        if (!found)
            rc = ox_errf(err, OX_E_MISSING, "%s: shard %s named in the weight map is not among the given files", fn,
                         ix->shards[s]);
    }
    for (int i = 0; i < ix->n && !rc; i++) {
        for (int k = 0; k < mf->n_st; k++) {
            const ox_safetensors *st = mf->st[k];
            if (strcmp(base_name(ox_host_name(st->file)), ix->shard[i]) != 0) continue;
            if (!ox_st_find(st, ix->tensor[i]))
                rc = ox_errf(err, OX_E_MISSING, "%s: tensor %s is mapped to %s, which does not contain it", fn,
                             ix->tensor[i], ix->shard[i]);
        }
    }
    ox_st_index_free(ix);
    return rc;
}

static int build_config(ox_model_files *mf, ox_err *err) {
    int cj = ox_files_aux(mf, "config.json"), rc;
    if (cj >= 0) {
        ox_json *j = load_json(cj, err);
        if (!j) return err ? err->code : OX_E_FORMAT;
        rc = ox_config_from_json(j, &mf->cfg, ox_host_name(cj), err);
        ox_json_free(j);
    } else if (mf->n_gguf) {
        rc = ox_config_from_gguf(mf->gguf[0], &mf->cfg, err);
    } else {
        const char *cfg = NULL;
        int k = 0;
        for (; k < mf->n_st && !cfg; k++) cfg = ox_st_meta(mf->st[k], "oxinfer_config");
        if (!cfg)
            return ox_errf(err, OX_E_MISSING, "no config: config.json is not among the model files (%s)", mf->what);
        const char *fn = ox_host_name(mf->st[k - 1]->file);
        ox_json *j = ox_json_parse(cfg, strlen(cfg), fn, err);
        if (!j) return ox_err_prefix(err, "oxinfer_config metadata");
        rc = ox_config_from_json(j, &mf->cfg, fn, err);
        ox_json_free(j);
    }
    if (rc) return rc;
    int gc = ox_files_aux(mf, "generation_config.json");
    if (gc >= 0) {
        ox_json *j = load_json(gc, err);
        if (!j) return err ? err->code : OX_E_FORMAT;
        const ox_json *e = ox_json_get(j, "eos_token_id");
        rc = e && ox_json_type(e) != OX_JSON_NULL && ox_config_add_eos(&mf->cfg, e)
                 ? ox_errf(err, OX_E_CONFIG, "%s: eos_token_id: integer or integer array expected", ox_host_name(gc))
                 : 0;
        ox_json_free(j);
    }
    return rc;
}

/* config.json's MLX quantization block, needed before the safetensors' tensors are added. */
static int read_mlx_config(ox_model_files *mf, ox_err *err) {
    int cj = ox_files_aux(mf, "config.json");
    if (cj < 0) return 0;
    ox_json *j = load_json(cj, err);
    if (!j) return err ? err->code : OX_E_FORMAT;
    int rc = ox_mlx_config_parse(j, ox_host_name(cj), &mf->mlx, err);
    ox_json_free(j);
    if (!rc && mf->mlx.dflt.bits)
        snprintf(mf->mlx_what, sizeof mf->mlx_what, "bits %d, group %d%s", mf->mlx.dflt.bits, mf->mlx.dflt.group,
                 mf->mlx.n ? ", per-module overrides" : "");
    return rc;
}

static int check_splits(ox_model_files *mf, ox_err *err) {
    uint32_t count;
    if (ox_gguf_get_u32(mf->gguf[0], "general.split.count", &count, NULL) != 0) {
        if (mf->n_gguf == 1) return 0;
        return ox_errf(err, OX_E_FORMAT, "%d GGUF files given, but %s is not split (no general.split.count)",
                       mf->n_gguf, ox_gguf_name(mf->gguf[0]));
    }
    if ((int)count != mf->n_gguf)
        return ox_errf(err, OX_E_MISSING, "%s: the model is split into %u GGUF files, %d given",
                       ox_gguf_name(mf->gguf[0]), count, mf->n_gguf);
    /* the split holding the metadata (general.architecture) goes first */
    for (int i = 0; i < mf->n_gguf; i++)
        if (ox_gguf_find(mf->gguf[i], "general.architecture")) {
            ox_gguf *g = mf->gguf[i];
            mf->gguf[i] = mf->gguf[0], mf->gguf[0] = g;
            break;
        }
    return 0;
}

/* llama.cpp's multimodal projector file (the text model's GGUF beside it) */
static int is_mmproj(const ox_gguf *g) {
    const char *arch = NULL;
    return ox_gguf_get_str(g, "general.architecture", &arch, NULL) == 0 && arch && strcmp(arch, "clip") == 0;
}

static int keep_mmproj(ox_model_files *mf, ox_gguf *g, ox_err *err) {
    mf->gguf[mf->n_gguf] = NULL;
    if (mf->mmproj) {
        int rc = ox_errf(err, OX_E_FORMAT, "two mmproj GGUF files given: %s and %s", ox_gguf_name(mf->mmproj),
                         ox_gguf_name(g));
        ox_gguf_free(g);
        return rc;
    }
    mf->mmproj = g;
    return 0;
}

ox_model_files *ox_files_open(const int *files, int n_files, ox_err *err) {
    ox_model_files *mf = calloc(1, sizeof *mf);
    if (!mf || !(mf->gguf = calloc((size_t)n_files + 1, sizeof *mf->gguf)) ||
        !(mf->st = calloc((size_t)n_files + 1, sizeof *mf->st))) {
        ox_files_free(mf);
        return ox_errf(err, OX_E_NOMEM, "out of memory"), NULL;
    }
    size_t wl = 0;
    for (int i = 0; i < n_files; i++) {
        const char *b = base_name(ox_host_name(files[i]));
        if (wl + strlen(b) + 8 < sizeof mf->what)
            wl += (size_t)snprintf(mf->what + wl, sizeof mf->what - wl, "%s%s", i ? ", " : "", b);
        else if (wl + 5 < sizeof mf->what && !strstr(mf->what, "..."))
            wl += (size_t)snprintf(mf->what + wl, sizeof mf->what - wl, ", ...");
    }
    int rc = 0, index_file = -1;
    for (int i = 0; i < n_files && !rc; i++) {
        int f = files[i];
        const char *b = base_name(ox_host_name(f));
        if (ox_host_size(f) < 0) {
            rc = ox_errf(err, OX_E_IO, "unknown host file %d", f);
        } else if (sniff_is_gguf(f) || ends_with(b, ".gguf")) {
            if (!(mf->gguf[mf->n_gguf] = ox_gguf_open(f, err))) rc = err ? err->code : OX_E_FORMAT;
            else if (is_mmproj(mf->gguf[mf->n_gguf])) rc = keep_mmproj(mf, mf->gguf[mf->n_gguf], err);
            else mf->n_gguf++;
        } else if (sniff_is_safetensors(f) || ends_with(b, ".safetensors")) {
            if (!(mf->st[mf->n_st] = ox_st_open(f, err))) rc = err ? err->code : OX_E_FORMAT;
            else mf->n_st++;
        } else if (ends_with(b, ".safetensors.index.json")) {
            if (index_file >= 0) rc = ox_errf(err, OX_E_FORMAT, "two shard index files given (%s)", mf->what);
            index_file = f;
            if (!rc) rc = add_aux(mf, f, err);
        } else {
            rc = add_aux(mf, f, err); /* config.json, tokenizer.json, chat_template.jinja, ... by name */
        }
    }
    if (!rc && !mf->n_gguf && !mf->n_st)
        rc = mf->mmproj ? ox_errf(err, OX_E_MISSING,
                                  "%s is a vision projector (mmproj): give the text model's files beside it (%s)",
                                  ox_gguf_name(mf->mmproj), mf->what)
                        : ox_errf(err, OX_E_MISSING, "no GGUF or safetensors file among the model files (%s)", mf->what);
    if (!rc && mf->n_gguf) rc = check_splits(mf, err);
    if (!rc && index_file >= 0) rc = match_shards(mf, index_file, err);
    for (int i = 0; i < mf->n_gguf && !rc; i++) rc = add_gguf_tensors(mf, mf->gguf[i], err);
    if (!rc && mf->mmproj) rc = add_gguf_tensors(mf, mf->mmproj, err);
    if (!rc && mf->n_st) rc = read_mlx_config(mf, err);
    for (int i = 0; i < mf->n_st && !rc; i++) {
        rc = add_st_tensors(mf, mf->st[i], err);
        const char *q = ox_st_meta(mf->st[i], "oxinfer_quant");
        if (q) mf->stored_quant = q;
    }
    if (!rc && !(mf->by_name = calloc((size_t)mf->n + 1, sizeof *mf->by_name)))
        rc = ox_errf(err, OX_E_NOMEM, "out of memory");
    if (!rc) {
        size_t dup;
        int r = ox_names_sort(mf->t, (size_t)mf->n, sizeof *mf->t, offsetof(ox_tensor, name), mf->by_name, &dup);
        if (r > 0) {
            const ox_tensor *a = &mf->t[dup], *b = a;
            for (int i = 0; i < mf->n && b == a; i++)
                if (i != (int)dup && strcmp(mf->t[i].name, a->name) == 0) b = &mf->t[i];
            rc = ox_errf(err, OX_E_FORMAT, "tensor %s appears twice in the model files: in %s and in %s", a->name,
                         ox_host_name(b->file), ox_host_name(a->file));
        } else if (r < 0) {
            rc = ox_errf(err, OX_E_NOMEM, "out of memory");
        }
    }
    if (!rc) rc = build_config(mf, err);
    if (rc) {
        ox_files_free(mf);
        return NULL;
    }
    return mf;
}

const ox_config *ox_files_config(const ox_model_files *mf) { return &mf->cfg; }
int ox_files_count(const ox_model_files *mf) { return mf->n; }
const ox_tensor *ox_files_tensor(const ox_model_files *mf, int i) { return i >= 0 && i < mf->n ? &mf->t[i] : NULL; }
const struct ox_gguf *ox_files_gguf(const ox_model_files *mf) { return mf->n_gguf ? mf->gguf[0] : NULL; }
const struct ox_gguf *ox_files_mmproj(const ox_model_files *mf) { return mf->mmproj; }
const char *ox_files_stored_quant(const ox_model_files *mf) { return mf->stored_quant; }
const char *ox_files_describe(const ox_model_files *mf) { return mf->what; }
const char *ox_files_mlx(const ox_model_files *mf) { return mf->mlx.dflt.bits ? mf->mlx_what : NULL; }

const ox_tensor *ox_files_find(const ox_model_files *mf, const char *name) {
    long i = ox_names_find(mf->t, (size_t)mf->n, sizeof *mf->t, offsetof(ox_tensor, name), mf->by_name, name);
    return i < 0 ? NULL : &mf->t[i];
}

const ox_tensor *ox_files_require(const ox_model_files *mf, const char *name, ox_err *err) {
    const ox_tensor *t = ox_files_find(mf, name);
    if (!t) ox_errf(err, OX_E_MISSING, "tensor %s is missing from the model files (%s)", name, mf->what);
    return t;
}

int ox_files_aux(const ox_model_files *mf, const char *basename) {
    for (int i = 0; i < mf->n_aux; i++)
        if (strcmp(mf->aux[i].base, basename) == 0) return mf->aux[i].file;
    return -1;
}

/* ---- rows ---- */

uint64_t ox_tensor_rows(const ox_tensor *t) { return t->ne[1] * t->ne[2] * t->ne[3]; }

/* MLX rows: the packed words, scales and biases of the rows, repacked into dst. */
static int read_mlx_rows(const ox_tensor *t, uint64_t row0, uint64_t nrows, void *dst, ox_err *err) {
    ox_mlx_q q = {t->mlx_bits, t->mlx_group};
    size_t es = ox_st_dtype_size((ox_st_dtype)t->mlx_dtype);
    uint64_t wrow = t->ne[0] * (uint64_t)q.bits / 8, grow = t->ne[0] / (uint64_t)q.group * es; /* bytes per row */
    size_t wb, gb, all;
    if (wrow > SIZE_MAX || grow > SIZE_MAX || ox_mul_size((size_t)wrow, (size_t)nrows, &wb) ||
        ox_mul_size((size_t)grow, (size_t)nrows, &gb) || ox_add_size(wb, gb, &all) || ox_add_size(all, gb, &all))
        return ox_errf(err, OX_E_RANGE, "tensor %s: %llu rows do not fit in memory", t->name, (unsigned long long)nrows);
    uint8_t *buf = malloc(all);
    if (!buf) return ox_errf(err, OX_E_NOMEM, "tensor %s: out of memory (%zu bytes)", t->name, all);
    int rc = ox_host_read(t->file, t->offset + row0 * wrow, wb, buf, err);
    if (!rc) rc = ox_host_read(t->scale_file, t->scale_offset + row0 * grow, gb, buf + wb, err);
    if (!rc) rc = ox_host_read(t->bias_file, t->bias_offset + row0 * grow, gb, buf + wb + gb, err);
    if (!rc)
        rc = ox_mlx_repack(q, (ox_st_dtype)t->mlx_dtype, (const uint32_t *)buf, buf + wb, buf + wb + gb, nrows,
                           t->ne[0], dst, t->name, row0, err);
    free(buf);
    return rc;
}

int ox_tensor_read_rows(const ox_tensor *t, uint64_t row0, uint64_t nrows, void *dst, ox_err *err) {
    uint64_t rows = ox_tensor_rows(t), rb;
    if (row0 > rows || nrows > rows - row0)
        return ox_errf(err, OX_E_RANGE, "tensor %s: rows [%llu, %llu) out of range (%llu rows)", t->name,
                       (unsigned long long)row0, (unsigned long long)(row0 + nrows), (unsigned long long)rows);
    if (ox_row_bytes(t->type, t->ne[0], &rb, err)) return ox_err_prefix(err, "tensor %s", t->name);
    size_t total;
    if (nrows > SIZE_MAX || rb > SIZE_MAX || ox_mul_size((size_t)rb, (size_t)nrows, &total))
        return ox_errf(err, OX_E_RANGE, "tensor %s: %llu rows do not fit in memory", t->name, (unsigned long long)nrows);
    if (!nrows) return 0;
    if (t->mlx_bits) return read_mlx_rows(t, row0, nrows, dst, err);
    if (t->scale_file < 0) return ox_host_read(t->file, t->offset + row0 * rb, total, dst, err);

    /* split values + scales: read scales aside, values into the tail of dst, then rebuild
     * the blocks front to back (block k's source lies at or after its destination). */
    size_t bs = ox_type_block_bytes(t->type), qb = bs - sizeof(ox_f16), nb = (size_t)(t->ne[0] / OX_QK) * (size_t)nrows;
    size_t sbytes = nb * sizeof(ox_f16), vbytes = nb * qb;
    ox_f16 *sc = malloc(sbytes);
    if (!sc) return ox_errf(err, OX_E_NOMEM, "tensor %s: out of memory (%zu bytes)", t->name, sbytes);
    uint8_t *d = dst;
    uint64_t row_vals = (uint64_t)(t->ne[0] / OX_QK) * qb, row_scales = (uint64_t)(t->ne[0] / OX_QK) * sizeof(ox_f16);
    int rc = ox_host_read(t->scale_file, t->scale_offset + row0 * row_scales, sbytes, sc, err);
    if (!rc) rc = ox_host_read(t->file, t->offset + row0 * row_vals, vbytes, d + sbytes, err);
    if (!rc)
        for (size_t k = 0; k < nb; k++) {
            memmove(d + k * bs + sizeof(ox_f16), d + sbytes + k * qb, qb);
            memcpy(d + k * bs, &sc[k], sizeof(ox_f16));
        }
    free(sc);
    return rc;
}
