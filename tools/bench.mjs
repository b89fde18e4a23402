#!/usr/bin/env node
// bench.mjs — `npm run bench`: our engine against wllama (llama.cpp in wasm) in the same headless
// Chromium, our wasm in Node, our native CLI and native llama.cpp (llama-bench) as the ceiling,
// on the files people run: llama.cpp's own Q4_K_M recipe (llama-quantize from an F16 file of
// our generator) and plain Q8_0 / Q4_0. Decode is also given as weight bytes read per second
// against the wasm read-bandwidth ceiling (src/wasm/probe.c) at the same thread count.
// Prints the tables and writes them to docs/benchmarks.md.
//
//   npm run bench                   full run: bench preset (E2B shapes, 10 layers, vocab 8192)
//                                   Q4_K_M, Q8_0, Q4_0 x 3 reps, then the real E2B geometry
//                                   Q4_K_M, Q4_0 x 1 rep, and the E2B load from a URL
//   npm run bench -- --quick        bench preset only, 1 rep (docs/ untouched unless --write)
//   npm run bench -- --e2b          the E2B part only
//   options: --presets bench,e2b    --types q4_k_m,q8_0,q4_0 (all presets; q4_k+q6_k = our own
//            synth K-quant mix; q4_k_m, q5_k_m, iq4_xs, llama:q6_k, ... = llama-quantize recipes)
//            --threads 2  --reps N  --warmup 1  --n-prompt 64  --n-gen 64
//            --engines web,wllama,node,gpu,native,llama   --probe-mb 512
//            --gpu-fallback (the gpu engine may take a software adapter: lavapipe, SwiftShader)
//            --dir DIR (models; default $OX_BENCH_DIR or ~/.cache/oxinfer-bench)  --regen
//            --source blob|url (how our page reads the file; default blob, e2b url)
//            --write / --no-write (the doc)  --doc FILE (default docs/benchmarks.md)  --json FILE
//            --chromium PATH  --verbose
//
// Models are made by our generator (`oxinfer synth`, build/oxinfer or $OX_CLI) and, for the
// llama.cpp recipes, llama-quantize (tools/llamacpp.sh builds it from the npm package
// node-llama-cpp), cached outside the repo. Per model file and thread count every engine is
// loaded once, runs one short warm-up, then the reps interleave the engines (order rotated
// each rep), each rep a new prompt (BOS + ids of the <unusedN> block, the same for every
// engine) prefilled whole, then n-gen greedy tokens with end-of-sequence ignored. Rates are
// each engine's own timers: ours GenerationStats, wllama llama.cpp's timings, native
// `oxinfer run --bench`, llama-bench's pp/tg averages (random tokens, one run per rep).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn, spawnSync, execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { startServer } from './serve.mjs';
import {
  summary,
  prompt,
  modelMeta,
  weightsPerToken,
  procStatus,
  rendererPids,
  availableBytes,
  freeBytes,
  fmtMB,
  fmtS,
  markdownTable,
  writeAtomic,
  llamaBin,
} from './bench/lib.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(path.join(ROOT, 'package.json'));
const log = (...a) => console.log(...a);
// gpu: our engine on the WebGPU backend in Node (the `webgpu` package), decode GB/s against the
// GPU's read bandwidth (js/gpu/probe.js)
const ENGINES = ['web', 'wllama', 'node', 'gpu', 'native', 'llama'];

// ---- options ----

// what each preset runs unless told otherwise
const SUITE = {
  bench: { types: 'q4_k_m,q8_0,q4_0', reps: 3, source: 'blob' },
  e2b: { types: 'q4_k_m,q4_0', reps: 1, source: 'url' },
  tiny: { types: 'q8_0', reps: 3, source: 'blob' },
  benchlike: { types: 'q8_0', reps: 3, source: 'blob' },
};

function parseArgs(argv) {
  const a = {
    quick: false,
    e2b: false,
    presets: null,
    types: null,
    threads: '2',
    reps: null,
    warmup: 1,
    n_prompt: 64,
    n_gen: 64,
    engines: ENGINES.join(','),
    probe_mb: 512,
    dir: process.env.OX_BENCH_DIR || path.join(os.homedir(), '.cache', 'oxinfer-bench'),
    regen: false,
    write: null,
    source: null,
    doc: path.join(ROOT, 'docs', 'benchmarks.md'),
    json: null,
    chromium: process.env.CHROMIUM || '/usr/bin/chromium',
    verbose: false,
    gpu_fallback: false,
    timeout_s: 1800,
  };
  const flags = new Set(['quick', 'e2b', 'regen', 'verbose', 'gpu_fallback']);
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '-h' || arg === '--help') {
      const src = fs.readFileSync(fileURLToPath(import.meta.url), 'utf8').split('\n');
      console.log(
        src
          .slice(
            1,
            src.findIndex((l, i) => i > 0 && !l.startsWith('//')),
          )
          .map((l) => l.replace(/^\/\/ ?/, ''))
          .join('\n'),
      );
      process.exit(0);
    }
    if (arg === '--write' || arg === '--no-write') {
      a.write = arg === '--write';
      continue;
    }
    const k = arg.replace(/^--/, '').replace(/-/g, '_');
    if (!arg.startsWith('--') || !(k in a)) throw new Error(`bench: unknown option ${arg} (--help lists them)`);
    if (flags.has(k)) {
      a[k] = true;
      continue;
    }
    const v = argv[++i];
    if (v === undefined) throw new Error(`bench: ${arg} needs a value`);
    a[k] = ['reps', 'warmup', 'n_prompt', 'n_gen', 'timeout_s', 'probe_mb'].includes(k) ? Number(v) : v;
  }
  a.presets = (a.presets ?? (a.e2b ? 'e2b' : a.quick ? 'bench' : 'bench,e2b'))
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean);
  for (const p of a.presets)
    if (!SUITE[p]) throw new Error(`bench: unknown preset ${p} (${Object.keys(SUITE).join(', ')})`);
  a.suites = a.presets.map((preset) => ({
    preset,
    reps: a.reps ?? (a.quick ? 1 : SUITE[preset].reps),
    source: a.source ?? SUITE[preset].source,
    types: (a.types ?? SUITE[preset].types)
      .split(',')
      .map((t) => t.trim())
      .filter(Boolean)
      .map(parseType),
  }));
  a.threads = String(a.threads).split(',').map(Number);
  a.engines = new Set(a.engines.split(',').map((e) => e.trim()));
  for (const e of a.engines)
    if (!ENGINES.includes(e)) throw new Error(`bench: unknown engine ${e} (${ENGINES.join(', ')})`);
  for (const t of a.threads)
    if (!Number.isInteger(t) || t < 1 || t > 64) throw new Error(`bench: bad thread count ${t}`);
  for (const k of ['n_prompt', 'n_gen', 'probe_mb'])
    if (!Number.isInteger(a[k]) || a[k] < 1)
      throw new Error(`bench: --${k.replace('_', '-')} must be a positive integer`);
  for (const s of a.suites)
    if (!Number.isInteger(s.reps) || s.reps < 1) throw new Error('bench: --reps must be a positive integer');
  if (!Number.isInteger(a.warmup) || a.warmup < 0) throw new Error('bench: --warmup must be 0 or more');
  for (const s of a.suites)
    if (!['blob', 'url'].includes(s.source)) throw new Error('bench: --source must be blob or url');
  a.write ??= !a.quick;
  return a;
}

// "q4_k+q6_k" -> our generator: 2-D weights Q4_K, token and per-layer embedding tables Q6_K;
// "q4_k_m", "iq4_xs", "llama:q6_k" -> llama-quantize's recipe of that name, from an F16 file
function parseType(t) {
  const s = t.toLowerCase();
  const recipe = /^llama:(\w+)$/.exec(s)?.[1] ?? (/^(q[2-6]_k_[sml]|iq\w+|tq\w+)$/.test(s) ? s : null);
  if (recipe) return { key: recipe, recipe: recipe.toUpperCase(), label: recipe.toUpperCase() };
  const [w, e] = s.split('+');
  return {
    key: s.replace('+', '-'),
    type: w,
    embd: e ?? null,
    label: e ? `${w.toUpperCase()} (emb ${e.toUpperCase()})` : w.toUpperCase(),
  };
}

// ---- the things under test ----

function run(cmd, args, opts = {}) {
  log(`$ ${[cmd, ...args].join(' ')}`);
  const r = spawnSync(cmd, args, { stdio: 'inherit', cwd: ROOT, ...opts });
  if (r.status !== 0) throw new Error(`bench: ${cmd} ${args.join(' ')} failed (exit ${r.status ?? r.signal})`);
}

function ensureCli() {
  const cli = process.env.OX_CLI || path.join(ROOT, 'build', 'oxinfer');
  if (!fs.existsSync(cli)) {
    if (process.env.OX_CLI) throw new Error(`bench: OX_CLI=${cli} does not exist`);
    run('cmake', ['-S', '.', '-B', 'build', '-DCMAKE_BUILD_TYPE=Release']);
    run('cmake', ['--build', 'build', '--target', 'oxinfer', '-j2']);
  }
  return cli;
}

function ensureWasm() {
  if (
    !fs.existsSync(path.join(ROOT, 'dist', 'oxinfer-mt.js')) ||
    !fs.existsSync(path.join(ROOT, 'dist', 'oxinfer-st.js'))
  )
    run('make', ['-f', 'Makefile.emscripten', '-j2'], {
      env: { ...process.env, NODE_PATH: process.env.NODE_PATH || '/usr/share/nodejs' },
    });
}

// Bytes per weight of each type (block bytes / block size), for the disk check.
const BPW = {
  f32: 4,
  f16: 2,
  bf16: 2,
  q8_0: 34 / 32,
  q4_0: 18 / 32,
  q4_1: 20 / 32,
  q5_0: 22 / 32,
  q5_1: 24 / 32,
  q2_k: 84 / 256,
  q3_k: 110 / 256,
  q4_k: 144 / 256,
  q5_k: 176 / 256,
  q6_k: 210 / 256,
};
// parameters: [2-D weights outside the embedding tables, token + per-layer embedding tables]
const PARAMS = { tiny: [4.3e6, 1.6e6], benchlike: [20e6, 3e6], bench: [520e6, 44e6], e2b: [1876e6, 2752e6] };

function checkDisk(a, preset, file, bytesPerWeight, embdBytesPerWeight = bytesPerWeight) {
  const [pw, pe] = PARAMS[preset] ?? [0, 0];
  const need = pw * bytesPerWeight + pe * embdBytesPerWeight;
  const free = freeBytes(a.dir);
  if (need * 1.1 + 1e9 > free)
    throw new Error(
      `bench: ${file} needs about ${fmtMB(need)} and ${a.dir} has ${fmtMB(free)} free (keep 1 GB spare; --dir elsewhere)`,
    );
}

// Make `file` with make(tmp) unless it exists; a failed or interrupted run leaves no file.
function produce(file, make) {
  const tmp = `${file}.part`;
  const t0 = Date.now();
  try {
    make(tmp);
  } catch (e) {
    fs.rmSync(tmp, { force: true });
    throw e;
  }
  fs.renameSync(tmp, file);
  log(`  made ${file} (${fmtMB(fs.statSync(file).size)}) in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
}

function ensureModel(a, cli, preset, t) {
  fs.mkdirSync(a.dir, { recursive: true });
  const file = path.join(a.dir, `${preset}-${t.key}.gguf`);
  if (fs.existsSync(file) && !a.regen) return file;
  if (t.recipe) {
    // the recipe's own per-tensor mix, from an F16 file of our generator (kept only while
    // small: the E2B one is 9 GB)
    const base = ensureModel(a, cli, preset, parseType('f16'));
    checkDisk(a, preset, file, BPW.q6_k);
    const quantize = llamaBin('llama-quantize');
    produce(file, (tmp) =>
      run(quantize, [base, tmp, t.recipe, '2'], { stdio: ['ignore', a.verbose ? 'inherit' : 'ignore', 'inherit'] }),
    );
    if (fs.statSync(base).size > 2e9) fs.rmSync(base);
    return file;
  }
  checkDisk(a, preset, file, BPW[t.type] ?? 4, BPW[t.embd ?? t.type] ?? 4);
  produce(file, (tmp) =>
    run(cli, ['synth', '--preset', preset, '--type', t.type, ...(t.embd ? ['--embd-type', t.embd] : []), '-o', tmp]),
  );
  return file;
}

const cleanError = (e) =>
  String(e?.message ?? e)
    .split('\n')[0]
    .replace(/^page\.evaluate: /, '')
    .replace(/^(\w*Error|OxError): /, '');

const withTimeout = (p, s, what) =>
  Promise.race([
    p,
    new Promise((_, rej) => setTimeout(() => rej(new Error(`${what}: no answer in ${s} s`)), s * 1000).unref()),
  ]);

// Run a process to completion; peak RSS by /usr/bin/time when there is one.
const HAVE_TIME = fs.existsSync('/usr/bin/time');
function runTimed(cmd, args, what) {
  const [c, argv] = HAVE_TIME ? ['/usr/bin/time', ['-f', 'maxrss_kb=%M', cmd, ...args]] : [cmd, args];
  return new Promise((resolve, reject) => {
    const p = spawn(c, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
    let so = '',
      se = '';
    p.stdout.on('data', (d) => (so += d));
    p.stderr.on('data', (d) => (se += d));
    p.on('exit', (code) => {
      if (code !== 0) return reject(new Error(`${what}: exit ${code}: ${se.trim().split('\n').pop()}`));
      const rss = /maxrss_kb=(\d+)/.exec(se);
      resolve({ so, se, peak_rss: rss ? Number(rss[1]) * 1024 : null });
    });
  });
}

const chromiumArgs = (marker) => [
  '--no-sandbox',
  '--disable-gpu',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-features=SpareRendererForSitePerProcess',
  marker,
];

// Chromium keeps Blobs of an off-the-record context (every newContext()) in memory, about 2 GB
// in all; a persistent profile spills them to disk. So an engine that must hold a bigger file
// as a Blob (wllama on E2B) gets a browser of its own with a throw-away profile.
const BLOB_LIMIT = 1.8e9;
async function ownBrowser(a, ctx) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'oxbench-profile-'));
  const marker = `${ctx.marker}-own`;
  const context = await ctx.chromium.launchPersistentContext(dir, {
    executablePath: a.chromium,
    headless: true,
    args: chromiumArgs(marker),
  });
  return {
    context,
    marker,
    async close() {
      await context.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

// A browser engine: a page in its own browser context (so its own renderer process).
async function webEngine(name, ctx, a, s, modelUrl, bytes = 0) {
  const own = name === 'wllama' && bytes > BLOB_LIMIT ? await ownBrowser(a, ctx) : null;
  const context = own?.context ?? (await ctx.browser.newContext());
  const closeContext = () => (own ? own.close() : context.close());
  const page = await context.newPage();
  page.on('console', (m) => {
    if (a.verbose || m.type() === 'error') log(`    [${name} ${m.type()}] ${m.text()}`);
  });
  page.on('pageerror', (e) => log(`    [${name} pageerror] ${e}`));
  let fetched,
    loaded,
    pid = null;
  const ev = (fn, arg) => withTimeout(page.evaluate(fn, arg), a.timeout_s, name);
  try {
    await page.goto(`${ctx.server.url}/`);
    await page.waitForFunction(() => window.benchReady === true);
    const source = name === 'web' ? s.source : 'blob';
    if (source === 'blob') fetched = await page.evaluate((u) => window.bench.fetchModel(u), modelUrl);
    loaded = await ev(
      ([n, o]) => window.bench.load(n, o),
      [name === 'wllama' ? 'wllama' : 'oxinfer', { threads: ctx.threads, nCtx: 1024, source, url: modelUrl }],
    );
    loaded.source = source;
  } catch (e) {
    await closeContext().catch(() => {});
    throw e;
  }
  // its renderer: the not yet claimed one holding the most memory now (the model is in it)
  const cands = rendererPids(own?.marker ?? ctx.marker)
    .filter((p) => !ctx.taken.has(p))
    .map((p) => ({ p, s: procStatus(p) }))
    .filter((x) => x.s);
  cands.sort((x, y) => y.s.rss - x.s.rss);
  pid = cands[0]?.p ?? null;
  if (pid) ctx.taken.add(pid);
  loaded.renderer_pid = pid;
  const wasmBytes = async () => {
    if (name !== 'wllama') return (await ev(() => window.bench.memory())).wasm_bytes;
    // llama.cpp's wasm memory lives in wllama's worker (page.mjs exposes its size there);
    // a pthread worker blocked in a wait never answers: bounded
    let wasm = null;
    for (const w of page.workers()) {
      const b = await withTimeout(
        w.evaluate(() => self.__oxWasmBytes?.() ?? null),
        3,
        'worker',
      ).catch(() => null);
      if (b) wasm = Math.max(wasm ?? 0, b);
    }
    return wasm;
  };
  // the load's own peak, before any generation
  loaded.peak_rss = pid ? (procStatus(pid)?.hwm ?? null) : null;
  loaded.wasm_bytes = await wasmBytes().catch(() => null);
  return {
    name,
    fetched,
    loaded,
    pid,
    run: (p) => ev((q) => window.bench.run(q), p),
    async memory() {
      const m = await ev(() => window.bench.memory());
      m.wasm_bytes = await wasmBytes();
      return { ...m, peak_rss: pid ? (procStatus(pid)?.hwm ?? null) : null };
    },
    async close() {
      await withTimeout(
        page.evaluate(() => window.bench.unload()),
        30,
        'unload',
      ).catch(() => {});
      await closeContext();
    },
  };
}

// Our wasm engine in Node, in a child process (tools/bench/node-engine.mjs); src: {path} or {url}.
// gpu: on the WebGPU backend (a software adapter with --gpu-fallback), with the GPU's read
// bandwidth probed after the load (loaded.gpu)
async function nodeEngine(a, threads, src, gpu = false) {
  const child = spawn(process.execPath, [path.join(ROOT, 'tools', 'bench', 'node-engine.mjs')], {
    cwd: ROOT,
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const waiting = [];
  readline.createInterface({ input: child.stdout }).on('line', (l) => {
    let m;
    try {
      m = JSON.parse(l);
    } catch {
      return log(`    [node] ${l}`);
    }
    waiting.shift()?.(m);
  });
  const exited = new Promise((res) => child.on('exit', (c) => res(c)));
  const call = (op, args = {}) =>
    withTimeout(
      new Promise((resolve, reject) => {
        waiting.push((m) => (m.ok ? resolve(m.value) : reject(new Error(m.error))));
        child.stdin.write(JSON.stringify({ op, ...args }) + '\n');
      }),
      a.timeout_s,
      'node engine',
    );
  const fail = exited.then((c) => {
    throw new Error(`node engine exited (${c})`);
  });
  fail.catch(() => {});
  let loaded;
  try {
    const backend = gpu ? { backend: 'webgpu', allowFallbackAdapter: a.gpu_fallback } : {};
    loaded = await Promise.race([call('load', { src, threads, nCtx: 1024, ...backend }), fail]);
    loaded.peak_rss = procStatus(child.pid)?.hwm ?? null;
    if (gpu) {
      const p = await call('gpuProbe', { mbytes: a.probe_mb, allowFallbackAdapter: a.gpu_fallback });
      loaded.gpu = { ...loaded.info.gpu, read_bps: p.bytesPerSec };
      log(
        `  gpu: ${loaded.gpu.adapter}: reads ${fmtGBs(p.bytesPerSec)} (js/gpu/probe.js, ${fmtMB(p.bytes)} x ${p.reps})`,
      );
    }
  } catch (e) {
    child.kill();
    throw e;
  }
  return {
    name: gpu ? 'gpu' : 'node',
    loaded,
    run: (p) => Promise.race([call('run', { tokens: p.tokens, nGen: p.nGen }), fail]),
    async memory() {
      const m = await call('memory');
      return { ...m, peak_rss: procStatus(child.pid)?.hwm ?? null };
    },
    async close() {
      await call('quit').catch(() => {});
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
      if (child.exitCode === null) child.kill();
    },
  };
}

// Our native CLI: one process per rep (`oxinfer run --bench`).
function nativeEngine(cli, threads, file) {
  let last = null;
  const loads = [];
  return {
    name: 'native',
    loaded: null,
    loads,
    async run(p) {
      const out = await runTimed(
        cli,
        [
          'run',
          file,
          '--bench',
          '--json',
          '--threads',
          String(threads),
          '--n-prompt',
          String(p.tokens.length),
          '--n-gen',
          String(p.nGen),
        ],
        'oxinfer run --bench',
      );
      const j = JSON.parse(out.so.trim().split('\n').pop());
      last = { resident_bytes: j.resident_bytes, peak_rss: out.peak_rss };
      loads.push(j.load_s * 1000);
      return {
        prefill_tps: j.prefill_tok_s,
        decode_tps: j.decode_tok_s,
        prompt_n: j.n_prompt,
        decode_n: j.n_gen,
        load_ms: j.load_s * 1000,
      };
    },
    memory: async () => last ?? {},
    close: async () => {},
  };
}

// Native llama.cpp: one `llama-bench -r 1` per rep (its own random tokens, its own warm-up).
function llamaEngine(bin, threads, file) {
  let last = null;
  return {
    name: 'llama',
    loaded: null,
    async run(p) {
      const out = await runTimed(
        bin,
        [
          '-m',
          file,
          '-t',
          String(threads),
          '-p',
          String(p.tokens.length),
          '-n',
          String(p.nGen),
          '-r',
          '1',
          '-o',
          'json',
        ],
        'llama-bench',
      );
      const j = JSON.parse(out.so);
      const pp = j.find((x) => x.n_prompt > 0 && x.n_gen === 0),
        tg = j.find((x) => x.n_gen > 0 && x.n_prompt === 0);
      if (!pp || !tg) throw new Error(`llama-bench: no pp/tg result in ${out.so.slice(0, 200)}`);
      last = { peak_rss: out.peak_rss, build: pp.build_commit };
      return { prefill_tps: pp.avg_ts, decode_tps: tg.avg_ts, prompt_n: pp.n_prompt, decode_n: tg.n_gen };
    },
    memory: async () => last ?? {},
    close: async () => {},
  };
}

// ---- the bandwidth ceiling (src/wasm/probe.c) ----

// best of 8 passes: the machine is shared, the best pass is the closest to what it can do
const PROBE_REPS = 8;

async function probeNode(a, threads) {
  const out = await runTimed(
    process.execPath,
    [path.join(ROOT, 'tools', 'bench', 'probe-node.mjs'), String(threads), String(a.probe_mb), String(PROBE_REPS)],
    'probe-node',
  );
  return JSON.parse(out.so.trim().split('\n').pop()).bytes_per_s;
}

async function probeBrowser(a, ctx, threads) {
  const context = await ctx.browser.newContext();
  try {
    const page = await context.newPage();
    await page.goto(`${ctx.server.url}/`);
    await page.waitForFunction(() => window.benchReady === true);
    return await withTimeout(
      page.evaluate(([t, mb, r]) => window.bench.probe(t, mb, r), [threads, a.probe_mb, PROBE_REPS]),
      120,
      'browser probe',
    );
  } finally {
    await context.close();
  }
}

async function probes(a, ctx, threads) {
  const out = {};
  const tryProbe = async (k, f) => {
    try {
      out[k] = await f();
    } catch (e) {
      out[k] = null;
      log(`  probe ${k}: FAILED: ${cleanError(e)}`);
    }
  };
  if (ctx.browser) await tryProbe('browser', () => probeBrowser(a, ctx, threads));
  if (a.engines.has('node') || !ctx.browser) await tryProbe('node', () => probeNode(a, threads));
  log(
    `  wasm read bandwidth, ${threads} thread(s): ${Object.entries(out)
      .map(([k, v]) => `${k} ${fmtGBs(v)}`)
      .join(', ')}`,
  );
  return out;
}

const fmtGBs = (b) => (Number.isFinite(b) ? `${(b / 1e9).toFixed(1)} GB/s` : '–');

// ---- one model file at one thread count ----

async function benchConfig(a, ctx, s, t, file, threads) {
  ctx.threads = threads;
  const meta = modelMeta(file);
  const per = weightsPerToken(file);
  const engines = [];
  const errors = {};
  const open = async (name, make) => {
    if (!a.engines.has(name)) return;
    try {
      const e = await make();
      engines.push(e);
      if (e.loaded)
        log(
          `  ${name}: loaded in ${fmtS(e.loaded.load_ms)}${e.loaded.build ? ` (${e.loaded.build} build, ${e.loaded.threads} threads)` : ''}`,
        );
    } catch (e) {
      errors[name] = cleanError(e);
      log(`  ${name}: LOAD FAILED: ${errors[name]}`);
    }
  };
  const ceiling = await probes(a, ctx, threads);
  const modelUrl = ctx.urlOf(file);
  await open('web', () => webEngine('web', ctx, a, s, modelUrl));
  const bytes = fs.statSync(file).size;
  // wllama reads the file from a Blob the page holds
  const wllamaNeeds = bytes + 1e9;
  if (a.engines.has('wllama') && availableBytes() < wllamaNeeds) {
    errors.wllama = `skipped: needs about ${fmtMB(wllamaNeeds)} of memory for the file's Blob, ${fmtMB(availableBytes())} available`;
    log(`  wllama: ${errors.wllama}`);
  } else await open('wllama', () => webEngine('wllama', ctx, a, s, modelUrl, bytes));
  await open('node', () => nodeEngine(a, threads, { path: file }));
  await open('gpu', () => nodeEngine(a, threads, { path: file }, true));
  await open('native', async () => nativeEngine(ctx.cli, threads, file));
  await open('llama', async () => llamaEngine(llamaBin('llama-bench'), threads, file));

  const runs = Object.fromEntries(engines.map((e) => [e.name, []]));
  const live = new Set(engines);
  for (let r = -a.warmup; r < s.reps; r++) {
    // warm-ups are short: they only have to touch every weight once
    const p = { ...prompt(meta, a.n_prompt, 1000 + r + 17 * threads), nGen: r < 0 ? Math.min(a.n_gen, 8) : a.n_gen };
    // a native rep is a new process: nothing of it to warm up
    const order = engines.filter((e) => live.has(e) && !(r < 0 && (e.name === 'native' || e.name === 'llama')));
    const n = order.length || 1,
      k = ((r % n) + n) % n;
    for (const e of [...order.slice(k), ...order.slice(0, k)]) {
      try {
        const x = await e.run(p);
        if (r >= 0) runs[e.name].push(x);
        log(
          `  ${r < 0 ? 'warm-up' : `rep ${r + 1}/${s.reps}`} ${e.name.padEnd(6)} prefill ${x.prefill_tps.toFixed(2)} tok/s (${x.prompt_n}), decode ${x.decode_tps.toFixed(2)} tok/s (${x.decode_n})`,
        );
      } catch (err) {
        errors[e.name] = cleanError(err);
        log(`  ${e.name}: RUN FAILED: ${errors[e.name]}`);
        live.delete(e);
      }
    }
  }
  const out = {
    preset: s.preset,
    type: t.label,
    key: t.key,
    file,
    bytes,
    mix: per.mix,
    bytes_per_token: per.bytes,
    threads,
    machine: { cpu_model: cpuInfo().model, cores: cpuInfo().cores },
    ceiling,
    engines: {},
    errors,
  };
  for (const e of engines) {
    let mem = {};
    try {
      mem = await e.memory();
    } catch (err) {
      mem = { error: err.message };
    }
    const loadMs = e.name === 'native' ? summary(e.loads) : summary([e.loaded?.load_ms]);
    out.engines[e.name] = {
      runs: runs[e.name],
      loaded: e.loaded,
      fetched: e.fetched,
      mem,
      load: loadMs,
      prefill: summary(runs[e.name].map((x) => x.prefill_tps)),
      decode: summary(runs[e.name].map((x) => x.decode_tps)),
    };
    await e.close().catch(() => {});
  }
  return out;
}

// The page load from a URL (loopback HTTP, Range reads) in Chromium and in Node: load time,
// and the load's peak RSS against the wasm memory it ends with.
async function urlLoad(a, ctx, s, t, file, threads) {
  ctx.threads = threads;
  const url = ctx.urlOf(file);
  const out = {
    preset: s.preset,
    type: t.label,
    file,
    bytes: fs.statSync(file).size,
    threads,
    engines: {},
    errors: {},
  };
  const one = async (name, make) => {
    try {
      const e = await make();
      out.engines[name] = {
        load_ms: e.loaded.load_ms,
        peak_rss: e.loaded.peak_rss,
        wasm_bytes: e.loaded.wasm_bytes ?? (await e.memory()).wasm_bytes,
      };
      log(
        `  ${name} from URL: loaded in ${fmtS(e.loaded.load_ms)}, peak RSS ${fmtMB(out.engines[name].peak_rss)}, wasm ${fmtMB(out.engines[name].wasm_bytes)}`,
      );
      await e.close();
    } catch (e) {
      out.errors[name] = cleanError(e);
      log(`  ${name} from URL: FAILED: ${out.errors[name]}`);
    }
  };
  if (ctx.browser) await one('web', () => webEngine('web', ctx, a, { ...s, source: 'url' }, url));
  await one('node', () => nodeEngine(a, threads, { url: ctx.server.url + url }));
  return out;
}

// ---- report ----

const ENGINE = {
  web: 'oxinfer (wasm, Chromium)',
  wllama: 'wllama (wasm, Chromium)',
  node: 'oxinfer (wasm, Node)',
  gpu: 'oxinfer (WebGPU, Node)',
  native: 'oxinfer (native CLI)',
  llama: 'llama.cpp (native, llama-bench)',
};
// where each engine runs, i.e. which measured ceiling applies
const CEILING = { web: 'browser', wllama: 'browser', node: 'node' };

function memText(name, m) {
  if (!m || m.error) return '–';
  if (name === 'native') return `RSS ${fmtMB(m.peak_rss)} (weights+KV ${fmtMB(m.resident_bytes)})`;
  const wasm = Number.isFinite(m.wasm_bytes) ? `wasm ${fmtMB(m.wasm_bytes)}` : '';
  return `${Number.isFinite(m.peak_rss) ? `RSS ${fmtMB(m.peak_rss)}` : ''}${wasm ? ` (${wasm})` : ''}` || '–';
}

function tableRows(results, wllamaVersion) {
  const rows = [];
  for (const c of results) {
    const w = c.engines.wllama;
    for (const name of ENGINES) {
      const e = c.engines[name];
      if (!e && !c.errors[name]) continue;
      const label =
        name === 'web' && e?.loaded?.build
          ? ENGINE.web.replace('wasm', `wasm ${e.loaded.build}`)
          : name === 'wllama'
            ? ENGINE.wllama.replace('wllama', `wllama ${wllamaVersion}`)
            : name === 'gpu' && e?.loaded?.gpu
              ? `oxinfer (WebGPU on ${e.loaded.gpu.adapter}${e.loaded.gpu.fallbackAdapter ? ', a software adapter' : ''}, Node)`
              : ENGINE[name];
      const weights = `${c.type} ${fmtMB(c.bytes)}`;
      if (!e || !e.runs.length) {
        rows.push({
          engine: label,
          weights,
          threads: c.threads,
          mem: `failed: ${c.errors[name] ?? 'no runs'}`.replace(/\|/g, '/'),
          prefill: null,
          decode: null,
        });
        continue;
      }
      const ceil = name === 'gpu' ? e.loaded?.gpu?.read_bps : c.ceiling?.[CEILING[name]];
      const bw = c.bytes_per_token * e.decode.med;
      rows.push({
        engine: label,
        weights,
        threads: c.threads,
        load: e.load,
        prefill: e.prefill,
        decode: e.decode,
        bandwidth: `${fmtGBs(bw)}${Number.isFinite(ceil) ? ` (${Math.round((100 * bw) / ceil)} %)` : ''}`,
        mem: memText(name, e.mem),
        ref: ['web', 'node', 'native'].includes(name) && w?.runs.length ? w : null,
      });
    }
  }
  return rows;
}

// The CPU this runs on: its model (/proc/cpuinfo's "model name", as os.cpus() reads it) and
// core count, recorded beside every figure; `key` names the machine's sections in the doc.
function cpuInfo() {
  const cpus = os.cpus();
  const model = (cpus[0]?.model ?? '?').trim().replace(/\s+/g, ' ');
  const cores = cpus.length;
  const key = `${model}-x${cores}`
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '');
  return { model, cores, key };
}

function machine(ctx) {
  const cpus = os.cpus();
  return {
    cpu: `${cpus[0]?.model ?? '?'} × ${cpus.length}`,
    cpu_model: cpuInfo().model,
    cores: cpuInfo().cores,
    load: os
      .loadavg()
      .map((x) => x.toFixed(2))
      .join(' '),
    memory: fmtMB(os.totalmem()),
    os: `${os.type()} ${os.release()}`,
    node: process.version,
    chromium: ctx.chromiumVersion ?? '–',
    wllama: ctx.wllamaVersion,
    wasm: (() => {
      try {
        return fs
          .statSync(path.join(ROOT, 'dist', 'oxinfer-mt.wasm'))
          .mtime.toISOString()
          .replace(/\.\d+Z$/, 'Z');
      } catch {
        return '–';
      }
    })(),
    commit: (() => {
      try {
        return (
          execFileSync('git', ['-C', ROOT, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim() +
          (execFileSync('git', ['-C', ROOT, 'status', '--porcelain', '--untracked-files=no'], {
            encoding: 'utf8',
          }).trim()
            ? ' (+ uncommitted changes)'
            : '')
        );
      } catch {
        return '?';
      }
    })(),
  };
}

function loadTable(loads) {
  const lines = [
    '| engine | file | load from URL | peak RSS during load | wasm memory | RSS − wasm (target ≤ 300 MB) |',
    '| --- | --- | --- | --- | --- | --- |',
  ];
  for (const l of loads) {
    for (const name of ['web', 'node']) {
      const e = l.engines[name];
      const label = ENGINE[name];
      if (!e) {
        if (l.errors[name])
          lines.push(
            `| ${label} | ${l.type} ${fmtMB(l.bytes)} | failed: ${l.errors[name].replace(/\|/g, '/')} | | | |`,
          );
        continue;
      }
      const over = Number.isFinite(e.peak_rss) && Number.isFinite(e.wasm_bytes) ? e.peak_rss - e.wasm_bytes : NaN;
      lines.push(
        `| ${label} | ${l.type} ${fmtMB(l.bytes)} | ${fmtS(e.load_ms)} | ${fmtMB(e.peak_rss)} | ${fmtMB(e.wasm_bytes)} | ${Number.isFinite(over) ? `${fmtMB(over)}${over <= 300e6 ? '' : ' (over)'}` : '–'} |`,
      );
    }
  }
  return lines.join('\n');
}

function section(a, ctx, s, results, loads, started) {
  const m = machine(ctx);
  const cmd = `npm run bench${process.argv.length > 2 ? ' -- ' + process.argv.slice(2).join(' ') : ''}`;
  const lines = [
    `Run ${started.toISOString().replace(/\.\d+Z$/, 'Z')} with \`${cmd}\` (${s.reps} rep${s.reps > 1 ? 's' : ''} after ${a.warmup} short warm-up, ${a.n_prompt}-token prompt, ${a.n_gen} greedy tokens; our page reads the file ${s.source === 'url' ? 'by HTTP Range requests' : 'from a Blob'}).`,
    '',
    `Machine: ${m.cpu}, ${m.memory} RAM, ${m.os}; Node ${m.node}; ${ctx.chromiumVersion ? `Chromium ${m.chromium} headless; ` : ''}@wllama/wllama ${m.wllama}; llama.cpp ${ctx.llamaBuild ?? '(node-llama-cpp 3.22.1 source)'}; oxinfer-web commit ${m.commit}, dist/ wasm built ${m.wasm}, native CLI ${path.relative(ROOT, ctx.cli)}. ` +
      `Load average at the start ${ctx.loadStart}, at the end ${m.load} (2 cores shared with other work: every engine is slowed, wllama's spinning threads most).`,
    '',
    markdownTable(tableRows(results, ctx.wllamaVersion)),
    '',
    'Files and ceilings:',
    '',
  ];
  for (const c of results) {
    lines.push(
      `- ${path.basename(c.file)}: ${c.mix}; ${fmtMB(c.bytes_per_token)} of weights read per decoded token; wasm read ceiling at ${c.threads} thread${c.threads > 1 ? 's' : ''}: ` +
        `${
          Object.entries(c.ceiling)
            .map(([k, v]) => `${k === 'browser' ? 'Chromium' : 'Node'} ${fmtGBs(v)}`)
            .join(', ') || '–'
        }.`,
    );
  }
  lines.push('');
  for (const c of results) {
    const ours = c.engines.node ?? c.engines.web;
    const res = ours?.mem?.resident_bytes;
    if (s.preset === 'e2b' && Number.isFinite(res))
      lines.push(
        `${path.basename(c.file)}: our engine keeps ${fmtMB(res)} resident (weights + KV cache) of this ${fmtMB(c.bytes)} file; the per-layer embedding table stays on the host. ` +
          (c.engines.wllama?.runs.length
            ? `wllama held ${fmtMB(c.engines.wllama.mem?.wasm_bytes)} of wasm memory.`
            : `wllama: ${c.errors.wllama ?? 'not run'}.`),
        '',
      );
  }
  if (loads.length)
    lines.push(
      'Load from a URL (loopback HTTP server, Range requests; a fresh load, no generation):',
      '',
      loadTable(loads),
      '',
    );
  return lines.join('\n');
}

const DOC_HEAD = `# Benchmarks

Regenerated by \`npm run bench\` (tools/bench.mjs); edit the tool, not the tables. \`npm run bench
-- --quick\` runs the bench preset once (one rep) and prints without writing here unless
\`--write\`. Both take far longer while other work loads the 2 cores (wllama's spinning threads
collapse under contention): the load average is printed with every table.

What runs: synthetic Gemma 4 models made by our own generator (\`oxinfer synth\`, cached
outside the repo in \`$OX_BENCH_DIR\` or \`~/.cache/oxinfer-bench\`). The \`bench\` preset has the
Gemma 4 E2B shapes (hidden 1536, 8 query / 1 KV heads, head 256 sliding / 512 full, FFN 6144,
12288 on KV-shared layers, per-layer embeddings 256, window 512) cut to 10 layers
(\`S S S S F S* S* S* S* F*\`) and a vocabulary of 8192; \`e2b\` is the real E2B geometry
(35 layers, vocabulary 262144). Random weights: the speed is what matters, not the text.
\`Q4_K_M\` is what most published files are: llama.cpp's own \`llama-quantize … Q4_K_M\` run on an
F16 file of our generator, so the per-tensor type mix is llama.cpp's (listed under each table);
llama.cpp is built from the source inside the npm package \`node-llama-cpp\` by
\`tools/llamacpp.sh\`. \`Q8_0\` and \`Q4_0\` are our generator's uniform files (every 2-D tensor,
embedding included, in that type).

Engines: our wasm engine (\`js/main/index.js\` \`loadModel\` + \`generate\`, threaded build in a
cross-origin-isolated page) and wllama (llama.cpp in wasm, memory64 + JSPI build) in the same
headless Chromium, each page in its own browser context; wllama loads the file from a Blob
(the fetch is not in its load time; files over 1.8 GB from a browser of its own with a
throw-away profile, because Chromium holds only about 2 GB of Blobs in memory and spills to disk
only for a persistent profile), our page from a Blob on the bench preset and
by HTTP Range requests on E2B (load time included). Our engine also runs in Node (the same wasm
through the same API, file read from disk); our native CLI (\`oxinfer run --bench\`, one process
per rep) and native llama.cpp (\`llama-bench -t T -p 64 -n 64 -r 1\`, one process per rep, its own
random tokens and warm-up) are the native figures. Per model and thread count every engine is
loaded once, runs one short warm-up (8 tokens), then the reps interleave the engines; each rep
is a new prompt (BOS + 63 ids, the same ids for every wasm engine), prefilled whole (no cache
reuse), then greedy generation with end-of-sequence ignored. Rates are each engine's own
timers. Table cells: median [min–max] over the reps.

Bandwidth: "decode GB/s" is the weight bytes one decoded token reads (every tensor of the file
once — the tied embedding is the output head — except the per-layer embedding table, of which
one row is gathered) × decode tok/s; in brackets, its share of the wasm read ceiling measured in
the same run at the same thread count by \`ox_probe_read_bandwidth\` (src/wasm/probe.c: the
engine's own thread pool streaming a 512 MB buffer with SIMD128 loads, best of 8 passes) in Chromium
(for the Chromium rows) or Node. Native rows have no wasm ceiling. The WebGPU row (engine
\`gpu\`: our engine in Node on the WebGPU backend, the \`webgpu\` package) is against the GPU's
own read bandwidth, measured in the same run by js/gpu/probe.js (a kernel reading one buffer of
up to --probe-mb, capped at one binding, 20 passes per submit, best of 3, wall clock from submit
to onSubmittedWorkDone); its peak memory is the Node process's (a software adapter's GPU
buffers are process memory too), its wasm memory holds no weights. On a software adapter
(--gpu-fallback: lavapipe, SwiftShader) the row says so and its figures say nothing about a GPU.

Memory: "peak memory" is the peak resident set (VmHWM from /proc) of the process that runs the
engine — the page's renderer process (its workers and wasm memory; a model Blob lives in the
browser process and is not counted), the Node child process, or the native process
(/usr/bin/time) — and, in brackets, the engine's wasm memory at the end (\`WebAssembly.Memory\`
byteLength: ours from \`model.stats().wasmMemoryBytes\`, wllama's read from its worker) or,
native, our weights + KV cache bytes. The Chromium rows run under Playwright, whose DevTools session
enables the Network domain in the page and its workers: the renderer then keeps the Range bodies
it saw (about 200 MB on an E2B load) and loads from a URL slower; \`npm run bench:memory\` measures
the peak and the load time of a tab without DevTools (the "Memory" section). The ratio column is ours / wllama for the same file and
thread count (above 1: ours is faster).
`;

function writeDoc(file, preset, body) {
  let text = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '';
  // the head is rewritten, the sections after it are kept (each preset on each machine
  // replaces its own: a section per machine measured)
  const keep = text.indexOf('<!-- bench:');
  text = DOC_HEAD + (keep >= 0 ? `\n${text.slice(keep)}` : '');
  text = text.replace(/<!-- bench:main -->[\s\S]*?<!-- \/bench:main -->\n*/, ''); // the wllama 3.8.1 era's table
  const cpu = cpuInfo();
  const mode = `${preset}@${cpu.key}`;
  const on = `, ${cpu.model} × ${cpu.cores}`;
  const title =
    preset === 'e2b'
      ? `## E2B geometry (\`npm run bench -- --e2b\`)${on}`
      : `## ${preset === 'bench' ? 'Bench preset' : `Preset ${preset}`} (\`npm run bench -- --presets ${preset}\`)${on}`;
  const block = `<!-- bench:${mode} -->\n${title}\n\n${body}\n<!-- /bench:${mode} -->\n`;
  const re = new RegExp(`<!-- bench:${mode} -->[\\s\\S]*?<!-- /bench:${mode} -->\\n?`);
  // after the last section of this preset on another machine, else the bench preset before E2B
  const ends = [...text.matchAll(new RegExp(`<!-- /bench:${preset}@[\\w-]+ -->\\n?`, 'g'))];
  const e2b = /<!-- bench:e2b@[\w-]+ -->/.exec(text);
  if (re.test(text)) text = text.replace(re, block);
  else if (ends.length) {
    const at = ends.at(-1).index + ends.at(-1)[0].length;
    text = `${text.slice(0, at)}\n${block}${text.slice(at)}`;
  } else if (preset === 'bench' && e2b) text = `${text.slice(0, e2b.index)}${block}\n${text.slice(e2b.index)}`;
  else text = `${text.trimEnd()}\n\n${block}`;
  writeAtomic(file, text);
}

// ---- main ----

async function main() {
  const a = parseArgs(process.argv.slice(2));
  const started = new Date();
  const loadStart = os
    .loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');
  const cli = ensureCli();
  if (a.engines.has('web') || a.engines.has('node')) ensureWasm();
  for (const s of a.suites) s.files = s.types.map((t) => ensureModel(a, cli, s.preset, t));

  const ctx = { cli, loadStart, taken: new Set(), marker: `--oxbench-marker=${process.pid}-${Date.now()}` };
  ctx.wllamaVersion = JSON.parse(fs.readFileSync(require.resolve('@wllama/wllama/package.json'), 'utf8')).version;
  const all = a.suites.flatMap((s) => s.files);
  const urls = new Map(all.map((f, i) => [f, `/model/${i}/${path.basename(f)}`]));
  ctx.urlOf = (f) => urls.get(f);
  ctx.server = await startServer({
    files: {
      '/': path.join(ROOT, 'tools', 'bench', 'page.html'),
      ...Object.fromEntries([...urls].map(([f, u]) => [u, f])),
    },
    mounts: {
      '/bench/': path.join(ROOT, 'tools', 'bench'),
      '/js/': path.join(ROOT, 'js'),
      '/dist/': path.join(ROOT, 'dist'),
      '/wllama/': path.dirname(require.resolve('@wllama/wllama/package.json')),
      '/node_modules/@huggingface/jinja/': path.dirname(path.dirname(require.resolve('@huggingface/jinja'))),
    },
  });
  const web = a.engines.has('web') || a.engines.has('wllama');
  // a fresh browser per configuration: every engine page gets a new renderer process, so its
  // peak RSS is its own
  const { chromium } = require('playwright-core');
  ctx.chromium = chromium;
  const launch = async () => {
    ctx.taken = new Set();
    ctx.browser = web
      ? await chromium.launch({ executablePath: a.chromium, headless: true, args: chromiumArgs(ctx.marker) })
      : null;
    ctx.chromiumVersion ??= ctx.browser?.version();
  };
  const withBrowser = async (f) => {
    await launch();
    try {
      return await f();
    } finally {
      await ctx.browser?.close();
      ctx.browser = null;
    }
  };
  try {
    for (const s of a.suites) {
      const results = [],
        loads = [];
      const total = s.types.length * a.threads.length;
      const jsonFile = a.json
        ? a.json.replace(/(\.json)?$/, `-${s.preset}.json`)
        : path.join(a.dir, `results-${s.preset}-${started.toISOString().replace(/[:.]/g, '-')}.json`);
      // written after every configuration, so an interrupted run still leaves its figures
      const report = () => {
        const partial =
          results.length < total ? `\n_Partial: ${results.length} of ${total} configurations finished._\n` : '';
        const body = section(a, ctx, s, results, loads, started) + partial;
        writeAtomic(
          jsonFile,
          JSON.stringify(
            { args: { ...a, engines: [...a.engines] }, started, machine: machine(ctx), results, loads },
            null,
            1,
          ),
        );
        if (a.write) writeDoc(a.doc, s.preset, body);
        return body;
      };
      for (const [i, t] of s.types.entries()) {
        for (const threads of a.threads) {
          log(
            `\n== ${s.preset} ${t.label} (${fmtMB(fs.statSync(s.files[i]).size)}), ${threads} thread${threads > 1 ? 's' : ''}`,
          );
          results.push(await withBrowser(() => benchConfig(a, ctx, s, t, s.files[i], threads)));
          ctx.llamaBuild ??= results.at(-1).engines.llama?.mem?.build;
          report();
        }
      }
      // the E2B page load from a URL, on its first file (the Q4_K_M one by default)
      if (s.preset === 'e2b' && (a.engines.has('web') || a.engines.has('node'))) {
        const threads = a.threads.at(-1);
        log(`\n== ${s.preset} ${s.types[0].label}: load from a URL, ${threads} threads`);
        loads.push(
          await withBrowser(() =>
            urlLoad(
              a,
              { ...ctx, browser: a.engines.has('web') ? ctx.browser : null },
              s,
              s.types[0],
              s.files[0],
              threads,
            ),
          ),
        );
      }
      log(`\n${report()}`);
      log(`raw results: ${jsonFile}`);
    }
  } finally {
    ctx.server?.close();
  }
  if (a.write) log(`wrote ${path.relative(process.cwd(), a.doc)}`);
}

main().catch((e) => {
  console.error(e.message ?? e);
  process.exit(1);
});
