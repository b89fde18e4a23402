// assets.js — where the engine's files are: the Emscripten glue (a classic script, and the same
// as an ES module for the browser's engine worker), its wasm and (threaded build) its pthread
// worker script. By default dist/ beside js/, written as `new URL('../../dist/...',
// import.meta.url)` so that bundlers (Vite, webpack 5, ...) emit the files and rewrite the
// URLs. An app that serves dist/ elsewhere says where: loadModel(src, {assetBase}) (a URL of
// the folder) or {locateFile: (name) => url}.
import { OxError } from '../shared/errors.js';

const DIST = {
  mt: {
    glue: new URL('../../dist/oxinfer-mt.js', import.meta.url),
    module: new URL('../../dist/oxinfer-mt.mjs', import.meta.url),
    wasm: new URL('../../dist/oxinfer-mt.wasm', import.meta.url),
    worker: new URL('../../dist/oxinfer-mt.worker.js', import.meta.url),
  },
  st: {
    glue: new URL('../../dist/oxinfer-st.js', import.meta.url),
    module: new URL('../../dist/oxinfer-st.mjs', import.meta.url),
    wasm: new URL('../../dist/oxinfer-st.wasm', import.meta.url),
  },
  // the same with the K-quant tiles on relaxed SIMD's dot product (docs/kernels.md)
  'mt-relaxed': {
    glue: new URL('../../dist/oxinfer-mt-relaxed.js', import.meta.url),
    module: new URL('../../dist/oxinfer-mt-relaxed.mjs', import.meta.url),
    wasm: new URL('../../dist/oxinfer-mt-relaxed.wasm', import.meta.url),
    worker: new URL('../../dist/oxinfer-mt-relaxed.worker.js', import.meta.url),
  },
  'st-relaxed': {
    glue: new URL('../../dist/oxinfer-st-relaxed.js', import.meta.url),
    module: new URL('../../dist/oxinfer-st-relaxed.mjs', import.meta.url),
    wasm: new URL('../../dist/oxinfer-st-relaxed.wasm', import.meta.url),
  },
};

const FILE = {
  glue: (b) => `oxinfer-${b}.js`,
  module: (b) => `oxinfer-${b}.mjs`,
  wasm: (b) => `oxinfer-${b}.wasm`,
  worker: (b) => `oxinfer-${b}.worker.js`,
};

// -> {glue, module, wasm, worker?} as absolute URL strings (relative ones resolve against the page);
// build: 'mt' | 'st', or either with '-relaxed'
export function engineAssets(build, { assetBase, locateFile } = {}) {
  const page = globalThis.location?.href;
  const url = (u, what) => {
    try {
      return new URL(u, page);
    } catch {
      throw new OxError('RANGE', `${what} gave ${JSON.stringify(String(u))}, which is not a URL`);
    }
  };
  const base = assetBase != null ? url(String(assetBase).replace(/\/?$/, '/'), 'assetBase') : null;
  const out = {};
  for (const [kind, dflt] of Object.entries(DIST[build])) {
    const name = FILE[kind](build);
    const u = locateFile?.(name) ?? (base ? new URL(name, base) : dflt);
    out[kind] = url(u, locateFile ? `locateFile(${JSON.stringify(name)})` : 'assetBase').href;
  }
  return out;
}
