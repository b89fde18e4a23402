// Image preprocessing (js/engine/image_*.js, js/main/image_input.js) against the Gemma 4 image
// processor's documented arithmetic (docs/images.md), without a model:
// - the target sizes and soft-token counts for many input sizes at every max_soft_tokens: the
//   table is the processor's get_aspect_ratio_preserving_size evaluated on these sizes;
// - the antialiased bicubic resize against a float64 reference written here from the kernel's
//   definition (2-D sums over every input pixel, no fixed point, no rounding between passes);
// - PNG and JPEG decoding of small images built here (pngjs, jpeg-js encoders), alpha dropped;
// - the inputs the API takes (data: URLs, paths, Buffers, Blobs, content parts) and their errors;
// - the cache of the tower's rows: an image seen again skips the tower, another one (a few
//   pixels apart) does not, and the cache stays within its bound.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { SOFT_TOKEN_BUDGETS, imageSize } from '../../js/engine/image_size.js';
import { cubic, rescale, resampleTaps, resizeBicubic } from '../../js/engine/image_resize.js';
import { MAX_PIXELS, decodeImage } from '../../js/engine/image_decode.js';
import { preprocess } from '../../js/engine/vision.js';
import { ImageCache, contentHash } from '../../js/engine/image_cache.js';
import { imageInput, splitImages } from '../../js/main/image_input.js';
import { OxError } from '../../js/main/index.js';

const require = createRequire(import.meta.url);
const { PNG } = require('pngjs');
const jpeg = require('jpeg-js');

const VISION = { patchSize: 16, poolingKernel: 3 };

// [height, width, target height, target width, soft tokens] per max_soft_tokens
const SIZES = {
  70: [
    [1, 1, 384, 384, 64],
    [2, 3, 288, 480, 60],
    [16, 16, 384, 384, 64],
    [48, 48, 384, 384, 64],
    [224, 224, 384, 384, 64],
    [256, 256, 384, 384, 64],
    [480, 640, 336, 432, 63],
    [640, 480, 432, 336, 63],
    [720, 1280, 288, 528, 66],
    [1080, 1920, 288, 528, 66],
    [3024, 4032, 336, 432, 63],
    [4000, 3000, 432, 336, 63],
    [1, 1000, 48, 3360, 70],
    [1000, 1, 3360, 48, 70],
    [10, 5000, 48, 3360, 70],
    [5000, 10, 3360, 48, 70],
    [100, 7, 1488, 96, 62],
    [333, 777, 240, 576, 60],
    [768, 768, 384, 384, 64],
    [896, 896, 384, 384, 64],
    [1200, 1600, 336, 432, 63],
    [50, 20000, 48, 3360, 70],
    [20000, 50, 3360, 48, 70],
    [997, 13, 3360, 48, 70],
  ],
  140: [
    [1, 1, 528, 528, 121],
    [2, 3, 432, 672, 126],
    [16, 16, 528, 528, 121],
    [48, 48, 528, 528, 121],
    [224, 224, 528, 528, 121],
    [256, 256, 528, 528, 121],
    [480, 640, 480, 624, 130],
    [640, 480, 624, 480, 130],
    [720, 1280, 384, 720, 120],
    [1080, 1920, 384, 720, 120],
    [3024, 4032, 480, 624, 130],
    [4000, 3000, 624, 480, 130],
    [1, 1000, 48, 6720, 140],
    [1000, 1, 6720, 48, 140],
    [10, 5000, 48, 6720, 140],
    [5000, 10, 6720, 48, 140],
    [100, 7, 2112, 144, 132],
    [333, 777, 336, 864, 126],
    [768, 768, 528, 528, 121],
    [896, 896, 528, 528, 121],
    [1200, 1600, 480, 624, 130],
    [50, 20000, 48, 6720, 140],
    [20000, 50, 6720, 48, 140],
    [997, 13, 4944, 48, 103],
  ],
  280: [
    [1, 1, 768, 768, 256],
    [2, 3, 624, 960, 260],
    [16, 16, 768, 768, 256],
    [48, 48, 768, 768, 256],
    [224, 224, 768, 768, 256],
    [256, 256, 768, 768, 256],
    [480, 640, 672, 912, 266],
    [640, 480, 912, 672, 266],
    [720, 1280, 576, 1056, 264],
    [1080, 1920, 576, 1056, 264],
    [3024, 4032, 672, 912, 266],
    [4000, 3000, 912, 672, 266],
    [1, 1000, 48, 13440, 280],
    [1000, 1, 13440, 48, 280],
    [10, 5000, 48, 13440, 280],
    [5000, 10, 13440, 48, 280],
    [100, 7, 3024, 192, 252],
    [333, 777, 480, 1200, 250],
    [768, 768, 768, 768, 256],
    [896, 896, 768, 768, 256],
    [1200, 1600, 672, 912, 266],
    [50, 20000, 48, 13440, 280],
    [20000, 50, 13440, 48, 280],
    [997, 13, 7008, 48, 146],
  ],
  560: [
    [1, 1, 1104, 1104, 529],
    [2, 3, 912, 1344, 532],
    [16, 16, 1104, 1104, 529],
    [48, 48, 1104, 1104, 529],
    [224, 224, 1104, 1104, 529],
    [256, 256, 1104, 1104, 529],
    [480, 640, 960, 1296, 540],
    [640, 480, 1296, 960, 540],
    [720, 1280, 816, 1488, 527],
    [1080, 1920, 816, 1488, 527],
    [3024, 4032, 960, 1296, 540],
    [4000, 3000, 1296, 960, 540],
    [1, 1000, 48, 26880, 560],
    [1000, 1, 26880, 48, 560],
    [10, 5000, 48, 25392, 529],
    [5000, 10, 25392, 48, 529],
    [100, 7, 4272, 288, 534],
    [333, 777, 720, 1728, 540],
    [768, 768, 1104, 1104, 529],
    [896, 896, 1104, 1104, 529],
    [1200, 1600, 960, 1296, 540],
    [50, 20000, 48, 22704, 473],
    [20000, 50, 22704, 48, 473],
    [997, 13, 9936, 96, 414],
  ],
  1120: [
    [1, 1, 1584, 1584, 1089],
    [2, 3, 1296, 1920, 1080],
    [16, 16, 1584, 1584, 1089],
    [48, 48, 1584, 1584, 1089],
    [224, 224, 1584, 1584, 1089],
    [256, 256, 1584, 1584, 1089],
    [480, 640, 1344, 1824, 1064],
    [640, 480, 1824, 1344, 1064],
    [720, 1280, 1200, 2112, 1100],
    [1080, 1920, 1200, 2112, 1100],
    [3024, 4032, 1344, 1824, 1064],
    [4000, 3000, 1824, 1344, 1064],
    [1, 1000, 48, 50784, 1058],
    [1000, 1, 50784, 48, 1058],
    [10, 5000, 48, 35904, 748],
    [5000, 10, 35904, 48, 748],
    [100, 7, 6048, 384, 1008],
    [333, 777, 1008, 2448, 1071],
    [768, 768, 1584, 1584, 1089],
    [896, 896, 1584, 1584, 1089],
    [1200, 1600, 1344, 1824, 1064],
    [50, 20000, 48, 32112, 669],
    [20000, 50, 32112, 48, 669],
    [997, 13, 14064, 144, 879],
  ],
};

// a deterministic generator (xorshift32)
function rng(seed) {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 2 ** 32;
  };
}

test('target sizes and soft tokens are the processor’s for every budget', () => {
  assert.deepEqual(SOFT_TOKEN_BUDGETS, [70, 140, 280, 560, 1120]);
  for (const [budget, rows] of Object.entries(SIZES))
    for (const [h, w, th, tw, n] of rows)
      assert.deepEqual(
        imageSize(h, w, { ...VISION, maxSoftTokens: Number(budget) }),
        { height: th, width: tw, softTokens: n },
        `${h}x${w} at ${budget}`,
      );
});

test('every target size: sides multiples of 48, within the patch budget, aspect kept', () => {
  const r = rng(7);
  for (let i = 0; i < 3000; i++) {
    const h = 1 + Math.floor(r() ** 3 * 8000);
    const w = 1 + Math.floor(r() ** 3 * 8000);
    for (const budget of SOFT_TOKEN_BUDGETS) {
      const s = imageSize(h, w, { ...VISION, maxSoftTokens: budget });
      assert.ok(s.height % 48 === 0 && s.width % 48 === 0 && s.height > 0 && s.width > 0, `${h}x${w}`);
      assert.ok((s.height / 16) * (s.width / 16) <= budget * 9, `${h}x${w} at ${budget}: too many patches`);
      assert.equal(s.softTokens, (s.height / 48) * (s.width / 48));
      // neither side can grow by 48 while keeping the aspect ratio under the budget (largest fit),
      // unless the image is so elongated that a side was clamped
      const ideal = Math.sqrt((budget * 9 * 256) / (h * w));
      if (ideal * h >= 48 && ideal * w >= 48) {
        assert.ok(s.height + 48 > ideal * h && s.width + 48 > ideal * w, `${h}x${w} at ${budget}: not the largest`);
        assert.ok(s.height <= ideal * h + 1e-9 && s.width <= ideal * w + 1e-9);
      }
    }
  }
});

test('size errors: no pixels, a budget the processor does not take', () => {
  assert.throws(
    () => imageSize(0, 10, { ...VISION, maxSoftTokens: 280 }),
    (e) => e instanceof OxError && e.code === 'RANGE',
  );
  assert.throws(
    () => imageSize(10, 10, { ...VISION, maxSoftTokens: 300 }),
    (e) => e.code === 'RANGE' && /one of 70, 140, 280, 560, 1120/.test(e.message),
  );
});

// ---- the resize against float64 -------------------------------------------------------------

// Keys' cubic convolution kernel, a = -0.5, written out again from its definition
function keys(x) {
  const t = Math.abs(x);
  if (t < 1) return 1.5 * t ** 3 - 2.5 * t ** 2 + 1;
  if (t < 2) return -0.5 * t ** 3 + 2.5 * t ** 2 - 4 * t + 2;
  return 0;
}

// The weights of every input pixel for output i of a side: the kernel stretched by the scale
// when shrinking (antialias), centred on the output pixel's centre mapped to the input, normalized.
function weights1d(inSize, outSize) {
  const s = inSize / outSize;
  const fs = Math.max(1, s);
  return Array.from({ length: outSize }, (_, i) => {
    const c = (i + 0.5) * s;
    const w = Array.from({ length: inSize }, (_, j) => keys((j + 0.5 - c) / fs));
    const sum = w.reduce((a, b) => a + b, 0);
    return w.map((x) => x / sum);
  });
}

// float64: the rows, then the columns, each pass clamped to [0, 255] (the processor's
// intermediate is an image: values a pass overshoots are cut there, not carried on)
function reference(rgb, h, w, oh, ow) {
  const wx = weights1d(w, ow);
  const wy = weights1d(h, oh);
  const clamp = (v) => Math.min(255, Math.max(0, v));
  const mid = new Float64Array(h * ow * 3);
  for (let y = 0; y < h; y++)
    for (let x = 0; x < ow; x++)
      for (let ch = 0; ch < 3; ch++) {
        let s = 0;
        for (let j = 0; j < w; j++) s += wx[x][j] * rgb[(y * w + j) * 3 + ch];
        mid[(y * ow + x) * 3 + ch] = clamp(s);
      }
  const out = new Float64Array(oh * ow * 3);
  for (let y = 0; y < oh; y++)
    for (let x = 0; x < ow; x++)
      for (let ch = 0; ch < 3; ch++) {
        let s = 0;
        for (let i = 0; i < h; i++) s += wy[y][i] * mid[(i * ow + x) * 3 + ch];
        out[(y * ow + x) * 3 + ch] = clamp(s);
      }
  return out;
}

function randomImage(h, w, seed, smooth) {
  const r = rng(seed);
  const rgb = new Uint8Array(h * w * 3);
  for (let y = 0; y < h; y++)
    for (let x = 0; x < w; x++)
      for (let c = 0; c < 3; c++)
        rgb[(y * w + x) * 3 + c] = smooth
          ? Math.round(127.5 + 127.5 * Math.sin((x * (c + 1)) / 7 + y / 5) * Math.cos(y / 11 - c))
          : Math.floor(r() * 256);
  return rgb;
}

test('the taps: the kernel, its support, normalized weights', () => {
  assert.equal(cubic(0), 1);
  assert.ok(cubic(1) === 0);
  assert.ok(cubic(2) === 0);
  for (const x of [0.25, 0.5, 0.75, 1.25, 1.5, 1.75]) assert.ok(Math.abs(cubic(x) - keys(x)) < 1e-15);
  for (const [n, m] of [
    [100, 7],
    [7, 100],
    [48, 48],
    [1, 48],
    [640, 48],
  ]) {
    const { taps, first, n: cnt, weights } = resampleTaps(n, m);
    const ref = weights1d(n, m);
    for (let i = 0; i < m; i++) {
      let sum = 0;
      for (let j = 0; j < n; j++) {
        const k = j - first[i];
        const w = k >= 0 && k < cnt[i] ? weights[i * taps + k] : 0;
        sum += w;
        assert.ok(Math.abs(w - ref[i][j]) < 1e-12, `${n}->${m}: output ${i}, input ${j}`);
      }
      assert.ok(Math.abs(sum - 1) < 1e-12);
    }
  }
});

test('the resize is the float64 antialiased bicubic within its 8-bit rounding', () => {
  // bound: one rounding after each pass; the first one's error goes through the second pass's
  // weights (sum of |w| < 1.25), so < 0.5 * 1.25 + 0.5
  const cases = [
    [37, 53, 24, 48, 1, false], // shrink both (antialias)
    [40, 30, 96, 96, 2, false], // enlarge both
    [50, 20, 48, 96, 3, true], // shrink one, enlarge the other
    [96, 144, 48, 48, 4, true], // by 2 and 3
    [17, 23, 17, 48, 5, false], // one side only
    [5, 3, 48, 48, 6, false], // a tiny image
  ];
  for (const [h, w, oh, ow, seed, smooth] of cases) {
    const rgb = randomImage(h, w, seed, smooth);
    const got = resizeBicubic(rgb, h, w, oh, ow);
    const ref = reference(rgb, h, w, oh, ow);
    assert.equal(got.length, oh * ow * 3);
    let max = 0,
      sum = 0;
    for (let i = 0; i < got.length; i++) {
      const d = Math.abs(got[i] - ref[i]);
      max = Math.max(max, d);
      sum += d;
    }
    assert.ok(max < 1.125, `${h}x${w} -> ${oh}x${ow}: max error ${max}`);
    assert.ok(sum / got.length < 0.4, `${h}x${w} -> ${oh}x${ow}: mean error ${sum / got.length}`);
  }
});

test('the resize: same size is a copy, a flat image stays flat, rescale is x * (1/255) in float32', () => {
  const rgb = randomImage(48, 96, 9, false);
  const same = resizeBicubic(rgb, 48, 96, 48, 96);
  assert.deepEqual(same, rgb);
  assert.notEqual(same, rgb);
  const flat = new Uint8Array(31 * 45 * 3).fill(200);
  for (const [oh, ow] of [
    [48, 48],
    [96, 144],
    [15, 20],
  ])
    assert.ok(resizeBicubic(flat, 31, 45, oh, ow).every((v) => v === 200));
  const f = rescale(Uint8Array.from([0, 1, 128, 254, 255]));
  assert.ok(f instanceof Float32Array);
  assert.deepEqual(
    Array.from(f),
    [0, 1, 128, 254, 255].map((v) => Math.fround(v * (1 / 255))),
  );
  assert.equal(f[4], 1);
  assert.throws(
    () => resizeBicubic(rgb, 48, 95, 48, 48),
    (e) => e.code === 'RANGE',
  );
});

// ---- decoding -------------------------------------------------------------------------------

function png(w, h, rgba, opts = {}) {
  const p = new PNG({ width: w, height: h, ...opts });
  p.data = Buffer.from(rgba);
  return new Uint8Array(PNG.sync.write(p, opts));
}

test('PNG: RGBA decoded to RGB with the alpha dropped (as convert("RGB")); grey to three equal channels', async () => {
  const w = 5,
    h = 3;
  const rgba = new Uint8Array(w * h * 4);
  for (let i = 0; i < w * h; i++) rgba.set([i * 10, 255 - i * 7, (i * 37) % 256, (i * 53) % 256], i * 4);
  const img = await decodeImage({ bytes: png(w, h, rgba) });
  assert.equal(img.width, w);
  assert.equal(img.height, h);
  for (let i = 0; i < w * h; i++)
    assert.deepEqual(
      Array.from(img.rgb.subarray(i * 3, i * 3 + 3)),
      Array.from(rgba.subarray(i * 4, i * 4 + 3)),
      `pixel ${i}`,
    );
  // a greyscale PNG (colour type 0)
  const grey = new Uint8Array(4 * 2 * 4);
  for (let i = 0; i < 8; i++) grey.set([i * 30, i * 30, i * 30, 255], i * 4);
  const g = await decodeImage({ bytes: png(4, 2, grey, { colorType: 0, inputColorType: 6 }) });
  for (let i = 0; i < 8; i++) assert.deepEqual(Array.from(g.rgb.subarray(i * 3, i * 3 + 3)), [i * 30, i * 30, i * 30]);
});

test('JPEG: decoded to RGB (jpeg-js), close to the encoded pixels', async () => {
  const w = 32,
    h = 16;
  const rgba = new Uint8Array(w * h * 4);
  for (let y = 0; y < h; y++) for (let x = 0; x < w; x++) rgba.set([x * 8, y * 16, 128, 255], (y * w + x) * 4);
  const bytes = new Uint8Array(jpeg.encode({ width: w, height: h, data: Buffer.from(rgba) }, 100).data);
  const img = await decodeImage({ bytes });
  assert.equal(img.width, w);
  assert.equal(img.height, h);
  let max = 0;
  for (let i = 0; i < w * h; i++)
    for (let c = 0; c < 3; c++) max = Math.max(max, Math.abs(img.rgb[i * 3 + c] - rgba[i * 4 + c]));
  assert.ok(max <= 8, `max difference ${max} at quality 100`);
});

test('decoding errors name the problem', async () => {
  const err = (code, re) => (e) => e instanceof OxError && e.code === code && re.test(e.message);
  await assert.rejects(
    decodeImage({ bytes: new TextEncoder().encode('GIF89a not supported here') }),
    err('FORMAT', /not a PNG or JPEG file \(25 bytes, starting 47 49 46/),
  );
  await assert.rejects(decodeImage({ bytes: new Uint8Array(0) }), err('FORMAT', /empty/));
  const good = png(4, 4, new Uint8Array(64).fill(255));
  await assert.rejects(decodeImage({ bytes: good.subarray(0, 40) }), err('FORMAT', /the PNG cannot be decoded/));
  await assert.rejects(
    decodeImage({ bytes: Uint8Array.from([0xff, 0xd8, 0xff, 0xe0, 1, 2, 3]) }),
    err('FORMAT', /the JPEG cannot be decoded/),
  );
  // a header claiming more pixels than Pillow opens: refused before decoding
  const bomb = good.slice();
  new DataView(bomb.buffer).setUint32(16, 100000);
  new DataView(bomb.buffer).setUint32(20, 100000);
  await assert.rejects(decodeImage({ bytes: bomb }), err('RANGE', new RegExp(`more than ${MAX_PIXELS}`)));
  await assert.rejects(decodeImage({ width: 0, height: 3, data: new Uint8Array(0) }), err('RANGE', /0x3 pixels/));
  await assert.rejects(
    decodeImage({ width: 2, height: 2, data: new Uint8Array(15) }),
    err('RANGE', /15 bytes of pixels/),
  );
  await assert.rejects(decodeImage(42), err('RANGE', /not an image/));
});

test('ImageData-like pixels and a whole preprocess: 480x640 at 280 tokens -> 672x912, float32 HWC', async () => {
  const w = 640,
    h = 480;
  const data = new Uint8ClampedArray(w * h * 4);
  for (let i = 0; i < w * h; i++) data.set([i % 256, (i >> 8) % 256, 7, 0], i * 4);
  const img = await decodeImage({ width: w, height: h, data });
  assert.equal(img.rgb[3 * 300], 300 % 256);
  const x = preprocess(img, VISION, 280);
  assert.equal(x.height, 672);
  assert.equal(x.width, 912);
  assert.equal(x.softTokens, 266);
  assert.ok(x.pixels instanceof Float32Array && x.pixels.length === 672 * 912 * 3);
  assert.ok(x.pixels.every((v) => v >= 0 && v <= 1));
  // the third channel was 7 everywhere: it stays 7/255 through the resize
  for (let i = 2; i < x.pixels.length; i += 3 * 997) assert.equal(x.pixels[i], Math.fround(7 / 255));
});

// ---- the API's inputs ----------------------------------------------------------------------

test('image inputs: data: URLs, paths, file: URLs, Buffers, ArrayBuffers, Blobs become bytes', async () => {
  const bytes = png(2, 2, new Uint8Array(16).fill(9));
  const b64 = Buffer.from(bytes).toString('base64');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'oxinfer-img-'));
  try {
    const file = path.join(dir, 'a.png');
    fs.writeFileSync(file, bytes);
    const inputs = [
      `data:image/png;base64,${b64}`,
      file,
      new URL(`file://${file}`),
      Buffer.from(bytes),
      bytes.buffer.slice(0),
      new Blob([bytes]),
    ];
    for (const x of inputs) assert.deepEqual((await imageInput(x)).bytes, bytes);
    await assert.rejects(
      imageInput(path.join(dir, 'missing.png'), 'images[0]'),
      (e) => e.code === 'IO' && /images\[0\]: cannot read/.test(e.message),
    );
    await assert.rejects(
      imageInput({ not: 'an image' }, 'images[1]'),
      (e) => e.code === 'RANGE' && /images\[1\]: an image must be/.test(e.message),
    );
    await assert.rejects(imageInput('data:image/png;base64,%%%'), (e) => e.code === 'FORMAT');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('content parts: image and image_url parts leave the messages for bare markers, in order', async () => {
  const a = png(1, 1, Uint8Array.from([1, 2, 3, 4]));
  const url = `data:image/png;base64,${Buffer.from(a).toString('base64')}`;
  const msgs = [
    { role: 'system', content: 'be brief' },
    {
      role: 'user',
      content: [
        { type: 'text', text: 'x' },
        { type: 'image', image: a },
        { type: 'image_url', image_url: { url } },
      ],
    },
    { role: 'user', content: [{ type: 'image_url', image_url: url }] },
  ];
  const { messages, images } = await splitImages(msgs);
  assert.deepEqual(messages[1].content, [{ type: 'text', text: 'x' }, { type: 'image' }, { type: 'image' }]);
  assert.deepEqual(messages[2].content, [{ type: 'image' }]);
  assert.equal(messages[0], msgs[0]);
  assert.equal(images.length, 3);
  for (const im of images) assert.deepEqual(im.bytes, a);
  const none = [{ role: 'user', content: 'hi' }];
  assert.equal((await splitImages(none)).messages, none);
  await assert.rejects(
    splitImages([{ role: 'user', content: [{ type: 'image_url', image_url: {} }] }]),
    (e) => e.code === 'RANGE' && /message 0: content part 0/.test(e.message),
  );
});

// ---- the prompt: markers expanded, rows in order (an engine stand-in for the tower) ----------

// An engine whose "tower" writes, for an image of h x w pixels, n rows of `hidden` floats each
// equal to h * 1000 + w + k / 1000 (row k), so that the test sees which image each row is from.
function fakeEngine({ context = 4096, hidden = 4, cacheBytes } = {}) {
  const vision = {
    patchSize: 16,
    poolingKernel: 3,
    defaultSoftTokens: 70,
    imageTokenId: 9,
    boiTokenId: 7,
    eoiTokenId: 8,
  };
  const calls = [];
  const heap = {
    withFloats: (arr, fn) => fn(arr),
    scoped: (bytes, fn) => fn(new Float32Array(bytes / 4)),
    check: (rc) => rc,
    f32: (p, n) => p.subarray(0, n),
    C: {
      ox_wasm_image_embed(e, pixels, h, w, out, n) {
        calls.push({ h, w, n, pixels: pixels.length });
        for (let k = 0; k < n; k++) out.fill(h * 1000 + w + k / 1000, k * hidden, (k + 1) * hidden);
        return n;
      },
    },
  };
  const images = new ImageCache(cacheBytes);
  return { engine: { heap, ptr: 1, info: { vision, hidden, context, files: ['m.gguf'] }, images }, calls };
}

const rgbaImage = (w, h) => ({ width: w, height: h, data: new Uint8Array(w * h * 4).fill(100) });

test('each <|image|> becomes <|image>, its soft tokens, <image|>; the rows follow the images in order', async () => {
  const { withImages } = await import('../../js/engine/vision.js');
  const { engine, calls } = fakeEngine();
  // two images: 640x480 (at 70 tokens: 432x336, 63 tokens), then 7 wide and 100 high (96x1488)
  const tokens = [2, 5, 9, 6, 9, 1];
  const { tokens: out, soft } = await withImages(engine, tokens, [rgbaImage(640, 480), rgbaImage(7, 100)]);
  const n1 = imageSize(480, 640, { ...VISION, maxSoftTokens: 70 }).softTokens;
  const n2 = imageSize(100, 7, { ...VISION, maxSoftTokens: 70 }).softTokens;
  assert.deepEqual(out, [2, 5, 7, ...Array(n1).fill(9), 8, 6, 7, ...Array(n2).fill(9), 8, 1]);
  assert.deepEqual(
    calls.map((c) => [c.h, c.w, c.n, c.pixels]),
    [
      [336, 432, n1, 336 * 432 * 3],
      [1488, 96, n2, 1488 * 96 * 3],
    ],
  );
  assert.equal(soft.token, 9);
  assert.equal(soft.embeddings.length, (n1 + n2) * 4);
  assert.equal(soft.embeddings[0], Math.fround(336 * 1000 + 432));
  assert.equal(soft.embeddings[(n1 - 1) * 4], Math.fround(336 * 1000 + 432 + (n1 - 1) / 1000));
  assert.equal(soft.embeddings[n1 * 4], Math.fround(1488 * 1000 + 96));
  // a budget per request
  const big = await withImages(engine, [9], [rgbaImage(640, 480)], 280);
  assert.equal(big.tokens.length, 266 + 2);
});

test('prompt errors: no tower, marker count, context, budget, an image that does not decode', async () => {
  const { withImages, visionOf } = await import('../../js/engine/vision.js');
  const err = (code, re) => (e) => e instanceof OxError && e.code === code && re.test(e.message);
  assert.throws(
    () => visionOf({ files: ['text.gguf'] }),
    err('UNSUPPORTED', /text\.gguf: the model has no vision tower/),
  );
  const { engine, calls } = fakeEngine({ context: 100 });
  await assert.rejects(
    withImages(engine, [2, 9, 9], [rgbaImage(4, 4)]),
    err('RANGE', /2 image markers .* for 1 image/),
  );
  await assert.rejects(withImages(engine, [2], [rgbaImage(4, 4)]), err('RANGE', /0 image markers/));
  // one image (64 soft tokens) fits a context of 100; two do not, and no tower runs for them
  assert.equal((await withImages(engine, [2, 9, 3], [rgbaImage(48, 48)])).tokens.length, 68);
  calls.length = 0;
  await assert.rejects(
    withImages(engine, [2, 9, 3, 9], [rgbaImage(48, 48), rgbaImage(48, 48)]),
    err('RANGE', /the prompt with its images is 134 tokens \(64 \+ 64 image tokens\), more than the context of 100/),
  );
  assert.equal(calls.length, 0, 'no tower ran for a prompt that does not fit');
  await assert.rejects(
    withImages(engine, [9], [rgbaImage(48, 48)], 100),
    err('RANGE', /maxImageTokens must be one of/),
  );
  await assert.rejects(
    withImages(engine, [9, 9], [rgbaImage(4, 4), { bytes: Uint8Array.from([1, 2, 3]) }]),
    err('FORMAT', /^image 1: not a PNG or JPEG/),
  );
});

test('an image seen again takes its rows from the cache; another image, or another size, runs the tower', async () => {
  const { withImages } = await import('../../js/engine/vision.js');
  const { engine, calls } = fakeEngine();
  const a = rgbaImage(640, 480);
  const first = await withImages(engine, [2, 9, 6], [a]);
  assert.deepEqual([first.encoded, first.cached], [1, 0]);
  // the same pixels again (as other bytes objects), twice in one prompt: no tower run
  const again = await withImages(engine, [2, 9, 5, 9], [rgbaImage(640, 480), rgbaImage(640, 480)]);
  assert.deepEqual([again.encoded, again.cached], [0, 2]);
  assert.equal(calls.length, 1);
  const n = first.soft.embeddings.length;
  assert.deepEqual(again.soft.embeddings.subarray(0, n), first.soft.embeddings);
  assert.deepEqual(again.soft.embeddings.subarray(n), first.soft.embeddings);
  // a few pixels changed: another key, the tower runs (a change the resize smooths away to the
  // same resized pixels is the same image for the tower, and keeps its key)
  const b = rgbaImage(640, 480);
  for (let i = 0; i < 8; i++) b.data[4 * (640 * 200 + 300 + i)] = 0;
  assert.equal((await withImages(engine, [9], [b])).encoded, 1);
  // the same image at another budget: another size, the tower runs
  assert.equal((await withImages(engine, [9], [a], 140)).encoded, 1);
  assert.equal(calls.length, 3);
  assert.deepEqual(
    { ...engine.images.stats, bytes: undefined },
    { entries: 3, bytes: undefined, maxBytes: 64 << 20, hits: 2, encodes: 3 },
  );
  engine.images.clear();
  assert.equal(engine.images.stats.entries, 0);
  assert.equal((await withImages(engine, [9], [a])).encoded, 1, 'cleared: the tower runs again');
});

test('the image cache stays within its bound, least recently used out first', () => {
  const rows = (k) => new Float32Array(250).fill(k); // 1000 bytes each
  const cache = new ImageCache(2500);
  let runs = 0;
  const get = (k) => cache.rows(`key${k}`, () => (runs++, rows(k)));
  (get(1), get(2), get(1), get(3)); // 3 pushes out 2, the least recently used
  assert.deepEqual([...cache.entries.keys()], ['key1', 'key3']);
  assert.equal(cache.bytes, 2000);
  assert.equal(get(1)[0], 1);
  assert.equal(runs, 3);
  get(2);
  assert.equal(runs, 4, 'an entry pushed out runs again');
  for (let k = 10; k < 100; k++) {
    get(k);
    assert.ok(cache.bytes <= 2500 && cache.entries.size <= 2);
  }
  // rows larger than the bound are returned, not kept
  const big = cache.rows('big', () => new Float32Array(1000));
  assert.equal(big.length, 1000);
  assert.ok(!cache.entries.has('big') && cache.bytes <= 2500);
});

test('contentHash: the same bytes the same hash; one bit, one byte more or a swap change it', () => {
  const bytes = Uint8Array.from({ length: 4099 }, (_, i) => (i * 37) % 251);
  const h = contentHash(bytes);
  assert.match(h, /^[0-9a-f]{16}$/);
  assert.equal(contentHash(bytes.slice()), h);
  const seen = new Set([h]);
  for (let i = 0; i < bytes.length; i += 97)
    for (const bit of [1, 128]) {
      const c = bytes.slice();
      c[i] ^= bit;
      seen.add(contentHash(c));
    }
  const swapped = bytes.slice();
  [swapped[0], swapped[4]] = [swapped[4], swapped[0]];
  seen.add(contentHash(swapped));
  seen.add(contentHash(Uint8Array.from([...bytes, 0])));
  assert.equal(seen.size, 1 + 2 * Math.ceil(bytes.length / 97) + 2);
});
