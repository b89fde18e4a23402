// vision.js — images into a prompt (docs/images.md), in the engine worker. A prompt carries one
// `<|image|>` token per image (the chat template writes it for an image content part); as the
// Gemma 4 processor does, each becomes `<|image>` + n x `<|image|>` + `<image|>`, n the image's
// soft tokens, and the n rows the vision tower makes from the image (ox_wasm_image_embed) go in
// at those n positions through the soft-token path (generate.js setSoft).
//
// Per image: decode (image_decode.js), the processor's size (image_size.js), resize and rescale
// (image_resize.js), then the tower, or its rows from the engine's cache when the model saw the
// image already (image_cache.js). The context is checked before any tower runs.
import { OxError } from '../shared/errors.js';
import { ImageCache } from './image_cache.js';
import { decodeImage } from './image_decode.js';
import { imageSize } from './image_size.js';
import { rescale, resizeBicubic } from './image_resize.js';

/** The model's vision facts (info.vision), or an UNSUPPORTED OxError naming the model. */
export function visionOf(info) {
  if (info?.vision) return info.vision;
  throw new OxError(
    'UNSUPPORTED',
    `${info?.files?.[0] ?? 'the model'}: the model has no vision tower, so it takes no images (a Gemma 4 checkpoint with its vision weights, or loadModel([model, mmproj]))`,
  );
}

/**
 * A decoded image -> the tower's input: {height, width, softTokens, rgb, pixels} (8-bit RGB and
 * HWC float32 in [0, 1] at the processor's size).
 */
export function preprocess(img, vision, maxSoftTokens) {
  const size = imageSize(img.height, img.width, { ...vision, maxSoftTokens });
  const rgb =
    size.height === img.height && size.width === img.width
      ? img.rgb
      : resizeBicubic(img.rgb, img.height, img.width, size.height, size.width);
  return { ...size, rgb, pixels: rescale(rgb) };
}

/** The soft-token rows of one preprocessed image (softTokens x hidden float32): the engine's
 *  cached ones for this image, or the tower's. */
function embedImage(engine, x) {
  return engine.images.rows(ImageCache.keyOf(x), () => towerRows(engine, x));
}

function towerRows(engine, x) {
  const { heap, info } = engine;
  const n = x.softTokens;
  return heap.withFloats(x.pixels, (p) =>
    heap.scoped(n * info.hidden * 4, (out) => {
      const got = heap.check(heap.C.ox_wasm_image_embed(engine.ptr, p, x.height, x.width, out, n));
      if (got !== n)
        throw new OxError('STATE', `image: the vision tower made ${got} soft tokens where the processor counts ${n}`);
      return heap.f32(out, n * info.hidden).slice();
    }),
  );
}

// a decoded image, or the OxError of image k renamed for the caller
async function decoded(src, k) {
  try {
    return await decodeImage(src);
  } catch (e) {
    if (e instanceof OxError) throw new OxError(e.code, `image ${k}: ${e.message.replace(/^image: /, '')}`);
    throw e;
  }
}

/** One image -> {embeddings (softTokens x hidden), softTokens, height, width} (the size it was
 *  resized to): the rows a prompt's image takes (Model.embedImage). */
export async function imageEmbedding(engine, src, maxSoftTokens) {
  const vision = visionOf(engine.info);
  const budget = maxSoftTokens ?? vision.defaultSoftTokens;
  const x = preprocess(await decoded(src, 0), vision, budget);
  return { embeddings: embedImage(engine, x).slice(), softTokens: x.softTokens, height: x.height, width: x.width };
}

/**
 * Prompt tokens with one `<|image|>` per image -> {tokens (each marker expanded), soft: {token,
 * embeddings}, encoded (images the tower ran for), cached (images whose rows were cached)} for
 * generate.js. images: as js/main/image_input.js sends them; maxSoftTokens: per image (default
 * the model's).
 */
export async function withImages(engine, tokens, images, maxSoftTokens) {
  const vision = visionOf(engine.info);
  const marker = vision.imageTokenId;
  let markers = 0;
  for (const t of tokens) markers += t === marker ? 1 : 0;
  if (markers !== images.length)
    throw new OxError(
      'RANGE',
      `the prompt has ${markers} image marker${markers === 1 ? '' : 's'} (<|image|>, id ${marker}) for ${images.length} image${images.length === 1 ? '' : 's'}`,
    );
  const budget = maxSoftTokens ?? vision.defaultSoftTokens;
  const inputs = [];
  for (const [k, src] of images.entries()) inputs.push(preprocess(await decoded(src, k), vision, budget));
  const out = [];
  let k = 0;
  for (const t of tokens) {
    if (t !== marker) {
      out.push(t);
      continue;
    }
    out.push(vision.boiTokenId);
    for (let j = 0; j < inputs[k].softTokens; j++) out.push(marker);
    out.push(vision.eoiTokenId);
    k++;
  }
  const context = engine.info.context;
  if (context > 0 && out.length >= context)
    throw new OxError(
      'RANGE',
      `the prompt with its images is ${out.length} tokens (${inputs.map((x) => x.softTokens).join(' + ')} image tokens), more than the context of ${context} leaves room for: lower maxImageTokens or load with a larger maxContext`,
    );
  const before = engine.images.encodes;
  const rows = inputs.map((x) => embedImage(engine, x));
  const encoded = engine.images.encodes - before;
  const embeddings = new Float32Array(rows.reduce((n, r) => n + r.length, 0));
  rows.reduce((o, r) => (embeddings.set(r, o), o + r.length), 0);
  return { tokens: out, soft: { token: marker, embeddings }, encoded, cached: rows.length - encoded };
}
