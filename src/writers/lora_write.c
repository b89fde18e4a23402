/* lora_write.c — synthetic LoRA adapters (lora_write.h). Adapters are small: every tensor is
 * made in memory, then the file is written in one go. */
#define _POSIX_C_SOURCE 200809L
#include "writers/lora_write.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/json.h"
#include "model/lora.h"
#include "writers/gguf_write.h"
#include "writers/safetensors_write.h"

/* The HF module of each target (model/lora.h order), under model.language_model.layers.N. */
static const char *const hf_module[OX_LORA_N_TARGETS] = {
    "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",     "self_attn.o_proj",     "mlp.gate_proj",
    "mlp.up_proj",      "mlp.down_proj",    "per_layer_input_gate", "per_layer_projection",
};

static uint64_t mix(uint64_t x) { /* splitmix64 */
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

float ox_lora_spec_value(const ox_lora_spec *a, int layer, int target, int is_b, uint64_t i) {
    uint64_t h = mix(mix(mix(((uint64_t)a->seed << 32) | (uint32_t)layer) ^ (uint64_t)(target * 2 + is_b)) ^ i);
    float u = (float)(h >> 40) / (float)(1u << 24) * 2.0f - 1.0f; /* uniform [-1, 1): std 1/sqrt(3) */
    return u * a->std * 1.7320508f;
}

int ox_lora_spec_shape(const ox_config *c, int l, int target, int *out, int *in) {
    const ox_layer_cfg *lc = &c->layers[l];
    int H = c->hidden, q = c->n_heads * lc->head_dim, kv = lc->n_kv_heads * lc->head_dim, I = lc->ffn, P = c->ple_dim;
    int shapes[OX_LORA_N_TARGETS][2] = {{q, H}, {kv, H}, {lc->k_eq_v ? 0 : kv, H}, {H, q}, {I, H}, {I, H}, {H, I},
                                        {P, H}, {H, P}};
    *out = shapes[target][0], *in = shapes[target][1];
    return *out > 0 && *in > 0;
}

/* One tensor's values in the spec's type: rows x cols (A: r x in, B: out x r). */
static void *make(const ox_lora_spec *a, int l, int t, int is_b, int rows, int cols) {
    size_t n = (size_t)rows * cols, es = a->type == OX_F32 ? 4 : 2;
    uint8_t *p = malloc(n * es);
    for (size_t i = 0; p && i < n; i++) {
        float v = ox_lora_spec_value(a, l, t, is_b, i);
        if (a->type == OX_F32) memcpy(p + 4 * i, &v, 4);
        else ((uint16_t *)p)[i] = a->type == OX_F16 ? ox_f32_to_f16(v) : ox_f32_to_bf16(v);
    }
    return p;
}

typedef struct made {
    void *data[2 * OX_LORA_N_TARGETS * 256];
    int n;
} made;

/* Calls emit(ud, l, t, is_b, rows, cols, data) for every tensor of the spec, A before B. */
typedef int (*emit_fn)(void *ud, int l, int t, int is_b, int rows, int cols, const void *data, ox_err *err);

/* gguf: no k/v of KV-shared layers (llama.cpp's Gemma 4 GGUFs lack those weights and refuse an
 * adapter for them); PEFT keeps them, as HF checkpoints have the projections. */
static int each_tensor(const ox_config *c, const ox_lora_spec *a, int gguf, made *mk, emit_fn emit, void *ud,
                       ox_err *err) {
    if (a->rank < 1 || (a->type != OX_F32 && a->type != OX_F16 && a->type != OX_BF16))
        return ox_errf(err, OX_E_RANGE, "lora_write: rank %d / type %d (rank >= 1; F32, F16, BF16)", a->rank,
                       (int)a->type);
    int layers = a->layers > 0 && a->layers < c->n_layers ? a->layers : c->n_layers;
    for (int l = 0; l < layers; l++)
        for (int t = 0; t < OX_LORA_N_TARGETS; t++) {
            int out, in;
            if (!(a->targets >> t & 1) || !ox_lora_spec_shape(c, l, t, &out, &in)) continue;
            if (gguf && c->layers[l].shared && (t == OX_LORA_K || t == OX_LORA_V)) continue;
            for (int is_b = 0; is_b < 2; is_b++) {
                if (mk->n == (int)(sizeof mk->data / sizeof mk->data[0]))
                    return ox_errf(err, OX_E_RANGE, "lora_write: too many tensors");
                void *d = mk->data[mk->n++] = is_b ? make(a, l, t, 1, out, a->rank) : make(a, l, t, 0, a->rank, in);
                if (!d) return ox_errf(err, OX_E_NOMEM, "lora_write: out of memory");
                int rc = emit(ud, l, t, is_b, is_b ? out : a->rank, is_b ? a->rank : in, d, err);
                if (rc) return rc;
            }
        }
    return 0;
}

static void made_free(made *mk) {
    for (int i = 0; i < mk->n; i++) free(mk->data[i]);
}

static int gguf_emit(void *ud, int l, int t, int is_b, int rows, int cols, const void *data, ox_err *err) {
    const ox_lora_spec *a = ((void **)ud)[1];
    char name[128];
    snprintf(name, sizeof name, "blk.%d.%s.lora_%c", l, ox_lora_target_name((ox_lora_target)t), is_b ? 'b' : 'a');
    uint64_t ne[2] = {(uint64_t)cols, (uint64_t)rows};
    return ox_gguf_w_tensor(((void **)ud)[0], name, a->type, 2, ne, data, err);
}

int ox_lora_write_gguf(const ox_config *c, const ox_lora_spec *a, const char *path, ox_err *err) {
    ox_gguf_writer *w = ox_gguf_writer_new();
    made *mk = calloc(1, sizeof *mk);
    if (!w || !mk) {
        ox_gguf_writer_free(w), free(mk);
        return ox_errf(err, OX_E_NOMEM, "lora_write: out of memory");
    }
    ox_gguf_w_str(w, "general.architecture", "gemma4");
    ox_gguf_w_str(w, "general.type", "adapter");
    ox_gguf_w_str(w, "adapter.type", "lora");
    ox_gguf_w_f32(w, "adapter.lora.alpha", a->alpha);
    void *ud[2] = {w, (void *)a};
    int rc = each_tensor(c, a, 1, mk, gguf_emit, ud, err);
    if (!rc) rc = ox_gguf_w_write(w, path, NULL, NULL, err);
    made_free(mk);
    free(mk);
    ox_gguf_writer_free(w);
    return rc;
}

static int st_emit(void *ud, int l, int t, int is_b, int rows, int cols, const void *data, ox_err *err) {
    const ox_lora_spec *a = ((void **)ud)[1];
    char name[160];
    snprintf(name, sizeof name, "base_model.model.model.language_model.layers.%d.%s.lora_%c.weight", l, hf_module[t],
             is_b ? 'B' : 'A');
    uint64_t shape[2] = {(uint64_t)rows, (uint64_t)cols};
    ox_st_dtype dt = a->type == OX_F32 ? OX_ST_F32 : a->type == OX_F16 ? OX_ST_F16 : OX_ST_BF16;
    return ox_st_w_tensor(((void **)ud)[0], name, dt, 2, shape, data, err);
}

static int write_config(const ox_lora_spec *a, const char *dir, ox_err *err) {
    char path[1024];
    snprintf(path, sizeof path, "%s/adapter_config.json", dir);
    FILE *f = fopen(path, "wb");
    if (!f) return ox_errf(err, OX_E_IO, "%s: cannot create", path);
    fprintf(f,
            "{\n  \"peft_type\": \"LORA\",\n  \"r\": %d,\n  \"lora_alpha\": %.9g,\n  \"use_rslora\": %s,\n"
            "  \"lora_dropout\": 0.0,\n  \"bias\": \"none\",\n  \"task_type\": \"CAUSAL_LM\",\n  \"target_modules\": [",
            a->rank, (double)a->alpha, a->rslora ? "true" : "false");
    for (int t = 0, k = 0; t < OX_LORA_N_TARGETS; t++)
        if (a->targets >> t & 1)
            fprintf(f, "%s\"%s\"", k++ ? ", " : "",
                    strrchr(hf_module[t], '.') ? strrchr(hf_module[t], '.') + 1 : hf_module[t]);
    fprintf(f, "]\n}\n");
    return fclose(f) ? ox_errf(err, OX_E_IO, "%s: write failed", path) : 0;
}

int ox_lora_write_peft(const ox_config *c, const ox_lora_spec *a, const char *dir, ox_err *err) {
    int rc = write_config(a, dir, err);
    if (rc) return rc;
    ox_st_writer *w = ox_st_writer_new();
    made *mk = calloc(1, sizeof *mk);
    if (!w || !mk) {
        ox_st_writer_free(w), free(mk);
        return ox_errf(err, OX_E_NOMEM, "lora_write: out of memory");
    }
    char path[1024];
    snprintf(path, sizeof path, "%s/adapter_model.safetensors", dir);
    void *ud[2] = {w, (void *)a};
    rc = each_tensor(c, a, 0, mk, st_emit, ud, err);
    if (!rc) rc = ox_st_w_write(w, path, NULL, NULL, err);
    made_free(mk);
    free(mk);
    ox_st_writer_free(w);
    return rc;
}
