/* generate.c — `oxinfer run MODEL --prompt TEXT`: a generation through the engine facade
 * (engine/engine.h), the tokens' text on stdout as they come; with a grammar, the output is
 * constrained to it (docs/grammar.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "engine/engine.h"

static int fail(const ox_err *err) {
    fprintf(stderr, "oxinfer run: %s: %s\n", ox_err_code_name(err->code), err->msg);
    return 1;
}

int cli_generate(ox_engine *e, const cli_gen_opts *o) {
    ox_err err = {0};
    const ox_tokenizer *tok = ox_engine_tokenizer(e);
    size_t len = strlen(o->prompt);
    int n = ox_tokenize(tok, o->prompt, len, OX_TOK_ADD_BOS | OX_TOK_SPECIAL, NULL, 0, &err);
    if (n < 0) return fail(&err);
    int32_t *prompt = malloc(sizeof *prompt * (size_t)(n ? n : 1));
    if (!prompt) return fprintf(stderr, "oxinfer run: out of memory\n"), 1;
    ox_tokenize(tok, o->prompt, len, OX_TOK_ADD_BOS | OX_TOK_SPECIAL, prompt, n, &err);
    ox_gen_params p;
    ox_gen_defaults(&p);
    p.max_tokens = o->max_tokens;
    p.sampler.seed = o->seed;
    if (o->temperature >= 0) p.sampler.temperature = o->temperature;
    ox_grammar *gr = o->grammar ? ox_engine_grammar(e, o->grammar, o->grammar_len, &p, &err) : NULL;
    ox_session *s = o->grammar && !gr ? NULL : ox_session_new(ox_engine_model(e), o->ctx, &err);
    if (gr) p.filter = ox_engine_grammar_filter(gr);
    ox_gen *g = s ? ox_gen_new(s, tok, &p, &err) : NULL;
    int rc = g ? ox_gen_start(g, prompt, n, &err) : -1;
    while (rc >= 0 && (rc = ox_gen_prefill(g, 256, &err)) > 0) continue;
    for (ox_gen_token t; rc == OX_GEN_TOKEN;) {
        rc = ox_gen_step(g, &t, &err);
        if (rc >= 0 && rc != OX_GEN_STOP && t.n_bytes) fwrite(t.bytes, 1, (size_t)t.n_bytes, stdout);
    }
    if (rc >= 0) printf("\n");
    ox_gen_free(g);
    ox_session_free(s);
    ox_grammar_free(gr);
    free(prompt);
    return rc < 0 ? fail(&err) : 0;
}
