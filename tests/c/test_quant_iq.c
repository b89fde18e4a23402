/* test_quant_iq.c — the i-quants, TQ1_0/TQ2_0 and MXFP4 (kernels/iq.h), and BF16 weights:
 *  - block facts (sizes, names, vec-dot types) as ggml defines them;
 *  - dequantize against an independent per-element decoder written here from ggml's block
 *    definitions (double precision), and bit for bit against ggml itself: the FNV-1a hash of
 *    the float bits ggml's dequantize_row_* produced for the same pseudo-random blocks
 *    (computed once with ggml's C code, recorded below);
 *  - the reference dots against dequantize(w) . dequantize(quantize(a)) in double;
 *  - ox_matmul (the SIMD tiles where the build has them) against ox_matmul_ref, for 1..5
 *    tokens, and BF16 the same way. */
#include "check.h"
#include "kernels/iq.h"
#include "kernels/kernels.h"
#include "kernels/pool.h"

#include <stdint.h>
#include <stdlib.h>

static uint32_t rng = 2463534242u;
static uint32_t rnd(void) {
    rng ^= rng << 13;
    rng ^= rng >> 17;
    rng ^= rng << 5;
    return rng;
} /* xorshift32 */
static float frand(void) { return (float)(rnd() >> 8) / 16777216.0f * 2.0f - 1.0f; }

static const ox_type TYPES[] = {OX_IQ2_XXS, OX_IQ2_XS, OX_IQ2_S,  OX_IQ3_XXS, OX_IQ3_S, OX_IQ1_S,
                                OX_IQ1_M,   OX_IQ4_NL, OX_IQ4_XS, OX_TQ1_0,   OX_TQ2_0, OX_MXFP4};
#define NT (int)(sizeof TYPES / sizeof TYPES[0])

/* Pseudo-random block bytes with a sane scale: the fp16 d (where the type has one) is set to
 * +-[2^-8, 2^-4); IQ1_M's d, spread over its scale words, gets a clear exponent top bit;
 * MXFP4's exponent stays in 2^-10 .. 2^5. */
static void random_block(ox_type t, uint8_t *b) {
    size_t bb = ox_type_block_bytes(t);
    for (size_t i = 0; i < bb; i++) b[i] = (uint8_t)(rnd() >> 24);
    int off = t == OX_TQ1_0 ? 52 : t == OX_TQ2_0 ? 64 : (t == OX_IQ1_M || t == OX_MXFP4) ? -1 : 0;
    if (off >= 0) {
        uint16_t h = (uint16_t)((rnd() & 0x8000) | (7 + rnd() % 4) << 10 | (rnd() & 0x3ff));
        b[off] = (uint8_t)h;
        b[off + 1] = (uint8_t)(h >> 8);
    }
    if (t == OX_IQ1_M) b[55] &= 0xbf;                      /* fp16 bit 14 = bit 6 of the last scale byte */
    if (t == OX_MXFP4) b[0] = (uint8_t)(118 + rnd() % 16); /* scale 2^-10 .. 2^5 */
}

/* ---------------------------------------------------------------- independent decoder */

static double h2d(unsigned h) {
    int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    double v = e ? ldexp(1.0 + m / 1024.0, e - 15) : ldexp(m / 1024.0, -14);
    return s ? -v : v;
}
static unsigned u16at(const uint8_t *p) { return p[0] | p[1] << 8; }
static uint32_t u32at(const uint8_t *p) { return (uint32_t)u16at(p) | (uint32_t)u16at(p + 2) << 16; }
static int lane(uint64_t g, int j) { return (int)(g >> 8 * j & 255); }
/* sign bit j of a 7-bit code: the eighth makes the count of minus signs even */
static int neg7(unsigned code, int j) { return j < 7 ? (code >> j) & 1 : __builtin_popcount(code) & 1; }

/* element k of block b, straight from the layout (k = 32 ib + 8 l + j) */
static double dec(ox_type t, const uint8_t *b, int k) {
    int ib = k / 32, l = k % 32 / 8, j = k % 8, sgn;
    double d = h2d(u16at(b)), v;
    switch (t) {
    case OX_IQ2_XXS: { /* d, then per 32: 4 grid bytes, a word of 4 sign codes and a 4-bit scale */
        uint32_t w = u32at(b + 2 + 8 * ib + 4);
        v = d * (0.5 + (w >> 28)) * 0.25 * lane(ox_iq2xxs_grid[b[2 + 8 * ib + l]], j);
        sgn = neg7(w >> 7 * l & 127, j);
    } break;
    case OX_IQ2_XS: { /* d, 32 u16 (9-bit grid index | sign code << 9), 8 scale bytes (two nibbles) */
        unsigned q = u16at(b + 2 + 2 * (4 * ib + l));
        v = d * (0.5 + (b[66 + ib] >> 4 * (l / 2) & 15)) * 0.25 * lane(ox_iq2xs_grid[q & 511], j);
        sgn = neg7(q >> 9, j);
    } break;
    case OX_IQ2_S: { /* d, 32 index low bytes, 32 sign bytes, 8 qh (2 high bits each), 8 scales */
        unsigned idx = b[2 + 4 * ib + l] | (b[66 + ib] >> 2 * l & 3) << 8;
        v = d * (0.5 + (b[74 + ib] >> 4 * (l / 2) & 15)) * 0.25 * lane(ox_iq2s_grid[idx], j);
        sgn = b[34 + 4 * ib + l] >> j & 1;
    } break;
    case OX_IQ3_XXS: { /* d, 64 grid bytes (one per 4), then per 32 a word of sign codes + scale */
        uint32_t w = u32at(b + 66 + 4 * ib);
        v = d * (0.5 + (w >> 28)) * 0.5 * lane(ox_iq3xxs_grid[b[2 + 8 * ib + 2 * l + j / 4]], j % 4);
        sgn = neg7(w >> 7 * l & 127, j);
    } break;
    case OX_IQ3_S: { /* d, 64 index low bytes, 8 qh (ninth bits), 32 sign bytes, 4 scale bytes */
        int g = 8 * ib + 2 * l + j / 4;
        unsigned idx = b[2 + g] | (b[66 + g / 8] >> (g % 8) & 1) << 8;
        v = d * (1 + 2 * (b[106 + ib / 2] >> 4 * (ib % 2) & 15)) * lane(ox_iq3s_grid[idx], j % 4);
        sgn = b[74 + 4 * ib + l] >> j & 1;
    } break;
    case OX_IQ1_S: { /* d, 32 index low bytes, 8 u16: 3 high bits per 8, scale, delta sign */
        unsigned h = u16at(b + 34 + 2 * ib), idx = b[2 + 4 * ib + l] | (h >> 3 * l & 7) << 8;
        double g = (int8_t)lane(ox_iq1s_grid[idx], j);
        return d * (2 * (h >> 12 & 7) + 1) * (g + (h & 0x8000 ? -0.125 : 0.125));
    }
    case OX_IQ1_M: { /* 32 index low bytes, 16 qh (3 bits + delta sign per 8), 4 u16 scales + d */
        unsigned nib = b[32 + 2 * ib + l / 2] >> 4 * (l % 2) & 15, idx = b[4 * ib + l] | (nib & 7) << 8;
        unsigned dh = 0;
        for (int s = 0; s < 4; s++) dh |= (u16at(b + 48 + 2 * s) >> 12) << 4 * s;
        unsigned sc = u16at(b + 48 + 2 * (ib / 2)) >> (6 * (ib % 2) + 3 * (l / 2)) & 7;
        double g = (int8_t)lane(ox_iq1s_grid[idx], j);
        return h2d(dh) * (2 * sc + 1) * (g + (nib & 8 ? -0.125 : 0.125));
    }
    case OX_IQ4_NL: /* d, 16 bytes: element m low nibble of byte m, element 16 + m high */
        return d * ox_kvalues_iq4nl[b[2 + k % 16] >> 4 * (k / 16) & 15];
    case OX_IQ4_XS: { /* d, scales_h (2 bits per 32), scales_l (4 bits per 32), 8 x 16 bytes */
        int ls = (b[4 + ib / 2] >> 4 * (ib % 2) & 15) | (u16at(b + 2) >> 2 * ib & 3) << 4;
        return d * (ls - 32) * ox_kvalues_iq4nl[b[8 + 16 * ib + k % 16] >> 4 * (k % 32 / 16) & 15];
    }
    case OX_TQ1_0: { /* 48 bytes of 5 trits, 4 bytes of 4, d at 52: trit n of q = digit n of q/256 in base 3 */
        int byte, n;
        if (k < 160) byte = k % 32, n = k / 32;
        else if (k < 240) byte = 32 + (k - 160) % 16, n = (k - 160) / 16;
        else byte = 48 + (k - 240) % 4, n = (k - 240) / 4;
        int p3 = 1;
        for (int i = 0; i < n; i++) p3 *= 3;
        return (double)((b[byte] * p3 % 256) * 3 / 256 - 1) * h2d(u16at(b + 52));
    }
    case OX_TQ2_0: /* 64 bytes of 4 two-bit values, d at 64 */
        return (double)((b[32 * (k / 128) + k % 32] >> 2 * (k % 128 / 32) & 3) - 1) * h2d(u16at(b + 64));
    case OX_MXFP4: { /* E8M0 exponent, 16 bytes of E2M1 nibbles (ggml's table is the value x 2) */
        static const double e2m1[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
        unsigned q = b[1 + k % 16] >> 4 * (k / 16) & 15;
        return ldexp(q & 8 ? -e2m1[q & 7] : e2m1[q & 7], b[0] - 127);
    }
    default: return NAN;
    }
    return sgn ? -v : v;
}

/* ---------------------------------------------------------------- tests */

static void test_facts(void) {
    static const struct {
        ox_type t;
        const char *name;
        size_t elems, bytes;
        ox_type dot;
    } want[] = {
        {OX_IQ2_XXS, "IQ2_XXS", 256, 66, OX_Q8_K}, {OX_IQ2_XS, "IQ2_XS", 256, 74, OX_Q8_K},
        {OX_IQ2_S, "IQ2_S", 256, 82, OX_Q8_K},     {OX_IQ3_XXS, "IQ3_XXS", 256, 98, OX_Q8_K},
        {OX_IQ3_S, "IQ3_S", 256, 110, OX_Q8_K},    {OX_IQ1_S, "IQ1_S", 256, 50, OX_Q8_K},
        {OX_IQ1_M, "IQ1_M", 256, 56, OX_Q8_K},     {OX_IQ4_NL, "IQ4_NL", 32, 18, OX_Q8_0},
        {OX_IQ4_XS, "IQ4_XS", 256, 136, OX_Q8_K},  {OX_TQ1_0, "TQ1_0", 256, 54, OX_Q8_K},
        {OX_TQ2_0, "TQ2_0", 256, 66, OX_Q8_K},     {OX_MXFP4, "MXFP4", 32, 17, OX_Q8_0},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        ox_type t = want[i].t;
        CHECK_MSG(ox_type_known(t) && ox_type_name(t) && strcmp(ox_type_name(t), want[i].name) == 0, "%s", want[i].name);
        CHECK_MSG(ox_type_block_elems(t) == want[i].elems && ox_type_block_bytes(t) == want[i].bytes &&
                      ox_type_vec_dot(t) == want[i].dot,
                  "%s facts", want[i].name);
    }
    /* the ggml ids that stay unsupported */
    CHECK(!ox_type_known(24) && !ox_type_known(28) && !ox_type_known(31) && !ox_type_known(40));
    uint64_t rb;
    ox_err e = {0};
    CHECK(ox_row_bytes(OX_IQ4_XS, 1536, &rb, &e) == 0 && rb == 6 * 136);
    CHECK(ox_row_bytes(OX_IQ2_XXS, 100, &rb, &e) == OX_E_FORMAT);
    CHECK_STR_CONTAINS(e.msg, "IQ2_XXS");
}

static void test_signs(void) {
    for (unsigned c = 0; c < 128; c++) {
        unsigned s = ox_iq_signs(c);
        CHECK_MSG((s & 127) == c && (__builtin_popcount(s) & 1) == 0, "code %u -> %u", c, s);
    }
    CHECK(ox_e8m0_half(127) == 0.5f && ox_e8m0_half(128) == 1.0f && ox_e8m0_half(0) == ldexpf(1, -128) &&
          ox_e8m0_half(1) == ldexpf(1, -127) && ox_e8m0_half(254) == ldexpf(1, 126));
}

static void test_dequantize_independent(void) {
    uint8_t buf[4 * 136];
    float y[4 * 256];
    for (int i = 0; i < NT; i++) {
        ox_type t = TYPES[i];
        size_t be = ox_type_block_elems(t), bb = ox_type_block_bytes(t);
        int bad = 0;
        for (int rep = 0; rep < 100; rep++) {
            for (int b = 0; b < 4; b++) random_block(t, buf + b * bb);
            ox_dequantize_row(t, buf, y, 4 * be);
            for (int b = 0; b < 4; b++)
                for (size_t k = 0; k < be; k++) {
                    double r = dec(t, buf + b * bb, (int)k);
                    if (!(fabs(y[b * be + k] - r) <= 1e-6 * fabs(r))) {
                        if (bad++ < 3)
                            fprintf(stderr, "%s block %d [%zu]: %.9g, decoder %.9g\n", ox_type_name(t), b, k,
                                    y[b * be + k], r);
                    }
                }
        }
        CHECK_MSG(bad == 0, "%s: %d values differ from the independent decoder", ox_type_name(t), bad);
    }
}

/* FNV-1a over the float bits of dequantize(16 blocks): rng seeded per type, blocks from
 * random_block. The values were produced by ggml's own dequantize_row_* on the same bytes
 * (ggml commit d99724f2, ggml-quants.c), so they pin bit-exactness and the grids. */
static void test_dequantize_ggml(void) {
    static const struct {
        ox_type t;
        uint64_t fnv;
        float first;
    } want[] = {
        {OX_IQ2_XXS, 0x970017330c9b3038ull, -0.029586792f},  {OX_IQ2_XS, 0xbc59fdcb8d69a1e3ull, 1.16333961f},
        {OX_IQ2_S, 0xe0ab100078212bf2ull, -0.215560913f},    {OX_IQ3_XXS, 0x43dbc41278088037ull, 0.358009338f},
        {OX_IQ3_S, 0x42ff0f49801506d9ull, 4.3321228f},       {OX_IQ1_S, 0x23e1ff9cfe1f1e5cull, -0.122265816f},
        {OX_IQ1_M, 0xa26885f01766493dull, -0.000948473811f}, {OX_IQ4_NL, 0x68154a0dd70aba6cull, 0.876647949f},
        {OX_IQ4_XS, 0xc731f745987438feull, 84.9458923f},     {OX_TQ1_0, 0x9367ba11080d41ecull, 0.027557373f},
        {OX_TQ2_0, 0xa2c0a243f03b44aaull, 0.00879669189f},   {OX_MXFP4, 0x677f33a640bfaaa1ull, -32.0f},
    };
    uint8_t buf[16 * 136];
    float y[16 * 256];
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        ox_type t = want[i].t;
        size_t be = ox_type_block_elems(t), bb = ox_type_block_bytes(t);
        rng = 1000u + (uint32_t)t;
        for (int b = 0; b < 16; b++) random_block(t, buf + b * bb);
        ox_dequantize_row(t, buf, y, 16 * be);
        uint64_t h = 1469598103934665603ull;
        for (size_t k = 0; k < 16 * be; k++) {
            uint32_t u;
            memcpy(&u, &y[k], 4);
            for (int s = 0; s < 32; s += 8) h = (h ^ (u >> s & 255)) * 1099511628211ull;
        }
        CHECK_MSG(h == want[i].fnv && y[0] == want[i].first, "%s: hash %016llx (ggml %016llx), y[0] %.9g (ggml %.9g)",
                  ox_type_name(t), (unsigned long long)h, (unsigned long long)want[i].fnv, y[0], want[i].first);
    }
}

static void test_vec_dot(void) {
    enum { N = 1024 };
    static uint8_t w[N / 32 * 136], a[N / 256 * 292];
    static float x[N], wf[N], af[N];
    for (int i = 0; i < NT; i++) {
        ox_type t = TYPES[i], at = ox_type_vec_dot(t);
        size_t be = ox_type_block_elems(t), bb = ox_type_block_bytes(t);
        for (int rep = 0; rep < 20; rep++) {
            for (size_t b = 0; b < N / be; b++) random_block(t, w + b * bb);
            for (int k = 0; k < N; k++) x[k] = frand();
            ox_quantize_row(at, x, a, N);
            ox_dequantize_row(t, w, wf, N);
            ox_dequantize_row(at, a, af, N);
            double ref = 0, mag = 0;
            for (int k = 0; k < N; k++) {
                ref += (double)wf[k] * af[k];
                mag += fabs((double)wf[k] * af[k]);
            }
            float got = ox_vec_dot_ref(t, w, a, N);
            CHECK_MSG(fabs(got - ref) <= 1e-5 * mag + 1e-30, "%s rep %d: dot %.9g, f64 %.9g", ox_type_name(t), rep, got,
                      ref);
        }
    }
}

/* ox_matmul against ox_matmul_ref: rows x cols weights of type t, n_tok tokens */
static int matmul_agrees(ox_type t, int rows, int cols, int n_tok) {
    uint64_t rb;
    if (ox_row_bytes(t, (uint64_t)cols, &rb, NULL)) return 0;
    uint8_t *data = malloc((size_t)rb * rows);
    float *x = malloc(sizeof(float) * cols * n_tok), *y = malloc(sizeof(float) * rows * n_tok),
          *ref = malloc(sizeof(float) * rows * n_tok), *wf = malloc(sizeof(float) * cols);
    size_t be = ox_type_block_elems(t), bb = ox_type_block_bytes(t);
    if (be == 1) {
        for (int k = 0; k < cols * rows; k++) ((uint16_t *)data)[k] = ox_f32_to_bf16(frand());
    } else {
        for (size_t b = 0; b < (size_t)rb * rows / bb; b++) random_block(t, data + b * bb);
    }
    for (int k = 0; k < cols * n_tok; k++) x[k] = frand();
    ox_matrix W = {t, rows, cols, (size_t)rb, data};
    ox_scratch ws = {0};
    ox_err e = {0};
    int ok = ox_matmul(&ws, &W, x, n_tok, y, &e) == 0;
    ox_matmul_ref(&W, x, n_tok, ref);
    for (int r = 0; r < rows && ok; r++) {
        ox_dequantize_row(t, data + (size_t)r * rb, wf, (size_t)cols);
        for (int tk = 0; tk < n_tok; tk++) {
            double mag = 0;
            for (int c = 0; c < cols; c++) mag += fabs((double)wf[c] * x[(size_t)tk * cols + c]);
            float got = y[(size_t)tk * rows + r], want = ref[(size_t)tk * rows + r];
            if (!(fabs(got - want) <= 2e-6 * mag + 1e-6)) {
                fprintf(stderr, "%s %dx%d tok %d/%d row %d: %.9g, ref %.9g\n", ox_type_name(t), rows, cols, tk, n_tok,
                        r, got, want);
                ok = 0;
            }
        }
    }
    ox_scratch_free(&ws);
    free(data), free(x), free(y), free(ref), free(wf);
    return ok;
}

static void test_matmul(void) {
    for (int i = 0; i < NT; i++)
        for (int n_tok = 1; n_tok <= 5; n_tok++)
            CHECK_MSG(matmul_agrees(TYPES[i], 36, 512, n_tok), "%s, %d tokens", ox_type_name(TYPES[i]), n_tok);
    for (int n_tok = 1; n_tok <= 5; n_tok++)
        CHECK_MSG(matmul_agrees(OX_BF16, 36, 520, n_tok), "BF16, %d tokens", n_tok);
}

int main(void) {
    ox_pool_init(2, NULL);
    RUN(test_facts);
    RUN(test_signs);
    RUN(test_dequantize_independent);
    RUN(test_dequantize_ggml);
    RUN(test_vec_dot);
    RUN(test_matmul);
    ox_pool_shutdown();
    return check_summary("test_quant_iq");
}
