/* embed.c — see embed.h. */
#include "model/embed.h"

#include <math.h>
#include <stdlib.h>

int ox_embed(ox_model *m, const int32_t *tokens, int n, ox_pooling pooling, int normalize, float *out, ox_err *err) {
    if (n < 1 || !tokens) return ox_errf(err, OX_E_RANGE, "embed: no tokens");
    if (pooling != OX_POOL_MEAN && pooling != OX_POOL_LAST && pooling != OX_POOL_CLS)
        return ox_errf(err, OX_E_RANGE, "embed: pooling %d is not mean (0), last (1) or first (2)", (int)pooling);
    int H = ox_model_config(m)->hidden;
    size_t bytes;
    if (ox_mul_size((size_t)n, (size_t)H * sizeof(float), &bytes))
        return ox_errf(err, OX_E_RANGE, "embed: %d tokens overflow", n);
    float *hidden = malloc(bytes);
    if (!hidden) return ox_errf(err, OX_E_NOMEM, "embed: out of memory for %d tokens (%zu bytes)", n, bytes);
    ox_session *s = ox_session_new(m, n, err);
    if (!s) {
        free(hidden);
        return err ? err->code : OX_E_NOMEM;
    }
    ox_forward_io io = {.tokens = tokens, .n = n, .hidden = hidden};
    int rc = ox_forward(s, &io, err);
    ox_session_free(s);
    if (!rc) {
        const float *row = hidden + (size_t)(pooling == OX_POOL_LAST ? n - 1 : 0) * H;
        for (int j = 0; j < H; j++) {
            double v = row[j];
            if (pooling == OX_POOL_MEAN) {
                v = 0;
                for (int i = 0; i < n; i++) v += hidden[(size_t)i * H + j];
                v /= n;
            }
            out[j] = (float)v;
        }
        double norm = 0;
        for (int j = 0; j < H; j++) norm += (double)out[j] * out[j];
        if (normalize && norm > 0)
            for (int j = 0; j < H; j++) out[j] = (float)(out[j] / sqrt(norm));
    }
    free(hidden);
    return rc ? rc : H;
}
