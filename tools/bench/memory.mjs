// memory.mjs — peak memory of a model load over HTTP (npm run bench:memory): the process's
// peak RSS (VmHWM) against the wasm memory the engine ends with, in Node (a fresh process per
// run) and in headless Chromium (the renderer that runs the page and its workers), loading the
// model from tools/serve.mjs by HTTP Range reads, then one short generation. Also the memory
// estimate (estimateMemory) next to what the engine holds.
//
//   node tools/bench/memory.mjs [--model FILE] [--only node|chromium] [--threads N] [--ctx N]
//                               [--simd auto|relaxed|simd128]
//
// Default model: ~/.cache/oxinfer-bench/e2b-q4_0.gguf. Prints one line per environment and a
// markdown table for docs/benchmarks.md ("Memory").
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer, demoMounts } from '../serve.mjs';
import { procStatus, rendererPids } from './lib.mjs';

const MB = 1e6;

function args() {
  const a = { model: path.join(os.homedir(), '.cache', 'oxinfer-bench', 'e2b-q4_0.gguf'), only: null, threads: 2, ctx: 1024, simd: 'auto', child: null, chromium: process.env.CHROMIUM || '/usr/bin/chromium' };
  const v = process.argv.slice(2);
  for (let i = 0; i < v.length; i++) {
    const k = v[i].replace(/^--/, '');
    if (!(k in a)) throw new Error(`bench:memory: unknown option ${v[i]}`);
    a[k] = k === 'threads' || k === 'ctx' ? Number(v[++i]) : v[++i];
  }
  return a;
}

// In the page or the Node child: load from the URL, one generation, the engine's figures.
async function loadAndRun(loadModel, estimateMemory, url, threads, ctx, simd) {
  const est = await estimateMemory(url, { threads, context: ctx, simd });
  const t0 = performance.now();
  const model = await loadModel(url, { threads, maxContext: ctx, simd });
  const loadMs = performance.now() - t0;
  let n = 0;
  for await (const ev of model.generate([2, 651, 6092, 529], { maxTokens: 8, temperature: 0 })) if (!ev.stats) n++;
  const s = await model.stats();
  const out = { loadMs, tokens: n, wasm: s.wasmBytes, heap: s.heapBytes, resident: s.residentBytes, estimate: est.total, estWeights: est.weights };
  await model.unload();
  return out;
}

async function childNode(url, threads, ctx, simd) {
  const { loadModel, estimateMemory } = await import('../../js/index.js');
  const base = procStatus('self').rss;
  const r = await loadAndRun(loadModel, estimateMemory, url, threads, ctx, simd);
  const st = procStatus('self');
  process.stdout.write(JSON.stringify({ ...r, base, hwm: st.hwm, rss: st.rss }) + '\n');
}

// a fresh process (its peak is the load's); async, so this process's server keeps answering
function runNode(url, a) {
  return new Promise((resolve, reject) => {
    const c = spawn(process.execPath, [fileURLToPath(import.meta.url), '--child', url, '--threads', String(a.threads), '--ctx', String(a.ctx), '--simd', a.simd], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '', err = '';
    c.stdout.on('data', (d) => (out += d));
    c.stderr.on('data', (d) => (err += d));
    c.on('error', reject);
    c.on('close', (code) => (code === 0 ? resolve(JSON.parse(out.trim().split('\n').at(-1))) : reject(new Error(`node child exited ${code}: ${err}`))));
  });
}

async function runChromium(server, url, a) {
  const { chromium } = await import('playwright-core');
  const marker = `--oxmem-marker=${process.pid}-${Date.now()}`;
  const browser = await chromium.launch({ executablePath: a.chromium, headless: true, args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-features=SpareRendererForSitePerProcess', marker] });
  try {
    const page = await browser.newPage();
    page.on('pageerror', (e) => console.error(`page: ${e.message}`));
    await page.goto(`${server.url}/bench-memory.html`);
    await page.evaluate(() => import('/js/index.js'));
    const base = Math.max(...rendererPids(marker).map(procStatus).filter(Boolean).map((s) => s.rss));
    const r = await page.evaluate(async ({ url, threads, ctx, simd, body }) => {
      const { loadModel, estimateMemory } = await import('/js/index.js');
      return new Function('return ' + body)()(loadModel, estimateMemory, url, threads, ctx, simd);
    }, { url, threads: a.threads, ctx: a.ctx, simd: a.simd, body: loadAndRun.toString() });
    const pids = rendererPids(marker);
    const st = pids.map(procStatus).filter(Boolean);
    return { ...r, base, hwm: Math.max(...st.map((s) => s.hwm)), rss: Math.max(...st.map((s) => s.rss)) };
  } finally {
    await browser.close();
  }
}

async function main() {
  const a = args();
  if (a.child) return childNode(a.child, a.threads, a.ctx, a.simd);
  if (!fs.existsSync(a.model)) throw new Error(`bench:memory: ${a.model} not found`);
  const page = path.join(os.tmpdir(), `bench-memory-${process.pid}.html`);
  fs.writeFileSync(page, '<!doctype html><meta charset="utf-8"><title>bench:memory</title>');
  const server = await startServer({ files: { '/model.gguf': a.model, '/bench-memory.html': page }, mounts: demoMounts() });
  const url = `${server.url}/model.gguf`;
  const rows = [];
  try {
    for (const env of ['node', 'chromium']) {
      if (a.only && a.only !== env) continue;
      const r = env === 'node' ? await runNode(url, a) : await runChromium(server, url, a);
      const over = r.hwm - r.wasm;
      console.log(`${env}: RSS before ${(r.base / MB).toFixed(0)} MB, peak RSS ${(r.hwm / MB).toFixed(0)} MB, wasm memory ${(r.wasm / MB).toFixed(0)} MB (peak - wasm ${(over / MB).toFixed(0)} MB), heap in use ${(r.heap / MB).toFixed(0)} MB, estimate ${(r.estimate / MB).toFixed(0)} MB, load ${(r.loadMs / 1000).toFixed(1)} s`);
      rows.push({ env, ...r, over });
    }
  } finally {
    server.close();
    fs.rmSync(page, { force: true });
  }
  console.log(`\nmodel ${path.basename(a.model)}, threads ${a.threads}, context ${a.ctx}, ${os.cpus().length} cores (under load)\n`);
  console.log('| environment | RSS before load | peak RSS (VmHWM) | wasm memory | peak - wasm | heap in use | estimate (total) | load |');
  console.log('| --- | --- | --- | --- | --- | --- | --- | --- |');
  const f = (b) => `${(b / MB).toFixed(0)} MB`;
  for (const r of rows) console.log(`| ${r.env} | ${f(r.base)} | ${f(r.hwm)} | ${f(r.wasm)} | ${f(r.over)} | ${f(r.heap)} | ${f(r.estimate)} | ${(r.loadMs / 1000).toFixed(1)} s |`);
}

main().catch((e) => {
  console.error(e.stack ?? String(e));
  process.exit(1);
});
