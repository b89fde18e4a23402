// runtime.js — starts the Emscripten build (dist/) inside the engine worker.
//
// The glue is Emscripten 3.1.6's classic MODULARIZE script (factory OxinferMT / OxinferST);
// its -sEXPORT_ES6 form needs `require` and `__dirname` in Node and cannot run from an ES
// module there, so the build stays classic and this module loads it:
//   Node     createRequire(glue) (dist/package.json marks dist/ as CommonJS).
//   browser  a module worker has no importScripts(): it imports dist/oxinfer-*.mjs, the same
//            glue wrapped as an ES module by the build (no eval: a page's script-src, and its
//            allowlist for a cross-origin assetBase, apply). Pthread workers stay classic
//            scripts that importScripts() the glue: with dist/ on this origin they start from
//            its URLs; with dist/ elsewhere (a Worker URL must be same-origin) from Blob URLs
//            of dist/oxinfer-mt.worker.js and the glue's text.
// The Content-Security-Policy a page needs: docs/deploy.md ('wasm-unsafe-eval'; blob: workers
// only for a cross-origin dist/ with the threaded build).
import { isNode } from '../shared/env.js';
import { OxError } from '../shared/errors.js';

const EXPORT_NAME = { mt: 'OxinferMT', st: 'OxinferST' };

const missing = (what, why) =>
  new OxError(
    'MISSING',
    `${what}: cannot load the engine (${why}); build it with make -f Makefile.emscripten, or tell loadModel where dist/ is (assetBase, locateFile)`,
  );

async function fetchText(url) {
  let r;
  try {
    r = await fetch(url);
  } catch (e) {
    throw missing(url, e.message);
  }
  if (!r.ok) throw missing(url, `HTTP ${r.status}`);
  return r.text();
}

// assets: {glue, module, wasm, worker (mt only)} as absolute URLs; cfg: Module settings
async function browserFactory(assets, cfg) {
  let factory;
  try {
    factory = (await import(/* @vite-ignore */ /* webpackIgnore: true */ assets.module)).default;
  } catch (e) {
    throw missing(assets.module, e.message);
  }
  let pthreadUrl = assets.worker;
  if (assets.worker && new URL(assets.worker).origin !== self.location.origin) {
    const [glue, pthread] = await Promise.all([fetchText(assets.glue), fetchText(assets.worker)]);
    cfg.mainScriptUrlOrBlob = new Blob([glue], { type: 'text/javascript' });
    pthreadUrl = URL.createObjectURL(new Blob([pthread], { type: 'text/javascript' }));
  } else if (assets.worker) cfg.mainScriptUrlOrBlob = assets.glue;
  cfg.locateFile = (p) =>
    p.endsWith('.wasm') ? assets.wasm : p.endsWith('.worker.js') ? pthreadUrl : new URL(p, assets.glue).href;
  return factory;
}

async function nodeFactory(assets, cfg) {
  const [{ createRequire }, { fileURLToPath }, fs] = await Promise.all([
    import(/* webpackIgnore: true */ 'node:module'),
    import(/* webpackIgnore: true */ 'node:url'),
    import(/* webpackIgnore: true */ 'node:fs'),
  ]);
  // a file URL -> its path, which must exist
  const file = (u, what) => {
    if (!String(u).startsWith('file:'))
      throw new OxError('UNSUPPORTED', `${u}: in Node the engine's ${what} must be a file`);
    const p = fileURLToPath(u);
    if (!fs.existsSync(p)) throw missing(p, 'no such file');
    return p;
  };
  const glue = file(assets.glue, 'glue');
  cfg.wasmBinary = fs.readFileSync(file(assets.wasm, 'wasm'));
  if (assets.worker) {
    const w = file(assets.worker, 'pthread worker');
    cfg.locateFile = (p, dir) => (p.endsWith('.worker.js') ? w : dir + p);
  }
  return createRequire(glue)(glue);
}

// -> the Emscripten module instance. poolSize: pthreads started with it (the mt build).
export async function startRuntime({ build, assets, poolSize, onAbort }) {
  if (!EXPORT_NAME[build]) throw new OxError('RANGE', `unknown build ${build}`);
  const cfg = { oxPoolSize: poolSize, print: (s) => console.log(s), printErr: (s) => console.error(s), onAbort };
  // tests (Node): OX_TEST_MAX_MEMORY caps the threaded build's wasm memory, so that growth is
  // refused in the middle of a generation
  const cap = isNode ? Number(process.env.OX_TEST_MAX_MEMORY ?? 0) : 0;
  if (cap > 0 && build === 'mt')
    cfg.wasmMemory = new WebAssembly.Memory({ initial: 1024, maximum: Math.ceil(cap / 65536), shared: true });
  const factory = isNode ? await nodeFactory(assets, cfg) : await browserFactory(assets, cfg);
  return factory(cfg);
}
