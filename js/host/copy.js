// copy.js — how host bytes reach their destination: at most CHUNK bytes per source read, and
// copies into shared memory (the reader thread's answer block, a threaded build's wasm memory).

// No source ever hands over more than this many bytes at once (larger reads are split).
export const CHUNK = 8 << 20;

// dst.set(src, at) for a dst over shared memory (the answer block; wasm memory of a threaded
// build) and a private src. V8 copies into a SharedArrayBuffer by words where source and
// destination are equally aligned, and byte by byte (several times slower) where not. Network
// chunks land at any offset, so a misaligned copy goes through a private bounce buffer placed
// at the destination's alignment.
const BOUNCE = 1 << 16;
let bounce = null;
export function copyShared(dst, src, at = 0) {
  const shared = typeof SharedArrayBuffer === 'function' && dst.buffer instanceof SharedArrayBuffer;
  if (!shared || src.length < 256 || ((dst.byteOffset + at - src.byteOffset) & 7) === 0) return void dst.set(src, at);
  bounce ??= new Uint8Array(BOUNCE + 8);
  for (let i = 0; i < src.length; i += BOUNCE) {
    const part = src.subarray(i, i + BOUNCE),
      k = (dst.byteOffset + at + i) & 7;
    bounce.set(part, k);
    dst.set(bounce.subarray(k, k + part.length), at + i);
  }
}

// A source with a `direct` field takes reads of up to that many bytes into shared memory (wasm
// memory of a threaded build), since it puts them there with no buffer of its own.
export const overShared = (a) => typeof SharedArrayBuffer === 'function' && a.buffer instanceof SharedArrayBuffer;
