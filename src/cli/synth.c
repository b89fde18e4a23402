/* synth.c — `oxinfer synth --preset P --type T ... -o OUT`: write a synthetic Gemma 4 model
 * (GGUF file, or an HF checkpoint directory with --format hf). */
#define _POSIX_C_SOURCE 200809L
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "kernels/pool.h"
#include "writers/synth.h"

static int usage(void) {
    fprintf(stderr,
            "usage: oxinfer synth --preset tiny|benchlike|bench|e2b|moe|keqv|unified [--type T] [--embd-type T] "
            "[--ple-type T]\n"
            "                     [--format gguf|hf|mmproj] [--shards N] [--seed S] [--std x] [--branch-gain g]\n"
            "                     [--qk-norm-scale s] [--threads N] [shape overrides] -o OUT\n"
            "  types: f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q2_k q3_k q4_k q5_k q6_k (hf: f32 or bf16)\n"
            "  shapes: --hidden --layers --heads --kv-heads --head-dim --global-head-dim --ffn\n"
            "          --no-double-wide --ple --vocab --user-tokens --swa-period --kv-shared --window --ctx\n"
            "          --k-eq-v N (global KV heads) --experts E --top-k K --moe-ffn I --rope-base\n"
            "          --rope-base-swa --partial-rotary --softcap --eps --all-byte-tokens --chat-tokens\n"
            "  --bf16-values  round every value to bf16 first (GGUF twin of a bf16 HF checkpoint)\n"
            "  --unified      HF: write a gemma4_unified (Gemma 4 12B) config.json (preset unified sets it);\n"
            "                 with --v-hidden W (and --v-pos, --v-patch, --v-pool) also its image embedder\n"
            "  --values DIR   trained weights (DIR/<tensor>.f32) instead of random ones\n"
            "  --vocab-file F a trained vocab (see src/writers/synth_vocab.c, read_vocab) instead of the made-up one\n"
            "  --assistant-of H  a gemma4-assistant MTP drafter for a target of hidden size H (--ple 0\n"
            "                 --kv-shared 0); --agree: its pre-projection passes the token embedding through\n"
            "  --widen SRC    SRC's trained weights (a dense gemma4 GGUF without PLE or KV sharing), its shapes\n"
            "                 and vocab, widened by --hidden/--ffn/--layers without changing its outputs\n"
            "                 (extra layers add nothing): a bench model as slow per token as a real one\n"
            "  --vision none|tiny|e2b  a Gemma 4 vision tower: in the HF checkpoint, or alone as llama.cpp's\n"
            "                 mmproj GGUF (--format mmproj; the text model's GGUF is written without it);\n"
            "                 shapes --v-hidden --v-layers --v-heads --v-head-dim --v-ffn --v-patch --v-pool\n"
            "                 --v-pos, --v-standardize (std_bias/std_scale), --v-clipped (clamped linears)\n");
    return 2;
}

int cli_synth(int argc, char **argv) {
    const char *preset = "tiny", *out = NULL, *format = "gguf", *type = "f32", *embd = NULL, *ple = NULL;
    int shards = 1;
    long threads = sysconf(_SC_NPROCESSORS_ONLN);
    ox_err err = {0};
    for (int i = 0; i < argc; i++)
        if (!strcmp(argv[i], "--preset") && i + 1 < argc) preset = argv[i + 1];
    ox_synth s;
    if (ox_synth_preset(&s, preset, &err)) {
        fprintf(stderr, "oxinfer synth: %s\n", err.msg);
        return 2;
    }
    for (int i = 0; i + 1 < argc; i++) /* the vision preset before the --v-* overrides */
        if (!strcmp(argv[i], "--vision") && ox_synth_vision_preset(&s, argv[i + 1], &err)) {
            fprintf(stderr, "oxinfer synth: %s\n", err.msg);
            return 2;
        }
    for (int i = 0; i + 1 < argc; i++) /* the source's shapes first: the flags below widen them */
        if (!strcmp(argv[i], "--widen") && ox_synth_widen_base(&s, argv[i + 1], &err)) {
            fprintf(stderr, "oxinfer synth: %s: %s\n", ox_err_code_name(err.code), err.msg);
            return 1;
        }
    static const struct {
        const char *flag;
        size_t off;
    } ints[] = {
#define I(f, m) {f, offsetof(ox_synth, m)}
        I("--hidden", hidden),
        I("--layers", layers),
        I("--heads", heads),
        I("--kv-heads", kv_heads),
        I("--head-dim", head_dim),
        I("--global-head-dim", global_head_dim),
        I("--ffn", ffn),
        I("--ple", ple),
        I("--vocab", vocab),
        I("--user-tokens", user_tokens),
        I("--swa-period", swa_period),
        I("--kv-shared", kv_shared),
        I("--window", window),
        I("--ctx", ctx),
        I("--experts", n_experts),
        I("--top-k", top_k),
        I("--moe-ffn", moe_ffn),
        I("--v-hidden", v_hidden),
        I("--v-layers", v_layers),
        I("--v-heads", v_heads),
        I("--v-head-dim", v_head_dim),
        I("--v-ffn", v_ffn),
        I("--v-patch", v_patch),
        I("--v-pool", v_pool),
        I("--v-pos", v_pos),
#undef I
    };
    static const struct {
        const char *flag;
        size_t off;
    } floats[] = {
#define F(f, m) {f, offsetof(ox_synth, m)}
        F("--std", std),
        F("--branch-gain", branch_gain),
        F("--qk-norm-scale", qk_norm_scale),
        F("--rope-base", rope_base),
        F("--rope-base-swa", rope_base_swa),
        F("--partial-rotary", partial_rotary),
        F("--softcap", softcap),
        F("--eps", eps),
#undef F
    };
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int done = 0;
        for (size_t k = 0; !done && v && k < sizeof ints / sizeof ints[0]; k++)
            if (!strcmp(a, ints[k].flag)) *(int *)((char *)&s + ints[k].off) = atoi(v), done = 1, i++;
        for (size_t k = 0; !done && v && k < sizeof floats / sizeof floats[0]; k++)
            if (!strcmp(a, floats[k].flag)) *(float *)((char *)&s + floats[k].off) = strtof(v, NULL), done = 1, i++;
        if (done) continue;
        if (!strcmp(a, "--preset") && v) i++;
        else if (!strcmp(a, "--type") && v) type = v, i++;
        else if (!strcmp(a, "--embd-type") && v) embd = v, i++;
        else if (!strcmp(a, "--ple-type") && v) ple = v, i++;
        else if (!strcmp(a, "--bf16-values")) s.bf16_values = 1;
        else if (!strcmp(a, "--unified")) s.unified = 1;
        else if (!strcmp(a, "--values") && v) s.values_dir = v, i++;
        else if (!strcmp(a, "--vocab-file") && v) s.vocab_path = v, i++;
        else if (!strcmp(a, "--format") && v) format = v, i++;
        else if (!strcmp(a, "--shards") && v) shards = atoi(v), i++;
        else if (!strcmp(a, "--seed") && v) s.seed = (uint32_t)strtoul(v, NULL, 10), i++;
        else if (!strcmp(a, "--threads") && v) threads = atol(v), i++;
        else if (!strcmp(a, "--k-eq-v") && v) s.k_eq_v = 1, s.global_kv_heads = atoi(v), i++;
        else if (!strcmp(a, "--no-double-wide")) s.double_wide = 0;
        else if (!strcmp(a, "--all-byte-tokens")) s.all_byte_tokens = 1;
        else if (!strcmp(a, "--chat-tokens")) s.chat_tokens = 1;
        else if (!strcmp(a, "--assistant-of") && v) s.assistant_of = atoi(v), i++;
        else if (!strcmp(a, "--agree")) s.agree = 1;
        else if (!strcmp(a, "--widen") && v) i++;
        else if (!strcmp(a, "--vision") && v) i++;
        else if (!strcmp(a, "--v-standardize")) s.v_standardize = 1;
        else if (!strcmp(a, "--v-clipped")) s.v_clipped = 1;
        else if ((!strcmp(a, "-o") || !strcmp(a, "--out")) && v) out = v, i++;
        else return usage();
    }
    if (s.n_experts > 0) s.moe = 1;
    int t = ox_synth_type_from_name(type), te = embd ? ox_synth_type_from_name(embd) : t;
    int tp = ple ? ox_synth_type_from_name(ple) : te;
    if (!out || t < 0 || te < 0 || tp < 0 || shards < 1 || threads < 1) return usage();
    s.type = s.ple_proj_type = (ox_type)t, s.embd_type = (ox_type)te, s.ple_type = (ox_type)tp;
    if (ox_pool_init((int)threads, &err)) {
        fprintf(stderr, "oxinfer synth: %s\n", err.msg);
        return 1;
    }
    int rc;
    if (!strcmp(format, "gguf")) {
        rc = ox_synth_write_gguf(&s, out, &err);
    } else if (!strcmp(format, "mmproj")) {
        rc = ox_synth_write_mmproj(&s, out, &err);
    } else if (!strcmp(format, "hf")) {
        if (s.type != OX_F32 && s.type != OX_BF16) {
            fprintf(stderr, "oxinfer synth: --format hf takes --type f32 or bf16\n");
            return 2;
        }
        mkdir(out, 0777);
        rc = ox_synth_write_hf(&s, out, s.type, shards, &err);
    } else {
        return usage();
    }
    if (rc) {
        fprintf(stderr, "oxinfer synth: %s: %s\n", ox_err_code_name(err.code), err.msg);
        return 1;
    }
    printf("wrote %s: preset %s, %s, %.2f M params, %d layers (", out, preset, type, ox_synth_params(&s) / 1e6, s.layers);
    for (int l = 0; l < s.layers; l++)
        printf("%s%c%s", l ? " " : "", l % s.swa_period == s.swa_period - 1 ? 'F' : 'S',
               l >= s.layers - s.kv_shared ? "*" : "");
    printf(")\n");
    return 0;
}
