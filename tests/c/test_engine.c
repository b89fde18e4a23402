/* test_engine.c — the engine facade (engine/engine.h) on a synthetic model: the load (info
 * JSON, quant range, errors naming the file, the model without a tokenizer), a grammar's stop
 * ids (the model's eos id after the grammar ends, plus the request's, none with use_eos 0),
 * and the adapters (all or nothing, detach and attach again). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "engine/engine.h"
#include "host/hostfile.h"
#include "model/lora.h"
#include "writers/lora_write.h"
#include "writers/synth.h"

static char tmp[256], model_path[320], lora_path[320], cut_path[320];

static ox_engine *load(const char *path, int quant, int flags, ox_err *err) {
    int h = ox_host_open_path(path, err);
    if (h < 0) return NULL;
    ox_load_opts o = {.quant = (ox_quant)quant};
    return ox_engine_load(&h, 1, &o, flags, err);
}

static void test_load(void) {
    ox_err err = {0};
    ox_engine *e = load(model_path, OX_QUANT_STORED, 0, &err);
    CHECK_MSG(e != NULL, "%s", err.msg);
    if (!e) return;
    const char *info = ox_engine_info(e);
    CHECK_STR_CONTAINS(info, "\"vocab\":1024");
    CHECK_STR_CONTAINS(info, "\"eosIds\":[1]");
    CHECK_STR_CONTAINS(info, "\"turnEnd\":6");
    CHECK(ox_engine_tokenizer(e) != NULL && ox_engine_drafter(e) == NULL);
    ox_engine_free(e);

    err = (ox_err){0};
    CHECK(load(model_path, 99, 0, &err) == NULL);
    CHECK_ERR(err, OX_E_RANGE, "", "quant 99 is not one of");

    err = (ox_err){0};
    CHECK(load(cut_path, OX_QUANT_STORED, 0, &err) == NULL);
    CHECK_MSG(err.code < 0 && strstr(err.msg, "cut.gguf"), "the message names the file: %s", err.msg);

    err = (ox_err){0};
    e = load(model_path, OX_QUANT_STORED, OX_ENGINE_NO_TOKENIZER, &err);
    CHECK(e && !ox_engine_tokenizer(e));
    if (e) {
        CHECK_STR_CONTAINS(ox_engine_info(e), "\"turnEnd\":-1");
        ox_gen_params p;
        ox_gen_defaults(&p);
        CHECK(ox_engine_grammar(e, "root ::= \"a\"", 12, &p, &err) == NULL);
        CHECK_ERR(err, OX_E_STATE, "", "without a tokenizer");
    }
    ox_engine_free(e);
}

/* The tokens the grammar leaves open after accepting the token of "a". */
static int open_after(ox_engine *e, const ox_gen_params *p, int *open, int cap) {
    ox_err err = {0};
    const char *g = "root ::= \"a\"";
    ox_grammar *gr = ox_engine_grammar(e, g, strlen(g), p, &err);
    CHECK_MSG(gr != NULL, "%s", err.msg);
    if (!gr) return -1;
    int V = ox_model_config(ox_engine_model(e))->vocab, n = 0, a = ox_tokenizer_find(ox_engine_tokenizer(e), "a");
    float *lg = calloc((size_t)V, sizeof *lg);
    ox_logits_filter f = ox_engine_grammar_filter(gr);
    CHECK(a >= 0 && f.accept(f.ud, a, &err) == 0 && f.mask(f.ud, lg, V, &err) == 0);
    for (int v = 0; v < V; v++)
        if (lg[v] != -INFINITY && n < cap) open[n++] = v;
    free(lg);
    ox_grammar_free(gr);
    return n;
}

static void test_grammar_stops(void) {
    ox_err err = {0};
    ox_engine *e = load(model_path, OX_QUANT_STORED, 0, &err);
    if (!e) return;
    ox_gen_params p;
    ox_gen_defaults(&p);
    int open[8], n = open_after(e, &p, open, 8);
    CHECK_MSG(n == 1 && open[0] == 1, "after the grammar ends: the eos id 1 (%d open)", n);
    int32_t stop = 500;
    p.stop_ids = &stop, p.n_stop = 1;
    n = open_after(e, &p, open, 8);
    CHECK_MSG(n == 2 && open[0] == 1 && open[1] == 500, "the request's stop id joins it (%d open)", n);
    p.use_eos = 0;
    n = open_after(e, &p, open, 8);
    CHECK_MSG(n == 1 && open[0] == 500, "use_eos 0: only the request's (%d open)", n);
    ox_engine_free(e);
}

static void logits(ox_engine *e, float *lg) {
    ox_err err = {0};
    ox_session *s = ox_session_new(ox_engine_model(e), 16, &err);
    int32_t t[3] = {2, 300, 17};
    ox_forward_io io = {.tokens = t, .n = 3, .logits = lg};
    CHECK(s && ox_forward(s, &io, &err) == 0);
    ox_session_free(s);
}

static void test_lora(void) {
    ox_err err = {0};
    ox_engine *e = load(model_path, OX_QUANT_STORED, 0, &err);
    if (!e) return;
    int V = ox_model_config(ox_engine_model(e))->vocab;
    float *base = malloc(sizeof(float) * (size_t)V), *with = malloc(sizeof(float) * (size_t)V),
          *again = malloc(sizeof(float) * (size_t)V);
    logits(e, base);
    int h[2] = {ox_host_open_path(lora_path, &err), ox_host_open_path(cut_path, &err)}, one = 1, two[2] = {1, 1};
    float sc[2] = {1, 1};
    int modules = ox_engine_set_lora(e, h, &one, sc, 1, &err);
    CHECK_MSG(modules > 0 && ox_engine_lora_count(e) == 1, "%s", err.msg);
    logits(e, with);
    double d = 0;
    for (int v = 0; v < V; v++) d = fmax(d, fabs(with[v] - base[v]));
    CHECK_MSG(d > 1e-3, "the adapter moves the logits (%g)", d);

    err = (ox_err){0};
    CHECK(ox_engine_set_lora(e, h, two, sc, 2, &err) < 0); /* the second is not an adapter */
    CHECK(ox_engine_lora_count(e) == 1);
    logits(e, again);
    CHECK_MSG(!memcmp(again, with, sizeof(float) * (size_t)V), "a failed set keeps the attached adapter");
    err = (ox_err){0};
    CHECK(ox_engine_set_lora(e, h, &one, sc, OX_LORA_MAX + 1, &err) == OX_E_RANGE);

    CHECK(ox_engine_lora_enable(e, 0, &err) == 0);
    logits(e, again);
    CHECK_MSG(!memcmp(again, base, sizeof(float) * (size_t)V), "detached: the base logits");
    CHECK(ox_engine_lora_enable(e, 1, &err) == 0);
    logits(e, again);
    CHECK_MSG(!memcmp(again, with, sizeof(float) * (size_t)V), "attached again: the same logits");
    CHECK(ox_engine_set_lora(e, NULL, NULL, NULL, 0, &err) == 0 && ox_engine_lora_count(e) == 0);
    free(base), free(with), free(again);
    ox_engine_free(e);
}

int main(void) {
    snprintf(tmp, sizeof tmp, "/tmp/ox_engine_XXXXXX");
    if (!mkdtemp(tmp)) return 1;
    snprintf(model_path, sizeof model_path, "%s/tiny.gguf", tmp);
    snprintf(lora_path, sizeof lora_path, "%s/lora.gguf", tmp);
    snprintf(cut_path, sizeof cut_path, "%s/cut.gguf", tmp);
    ox_err err = {0};
    ox_synth s;
    ox_synth_preset(&s, "tiny", &err);
    if (ox_synth_write_gguf(&s, model_path, &err)) return fprintf(stderr, "synth: %s\n", err.msg), 1;
    int h = ox_host_open_path(model_path, &err);
    ox_model_files *mf = h >= 0 ? ox_files_open(&h, 1, &err) : NULL;
    ox_lora_spec sp = {.rank = 4, .alpha = 8, .std = 0.05f, .seed = 1, .targets = OX_LORA_ALL_TARGETS, .type = OX_F32};
    if (!mf || ox_lora_write_gguf(ox_files_config(mf), &sp, lora_path, &err))
        return fprintf(stderr, "lora: %s\n", err.msg), 1;
    ox_files_free(mf);
    FILE *in = fopen(model_path, "rb"), *out = fopen(cut_path, "wb");
    char buf[4000];
    size_t n = in ? fread(buf, 1, sizeof buf, in) : 0;
    if (out) fwrite(buf, 1, n, out), fclose(out);
    if (in) fclose(in);
    RUN(test_load);
    RUN(test_grammar_stops);
    RUN(test_lora);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    if (system(cmd)) fprintf(stderr, "cleanup of %s failed\n", tmp);
    return check_summary("test_engine");
}
