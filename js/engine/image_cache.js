// image_cache.js — the vision tower's rows of the images the model saw lately, so that a later
// turn of a chat showing the same image again does not run the tower again (docs/images.md
// "Images across turns"). An entry is keyed by the image as the tower takes it: its size after
// the processor's resize and a hash of its 8-bit RGB pixels at that size. The rows depend on the
// tower's weights alone (LoRA adapters patch the decoder only), so an entry holds until the
// model is unloaded or the chat reset. Bounded in bytes: the least recently used entries go
// first, and rows larger than the bound are not kept.

export const IMAGE_CACHE_BYTES = 64 << 20;

const C1 = 0xcc9e2d51;
const C2 = 0x1b873593;
const rotl = (x, r) => (x << r) | (x >>> (32 - r));
// murmur3's finalizer: every input bit reaches every output bit
function fmix(h) {
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/** A 64-bit hash of bytes, as 16 hex digits: two 32-bit lanes over the little-endian 32-bit
 *  words (murmur3's round and one of FNV-1a's form with another rotation), each finalized with
 *  the length. Not a cryptographic hash: it tells apart images, not adversaries' collisions. */
export function contentHash(bytes) {
  let a = 0x9747b28c,
    b = 0x811c9dc5;
  const n = bytes.length;
  for (let i = 0; i < n; i += 4) {
    const w = bytes[i] | (bytes[i + 1] << 8) | (bytes[i + 2] << 16) | (bytes[i + 3] << 24); // (past the end: 0)
    a = Math.imul(rotl(a ^ Math.imul(rotl(Math.imul(w, C1), 15), C2), 13), 5) + 0xe6546b64;
    b = rotl(Math.imul(b ^ w, 0x01000193), 7);
  }
  const hex = (h) =>
    fmix(h ^ n)
      .toString(16)
      .padStart(8, '0');
  return hex(a) + hex(b);
}

export class ImageCache {
  constructor(maxBytes = IMAGE_CACHE_BYTES) {
    this.maxBytes = maxBytes;
    this.entries = new Map(); // key -> Float32Array, least recently used first
    this.bytes = 0;
    this.hits = 0; // images answered from here
    this.encodes = 0; // images the tower ran for
  }

  /** The key of a preprocessed image {height, width, rgb} (js/engine/vision.js preprocess). */
  static keyOf(x) {
    return `${x.height}x${x.width}:${contentHash(x.rgb)}`;
  }

  /** The rows of key: the cached ones, or encode()'s (then kept). */
  rows(key, encode) {
    const hit = this.entries.get(key);
    if (hit) {
      this.entries.delete(key); // to the most recent end
      this.entries.set(key, hit);
      this.hits++;
      return hit;
    }
    const rows = encode();
    this.encodes++;
    if (rows.byteLength <= this.maxBytes) {
      this.entries.set(key, rows);
      this.bytes += rows.byteLength;
      for (const [k, r] of this.entries) {
        if (this.bytes <= this.maxBytes) break;
        this.entries.delete(k);
        this.bytes -= r.byteLength;
      }
    }
    return rows;
  }

  /** Forget every entry (the counts stay). */
  clear() {
    this.entries.clear();
    this.bytes = 0;
  }

  /** {entries, bytes, maxBytes, hits, encodes} */
  get stats() {
    const { maxBytes, bytes, hits, encodes } = this;
    return { entries: this.entries.size, bytes, maxBytes, hits, encodes };
  }
}
