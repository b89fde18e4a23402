// source.js — what a caller passes as a model file (path, URL, File/Blob, OPFS handle, or an
// object naming one) as a structured-cloneable descriptor: the main thread describes sources,
// the engine worker opens them (hostfile.js).
import { OxError } from '../shared/errors.js';
import { isNode } from '../shared/env.js';

// last part of a path, or of a URL's pathname (percent-decoded)
function baseName(s, isUrl = false) {
  const clean = s.replace(/\/+$/, '');
  const b = clean.slice(Math.max(clean.lastIndexOf('/'), isUrl ? -1 : clean.lastIndexOf('\\')) + 1) || s;
  if (!isUrl) return b;
  try {
    return decodeURIComponent(b);
  } catch {
    return b;
  }
}

// Normalize what a caller passed into a structured-cloneable descriptor
// {kind: 'path'|'url'|'blob'|'opfs', name, path|url|blob|handle}. Strings are URLs when they
// have an http(s) scheme, or always in a browser (resolved against `base`); else Node paths.
const KINDS = ['path', 'url', 'blob', 'opfs', 'cached'];

export function describeSource(src, base) {
  if (src === undefined || src === null)
    throw new OxError(
      'RANGE',
      `no model source given (${src}): pass a path, URL, File/Blob or OPFS file handle, or an array of them`,
    );
  if (src && typeof src === 'object' && KINDS.includes(src.kind)) return src; // already described
  if (typeof src === 'string' || src instanceof URL) {
    const s = String(src);
    if (/^https?:\/\//i.test(s)) return { kind: 'url', url: s, name: baseName(new URL(s).pathname, true) };
    if (/^file:/i.test(s)) {
      const p = decodeURIComponent(new URL(s).pathname);
      return { kind: 'path', path: p, name: baseName(p) };
    }
    if (!isNode) {
      const u = new URL(s, base ?? globalThis.location?.href);
      return { kind: 'url', url: u.href, name: baseName(u.pathname, true) };
    }
    return { kind: 'path', path: s, name: baseName(s) };
  }
  if (typeof Blob !== 'undefined' && src instanceof Blob)
    return { kind: 'blob', blob: src, name: typeof src.name === 'string' && src.name ? src.name : 'blob' };
  if (src && typeof src === 'object') {
    if (src.kind === 'file' && typeof src.getFile === 'function')
      // FileSystemFileHandle
      return { kind: 'opfs', handle: src, name: src.name };
    const named = (d) => (typeof src.name === 'string' && src.name ? { ...d, name: src.name } : d);
    if (typeof src.path === 'string') return named({ kind: 'path', path: src.path, name: baseName(src.path) });
    if (typeof src.url === 'string' || src.url instanceof URL) {
      let u;
      try {
        u = new URL(src.url, base ?? globalThis.location?.href);
      } catch {
        throw new OxError('RANGE', `not a valid URL: ${src.url}`);
      }
      return named({ kind: 'url', url: u.href, name: baseName(u.pathname, true) });
    }
    if (typeof Blob !== 'undefined' && src.blob instanceof Blob) return named(describeSource(src.blob));
    if (src.handle) return named({ kind: 'opfs', handle: src.handle, name: src.handle.name });
  }
  throw new OxError(
    'RANGE',
    `unsupported model source: ${Object.prototype.toString.call(src)} (use a path, URL, File/Blob, OPFS file handle, or {path|url|blob|handle, name})`,
  );
}
