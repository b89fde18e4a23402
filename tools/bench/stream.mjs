#!/usr/bin/env node
// stream.mjs — `npm run bench:stream`: models larger than wasm32 memory, run by leaving weights
// on the host (loadModel {streamWeights, weightCache}, src/model/weights_cache.h), in the wasm
// engine under Node (threaded build). Written to docs/benchmarks.md between the `bench:stream`
// markers.
//
//   1. the 26B-A4B geometry (synthetic Q4_0, 128 experts, top 8; ~14 GB file) with the routed
//      experts streamed, under a memory budget (maxResident: weights + weight cache), decode
//      tok/s against the expert-cache size;
//   2. the E4B geometry in Q8_0 (~4.9 GB of weights, more than wasm32 can hold next to its
//      table) with every layer weight streamed through a cache that keeps part of them.
//
// The models are made with `oxinfer synth` (the flags below) when missing; that takes a while.
//   options: --threads 2  --n-gen 8  --prompt 4 (tokens)  --budget 3 (GiB, 26B)  --caches 0.5,1,1.5 (GiB)
//            --e4b-cache 2 (GiB)  --dir DIR ($OX_BENCH_DIR or ~/.cache/oxinfer-bench)  --only a26b,e4b
//            --browser: the 26B run in headless Chromium too (HTTP Range reads of the served file,
//            cache --browser-cache 1 GiB)
//            --a26b FILE / --e4b FILE (another model file instead)  --no-write  --doc FILE
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { loadModel } from '../../js/main/index.js';
import { cli } from '../../tests/oracle/fixtures.mjs';
import { writeAtomic } from './lib.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const args = Object.fromEntries(
  process.argv
    .slice(2)
    .join(' ')
    .split('--')
    .filter(Boolean)
    .map((s) => s.trim().split(/\s+/))
    .map(([k, v]) => [k, v ?? true]),
);
const THREADS = Number(args.threads ?? 2);
const N_GEN = Number(args['n-gen'] ?? 8);
const N_PROMPT = Number(args.prompt ?? 4);
const GiB = 2 ** 30;
const BUDGET = Math.round(Number(args.budget ?? 3) * GiB);
const CACHES = String(args.caches ?? '0.5,1,1.5')
  .split(',')
  .map((x) => Math.round(Number(x) * GiB));
const E4B_CACHE = Math.round(Number(args['e4b-cache'] ?? 2) * GiB);
const BROWSER_CACHE = Math.round(Number(args['browser-cache'] ?? 1) * GiB);
const ONLY = args.only ? String(args.only).split(',') : ['a26b', 'e4b'];
const DIR = args.dir ?? process.env.OX_BENCH_DIR ?? path.join(os.homedir(), '.cache', 'oxinfer-bench');
const DOC = args.doc ?? path.join(ROOT, 'docs', 'benchmarks.md');

// the released geometries (docs/gemma4.md §1.3), random weights
const MODELS = {
  a26b: [
    'a26b-q4_0',
    [
      '--preset',
      'moe',
      '--type',
      'q4_0',
      '--embd-type',
      'q4_0',
      '--hidden',
      '2816',
      '--layers',
      '30',
      '--heads',
      '16',
      '--kv-heads',
      '8',
      '--head-dim',
      '256',
      '--global-head-dim',
      '512',
      '--ffn',
      '2112',
      '--k-eq-v',
      '2',
      '--experts',
      '128',
      '--top-k',
      '8',
      '--moe-ffn',
      '704',
      '--vocab',
      '262144',
      '--user-tokens',
      '4096',
      '--window',
      '1024',
      '--swa-period',
      '6',
      '--kv-shared',
      '0',
      '--ctx',
      '262144',
    ],
  ],
  e4b: [
    'e4b-q8_0',
    [
      '--preset',
      'e2b',
      '--type',
      'q8_0',
      '--hidden',
      '2560',
      '--layers',
      '42',
      '--heads',
      '8',
      '--kv-heads',
      '2',
      '--ffn',
      '10240',
      '--no-double-wide',
      '--kv-shared',
      '18',
      '--swa-period',
      '6',
    ],
  ],
};

function modelFile(key) {
  if (args[key]) return args[key];
  const [name, flags] = MODELS[key];
  const file = path.join(DIR, `${name}.gguf`);
  if (!fs.existsSync(file)) {
    console.error(`writing ${file} (oxinfer synth ${flags.join(' ')})`);
    cli(['synth', ...flags, '-o', file]);
  }
  return file;
}

const markdownTable = (head, rows) =>
  [head, head.map(() => '---'), ...rows].map((r) => `| ${r.join(' | ')} |`).join('\n');
const gb = (x) => (x / 1e9).toFixed(2);
const fmt = (x, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : '—');

// one load, a greedy generation; what it cost and what the cache did
async function measure(file, opts) {
  const t0 = performance.now();
  const model = await loadModel(file, { threads: THREADS, maxContext: 256, ...opts });
  const loadMs = performance.now() - t0;
  const before = await model.stats();
  const prompt = [2, ...Array.from({ length: N_PROMPT - 1 }, (_, i) => (300 + 37 * i) % model.info.vocab)];
  let stats = null;
  for await (const ev of model.generate(prompt, { temperature: 0, maxTokens: N_GEN, stopIds: [], speculative: false }))
    if (ev.stats) stats = ev.stats;
  const after = await model.stats();
  await model.unload();
  const fetches = after.streamHits + after.streamMisses - before.streamHits - before.streamMisses;
  return {
    loadMs,
    prefillTps: stats.prefillTokPerSec,
    decodeTps: stats.decodeTokPerSec,
    steps: stats.decodeSteps,
    streamedPerToken: (after.streamBytes - before.streamBytes) / (stats.prefillTokens + stats.decodeSteps),
    hitRate: fetches ? (after.streamHits - before.streamHits) / fetches : NaN,
    resident: after.residentBytes,
    wasm: after.wasmMemoryBytes,
    size: fs.statSync(file).size,
  };
}

// what loading it whole would take: the load refuses before allocating (maxResident), naming it
async function residentNeed(file, limit) {
  try {
    const m = await loadModel(file, { threads: 1, maxResident: limit });
    await m.unload();
    return 'less (it fits)';
  } catch (e) {
    const n = /needs (\d+) bytes/.exec(e.message)?.[1];
    return n ? `${gb(Number(n))} GB` : e.message;
  }
}

async function a26b() {
  const file = modelFile('a26b');
  const need = await residentNeed(file, BUDGET);
  const rows = [];
  for (const weightCache of CACHES) {
    const r = await measure(file, { streamWeights: 'experts', weightCache, maxResident: BUDGET });
    console.error('a26b', weightCache / GiB, r);
    rows.push([
      fmt(weightCache / GiB, 1),
      fmt(r.decodeTps),
      fmt(r.prefillTps),
      fmt(100 * r.hitRate, 0),
      gb(r.streamedPerToken),
      gb(r.resident),
      gb(r.wasm),
      fmt(r.loadMs / 1000, 1),
    ]);
  }
  return { file, rows, need };
}

// the same in a page: the package reads the served file by HTTP Range requests (js/host/hostfile.js)
async function a26bBrowser() {
  const file = modelFile('a26b');
  const { startServer, demoMounts } = await import('../serve.mjs');
  const blank = path.join(os.tmpdir(), `oxstream-${process.pid}.html`);
  fs.writeFileSync(blank, '<!doctype html><meta charset="utf-8"><title>bench:stream</title>');
  const server = await startServer({ files: { '/blank.html': blank, '/model/a26b.gguf': file }, mounts: demoMounts() });
  const { chromium } = createRequire(import.meta.url)('playwright-core');
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu'],
  });
  try {
    const page = await browser.newPage();
    await page.goto(`${server.url}/blank.html`);
    const r = await page.evaluate(
      async (o) => {
        const { loadModel } = await import('/js/main/index.js');
        const t0 = performance.now();
        const model = await loadModel(
          { url: o.url, name: 'a26b-q4_0.gguf' },
          {
            threads: o.threads,
            maxContext: 256,
            streamWeights: 'experts',
            weightCache: o.cache,
            maxResident: o.budget,
            simd: 'simd128',
          },
        );
        const loadMs = performance.now() - t0;
        const prompt = [2, ...Array.from({ length: o.nPrompt - 1 }, (_, i) => 300 + 37 * i)];
        let stats = null;
        for await (const ev of model.generate(prompt, {
          temperature: 0,
          maxTokens: o.nGen,
          stopIds: [],
          speculative: false,
        }))
          if (ev.stats) stats = ev.stats;
        const st = await model.stats();
        const out = {
          loadMs,
          prefillTps: stats.prefillTokPerSec,
          decodeTps: stats.decodeTokPerSec,
          build: model.build,
          resident: st.residentBytes,
          wasm: st.wasmMemoryBytes,
          hitRate: st.streamHits / (st.streamHits + st.streamMisses),
        };
        await model.unload();
        return out;
      },
      {
        url: `${server.url}/model/a26b.gguf`,
        threads: THREADS,
        cache: BROWSER_CACHE,
        budget: BUDGET,
        nPrompt: N_PROMPT,
        nGen: N_GEN,
      },
    );
    console.error('a26b chromium', r);
    return { version: browser.version(), r };
  } finally {
    await browser.close();
    server.close();
    fs.rmSync(blank, { force: true });
  }
}

async function e4b() {
  const file = modelFile('e4b');
  const need = await residentNeed(file, 4 * GiB);
  const r = await measure(file, { streamWeights: 'all', weightCache: E4B_CACHE });
  console.error('e4b', r);
  return { file, r, need };
}

const t0 = Date.now();
const load = os
  .loadavg()
  .map((x) => x.toFixed(1))
  .join(' ');
const parts = [
  `Run ${new Date().toISOString()} with \`npm run bench:stream\` (wasm mt in Node ${process.version}, ${THREADS} threads, ` +
    `${N_PROMPT}-token prompt, ${N_GEN} greedy tokens, files in the page cache as far as memory allows); load average at the start ${load}. ` +
    'Figures under load (2 cores shared by several sessions): compare the rows with each other.',
];
if (ONLY.includes('a26b')) {
  const { file, rows, need } = await a26b();
  parts.push(
    `26B-A4B geometry, Q4_0 (\`${path.basename(file)}\`, ${gb(fs.statSync(file).size)} GB): routed experts streamed ` +
      `(\`streamWeights: 'experts'\`), everything else resident, \`maxResident\` ${fmt(BUDGET / GiB, 1)} GiB (weights + weight cache; loaded whole, the weights alone would need ${need}). ` +
      'Random weights route about uniformly, so the hit rate is about the share of experts the cache holds (real models reuse more).\n\n' +
      markdownTable(
        [
          'expert cache GiB',
          'decode tok/s',
          'prefill tok/s',
          'cache hits %',
          'GB read / token',
          'resident GB',
          'wasm memory GB',
          'load s',
        ],
        rows,
      ),
  );
}
if (args.browser) {
  const { version, r } = await a26bBrowser();
  parts.push(
    `The same 26B-A4B run in headless Chromium ${version} (build ${r.build}, SIMD128 as under Node), the file read by HTTP Range requests from a local server, ` +
      `expert cache ${fmt(BROWSER_CACHE / GiB, 1)} GiB, \`maxResident\` ${fmt(BUDGET / GiB, 1)} GiB:\n\n` +
      markdownTable(
        ['decode tok/s', 'prefill tok/s', 'cache hits %', 'resident GB', 'wasm memory GB', 'load s'],
        [
          [
            fmt(r.decodeTps),
            fmt(r.prefillTps),
            fmt(100 * r.hitRate, 0),
            gb(r.resident),
            gb(r.wasm),
            fmt(r.loadMs / 1000, 1),
          ],
        ],
      ),
  );
}
if (ONLY.includes('e4b')) {
  const { file, r, need } = await e4b();
  parts.push(
    `E4B geometry, Q8_0 (\`${path.basename(file)}\`, ${gb(r.size)} GB): every layer weight streamed (\`streamWeights: 'all'\`, ` +
      `\`weightCache\` ${fmt(E4B_CACHE / GiB, 1)} GiB: the cache keeps the first layers' weights, the others are read each token); loaded whole, the weights would need ${need}, more than wasm32's 4 GiB.\n\n` +
      markdownTable(
        ['decode tok/s', 'prefill tok/s', 'cache hits %', 'GB read / token', 'resident GB', 'wasm memory GB', 'load s'],
        [
          [
            fmt(r.decodeTps),
            fmt(r.prefillTps),
            fmt(100 * r.hitRate, 0),
            gb(r.streamedPerToken),
            gb(r.resident),
            gb(r.wasm),
            fmt(r.loadMs / 1000, 1),
          ],
        ],
      ),
  );
}
parts.push(`(${Math.round((Date.now() - t0) / 1000)} s)`);
const md = parts.join('\n\n');
console.log(md);
if (!args['no-write'] && !args.only && !args.a26b && !args.e4b) {
  const block = `<!-- bench:stream -->\n## Weights streamed from the host (\`npm run bench:stream\`)\n\n${md}\n<!-- /bench:stream -->`;
  const doc = fs.readFileSync(DOC, 'utf8');
  const re = /<!-- bench:stream -->[\s\S]*<!-- \/bench:stream -->/;
  writeAtomic(DOC, re.test(doc) ? doc.replace(re, block) : `${doc.trimEnd()}\n\n${block}\n`);
}
process.exit(0);
