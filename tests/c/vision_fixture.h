/* vision_fixture.h — what the vision tests share (test_vision.c against the float64
 * reference, test_mtmd.c against llama.cpp): the tiny generated tower, a test image, the image
 * sizes. Static definitions: each test file is its own executable. */
#ifndef OX_VISION_FIXTURE_H
#define OX_VISION_FIXTURE_H

#include <math.h>
#include <stdlib.h>

#include "writers/synth.h"

/* The tiny text model with the tiny tower (hidden 64, 2 layers, patch 16, pooling 3). */
static ox_synth vision_tiny(ox_type type) {
    ox_synth s;
    ox_synth_preset(&s, "tiny", NULL);
    ox_synth_vision_preset(&s, "tiny", NULL);
    s.type = type;
    return s;
}

/* A smooth image with some texture, h*w*3 floats HWC in [0,1] (malloc'd; NULL when out of memory). */
static float *vision_image(int h, int w, unsigned seed) {
    float *rgb = malloc((size_t)h * w * 3 * sizeof(float));
    for (int y = 0; rgb && y < h; y++)
        for (int x = 0; x < w; x++)
            for (int c = 0; c < 3; c++) {
                double v = 0.5 + 0.3 * sin(0.11 * x * (c + 1) + seed) * cos(0.07 * y + c) + 0.2 * sin(0.9 * (x + 2 * y));
                rgb[((size_t)y * w + x) * 3 + c] = (float)fmin(1, fmax(0, v));
            }
    return rgb;
}

/* H x W: one soft token, non-square both ways, and 270 patches (past one feed-forward chunk). */
static const int vision_sizes[][2] = {{48, 48}, {96, 144}, {144, 96}, {240, 288}};
#define VISION_N_SIZES ((int)(sizeof vision_sizes / sizeof vision_sizes[0]))

#endif
