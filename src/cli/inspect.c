/* inspect.c — `oxinfer inspect FILE...`: the config, the derived per-layer values and the
 * tensor directory (name, type, shape, bytes) with totals. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "host/hostfile.h"
#include "kernels/quant.h"
#include "formats/gguf.h"
#include "formats/safetensors.h"
#include "formats/tensors.h"
#include "vision/vision.h"

static void print_config(const ox_config *c, const char *stored) {
    printf("config:\n");
    printf("  vocab %d  hidden %d  layers %d  heads %d  kv_heads %d  global_kv_heads %d\n", c->vocab, c->hidden,
           c->n_layers, c->n_heads, c->n_kv_heads, c->n_global_kv_heads);
    printf("  head_dim %d  global_head_dim %d  intermediate %d  double_wide %d  sliding_window %d\n", c->head_dim,
           c->global_head_dim, c->intermediate, c->double_wide, c->sliding_window);
    printf("  ple_dim %d  ple_vocab %d  kv_shared %d  k_eq_v %d  moe %d (experts %d, top-k %d, ffn %d)\n", c->ple_dim,
           c->ple_vocab, c->n_kv_shared, c->k_eq_v, c->moe, c->n_experts, c->top_k_experts, c->moe_ffn);
    printf("  rope theta sliding %g full %g  partial_rotary %g  factor %g  rms_eps %g  softcap %g  ctx %d\n",
           c->rope_base_sliding, c->rope_base_full, c->partial_rotary, c->rope_factor, c->rms_eps, c->softcap,
           c->ctx_max);
    printf("  bos %d  pad %d  eos", c->bos_id, c->pad_id);
    for (int i = 0; i < c->n_eos; i++) printf("%s%d", i ? "," : " ", c->eos_ids[i]);
    printf("  bidirectional %d", c->bidirectional);
    if (c->unified) printf("  gemma4_unified (12B)");
    if (stored) printf("  stored quant %s", stored);
    printf("\n\nlayers:\n  %5s %-7s %4s %4s %6s %6s %6s %6s %6s %10s %5s\n", "layer", "type", "hd", "nkv", "k_eq_v",
           "shared", "kv_src", "ffn", "window", "rope_theta", "pairs");
    for (int l = 0; l < c->n_layers; l++) {
        const ox_layer_cfg *y = &c->layers[l];
        printf("  %5d %-7s %4d %4d %6d %6d %6d %6d %6d %10g %5d\n", l, y->full ? "full" : "sliding", y->head_dim,
               y->n_kv_heads, y->k_eq_v, y->shared, y->kv_src, y->ffn, y->window, y->rope_base, y->rope_pairs);
    }
}

/* The vision tower's config when the files hold one (an mmproj GGUF, or an HF multimodal
 * checkpoint's vision_config); its tensors are in the directory below ("v.*", "mm.*"). */
static int print_vision(const ox_model_files *mf) {
    ox_vision_config v;
    ox_err err = {0};
    int rc = ox_vision_config_read(mf, &v, &err);
    if (rc < 0) return fprintf(stderr, "oxinfer inspect: %s\n", err.msg), rc;
    if (rc == 0) return printf("\nvision: none\n"), 0;
    printf("\nvision (%s):\n", ox_files_mmproj(mf) ? "mmproj GGUF" : "config.json vision_config");
    printf("  hidden %d  layers %d  heads %d  kv_heads %d  head_dim %d  ffn %d  eps %g  rope theta %g\n", v.hidden,
           v.n_layers, v.n_heads, v.n_kv_heads, v.head_dim, v.ffn, v.eps, v.rope_theta);
    printf("  patch %d  pooling %d  position table %d  soft tokens per image %d (at most %d patches)  text width %d\n",
           v.patch, v.pool, v.pos_size, v.default_soft_tokens, v.default_soft_tokens * v.pool * v.pool, v.text_hidden);
    printf("  standardize %d  clipped linears %d\n", v.standardize, v.clipped);
    return 0;
}

/* A llama.cpp LoRA adapter GGUF (general.type "adapter") has no model config: its keys and
 * tensor directory, the rank read off the lora_a shapes. 1 if f is one (printed), 0 if not. */
static int inspect_adapter(int f) {
    ox_gguf *g = ox_gguf_open(f, NULL);
    const char *type = NULL, *arch = "?", *kind = "?";
    if (!g || ox_gguf_get_str(g, "general.type", &type, NULL) || strcmp(type, "adapter")) {
        ox_gguf_free(g);
        return 0;
    }
    ox_gguf_get_str(g, "general.architecture", &arch, NULL);
    ox_gguf_get_str(g, "adapter.type", &kind, NULL);
    float alpha = 0;
    int has_alpha = !ox_gguf_get_f32(g, "adapter.lora.alpha", &alpha, NULL);
    uint64_t bytes = 0, rank = 0;
    printf("files: %s\nadapter: %s for %s", ox_gguf_name(g), kind, arch);
    if (has_alpha) printf(", alpha %g", alpha);
    printf("\n\ntensors:\n  %-52s %-5s %-20s %12s\n", "name", "type", "shape (ne)", "bytes");
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const ox_gguf_tensor *t = &g->tensors[i];
        const char *tn = ox_type_name(t->type);
        size_t nl = strlen(t->name);
        if (nl > 7 && !strcmp(t->name + nl - 7, ".lora_a") && t->ne[1] > rank) rank = t->ne[1];
        char shape[48];
        snprintf(shape, sizeof shape, "[%llu, %llu]", (unsigned long long)t->ne[0], (unsigned long long)t->ne[1]);
        printf("  %-52s %-5s %-20s %12llu\n", t->name, tn ? tn : "?", shape, (unsigned long long)t->nbytes);
        bytes += t->nbytes;
    }
    printf("total: %llu tensors, rank %llu, %llu bytes (attach with `run --lora`, or model.setLora)\n",
           (unsigned long long)g->n_tensors, (unsigned long long)rank, (unsigned long long)bytes);
    ox_gguf_free(g);
    return 1;
}

int cli_inspect(int argc, char **argv) {
    cli_files fs = {0};
    int rc = 1;
    ox_model_files *mf = NULL;
    for (int i = 0; i < argc; i++)
        if (cli_files_add("inspect", &fs, argv[i])) goto done;
    if (!fs.n) {
        fprintf(stderr, "usage: oxinfer inspect FILE|DIR...\n");
        goto done;
    }
    if (fs.n == 1 && inspect_adapter(fs.h[0])) {
        rc = 0;
        goto done;
    }
    if (!(mf = cli_files_open("inspect", &fs))) goto done;
    printf("files: %s\n", ox_files_describe(mf));
    print_config(ox_files_config(mf), ox_files_stored_quant(mf));
    if (print_vision(mf)) goto done;
    if (ox_files_mlx(mf))
        printf("MLX quantization: %s (affine; rows repacked to Q4_1 / Q8_A when read)\n", ox_files_mlx(mf));
    printf("\ntensors:\n  %-44s %-5s %-28s %14s\n", "name", "type", "shape (ne)", "bytes");
    uint64_t params = 0, bytes = 0;
    int nt = ox_files_count(mf);
    for (int i = 0; i < nt; i++) {
        const ox_tensor *t = ox_files_tensor(mf, i);
        char shape[64];
        int k = snprintf(shape, sizeof shape, "[");
        for (int d = 0; d < t->n_dims && k < (int)sizeof shape; d++)
            k += snprintf(shape + k, sizeof shape - (size_t)k, "%s%llu", d ? ", " : "", (unsigned long long)t->ne[d]);
        if (k < (int)sizeof shape) snprintf(shape + k, sizeof shape - (size_t)k, "]");
        const char *tn = ox_type_name(t->type);
        printf("  %-44s %-5s %-28s %14llu", t->name, tn ? tn : "?", shape, (unsigned long long)t->nbytes);
        if (t->mlx_bits)
            printf("  MLX %d-bit group %d, %s scales", t->mlx_bits, t->mlx_group,
                   ox_st_dtype_name((ox_st_dtype)t->mlx_dtype));
        printf("\n");
        params += t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
        bytes += t->nbytes;
    }
    printf("total: %d tensors, %llu parameters, %llu bytes (%.2f GiB)\n", nt, (unsigned long long)params,
           (unsigned long long)bytes, (double)bytes / (1 << 30));
    rc = 0;
done:
    ox_files_free(mf);
    cli_files_release(&fs);
    return rc;
}
