/* embed.h — text embeddings from the decoder: the final-normed hidden states of a token
 * sequence, pooled into one vector (docs/gemma4.md §2.8 for the final norm). The forward runs in
 * a session of its own, so a chat's KV cache is untouched; a model whose config asks for
 * bidirectional attention (use_bidirectional_attention) gets it, as in every forward. */
#ifndef OX_EMBED_H
#define OX_EMBED_H

#include <stdint.h>
#include "base/err.h"
#include "model/model.h"

/* X(NAME, id, js name): how the token states become one vector. CLS: the first token's state
 * (BERT's [CLS] position; embed({pooling: 'cls'})). */
#define OX_POOLINGS(X)                                                                                                 \
    X(MEAN, 0, "mean") /* the mean over the tokens */                                                                  \
    X(LAST, 1, "last") /* the last token's state */                                                                    \
    X(CLS, 2, "cls")   /* the first token's state */
#define OX_POOL_ENUM_(name, id, js) OX_POOL_##name = id,
typedef enum { OX_POOLINGS(OX_POOL_ENUM_) } ox_pooling;
#undef OX_POOL_ENUM_

/* out[hidden]: the pooled states of tokens[0, n), scaled to unit length if normalize.
 * Returns the hidden size, or < 0 (RANGE for no tokens or an unknown pooling, NOMEM). */
int ox_embed(ox_model *m, const int32_t *tokens, int n, ox_pooling pooling, int normalize, float *out, ox_err *err);

#endif
