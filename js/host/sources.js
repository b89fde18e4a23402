// sources.js — one adapter per source kind, all with one interface:
// SOURCES[kind](d, ctx, host) -> Promise<{size, read(off, dst), close()}>: read fills dst (at
// most CHUNK bytes, possibly a view of shared wasm memory) from offset off, or throws an
// OxError naming the file; host.bridge() gives the shared helper thread.
import { isNode } from '../shared/env.js';
import { OxError } from '../shared/errors.js';
import { bounded } from './bounded.js';
import { openCacheCopy } from './cache_store.js';
import { CHUNK, copyShared } from './copy.js';
import { checkBodyLength, checkRangeResponse, probeUrl } from './http.js';

const sharedOk = () =>
  typeof SharedArrayBuffer === 'function' &&
  typeof Atomics?.wait === 'function' &&
  (isNode || globalThis.crossOriginIsolated === true);

export const SOURCES = {
  async path(d, ctx, host) {
    const fs = (host.fs ??= await import(/* webpackIgnore: true */ 'node:fs'));
    let fd;
    try {
      fd = fs.openSync(d.path, 'r');
      const st = fs.fstatSync(fd);
      if (!st.isFile()) throw new OxError('IO', `${d.name}: not a regular file`);
      return {
        size: st.size,
        direct: 8 * CHUNK,
        read(off, dst) {
          for (let done = 0; done < dst.length;) {
            let r;
            try {
              r = fs.readSync(fd, dst, done, dst.length - done, off + done);
            } catch (e) {
              throw new OxError('IO', `${d.name}: read failed at offset ${off + done}: ${e.message}`);
            }
            if (r === 0)
              throw new OxError('IO', `${d.name}: unexpected end of file at offset ${off + done} (the file shrank?)`);
            done += r;
          }
        },
        close: () => fs.closeSync(fd),
      };
    } catch (e) {
      if (fd !== undefined) fs.closeSync(fd);
      if (e instanceof OxError) throw e;
      throw new OxError(e.code === 'ENOENT' ? 'MISSING' : 'IO', `${d.path}: cannot open: ${e.message}`);
    }
  },

  async blob(d, ctx, host) {
    const { blob, name } = d;
    if (typeof FileReaderSync !== 'undefined') {
      const reader = new FileReaderSync();
      return {
        size: blob.size,
        read(off, dst) {
          let ab;
          try {
            ab = reader.readAsArrayBuffer(blob.slice(off, off + dst.length));
          } catch (e) {
            throw new OxError('IO', `${name}: read failed at offset ${off}: ${e.message}`);
          }
          checkBodyLength(name, ab.byteLength, dst.length, off);
          copyShared(dst, new Uint8Array(ab));
        },
        close() {},
      };
    }
    if (!isNode) throw new OxError('UNSUPPORTED', `${name}: reading a Blob needs FileReaderSync (a Web Worker)`);
    const bridge = await host.bridge();
    const id = ++host.blobIds;
    bridge.post({ op: 'blob', id, blob });
    return {
      size: blob.size,
      read: (off, dst) => bridge.call({ op: 'read', kind: 'blob', id, name, off, len: dst.length }, dst),
      close: () => bridge.post({ op: 'drop', id }),
    };
  },

  async url(d, ctx, host) {
    const { url, name } = d;
    // the reader thread starts while the size is probed (a thread start is not free)
    const [p, bridge] = await Promise.all([probeUrl(name, url, ctx), sharedOk() ? host.bridge() : null]);
    const want = { size: p.size, validator: p.validator };
    if (bridge) {
      return {
        size: p.size,
        direct: 8 * CHUNK,
        read: (off, dst) => bridge.call({ op: 'read', kind: 'url', url, name, off, len: dst.length, want }, dst),
        close: () => bridge.post({ op: 'drop-url', url }),
      };
    }
    // no shared memory (a page without COOP/COEP): sync XHR, bounded by its timeout
    if (typeof XMLHttpRequest === 'undefined')
      throw new OxError('UNSUPPORTED', `${name}: sync HTTP reads need XMLHttpRequest (a Web Worker)`);
    return {
      size: p.size,
      read(off, dst) {
        const len = dst.length,
          what = `bytes ${off}-${off + len - 1}`;
        const x = new XMLHttpRequest();
        x.open('GET', url, false);
        x.responseType = 'arraybuffer';
        x.timeout = ctx.timeoutMs; // allowed for sync requests in workers
        x.setRequestHeader('Range', `bytes=${off}-${off + len - 1}`);
        try {
          x.send();
        } catch (e) {
          if (e.name === 'TimeoutError') throw new OxError('IO', `${name}: ${what}: no answer in ${ctx.timeoutMs} ms`);
          throw new OxError('IO', `${name}: request for ${what} failed: ${e.message}`);
        }
        checkRangeResponse(name, { status: x.status, header: (h) => x.getResponseHeader(h) }, off, len, want);
        const ab = x.response;
        checkBodyLength(name, ab ? ab.byteLength : 0, len, off);
        copyShared(dst, new Uint8Array(ab));
      },
      close() {},
    };
  },

  async opfs(d, ctx, host) {
    const { handle, name } = d;
    if (typeof handle.createSyncAccessHandle !== 'function')
      throw new OxError('UNSUPPORTED', `${name}: OPFS sync access handles exist only in a dedicated worker`);
    let access;
    try {
      access = await bounded(ctx, name, 'opening the OPFS file', () => handle.createSyncAccessHandle());
      const size = await bounded(ctx, name, 'OPFS getSize', async () => access.getSize());
      return {
        size,
        read(off, dst) {
          // sync access handles refuse views over shared memory: go through a private buffer
          const len = dst.length;
          if (!host.tmp || host.tmp.length < len) host.tmp = new Uint8Array(Math.max(len, 1 << 20));
          const t = host.tmp.subarray(0, len);
          for (let done = 0; done < len;) {
            const r = access.read(t.subarray(done), { at: off + done });
            if (r <= 0) throw new OxError('IO', `${name}: unexpected end of file at offset ${off + done}`);
            done += r;
          }
          copyShared(dst, t);
        },
        close: () => access.close(),
      };
    } catch (e) {
      access?.close();
      if (e instanceof OxError) throw e;
      throw new OxError('IO', `${name}: cannot open OPFS file: ${e.message}`);
    }
  },
};

// A file still downloading into the model cache (js/main/cache.js): the bytes written so far are
// read from the local copy (a 'path' or 'opfs' source), the rest from the URL.
SOURCES.cached = async (d, ctx, host) => {
  const copy = await openCacheCopy(d); // null: deleted meanwhile
  const remote = await SOURCES.url({ ...d, kind: 'url' }, ctx, host);
  let local = null;
  try {
    if (remote.size !== d.size)
      throw new OxError(
        'IO',
        `${d.name}: the file changed on the server since its download started (size ${d.size} -> ${remote.size})`,
      );
    // the copy may be deleted between the two steps (a failed sha256 check): then all is remote
    local =
      copy &&
      (await SOURCES[copy.source.kind](copy.source, ctx, host).catch((e) => {
        if (e?.code === 'MISSING') return null;
        throw e;
      }));
  } catch (e) {
    remote.close();
    throw e;
  }
  let whole = false;
  const has = (end) => !!local && (whole || (whole = copy.length() >= d.size) || end <= copy.length());
  // the local copy is a shortcut: if it goes away under a read (a failed sha256 check empties
  // and deletes it), the URL has the same bytes
  const readLocal = (off, dst) => {
    try {
      return local.read(off, dst);
    } catch (e) {
      if (!(e instanceof OxError)) throw e;
      local.close();
      local = null;
      return remote.read(off, dst);
    }
  };
  return {
    size: d.size,
    read: (off, dst) => (has(off + dst.length) ? readLocal(off, dst) : remote.read(off, dst)),
    close() {
      local?.close();
      remote.close();
    },
  };
};
