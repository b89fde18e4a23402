/* grammar.h — constrained sampling: a GBNF grammar over the vocabulary (docs/grammar.md).
 *
 * A grammar is llama.cpp's GBNF dialect: `name ::= alternatives` rules (root rule `root`),
 * string literals "…", character classes […] / [^…], `.`, grouping ( ), alternatives |,
 * repetition * + ? {m} {m,} {m,n}, `#` comments. Characters are Unicode code points (the
 * text is UTF-8). A literal that contains a control token's text (e.g. "<|\"|>" or
 * "<tool_call|>") matches that control token; control tokens match nothing else, so free text
 * can never produce one. Left-recursive rules are refused (OX_E_FORMAT naming the rule).
 *
 * State: the set of parse stacks that the text so far leaves open (and a code point that a
 * token ended in the middle of). ox_grammar_mask sets the logit of every token that cannot
 * come next to -inf: it walks the vocabulary sorted by bytes, sharing the work of common
 * prefixes and skipping every token under a prefix the grammar rejects; the result is cached
 * per state (the states inside a string or a number repeat). Stop tokens are allowed exactly
 * when the text so far is complete.
 *
 * The vocabulary index (ox_grammar_vocab) is built once per tokenizer and shared by the
 * grammars over it; a grammar is used by one thread at a time.
 *
 * Cost: compiling is linear in the compiled rules (at most 2^21 elements, 65536 rules,
 * repetition counts up to 1024); a mask costs at most the vocabulary walk per distinct state.
 * Both poll the vocabulary's abort hook (a mask also at its start) and stop with OX_E_ABORTED
 * when it says so; the grammar is then still valid (a mask may be asked again, or the grammar freed).
 *
 * No dead ends: a token is allowed only if the text after it can still end or go on with
 * some token of the vocabulary (looking a bounded number of tokens ahead, see grammar.c), so
 * sampling from the mask never reaches a state where no token fits. */
#ifndef OX_GRAMMAR_H
#define OX_GRAMMAR_H

#include <stddef.h>
#include <stdint.h>
#include "base/err.h"
#include "text/tokenizer.h"

typedef struct ox_grammar_vocab ox_grammar_vocab;
typedef struct ox_grammar ox_grammar;

/* The tokens' bytes (control tokens: their text) sorted for the walk; keeps no pointer to t. */
ox_grammar_vocab *ox_grammar_vocab_new(const ox_tokenizer *t, ox_err *err);
void ox_grammar_vocab_free(ox_grammar_vocab *v);
/* The abort hook of every grammar over v: polled while compiling and building masks; nonzero
 * stops the call with OX_E_ABORTED. NULL: none. */
void ox_grammar_vocab_set_abort(ox_grammar_vocab *v, int (*poll)(void *ud), void *ud);

/* Compile len bytes of GBNF. stops: the token ids that end a generation (copied); the grammar
 * lets them through only where the text is complete. OX_E_FORMAT names the line and column. */
ox_grammar *ox_grammar_new(const ox_grammar_vocab *v, const char *gbnf, size_t len, const int32_t *stops, int n_stops,
                           ox_err *err);
void ox_grammar_free(ox_grammar *g);
int ox_grammar_reset(ox_grammar *g, ox_err *err); /* back to the start of root */
ox_grammar *ox_grammar_clone(const ox_grammar *g, ox_err *err);

/* logits[vocab]: -inf where the token cannot come next. OX_E_NOMEM on allocation failure. */
int ox_grammar_mask(ox_grammar *g, float *logits, int vocab, ox_err *err);
/* Advance over token (stop tokens: only where complete, and the state stays). OX_E_RANGE if the
 * grammar does not allow it; the state is then unchanged. */
int ox_grammar_accept(ox_grammar *g, int token, ox_err *err);
/* Advance over raw UTF-8 text (tests, forced prefixes); same return convention. */
int ox_grammar_accept_text(ox_grammar *g, const char *text, size_t len, ox_err *err);
/* 1 when the text so far is a whole sentence of the grammar. */
int ox_grammar_complete(const ox_grammar *g);
/* 1 when nothing more can follow (complete, and no stack is left open). */
int ox_grammar_finished(const ox_grammar *g);
/* Operations spent so far (compiling, masks, accepts): tests bound the cost by it. */
uint64_t ox_grammar_work(const ox_grammar *g);

#endif
