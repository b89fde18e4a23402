/* synth_widen.h — the trained source of a widened synthetic model (synth.h, ox_synth.widen):
 * its shapes, and each tensor's values zero-padded and rescaled to the wider model, read
 * when the synth writer reaches that tensor. Tooling only. */
#ifndef OX_SYNTH_WIDEN_H
#define OX_SYNTH_WIDEN_H

#include <stdint.h>
#include "base/err.h"
#include "writers/synth.h"

typedef struct ox_widen ox_widen;
struct ox_gguf;

/* Open s->widen and check s against it: the same attention shapes and vocab, hidden, ffn and
 * layers no smaller. NULL with err set (the source file and the problem). */
ox_widen *ox_widen_open(const ox_synth *s, ox_err *err);
void ox_widen_close(ox_widen *w);
/* The source's GGUF (its tokenizer arrays become the widened model's vocab). */
const struct ox_gguf *ox_widen_gguf(const ox_widen *w);
/* The widened model's RMSNorm epsilon: the source's times d/D. */
float ox_widen_eps(const ox_widen *w);
/* Values of the widened tensor `name` (ggml shape ne[0] x rows) into dst (ne[0] * rows floats):
 * 1 = filled (from the source, or an extra layer's zero norm / unit scale), 0 = not the
 * source's (generate it), or an error code with err set. */
int ox_widen_values(ox_widen *w, const char *name, uint64_t ne0, uint64_t rows, float *dst, ox_err *err);

#endif
