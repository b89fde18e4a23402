/* hostfile_wasm.c — the host-read interface in wasm: the table of files lives in JS
 * (js/host/hostfile.js, class HostFiles); C calls the imports of src/host/hostfile_lib.js, which run
 * synchronously on the calling thread. Only the thread that runs the forward pass (the
 * engine worker, which owns the table) may read; a pool thread gets an error.
 * Offsets travel as doubles: exact up to 2^53 bytes. */
#if defined(__EMSCRIPTEN__) && !defined(OX_HOST_NATIVE)
#include "host/hostfile.h"

#include <stdlib.h>
#include <string.h>

#include "wasm/abi.h" /* the imports (src/host/hostfile_lib.js) and ox_host_wasm_forget */

#define OX_MAX_FILES 256

static char *names[OX_MAX_FILES]; /* display names, fetched from JS once per handle */
static uint64_t bytes_read, n_reads;

int64_t ox_host_size(int file) {
    double s = ox_js_host_size(file);
    return s < 0 ? -1 : (int64_t)s;
}

const char *ox_host_name(int file) {
    if (file < 0 || file >= OX_MAX_FILES || ox_host_size(file) < 0) return "?";
    if (!names[file]) {
        char buf[256];
        if (ox_js_host_name(file, buf, sizeof buf) < 0) return "?";
        names[file] = strdup(buf);
        if (!names[file]) return "?";
    }
    return names[file];
}

OX_EXPORT void ox_host_wasm_forget(int file) {
    if (file < 0 || file >= OX_MAX_FILES) return;
    free(names[file]);
    names[file] = NULL;
}

uint64_t ox_host_bytes_read(void) { return bytes_read; }
uint64_t ox_host_reads(void) { return n_reads; }

int ox_host_read(int file, uint64_t off, size_t len, void *dst, ox_err *err) {
    int64_t size = ox_host_size(file);
    if (size < 0) return ox_errf(err, OX_E_IO, "read from unknown host file %d", file);
    if (off > (uint64_t)size || len > (uint64_t)size - off)
        return ox_errf(err, OX_E_TRUNCATED, "%s: read of %zu bytes at offset %llu beyond file end (%lld bytes)",
                       ox_host_name(file), len, (unsigned long long)off, (long long)size);
    if (len == 0) return 0;
    char msg[OX_ERR_MSG];
    msg[0] = 0;
    int rc = ox_js_host_read(file, (double)off, len, dst, msg, (int)sizeof msg);
    if (rc != 0) return ox_errf(err, rc < 0 ? rc : OX_E_IO, "%s", msg[0] ? msg : "host read failed");
    n_reads++;
    bytes_read += len;
    return 0;
}
#endif
