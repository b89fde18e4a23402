/* synth_hf.c — a synthetic model as an HF checkpoint: config.json and tokenizer.json as
 * transformers writes them, the weights in safetensors shards with their index (synth_impl.h). */
#include "writers/synth_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/json.h"
#include "formats/safetensors.h"
#include "writers/safetensors_write.h"

static int write_text(const char *dir, const char *name, const ox_strbuf *b, ox_err *err) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (b->oom) return ox_errf(err, OX_E_NOMEM, "synth: out of memory writing %s", path);
    FILE *f = fopen(path, "wb");
    if (!f) return ox_errf(err, OX_E_IO, "synth: cannot create %s", path);
    int ok = fwrite(b->s, 1, b->len, f) == b->len;
    ok &= fclose(f) == 0;
    return ok ? 0 : ox_errf(err, OX_E_IO, "synth: write failed: %s", path);
}

/* A float as transformers writes one: always with a point or an exponent (30.0, not 30), so a
 * field its config declares float never reads back as an int. */
static const char *json_float(char *buf, size_t cap, double v) {
    int n = snprintf(buf, cap, "%.9g", v);
    if (n > 0 && (size_t)n + 2 < cap && !strpbrk(buf, ".eEni")) memcpy(buf + n, ".0", 3);
    return buf;
}

/* gemma4_unified's text config as transformers writes it: per_layer_config (every full layer's
 * head width and KV heads) in place of global_head_dim / num_global_key_value_heads, and no
 * per-layer-embedding or expert keys (docs/gemma4.md §6). */
static void unified_layers_json(const ox_synth *s, ox_strbuf *b) {
    ox_sb_printf(b, "    \"per_layer_config\": {");
    int n = 0;
    for (int l = 0; l < s->layers; l++)
        if (synth_is_full(s, l))
            ox_sb_printf(b, "%s\"%d\": {\"head_dim\": %d, \"num_key_value_heads\": %d}", n++ ? ", " : "", l,
                         s->global_head_dim, synth_kv_heads(s, l));
    ox_sb_printf(b, "},\n    \"head_dim\": %d, \"sliding_window\": %d,\n", s->head_dim, s->window);
}

static void config_json(const ox_synth *s, ox_type dtype, ox_strbuf *b) {
    char f1[32], f2[32], f3[32];
    ox_sb_printf(b, "{\n  \"architectures\": [\"%s\"],\n  \"model_type\": \"%s\",\n",
                 s->unified ? "Gemma4UnifiedForConditionalGeneration" : "Gemma4ForConditionalGeneration",
                 s->unified ? "gemma4_unified" : "gemma4");
    ox_sb_printf(b, "  \"pad_token_id\": 0, \"bos_token_id\": 2, \"eos_token_id\": [1, 6],\n"
                    "  \"tie_word_embeddings\": true,\n  \"text_config\": {\n");
    ox_sb_printf(b, "    \"model_type\": \"%s\", \"torch_dtype\": \"%s\",\n",
                 s->unified ? "gemma4_unified_text" : "gemma4_text", dtype == OX_BF16 ? "bfloat16" : "float32");
    ox_sb_printf(b, "    \"vocab_size\": %d, \"hidden_size\": %d, \"intermediate_size\": %d,\n", s->vocab, s->hidden,
                 s->ffn);
    ox_sb_printf(b, "    \"num_hidden_layers\": %d, \"num_attention_heads\": %d, \"num_key_value_heads\": %d,\n",
                 s->layers, s->heads, s->kv_heads);
    if (s->unified) unified_layers_json(s, b);
    else if (s->k_eq_v) ox_sb_printf(b, "    \"num_global_key_value_heads\": %d,\n", s->global_kv_heads);
    else ox_sb_printf(b, "    \"num_global_key_value_heads\": null,\n");
    if (!s->unified)
        ox_sb_printf(b, "    \"head_dim\": %d, \"global_head_dim\": %d, \"sliding_window\": %d,\n", s->head_dim,
                     s->global_head_dim, s->window);
    ox_sb_printf(b, "    \"layer_types\": [");
    for (int l = 0; l < s->layers; l++)
        ox_sb_printf(b, "%s\"%s\"", l ? ", " : "", synth_is_full(s, l) ? "full_attention" : "sliding_attention");
    ox_sb_printf(b,
                 "],\n    \"rope_parameters\": {\"sliding_attention\": {\"rope_type\": \"default\", "
                 "\"rope_theta\": %s}, \"full_attention\": {\"rope_type\": \"proportional\", "
                 "\"partial_rotary_factor\": %s, \"rope_theta\": %s}},\n",
                 json_float(f1, sizeof f1, s->rope_base_swa), json_float(f2, sizeof f2, s->partial_rotary),
                 json_float(f3, sizeof f3, s->rope_base));
    ox_sb_printf(b, "    \"rms_norm_eps\": %s, \"hidden_activation\": \"gelu_pytorch_tanh\",\n",
                 json_float(f1, sizeof f1, s->eps));
    if (s->softcap > 0)
        ox_sb_printf(b, "    \"final_logit_softcapping\": %s,\n", json_float(f1, sizeof f1, s->softcap));
    else ox_sb_printf(b, "    \"final_logit_softcapping\": null,\n");
    ox_sb_printf(b, "    \"tie_word_embeddings\": true, \"attention_bias\": false,\n");
    if (!s->unified)
        ox_sb_printf(b, "    \"hidden_size_per_layer_input\": %d, \"vocab_size_per_layer_input\": %d,\n", s->ple,
                     s->vocab);
    ox_sb_printf(b, "    \"num_kv_shared_layers\": %d, \"attention_k_eq_v\": %s, \"use_double_wide_mlp\": %s",
                 s->kv_shared, s->k_eq_v ? "true" : "false", s->double_wide ? "true" : "false");
    if (!s->unified) ox_sb_printf(b, ",\n    \"enable_moe_block\": %s", s->moe ? "true" : "false");
    if (s->moe)
        ox_sb_printf(b, ", \"num_experts\": %d, \"top_k_experts\": %d, \"moe_intermediate_size\": %d", s->n_experts,
                     s->top_k, s->moe_ffn);
    ox_sb_printf(b, ",\n    \"use_bidirectional_attention\": %s, \"max_position_embeddings\": %d,\n",
                 s->bidirectional == 2 || (s->unified && !s->bidirectional) ? "\"vision\""
                 : s->bidirectional                                         ? "\"all\""
                                                                            : "null",
                 s->ctx);
    ox_sb_printf(b, "    \"pad_token_id\": 0, \"bos_token_id\": 2, \"eos_token_id\": 1\n  }");
    synth_vision_config_json(s, b);
    synth_unified_config_json(s, b);
    ox_sb_printf(b, "\n}\n");
}

/* tokenizer.json in the HF BPE form Gemma uses: spaces -> U+2581, byte fallback, specials and
 * the <unusedN> block as added tokens (matched before BPE). */
static void tokenizer_json(const vocab *v, ox_strbuf *b) {
    ox_sb_printf(b, "{\"version\": \"1.0\", \"truncation\": null, \"padding\": null,\n\"added_tokens\": [");
    int first = 1;
    for (int i = 0; i < v->n; i++) {
        if (v->type[i] != TOK_CONTROL && v->type[i] != TOK_UNKNOWN && v->type[i] != TOK_USER) continue;
        ox_sb_printf(b, "%s\n {\"id\": %d, \"content\": ", first ? "" : ",", i);
        ox_sb_json_str(b, v->tok[i], strlen(v->tok[i]));
        ox_sb_printf(b,
                     ", \"single_word\": false, \"lstrip\": false, \"rstrip\": false, \"normalized\": false, "
                     "\"special\": %s}",
                     v->type[i] == TOK_USER ? "false" : "true");
        first = 0;
    }
    ox_sb_printf(b,
                 "],\n\"normalizer\": {\"type\": \"Replace\", \"pattern\": {\"String\": \" \"}, \"content\": \"" SPACE
                 "\"},\n"
                 "\"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": {\"String\": \" \"}, \"behavior\": "
                 "\"MergedWithPrevious\", \"invert\": false},\n"
                 "\"post_processor\": {\"type\": \"TemplateProcessing\", \"single\": [{\"SpecialToken\": {\"id\": "
                 "\"<bos>\", \"type_id\": 0}}, "
                 "{\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}], \"pair\": [{\"SpecialToken\": {\"id\": \"<bos>\", "
                 "\"type_id\": 0}}, "
                 "{\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}, {\"Sequence\": {\"id\": \"B\", \"type_id\": 1}}], "
                 "\"special_tokens\": {\"<bos>\": {\"id\": \"<bos>\", \"ids\": [2], \"tokens\": [\"<bos>\"]}}},\n"
                 "\"decoder\": {\"type\": \"Sequence\", \"decoders\": [{\"type\": \"Replace\", \"pattern\": "
                 "{\"String\": \"" SPACE "\"}, "
                 "\"content\": \" \"}, {\"type\": \"ByteFallback\"}, {\"type\": \"Fuse\"}]},\n"
                 "\"model\": {\"type\": \"BPE\", \"dropout\": null, \"unk_token\": \"<unk>\", "
                 "\"continuing_subword_prefix\": null, "
                 "\"end_of_word_suffix\": null, \"fuse_unk\": true, \"byte_fallback\": true, \"ignore_merges\": "
                 "false,\n\"vocab\": {");
    for (int i = 0; i < v->n; i++) {
        ox_sb_printf(b, "%s\n", i ? "," : "");
        ox_sb_json_str(b, v->tok[i], strlen(v->tok[i]));
        ox_sb_printf(b, ": %d", i);
    }
    ox_sb_printf(b, "},\n\"merges\": [");
    for (int i = 0; i < v->n_merges; i++) {
        const char *m = v->merges[i], *sp = strchr(m, ' ');
        ox_sb_printf(b, "%s\n[", i ? "," : "");
        ox_sb_json_str(b, m, (size_t)(sp - m));
        ox_sb_printf(b, ", ");
        ox_sb_json_str(b, sp + 1, strlen(sp + 1));
        ox_sb_printf(b, "]");
    }
    ox_sb_printf(b, "]}}\n");
}

int ox_synth_write_hf(const ox_synth *s, const char *dir, ox_type dtype, int n_shards, ox_err *err) {
    if (dtype != OX_F32 && dtype != OX_BF16)
        return ox_errf(err, OX_E_UNSUPPORTED, "synth: HF dtype must be F32 or BF16");
    if (s->widen) return ox_errf(err, OX_E_UNSUPPORTED, "synth: --widen writes GGUF only");
    if (n_shards < 1 || n_shards > 99) return ox_errf(err, OX_E_RANGE, "synth: shards must be in 1..99");
    vocab v;
    plan p;
    writer_ctx x;
    int rc = synth_writer_begin(s, &v, &p, &x, err);
    if (rc) return rc;
    ox_strbuf b = {0}, ix = {0};
    config_json(s, dtype, &b);
    if ((rc = write_text(dir, "config.json", &b, err))) goto done;
    b.len = 0;
    tokenizer_json(&v, &b);
    if ((rc = write_text(dir, "tokenizer.json", &b, err))) goto done;
    uint64_t total = 0, esz = dtype == OX_BF16 ? 2 : 4;
    for (int i = 0; i < p.n; i++)
        if (p.t[i].where != GGUF_ONLY) total += p.t[i].ne[0] * p.t[i].ne[1] * p.t[i].ne[2] * esz;
    ox_sb_printf(&ix, "{\"metadata\": {\"total_size\": %llu}, \"weight_map\": {", (unsigned long long)total);
    int ti = 0, n_map = 0;
    uint64_t acc = 0;
    for (int sh = 0; sh < n_shards; sh++) {
        char fname[64], path[4096];
        if (n_shards == 1) snprintf(fname, sizeof fname, "model.safetensors");
        else snprintf(fname, sizeof fname, "model-%05d-of-%05d.safetensors", sh + 1, n_shards);
        snprintf(path, sizeof path, "%s/%s", dir, fname);
        ox_st_writer *w = ox_st_writer_new();
        if (!w || ox_st_w_meta(w, "format", "pt", err)) {
            ox_st_writer_free(w);
            rc = err && err->code ? err->code : ox_errf(err, OX_E_NOMEM, "synth: out of memory");
            goto done;
        }
        int n = 0;
        uint64_t limit = total * (uint64_t)(sh + 1) / (uint64_t)n_shards;
        for (; ti < p.n && (acc < limit || sh == n_shards - 1); ti++) {
            const ptensor *t = &p.t[ti];
            if (t->where == GGUF_ONLY) continue;
            char name[160];
            uint64_t shape[3];
            for (int d = 0; d < t->n_dims; d++) shape[d] = t->ne[t->n_dims - 1 - d];
            snprintf(name, sizeof name, "%s%s", t->where == VISION ? "" : "model.language_model.", t->hf);
            x.t[n] = t;
            x.type[n] = dtype;
            if ((rc = ox_st_w_tensor(w, name, dtype == OX_BF16 ? OX_ST_BF16 : OX_ST_F32, t->n_dims, shape, NULL, err))) {
                ox_st_writer_free(w);
                goto done;
            }
            n++;
            acc += t->ne[0] * t->ne[1] * t->ne[2] * esz;
            ox_sb_printf(&ix, "%s\n  \"%s\": \"%s\"", n_map++ ? "," : "", name, fname);
        }
        rc = ox_st_w_write(w, path, synth_fill, &x, err);
        ox_st_writer_free(w);
        if (rc) goto done;
    }
    ox_sb_printf(&ix, "\n}}\n");
    if (n_shards > 1) rc = write_text(dir, "model.safetensors.index.json", &ix, err);
done:
    ox_sb_free(&b);
    ox_sb_free(&ix);
    synth_writer_end(&v, &p, &x);
    return rc;
}
