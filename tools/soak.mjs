#!/usr/bin/env node
// soak.mjs — `npm run soak`: a long chat session (tools/soak/session.mjs) on our wasm engine in
// Node and in headless Chromium, the model read over HTTP from a local server, with wasm
// memory, process RSS (Node: this process; Chromium: the page's renderer) and tokens/s sampled
// over time. It checks what a long session must not do: wasm memory growing once the KV cache
// is at its full size (the second half of the run may not grow it at all), RSS growing past
// the first half's peak by more than --rss-slack MB, decode slowing down (the last fifth's
// median tok/s against the second fifth's, below --slowdown). Exit code 1 if a check fails.
//
//   node tools/soak.mjs [--turns 500] [--gen 200] [--ctx 2048] [--threads 2] [--every 10]
//                       [--engines node,chromium] [--model FILE] [--json FILE]
//   node tools/soak.mjs --load FILE [--reps 2] [--engines node,chromium] [--threads 2]
//        load time and peak RSS of a model loaded from a URL (HTTP Range reads), per engine
//   node tools/soak.mjs --from FILE.json   print the checks and the per-fifth figures of a
//        saved run (--json) again
//
// The default model is a small synthetic Gemma 4 (our generator, `oxinfer synth`; build/oxinfer
// or $OX_CLI) cached in $OX_BENCH_DIR or ~/.cache/oxinfer-bench.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { startServer, demoMounts, ROOT } from './serve.mjs';
import { procStatus, rendererPids, median, fmtMB } from './bench/lib.mjs';
import { chatSoak } from './soak/session.mjs';

const require = createRequire(import.meta.url);
const SHAPE = [
  '--hidden',
  '256',
  '--layers',
  '4',
  '--heads',
  '4',
  '--kv-heads',
  '2',
  '--head-dim',
  '64',
  '--global-head-dim',
  '128',
  '--ffn',
  '512',
  '--ple',
  '32',
  '--vocab',
  '1024',
  '--user-tokens',
  '8',
  '--swa-period',
  '2',
  '--kv-shared',
  '0',
  '--window',
  '256',
  '--ctx',
  '4096',
  '--all-byte-tokens',
];

function args(argv) {
  const a = {
    turns: 500,
    gen: 200,
    ctx: 2048,
    threads: 2,
    every: 10,
    engines: 'node,chromium',
    model: null,
    json: null,
    load: null,
    reps: 2,
    from: null,
    rss_slack: 64,
    slowdown: 0.8,
    chromium: process.env.CHROMIUM || '/usr/bin/chromium',
  };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i].replace(/^--/, '').replace(/-/g, '_');
    if (!(k in a)) throw new Error(`soak: unknown option ${argv[i]}`);
    const v = argv[++i];
    a[k] = typeof a[k] === 'number' ? Number(v) : v;
  }
  a.engines = new Set(String(a.engines).split(','));
  return a;
}

function defaultModel() {
  const dir = process.env.OX_BENCH_DIR || path.join(os.homedir(), '.cache', 'oxinfer-bench');
  fs.mkdirSync(dir, { recursive: true });
  const out = path.join(dir, 'soak-q8_0.gguf');
  if (!fs.existsSync(out)) {
    const cli = process.env.OX_CLI || path.join(ROOT, 'build', 'oxinfer');
    const r = spawnSync(cli, ['synth', '--preset', 'tiny', '--type', 'q8_0', ...SHAPE, '-o', out], {
      stdio: 'inherit',
    });
    if (r.status !== 0) throw new Error(`soak: ${cli} synth failed`);
  }
  return out;
}

const log = (s) => process.stderr.write(s + '\n');

// an engine: {load(url, opts) -> info, run(o, onSample) -> totals, rss() -> {rss, hwm}, close()}
async function nodeEngine() {
  const { loadModel } = await import('../js/main/index.js');
  let model = null;
  return {
    async load(url, opts) {
      const t0 = performance.now();
      model = await loadModel({ url, name: path.basename(url) }, opts);
      const s = await model.stats();
      return {
        load_ms: performance.now() - t0,
        build: model.build,
        threads: model.threads,
        wasmMemoryBytes: s.wasmMemoryBytes,
        residentBytes: s.residentBytes,
      };
    },
    run: (o, onSample) => chatSoak(model, { ...o, onSample }),
    rss: () => procStatus(process.pid),
    close: () => model?.unload(),
  };
}

async function chromiumEngine(a, server) {
  const { chromium } = require('playwright-core');
  const marker = `--oxsoak-marker=${process.pid}-${Date.now()}`;
  const browser = await chromium.launch({
    executablePath: a.chromium,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-features=SpareRendererForSitePerProcess',
      marker,
    ],
  });
  const page = await (await browser.newContext()).newPage();
  page.on('console', (m) => m.type() === 'error' && log(`  [chromium] ${m.text()}`));
  page.on('pageerror', (e) => log(`  [chromium pageerror] ${e}`));
  let onSample = null;
  await page.exposeFunction('oxSample', (s) => onSample?.(s));
  // the bench's page (import map, isolation); the soak's own calls are added to it
  await page.goto(`${server.url}/`);
  await page.waitForFunction(() => window.benchReady === true);
  await page.evaluate(async () => {
    const { loadModel } = await import('/js/main/index.js');
    const { chatSoak } = await import('/soak/session.mjs');
    let model = null;
    window.soak = {
      async load(url, opts) {
        const t0 = performance.now();
        model = await loadModel({ url, name: url.split('/').pop() }, opts);
        const s = await model.stats();
        return {
          load_ms: performance.now() - t0,
          build: model.build,
          threads: model.threads,
          wasmMemoryBytes: s.wasmMemoryBytes,
          residentBytes: s.residentBytes,
        };
      },
      run: (o) => chatSoak(model, { ...o, onSample: (x) => window.oxSample(x) }),
      unload: () => model?.unload(),
    };
  });
  let pid = null;
  return {
    async load(url, opts) {
      const info = await page.evaluate(([u, o]) => window.soak.load(u, o), [url, opts]);
      // the renderer holding the model: the largest one
      pid =
        rendererPids(marker)
          .map((p) => ({ p, s: procStatus(p) }))
          .filter((x) => x.s)
          .sort((x, y) => y.s.rss - x.s.rss)[0]?.p ?? null;
      return info;
    },
    async run(o, f) {
      onSample = f;
      return page.evaluate((q) => window.soak.run(q), o);
    },
    rss: () => (pid ? procStatus(pid) : null),
    async close() {
      await page.evaluate(() => window.soak.unload()).catch(() => {});
      await browser.close();
    },
  };
}

async function serve(file) {
  const url = `/model/${path.basename(file)}`;
  const mounts = {
    ...demoMounts(),
    '/soak/': path.join(ROOT, 'tools', 'soak'),
    '/bench/': path.join(ROOT, 'tools', 'bench'),
  };
  return startServer({ files: { [url]: file, '/': path.join(ROOT, 'tools', 'bench', 'page.html') }, mounts }).then(
    (s) => ({ s, url: `${s.url}${url}` }),
  );
}

const open = (name, a, server) => (name === 'node' ? nodeEngine() : chromiumEngine(a, server));

// ---- soak ----

function verdict(a, info, samples) {
  const half = samples.filter((s) => s.turn >= a.turns / 2);
  const first = samples.filter((s) => s.turn < a.turns / 2);
  const maxWasm = (xs) => Math.max(...xs.map((s) => s.wasmMemoryBytes));
  const maxRss = (xs) => Math.max(...xs.map((s) => s.rss ?? 0));
  // decode speed: the second fifth (past the warm-up) against the last fifth
  const fifth = (k) =>
    samples
      .filter((s) => s.turn >= (k * a.turns) / 5 && s.turn < ((k + 1) * a.turns) / 5)
      .map((s) => s.decodeTokPerSec);
  const early = median(fifth(1)),
    late = median(fifth(4));
  const speedOk = !(Number.isFinite(early) && Number.isFinite(late)) || late >= a.slowdown * early; // too few samples: not judged
  const checks = [
    [
      'wasm memory does not grow in the second half',
      maxWasm(half) <= maxWasm(first),
      `${fmtMB(maxWasm(first))} -> ${fmtMB(maxWasm(half))}`,
    ],
    [
      `RSS grows by at most ${a.rss_slack} MB in the second half`,
      maxRss(half) <= maxRss(first) + a.rss_slack * 1e6,
      `${fmtMB(maxRss(first))} -> ${fmtMB(maxRss(half))}`,
    ],
    [
      `decode tok/s of the last fifth >= ${a.slowdown} x the second fifth`,
      speedOk,
      `${early.toFixed(1)} -> ${late.toFixed(1)} tok/s`,
    ],
  ];
  const kv = samples.at(-1).residentBytes - info.residentBytes;
  return { checks, kv, early, late };
}

async function soakOne(name, a, server, url) {
  const e = await open(name, a, server);
  const samples = [];
  const t0 = performance.now();
  try {
    const info = await e.load(url, { threads: a.threads, maxContext: a.ctx });
    log(
      `${name}: loaded in ${(info.load_ms / 1000).toFixed(2)} s (${info.build}, ${info.threads} threads), wasm ${fmtMB(info.wasmMemoryBytes)}`,
    );
    const totals = await e.run({ turns: a.turns, gen: a.gen, ctx: a.ctx, every: a.every }, (s) => {
      const r = e.rss();
      s.rss = r?.rss ?? null;
      s.seconds = (performance.now() - t0) / 1000;
      samples.push(s);
      log(
        `  ${name} turn ${s.turn}: ${s.generated} tokens, ${s.decodeTokPerSec.toFixed(1)} tok/s, ctx ${s.contextTokens}, truncations ${s.truncations}, wasm ${fmtMB(s.wasmMemoryBytes)}, rss ${fmtMB(s.rss)}`,
      );
    });
    const v = verdict(a, info, samples);
    return { name, info, totals, samples, ...v, seconds: (performance.now() - t0) / 1000 };
  } finally {
    await e.close();
  }
}

// ---- load ----

async function loadOne(name, a, server, url) {
  const out = [];
  for (let r = 0; r < a.reps; r++) {
    const e = await open(name, a, server);
    try {
      const info = await e.load(url, { threads: a.threads, maxContext: 1024 });
      const st = e.rss();
      out.push({ load_ms: info.load_ms, wasm: info.wasmMemoryBytes, peak_rss: st?.hwm ?? null });
      log(
        `${name} rep ${r}: load ${(info.load_ms / 1000).toFixed(2)} s, wasm ${fmtMB(info.wasmMemoryBytes)}, peak RSS ${fmtMB(st?.hwm)}`,
      );
    } finally {
      await e.close();
    }
  }
  return { name, reps: out };
}

// the session in fifths of its turns: decode tok/s (median of the samples), wasm memory and RSS (max)
function fifths(turns, samples) {
  return [0, 1, 2, 3, 4].map((k) => {
    const xs = samples.filter((s) => s.turn >= (k * turns) / 5 && s.turn < ((k + 1) * turns) / 5);
    const max = (f) => Math.max(...xs.map(f));
    return `turns ${Math.ceil((k * turns) / 5)}-${Math.ceil(((k + 1) * turns) / 5) - 1}: decode ${median(xs.map((s) => s.decodeTokPerSec)).toFixed(0)} tok/s, wasm ${fmtMB(max((s) => s.wasmMemoryBytes))}, RSS ${fmtMB(max((s) => s.rss ?? 0))}, at ${max((s) => s.seconds).toFixed(0)} s`;
  });
}

function print(report) {
  const a = report.args;
  let ok = true;
  for (const r of report.results) {
    if (!r.checks) {
      log(
        `${r.name}: load ${r.reps.map((x) => (x.load_ms / 1000).toFixed(2) + ' s').join(', ')}; peak RSS ${r.reps.map((x) => fmtMB(x.peak_rss)).join(', ')} for wasm ${fmtMB(r.reps[0].wasm)}`,
      );
      continue;
    }
    log(
      `${r.name}: ${r.totals.generated} tokens in ${a.turns} turns, ${r.totals.truncations} truncations, ${r.totals.reused} prompt tokens reused from the cache, ${r.totals.prefilled} prefilled, ${r.seconds.toFixed(0)} s; KV cache ${fmtMB(r.kv)}`,
    );
    for (const line of fifths(a.turns, r.samples)) log(`  ${line}`);
    for (const [what, pass, detail] of r.checks) {
      log(`  ${pass ? 'ok  ' : 'FAIL'} ${what}: ${detail}`);
      ok &&= pass;
    }
  }
  log(`load average ${report.started_load_avg} -> ${report.end_load_avg} (${report.cores} cores)`);
  return ok;
}

async function main() {
  const a = args(process.argv.slice(2));
  if (a.from) return void (process.exitCode = print(JSON.parse(fs.readFileSync(a.from, 'utf8'))) ? 0 : 1);
  const file = a.load ?? a.model ?? defaultModel();
  const { s: server, url } = await serve(file);
  const results = [];
  const load = os.loadavg()[0].toFixed(2);
  try {
    // Node's RSS is this process's: run it in a child of its own for --load (the peak must be the engine's)
    for (const name of ['node', 'chromium'].filter((n) => a.engines.has(n))) {
      if (a.load && name === 'node' && !process.env.OX_SOAK_CHILD) {
        const r = spawnSync(
          process.execPath,
          [process.argv[1], ...process.argv.slice(2), '--engines', 'node', '--json', '-'],
          { env: { ...process.env, OX_SOAK_CHILD: '1' }, stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' },
        );
        if (r.status !== 0) throw new Error('soak: the Node load run failed');
        results.push(...JSON.parse(r.stdout).results);
        continue;
      }
      results.push(await (a.load ? loadOne : soakOne)(name, a, server, url));
    }
  } finally {
    server.close();
  }
  const report = {
    started_load_avg: load,
    end_load_avg: os.loadavg()[0].toFixed(2),
    cores: os.cpus().length,
    file: path.basename(file),
    args: { ...a, engines: [...a.engines] },
    results,
  };
  if (a.json === '-') return void process.stdout.write(JSON.stringify(report));
  if (a.json) fs.writeFileSync(a.json, JSON.stringify(report, null, 1));
  process.exitCode = print(report) ? 0 : 1;
}

main().catch((e) => {
  console.error(e.stack ?? e);
  process.exit(1);
});
