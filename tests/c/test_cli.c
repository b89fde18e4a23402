/* test_cli.c — the oxinfer command ($OX_CLI, set by ctest) on a synthetic model: a checkpoint
 * directory gives the same log-probs as its files listed (GGUF and HF), a directory without
 * model files is refused by name, and `run --prompt --grammar` keeps the output inside the
 * grammar (sampled, several seeds) where the same prompt unconstrained leaves it; bad grammar
 * files and a grammar without a prompt are errors. `run --prompt --json-schema` likewise: the
 * output is JSON valid under the schema (and its tool-call notation with --tool-notation), a
 * schema outside the subset or not JSON is refused with its error, and --grammar beside
 * --json-schema is a usage error. The vision tower through synth, inspect and image. */
#define _POSIX_C_SOURCE 200809L
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

static const char *cli;
static char tmp[256];

/* Runs "oxinfer ARGS" in the temporary directory; stdout into out (cap bytes), stderr into err. */
static int run(const char *args, char *out, size_t cap, char *err, size_t ecap) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cd %s && %s %s >out.txt 2>err.txt", tmp, cli, args);
    int st = system(cmd), rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    char *bufs[2] = {out, err};
    size_t caps[2] = {cap, ecap};
    const char *names[2] = {"out.txt", "err.txt"};
    for (int i = 0; i < 2; i++) {
        if (!bufs[i]) continue;
        char path[512];
        snprintf(path, sizeof path, "%s/%s", tmp, names[i]);
        FILE *f = fopen(path, "rb");
        size_t n = f ? fread(bufs[i], 1, caps[i] - 1, f) : 0;
        bufs[i][n] = 0;
        if (f) fclose(f);
    }
    return rc;
}

static void write_file(const char *name, const char *text) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", tmp, name);
    FILE *f = fopen(path, "wb");
    if (f) fputs(text, f), fclose(f);
}

static char a[1 << 20], b[1 << 20], e[4096];

static void test_directories(void) {
    CHECK(run("synth --preset tiny -o tiny.gguf", NULL, 0, NULL, 0) == 0);
    CHECK(run("synth --preset tiny --format hf -o hf", NULL, 0, NULL, 0) == 0);
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "mkdir -p %s/ggufdir %s/empty && cp %s/tiny.gguf %s/ggufdir/ && echo x > %s/empty/notes.txt", tmp, tmp,
             tmp, tmp, tmp);
    CHECK(system(cmd) == 0);

    const char *toks = "--tokens 2,17,300,5,99 --all --json";
    snprintf(cmd, sizeof cmd, "run hf/config.json hf/model.safetensors hf/tokenizer.json %s", toks);
    CHECK(run(cmd, a, sizeof a, e, sizeof e) == 0);
    snprintf(cmd, sizeof cmd, "run hf %s", toks);
    CHECK_MSG(run(cmd, b, sizeof b, e, sizeof e) == 0, "%s", e);
    CHECK(strlen(a) > 100 && !strcmp(a, b)); /* the directory is its files */

    snprintf(cmd, sizeof cmd, "run tiny.gguf %s", toks);
    CHECK(run(cmd, a, sizeof a, e, sizeof e) == 0);
    snprintf(cmd, sizeof cmd, "run ggufdir %s", toks);
    CHECK_MSG(run(cmd, b, sizeof b, e, sizeof e) == 0, "%s", e);
    CHECK(strlen(a) > 100 && !strcmp(a, b));

    CHECK(run("inspect hf", a, sizeof a, e, sizeof e) == 0);
    CHECK_STR_CONTAINS(a, "files: config.json, model.safetensors, tokenizer.json");

    CHECK(run("run empty --tokens 2", NULL, 0, e, sizeof e) == 1);
    CHECK_STR_CONTAINS(e, "empty: no model files in the directory");
    CHECK(run("inspect empty", NULL, 0, e, sizeof e) != 0);
    CHECK_STR_CONTAINS(e, "no model files");
}

static int matches(const char *re, const char *s) {
    regex_t r;
    if (regcomp(&r, re, REG_EXTENDED | REG_NOSUB)) return 0;
    int ok = regexec(&r, s, 0, NULL, 0) == 0;
    regfree(&r);
    return ok;
}

/* Of `run tiny.gguf --prompt hello` with opts at seeds 1..4, how many outputs match re. */
static int seeds_matching(const char *opts, int n_gen, const char *re) {
    char cmd[600];
    int n = 0;
    for (int seed = 1; seed <= 4; seed++) {
        snprintf(cmd, sizeof cmd, "run tiny.gguf --prompt hello --n-gen %d --seed %d %s", n_gen, seed, opts);
        CHECK_MSG(run(cmd, a, sizeof a, e, sizeof e) == 0, "%s: %s", cmd, e);
        n += matches(re, a);
    }
    return n;
}

/* `oxinfer ARGS` exits with rc, its stderr naming the problem (msg; NULL: not checked). */
static void refused(const char *args, int rc, const char *msg) {
    CHECK_MSG(run(args, NULL, 0, e, sizeof e) == rc, "%s: %s", args, e);
    if (msg) CHECK_STR_CONTAINS(e, msg);
}

static void test_grammar(void) {
    write_file("digits.gbnf", "# two letters, then digits\nroot ::= \"ab\" [0-9]+\n");
    write_file("bad.gbnf", "root ::= (\n");
    int inside = seeds_matching("--grammar digits.gbnf", 6, "^ab[0-9]*\n$");
    int free_inside = seeds_matching("", 6, "^ab[0-9]*\n$");
    CHECK_MSG(inside == 4, "%d of 4 constrained outputs follow the grammar", inside);
    CHECK_MSG(free_inside == 0, "%d of 4 free outputs follow it (the grammar must be what constrains)", free_inside);

    refused("run tiny.gguf --prompt hello --grammar bad.gbnf", 1, "grammar: line 2");
    refused("run tiny.gguf --prompt hello --grammar missing.gbnf", 1, "missing.gbnf: cannot read");
    refused("run tiny.gguf --tokens 2 --grammar digits.gbnf", 2, NULL); /* usage */
}

/* The only JSON values valid under enum.json (the whitespace the converter allows anywhere). */
#define WS          "[[:space:]]*"
#define ENUM_OBJECT "^" WS "\\{" WS "\"c\"" WS ":" WS "\"(red|blue)\"" WS "\\}" WS "\n$"
#define ENUM_GEMMA4 "^\\{c:<\\|\"\\|>(red|blue)<\\|\"\\|>\\}\n$"

static void test_json_schema(void) {
    write_file("enum.json", "{\"type\": \"object\", \"properties\": {\"c\": {\"enum\": [\"red\", \"blue\"]}},\n"
                            " \"required\": [\"c\"], \"additionalProperties\": false}\n");
    write_file("pattern.json", "{\"type\": \"string\", \"pattern\": \"a+\"}");
    write_file("broken.json", "{\"type\": ");
    int inside = seeds_matching("--json-schema enum.json", 40, ENUM_OBJECT);
    int notation = seeds_matching("--json-schema enum.json --tool-notation", 40, ENUM_GEMMA4);
    int free_inside = seeds_matching("", 40, "(" ENUM_OBJECT ")|(" ENUM_GEMMA4 ")");
    CHECK_MSG(inside == 4, "%d of 4 outputs are JSON valid under the schema", inside);
    CHECK_MSG(notation == 4, "%d of 4 outputs are the schema's value in tool-call notation", notation);
    CHECK_MSG(free_inside == 0, "%d of 4 free outputs follow it (the schema must be what constrains)", free_inside);

    refused("run tiny.gguf --prompt hello --json-schema pattern.json", 1,
            "pattern.json: UNSUPPORTED: JSON schema: keyword \"pattern\"");
    refused("run tiny.gguf --prompt hello --json-schema broken.json", 1, "broken.json: FORMAT: JSON schema:");
    refused("run tiny.gguf --prompt hello --json-schema missing.json", 1, "missing.json: cannot read the JSON schema");
    refused("run tiny.gguf --prompt hello --json-schema enum.json --grammar digits.gbnf", 2, NULL); /* usage */
    refused("run tiny.gguf --tokens 2 --json-schema enum.json", 2, NULL);
}

/* The vision tower: synth writes it into an HF checkpoint and as an mmproj GGUF; inspect prints
 * its config and lists its tensors; image runs a test image through it (the same rows from both
 * formats of the same weights); a size that is not a multiple of 48 is refused, named. */
static void test_vision(void) {
    CHECK(run("synth --preset tiny --vision tiny --format hf -o vhf", NULL, 0, NULL, 0) == 0);
    CHECK(run("synth --preset tiny --vision tiny -o vtext.gguf", NULL, 0, NULL, 0) == 0);
    CHECK(run("synth --preset tiny --vision tiny --format mmproj -o vmm.gguf", NULL, 0, NULL, 0) == 0);
    CHECK(run("inspect vtext.gguf vmm.gguf", a, sizeof a, e, sizeof e) == 0);
    CHECK_STR_CONTAINS(a, "vision (mmproj GGUF):");
    CHECK_STR_CONTAINS(a, "patch 16  pooling 3");
    CHECK_STR_CONTAINS(a, "v.blk.1.ffn_down.weight");
    CHECK(run("inspect vhf", a, sizeof a, e, sizeof e) == 0);
    CHECK_STR_CONTAINS(a, "vision (config.json vision_config):");
    CHECK_STR_CONTAINS(a, "mm.input_projection.weight");
    CHECK(run("inspect vtext.gguf", a, sizeof a, e, sizeof e) == 0);
    CHECK_STR_CONTAINS(a, "vision: none");
    CHECK_MSG(run("image vhf --size 96x144 --repeat 1", a, sizeof a, e, sizeof e) == 0, "%s", e);
    CHECK_MSG(run("image vtext.gguf vmm.gguf --size 96x144 --repeat 1", b, sizeof b, e, sizeof e) == 0, "%s", e);
    CHECK_STR_CONTAINS(a, "54 patches -> 6 soft tokens of 256");
    const char *sa = strstr(a, "rows sum"), *sb = strstr(b, "rows sum");
    CHECK(sa && sb && !strcmp(sa, sb)); /* the same weights in both formats: the same rows */
    CHECK(run("image vhf --size 96x100", a, sizeof a, e, sizeof e) == 1);
    CHECK_STR_CONTAINS(e, "multiples of 48");
}

int main(void) {
    cli = getenv("OX_CLI");
    if (!cli) {
        printf("test_cli: OX_CLI is not set (ctest sets it): nothing run\n");
        return 0;
    }
    snprintf(tmp, sizeof tmp, "/tmp/ox_cli_XXXXXX");
    if (!mkdtemp(tmp)) return 1;
    RUN(test_directories);
    RUN(test_grammar);
    RUN(test_json_schema);
    RUN(test_vision);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    if (system(cmd)) fprintf(stderr, "cleanup of %s failed\n", tmp);
    return check_summary("test_cli");
}
