/* cli.h — the oxinfer command line: one file per subcommand, each `int cli_NAME(argc, argv)`
 * taking the arguments after the subcommand name and returning the process exit status. */
#ifndef OX_CLI_H
#define OX_CLI_H

#include "formats/tensors.h"

int cli_inspect(int argc, char **argv);   /* inspect.c  — config, per-layer values, tensor table */
int cli_quantize(int argc, char **argv);  /* quantize.c — IN... -o OUT --quant q8|q4 */
int cli_run(int argc, char **argv);       /* run.c      — forward over --tokens, top-K log-probs, --bench */
int cli_synth(int argc, char **argv);     /* synth.c    — write a synthetic Gemma 4 model */
int cli_tokenize(int argc, char **argv);  /* tokenize.c — text -> ids with a model's tokenizer */
int cli_lora(int argc, char **argv);      /* lora.c     — write a synthetic LoRA adapter for a model */

/* lora.c: load the n adapters specs[i] ("FILE" or "FILE,FILE") into out[] and attach them with
 * scales[]; 1 after printing the error (nothing attached, nothing left loaded). */
struct ox_model;
struct ox_lora;
int cli_lora_attach(struct ox_model *m, char *const *specs, const float *scales, int n, struct ox_lora **out);

/* schema.c: the GBNF (malloc'd) of the JSON schema in the file at path (tool_notation: Gemma 4's
 * notation), NULL after printing "oxinfer run: FILE: CODE: message". */
char *cli_json_schema_grammar(const char *path, int tool_notation);

/* files.c: the tensor directory over n opened host files, NULL after printing
 * "CMD: CODE: message"; and closing it, the files and the (malloc'd) files array. */
ox_model_files *cli_files_open(const char *cmd, const int *files, int n);
void cli_files_close(ox_model_files *mf, int *files, int n);

#endif
