/* tokenize.c — `oxinfer tokenize FILE... (--text STR | --file F) [--json] [--no-bos]
 * [--no-special] [--lines]`: text -> ids with the tokenizer of a GGUF or a tokenizer.json.
 * With several files the first GGUF is used, else the file named tokenizer.json.
 * --lines encodes every line of the text (without its '\n') apart, one result per line. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "formats/gguf.h"
#include "host/hostfile.h"
#include "text/tokenizer.h"

static int usage(void) {
    fprintf(stderr,
            "usage: oxinfer tokenize FILE... (--text STR | --file F) [--json] [--no-bos] [--no-special] [--lines]\n");
    return 2;
}

static char *read_all(const char *path, size_t *len) {
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0, k;
    char *buf = malloc(cap);
    while (buf && (k = fread(buf + n, 1, cap - n, f)) > 0) {
        n += k;
        if (n == cap) {
            char *p = realloc(buf, cap *= 2);
            if (!p) free(buf);
            buf = p;
        }
    }
    if (buf && ferror(f)) free(buf), buf = NULL;
    if (f != stdin) fclose(f);
    *len = n;
    return buf;
}

/* The file to take the tokenizer from: the first GGUF, else tokenizer.json, else the only one. */
static int pick(const int *files, int n) {
    for (int i = 0; i < n; i++) {
        uint32_t magic = 0;
        if (ox_host_size(files[i]) >= 4 && ox_host_read(files[i], 0, 4, &magic, NULL) == 0 && magic == OX_GGUF_MAGIC)
            return files[i];
    }
    for (int i = 0; i < n; i++) {
        const char *name = ox_host_name(files[i]), *base = strrchr(name, '/');
        if (strcmp(base ? base + 1 : name, "tokenizer.json") == 0) return files[i];
    }
    return n == 1 ? files[0] : -1;
}

static int print_ids(const ox_tokenizer *t, const char *s, size_t n, int flags, int json, int32_t **ids, int *cap) {
    ox_err err = {0};
    int k = ox_tokenize(t, s, n, flags, *ids, *cap, &err);
    if (k > *cap) {
        int32_t *p = realloc(*ids, (size_t)k * sizeof *p);
        if (!p) {
            fprintf(stderr, "oxinfer tokenize: out of memory for %d ids\n", k);
            return 1;
        }
        *ids = p, *cap = k;
        k = ox_tokenize(t, s, n, flags, *ids, *cap, &err);
    }
    if (k < 0) {
        fprintf(stderr, "oxinfer tokenize: %s\n", err.msg);
        return 1;
    }
    fputs(json ? "[" : "", stdout);
    for (int i = 0; i < k; i++) printf(i ? (json ? ",%d" : " %d") : "%d", (*ids)[i]);
    fputs(json ? "]\n" : "\n", stdout);
    return 0;
}

int cli_tokenize(int argc, char **argv) {
    const char *text = NULL, *path = NULL;
    int json = 0, lines = 0, flags = OX_TOK_ADD_BOS | OX_TOK_SPECIAL, rc = 1;
    cli_files fs = {0};
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--text") == 0 && i + 1 < argc) text = argv[++i];
        else if (strcmp(argv[i], "--file") == 0 && i + 1 < argc) path = argv[++i];
        else if (strcmp(argv[i], "--json") == 0) json = 1;
        else if (strcmp(argv[i], "--lines") == 0) lines = 1;
        else if (strcmp(argv[i], "--no-bos") == 0) flags &= ~OX_TOK_ADD_BOS;
        else if (strcmp(argv[i], "--no-special") == 0) flags &= ~OX_TOK_SPECIAL;
        else if (argv[i][0] == '-') {
            rc = usage();
            goto out;
        } else if (cli_files_add("oxinfer tokenize", &fs, argv[i])) goto out;
    }
    if (!fs.n || !text == !path) {
        rc = usage();
        goto out;
    }
    size_t len = text ? strlen(text) : 0;
    char *buf = path ? read_all(path, &len) : NULL;
    if (path && !buf) {
        fprintf(stderr, "oxinfer tokenize: %s: cannot read\n", path);
        goto out;
    }
    int f = pick(fs.h, fs.n);
    ox_err err = {0};
    ox_tokenizer *t = f < 0 ? NULL : ox_tokenizer_open(f, &err);
    if (!t) {
        fprintf(stderr, "oxinfer tokenize: %s\n", f < 0 ? "no GGUF or tokenizer.json among the files" : err.msg);
        free(buf);
        goto out;
    }
    const char *s = buf ? buf : text;
    int32_t *ids = NULL;
    int cap = 0;
    rc = 0;
    if (!lines) rc = print_ids(t, s, len, flags, json, &ids, &cap);
    for (size_t i = 0; lines && i < len && !rc;) {
        const char *nl = memchr(s + i, '\n', len - i);
        size_t j = nl ? (size_t)(nl - s) : len;
        rc = print_ids(t, s + i, j - i, flags, json, &ids, &cap);
        i = j + 1;
    }
    free(ids);
    free(buf);
    ox_tokenizer_free(t);
out:
    cli_files_release(&fs);
    return rc;
}
