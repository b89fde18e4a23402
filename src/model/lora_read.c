/* lora_read.c — an adapter's files (lora.h): a llama.cpp GGUF LoRA, or PEFT's
 * adapter_config.json + adapter_model.safetensors. Both come down to pairs (A, B) per internal
 * weight name; every pair is checked against the model's matrix and read into f32. */
#include "model/lora_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/gguf.h"
#include "formats/json.h"
#include "formats/safetensors.h"
#include "host/hostfile.h"

#define CONFIG_MAX_BYTES (1u << 20) /* adapter_config.json */

/* Where one of a pair's tensors is: ne0 = row length (ggml order), ne1 = rows. */
typedef struct lora_src {
    const char *name; /* as in the file, for messages */
    int file, n_dims;
    ox_type type;
    uint64_t off, nbytes, ne0, ne1;
} lora_src;

typedef struct pair {
    lora_src ab[2];
    int have; /* bit 0: A, bit 1: B */
} pair;

typedef enum { SCALE_GGUF, SCALE_PEFT, SCALE_RSLORA } scale_rule;

typedef struct reader {
    ox_lora *ad;
    pair *p;           /* [layer * OX_LORA_N_TARGETS + target] */
    const char *fname; /* the weights file */
    ox_err *err;
} reader;

/* One tensor of the file: `name` (internal weight name) gets its A (is_b 0) or B. */
static int put(reader *R, const char *name, int is_b, const lora_src *src) {
    int l;
    ox_lora_target t;
    if (ox_lora_target_of(name, &l, &t))
        return ox_errf(R->err, OX_E_UNSUPPORTED,
                       "%s: tensor %s: %s is not a linear LoRA can patch here (attn_q/k/v/output, ffn_gate/up/down, "
                       "inp_gate, proj of a layer)",
                       R->fname, src->name, name);
    if (l >= R->ad->m->c.n_layers)
        return ox_errf(R->err, OX_E_CONFIG, "%s: tensor %s: layer %d, the model has %d", R->fname, src->name, l,
                       R->ad->m->c.n_layers);
    pair *p = &R->p[(size_t)l * OX_LORA_N_TARGETS + t];
    if (p->have & (1 << is_b)) return ox_errf(R->err, OX_E_FORMAT, "%s: tensor %s given twice", R->fname, src->name);
    p->ab[is_b] = *src;
    p->have |= 1 << is_b;
    return 0;
}

/* A tensor's values as f32 (rows of ne0), whatever type the engine reads. */
static int read_f32(const reader *R, const lora_src *s, float *dst) {
    uint64_t rb;
    if (!ox_type_known(s->type) || s->type == OX_Q8_1 || s->type == OX_Q8_K)
        return ox_errf(R->err, OX_E_UNSUPPORTED, "%s: tensor %s: type %d is not a weight type", R->fname, s->name,
                       (int)s->type);
    int rc = ox_row_bytes(s->type, s->ne0, &rb, R->err);
    if (rc) return ox_err_prefix(R->err, "%s: tensor %s", R->fname, s->name), rc;
    if ((s->ne1 && rb > UINT64_MAX / s->ne1) || rb * s->ne1 != s->nbytes || s->nbytes > SIZE_MAX)
        return ox_errf(R->err, OX_E_FORMAT, "%s: tensor %s: %llu bytes for %llu rows of %llu bytes", R->fname, s->name,
                       (unsigned long long)s->nbytes, (unsigned long long)s->ne1, (unsigned long long)rb);
    if (s->type == OX_F32) return ox_host_read(s->file, s->off, (size_t)s->nbytes, dst, R->err);
    uint8_t *stage = malloc((size_t)s->nbytes);
    if (!stage)
        return ox_errf(R->err, OX_E_NOMEM, "%s: out of memory (%llu bytes)", R->fname, (unsigned long long)s->nbytes);
    rc = ox_host_read(s->file, s->off, (size_t)s->nbytes, stage, R->err);
    for (uint64_t i = 0; !rc && i < s->ne1; i++)
        ox_dequantize_row(s->type, stage + i * rb, dst + i * s->ne0, (size_t)s->ne0);
    free(stage);
    return rc;
}

static int fill_module(reader *R, lora_module *md, const pair *p, const ox_matrix *W, scale_rule rule, float alpha,
                       int cfg_r) {
    const lora_src *a = &p->ab[0], *b = &p->ab[1];
    if (a->n_dims != 2 || b->n_dims != 2 || a->ne0 != (uint64_t)W->cols || b->ne1 != (uint64_t)W->rows ||
        a->ne1 != b->ne0 || a->ne1 < 1 || a->ne1 > (uint64_t)W->cols)
        return ox_errf(R->err, OX_E_CONFIG,
                       "%s: tensors %s [%llu x %llu] and %s [%llu x %llu] are not A [r x %d] and B [%d x r] of the "
                       "model's %d x %d weight",
                       R->fname, a->name, (unsigned long long)a->ne1, (unsigned long long)a->ne0, b->name,
                       (unsigned long long)b->ne1, (unsigned long long)b->ne0, W->cols, W->rows, W->rows, W->cols);
    int r = (int)a->ne1;
    if (cfg_r > 0 && r != cfg_r)
        return ox_errf(R->err, OX_E_CONFIG, "%s: tensor %s has rank %d, adapter_config.json says r = %d", R->fname,
                       a->name, r, cfg_r);
    md->r = r, md->in = W->cols, md->out = W->rows;
    md->scale = rule == SCALE_GGUF     ? (alpha != 0.0f ? alpha / (float)r : 1.0f)
                : rule == SCALE_RSLORA ? alpha / sqrtf((float)r)
                                       : alpha / (float)r;
    size_t na, nb, bytes_a, bytes_b; /* r x in can pass 4 GiB of floats: wasm32's size_t */
    if (ox_mul_size((size_t)r, (size_t)md->in, &na) || ox_mul_size((size_t)r, (size_t)md->out, &nb) ||
        ox_mul_size(na, sizeof(float), &bytes_a) || ox_mul_size(nb, sizeof(float), &bytes_b))
        return ox_errf(R->err, OX_E_NOMEM, "%s: %s: rank %d of a %d x %d weight does not fit in memory", R->fname,
                       a->name, r, md->out, md->in);
    md->a = malloc(bytes_a);
    md->bt = malloc(bytes_b);
    float *bm = malloc(bytes_b);
    int rc = 0;
    if (!md->a || !md->bt || !bm) rc = ox_errf(R->err, OX_E_NOMEM, "%s: out of memory for %s", R->fname, a->name);
    if (!rc) rc = read_f32(R, a, md->a);
    if (!rc) rc = read_f32(R, b, bm);
    for (int o = 0; !rc && o < md->out; o++)
        for (int j = 0; j < r; j++) md->bt[(size_t)j * md->out + o] = bm[(size_t)o * r + j];
    free(bm);
    R->ad->bytes += (na + nb) * sizeof(float);
    return rc;
}

/* Every pair complete, checked and read. cfg_r > 0: every module's rank must be it. */
static int finish(reader *R, scale_rule rule, float alpha, int cfg_r) {
    const ox_model *m = R->ad->m;
    for (int l = 0; l < m->c.n_layers; l++)
        for (int t = 0; t < OX_LORA_N_TARGETS; t++) {
            size_t i = (size_t)l * OX_LORA_N_TARGETS + t;
            const pair *p = &R->p[i];
            if (!p->have) continue;
            if (p->have != 3)
                return ox_errf(R->err, OX_E_FORMAT, "%s: tensor %s has no %s", R->fname, p->ab[p->have == 2].name,
                               p->have == 1 ? "B (lora_b / lora_B) to go with it" : "A (lora_a / lora_A) to go with it");
            const ox_matrix *W = ox_lora_base(m, l, (ox_lora_target)t);
            if (!W) {
                R->ad->n_skipped++;
                continue;
            }
            TRY(fill_module(R, &R->ad->mod[i], p, W, rule, alpha, cfg_r));
            R->ad->n_modules++;
            if (R->ad->mod[i].r > R->ad->rank_max) R->ad->rank_max = R->ad->mod[i].r;
        }
    if (!R->ad->n_modules && !R->ad->n_skipped) return ox_errf(R->err, OX_E_FORMAT, "%s: no LoRA tensors", R->fname);
    return 0;
}

static int ends_with(const char *s, const char *suf) {
    size_t n = strlen(s), k = strlen(suf);
    return n >= k && strcmp(s + n - k, suf) == 0;
}

/* ---- llama.cpp GGUF ---- */

static int gguf_str_is(const ox_gguf *g, const char *key, const char *want, int code, ox_err *err) {
    const char *v = NULL;
    if (ox_gguf_get_str(g, key, &v, NULL) || strcmp(v, want))
        return ox_errf(err, code, "%s: %s is %s%s%s, not \"%s\"%s", ox_gguf_name(g), key, v ? "\"" : "", v ? v : "absent",
                       v ? "\"" : "", want, strcmp(key, "general.type") == 0 ? " (a model, not a LoRA adapter?)" : "");
    return 0;
}

static int read_gguf(reader *R, int f) {
    ox_gguf *g = ox_gguf_open(f, R->err);
    if (!g) return R->err->code;
    float alpha = 0;
    int rc = gguf_str_is(g, "general.type", "adapter", OX_E_FORMAT, R->err);
    if (!rc) rc = gguf_str_is(g, "adapter.type", "lora", OX_E_UNSUPPORTED, R->err);
    if (!rc) rc = gguf_str_is(g, "general.architecture", "gemma4", OX_E_UNSUPPORTED, R->err);
    if (!rc && ox_gguf_find(g, "adapter.lora.alpha")) rc = ox_gguf_get_f32(g, "adapter.lora.alpha", &alpha, R->err);
    if (!rc && !isfinite(alpha)) rc = ox_errf(R->err, OX_E_FORMAT, "%s: adapter.lora.alpha is not finite", R->fname);
    char base[OX_GGUF_MAX_NAME + 1];
    for (uint64_t i = 0; !rc && i < g->n_tensors; i++) {
        const ox_gguf_tensor *gt = &g->tensors[i];
        int is_b = ends_with(gt->name, ".lora_b");
        if (!is_b && !ends_with(gt->name, ".lora_a")) {
            rc = ox_errf(R->err, OX_E_FORMAT, "%s: tensor %s is not a LoRA tensor (<weight>.lora_a / .lora_b)",
                         R->fname, gt->name);
            break;
        }
        snprintf(base, sizeof base, "%.*s", (int)(strlen(gt->name) - 7), gt->name);
        lora_src s = {gt->name, f, gt->n_dims, gt->type, gt->offset, gt->nbytes, gt->ne[0], gt->ne[1]};
        rc = put(R, base, is_b, &s);
    }
    if (!rc) rc = finish(R, SCALE_GGUF, alpha, 0);
    ox_gguf_free(g);
    return rc;
}

/* ---- PEFT ---- */

static ox_json *read_json(int f, ox_err *err) {
    int64_t size = ox_host_size(f);
    if (size < 0 || size > CONFIG_MAX_BYTES)
        return ox_errf(err, OX_E_FORMAT, "%s: %lld bytes is not an adapter config", ox_host_name(f), (long long)size),
               NULL;
    char *text = malloc((size_t)size + 1);
    if (!text) return ox_errf(err, OX_E_NOMEM, "%s: out of memory", ox_host_name(f)), NULL;
    ox_json *j =
        ox_host_read(f, 0, (size_t)size, text, err) ? NULL : ox_json_parse(text, (size_t)size, ox_host_name(f), err);
    free(text);
    return j;
}

/* The LoRA settings of adapter_config.json. */
typedef struct peft_cfg {
    int r;
    float alpha;
    int rslora;
    int rank_pattern;
} peft_cfg;

static int is_set(const ox_json *v) { /* a feature turned on: true, or a non-empty object */
    return ox_json_bool(v, 0) || (ox_json_type(v) == OX_JSON_OBJECT && ox_json_len(v) > 0);
}

static int parse_config(int f, peft_cfg *pc, ox_err *err) {
    const char *fn = ox_host_name(f);
    ox_json *j = read_json(f, err);
    if (!j) return err->code;
    int64_t r = 0;
    const ox_json *alpha = ox_json_get(j, "lora_alpha"), *type = ox_json_get(j, "peft_type");
    int rc = 0;
    if (type && (!ox_json_str(type) || strcmp(ox_json_str(type), "LORA")))
        rc = ox_errf(err, OX_E_UNSUPPORTED, "%s: peft_type is not \"LORA\"", fn);
    else if (!ox_json_int(ox_json_get(j, "r"), &r) || r < 1 || r > 1 << 16)
        rc = ox_errf(err, OX_E_FORMAT, "%s: r must be an integer >= 1", fn);
    else if (ox_json_type(alpha) != OX_JSON_NUMBER)
        rc = ox_errf(err, OX_E_FORMAT, "%s: lora_alpha must be a number", fn);
    else if (is_set(ox_json_get(j, "use_dora")))
        rc = ox_errf(err, OX_E_UNSUPPORTED, "%s: use_dora: DoRA adapters are not supported", fn);
    else if (is_set(ox_json_get(j, "fan_in_fan_out")))
        rc = ox_errf(err, OX_E_UNSUPPORTED, "%s: fan_in_fan_out (Conv1D weights) is not supported", fn);
    else if (is_set(ox_json_get(j, "alpha_pattern")))
        rc = ox_errf(err, OX_E_UNSUPPORTED, "%s: alpha_pattern (per-module alphas) is not supported", fn);
    pc->r = (int)r;
    pc->alpha = (float)ox_json_num(alpha, 0);
    pc->rslora = ox_json_bool(ox_json_get(j, "use_rslora"), 0);
    pc->rank_pattern = is_set(ox_json_get(j, "rank_pattern"));
    ox_json_free(j);
    return rc;
}

static const char *const peft_prefix = "base_model.model.";

static int read_peft(reader *R, int cfg_file, int st_file) {
    peft_cfg pc = {0};
    TRY(parse_config(cfg_file, &pc, R->err));
    ox_safetensors *st = ox_st_open(st_file, R->err);
    if (!st) return R->err->code;
    static const char *const sfx[2] = {".lora_A.weight", ".lora_B.weight"};
    int rc = 0;
    char hf[1024], name[1024];
    for (int i = 0; !rc && i < st->n_tensors; i++) {
        const ox_st_tensor *s = &st->tensors[i];
        const char *n = strncmp(s->name, peft_prefix, strlen(peft_prefix)) ? s->name : s->name + strlen(peft_prefix);
        int is_b = ends_with(n, sfx[1]);
        if (!is_b && !ends_with(n, sfx[0])) {
            rc = ox_errf(R->err, strstr(n, "lora_") ? OX_E_UNSUPPORTED : OX_E_FORMAT,
                         "%s: tensor %s is not a LoRA A/B weight (<module>.lora_A.weight / .lora_B.weight)", R->fname,
                         s->name);
            break;
        }
        int mapped = snprintf(hf, sizeof hf, "%.*s.weight", (int)(strlen(n) - strlen(sfx[0])), n) >= (int)sizeof hf
                         ? -1
                         : ox_map_hf_name(hf, name, sizeof name);
        if (mapped < 0) {
            rc = ox_errf(R->err, OX_E_FORMAT, "%s: tensor name too long: %.60s...", R->fname, s->name);
            break;
        }
        if (mapped == 1) continue; /* vision/audio towers: not in a text model */
        ox_type type = s->dtype == OX_ST_F32    ? OX_F32
                       : s->dtype == OX_ST_F16  ? OX_F16
                       : s->dtype == OX_ST_BF16 ? OX_BF16
                                                : -1;
        if ((int)type < 0) {
            rc = ox_errf(R->err, OX_E_UNSUPPORTED, "%s: tensor %s: dtype %s (LoRA weights: F32, F16, BF16)", R->fname,
                         s->name, ox_st_dtype_name(s->dtype));
            break;
        }
        lora_src src = {s->name,
                        st_file,
                        s->n_dims,
                        type,
                        s->offset,
                        s->nbytes,
                        s->n_dims == 2 ? s->shape[1] : 0,
                        s->n_dims == 2 ? s->shape[0] : 0};
        rc = put(R, name, is_b, &src);
    }
    if (!rc) rc = finish(R, pc.rslora ? SCALE_RSLORA : SCALE_PEFT, pc.alpha, pc.rank_pattern ? 0 : pc.r);
    ox_st_free(st);
    return rc;
}

/* ---- the entry ---- */

static int is_gguf(int f) {
    uint32_t magic;
    return ox_host_size(f) >= 4 && ox_host_read(f, 0, 4, &magic, NULL) == 0 && magic == OX_GGUF_MAGIC;
}

ox_lora *ox_lora_load(const ox_model *m, const int *files, int n_files, ox_err *err) {
    ox_err local;
    if (!err) err = &local; /* the readers return err->code */
    int gguf = -1, cfg = -1, st = -1;
    for (int i = 0; i < n_files && i < 2; i++) {
        int f = files[i];
        int *slot = is_gguf(f) ? &gguf : ends_with(ox_host_name(f), ".json") ? &cfg : &st;
        if (*slot < 0) *slot = f;
    }
    int ok = n_files == 1 ? gguf >= 0 : n_files == 2 && cfg >= 0 && st >= 0;
    if (!ok) {
        ox_errf(err, OX_E_FORMAT,
                "LoRA adapter %s%s: expected one GGUF adapter, or adapter_config.json and "
                "adapter_model.safetensors (%d files given)",
                n_files > 0 ? ox_host_name(files[0]) : "", n_files > 1 ? ", ..." : "", n_files);
        return NULL;
    }
    size_t slots = (size_t)m->c.n_layers * OX_LORA_N_TARGETS;
    reader R = {calloc(1, sizeof(ox_lora)), calloc(slots, sizeof(pair)), ox_host_name(gguf >= 0 ? gguf : st), err};
    if (R.ad) R.ad->m = m, R.ad->mod = calloc(slots, sizeof(lora_module));
    int rc = !R.ad || !R.p || !R.ad->mod ? ox_errf(err, OX_E_NOMEM, "%s: out of memory", R.fname)
             : gguf >= 0                 ? read_gguf(&R, gguf)
                                         : read_peft(&R, cfg, st);
    free(R.p);
    if (rc) {
        ox_lora_free(R.ad);
        return NULL;
    }
    return R.ad;
}
