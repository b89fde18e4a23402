// image_resize.js — the processor's resize and rescale (docs/images.md): an
// 8-bit RGB image resized with antialiased bicubic interpolation, then rescaled to [0, 1] as
// float32 (x / 255; no mean/std normalization), HWC — what ox_wasm_image_embed takes.
//
// The resize is Pillow's (Image.resize(BICUBIC), which the processor's PIL backend calls and
// torchvision's antialiased uint8 path reproduces), in its own arithmetic so that the pixels
// match it:
// - separable: a horizontal pass into an 8-bit image, then a vertical pass; a side whose size
//   does not change is not resampled;
// - output pixel i of a side scaled by s = in / out takes the input pixels j in
//   [trunc(c - r + 0.5), trunc(c + r + 0.5)) (clamped to the image), c = (i + 0.5) s,
//   r = 2 max(s, 1), with weights K((j - c + 0.5) / max(s, 1)) normalized to sum 1 — K the
//   cubic convolution kernel with a = -0.5, stretched by s when shrinking (the antialias);
// - the weights in fixed point with 22 fraction bits (rounded half away from zero), sums
//   started at one half, shifted down and clamped to 0..255.
import { OxError } from '../shared/errors.js';

const PRECISION_BITS = 22;
const HALF = 1 << (PRECISION_BITS - 1);

// the cubic convolution kernel (Keys), a = -0.5, support 2
export function cubic(x) {
  const a = -0.5;
  x = Math.abs(x);
  if (x < 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return (((x - 5) * x + 8) * x - 4) * a;
  return 0;
}

/**
 * The taps of a side resampled from inSize to outSize: for output i, the first input pixel
 * first[i], the count n[i], and the normalized float64 weights at weights[i * taps + j].
 * @returns {{taps: number, first: Int32Array, n: Int32Array, weights: Float64Array}}
 */
export function resampleTaps(inSize, outSize) {
  const scale = inSize / outSize;
  const filterScale = Math.max(scale, 1);
  const support = 2 * filterScale;
  const ss = 1 / filterScale; // (a product, as Pillow computes it: the same last bits)
  const taps = Math.ceil(support) * 2 + 1;
  const first = new Int32Array(outSize);
  const n = new Int32Array(outSize);
  const weights = new Float64Array(outSize * taps);
  for (let i = 0; i < outSize; i++) {
    const center = (i + 0.5) * scale;
    const lo = Math.max(Math.trunc(center - support + 0.5), 0);
    const hi = Math.min(Math.trunc(center + support + 0.5), inSize);
    let sum = 0;
    for (let j = lo; j < hi; j++) {
      const w = cubic((j - center + 0.5) * ss);
      weights[i * taps + j - lo] = w;
      sum += w;
    }
    if (sum !== 0) for (let j = 0; j < hi - lo; j++) weights[i * taps + j] /= sum;
    first[i] = lo;
    n[i] = hi - lo;
  }
  return { taps, first, n, weights };
}

// the weights in fixed point, as int32
function fixedPoint(weights) {
  const out = new Int32Array(weights.length);
  for (let i = 0; i < weights.length; i++) {
    const w = weights[i] * (1 << PRECISION_BITS);
    out[i] = Math.trunc(w < 0 ? w - 0.5 : w + 0.5);
  }
  return out;
}

const clip8 = (s) => Math.min(255, Math.max(0, s >> PRECISION_BITS));

// One pass: `along` 'x' resamples each row to outSize pixels, 'y' each column. The loops go
// along memory (a row's outputs in turn; an output row's pixels in turn), for the cache.
function pass(src, h, w, outSize, along) {
  const { taps, first, n, weights } = resampleTaps(along === 'x' ? w : h, outSize);
  const k = fixedPoint(weights);
  const [oh, ow] = along === 'x' ? [h, outSize] : [outSize, w];
  const out = new Uint8Array(oh * ow * 3);
  const step = along === 'x' ? 3 : w * 3; // between two input pixels along the pass
  for (let y = 0; y < oh; y++)
    for (let x = 0; x < ow; x++) {
      const i = along === 'x' ? x : y; // the output's index along the pass
      const kb = i * taps;
      const cnt = n[i];
      let p = along === 'x' ? (y * w + first[i]) * 3 : (first[i] * w + x) * 3;
      let r = HALF,
        g = HALF,
        b = HALF;
      for (let j = 0; j < cnt; j++, p += step) {
        const c = k[kb + j];
        r += src[p] * c;
        g += src[p + 1] * c;
        b += src[p + 2] * c;
      }
      const o = (y * ow + x) * 3;
      out[o] = clip8(r);
      out[o + 1] = clip8(g);
      out[o + 2] = clip8(b);
    }
  return out;
}

/**
 * Resize 8-bit RGB pixels (HWC, h x w) to outH x outW, as Pillow's BICUBIC does.
 * @param {Uint8Array} rgb  @returns {Uint8Array} outH x outW x 3
 */
export function resizeBicubic(rgb, h, w, outH, outW) {
  if (rgb.length !== h * w * 3) throw new OxError('RANGE', `image: ${rgb.length} bytes for ${w}x${h} RGB pixels`);
  if (!(outH > 0 && outW > 0)) throw new OxError('RANGE', `image: cannot resize to ${outW}x${outH}`);
  let out = rgb;
  if (outW !== w) out = pass(out, h, w, outW, 'x');
  if (outH !== h) out = pass(out, h, outW, outH, 'y');
  return out === rgb ? rgb.slice() : out;
}

/** 8-bit values -> float32 in [0, 1] (x * (1/255) in double, then rounded to float32). */
export function rescale(u8) {
  const out = new Float32Array(u8.length);
  const f = 1 / 255;
  for (let i = 0; i < u8.length; i++) out[i] = u8[i] * f;
  return out;
}
