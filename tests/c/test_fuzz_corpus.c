/* test_fuzz_corpus.c — the fuzz harnesses (tests/fuzz/fuzz_*.c) run where the product runs:
 * tests/c/run_wasm.sh builds this as wasm32 (the npm suite wasm-c; tools/fuzz.sh's libFuzzer
 * runs are native 64-bit builds). It writes the seed corpus with the fuzzers' own generator
 * (tests/fuzz/make_corpus.c), then feeds every harness its seeds, deterministic mutants of each
 * seed (cuts, byte flips, bytes set to 00 / FF / 7F, a length field's neighbours), and every
 * committed regression input (tests/fuzz/regressions/<target>/). A harness aborts on a finding
 * (a crash, a bad error report, a broken invariant); the test counts the inputs it ran. */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"

#define main make_corpus_main
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wformat-truncation" /* the generator's paths, long buffers */
#endif
#include "../fuzz/make_corpus.c"
#undef main

#define LLVMFuzzerTestOneInput fuzz_gguf_one
#include "../fuzz/fuzz_gguf.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_model_one
#include "../fuzz/fuzz_model.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_hf_one
#include "../fuzz/fuzz_hf.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_safetensors_one
#include "../fuzz/fuzz_safetensors.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_st_index_one
#include "../fuzz/fuzz_st_index.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_json_one
#include "../fuzz/fuzz_json.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_config_one
#include "../fuzz/fuzz_config.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_tokenizer_one
#include "../fuzz/fuzz_tokenizer.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_tokenizer_json_one
#include "../fuzz/fuzz_tokenizer_json.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_grammar_one
static const char this_file[] = __FILE__;
#define FUZZ_SOURCE_FILE this_file
#include "../fuzz/fuzz_grammar.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_mlx_one
#include "../fuzz/fuzz_mlx.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_lora_one
#include "../fuzz/fuzz_lora.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_estimate_one
#include "../fuzz/fuzz_estimate.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_generate_one
#include "../fuzz/fuzz_generate.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_json_schema_one
#include "../fuzz/fuzz_json_schema.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_multifile_one
#include "../fuzz/fuzz_multifile.c"
#undef LLVMFuzzerTestOneInput

typedef int (*harness)(const uint8_t *, size_t);
static const struct {
    const char *name;
    harness fn;
} targets[] = {{"fuzz_gguf", fuzz_gguf_one},
               {"fuzz_model", fuzz_model_one},
               {"fuzz_hf", fuzz_hf_one},
               {"fuzz_safetensors", fuzz_safetensors_one},
               {"fuzz_st_index", fuzz_st_index_one},
               {"fuzz_json", fuzz_json_one},
               {"fuzz_config", fuzz_config_one},
               {"fuzz_tokenizer", fuzz_tokenizer_one},
               {"fuzz_tokenizer_json", fuzz_tokenizer_json_one},
               {"fuzz_grammar", fuzz_grammar_one},
               {"fuzz_mlx", fuzz_mlx_one},
               {"fuzz_lora", fuzz_lora_one},
               {"fuzz_estimate", fuzz_estimate_one},
               {"fuzz_generate", fuzz_generate_one},
               {"fuzz_json_schema", fuzz_json_schema_one},
               {"fuzz_multifile", fuzz_multifile_one}};
#define N_TARGETS ((int)(sizeof targets / sizeof *targets))
enum { FLIPS = 12 };

static uint32_t lcg(uint32_t *s) { return *s = *s * 1103515245u + 12345u, *s >> 8; }

/* the seed, then its mutants: each a copy the harness may not keep */
static int run_mutants(harness fn, const uint8_t *seed, size_t n, uint32_t salt) {
    int runs = 0;
    uint8_t *b = malloc(n ? n : 1);
    fn(seed, n), runs++;
    static const double cuts[] = {0.0, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.999};
    for (size_t k = 0; k < sizeof cuts / sizeof *cuts; k++) {
        size_t m = (size_t)(cuts[k] * (double)n);
        memcpy(b, seed, m);
        fn(b, m), runs++;
    }
    uint32_t s = salt;
    for (int k = 0; n && k < FLIPS; k++) {
        memcpy(b, seed, n);
        size_t at = lcg(&s) % n;
        static const uint8_t set[] = {0x00, 0xFF, 0x7F, 0x80};
        if (k % 3 == 0) b[at] ^= (uint8_t)(1u << (lcg(&s) % 8));
        else b[at] = set[lcg(&s) % 4];
        if (k % 4 == 3 && at + 8 <= n) { /* a little-endian count or length: one more, one less, huge */
            uint64_t v;
            memcpy(&v, b + at, 8);
            v = k % 8 == 3 ? v + 1 : k % 8 == 7 ? v - 1 : v | 0x00000000ffff0000ull;
            memcpy(b + at, &v, 8);
        }
        fn(b, n), runs++;
    }
    free(b);
    return runs;
}

/* every file of dir/<target>: mutated (seeds) or as it is (regressions) */
static int run_dir(const char *dir_path, int t, int mutate) {
    char d[1200];
    snprintf(d, sizeof d, "%s/%s", dir_path, targets[t].name);
    DIR *D = opendir(d);
    if (!D) return 0;
    int runs = 0;
    for (struct dirent *e; (e = readdir(D));) {
        if (e->d_name[0] == '.') continue;
        char p[1600];
        snprintf(p, sizeof p, "%s/%s", d, e->d_name);
        size_t len;
        uint8_t *b = (uint8_t *)slurp(p, &len);
        if (!b) continue;
        uint32_t salt = (uint32_t)len * 2654435761u + (uint32_t)t;
        runs += mutate ? run_mutants(targets[t].fn, b, len, salt) : (targets[t].fn(b, len), 1);
        free(b);
    }
    closedir(D);
    return runs;
}

static void test_corpus(void) {
    char tmp[64];
    snprintf(tmp, sizeof tmp, "/tmp/oxtest_fuzz_corpus_XXXXXX");
    CHECK(mkdtemp(tmp) != NULL);
    char *argv[] = {"make_corpus", tmp, NULL};
    CHECK(make_corpus_main(2, argv) == 0);
    char regs[1024];
    snprintf(regs, sizeof regs, "%s", __FILE__); /* .../tests/c/test_fuzz_corpus.c */
    char *cut = strstr(regs, "tests/c/test_fuzz_corpus.c");
    CHECK(cut != NULL);
    if (cut) strcpy(cut, "tests/fuzz/regressions");
    int total = 0, n_regs = 0;
    for (int t = 0; t < N_TARGETS; t++) {
        int seeds = run_dir(tmp, t, 1), r = cut ? run_dir(regs, t, 0) : 0;
        fprintf(stderr, "  %s: %d seed and mutant runs, %d regressions\n", targets[t].name, seeds, r);
        CHECK_MSG(seeds > 0, "%s: the corpus has no seed", targets[t].name);
        total += seeds + r, n_regs += r;
    }
    CHECK(n_regs > 0); /* the committed inputs were found */
    fprintf(stderr, "fuzz corpus: %d inputs ran clean\n", total);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    CHECK(system(cmd) == 0);
}

int main(void) {
    RUN(test_corpus);
    return check_summary("test_fuzz_corpus");
}
