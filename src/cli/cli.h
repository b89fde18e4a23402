/* cli.h — the oxinfer command line: one file per subcommand, each `int cli_NAME(argc, argv)`
 * taking the arguments after the subcommand name and returning the process exit status. */
#ifndef OX_CLI_H
#define OX_CLI_H

#include <stddef.h>
#include "formats/tensors.h"

int cli_inspect(int argc, char **argv);  /* inspect.c  — config, per-layer values, tensor table */
int cli_quantize(int argc, char **argv); /* quantize.c — IN... -o OUT --quant q8|q4 */
int cli_run(int argc, char **argv);      /* run.c      — forward over --tokens, top-K log-probs, --bench */
int cli_synth(int argc, char **argv);    /* synth.c    — write a synthetic Gemma 4 model */
int cli_tokenize(int argc, char **argv); /* tokenize.c — text -> ids with a model's tokenizer */
int cli_lora(int argc, char **argv);     /* lora.c     — write a synthetic LoRA adapter for a model */
int cli_image(int argc, char **argv);    /* image.c    — a test image through the vision tower, timed */
double cli_now_s(void);                  /* image.c: seconds on the monotonic clock (the timings) */

/* generate.c: a generation from prompt (tokenized with BOS, control tokens matched) through the
 * engine, its text on stdout; grammar (grammar_len bytes of GBNF) or NULL. 1 after printing
 * the error. */
struct ox_engine;
typedef struct cli_gen_opts {
    const char *prompt;
    int max_tokens, ctx;
    float temperature; /* < 0: the generator's default */
    unsigned long long seed;
    const char *grammar;
    size_t grammar_len;
} cli_gen_opts;
int cli_generate(struct ox_engine *e, const cli_gen_opts *o);

/* schema.c: the GBNF (malloc'd) of the JSON schema in the file at path (tool_notation: Gemma 4's
 * notation), NULL after printing "oxinfer run: FILE: CODE: message". */
char *cli_json_schema_grammar(const char *path, int tool_notation);

/* files.c: host files a subcommand names. cli_files_add opens a path: a file as it is, a
 * checkpoint directory as its model files (its GGUF files; else its safetensors shards, their
 * index, config.json, tokenizer.json, chat_template.jinja and the other side files the loader
 * reads by name). 1 after printing "CMD: message" (a directory with no model files says so). */
typedef struct cli_files {
    int *h;
    int n, cap;
} cli_files;
int cli_files_add(const char *cmd, cli_files *fs, const char *path);
void cli_files_release(cli_files *fs); /* closes the files */
/* The tensor directory over them, NULL after printing "CMD: CODE: message". */
ox_model_files *cli_files_open(const char *cmd, const cli_files *fs);

/* lora.c: load the n adapters specs[i] ("FILE", "FILE,FILE" or a PEFT directory) and attach them
 * to the engine with scales[]; 1 after printing the error (nothing attached). */
int cli_lora_attach(struct ox_engine *e, char *const *specs, const float *scales, int n);

#endif
