/* kernels_tile.h — the parts of the SIMD matmul tiles that do not depend on the vector unit:
 * the K-quant super-block driver, the scalar halves of the unpackers and the tile table.
 * Included once, at the end, by the one architecture file compiled for the target
 * (kernels_simd128.c, kernels_x86.c), which defines before it, for its own vectors:
 *   unpack_q45_k(qs, qh, k)        Q4_K/Q5_K quants (qh NULL for Q4_K) into k->q, scaled
 *   unpack_q6_k_quants(b, k)       Q6_K quants into k->q, scaled
 *   kblock_dot(k, a, ab, has_min)  one unpacked super-block . one token's Q8_K block
 *   tile_legacy(W, a, r0, r1, y, q4)  the Q8_0 (q4 = 0) / Q4_0 (q4 = 1) tile
 * and optionally (OX_KDOT_DIRECT) kdot_q4_k/q5_k/q6_k, the one-token direct dots, with
 * (OX_KROW_MAX_K45, OX_KROW_MAX_Q6_K) krow_q4_k/q5_k/q6_k, direct rows of 2 to that many
 * tokens, or
 * (OX_KTILE) ktile_q4_k/q5_k/q6_k, whole K-quant tiles for every token count that take the
 * place of the driver here (but for Q6_K at OX_KTILE_Q6_K_UNPACK tokens and more).
 * All of it is static, in the architecture file's unit, so that kblock_dot and the unpackers
 * still inline into the driver. */
#ifndef OX_KERNELS_TILE_H
#define OX_KERNELS_TILE_H

#ifndef OX_KTILE
/* Q4_K and Q5_K. d and dmin are passed by address and read last, as the per-type copies
 * did: loaded first, they stayed live across the unpacking and GCC's code for it changed. */
static inline void unpack_k45(const ox_f16 *d, const ox_f16 *dmin, const uint8_t *scales, const uint8_t *qs,
                              const uint8_t *qh, ox_kblock *k) {
    ox_kblock_scales_k4(scales, k); /* before the quants: unpack_q45_k multiplies by them */
    unpack_q45_k(qs, qh, k);
    k->d = ox_f16_fast(*d);
    k->dmin = ox_f16_fast(*dmin);
}

static void unpack_q4_k(const void *blk, ox_kblock *k) {
    const ox_block_q4_K *b = blk;
    unpack_k45(&b->d, &b->dmin, b->scales, b->qs, NULL, k);
}

static void unpack_q5_k(const void *blk, ox_kblock *k) {
    const ox_block_q5_K *b = blk;
    unpack_k45(&b->d, &b->dmin, b->scales, b->qs, b->qh, k);
}

#endif

static void unpack_q6_k(const void *blk, ox_kblock *k) {
    const ox_block_q6_K *b = blk;
    for (int j = 0; j < 16; j++) { k->sc[j] = b->scales[j]; k->mn[j] = 0; }
    unpack_q6_k_quants(b, k);
    k->d = ox_f16_fast(b->d);
    k->dmin = 0;
}

/* One token with the architecture's direct dot (kdot_*: a super-block . a Q8_K block, no
 * unpacking; OX_KDOT_DIRECT), and 2 to krow_max (<= 4) tokens at a time with its direct
 * rows (krow_*: a row . T tokens, the quants extracted once for all of them: a verify pass;
 * every token count if all_tok, OX_KDOT_ALL_*: a prefill too), else each
 * super-block of a row is unpacked once and dotted with every token. All of them sum a
 * token's super-blocks in order from 0 with the same float operations, so a token's logits
 * do not depend on the path (tests/c/test_kernels.c checks it). (32-byte aligned: a whole
 * AVX2 vector; 16 would do for SIMD128.) */
typedef float (*kdot_fn)(const void *blk, const int16_t *a, const ox_block_q8_K *ab);
typedef void (*krow_fn)(const uint8_t *row, int nb, const ox_act *a, int t0, int T, float *out);
#ifndef OX_KDOT_DIRECT
#define kdot_q4_k NULL
#define kdot_q5_k NULL
#define kdot_q6_k NULL
#endif
#ifndef OX_KROW_MAX_K45
#define OX_KROW_MAX_K45 0
#define OX_KROW_MAX_Q6_K 0
#define krow_q4_k NULL
#define krow_q5_k NULL
#define krow_q6_k NULL
#endif
#ifndef OX_KDOT_ALL_Q5_K
#define OX_KDOT_ALL_Q5_K 0
#endif

/* token t . one row, super-block by super-block with the one-token dot */
static inline float kdot_row(kdot_fn kdot, const uint8_t *row, int nb, size_t bb, const ox_act *a, int t) {
    const ox_block_q8_K *ab = (const ox_block_q8_K *)(a->q + (size_t)t * a->q_stride);
    const int16_t *at = a->q16 + (size_t)t * a->cols;
    float sum = 0;
    for (int b = 0; b < nb; b++) sum += kdot(row + b * bb, at + b * OX_QK_K, ab + b);
    return sum;
}

/* every token in direct rows of up to krow_max, one left over with the one-token dot */
static inline void tile_krow(const ox_matrix *W, const ox_act *a, int r0, int r1, float *y, kdot_fn kdot, krow_fn krow,
                             int krow_max, size_t bb) {
    const int nb = W->cols / OX_QK_K;
    for (int r = r0; r < r1; r++) {
        const uint8_t *row = (const uint8_t *)W->data + (size_t)r * W->row_bytes;
        int t = 0;
        while (a->n_tok - t >= 2) {
            const int T = a->n_tok - t < krow_max ? a->n_tok - t : krow_max;
            float out[4];
            krow(row, nb, a, t, T, out);
            for (int j = 0; j < T; j++) y[(size_t)(t + j) * W->rows + r] = out[j];
            t += T;
        }
        if (t < a->n_tok) y[(size_t)t * W->rows + r] = kdot_row(kdot, row, nb, bb, a, t);
    }
}

static inline void tile_k(const ox_matrix *W, const ox_act *a, int r0, int r1, float *y, void (*unpack)(const void *, ox_kblock *),
                          kdot_fn kdot, krow_fn krow, int krow_max, int all_tok, size_t bb, int has_min) {
    ox_kblock k __attribute__((aligned(32)));
    const int nb = W->cols / OX_QK_K;
    if (kdot && a->n_tok == 1) { /* decode */
        for (int r = r0; r < r1; r++) y[r] = kdot_row(kdot, (const uint8_t *)W->data + (size_t)r * W->row_bytes, nb, bb, a, 0);
        return;
    }
    if (krow && (a->n_tok <= krow_max || all_tok)) {
        tile_krow(W, a, r0, r1, y, kdot, krow, krow_max, bb);
        return;
    }
    for (int r = r0; r < r1; r++) {
        const uint8_t *row = (const uint8_t *)W->data + (size_t)r * W->row_bytes;
        for (int t = 0; t < a->n_tok; t++) y[(size_t)t * W->rows + r] = 0;
        for (int b = 0; b < nb; b++) {
            unpack(row + b * bb, &k);
            for (int t = 0; t < a->n_tok; t++) {
                const ox_block_q8_K *ab = (const ox_block_q8_K *)(a->q + (size_t)t * a->q_stride) + b;
                y[(size_t)t * W->rows + r] += kblock_dot(&k, a->q16 + (size_t)t * a->cols + b * OX_QK_K, ab, has_min);
            }
        }
    }
}

#ifndef OX_KTILE
static void tile_q4_k(const ox_matrix *W, const ox_act *a, int r0, int r1, float *y) {
    tile_k(W, a, r0, r1, y, unpack_q4_k, kdot_q4_k, krow_q4_k, OX_KROW_MAX_K45, 0, sizeof(ox_block_q4_K), 1);
}
static void tile_q5_k(const ox_matrix *W, const ox_act *a, int r0, int r1, float *y) {
    tile_k(W, a, r0, r1, y, unpack_q5_k, kdot_q5_k, krow_q5_k, OX_KROW_MAX_K45, OX_KDOT_ALL_Q5_K, sizeof(ox_block_q5_K), 1);
}
static void tile_q6_k(const ox_matrix *W, const ox_act *a, int r0, int r1, float *y) {
    tile_k(W, a, r0, r1, y, unpack_q6_k, kdot_q6_k, krow_q6_k, OX_KROW_MAX_Q6_K, 0, sizeof(ox_block_q6_K), 0);
}
#else
#define tile_q4_k ktile_q4_k
#define tile_q5_k ktile_q5_k
static void tile_q6_k(const ox_matrix *W, const ox_act *a, int r0, int r1, float *y) {
    if (a->n_tok >= OX_KTILE_Q6_K_UNPACK) tile_k(W, a, r0, r1, y, unpack_q6_k, NULL, NULL, 0, 0, sizeof(ox_block_q6_K), 0);
    else ktile_q6_k(W, a, r0, r1, y);
}
#endif

static void tile_q8_0(const ox_matrix *W, const ox_act *a, int r0, int r1, float *y) { tile_legacy(W, a, r0, r1, y, 0); }
static void tile_q4_0(const ox_matrix *W, const ox_act *a, int r0, int r1, float *y) { tile_legacy(W, a, r0, r1, y, 1); }

ox_tile_fn ox_simd_tile(ox_type t) {
    switch (t) {
    case OX_Q8_0: return tile_q8_0;
    case OX_Q4_0: return tile_q4_0;
    case OX_Q4_K: return tile_q4_k;
    case OX_Q5_K: return tile_q5_k;
    case OX_Q6_K: return tile_q6_k;
    default: return NULL;
    }
}

#endif
