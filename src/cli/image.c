/* image.c — `oxinfer image FILE... --size HxW`: a generated test image through the model's
 * vision tower and embedder (docs/vision.md): the soft-token count, the time per image, a
 * checksum of the rows. The files are the model's (the tower from an mmproj GGUF beside it, or
 * an HF multimodal checkpoint); the decoder is not loaded. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "kernels/pool.h"
#include "kernels/prof.h"
#include "vision/vision.h"

double cli_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int usage(void) {
    fprintf(stderr,
            "usage: oxinfer image FILE... --size HxW [--threads N] [--repeat R] [--quant bf16|q8] [--profile]\n"
            "  the image: a smooth test pattern of H x W pixels (multiples of patch x pooling)\n"
            "  --profile  time per kernel over the repeats (matmul by weight type, attention, norms...) on stderr\n");
    return 2;
}

int cli_image(int argc, char **argv) {
    cli_files fs = {0};
    int h = 0, w = 0, repeat = 3, rc = 1, profile = 0;
    long threads = sysconf(_SC_NPROCESSORS_ONLN);
    ox_type quant = (ox_type)0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--size") && v && sscanf(v, "%dx%d", &h, &w) == 2) i++;
        else if (!strcmp(a, "--threads") && v) threads = atol(v), i++;
        else if (!strcmp(a, "--repeat") && v) repeat = atoi(v), i++;
        else if (!strcmp(a, "--quant") && v && (!strcmp(v, "bf16") || !strcmp(v, "q8")))
            quant = !strcmp(v, "bf16") ? OX_BF16 : OX_Q8_0, i++;
        else if (!strcmp(a, "--profile")) profile = 1;
        else if (a[0] == '-') return usage();
        else if (cli_files_add("image", &fs, a)) goto done;
    }
    if (!fs.n || h <= 0 || w <= 0 || repeat < 1 || threads < 1) {
        cli_files_release(&fs);
        return usage();
    }
    ox_err err = {0};
    if (ox_pool_init((int)threads, &err)) {
        fprintf(stderr, "oxinfer image: %s\n", err.msg);
        goto done;
    }
    ox_model_files *mf = cli_files_open("image", &fs);
    if (!mf) goto done;
    double t0 = cli_now_s();
    ox_vision *v = ox_vision_load(mf, quant, &err);
    double t_load = cli_now_s() - t0;
    if (!v) {
        fprintf(stderr, "oxinfer image: %s: %s\n", ox_err_code_name(err.code), err.msg);
        ox_files_free(mf);
        goto done;
    }
    const ox_vision_config *c = ox_vision_cfg(v);
    float *rgb = malloc((size_t)h * w * 3 * sizeof(float));
    int max = (h / c->patch) * (w / c->patch) / (c->pool * c->pool) + 1;
    float *out = malloc((size_t)max * c->text_hidden * sizeof(float));
    for (int y = 0; rgb && y < h; y++)
        for (int x = 0; x < w; x++)
            for (int ch = 0; ch < 3; ch++)
                rgb[((size_t)y * w + x) * 3 + ch] = (float)(0.5 + 0.4 * sin(0.05 * x * (ch + 1)) * cos(0.03 * y));
    double best = 1e30, total = 0;
    int n = -1;
    ox_prof_enable(profile);
    for (int r = 0; rgb && out && r < repeat; r++) {
        double t = cli_now_s();
        n = ox_vision_embed(v, rgb, h, w, out, max, &err);
        t = cli_now_s() - t;
        if (n < 0) break;
        total += t;
        if (t < best) best = t;
    }
    if (n < 0 || !rgb || !out) {
        fprintf(stderr, "oxinfer image: %s: %s\n", ox_err_code_name(n < 0 ? n : OX_E_NOMEM), err.msg);
    } else {
        double sum = 0;
        for (size_t i = 0; i < (size_t)n * c->text_hidden; i++) sum += out[i];
        printf("image %dx%d (HxW): %d patches -> %d soft tokens of %d; tower hidden %d x %d layers, %.1f MB weights\n",
               h, w, (h / c->patch) * (w / c->patch), n, c->text_hidden, c->hidden, c->n_layers,
               ox_vision_bytes(v) / 1048576.0);
        printf("load %.2f s; embed best of %d: %.3f s on %ld threads; rows sum %.6g, row 0 [%.6g %.6g %.6g ...]\n",
               t_load, repeat, best, threads, sum, out[0], out[1], out[2]);
        if (profile) { /* the per-token figures are per patch */
            ox_prof pr;
            ox_prof_get(&pr);
            ox_prof_print(stderr, "image (all repeats)", &pr, total, repeat * (h / c->patch) * (w / c->patch));
        }
        rc = 0;
    }
    ox_prof_enable(0);
    free(rgb), free(out);
    ox_vision_free(v);
    ox_files_free(mf);
done:
    cli_files_release(&fs);
    return rc;
}
