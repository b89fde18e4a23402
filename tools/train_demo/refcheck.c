/* refcheck.c — `refcheck MODEL.gguf 2,5,...`: the float64 reference logits (tests/c/ref_forward.c,
 * the forward pass the C tests trust) of every position, as JSON {"vocab": V, "logits": [...]}.
 * The demo model's test compares the engine with it (tests/browser/demo-model.test.mjs). Built
 * by that test: cc -Isrc -Itests/c tools/train_demo/refcheck.c build/liboxcore.a -lm -lpthread */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/hostfile.h"
#include "ref_forward.c"

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: refcheck MODEL.gguf TOKEN,TOKEN,...\n");
        return 2;
    }
    int32_t tok[4096];
    int n = 0;
    for (char *p = argv[2]; *p && n < 4096; n++) {
        tok[n] = (int32_t)strtol(p, &p, 10);
        if (*p == ',') p++;
    }
    ox_err err = {0};
    int h = ox_host_open_path(argv[1], &err);
    ox_model_files *mf = h < 0 ? NULL : ox_files_open(&h, 1, &err);
    if (!mf) {
        fprintf(stderr, "refcheck: %s\n", err.msg);
        return 1;
    }
    char msg[256];
    ref_model *r = ref_load(mf, msg, sizeof msg);
    if (!r) {
        fprintf(stderr, "refcheck: %s\n", msg);
        return 1;
    }
    int V = ox_files_config(mf)->vocab;
    double *lg = malloc(sizeof *lg * (size_t)n * (size_t)V);
    if (!lg || ref_forward(r, tok, n, NULL, NULL, lg)) {
        fprintf(stderr, "refcheck: forward failed\n");
        return 1;
    }
    printf("{\"vocab\": %d, \"logits\": [", V);
    for (size_t i = 0; i < (size_t)n * (size_t)V; i++) printf("%s%.9g", i ? "," : "", lg[i]);
    printf("]}\n");
    free(lg);
    ref_free(r);
    ox_files_free(mf);
    return 0;
}
