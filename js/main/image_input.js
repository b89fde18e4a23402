// image_input.js — the images of a request, on the caller's thread: each image a caller may give
// becomes something the engine worker can receive and decode (js/engine/image_decode.js), and
// chat messages give up their image parts for `<|image|>` markers the template renders.
//
// Accepted images: a Blob / File, an ImageBitmap, ImageData (or {width, height, data} RGBA), an
// HTMLImageElement / HTMLCanvasElement / OffscreenCanvas / VideoFrame (copied with
// createImageBitmap), the bytes of a PNG / JPEG file (ArrayBuffer, Uint8Array, Buffer), or a
// string / URL: a data: URL, an http(s): or blob: URL the page can fetch, and in Node a file
// path or file: URL. Chat content parts: {type: 'image', image} and OpenAI's
// {type: 'image_url', image_url: {url} | url}.
import { OxError } from '../shared/errors.js';
import { isNode } from '../shared/env.js';

const bad = (where, what) => new OxError('RANGE', `${where}: ${what}`);

// data:[<mediatype>][;base64],<data> -> bytes
function dataUrlBytes(url, where) {
  const comma = url.indexOf(',');
  if (comma < 0) throw bad(where, 'a data: URL without a comma');
  const meta = url.slice(5, comma);
  const body = url.slice(comma + 1);
  try {
    if (/;base64$/i.test(meta)) {
      const bin = atob(decodeURIComponent(body).replace(/\s+/g, ''));
      return Uint8Array.from(bin, (c) => c.charCodeAt(0));
    }
    return new TextEncoder().encode(decodeURIComponent(body));
  } catch (e) {
    throw new OxError('FORMAT', `${where}: the data: URL cannot be decoded (${e.message})`);
  }
}

async function fetchBytes(url, where) {
  let r;
  try {
    r = await fetch(url);
  } catch (e) {
    throw new OxError('IO', `${where}: cannot fetch ${url} (${e.message})`);
  }
  if (!r.ok) throw new OxError('IO', `${where}: ${url} answered HTTP ${r.status}`);
  return new Uint8Array(await r.arrayBuffer());
}

async function stringBytes(s, where) {
  if (/^data:/i.test(s)) return dataUrlBytes(s, where);
  if (/^(https?|blob):/i.test(s)) return fetchBytes(s, where);
  if (isNode) {
    const [{ readFile }, { fileURLToPath }] = await Promise.all([
      import(/* webpackIgnore: true */ 'node:fs/promises'),
      import(/* webpackIgnore: true */ 'node:url'),
    ]);
    const path = /^file:/i.test(s) ? fileURLToPath(s) : s;
    try {
      return new Uint8Array(await readFile(path));
    } catch (e) {
      throw new OxError('IO', `${where}: cannot read ${path} (${e.code ?? e.message})`);
    }
  }
  return fetchBytes(new URL(s, globalThis.location?.href).href, where);
}

const is = (x, name) => typeof globalThis[name] === 'function' && x instanceof globalThis[name];

/**
 * One image -> what the engine worker decodes (a structured-cloneable value).
 * @param {any} x  @param {string} where names the image in errors
 */
export async function imageInput(x, where = 'image') {
  if (typeof x === 'string') return { bytes: await stringBytes(x, where) };
  if (x instanceof URL) return { bytes: await stringBytes(x.href, where) };
  if (x instanceof ArrayBuffer) return { bytes: new Uint8Array(x.slice(0)) };
  if (x instanceof Uint8Array) return { bytes: new Uint8Array(x) }; // a copy (a Buffer's slice is a view)
  if (is(x, 'Blob')) return isNode ? { bytes: new Uint8Array(await x.arrayBuffer()) } : x;
  if (is(x, 'ImageBitmap')) return createImageBitmap(x); // a copy: the caller keeps theirs
  if (x && ArrayBuffer.isView(x.data) && Number.isInteger(x.width) && Number.isInteger(x.height))
    return {
      width: x.width,
      height: x.height,
      data: new Uint8Array(x.data.buffer, x.data.byteOffset, x.data.byteLength).slice(),
    };
  for (const kind of ['HTMLImageElement', 'HTMLCanvasElement', 'OffscreenCanvas', 'SVGImageElement', 'VideoFrame'])
    if (is(x, kind)) {
      if (kind === 'HTMLImageElement' && !x.complete) await x.decode().catch(() => {});
      try {
        // as the worker decodes files: no colour-space conversion (Pillow ignores ICC profiles
        // too), no premultiplied alpha
        return await createImageBitmap(x, { premultiplyAlpha: 'none', colorSpaceConversion: 'none' });
      } catch (e) {
        throw new OxError('FORMAT', `${where}: the ${kind} cannot be read (${e?.message ?? e})`);
      }
    }
  throw bad(
    where,
    'an image must be a Blob/File, ImageBitmap, ImageData, image element, canvas, the bytes of a PNG/JPEG, or a URL (data:, http(s):, blob:) or file path',
  );
}

/** The image of a content part, or undefined for a part that is not an image. */
export function imageOfPart(p, where) {
  if (p?.type === 'image') {
    // (Hugging Face's apply_chat_template also takes url and path)
    const image = p.image ?? p.url ?? p.path;
    if (image === undefined) throw bad(where, "an image part needs {type: 'image', image}");
    return image;
  }
  if (p?.type === 'image_url') {
    const u = p.image_url;
    const url = typeof u === 'string' || u instanceof URL ? u : u?.url;
    if (url === undefined) throw bad(where, "an image_url part needs {type: 'image_url', image_url: {url}}");
    return url;
  }
  return undefined;
}

const hasImages = (messages) =>
  Array.isArray(messages) &&
  messages.some(
    (m) => Array.isArray(m?.content) && m.content.some((p) => p?.type === 'image' || p?.type === 'image_url'),
  );

/**
 * Messages -> {messages with each image part as a bare {type: 'image'} (what the template
 * renders as `<|image|>`), images: their images in order, where: the part each came from};
 * without image parts, the messages as they are and no images. read: false gives the images as
 * the parts hold them, unread.
 */
export async function splitImages(messages, { read = true } = {}) {
  if (!hasImages(messages)) return { messages, images: [], where: [] };
  const images = [];
  const at = [];
  const out = messages.map((m, i) => {
    if (!Array.isArray(m?.content)) return m;
    return {
      ...m,
      content: m.content.map((p, k) => {
        const where = `message ${i}: content part ${k}`;
        const image = imageOfPart(p, where);
        if (image === undefined) return p;
        images.push(read ? imageInput(image, where) : image);
        at.push(where);
        return { type: 'image' };
      }),
    };
  });
  return { messages: out, images: await Promise.all(images), where: at };
}
