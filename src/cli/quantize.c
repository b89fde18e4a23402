/* quantize.c — `oxinfer quantize IN... -o OUT.safetensors --quant q8|q4`: write a model as a
 * pre-quantized safetensors file (format in prequant.h) that loads on its own next to the
 * tokenizer files. `--quant mlx4|mlx8 [--group 32|64] [--reference DIR] -o DIR`: an MLX
 * checkpoint of an HF checkpoint (tools/mlx_write.h), and its dequantized F32 reference. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "host/hostfile.h"
#include "writers/mlx_write.h"
#include "writers/prequant.h"
#include "formats/tensors.h"

static void progress(void *ud, uint64_t done, uint64_t total) {
    int *last = ud, pct = total ? (int)(done * 100 / total) : 100;
    if (pct / 10 != *last / 10) fprintf(stderr, "quantize: %d%%\n", pct);
    *last = pct;
}

static int mlx_quantize(int argc, char **argv, const char *out, const char *quant) {
    ox_mlx_write_opts o = {{quant[3] == '4' ? 4 : 8, 64}, NULL, {0, 0}, OX_ST_BF16};
    const char *ref = NULL, **src = calloc((size_t)argc + 1, sizeof *src);
    int n = 0;
    if (!src) return 1;
    for (int i = 0; i < argc; i++) {
        if ((!strcmp(argv[i], "-o") || !strcmp(argv[i], "--quant")) && i + 1 < argc) i++;
        else if (!strcmp(argv[i], "--group") && i + 1 < argc) o.q.group = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reference") && i + 1 < argc) ref = argv[++i];
        else src[n++] = argv[i];
    }
    ox_err err = {0};
    int rc = ox_mlx_write(src, n, out, ref, &o, &err);
    if (rc) fprintf(stderr, "quantize: %s: %s\n", ox_err_code_name(err.code), err.msg);
    else
        fprintf(stderr, "quantize: wrote %s (MLX %d-bit, group %d)%s%s\n", out, o.q.bits, o.q.group,
                ref ? ", reference " : "", ref ? ref : "");
    free(src);
    return rc ? 1 : 0;
}

int cli_quantize(int argc, char **argv) {
    for (int i = 0; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--quant") && (!strcmp(argv[i + 1], "mlx4") || !strcmp(argv[i + 1], "mlx8"))) {
            const char *out = NULL;
            for (int k = 0; k + 1 < argc; k++)
                if (!strcmp(argv[k], "-o")) out = argv[k + 1];
            if (out) return mlx_quantize(argc, argv, out, argv[i + 1]);
            fprintf(stderr,
                    "usage: oxinfer quantize HF-FILES... -o DIR --quant mlx4|mlx8 [--group 32|64] [--reference DIR]\n");
            return 1;
        }
    const char *out = NULL, *quant = NULL;
    cli_files fs = {0};
    int rc = 1;
    ox_err err = {0};
    ox_model_files *mf = NULL;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) out = argv[++i];
        else if (strcmp(argv[i], "--quant") == 0 && i + 1 < argc) quant = argv[++i];
        else if (argv[i][0] == '-') {
            fprintf(stderr, "quantize: unknown option %s\n", argv[i]);
            goto done;
        } else if (cli_files_add("quantize", &fs, argv[i])) goto done;
    }
    if (!fs.n || !out || !quant) {
        fprintf(stderr, "usage: oxinfer quantize IN... -o OUT.safetensors --quant q8|q4\n");
        goto done;
    }
    if (!(mf = cli_files_open("quantize", &fs))) goto done;
    int last = -1;
    if (ox_prequant_write(mf, out, quant, progress, &last, &err)) {
        fprintf(stderr, "quantize: %s: %s\n", ox_err_code_name(err.code), err.msg);
        remove(out);
        goto done;
    }
    fprintf(stderr, "quantize: wrote %s (%s)\n", out, quant);
    rc = 0;
done:
    ox_files_free(mf);
    cli_files_release(&fs);
    return rc;
}
