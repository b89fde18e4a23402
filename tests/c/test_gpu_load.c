/* test_gpu_load.c — a load that uploads its matrices as it reads them (ox_load_opts.gpu_put,
 * model/gpu_attach.h): every matrix reaches the callback whole, in row order, with the bytes a
 * CPU load holds; none stays resident; a failing upload fails the load naming the tensor; a
 * model the GPU cannot take (a type outside gpu_types) loads as on the CPU; the estimate with
 * rq.gpu agrees with both loads. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "host/hostfile.h"
#include "kernels/pool.h"
#include "model/estimate.h"
#include "model/gpu_attach.h"
#include "model/model_impl.h"
#include "writers/synth.h"

static char tmp[256], path[300];

#define MAX_IDS 512

/* what the callback received: per weight id its bytes, and the next row it expects */
typedef struct sink {
    uint8_t *bytes[MAX_IDS];
    uint64_t next[MAX_IDS];
    int calls, fail_at, out_of_order;
} sink;

static int put(void *ud, const int32_t *e, uint64_t row0, uint64_t rows, const void *bytes, ox_err *err) {
    sink *s = ud;
    if (++s->calls == s->fail_at) return ox_errf(err, OX_E_IO, "the device is gone");
    int id = e[0];
    if (id < 0 || id >= MAX_IDS || e[1] != 0) return ox_errf(err, OX_E_STATE, "bad entry");
    uint64_t rb = (uint64_t)e[6];
    if (!s->bytes[id]) s->bytes[id] = calloc((size_t)e[3], (size_t)rb);
    if (row0 != s->next[id] || row0 + rows > (uint64_t)e[3]) s->out_of_order++;
    else memcpy(s->bytes[id] + row0 * rb, bytes, (size_t)(rows * rb));
    s->next[id] = row0 + rows;
    return 0;
}

static void sink_free(sink *s) {
    for (int i = 0; i < MAX_IDS; i++) free(s->bytes[i]);
}

static ox_model *load(const char *path, ox_load_opts *o, ox_err *err) {
    int h = ox_host_open_path(path, err);
    ox_model_files *mf = h < 0 ? NULL : ox_files_open(&h, 1, err);
    return mf ? ox_model_load(mf, o, err) : NULL;
}

/* the matrices a CPU load has, by their place in the model struct */
static int matrices(ox_model *m, ox_matrix **out) {
    int n = 0;
    out[n++] = &m->embd;
    if (m->c.ple_dim > 0) out[n++] = &m->ple_model_proj;
    for (int l = 0; l < m->c.n_layers; l++) {
        layer_w *w = &m->L[l];
        ox_matrix *ms[] = {&w->q, &w->k, &w->v, &w->o, &w->gate, &w->up, &w->down, &w->ple_gate, &w->ple_proj};
        for (size_t i = 0; i < sizeof ms / sizeof *ms; i++)
            if (ms[i]->rows > 0) out[n++] = ms[i];
    }
    return n;
}

static void test_upload_while_loading(void) {
    ox_err err = {0};
    ox_model *cpu = load(path, &(ox_load_opts){0}, &err);
    CHECK_MSG(cpu != NULL, "%s", err.msg);
    sink s = {0};
    ox_load_opts o = {.tables_on_host = -1, .gpu_put = put, .gpu_put_ud = &s, .gpu_types = ~0ull};
    ox_model *gpu = load(path, &o, &err);
    CHECK_MSG(gpu != NULL, "%s", err.msg);
    if (!cpu || !gpu) goto done;
    CHECK(gpu->gpu != NULL && gpu->gpu_only);
    CHECK(gpu->opts.tables_on_host == 1); /* -1: yes on the GPU */
    CHECK(s.out_of_order == 0);
    ox_matrix *mc[2 + 9 * OX_MAX_LAYERS], *mg[2 + 9 * OX_MAX_LAYERS];
    int n = matrices(cpu, mc);
    CHECK(matrices(gpu, mg) == n);
    uint64_t mat_bytes = 0;
    for (int i = 0; i < n; i++) {
        ox_matrix *a = mc[i], *b = mg[i];
        uint64_t bytes = (uint64_t)a->rows * a->row_bytes;
        mat_bytes += bytes;
        CHECK(b->data == NULL && b->rows == a->rows && b->type == a->type);
        int id = ox_gpu_add_matrix(gpu->gpu, b, &err); /* registered already: its id */
        CHECK_MSG(id >= 0 && id < MAX_IDS && s.bytes[id], "matrix %d: id %d", i, id);
        if (id < 0 || id >= MAX_IDS || !s.bytes[id]) continue;
        CHECK_MSG(s.next[id] == (uint64_t)a->rows, "matrix %d: %llu of %d rows", i, (unsigned long long)s.next[id],
                  a->rows);
        CHECK_MSG(memcmp(s.bytes[id], a->data, (size_t)bytes) == 0, "matrix %d: bytes differ", i);
    }
    ox_model_stats sc, sg;
    ox_model_stats_get(cpu, &sc);
    ox_model_stats_get(gpu, &sg);
    CHECK_MSG(sg.resident_bytes + mat_bytes == sc.resident_bytes, "resident %llu + %llu, CPU %llu",
              (unsigned long long)sg.resident_bytes, (unsigned long long)mat_bytes,
              (unsigned long long)sc.resident_bytes);
    int nt = 0;
    ox_gpu_table(gpu->gpu, &nt);
    CHECK(nt > n); /* the vectors too, for the host to upload */
    /* the estimate on the GPU: the wasm side is the GPU load's, the device's the CPU load's */
    ox_mem_estimate e, ec;
    ox_mem_request rq = {64, 0, 1, 0, 1};
    CHECK(ox_memory_estimate(ox_model_files_of(gpu), &o, &rq, &e, &err) == 0);
    CHECK(e.gpu == 1 && e.weights == sg.resident_bytes && e.gpu_weights == sc.resident_bytes && e.kv == 0);
    rq.gpu = 0;
    CHECK(ox_memory_estimate(ox_model_files_of(gpu), &o, &rq, &ec, &err) == 0);
    CHECK(ec.gpu == 0 && ec.weights == sc.resident_bytes && ec.gpu_weights == 0);
done:
    ox_model_free(cpu);
    ox_model_free(gpu);
    sink_free(&s);
}

static void test_failed_upload(void) {
    sink s = {.fail_at = 3};
    ox_err err = {0};
    ox_load_opts o = {.gpu_put = put, .gpu_put_ud = &s, .gpu_types = ~0ull};
    ox_model *m = load(path, &o, &err);
    CHECK(m == NULL);
    CHECK(err.code == OX_E_IO);
    CHECK_STR_CONTAINS(err.msg, "upload to the GPU");
    CHECK_STR_CONTAINS(err.msg, "the device is gone");
    CHECK_STR_CONTAINS(err.msg, ".weight");
    ox_model_free(m);
    sink_free(&s);
}

static void test_not_for_the_gpu(void) {
    sink s = {0};
    ox_err err = {0};
    ox_load_opts o = {.tables_on_host = -1, .gpu_put = put, .gpu_put_ud = &s, .gpu_types = 1ull << OX_F32};
    ox_model *m = load(path, &o, &err); /* Q8_0 matrices: no kernel in this mask */
    CHECK_MSG(m != NULL, "%s", err.msg);
    if (m) {
        CHECK(m->gpu == NULL && !m->gpu_only && s.calls == 0);
        CHECK(m->opts.tables_on_host == 0);
        CHECK(m->embd.data != NULL);
        ox_mem_estimate e;
        ox_mem_request rq = {64, 0, 1, 0, 1};
        CHECK(ox_memory_estimate(ox_model_files_of(m), &o, &rq, &e, &err) == 0);
        CHECK(e.gpu == 0);
    }
    ox_model_free(m);
    sink_free(&s);
}

int main(void) {
    snprintf(tmp, sizeof tmp, "/tmp/ox_gpu_load_XXXXXX");
    if (!mkdtemp(tmp)) return 1;
    ox_err err = {0};
    ox_pool_init(2, &err);
    snprintf(path, sizeof path, "%s/tiny-q8_0.gguf", tmp);
    ox_synth s;
    ox_synth_preset(&s, "tiny", NULL);
    s.type = s.embd_type = s.ple_proj_type = OX_Q8_0;
    if (ox_synth_write_gguf(&s, path, &err)) {
        fprintf(stderr, "synth: %s\n", err.msg);
        return 1;
    }
    RUN(test_upload_while_loading);
    RUN(test_failed_upload);
    RUN(test_not_for_the_gpu);
    unlink(path);
    rmdir(tmp);
    return check_summary("test_gpu_load");
}
