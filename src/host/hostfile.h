/* hostfile.h — the host-read interface: the only way the core reads model files.
 *
 * Nothing assumes a file is in memory. A file is a small integer handle into the
 * host-file table, which is process-global state on purpose (one of two exceptions
 * to "no hidden globals", with the thread pool): in wasm the table lives in JS (the
 * host-file shim, js/host/hostfile.js) and C only sees handles.
 *
 *   natively: ox_host_open_path() opens a path; reads are pread().
 *   wasm:     JS registers sources (Node fs, File/Blob, HTTP Range, OPFS) and passes
 *             handles to the wasm API; reads are synchronous calls into JS
 *             (the imports of src/wasm/abi.h, in src/host/hostfile_lib.js), executed on the calling thread.
 *
 * Reads must happen on the thread that runs the forward pass (never a pool thread):
 * in a browser the sync read primitives exist only on that worker thread. */
#ifndef OX_HOSTFILE_H
#define OX_HOSTFILE_H

#include <stdint.h>
#include <stddef.h>
#include "base/err.h"

/* Read exactly `len` bytes at `off` into dst. A short read is OX_E_IO/OX_E_TRUNCATED
 * with the file name in the message. */
int ox_host_read(int file, uint64_t off, size_t len, void *dst, ox_err *err);

/* Size in bytes, or -1 for an unknown handle. */
int64_t ox_host_size(int file);

/* Display name (file name or URL) for messages; "?" for an unknown handle. */
const char *ox_host_name(int file);

/* Counters for stats(): bytes and read calls since start (all files). */
uint64_t ox_host_bytes_read(void);
uint64_t ox_host_reads(void);

/* OX_HOST_NATIVE: the native table (hostfile.c) in a wasm build, for the C tests under Node
 * (tests/c/run_wasm.sh, NODERAWFS); the engine itself never defines it. */
#if !defined(__EMSCRIPTEN__) || defined(OX_HOST_NATIVE)
/* Native only: open a path read-only and register it; returns a handle >= 0 or <0. */
int ox_host_open_path(const char *path, ox_err *err);
/* Native and tests: register an in-memory buffer (not copied; caller keeps it alive). */
int ox_host_open_mem(const char *name, const void *data, size_t len);
void ox_host_close(int file);
/* Tests: report every read (file, offset, length) to fn before it runs; NULL: stop. */
void ox_host_trace(void (*fn)(void *ud, int file, uint64_t off, size_t len), void *ud);
#endif

#endif
