/* run.c — `oxinfer run FILE|DIR... --tokens 2,105,...`: forward over the tokens and print the
 * top-K log-probs (log-softmax of the logits) after every position; `--bench` times load,
 * prefill and decode instead; `--prompt TEXT` generates (generate.c). The model, its
 * tokenizer and the adapters are an engine (engine/engine.h). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "engine/engine.h"
#include "model/lora.h"
#include "model/model.h"
#include "kernels/pool.h"
#include "kernels/prof.h"
#include "formats/tensors.h"

static int usage(void) {
    fprintf(
        stderr,
        "usage: oxinfer run FILE|DIR... --tokens 2,105,... [--top K] [--all] [--threads N] [--json]\n"
        "                  [--quant q8|q4|bf16] [--step] [--tables-on-host] [--ctx N]\n"
        "       oxinfer run FILE|DIR... --prompt TEXT [--n-gen N] [--temp T] [--seed S] [--grammar FILE | "
        "--json-schema FILE]\n"
        "       oxinfer run FILE|DIR... --bench [--n-prompt 64] [--n-gen 64] [--threads N] [--quant ...] [--profile]\n"
        "  DIR     a checkpoint directory: its GGUF files, or its safetensors with config.json, tokenizer.json\n"
        "  --prompt TEXT  generate after TEXT (control tokens such as <|turn> matched), the text on stdout;\n"
        "                 --n-gen tokens at most (default 64), --temp 0 for greedy\n"
        "  --grammar FILE with --prompt: the output follows this GBNF grammar (docs/grammar.md)\n"
        "  --json-schema FILE [--tool-notation] with --prompt: the output follows this JSON schema\n"
        "  --all   every vocab entry instead of the top K (default K 5)\n"
        "  --step  feed the tokens one at a time (decode path) instead of one batch\n"
        "  --profile  with --bench: time per kernel (matmul by weight type, attention, norms...) on stderr\n"
        "  --verify K with --bench: also forwards of K tokens with every row's logits (a speculative\n"
        "             verify), each rewound, against one decode step (and their profile)\n"
        "  --lora FILE[,FILE] [--lora-scale S]  attach a LoRA adapter (GGUF, or PEFT config,safetensors); repeatable;\n"
        "          with --bench also decode steps alternating with and without the adapters, timed apart\n"
        "       oxinfer run --json-schema FILE [--tool-notation]  print the schema's GBNF grammar (JSON text,\n"
        "          or Gemma 4's tool-call notation)\n");
    return 2;
}

static int parse_tokens(const char *s, int32_t **out, int *n) {
    int cap = 16, k = 0;
    int32_t *t = malloc(sizeof *t * (size_t)cap);
    while (t && *s) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < 0 || v > INT32_MAX) break;
        if (k == cap) {
            int32_t *nt = realloc(t, sizeof *t * (size_t)(cap *= 2));
            if (!nt) break;
            t = nt;
        }
        t[k++] = (int32_t)v;
        s = end;
        if (*s == ',') s++;
        else if (*s) break;
    }
    if (!t || *s || k == 0) {
        free(t);
        return -1;
    }
    *out = t;
    *n = k;
    return 0;
}

static const float *sort_logits; /* qsort has no context argument; the CLI is single-threaded here */
static int by_logit_desc(const void *a, const void *b) {
    float x = sort_logits[*(const int *)a], y = sort_logits[*(const int *)b];
    if (x != y) return x < y ? 1 : -1;
    return *(const int *)a - *(const int *)b;
}

static void print_top(const float *lg, int V, int pos, int K, int json, int *idx, int last) {
    double mx = -INFINITY, sum = 0;
    for (int v = 0; v < V; v++) mx = lg[v] > mx ? lg[v] : mx;
    for (int v = 0; v < V; v++) sum += exp((double)lg[v] - mx);
    double lse = mx + log(sum);
    for (int v = 0; v < V; v++) idx[v] = v;
    sort_logits = lg;
    qsort(idx, (size_t)V, sizeof *idx, by_logit_desc);
    if (json) {
        printf("%s{\"pos\":%d,\"top\":[", pos ? "," : "", pos);
        for (int k = 0; k < K; k++) printf("%s[%d,%.9g]", k ? "," : "", idx[k], (double)lg[idx[k]] - lse);
        printf("]}%s", last ? "" : "\n");
    } else {
        printf("pos %d:", pos);
        for (int k = 0; k < K; k++) printf(" %d:%.6f", idx[k], (double)lg[idx[k]] - lse);
        printf("\n");
    }
}

/* The engine over the paths' files; fs keeps them open (weights left on the host are read
 * while it runs): release it after ox_engine_free. */
static int load_engine(char **paths, int n_paths, const ox_load_opts *opts, int flags, cli_files *fs, ox_engine **out,
                       double *secs) {
    double t0 = cli_now_s();
    for (int i = 0; i < n_paths; i++)
        if (cli_files_add("oxinfer run", fs, paths[i])) return 1;
    ox_err err = {0};
    ox_engine *e = ox_engine_load(fs->h, fs->n, opts, flags, &err);
    if (!e) {
        fprintf(stderr, "oxinfer run: %s: %s\n", ox_err_code_name(err.code), err.msg);
        return 1;
    }
    *secs = cli_now_s() - t0;
    *out = e;
    return 0;
}

/* Forwards of k tokens with every row's logits at the session's end, each rewound: a verify
 * batch. Prints ms per forward against the decode step's, and the profile. */
static int bench_verify(ox_session *s, int k, double decode_s, int profile, ox_err *err) {
    const ox_config *c = ox_model_config(ox_session_model(s));
    int32_t toks[64];
    float *lg = malloc(sizeof *lg * (size_t)c->vocab * (size_t)k);
    if (!lg) return ox_errf(err, OX_E_NOMEM, "out of memory for %d rows of logits", k);
    for (int i = 0; i < k; i++) toks[i] = (int32_t)(1000 + 7 * i) % c->vocab;
    int pos = ox_session_pos(s), reps = 8, rc = 0;
    ox_prof prof;
    ox_prof_enable(profile);
    double t0 = cli_now_s();
    for (int r = 0; r < reps && !rc; r++) {
        ox_forward_io io = {.tokens = toks, .n = k, .logits = lg, .all_logits = 1};
        rc = ox_forward(s, &io, err);
        if (!rc) rc = ox_session_truncate(s, pos, err);
    }
    double dt = (cli_now_s() - t0) / reps;
    ox_prof_get(&prof);
    ox_prof_enable(0);
    free(lg);
    if (rc) return rc;
    printf("verify %d tokens: %.2f ms per forward, %.2fx one decode step (%.2f ms)\n", k, dt * 1e3, dt / decode_s,
           decode_s * 1e3);
    if (profile) ox_prof_print(stderr, "verify (8 forwards)", &prof, dt * reps, k * reps);
    return 0;
}

static double cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* With LoRA adapters attached: decode steps alternate with and without them, so both see the
 * same machine load, and are timed apart (wall and process CPU time per token). */
static int bench_lora(ox_engine *e, ox_session *s, float *lg, int n_gen) {
    const ox_config *c = ox_model_config(ox_engine_model(e));
    double wall[2] = {0}, cpu[2] = {0};
    int steps[2] = {0}, rc = 0;
    ox_err err = {0};
    for (int i = 0; rc == 0 && i < 2 * n_gen && ox_session_pos(s) < ox_session_max_ctx(s); i++) {
        int on = i & 1;
        rc = ox_engine_lora_enable(e, on, &err);
        int32_t best = 0;
        for (int v = 1; v < c->vocab; v++) best = lg[v] > lg[best] ? v : best;
        ox_forward_io io = {.tokens = &best, .n = 1, .logits = lg};
        double w0 = cli_now_s(), c0 = cpu_s();
        if (!rc) rc = ox_forward(s, &io, &err);
        wall[on] += cli_now_s() - w0, cpu[on] += cpu_s() - c0, steps[on]++;
    }
    if (!rc) rc = ox_engine_lora_enable(e, 1, &err);
    if (rc) return fprintf(stderr, "oxinfer run: %s\n", err.msg), 1;
    for (int on = 0; on < 2; on++)
        printf("decode %s LoRA (interleaved, %d steps): %.2f tok/s, %.1f ms/token wall, %.1f ms/token CPU\n",
               on ? "with" : "without", steps[on], steps[on] / wall[on], 1e3 * wall[on] / steps[on],
               1e3 * cpu[on] / steps[on]);
    printf("LoRA decode cost: %+.1f %% wall, %+.1f %% CPU\n", 100 * (wall[1] / steps[1] / (wall[0] / steps[0]) - 1),
           100 * (cpu[1] / steps[1] / (cpu[0] / steps[0]) - 1));
    return 0;
}

static int bench(ox_engine *e, double load_s, int n_prompt, int n_gen, int json, int profile, int verify_k) {
    ox_model *m = ox_engine_model(e);
    const ox_config *c = ox_model_config(m);
    int n_lora = ox_engine_lora_count(e);
    ox_err err = {0};
    ox_session *s = ox_session_new(m, n_prompt + (n_lora ? 3 : 1) * n_gen + 1 + verify_k, &err);
    int32_t *toks = malloc(sizeof *toks * (size_t)(n_prompt > 1 ? n_prompt : 1));
    float *lg = malloc(sizeof *lg * (size_t)c->vocab);
    if (!s || !toks || !lg) {
        fprintf(stderr, "oxinfer run: %s\n", s ? "out of memory" : err.msg);
        free(toks), free(lg), ox_session_free(s);
        return 1;
    }
    uint32_t r = 12345;
    toks[0] = c->bos_id;
    for (int i = 1; i < n_prompt; i++) toks[i] = (int32_t)((r = r * 1664525u + 1013904223u) >> 8) % c->vocab;
    ox_prof pf_prof;
    ox_prof_enable(profile);
    double t0 = cli_now_s();
    ox_forward_io io = {.tokens = toks, .n = n_prompt, .logits = lg};
    int rc = ox_forward(s, &io, &err);
    double t1 = cli_now_s();
    ox_prof_get(&pf_prof);
    ox_prof_enable(profile);
    for (int i = 0; rc == 0 && i < n_gen; i++) {
        int32_t best = 0;
        for (int v = 1; v < c->vocab; v++) best = lg[v] > lg[best] ? v : best;
        io = (ox_forward_io){.tokens = &best, .n = 1, .logits = lg};
        rc = ox_forward(s, &io, &err);
    }
    double t2 = cli_now_s();
    if (profile && !rc) {
        ox_prof dc_prof;
        ox_prof_get(&dc_prof);
        ox_prof_print(stderr, "prefill", &pf_prof, t1 - t0, n_prompt);
        ox_prof_print(stderr, "decode (with greedy argmax)", &dc_prof, t2 - t1, n_gen);
    }
    ox_prof_enable(0);
    if (!rc && verify_k > 0 && n_gen > 0) rc = bench_verify(s, verify_k, (t2 - t1) / n_gen, profile, &err);
    if (rc) {
        fprintf(stderr, "oxinfer run: %s\n", err.msg);
    } else {
        ox_model_stats st;
        ox_model_stats_get(m, &st);
        double pf = n_prompt / (t1 - t0), dc = n_gen / (t2 - t1);
        if (json)
            printf("{\"load_s\":%.3f,\"threads\":%d,\"n_prompt\":%d,\"n_gen\":%d,\"prefill_tok_s\":%.3f,"
                   "\"decode_tok_s\":%.3f,\"resident_bytes\":%llu,\"host_bytes_read\":%llu}\n",
                   load_s, ox_pool_threads(), n_prompt, n_gen, pf, dc, (unsigned long long)st.resident_bytes,
                   (unsigned long long)st.host_bytes_read);
        else
            printf("load %.3f s, threads %d\nprefill %d tokens: %.3f s, %.2f tok/s\ndecode %d tokens: %.3f s, "
                   "%.2f tok/s\nresident %.1f MB, host reads %.1f MB\n",
                   load_s, ox_pool_threads(), n_prompt, t1 - t0, pf, n_gen, t2 - t1, dc, st.resident_bytes / 1e6,
                   st.host_bytes_read / 1e6);
        if (n_lora && !json) rc = bench_lora(e, s, lg, n_gen);
    }
    free(toks), free(lg);
    ox_session_free(s);
    return rc ? 1 : 0;
}

/* --tokens: forward and print the top-K log-probs after every position. */
static int run_tokens(ox_model *m, const char *tokens, int top, int all, int json, int step, int ctx) {
    int32_t *tok;
    int n;
    if (parse_tokens(tokens, &tok, &n)) {
        fprintf(stderr, "oxinfer run: bad --tokens list\n");
        return 2;
    }
    ox_err err = {0};
    int V = ox_model_config(m)->vocab;
    if (all || top > V) top = V;
    float *lg = malloc(sizeof *lg * (size_t)V * (size_t)n);
    int *idx = malloc(sizeof *idx * (size_t)V);
    ox_session *s = lg && idx ? ox_session_new(m, ctx > 0 ? ctx : 0, &err) : NULL;
    int rc = s ? 0 : 1;
    if (!s) fprintf(stderr, "oxinfer run: %s\n", lg && idx ? err.msg : "out of memory");
    for (int i = 0; s && i < n && rc == 0; i += step ? 1 : n) {
        ox_forward_io io = {.tokens = tok + i, .n = step ? 1 : n, .logits = lg + (size_t)i * V, .all_logits = 1};
        if (ox_forward(s, &io, &err)) {
            fprintf(stderr, "oxinfer run: %s: %s\n", ox_err_code_name(err.code), err.msg);
            rc = 1;
        }
    }
    if (rc == 0) {
        if (json) printf("{\"positions\":[");
        for (int i = 0; i < n; i++) print_top(lg + (size_t)i * V, V, i, top, json, idx, i == n - 1);
        if (json) printf("]}\n");
    }
    ox_session_free(s);
    free(lg), free(idx), free(tok);
    return rc;
}

/* The whole of a file (a grammar), NUL-terminated; NULL after printing why. */
static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    long n = -1;
    if (f && fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (buf = malloc((size_t)n + 1)) && fread(buf, 1, (size_t)n, f) == (size_t)n) {
        buf[n] = 0;
        *len = (size_t)n;
    } else {
        free(buf), buf = NULL;
        fprintf(stderr, "oxinfer run: %s: cannot read\n", path);
    }
    if (f) fclose(f);
    return buf;
}

static int print_schema_grammar(const char *path, int tool_notation) {
    char *gbnf = cli_json_schema_grammar(path, tool_notation);
    if (gbnf) fputs(gbnf, stdout);
    free(gbnf);
    return gbnf ? 0 : 1;
}

int cli_run(int argc, char **argv) {
    char *files[64];
    int n_files = 0, top = 5, all = 0, json = 0, step = 0, do_bench = 0, n_prompt = 64, n_gen = 64, ctx = 0,
        profile = 0, verify_k = 0;
    long threads = sysconf(_SC_NPROCESSORS_ONLN);
    const char *tokens = NULL, *grammar = NULL;
    cli_gen_opts gen = {.temperature = -1};
    ox_load_opts opts = {0};
    char *loras[OX_LORA_MAX];
    float lora_scales[OX_LORA_MAX];
    int n_lora = 0;
    const char *json_schema = NULL;
    int tool_notation = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--tokens") && v) tokens = v, i++;
        else if (!strcmp(a, "--prompt") && v) gen.prompt = v, i++;
        else if (!strcmp(a, "--grammar") && v) grammar = v, i++;
        else if (!strcmp(a, "--temp") && v) gen.temperature = strtof(v, NULL), i++;
        else if (!strcmp(a, "--seed") && v) gen.seed = strtoull(v, NULL, 10), i++;
        else if (!strcmp(a, "--top") && v) top = atoi(v), i++;
        else if (!strcmp(a, "--threads") && v) threads = atol(v), i++;
        else if (!strcmp(a, "--ctx") && v) ctx = atoi(v), i++;
        else if (!strcmp(a, "--n-prompt") && v) n_prompt = atoi(v), i++;
        else if (!strcmp(a, "--n-gen") && v) n_gen = atoi(v), i++;
        else if (!strcmp(a, "--verify") && v) verify_k = atoi(v), i++;
        else if (!strcmp(a, "--quant") && v) {
            i++;
            if (!strcmp(v, "q8")) opts.quant = OX_QUANT_Q8;
            else if (!strcmp(v, "q4")) opts.quant = OX_QUANT_Q4;
            else if (!strcmp(v, "bf16")) opts.quant = OX_QUANT_BF16;
            else return usage();
        } else if (!strcmp(a, "--all")) all = 1;
        else if (!strcmp(a, "--json")) json = 1;
        else if (!strcmp(a, "--step")) step = 1;
        else if (!strcmp(a, "--bench")) do_bench = 1;
        else if (!strcmp(a, "--profile")) profile = 1;
        else if (!strcmp(a, "--tables-on-host")) opts.tables_on_host = 1;
        else if (!strcmp(a, "--lora") && v && n_lora < OX_LORA_MAX)
            loras[n_lora] = argv[++i], lora_scales[n_lora++] = 1;
        else if (!strcmp(a, "--lora-scale") && v && n_lora > 0) lora_scales[n_lora - 1] = strtof(argv[++i], NULL);
        else if (!strcmp(a, "--json-schema") && v) json_schema = argv[++i];
        else if (!strcmp(a, "--tool-notation")) tool_notation = 1;
        else if (a[0] == '-' || n_files == 64) return usage();
        else files[n_files++] = argv[i];
    }
    if (json_schema && !n_files) return print_schema_grammar(json_schema, tool_notation);
    if (!n_files || !!tokens + do_bench + !!gen.prompt != 1 || ((grammar || json_schema) && !gen.prompt) ||
        (grammar && json_schema) || top < 1 || threads < 1 || n_prompt < 1 || n_gen < 0 || verify_k < 0 || verify_k > 64)
        return usage();
    ox_err err = {0};
    if (ox_pool_init((int)threads, &err)) {
        fprintf(stderr, "oxinfer run: %s\n", err.msg);
        return 1;
    }
    if (grammar && !(gen.grammar = read_file(grammar, &gen.grammar_len))) return 1;
    if (json_schema) {
        if (!(gen.grammar = cli_json_schema_grammar(json_schema, tool_notation))) return 1;
        gen.grammar_len = strlen(gen.grammar);
    }
    cli_files fs = {0};
    ox_engine *e = NULL;
    double load_s;
    int rc = load_engine(files, n_files, &opts, gen.prompt ? 0 : OX_ENGINE_NO_TOKENIZER, &fs, &e, &load_s);
    if (!rc) rc = cli_lora_attach(e, loras, lora_scales, n_lora);
    if (!rc && do_bench) rc = bench(e, load_s, n_prompt, n_gen, json, profile, verify_k);
    else if (!rc && gen.prompt) {
        gen.max_tokens = n_gen, gen.ctx = ctx;
        rc = cli_generate(e, &gen);
    } else if (!rc) rc = run_tokens(ox_engine_model(e), tokens, top, all, json, step, ctx);
    ox_engine_free(e);
    cli_files_release(&fs);
    free((char *)gen.grammar);
    return rc;
}
