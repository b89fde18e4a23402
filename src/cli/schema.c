/* schema.c — `oxinfer run --json-schema FILE [--tool-notation]`: the grammar of a JSON schema
 * (decode/json_schema.h, the converter the wasm engine uses), in JSON text or, with
 * --tool-notation, in Gemma 4's tool-call notation. */
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "decode/json_schema.h"

char *cli_json_schema_grammar(const char *path, int tool_notation) {
    FILE *f = fopen(path, "rb");
    char *text = malloc(OX_SCHEMA_MAX_INPUT + 1), *gbnf = NULL;
    size_t n = f && text ? fread(text, 1, OX_SCHEMA_MAX_INPUT + 1, f) : 0;
    ox_err err = {0};
    if (!f || !text || ferror(f)) fprintf(stderr, "oxinfer run: %s: cannot read the JSON schema\n", path);
    else if (ox_json_schema_grammar(text, n, tool_notation ? OX_SCHEMA_GEMMA4 : OX_SCHEMA_JSON, &gbnf, NULL, &err))
        fprintf(stderr, "oxinfer run: %s: %s: %s\n", path, ox_err_code_name(err.code), err.msg);
    if (f) fclose(f);
    free(text);
    return gbnf;
}
