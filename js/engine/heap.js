// heap.js — the engine's view of wasm memory, and the exports of js/shared/abi.js bound by name.
// Everything the worker calls in goes through `heap.C.<export name>`, so the contract is the
// generated list: a build that lacks an export fails at start-up, naming it.
import { codes, exports as EXPORTS } from '../shared/abi.js';
import { OxError } from '../shared/errors.js';

const codeName = Object.fromEntries(Object.entries(codes).map(([k, v]) => [v, k]));

// Module._name wrapped by return kind: addresses unsigned, C strings read (null for NULL)
function bindExports(M) {
  const C = {};
  for (const { name, ret } of EXPORTS) {
    const f = M[`_${name}`];
    if (typeof f !== 'function')
      throw new OxError(
        'MISSING',
        `the wasm engine has no export ${name} (js/shared/abi.js is newer than dist/): rebuild with make -f Makefile.emscripten`,
      );
    if (ret === 'ptr') C[name] = (...a) => f(...a) >>> 0;
    else if (ret === 'cstr')
      C[name] = (...a) => {
        const p = f(...a) >>> 0;
        return p ? M.UTF8ToString(p) : null;
      };
    else C[name] = f;
  }
  return Object.freeze(C);
}

export class Heap {
  constructor(M) {
    this.M = M;
    this.C = bindExports(M);
  }

  // The current memory: a grown shared memory is a new, longer SharedArrayBuffer.
  get buffer() {
    return (this.M.wasmMemory ?? this.M.HEAPU8).buffer;
  }
  u8(p, n) {
    return new Uint8Array(this.buffer, p, n);
  }
  i32(p, n) {
    return new Int32Array(this.buffer, p, n);
  }
  f32(p, n) {
    return new Float32Array(this.buffer, p, n);
  }
  f64(p, n) {
    return new Float64Array(this.buffer, p, n);
  }

  alloc(bytes) {
    const p = this.M._malloc(Math.max(8, bytes)) >>> 0;
    if (!p) throw new OxError('NOMEM', `wasm memory: cannot allocate ${bytes} bytes`);
    return p;
  }
  free(p) {
    if (p) this.M._free(p);
  }
  // fn(p) with `bytes` of scratch memory, freed after
  scoped(bytes, fn) {
    const p = this.alloc(bytes);
    try {
      return fn(p);
    } finally {
      this.free(p);
    }
  }
  withInts(arr, fn) {
    return this.scoped(arr.length * 4, (p) => (this.i32(p, arr.length).set(arr), fn(p)));
  }
  withFloats(arr, fn) {
    return this.scoped(arr.length * 4, (p) => (this.f32(p, arr.length).set(arr), fn(p)));
  }
  // UTF-8 bytes, NUL-terminated: fn(p, byteLength)
  withString(s, fn) {
    const bytes = new TextEncoder().encode(s);
    return this.scoped(bytes.length + 1, (p) => {
      const v = this.u8(p, bytes.length + 1);
      v.set(bytes);
      v[bytes.length] = 0;
      return fn(p, bytes.length);
    });
  }

  // rc < 0 -> the engine's error
  check(rc) {
    if (rc < 0) throw this.lastError();
    return rc;
  }
  // a NULL address -> the engine's error
  checkPtr(p) {
    if (!p) throw this.lastError();
    return p;
  }
  lastError() {
    return new OxError(codeName[this.C.ox_wasm_err_code()] ?? 'STATE', this.C.ox_wasm_err_msg());
  }

  // Calls that fill a caller's buffer return the size they need (> cap: call again bigger).
  // fill(p, cap) -> n; returns a copy of the n elements read by view(p, n)
  grown(fill, view, cap, elemBytes) {
    for (;;) {
      const n = this.scoped(cap * elemBytes, (p) => {
        const k = this.check(fill(p, cap));
        return k <= cap ? view(p, k).slice() : k;
      });
      if (typeof n !== 'number') return n;
      cap = n;
    }
  }
}
