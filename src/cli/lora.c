/* lora.c — `oxinfer lora MODEL... -o OUT`: write a synthetic LoRA adapter shaped for a model
 * (GGUF, or a PEFT directory with --format peft); and attaching adapters for `oxinfer run
 * --lora FILE[,FILE] --lora-scale S` (docs/lora.md). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "engine/engine.h"
#include "model/lora.h"
#include "writers/lora_write.h"

static int usage(void) {
    fprintf(stderr,
            "usage: oxinfer lora MODEL... [--format gguf|peft] [--rank 16] [--alpha 32] [--rslora] [--std 0.02]\n"
            "                   [--seed 1] [--type f32|f16|bf16] [--targets q,k,v,o,gate,up,down,ple_gate,ple_proj]\n"
            "                   [--layers N] -o OUT\n"
            "  a random adapter for the model's shapes (OUT: a .gguf file, or a directory for peft)\n");
    return 2;
}

static const char *const target_flags[OX_LORA_N_TARGETS] = {"q",  "k",    "v",        "o",       "gate",
                                                            "up", "down", "ple_gate", "ple_proj"};

static int parse_targets(const char *s, unsigned *out) {
    *out = 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int k = 0;
        while (k < OX_LORA_N_TARGETS && strcmp(t, target_flags[k])) k++;
        if (k == OX_LORA_N_TARGETS) return -1;
        *out |= 1u << k;
    }
    return *out ? 0 : -1;
}

int cli_lora(int argc, char **argv) {
    cli_files fs = {0};
    const char *out = NULL, *format = "gguf", *type = "f32";
    ox_lora_spec sp = {.rank = 16, .alpha = 32, .std = 0.02f, .seed = 1, .targets = OX_LORA_ALL_TARGETS};
    ox_err err = {0};
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if ((!strcmp(a, "-o") || !strcmp(a, "--out")) && v) out = v, i++;
        else if (!strcmp(a, "--format") && v) format = v, i++;
        else if (!strcmp(a, "--type") && v) type = v, i++;
        else if (!strcmp(a, "--rank") && v) sp.rank = atoi(v), i++;
        else if (!strcmp(a, "--alpha") && v) sp.alpha = strtof(v, NULL), i++;
        else if (!strcmp(a, "--std") && v) sp.std = strtof(v, NULL), i++;
        else if (!strcmp(a, "--seed") && v) sp.seed = (uint32_t)strtoul(v, NULL, 10), i++;
        else if (!strcmp(a, "--layers") && v) sp.layers = atoi(v), i++;
        else if (!strcmp(a, "--rslora")) sp.rslora = 1;
        else if (!strcmp(a, "--targets") && v) {
            if (parse_targets(v, &sp.targets)) return usage();
            i++;
        } else if (a[0] == '-') return cli_files_release(&fs), usage();
        else if (cli_files_add("oxinfer lora", &fs, a)) return cli_files_release(&fs), 1;
    }
    int t = !strcmp(type, "f32") ? OX_F32 : !strcmp(type, "f16") ? OX_F16 : !strcmp(type, "bf16") ? OX_BF16 : -1;
    int peft = !strcmp(format, "peft");
    if (!fs.n || !out || t < 0 || (!peft && strcmp(format, "gguf"))) return cli_files_release(&fs), usage();
    sp.type = (ox_type)t;
    ox_model_files *mf = cli_files_open("oxinfer lora", &fs);
    if (!mf) return cli_files_release(&fs), 1;
    if (peft) mkdir(out, 0777);
    int rc = peft ? ox_lora_write_peft(ox_files_config(mf), &sp, out, &err)
                  : ox_lora_write_gguf(ox_files_config(mf), &sp, out, &err);
    if (rc) fprintf(stderr, "oxinfer lora: %s: %s\n", ox_err_code_name(err.code), err.msg);
    else printf("wrote %s: rank %d, alpha %g, %s\n", out, sp.rank, (double)sp.alpha, peft ? "PEFT" : "GGUF");
    ox_files_free(mf);
    cli_files_release(&fs);
    return rc ? 1 : 0;
}

int cli_lora_attach(ox_engine *e, char *const *specs, const float *scales, int n) {
    cli_files fs = {0};
    int counts[OX_LORA_MAX] = {0}, rc = 0;
    for (int k = 0; k < n && !rc; k++) {
        char buf[4096];
        int before = fs.n;
        snprintf(buf, sizeof buf, "%s", specs[k]);
        for (char *save = NULL, *p = strtok_r(buf, ",", &save); p && !rc; p = strtok_r(NULL, ",", &save))
            rc = cli_files_add("oxinfer run: lora", &fs, p);
        counts[k] = fs.n - before;
    }
    ox_err err = {0};
    int modules = rc ? 0 : ox_engine_set_lora(e, fs.h, counts, scales, n, &err);
    if (modules < 0) fprintf(stderr, "oxinfer run: %s: %s\n", ox_err_code_name(err.code), err.msg), rc = 1;
    else if (n) fprintf(stderr, "lora: %d adapters, %d modules\n", n, modules);
    cli_files_release(&fs);
    return rc;
}
