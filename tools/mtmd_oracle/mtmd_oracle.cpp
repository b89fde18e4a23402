// mtmd_oracle.cpp — llama.cpp's mtmd as the oracle for the vision path (docs/vision.md): one
// image through an mmproj's tower and projector (projector gemma4v or gemma4uv), computed by
// clip_image_encode from the pixels given, on the CPU, without flash attention. mtmd's image
// preprocessor (resize to its token range, normalization by the mmproj's image_mean/std) is
// bypassed: the pixels go in as they are, as ox_vision_embed takes them.
//
//   mtmd_oracle MMPROJ PIXELS H W OUT
// PIXELS: H*W*3 little-endian float32, HWC (row by row, each pixel R, G, B), in [0,1].
// OUT: the embeddings, n_tokens * width float32, token by token. Prints "n_tokens width".
// Built by tools/mtmd_oracle/build.sh against the libmtmd that tools/llamacpp.sh built.
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "clip-impl.h"
#include "clip.h"
#include "mtmd.h"

static void quiet(ggml_log_level level, const char *text, void *) {
    if (level >= GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

static int fail(const char *what, const char *arg) {
    fprintf(stderr, "mtmd_oracle: %s%s\n", what, arg);
    return 1;
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: mtmd_oracle MMPROJ PIXELS H W OUT\n");
        return 2;
    }
    int h = atoi(argv[3]), w = atoi(argv[4]);
    if (h <= 0 || w <= 0) return fail("bad size ", argv[3]);
    mtmd_log_set(quiet, nullptr);
    ggml_log_set(quiet, nullptr);

    std::vector<float> px((size_t)h * w * 3);
    FILE *f = fopen(argv[2], "rb");
    if (!f) return fail("cannot open ", argv[2]);
    size_t got = fread(px.data(), sizeof(float), px.size(), f);
    fclose(f);
    if (got != px.size()) return fail("short pixel file ", argv[2]);

    clip_context_params cp{};
    cp.use_gpu = false;
    cp.device = nullptr;
    cp.flash_attn_type = CLIP_FLASH_ATTN_TYPE_DISABLED;
    cp.image_min_tokens = -1;
    cp.image_max_tokens = -1;
    cp.warmup = false;
    clip_ctx *ctx = clip_init(argv[1], cp).ctx_v;
    if (!ctx) return fail("cannot load the vision tower of ", argv[1]);

    clip_image_f32 img;
    img.set_size({w, h}, false, false);
    img.cpy_buf(px);
    int n = clip_n_output_tokens(ctx, &img), width = clip_n_mmproj_embd(ctx);
    std::vector<float> out((size_t)n * width); // clip_encode copies out only into a buffer of the right size
    if (!clip_image_encode(ctx, 1, &img, out)) return fail("clip_image_encode failed on ", argv[2]);

    f = fopen(argv[5], "wb");
    if (!f || fwrite(out.data(), sizeof(float), out.size(), f) != out.size() || fclose(f) != 0)
        return fail("cannot write ", argv[5]);
    printf("%d %d\n", n, width);
    clip_free(ctx);
    return 0;
}
