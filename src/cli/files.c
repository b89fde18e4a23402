/* files.c — the model files a subcommand names: paths opened as host files (a checkpoint
 * directory expanded into its model files), the tensor directory over them, and the cleanup. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "host/hostfile.h"
#include "formats/tensors.h"

static int ends_with(const char *s, const char *suf) {
    size_t n = strlen(s), k = strlen(suf);
    return n >= k && !strcmp(s + n - k, suf);
}

/* The files of a checkpoint directory, as a model is given to loadModel: its GGUF files (one,
 * or the splits of one); else its safetensors shards with their index and the side files the
 * loader reads by name. */
static int is_weights(const char *name, int gguf) {
    return gguf ? ends_with(name, ".gguf")
                : ends_with(name, ".safetensors") || ends_with(name, ".safetensors.index.json");
}
static int is_side_file(const char *name) {
    static const char *const names[] = {"config.json",           "generation_config.json", "tokenizer.json",
                                        "tokenizer_config.json", "chat_template.jinja",    "adapter_config.json"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (!strcmp(name, names[i])) return 1;
    return 0;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int push(const char *cmd, cli_files *fs, const char *path) {
    ox_err err = {0};
    if (fs->n == fs->cap) {
        int cap = fs->cap ? 2 * fs->cap : 16, *h = realloc(fs->h, sizeof *h * (size_t)cap);
        if (!h) return fprintf(stderr, "%s: out of memory\n", cmd), 1;
        fs->h = h, fs->cap = cap;
    }
    if ((fs->h[fs->n] = ox_host_open_path(path, &err)) < 0) return fprintf(stderr, "%s: %s\n", cmd, err.msg), 1;
    fs->n++;
    return 0;
}

static int add_dir(const char *cmd, cli_files *fs, const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return fprintf(stderr, "%s: %s: cannot list the directory\n", cmd, dir), 1;
    char **names = NULL;
    int n = 0, cap = 0, gguf = 0, rc = 0;
    for (struct dirent *e; (e = readdir(d)) && !rc;) {
        if (e->d_name[0] == '.') continue;
        if (n == cap) {
            char **nn = realloc(names, sizeof *nn * (size_t)(cap = cap ? 2 * cap : 32));
            if (!nn) rc = 1;
            else names = nn;
        }
        if (!rc && !(names[n++] = strdup(e->d_name))) n--, rc = 1;
        if (!rc) gguf |= ends_with(e->d_name, ".gguf");
    }
    closedir(d);
    if (rc) fprintf(stderr, "%s: out of memory\n", cmd);
    if (n) qsort(names, (size_t)n, sizeof *names, by_name);
    int found = 0;
    for (int i = 0; i < n && !rc; i++) {
        int weights = is_weights(names[i], gguf);
        if (!weights && (gguf || !is_side_file(names[i]))) continue;
        found += weights;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        rc = push(cmd, fs, path);
    }
    if (!rc && !found)
        rc = 1,
        fprintf(stderr, "%s: %s: no model files in the directory (GGUF, or safetensors with config.json)\n", cmd, dir);
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
    return rc;
}

int cli_files_add(const char *cmd, cli_files *fs, const char *path) {
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) return add_dir(cmd, fs, path);
    return push(cmd, fs, path);
}

void cli_files_release(cli_files *fs) {
    for (int i = 0; i < fs->n; i++) ox_host_close(fs->h[i]);
    free(fs->h);
    *fs = (cli_files){0};
}

ox_model_files *cli_files_open(const char *cmd, const cli_files *fs) {
    ox_err err = {0};
    ox_model_files *mf = ox_files_open(fs->h, fs->n, &err);
    if (!mf) fprintf(stderr, "%s: %s: %s\n", cmd, ox_err_code_name(err.code), err.msg);
    return mf;
}
