/* record.h — the GPU backend's side of the forward seam (docs/architecture.md "GPU backend").
 *
 * A forward running on the GPU does not compute: it records its ops, in order, into a command
 * list of int32 words, then hands the list to the host in one synchronous call (ox_gpu_run).
 * The host (js/gpu/) encodes the whole list into one GPU command buffer, submits it, waits,
 * and writes back only what the READ ops name. The forward stays synchronous and reads as on
 * the CPU; only the backend under it changes.
 *
 * Operands are named, not pointed at:
 *  - activations by their byte offset in the step's activation scratch: ox_gpu_begin gives
 *    the scratch and where its regions (one per activation array) start; the host keeps one
 *    GPU buffer per region, so an op's operands in different regions never alias a binding;
 *    every activation pointer an op takes must lie in the scratch;
 *  - weights (matrices, and f32 vectors such as norm weights) by the id ox_gpu_add_* gave them
 *    at attach time; the host uploaded their bytes once, in their stored block format;
 *  - KV caches by (session, layer): the host keeps them in GPU buffers of rows stored as the
 *    session's KV type (f32, f16, q8_0: model/kv.h), row p for position p, or on a sliding
 *    layer's ring row p mod cap (cap: the ring's rows, as the CPU's cache keeps them).
 *
 * The list is [OX_GPU_MAGIC, session, max_ctx, kv_len, act_bytes, n_ops, n_regions], the
 * regions' start offsets, then per op its code and operands (floats as their bit patterns). The op table below is the format; js/gpu/
 * reads it from js/abi.js. Recording never fails on its own: an allocation failure or an
 * unknown operand marks the list broken and ox_gpu_run reports it. */
#ifndef OX_GPU_RECORD_H
#define OX_GPU_RECORD_H

#include <stddef.h>
#include <stdint.h>
#include "base/err.h"
#include "kernels/kernels.h"

#define OX_GPU_MAGIC  0x4f584701 /* "OXG" 1: the list format's version */
#define OX_GPU_HEADER 7

/* X(NAME, code, operands): the ops of a step. Offsets (off) are bytes into the activation
 * scratch; counts are floats. KV_WRITE: type an ox_kv_type, ring the rows of a sliding layer's
 * ring (0: row p for position p). GEGLU: y strided as g when y = g, else rows of width.
 * ROUTE: softmax of the router logits z, the top-K experts (ties: the lower id) into sel, their
 * probabilities / their sum * the scale vector w[e] into wts. EXPERTS: sel starts its region.
 * COMBINE adds a token's slots in increasing expert id (the CPU's order).
 * The vision tower's (vision/vision.h): ROPE2D turns each head's lanes [0, hd/2) by the token's
 * column t % pw and [hd/2, hd) by its row t / pw (NEOX halves of hd/2, base^(-4i/hd));
 * SELF_ATTEND attends every token to all ntok (no cache, no mask, scale 1), k and v starting
 * their regions; POOL averages k x k blocks of the ph x pw grid of rows of width, times scale,
 * then (y - bias) * std when bias >= 0 (vector ids). */
#define OX_GPU_OPS(X)                                                                                                  \
    X(UPLOAD, 1, "off bytes: the scratch's bytes [off, off+bytes) as the CPU wrote them")                              \
    X(MATMUL, 2, "w x y n: y[n][rows] = x[n][cols] W^T, W a matrix id")                                                \
    X(RMS, 3, "y x w rows width eps: y = rmsnorm(x) (* vector w; w < 0: none) per row")                                \
    X(ROPE, 4, "x ntok nh hd pos pairs base factor: NEOX RoPE, token t at pos+t")                                      \
    X(KV_WRITE, 5, "layer pos ntok k v width type ring: K, V rows into the cache (ox_kv_type; ring rows)")             \
    X(ATTEND, 6, "layer q out ntok pos nh hd group window bidir: causal/windowed attention")                           \
    X(GEGLU, 7, "y g u rows width gstride ustride: y = gelu_tanh(g) * u (y as g, or rows of width)")                   \
    X(ADD, 8, "y x count: y += x")                                                                                     \
    X(SCALE, 9, "y count a: y *= a")                                                                                   \
    X(MIX, 10, "y x count b a: y = (y + x * b) * a")                                                                   \
    X(SOFTCAP, 11, "y count cap: y = cap * tanh(y / cap)")                                                             \
    X(COPY, 12, "y x count: y = x")                                                                                    \
    X(READ, 13, "off bytes dst: the scratch's bytes as at this op, to wasm memory at dst after the step")              \
    X(ROUTE, 14, "z sel wts w ntok nexp topk: router softmax, top-K into sel, weights into wts")                       \
    X(EXPERTS, 15, "w x sel y nslots xdiv: y[s] = W[sel[s]] x[s / xdiv], W stacked experts")                           \
    X(COMBINE, 16, "y ys sel wts ntok topk width: y[t] = sum of t's slots' wts * ys, by expert id")                    \
    X(ROPE2D, 17, "x ntok nh hd pw base: 2-D RoPE, column t % pw then row t / pw")                                     \
    X(SELF_ATTEND, 18, "q k v out ntok nh nkv hd: softmax(q k^T) v over all ntok tokens")                              \
    X(POOL, 19, "y x ph pw k width scale bias std: k x k average pooling times scale, standardized")                   \
    X(CLAMP, 20, "y count lo hi: y = min(max(y, lo), hi)")
#define OX_GPU_OP_ENUM_(name, code, doc) OX_GPU_##name = code,
typedef enum { OX_GPU_OPS(OX_GPU_OP_ENUM_) } ox_gpu_op;
#undef OX_GPU_OP_ENUM_

/* The weights table handed to the host (ox_gpu_table), int32 words per entry: id, kind (0 matrix, 1 f32 vector), type, rows, cols, data pointer, row bytes, unit
 * rows (a stacked expert tensor: rows per expert; else 1) */
#define OX_GPU_ENTRY_WORDS 8

typedef struct ox_gpu ox_gpu;

/* types: bit t set when the host has kernels for ggml type t (matrices of other types are not
 * registered: their ops run on the CPU inside the step, see ox_gpu_restart). */
ox_gpu *ox_gpu_new(uint32_t types, ox_err *err);
/* Whether the host has kernels for ggml type t. */
int ox_gpu_has_type(const ox_gpu *g, int type);
/* Whether this weight (matrix or vector) was registered for upload. */
int ox_gpu_has(const ox_gpu *g, const void *w);
void ox_gpu_free(ox_gpu *g);
/* Register a weight for upload; returns its id (>= 0) or a negative OX_E_* (err set). The
 * same pointer registered twice keeps one id. */
int ox_gpu_add_matrix(ox_gpu *g, const ox_matrix *M, ox_err *err);
int ox_gpu_add_vector(ox_gpu *g, const float *v, int n, ox_err *err);
/* The same, or nothing for a matrix of a type without kernels (its op runs on the CPU inside the
 * step: ox_gpu_linear) or an empty one, or a NULL vector: 0 or a negative OX_E_*. */
int ox_gpu_offer_matrix(ox_gpu *g, const ox_matrix *M, ox_err *err);
int ox_gpu_offer_vector(ox_gpu *g, const float *v, int n, ox_err *err);
/* A stacked expert tensor: rows / n_experts rows per expert (no expert split across buffers). */
int ox_gpu_add_experts(ox_gpu *g, const ox_matrix *M, int n_experts, ox_err *err);
/* The table of registered weights: n entries of OX_GPU_ENTRY_WORDS words. */
const int32_t *ox_gpu_table(const ox_gpu *g, int *n);

/* Start a step of `session` (any stable key) over the activation scratch [act, act+bytes),
 * whose regions start at the n_regions ascending offsets `regions` (the first is 0). */
void ox_gpu_begin(ox_gpu *g, const void *session, int max_ctx, int kv_len, const void *act, size_t bytes,
                  const uint32_t *regions, int n_regions);
void ox_gpu_upload(ox_gpu *g, const void *p, size_t bytes);
void ox_gpu_matmul(ox_gpu *g, const ox_matrix *W, const float *x, int n, float *y);
void ox_gpu_rms(ox_gpu *g, float *y, const float *x, const float *w, int rows, int width, float eps);
void ox_gpu_rope(ox_gpu *g, float *x, int ntok, int nh, int hd, int pos, int pairs, float base, float factor);
void ox_gpu_kv_write(ox_gpu *g, int layer, int pos, int ntok, const float *k, const float *v, int width, int type,
                     int cap);
void ox_gpu_attend(ox_gpu *g, int layer, const float *q, float *out, int ntok, int pos, int nh, int hd, int group,
                   int window, int bidir);
void ox_gpu_geglu(ox_gpu *g, float *y, const float *gt, const float *u, int rows, int width, int gstride, int ustride);
void ox_gpu_add(ox_gpu *g, float *y, const float *x, size_t count);
void ox_gpu_scale(ox_gpu *g, float *y, size_t count, float a);
void ox_gpu_mix(ox_gpu *g, float *y, const float *x, size_t count, float b, float a);
void ox_gpu_softcap(ox_gpu *g, float *y, size_t count, float cap);
void ox_gpu_copy(ox_gpu *g, float *y, const float *x, size_t count);
/* Routed experts (docs/gemma4.md §2.5) without a read-back: sel (int) and wts (float) hold
 * ntok x topk slots; EXPERTS' sel must start its scratch region. */
void ox_gpu_route(ox_gpu *g, float *z, int *sel, float *wts, const float *scale, int ntok, int nexp, int topk);
void ox_gpu_experts(ox_gpu *g, const ox_matrix *W, const float *x, const int *sel, float *y, int nslots, int xdiv);
void ox_gpu_combine(ox_gpu *g, float *y, const float *ys, const int *sel, const float *wts, int ntok, int topk,
                    int width);
/* The vision tower's ops (above); bias and std NULL: no standardization. */
void ox_gpu_rope2d(ox_gpu *g, float *x, int ntok, int nh, int hd, int pw, float base);
void ox_gpu_self_attend(ox_gpu *g, const float *q, const float *k, const float *v, float *out, int ntok, int nh,
                        int nkv, int hd);
void ox_gpu_pool(ox_gpu *g, float *y, const float *x, int ph, int pw, int k, int width, float scale, const float *bias,
                 const float *std);
void ox_gpu_clamp(ox_gpu *g, float *y, size_t count, float lo, float hi);
/* y[n][rows] = x W^T: recorded when W was registered; else the step is cut there (W's type has
 * no GPU kernel): the recorded part runs, x comes back, the CPU computes y with ws, and the
 * step goes on recording with y uploaded (ox_gpu_restart). 0 or a negative OX_E_*. */
int ox_gpu_linear(ox_gpu *g, ox_scratch *ws, const ox_matrix *W, const float *x, int n, float *y, ox_err *err);
/* Copy activations back into wasm memory at dst once the step ran. */
void ox_gpu_read(ox_gpu *g, const void *p, size_t bytes, void *dst);
/* Hand the recorded step to the host and wait for it: 0, or a negative OX_E_* with err
 * (a list broken while recording, the host's failure: a lost device, no GPU). */
int ox_gpu_run(ox_gpu *g, ox_err *err);
/* Go on recording the same step after an ox_gpu_run in its middle (an op run on the CPU: its
 * input read back, its output uploaded as the new list's first op); the GPU keeps the
 * activations between the two. */
void ox_gpu_restart(ox_gpu *g);
/* The session's KV caches on the GPU are no longer needed (its end). */
void ox_gpu_forget(ox_gpu *g, const void *session);

#endif
