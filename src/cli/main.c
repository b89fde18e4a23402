/* main.c — `oxinfer SUBCOMMAND ...` dispatch. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const struct {
    const char *name;
    int (*fn)(int, char **);
    const char *help;
} cmds[] = {
    {"inspect", cli_inspect, "FILE...                      print config, per-layer values, tensors"},
    {"quantize", cli_quantize,
     "IN... -o OUT --quant q8|q4   write a pre-quantized safetensors file\n"
     "                   (--quant mlx4|mlx8 [--group 32|64] [--reference DIR] -o DIR: an MLX checkpoint)"},
    {"run", cli_run, "FILE... --tokens 2,105,... [--top K] [--threads N] [--json] [--bench]"},
    {"synth", cli_synth, "--preset tiny|benchlike|bench|e2b|moe|keqv --type T ... -o OUT"},
    {"lora", cli_lora, "MODEL... [--format gguf|peft] [--rank R] [--alpha A] ... -o OUT  write a test adapter"},
    {"tokenize", cli_tokenize, "FILE... (--text STR | --file F) [--json] [--no-bos] [--no-special] [--lines]"},
    {"image", cli_image, "FILE... --size HxW [--threads N] [--repeat R]   a test image through the vision tower"},
};

int main(int argc, char **argv) {
    if (argc >= 2) {
        for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
            if (strcmp(argv[1], cmds[i].name) == 0) return cmds[i].fn(argc - 2, argv + 2);
    }
    fprintf(stderr, "usage: oxinfer COMMAND ...\n");
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        fprintf(stderr, "  oxinfer %-9s %s\n", cmds[i].name, cmds[i].help);
    return 2;
}
