// runtime.js — starts the Emscripten build (dist/) inside the engine worker.
//
// The glue is Emscripten 3.1.6's classic MODULARIZE script (factory OxinferMT / OxinferST);
// its -sEXPORT_ES6 form needs `require` and `__dirname` in Node and cannot run from an ES
// module there, so the build stays classic and this module loads it:
//   Node     createRequire(glue) (dist/package.json marks dist/ as CommonJS).
//   browser  a module worker has no importScripts(): the glue's text is fetched and run as a
//            function body. Its parameter `importScripts` makes the glue's environment check
//            see a worker (else it takes the thread for the page's main thread, where a
//            futex wait spins instead of blocking). Pthread workers stay classic scripts:
//            they get the glue as a Blob (mainScriptUrlOrBlob) and start from a Blob URL of
//            dist/oxinfer-mt.worker.js, so dist/ may live on another origin (assetBase) or
//            be inlined by a bundler; a Worker URL itself must be same-origin.
// A strict Content-Security-Policy must allow 'unsafe-eval' (the glue's function body) and
// blob: workers besides 'wasm-unsafe-eval'.
import { isNode } from '../shared/env.js';
import { OxError } from '../shared/errors.js';

const EXPORT_NAME = { mt: 'OxinferMT', st: 'OxinferST' };

const missing = (what, why) => new OxError('MISSING', `${what}: cannot load the engine (${why}); build it with make -f Makefile.emscripten, or tell loadModel where dist/ is (assetBase, locateFile)`);

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

function noImportScripts() {
  throw new Error('importScripts() is not available in a module worker');
}

// assets: {glue, wasm, worker (mt only)} as absolute URLs; cfg: Module settings
async function browserFactory(build, assets, cfg) {
  const [glue, pthread] = await Promise.all([fetchText(assets.glue), assets.worker ? fetchText(assets.worker) : null]);
  const factory = new Function('importScripts', `${glue}\n;return ${EXPORT_NAME[build]};\n//# sourceURL=${assets.glue}`)(noImportScripts);
  cfg.mainScriptUrlOrBlob = new Blob([glue], { type: 'text/javascript' });
  const pthreadUrl = pthread && URL.createObjectURL(new Blob([pthread], { type: 'text/javascript' }));
  cfg.locateFile = (p) => (p.endsWith('.wasm') ? assets.wasm : p.endsWith('.worker.js') ? pthreadUrl : new URL(p, assets.glue).href);
  return factory;
}

async function nodeFactory(assets, cfg) {
  const [{ createRequire }, { fileURLToPath }, fs] = await Promise.all([import(/* webpackIgnore: true */ 'node:module'), import(/* webpackIgnore: true */ 'node:url'), import(/* webpackIgnore: true */ 'node:fs')]);
  // a file URL -> its path, which must exist
  const file = (u, what) => {
    if (!String(u).startsWith('file:')) throw new OxError('UNSUPPORTED', `${u}: in Node the engine's ${what} must be a file`);
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
  if (cap > 0 && build === 'mt') cfg.wasmMemory = new WebAssembly.Memory({ initial: 1024, maximum: Math.ceil(cap / 65536), shared: true });
  const factory = isNode ? await nodeFactory(assets, cfg) : await browserFactory(build, assets, cfg);
  return factory(cfg);
}
