/* hostfile.c — native host-file table: paths read with pread(), and in-memory buffers
 * (tests, fuzzers). The table is process-global by design (see hostfile.h); it is not
 * locked, because reads come only from the thread that runs the forward pass.
 * The wasm build uses hostfile_wasm.c instead, except the C tests' (OX_HOST_NATIVE, see hostfile.h). */
#if !defined(__EMSCRIPTEN__) || defined(OX_HOST_NATIVE)
#define _FILE_OFFSET_BITS 64
#define _XOPEN_SOURCE     700
#include "host/hostfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define OX_MAX_FILES 256

typedef struct {
    int used;
    int fd; /* -1 for memory files */
    const uint8_t *mem;
    int64_t size;
    char *name;
} host_file;

static host_file files[OX_MAX_FILES];
static uint64_t bytes_read, n_reads;
static void (*trace_fn)(void *ud, int file, uint64_t off, size_t len);
static void *trace_ud;

void ox_host_trace(void (*fn)(void *ud, int file, uint64_t off, size_t len), void *ud) { trace_fn = fn, trace_ud = ud; }

static host_file *get(int h) { return (h >= 0 && h < OX_MAX_FILES && files[h].used) ? &files[h] : NULL; }

static int slot(void) {
    for (int i = 0; i < OX_MAX_FILES; i++)
        if (!files[i].used) return i;
    return -1;
}

static const char *base_name(const char *p) {
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

int ox_host_open_path(const char *path, ox_err *err) {
    int h = slot();
    if (h < 0) return ox_errf(err, OX_E_RANGE, "%s: too many open files (%d)", path, OX_MAX_FILES);
    int fd = open(path, O_RDONLY);
    if (fd < 0) return ox_errf(err, OX_E_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return ox_errf(err, OX_E_IO, "%s: not a regular file", path);
    }
    files[h] = (host_file){1, fd, NULL, (int64_t)st.st_size, strdup(base_name(path))};
    return h;
}

int ox_host_open_mem(const char *name, const void *data, size_t len) {
    int h = slot();
    if (h < 0) return OX_E_RANGE;
    files[h] = (host_file){1, -1, data, (int64_t)len, strdup(name)};
    return h;
}

void ox_host_close(int file) {
    host_file *f = get(file);
    if (!f) return;
    if (f->fd >= 0) close(f->fd);
    free(f->name);
    memset(f, 0, sizeof *f);
}

int64_t ox_host_size(int file) {
    host_file *f = get(file);
    return f ? f->size : -1;
}

const char *ox_host_name(int file) {
    host_file *f = get(file);
    return f ? f->name : "?";
}

uint64_t ox_host_bytes_read(void) { return bytes_read; }
uint64_t ox_host_reads(void) { return n_reads; }

int ox_host_read(int file, uint64_t off, size_t len, void *dst, ox_err *err) {
    host_file *f = get(file);
    if (!f) return ox_errf(err, OX_E_IO, "read from unknown host file %d", file);
    if (off > (uint64_t)f->size || len > (uint64_t)f->size - off)
        return ox_errf(err, OX_E_TRUNCATED, "%s: read of %zu bytes at offset %llu beyond file end (%lld bytes)",
                       f->name, len, (unsigned long long)off, (long long)f->size);
    n_reads++;
    if (trace_fn) trace_fn(trace_ud, file, off, len);
    if (f->fd < 0) {
        memcpy(dst, f->mem + off, len);
        bytes_read += len;
        return 0;
    }
    uint8_t *p = dst;
    while (len > 0) {
#ifdef __EMSCRIPTEN__
        /* the wasm developer tools (NODERAWFS): Emscripten 3.1.6's pread drops the offset's
         * high word, so past 2 GiB it read the wrong bytes; its lseek takes all 64 bits
         * (host reads come from one thread at a time) */
        ssize_t r = lseek(f->fd, (off_t)off, SEEK_SET) < 0 ? -1 : read(f->fd, p, len);
#else
        ssize_t r = pread(f->fd, p, len, (off_t)off);
#endif
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0)
            return ox_errf(err, OX_E_IO, "%s: read failed at offset %llu: %s", f->name, (unsigned long long)off,
                           r < 0 ? strerror(errno) : "unexpected end of file");
        p += r, off += (uint64_t)r, len -= (size_t)r, bytes_read += (uint64_t)r;
    }
    return 0;
}
#endif
