/* json_schema.h — JSON schema -> GBNF grammar (decode/grammar.h's dialect), the one converter
 * behind response_format json_schema, forced tool calls (the wasm engine) and
 * `oxinfer run --json-schema` (docs/grammar.md).
 *
 * Notations: JSON text, or Gemma 4's tool-call notation (strings between <|"|>, bare keys, no
 * spaces, as the chat template writes arguments).
 *
 * The subset: type (one or a list), properties / required / additionalProperties, enum, const,
 * items / prefixItems / minItems / maxItems, anyOf / oneOf, allOf of one schema, $ref to
 * #/$defs/NAME or #/definitions/NAME of the same schema (percent-decoded; recursion allowed),
 * nullable, string minLength / maxLength and the formats date, time, date-time, uuid.
 * Annotations ($schema, title, description, ...) are ignored; any other keyword that changes
 * what is valid (pattern, minimum, ...) is OX_E_UNSUPPORTED naming it, never dropped. Keys come
 * in the order of `properties` (required ones always, optional ones optionally); an object
 * with properties and no additionalProperties gets no other keys (as llama.cpp's converter).
 * Unconstrained values nest at most two deep. Whitespace between JSON tokens is bounded (one
 * space, or a newline and at most 20 blanks); Gemma 4's notation has none.
 *
 * Bounded work and memory for any input: every limit below is an OX_E_UNSUPPORTED error that
 * names the keyword (or the place) and the limit; malformed JSON is OX_E_FORMAT. */
#ifndef OX_JSON_SCHEMA_H
#define OX_JSON_SCHEMA_H

#include <stddef.h>
#include "base/err.h"

#define OX_SCHEMA_MAX_INPUT  ((size_t)1 << 20) /* bytes of schema JSON */
#define OX_SCHEMA_MAX_OUTPUT ((size_t)1 << 20) /* bytes of GBNF */
#define OX_SCHEMA_MAX_DEPTH  64                /* schemas nested in schemas (through $ref too) */
#define OX_SCHEMA_MAX_REPEAT 1024              /* minLength / maxLength / minItems / maxItems */
#define OX_SCHEMA_MAX_ALTS   1024              /* anyOf / oneOf / enum / prefixItems members */
#define OX_SCHEMA_MAX_PROPS  1024              /* properties of one object */
#define OX_SCHEMA_MAX_RULES  16384             /* grammar rules the GBNF compiles to (its cap: 65536) */
#define OX_SCHEMA_MAX_TOOLS  128

/* What the input is and how the output is spelled (ox_json_schema_grammar's mode). */
enum {
    OX_SCHEMA_JSON = 0,       /* a schema -> JSON text valid under it */
    OX_SCHEMA_GEMMA4 = 1,     /* a schema -> a value in Gemma 4's notation */
    OX_SCHEMA_TOOL_CALLS = 2, /* an array of tools ({function: {name, parameters}}) -> the rest of a
                               * call after `<|tool_call>call:`: NAME{arguments}<tool_call|> */
    OX_SCHEMA_NOTATIONS = 3,
    /* flags for OX_SCHEMA_TOOL_CALLS */
    OX_SCHEMA_AFTER_NAME = 0x10, /* the name of tools[0] is already written: start at its `{` */
    OX_SCHEMA_PARALLEL = 0x20,   /* up to 8 more calls may follow, each `<|tool_call>call:...` */
};

/* Convert len bytes of JSON (a schema, or the tools array) into GBNF whose root rule is `root`.
 * *out: malloc'd, NUL-terminated (free() it), *out_len its length (may be NULL). Returns 0, or
 * OX_E_FORMAT (not JSON), OX_E_UNSUPPORTED (outside the subset or over a limit), OX_E_RANGE (bad
 * mode), OX_E_NOMEM; *out is then NULL. */
int ox_json_schema_grammar(const char *json, size_t len, int mode, char **out, size_t *out_len, ox_err *err);

#endif
