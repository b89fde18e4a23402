#!/usr/bin/env node
// bench.mjs — `npm run bench`: our engine against wllama (llama.cpp in wasm) on the same
// synthetic Gemma 4 model, in the same headless Chromium, plus our native CLI and our wasm
// in Node. Prints one table and writes it to docs/benchmarks.md.
//
//   npm run bench                          bench preset (E2B shapes, 10 layers, vocab 8192)
//   npm run bench -- --quick               1 rep, Q8_0 only (docs/ untouched)
//   npm run bench -- --e2b                 the real E2B geometry (35 layers, vocab 262144, Q4_0)
//   options: --types q8_0,q4_0,q4_k+q6_k   weights[+embedding type] per model file
//            --threads 1,2  --reps 5  --warmup 1  --n-prompt 64  --n-gen 64
//            --engines web,wllama,node,native   --preset tiny|benchlike|bench (harness checks)
//            --dir DIR (models; default $OX_BENCH_DIR or ~/.cache/oxinfer-bench)  --regen
//            --source blob|url (how our page reads the file; --e2b: url)
//            --write / --no-write (the doc)  --doc FILE (default docs/benchmarks.md)  --json FILE
//            --chromium PATH  --verbose
//
// Models are made by our generator (`oxinfer synth`, build/oxinfer or $OX_CLI) and cached
// outside the repo. Per model file and thread count every engine is loaded once, runs one
// warm-up, then the reps interleave the engines (order rotated each rep), each rep a new
// prompt (BOS + ids of the <unusedN> block, the same for every engine) prefilled whole, then
// n-gen greedy tokens with end-of-sequence ignored. Rates are each engine's own timers:
// ours GenerationStats (prefillTokPerSec, decodeTokPerSec), wllama llama.cpp's timings
// (prompt_ms, predicted_ms), native `oxinfer run --bench`.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn, spawnSync, execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { startServer } from './serve.mjs';
import { summary, prompt, modelMeta, procStatus, rendererPids, freeBytes, fmtMB, fmtS, markdownTable, writeAtomic } from './bench/lib.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(path.join(ROOT, 'package.json'));
const log = (...a) => console.log(...a);

// ---- options ----

function parseArgs(argv) {
  const a = {
    quick: false, e2b: false, types: null, threads: null, reps: null, warmup: 1, n_prompt: null, n_gen: null,
    engines: 'web,wllama,node,native', preset: null, dir: process.env.OX_BENCH_DIR || path.join(os.homedir(), '.cache', 'oxinfer-bench'),
    regen: false, write: null, source: null, doc: path.join(ROOT, 'docs', 'benchmarks.md'), json: null, chromium: process.env.CHROMIUM || '/usr/bin/chromium', verbose: false, timeout_s: 1800,
  };
  const flags = new Set(['quick', 'e2b', 'regen', 'verbose']);
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '-h' || arg === '--help') {
      const src = fs.readFileSync(fileURLToPath(import.meta.url), 'utf8').split('\n');
      console.log(src.slice(1, src.findIndex((l, i) => i > 0 && !l.startsWith('//'))).map((l) => l.replace(/^\/\/ ?/, '')).join('\n'));
      process.exit(0);
    }
    if (arg === '--write' || arg === '--no-write') { a.write = arg === '--write'; continue; }
    const k = arg.replace(/^--/, '').replace(/-/g, '_');
    if (!arg.startsWith('--') || !(k in a)) throw new Error(`bench: unknown option ${arg} (--help lists them)`);
    if (flags.has(k)) { a[k] = true; continue; }
    const v = argv[++i];
    if (v === undefined) throw new Error(`bench: ${arg} needs a value`);
    a[k] = ['reps', 'warmup', 'n_prompt', 'n_gen', 'timeout_s'].includes(k) ? Number(v) : v;
  }
  // mode defaults: --e2b is one slow, large model: 2 threads, a short run
  const d = a.e2b ? { preset: 'e2b', types: 'q4_0', threads: '2', reps: 1, n_prompt: 16, n_gen: 32, source: 'url' }
    : { preset: 'bench', types: a.quick ? 'q8_0' : 'q8_0,q4_0,q4_k+q6_k', threads: '1,2', reps: a.quick ? 1 : 5, n_prompt: 64, n_gen: 64, source: 'blob' };
  for (const [k, v] of Object.entries(d)) a[k] ??= v;
  a.types = a.types.split(',').map((t) => t.trim()).filter(Boolean);
  a.threads = String(a.threads).split(',').map(Number);
  a.engines = new Set(a.engines.split(',').map((e) => e.trim()));
  for (const e of a.engines) if (!['web', 'wllama', 'node', 'native'].includes(e)) throw new Error(`bench: unknown engine ${e} (web, wllama, node, native)`);
  for (const t of a.threads) if (!Number.isInteger(t) || t < 1 || t > 64) throw new Error(`bench: bad thread count ${t}`);
  for (const k of ['reps', 'n_prompt', 'n_gen']) if (!Number.isInteger(a[k]) || a[k] < 1) throw new Error(`bench: --${k.replace('_', '-')} must be a positive integer`);
  if (!Number.isInteger(a.warmup) || a.warmup < 0) throw new Error('bench: --warmup must be 0 or more');
  if (!['blob', 'url'].includes(a.source)) throw new Error('bench: --source must be blob or url');
  a.write ??= !a.quick && (a.preset === 'bench' || a.preset === 'e2b');
  return a;
}

// "q4_k+q6_k" -> 2-D weights Q4_K, token and per-layer embedding tables Q6_K
function parseType(t) {
  const [w, e] = t.toLowerCase().split('+');
  return { key: t.toLowerCase().replace('+', '-'), type: w, embd: e ?? null, label: e ? `${w.toUpperCase()} (emb ${e.toUpperCase()})` : w.toUpperCase() };
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
  if (!fs.existsSync(path.join(ROOT, 'dist', 'oxinfer-mt.js')) || !fs.existsSync(path.join(ROOT, 'dist', 'oxinfer-st.js')))
    run('make', ['-f', 'Makefile.emscripten', '-j2'], { env: { ...process.env, NODE_PATH: process.env.NODE_PATH || '/usr/share/nodejs' } });
}

// Bytes per weight of each type (block bytes / block size), for the disk check.
const BPW = { f32: 4, f16: 2, bf16: 2, q8_0: 34 / 32, q4_0: 18 / 32, q4_1: 20 / 32, q5_0: 22 / 32, q5_1: 24 / 32, q2_k: 84 / 256, q3_k: 110 / 256, q4_k: 144 / 256, q5_k: 176 / 256, q6_k: 210 / 256 };
// parameters: [2-D weights outside the embedding tables, token + per-layer embedding tables]
const PARAMS = { tiny: [4.3e6, 1.6e6], benchlike: [20e6, 3e6], bench: [520e6, 44e6], e2b: [1876e6, 2752e6] };

function ensureModel(a, cli, t) {
  fs.mkdirSync(a.dir, { recursive: true });
  const file = path.join(a.dir, `${a.preset}-${t.key}.gguf`);
  if (fs.existsSync(file) && !a.regen) return file;
  const [pw, pe] = PARAMS[a.preset] ?? [0, 0];
  const need = pw * (BPW[t.type] ?? 4) + pe * (BPW[t.embd ?? t.type] ?? 4);
  const free = freeBytes(a.dir);
  if (need * 1.1 + 1e9 > free) throw new Error(`bench: ${file} needs about ${fmtMB(need)} and ${a.dir} has ${fmtMB(free)} free (keep 1 GB spare; --dir elsewhere)`);
  const tmp = `${file}.part`;
  const t0 = Date.now();
  try {
    run(cli, ['synth', '--preset', a.preset, '--type', t.type, ...(t.embd ? ['--embd-type', t.embd] : []), '-o', tmp]);
  } catch (e) {
    fs.rmSync(tmp, { force: true });
    throw e;
  }
  fs.renameSync(tmp, file);
  log(`  generated ${file} (${fmtMB(fs.statSync(file).size)}) in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
  return file;
}

const cleanError = (e) => String(e?.message ?? e).split('\n')[0].replace(/^page\.evaluate: /, '').replace(/^(\w*Error|OxError): /, '');

const withTimeout = (p, s, what) => Promise.race([p, new Promise((_, rej) => setTimeout(() => rej(new Error(`${what}: no answer in ${s} s`)), s * 1000).unref())]);

// A browser engine: a page in its own browser context (so its own renderer process).
async function webEngine(name, browser, server, marker, taken, a, modelUrl) {
  const context = await browser.newContext();
  const page = await context.newPage();
  page.on('console', (m) => { if (a.verbose || m.type() === 'error') log(`    [${name} ${m.type()}] ${m.text()}`); });
  page.on('pageerror', (e) => log(`    [${name} pageerror] ${e}`));
  let fetched, loaded, pid = null;
  const ev = (fn, arg) => withTimeout(page.evaluate(fn, arg), a.timeout_s, name);
  try {
    await page.goto(`${server.url}/`);
    await page.waitForFunction(() => window.benchReady === true);
    const source = name === 'web' ? a.source : 'blob';
    if (source === 'blob') fetched = await page.evaluate((u) => window.bench.fetchModel(u), modelUrl);
    loaded = await ev(([n, o]) => window.bench.load(n, o), [name === 'wllama' ? 'wllama' : 'oxinfer', { threads: a.threadsNow, nCtx: 1024, source, url: modelUrl }]);
    loaded.source = source;
  } catch (e) {
    await context.close().catch(() => {});
    throw e;
  }
  // its renderer: the not yet claimed one holding the most memory now (the model is in it)
  const cands = rendererPids(marker).filter((p) => !taken.has(p)).map((p) => ({ p, s: procStatus(p) })).filter((x) => x.s);
  cands.sort((x, y) => y.s.rss - x.s.rss);
  pid = cands[0]?.p ?? null;
  if (pid) taken.add(pid);
  loaded.renderer_pid = pid;
  return {
    name, fetched, loaded, pid,
    run: (p) => ev((q) => window.bench.run(q), p),
    async memory() {
      const m = await ev(() => window.bench.memory());
      if (name === 'wllama') {
        // llama.cpp's wasm memory lives in wllama's worker (page.mjs exposes its size there)
        let wasm = null;
        for (const w of page.workers()) {
          // (a pthread worker blocked in a wait never answers: bounded)
          const b = await withTimeout(w.evaluate(() => self.__oxWasmBytes?.() ?? null), 3, 'worker').catch(() => null);
          if (b) wasm = Math.max(wasm ?? 0, b);
        }
        m.wasm_bytes = wasm;
      }
      const st = pid ? procStatus(pid) : null;
      return { ...m, peak_rss: st?.hwm ?? null };
    },
    async close() {
      await withTimeout(page.evaluate(() => window.bench.unload()), 30, 'unload').catch(() => {});
      await context.close();
    },
  };
}

// Our wasm engine in Node, in a child process (tools/bench/node-engine.mjs).
async function nodeEngine(a, file) {
  const child = spawn(process.execPath, [path.join(ROOT, 'tools', 'bench', 'node-engine.mjs')], { cwd: ROOT, stdio: ['pipe', 'pipe', 'inherit'] });
  const waiting = [];
  readline.createInterface({ input: child.stdout }).on('line', (l) => {
    let m;
    try { m = JSON.parse(l); } catch { return log(`    [node] ${l}`); }
    waiting.shift()?.(m);
  });
  const exited = new Promise((res) => child.on('exit', (c) => res(c)));
  const call = (op, args = {}) => withTimeout(new Promise((resolve, reject) => {
    waiting.push((m) => (m.ok ? resolve(m.value) : reject(new Error(m.error))));
    child.stdin.write(JSON.stringify({ op, ...args }) + '\n');
  }), a.timeout_s, 'node engine');
  const fail = exited.then((c) => { throw new Error(`node engine exited (${c})`); });
  fail.catch(() => {});
  let loaded;
  try {
    loaded = await Promise.race([call('load', { file, threads: a.threadsNow, nCtx: 1024 }), fail]);
  } catch (e) {
    child.kill();
    throw e;
  }
  return {
    name: 'node', loaded,
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

// Our native CLI: one process per rep (`oxinfer run --bench`), peak RSS by /usr/bin/time.
function nativeEngine(a, cli, file) {
  const haveTime = fs.existsSync('/usr/bin/time');
  let last = null;
  const loads = [];
  return {
    name: 'native', loaded: null, loads,
    async run(p) {
      const args = ['run', file, '--bench', '--json', '--threads', String(a.threadsNow), '--n-prompt', String(p.tokens.length), '--n-gen', String(p.nGen)];
      const [cmd, argv] = haveTime ? ['/usr/bin/time', ['-f', 'maxrss_kb=%M', cli, ...args]] : [cli, args];
      const out = await new Promise((resolve, reject) => {
        const c = spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
        let so = '', se = '';
        c.stdout.on('data', (d) => (so += d));
        c.stderr.on('data', (d) => (se += d));
        c.on('exit', (code) => (code === 0 ? resolve({ so, se }) : reject(new Error(`oxinfer run --bench: exit ${code}: ${se.trim().split('\n').pop()}`))));
      });
      const j = JSON.parse(out.so.trim().split('\n').pop());
      const rss = /maxrss_kb=(\d+)/.exec(out.se);
      last = { resident_bytes: j.resident_bytes, peak_rss: rss ? Number(rss[1]) * 1024 : null };
      loads.push(j.load_s * 1000);
      return { prefill_tps: j.prefill_tok_s, decode_tps: j.decode_tok_s, prompt_n: j.n_prompt, decode_n: j.n_gen, load_ms: j.load_s * 1000 };
    },
    memory: async () => last ?? {},
    close: async () => {},
  };
}

// ---- one model file at one thread count ----

async function benchConfig(a, ctx, t, file, threads) {
  a.threadsNow = threads;
  const meta = modelMeta(file);
  const engines = [];
  const errors = {};
  const open = async (name, make) => {
    if (!a.engines.has(name)) return;
    try {
      const e = await make();
      engines.push(e);
      log(`  ${name}: loaded in ${fmtS(e.loaded?.load_ms)}${e.loaded?.build ? ` (${e.loaded.build} build, ${e.loaded.threads} threads)` : ''}`);
    } catch (e) {
      errors[name] = cleanError(e);
      log(`  ${name}: LOAD FAILED: ${errors[name]}`);
    }
  };
  const modelUrl = ctx.urlOf?.(file);
  await open('web', () => webEngine('web', ctx.browser, ctx.server, ctx.marker, ctx.taken, a, modelUrl));
  const bytes = fs.statSync(file).size;
  // wllama copies the whole file into its wasm memory, with the Blob beside it
  const wllamaNeeds = 2 * bytes + 1e9;
  if (a.engines.has('wllama') && a.e2b && os.freemem() < wllamaNeeds) {
    errors.wllama = `skipped: needs about ${fmtMB(wllamaNeeds)} of memory (the ${fmtMB(bytes)} file in wasm memory plus its Blob), ${fmtMB(os.freemem())} available`;
    log(`  wllama: ${errors.wllama}`);
  } else await open('wllama', () => webEngine('wllama', ctx.browser, ctx.server, ctx.marker, ctx.taken, a, modelUrl));
  await open('node', () => nodeEngine(a, file));
  if (a.engines.has('native')) engines.push(nativeEngine(a, ctx.cli, file));

  const runs = Object.fromEntries(engines.map((e) => [e.name, []]));
  const live = new Set(engines);
  for (let r = -a.warmup; r < a.reps; r++) {
    const p = { ...prompt(meta, a.n_prompt, 1000 + r + 17 * threads), nGen: a.n_gen };
    // a native rep is a new process: nothing of it to warm up
    const order = engines.filter((e) => live.has(e) && !(r < 0 && e.name === 'native'));
    const n = order.length || 1, k = ((r % n) + n) % n;
    for (const e of [...order.slice(k), ...order.slice(0, k)]) {
      try {
        const x = await e.run(p);
        if (r >= 0) runs[e.name].push(x);
        log(`  ${r < 0 ? 'warm-up' : `rep ${r + 1}/${a.reps}`} ${e.name.padEnd(6)} prefill ${x.prefill_tps.toFixed(2)} tok/s (${x.prompt_n}), decode ${x.decode_tps.toFixed(2)} tok/s (${x.decode_n})`);
      } catch (err) {
        errors[e.name] = cleanError(err);
        log(`  ${e.name}: RUN FAILED: ${errors[e.name]}`);
        live.delete(e);
      }
    }
  }
  const out = { type: t.label, key: t.key, file, bytes: fs.statSync(file).size, threads, engines: {}, errors };
  for (const e of engines) {
    let mem = {};
    try { mem = await e.memory(); } catch (err) { mem = { error: err.message }; }
    const loadMs = e.name === 'native' ? summary(e.loads) : summary([e.loaded?.load_ms]);
    out.engines[e.name] = { runs: runs[e.name], loaded: e.loaded, fetched: e.fetched, mem, load: loadMs,
      prefill: summary(runs[e.name].map((x) => x.prefill_tps)), decode: summary(runs[e.name].map((x) => x.decode_tps)) };
    await e.close().catch(() => {});
  }
  return out;
}

// ---- report ----

const ENGINE = {
  web: 'oxinfer (wasm, Chromium)',
  wllama: 'wllama (wasm, Chromium)',
  node: 'oxinfer (wasm, Node)',
  native: 'oxinfer (native CLI)',
};

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
    for (const name of ['web', 'wllama', 'node', 'native']) {
      const e = c.engines[name];
      if (!e && !c.errors[name]) continue;
      const label = name === 'web' && e?.loaded?.build ? ENGINE.web.replace('wasm', `wasm ${e.loaded.build}`)
        : name === 'wllama' ? ENGINE.wllama.replace('wllama', `wllama ${wllamaVersion}`) : ENGINE[name];
      if (!e || !e.runs.length) {
        rows.push({ engine: label, weights: `${c.type} ${fmtMB(c.bytes)}`, threads: c.threads, mem: `failed: ${c.errors[name] ?? 'no runs'}`.replace(/\|/g, '/'), prefill: null, decode: null });
        continue;
      }
      rows.push({ engine: label, weights: `${c.type} ${fmtMB(c.bytes)}`, threads: c.threads, load: e.load, prefill: e.prefill, decode: e.decode,
        mem: memText(name, e.mem), ref: name !== 'wllama' && w?.runs.length ? w : null });
    }
  }
  return rows;
}

function machine(ctx) {
  const cpus = os.cpus();
  return {
    cpu: `${cpus[0]?.model ?? '?'} × ${cpus.length}`, load: os.loadavg().map((x) => x.toFixed(2)).join(' '), memory: fmtMB(os.totalmem()), os: `${os.type()} ${os.release()}`, node: process.version,
    chromium: ctx.chromiumVersion ?? '–', wllama: ctx.wllamaVersion,
    wasm: (() => { try { return fs.statSync(path.join(ROOT, 'dist', 'oxinfer-mt.wasm')).mtime.toISOString().replace(/\.\d+Z$/, 'Z'); } catch { return '–'; } })(),
    commit: (() => { try { return execFileSync('git', ['-C', ROOT, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim() + (execFileSync('git', ['-C', ROOT, 'status', '--porcelain', '--untracked-files=no'], { encoding: 'utf8' }).trim() ? ' (+ uncommitted changes)' : ''); } catch { return '?'; } })(),
  };
}

function section(a, ctx, results, started) {
  const m = machine(ctx);
  const cmd = `npm run bench${process.argv.length > 2 ? ' -- ' + process.argv.slice(2).join(' ') : ''}`;
  const rows = tableRows(results, ctx.wllamaVersion);
  const lines = [
    `Run ${started.toISOString().replace(/\.\d+Z$/, 'Z')} with \`${cmd}\` (${a.reps} reps after ${a.warmup} warm-up, ${a.n_prompt}-token prompt, ${a.n_gen} greedy tokens).`,
    '',
    `Machine: ${m.cpu}, ${m.memory} RAM, ${m.os}; Node ${m.node}; ${ctx.chromiumVersion ? `Chromium ${m.chromium} headless; ` : ''}@wllama/wllama ${m.wllama}; oxinfer-web commit ${m.commit}, dist/ wasm built ${m.wasm}, native CLI ${path.relative(ROOT, ctx.cli)}. ` +
      `Load average at the start ${ctx.loadStart}, at the end ${m.load} (other work on the machine slows every engine, wllama's spinning threads most).`,
    '',
    markdownTable(rows),
    '',
  ];
  if (a.e2b) {
    for (const c of results) {
      const ours = c.engines.node ?? c.engines.web ?? c.engines.native;
      const res = ours?.mem?.resident_bytes;
      if (Number.isFinite(res)) lines.push(`Our engine keeps ${fmtMB(res)} resident (weights + KV cache) for this ${fmtMB(c.bytes)} file; the per-layer embedding table stays on the host. ` +
        (c.engines.wllama?.runs.length ? `wllama held ${fmtMB(c.engines.wllama.mem?.wasm_bytes)} of wasm memory.` : `wllama loads the whole file into wasm memory, so it would need at least ${fmtMB(c.bytes)}${c.errors.wllama ? ` (${c.errors.wllama})` : ''}.`), '');
    }
  }
  return lines.join('\n');
}

const DOC_HEAD = `# Benchmarks

Regenerated by \`npm run bench\` (tools/bench.mjs); edit the tool, not the tables.

What runs: synthetic Gemma 4 models made by our own generator (\`oxinfer synth\`, cached
outside the repo in \`$OX_BENCH_DIR\` or \`~/.cache/oxinfer-bench\`). The \`bench\` preset has the
Gemma 4 E2B shapes (hidden 1536, 8 query / 1 KV heads, head 256 sliding / 512 full, FFN 6144,
12288 on KV-shared layers, per-layer embeddings 256, window 512) cut to 10 layers
(\`S S S S F S* S* S* S* F*\`) and a vocabulary of 8192; \`--e2b\` uses the real E2B geometry
(35 layers, vocabulary 262144). Random weights: the speed is what matters, not the text.

How: our wasm engine (\`js/index.js\` \`loadModel\` + \`generate\`, threaded build in a
cross-origin-isolated page) and wllama 3.8.1 (llama.cpp in wasm, memory64 + JSPI build) run in
the same headless Chromium, each page in its own browser context, both loading the same file
from an in-memory Blob (the fetch from the local server is not in the load time; with \`--e2b\`
our page reads the served file by HTTP Range requests instead, load time included, because
this Chromium cannot hold a 2.6 GB Blob — which is also why wllama cannot load that file here).
Our engine
also runs in Node (the same wasm through the same API, file read from disk), and our native CLI
(\`oxinfer run --bench\`, one process per rep) gives the native figure. Per model and thread
count every engine is loaded once, runs one warm-up generation, then the reps interleave the
engines; each rep is a new prompt (BOS + 63 ids, the same ids for every engine), prefilled whole
(no cache reuse), then greedy generation with end-of-sequence ignored. Rates are each engine's
own timers: ours \`GenerationStats.prefillTokPerSec / decodeTokPerSec\`, wllama llama.cpp's
\`timings\` (\`prompt_ms\`, \`predicted_ms\`), native the CLI's JSON. Table cells: median
[min–max] over the reps; load is one load per row (native: median over its per-rep processes).

Memory: \`performance.measureUserAgentSpecificMemory\` is not available to these pages, so
"peak memory" is the peak resident set (VmHWM from /proc) of the process that runs the engine
— the page's renderer process (which holds its workers and wasm memory; the model Blob lives in
the browser process and is not counted), the Node child process, or the native process
(/usr/bin/time) — and, in brackets, the size of the engine's wasm memory at the end
(\`WebAssembly.Memory\` buffer byteLength: ours from \`model.stats().wasmMemoryBytes\`,
wllama's read from its worker) or, native, our weights + KV cache bytes. The ratio column is
ours / wllama for the same file and thread count (above 1: ours is faster).
`;

function writeDoc(file, mode, body) {
  let text = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '';
  // the head is rewritten, the sections after it are kept (each mode replaces its own)
  const keep = text.indexOf('<!-- bench:');
  text = DOC_HEAD + (keep >= 0 ? `\n${text.slice(keep)}` : '');
  const title = mode === 'e2b' ? '## E2B geometry (`npm run bench -- --e2b`)' : '## Bench preset (`npm run bench`)';
  const block = `<!-- bench:${mode} -->\n${title}\n\n${body}\n<!-- /bench:${mode} -->\n`;
  const re = new RegExp(`<!-- bench:${mode} -->[\\s\\S]*?<!-- /bench:${mode} -->\\n?`);
  if (re.test(text)) text = text.replace(re, block);
  else if (mode === 'main' && text.includes('<!-- bench:e2b -->')) text = text.replace('<!-- bench:e2b -->', `${block}\n<!-- bench:e2b -->`);
  else text = `${text.trimEnd()}\n\n${block}`;
  writeAtomic(file, text);
}

// ---- main ----

async function main() {
  const a = parseArgs(process.argv.slice(2));
  const started = new Date();
  const loadStart = os.loadavg().map((x) => x.toFixed(2)).join(' ');
  const types = a.types.map(parseType);
  const cli = ensureCli();
  if (a.engines.has('web') || a.engines.has('node')) ensureWasm();
  const files = types.map((t) => ensureModel(a, cli, t));

  const ctx = { cli, loadStart, taken: new Set(), marker: `--oxbench-marker=${process.pid}-${Date.now()}` };
  ctx.wllamaVersion = JSON.parse(fs.readFileSync(require.resolve('@wllama/wllama/package.json'), 'utf8')).version;
  const web = a.engines.has('web') || a.engines.has('wllama');
  if (web) {
    const urls = new Map(files.map((f, i) => [f, `/model/${i}/${path.basename(f)}`]));
    ctx.urlOf = (f) => urls.get(f);
    ctx.server = await startServer({
      files: { '/': path.join(ROOT, 'tools', 'bench', 'page.html'), ...Object.fromEntries([...urls].map(([f, u]) => [u, f])) },
      mounts: {
        '/bench/': path.join(ROOT, 'tools', 'bench'),
        '/js/': path.join(ROOT, 'js'),
        '/dist/': path.join(ROOT, 'dist'),
        '/wllama/': path.dirname(require.resolve('@wllama/wllama/package.json')),
        '/node_modules/@huggingface/jinja/': path.dirname(path.dirname(require.resolve('@huggingface/jinja'))),
      },
    });
    // a fresh browser per configuration: every engine page gets a new renderer process, so its
    // peak RSS is its own
    const { chromium } = require('playwright-core');
    ctx.launch = async () => {
      ctx.taken = new Set();
      ctx.browser = await chromium.launch({
        executablePath: a.chromium, headless: true,
        args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update',
          '--disable-features=SpareRendererForSitePerProcess', ctx.marker],
      });
      ctx.chromiumVersion = ctx.browser.version();
    };
  }
  const results = [];
  const total = types.length * a.threads.length;
  const jsonFile = a.json ?? path.join(a.dir, `results-${a.e2b ? 'e2b' : a.preset}-${started.toISOString().replace(/[:.]/g, '-')}.json`);
  // written after every configuration, so an interrupted run still leaves its figures
  const report = () => {
    const partial = results.length < total ? `\n_Partial: ${results.length} of ${total} configurations finished._\n` : '';
    const body = section(a, ctx, results, started) + partial;
    writeAtomic(jsonFile, JSON.stringify({ args: { ...a, engines: [...a.engines] }, started, machine: machine(ctx), results }, null, 1));
    if (a.write) writeDoc(a.doc, a.e2b ? 'e2b' : 'main', body);
    return body;
  };
  try {
    for (const [i, t] of types.entries()) {
      for (const threads of a.threads) {
        log(`\n== ${a.preset} ${t.label} (${fmtMB(fs.statSync(files[i]).size)}), ${threads} thread${threads > 1 ? 's' : ''}`);
        if (web) await ctx.launch();
        try {
          results.push(await benchConfig(a, ctx, t, files[i], threads));
        } finally {
          await ctx.browser?.close();
          ctx.browser = null;
        }
        report();
      }
    }
  } finally {
    ctx.server?.close();
  }
  log(`\n${report()}`);
  log(`raw results: ${jsonFile}`);
  if (a.write) log(`wrote ${path.relative(process.cwd(), a.doc)}`);
}

main().catch((e) => {
  console.error(e.message ?? e);
  process.exit(1);
});
