/* synth_vocab.c — the vocabulary of a synthetic model (synth_impl.h; the id layout is in
 * synth.c's header). */
#include "writers/synth_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/gguf.h"
#include "formats/json.h"

static const char *WORDS =
    "the of and to in a is that for it as was with be by on not he i this are or his from at which but have an "
    "they you were her she there one all we can their has been if more when will would who so no what up out "
    "about into them than its time only could new two some may other then do first any my now such like our "
    "over man me even most made after also did many before must through back years where much your way well "
    "down should because each just those people how too little state good very make world still own see men "
    "work long get here between both life being under never day same another know while last might us great "
    "old year off come since against go came right used take three model token layer gemma weight cache tensor "
    "engine browser thread decode prefill logit value query key attention window slide full share embed norm "
    "scale rope hello world test";
static const char *CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
static const char *PUNCT = ".,;:!?'\"()[]{}-_/\\*+=<>@#$%^&|~`";

static uint64_t str_hash(const char *s) {
    uint64_t h = 0xCBF29CE484222325ull;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 0x100000001B3ull;
    return h;
}

static int has(const vocab *v, const char *s) {
    for (size_t i = str_hash(s) & (v->set_cap - 1);; i = (i + 1) & (v->set_cap - 1)) {
        if (!v->set[i]) return 0;
        if (!strcmp(v->set[i], s)) return 1;
    }
}

static int push(vocab *v, const char *s, int type) {
    size_t len = strlen(s) + 1;
    char *d = malloc(len);
    if (!d) return -1;
    memcpy(d, s, len);
    size_t i = str_hash(s) & (v->set_cap - 1);
    while (v->set[i]) i = (i + 1) & (v->set_cap - 1);
    v->set[i] = d;
    v->tok[v->n] = d;
    v->type[v->n] = type;
    v->n++;
    return 0;
}

static int cp_len(const char *s) {
    int n = 0;
    for (; *s; s++) n += ((uint8_t)*s & 0xC0) != 0x80;
    return n;
}

void synth_vocab_free(vocab *v) {
    for (int i = 0; i < v->n; i++) free(v->tok[i]);
    for (int i = 0; i < v->n_merges; i++) free(v->merges[i]);
    free(v->tok), free(v->score), free(v->type), free(v->merges), free(v->set);
    memset(v, 0, sizeof *v);
}

/* Append a merge a+b (if new and room is left); returns 0, or -1 on allocation failure. */
static int add_merge(vocab *v, const char *a, const char *b, int n_bpe, char *out, size_t cap) {
    snprintf(out, cap, "%s%s", a, b);
    if (has(v, out) || v->n >= n_bpe) return 0;
    size_t la = strlen(a), lb = strlen(b);
    char *m = malloc(la + lb + 2);
    if (!m) return -1;
    memcpy(m, a, la), m[la] = ' ', memcpy(m + la + 1, b, lb + 1);
    v->merges[v->n_merges++] = m;
    return push(v, out, TOK_NORMAL);
}

static const char *const chat_specials[] = {"<|tool>",          "<tool|>",          "<|tool_call>", "<tool_call|>",
                                            "<|tool_response>", "<tool_response|>", "<|\"|>",       "<|think|>",
                                            "<|channel>",       "<channel|>"};
#define N_CHAT_SPECIALS ((int)(sizeof chat_specials / sizeof *chat_specials))

static int vocab_alloc(vocab *v, int N) {
    memset(v, 0, sizeof *v);
    v->set_cap = 1;
    while (v->set_cap < 2 * (size_t)N) v->set_cap <<= 1;
    v->tok = calloc((size_t)N, sizeof *v->tok);
    v->score = calloc((size_t)N, sizeof *v->score);
    v->type = calloc((size_t)N, sizeof *v->type);
    v->merges = calloc((size_t)N, sizeof *v->merges);
    v->set = calloc(v->set_cap, sizeof *v->set);
    return v->tok && v->score && v->type && v->merges && v->set ? 0 : -1;
}

/* Hex text -> bytes (NUL-terminated) in out; -1 if malformed or too long. */
static int unhex(const char *h, char *out, size_t cap) {
    size_t n = strlen(h), k = 0;
    if (n % 2 || n / 2 + 1 > cap) return -1;
    for (size_t i = 0; i < n; i += 2) {
        unsigned b;
        if (sscanf(h + i, "%2x", &b) != 1) return -1;
        out[k++] = (char)b;
    }
    out[k] = 0;
    return k ? 0 : -1;
}

/* A trained vocab, one entry a line, ids in order, merges by rank (pieces hex-encoded UTF-8):
 *   t TYPE HEX         a token (TYPE as in tokenizer.ggml.token_type)
 *   m HEXA HEXB        a merge
 * Ids 0-4 must be <pad> <eos> <bos> <unk> <mask> (the ids put_meta writes). */
static int read_vocab(const ox_synth *s, vocab *v, ox_err *err) {
    const char *path = s->vocab_path;
    FILE *f = fopen(path, "r");
    if (!f) return ox_errf(err, OX_E_IO, "synth: cannot open the vocab file %s", path);
    int N = s->vocab, line_no = 0, rc = 0;
    if (vocab_alloc(v, N)) {
        fclose(f);
        synth_vocab_free(v);
        return ox_errf(err, OX_E_NOMEM, "synth: out of memory for the vocab");
    }
    char line[1024], a[512], b[512], pa[256], pb[256];
    v->byte_first = -1;
    while (!rc && fgets(line, sizeof line, f)) {
        line_no++;
        int type;
        if (sscanf(line, "t %d %511s", &type, a) == 2 && !unhex(a, pa, sizeof pa)) {
            if (v->n >= N) rc = ox_errf(err, OX_E_FORMAT, "%s:%d: more than %d tokens", path, line_no, N);
            else if (has(v, pa)) rc = ox_errf(err, OX_E_FORMAT, "%s:%d: token %s twice", path, line_no, pa);
            else if (type < TOK_NORMAL || type > TOK_BYTE)
                rc = ox_errf(err, OX_E_FORMAT, "%s:%d: bad type %d", path, line_no, type);
            else if (push(v, pa, type)) rc = ox_errf(err, OX_E_NOMEM, "synth: out of memory for the vocab");
            if (!rc && v->byte_first < 0 && !strcmp(pa, "<0x00>")) v->byte_first = v->n - 1;
        } else if (sscanf(line, "m %511s %511s", a, b) == 2 && !unhex(a, pa, sizeof pa) && !unhex(b, pb, sizeof pb)) {
            size_t la = strlen(pa), lb = strlen(pb);
            char *m = v->n_merges < N ? malloc(la + lb + 2) : NULL;
            if (!m) rc = ox_errf(err, OX_E_FORMAT, "%s:%d: more than %d merges (or out of memory)", path, line_no, N);
            else memcpy(m, pa, la), m[la] = ' ', memcpy(m + la + 1, pb, lb + 1), v->merges[v->n_merges++] = m;
        } else {
            rc = ox_errf(err, OX_E_FORMAT, "%s:%d: expected 't TYPE HEX' or 'm HEX HEX'", path, line_no);
        }
    }
    fclose(f);
    static const char *fixed[] = {"<pad>", "<eos>", "<bos>", "<unk>", "<mask>"};
    for (int i = 0; !rc && i < 5; i++)
        if (i >= v->n || strcmp(v->tok[i], fixed[i]))
            rc = ox_errf(err, OX_E_FORMAT, "%s: token %d must be %s", path, i, fixed[i]);
    if (!rc && v->n != N) rc = ox_errf(err, OX_E_FORMAT, "%s: %d tokens, but the model's vocab is %d", path, v->n, N);
    if (rc) {
        synth_vocab_free(v);
        return rc;
    }
    v->user_first = v->n;
    if (v->byte_first < 0) v->byte_first = 0;
    for (int i = 0; i < N; i++) v->score[i] = v->type[i] == TOK_NORMAL ? -(float)i : 0.0f;
    return 0;
}

/* The vocab of a GGUF (a widened model's source): tokens, types, scores and merges as stored. */
static int vocab_from_gguf(const ox_gguf *g, int N, vocab *v, ox_err *err) {
    const ox_gguf_value *tok, *type, *merges, *score = ox_gguf_find(g, "tokenizer.ggml.scores");
    if (ox_gguf_get_arr(g, "tokenizer.ggml.tokens", &tok, err) ||
        ox_gguf_get_arr(g, "tokenizer.ggml.token_type", &type, err) ||
        ox_gguf_get_arr(g, "tokenizer.ggml.merges", &merges, err))
        return err ? err->code : OX_E_MISSING;
    const char *name = ox_gguf_name(g);
    if (tok->v.arr.n != (uint64_t)N || type->v.arr.n != (uint64_t)N || merges->v.arr.n > (uint64_t)N)
        return ox_errf(err, OX_E_FORMAT, "%s: %llu tokens and %llu types for a vocab of %d (and at most as many merges)",
                       name, (unsigned long long)tok->v.arr.n, (unsigned long long)type->v.arr.n, N);
    if (vocab_alloc(v, N)) {
        synth_vocab_free(v);
        return ox_errf(err, OX_E_NOMEM, "synth: out of memory for the vocab");
    }
    int rc = 0;
    v->byte_first = 0, v->user_first = N;
    for (int i = 0; !rc && i < N; i++) {
        const ox_gguf_str *str = ox_gguf_arr_str(tok, (uint64_t)i);
        int64_t ty;
        double sc = 0;
        if (!str || ox_gguf_arr_i64(type, (uint64_t)i, &ty) || (score && ox_gguf_arr_f64(score, (uint64_t)i, &sc)))
            rc = ox_errf(err, OX_E_FORMAT, "%s: token %d is malformed", name, i);
        else if (has(v, str->s)) rc = ox_errf(err, OX_E_FORMAT, "%s: token %d (%s) appears twice", name, i, str->s);
        else if (push(v, str->s, (int)ty)) rc = ox_errf(err, OX_E_NOMEM, "synth: out of memory for the vocab");
        if (rc) break;
        v->score[i] = (float)sc;
        if (!strcmp(str->s, "<0x00>")) v->byte_first = i;
        if (ty == TOK_USER && v->user_first == N) v->user_first = i;
    }
    for (uint64_t i = 0; !rc && i < merges->v.arr.n; i++) {
        const ox_gguf_str *m = ox_gguf_arr_str(merges, i);
        if (!m || !(v->merges[v->n_merges] = malloc(m->len + 1))) {
            rc = ox_errf(err, m ? OX_E_NOMEM : OX_E_FORMAT, "%s: merge %llu is malformed (or out of memory)", name,
                         (unsigned long long)i);
            break;
        }
        memcpy(v->merges[v->n_merges++], m->s, m->len + 1);
    }
    static const char *fixed[] = {"<pad>", "<eos>", "<bos>", "<unk>", "<mask>"}; /* the ids put_meta writes */
    for (int i = 0; !rc && i < 5; i++)
        if (strcmp(v->tok[i], fixed[i])) rc = ox_errf(err, OX_E_FORMAT, "%s: token %d must be %s", name, i, fixed[i]);
    if (rc) synth_vocab_free(v);
    return rc;
}

int synth_build_vocab(const ox_synth *s, const ox_widen *widen, vocab *v, ox_err *err) {
    if (widen) return vocab_from_gguf(ox_widen_gguf(widen), s->vocab, v, err);
    if (s->vocab_path) return read_vocab(s, v, err);
    /* a vision tower brings the image markers and placeholder (Gemma 4's strings) */
    static const char *image_specials[] = {"<|image>", "<image|>", "<|image|>"};
    int n_image = s->v_layers > 0 || (s->unified && s->v_hidden > 0) ? 3 : 0; /* or the 12B's embedder */
    int N = s->vocab, n_bpe = N - s->user_tokens - (s->chat_tokens ? N_CHAT_SPECIALS : 0) - n_image;
    if (vocab_alloc(v, N)) goto oom;
    static const char *specials[] = {"<pad>", "<eos>", "<bos>", "<unk>", "<mask>", "<|turn>", "<turn|>"};
    for (int i = 0; i < 7; i++)
        if (push(v, specials[i], i == 3 ? TOK_UNKNOWN : TOK_CONTROL)) goto oom;
    v->byte_first = v->n;
    char buf[256];
    for (int b = 0; b < 256; b++) {
        snprintf(buf, sizeof buf, "<0x%02X>", b);
        if (push(v, buf, (b >= 0x80 && !s->all_byte_tokens) ? TOK_UNUSED : TOK_BYTE)) goto oom;
    }
    int first_normal = v->n;
    const char *fixed[] = {"\n", "\t", SPACE};
    for (int i = 0; i < 3; i++)
        if (push(v, fixed[i], TOK_NORMAL)) goto oom;
    snprintf(buf, sizeof buf, "%s%s", CHARS, PUNCT);
    for (const char *p = buf; *p; p++)
        if (push(v, (char[2]){*p, 0}, TOK_NORMAL)) goto oom;
    /* words: merge chains SPACE + w[0], then + w[1], ... */
    char cur[256], ch[2] = {0, 0};
    for (const char *w = WORDS; *w && v->n < n_bpe;) {
        size_t len = strcspn(w, " ");
        snprintf(cur, sizeof cur, SPACE);
        for (size_t i = 0; i < len; i++) {
            char nxt[256];
            ch[0] = w[i];
            if (add_merge(v, cur, ch, n_bpe, nxt, sizeof nxt)) goto oom;
            memcpy(cur, nxt, sizeof cur);
        }
        w += len + (w[len] == ' ');
    }
    /* the rest: random merges of normal pieces (no space inside the right part, at most 10
     * characters); when a random pair fails, a short piece + one character (big vocabs) */
    int *normal = malloc(sizeof(int) * (size_t)N), *shortp = malloc(sizeof(int) * (size_t)N), n_norm = 0, n_short = 0;
    int first_char = first_normal + 3, n_chars = (int)(strlen(CHARS) + strlen(PUNCT));
    if (!normal || !shortp) {
        free(normal), free(shortp);
        goto oom;
    }
    for (int i = first_normal; i < v->n; i++) {
        if (!strcmp(v->tok[i], "\n") || !strcmp(v->tok[i], "\t")) continue;
        normal[n_norm++] = i;
        if (cp_len(v->tok[i]) < 10) shortp[n_short++] = i;
    }
    uint64_t st = synth_mix64((uint64_t)s->seed ^ 0x5EED);
    long misses = 0;
    while (v->n < n_bpe) {
        st += 0x9E3779B97F4A7C15ull;
        const char *a = v->tok[normal[synth_mix64(st) % (uint64_t)n_norm]];
        st += 0x9E3779B97F4A7C15ull;
        const char *b = v->tok[normal[synth_mix64(st) % (uint64_t)n_norm]];
        snprintf(buf, sizeof buf, "%s%s", a, b);
        if (strstr(b, SPACE) || cp_len(a) + cp_len(b) > 10 || has(v, buf)) {
            st += 0x9E3779B97F4A7C15ull;
            a = v->tok[shortp[synth_mix64(st) % (uint64_t)n_short]];
            st += 0x9E3779B97F4A7C15ull;
            b = v->tok[first_char + (int)(synth_mix64(st) % (uint64_t)n_chars)];
            snprintf(buf, sizeof buf, "%s%s", a, b);
            if (has(v, buf)) {
                if (++misses > 1000000) {
                    free(normal), free(shortp);
                    synth_vocab_free(v);
                    return ox_errf(err, OX_E_CONFIG, "synth: could not fill a vocab of %d", N);
                }
                continue;
            }
        }
        char nxt[256];
        if (add_merge(v, a, b, n_bpe, nxt, sizeof nxt)) {
            free(normal), free(shortp);
            goto oom;
        }
        normal[n_norm++] = v->n - 1;
        if (cp_len(nxt) < 10) shortp[n_short++] = v->n - 1;
    }
    free(shortp);
    free(normal);
    for (int i = 0; s->chat_tokens && i < N_CHAT_SPECIALS; i++)
        if (push(v, chat_specials[i], TOK_CONTROL)) goto oom;
    for (int i = 0; i < n_image; i++)
        if (push(v, image_specials[i], TOK_CONTROL)) goto oom;
    v->user_first = v->n;
    for (int i = 0; v->n < N; i++) {
        snprintf(buf, sizeof buf, "<unused%d>", i);
        if (push(v, buf, TOK_USER)) goto oom;
    }
    for (int i = 0; i < N; i++) v->score[i] = v->type[i] == TOK_NORMAL ? -(float)i : 0.0f;
    return 0;
oom:
    synth_vocab_free(v);
    return ox_errf(err, OX_E_NOMEM, "synth: out of memory building the vocab");
}
