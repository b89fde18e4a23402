// image_decode.js — an image as the main thread sends it (js/main/image_input.js) -> its 8-bit
// RGB pixels {width, height, rgb} (HWC). Alpha is dropped, as Pillow's convert('RGB') does (no
// compositing over a background). Kinds:
//   {bytes: Uint8Array}               an encoded file: in Node PNG (pngjs) or JPEG (jpeg-js),
//                                     in a browser whatever createImageBitmap decodes
//   Blob                              (browsers) decoded by createImageBitmap
//   ImageBitmap                       (browsers) drawn on an OffscreenCanvas
//   {width, height, data}             RGBA pixels (ImageData's layout)
// A browser decodes with colour-space conversion and premultiplication off, so that the
// pixels are the file's.
import { OxError } from '../shared/errors.js';
import { isNode } from '../shared/env.js';

/** The most pixels an image may have (Pillow's decompression-bomb limit, 2^32 / 4 / 3). */
export const MAX_PIXELS = 89_478_485;

const tooLarge = (w, h) =>
  new OxError('RANGE', `image: ${w}x${h} pixels is more than ${MAX_PIXELS} (a decompression bomb?)`);

function checkSize(w, h) {
  if (!(w > 0 && h > 0)) throw new OxError('RANGE', `image: ${w}x${h} pixels (an image needs at least one pixel)`);
  if (w * h > MAX_PIXELS) throw tooLarge(w, h);
}

// RGBA (or another count of channels) -> RGB
function rgbOf(data, w, h, channels = 4) {
  const rgb = new Uint8Array(w * h * 3);
  for (let i = 0, o = 0; o < rgb.length; i += channels, o += 3) {
    rgb[o] = data[i];
    rgb[o + 1] = data[i + 1];
    rgb[o + 2] = data[i + 2];
  }
  return { width: w, height: h, rgb };
}

const isPng = (b) => b.length >= 8 && b[0] === 0x89 && b[1] === 0x50 && b[2] === 0x4e && b[3] === 0x47;
const isJpeg = (b) => b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff;
const hex = (b) => Array.from(b.subarray(0, 8), (x) => x.toString(16).padStart(2, '0')).join(' ');

// the default export of a CommonJS package (pngjs, jpeg-js) imported from ESM
async function nodePackage(name) {
  try {
    const m = await import(/* webpackIgnore: true */ /* @vite-ignore */ name);
    return m.default ?? m;
  } catch (e) {
    throw new OxError('MISSING', `image: decoding in Node needs the package ${name} (${e.message})`);
  }
}

async function decodeNode(bytes) {
  if (isPng(bytes)) {
    // the header's size first: pngjs would allocate whatever it says
    if (bytes.length >= 24) {
      const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      const w = v.getUint32(16),
        h = v.getUint32(20);
      if (w * h > MAX_PIXELS) throw tooLarge(w, h);
    }
    const { PNG } = await nodePackage('pngjs');
    let png;
    try {
      png = PNG.sync.read(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
    } catch (e) {
      throw new OxError('FORMAT', `image: the PNG cannot be decoded (${e.message})`);
    }
    checkSize(png.width, png.height);
    return rgbOf(png.data, png.width, png.height);
  }
  if (isJpeg(bytes)) {
    const jpeg = await nodePackage('jpeg-js');
    let img;
    try {
      img = jpeg.decode(bytes, {
        useTArray: true,
        formatAsRGBA: false,
        maxResolutionInMP: MAX_PIXELS / 1e6,
        maxMemoryUsageInMB: 2048,
      });
    } catch (e) {
      if (/maxResolutionInMP/.test(e.message)) throw new OxError('RANGE', `image: ${e.message}`);
      throw new OxError('FORMAT', `image: the JPEG cannot be decoded (${e.message})`);
    }
    checkSize(img.width, img.height);
    return rgbOf(img.data, img.width, img.height, 3);
  }
  throw new OxError(
    'FORMAT',
    `image: not a PNG or JPEG file (${bytes.length} bytes, starting ${hex(bytes) || 'with nothing'}); in Node images are decoded with pngjs and jpeg-js`,
  );
}

// a browser's decoder: a Blob or an ImageBitmap -> RGBA through an OffscreenCanvas
async function decodeBrowser(src) {
  let bitmap = src;
  if (!(typeof ImageBitmap === 'function' && src instanceof ImageBitmap)) {
    try {
      bitmap = await createImageBitmap(src, { premultiplyAlpha: 'none', colorSpaceConversion: 'none' });
    } catch (e) {
      throw new OxError(
        'FORMAT',
        `image: the ${src.type || 'file'} of ${src.size} bytes cannot be decoded (${e?.message ?? e})`,
      );
    }
  }
  const { width: w, height: h } = bitmap;
  checkSize(w, h);
  const ctx = new OffscreenCanvas(w, h).getContext('2d');
  if (!ctx) throw new OxError('UNSUPPORTED', 'image: no 2D OffscreenCanvas context in this browser');
  ctx.drawImage(bitmap, 0, 0);
  bitmap.close?.();
  return rgbOf(ctx.getImageData(0, 0, w, h).data, w, h);
}

/**
 * @param {any} src an image as js/main/image_input.js sends it
 * @returns {Promise<{width: number, height: number, rgb: Uint8Array}>}
 */
export async function decodeImage(src) {
  if (src && ArrayBuffer.isView(src.data) && Number.isInteger(src.width) && Number.isInteger(src.height)) {
    checkSize(src.width, src.height);
    if (src.data.length !== src.width * src.height * 4)
      throw new OxError(
        'RANGE',
        `image: ${src.data.length} bytes of pixels for ${src.width}x${src.height} RGBA (${src.width * src.height * 4})`,
      );
    return rgbOf(src.data, src.width, src.height);
  }
  if (src?.bytes instanceof Uint8Array) {
    if (!src.bytes.length) throw new OxError('FORMAT', 'image: the file is empty');
    if (isNode) return decodeNode(src.bytes);
    return decodeBrowser(new Blob([src.bytes]));
  }
  if (!isNode && (src instanceof Blob || (typeof ImageBitmap === 'function' && src instanceof ImageBitmap))) {
    if (src instanceof Blob && !src.size) throw new OxError('FORMAT', 'image: the file is empty');
    return decodeBrowser(src);
  }
  throw new OxError('RANGE', 'image: not an image this engine can decode');
}
