// memory.mjs — peak memory of a model load over HTTP (npm run bench:memory): the process's
// peak RSS (VmHWM) against the wasm memory the engine ends with, in Node (a fresh process per
// run) and in headless Chromium (the renderer that runs the page and its workers), loading the
// model from tools/serve.mjs by HTTP Range reads, then one short generation. Also the memory
// estimate (estimateMemory) next to what the engine holds.
//
//   node tools/bench/memory.mjs [--model FILE] [--only node|chromium] [--threads N] [--ctx N]
//                               [--simd auto|relaxed|simd128] [--runs N] [--trace] [--playwright]
//
// --runs N repeats each environment N times (a fresh process / browser each). --trace samples
// the process's RSS (anonymous, file, shared) every 50 ms with the load's phases and progress,
// and prints where the peak happens.
//
// After each load, the same environment streams as many bytes as the load read, with nothing
// else to do: the loopback HTTP ceiling of the load.
//
// Default model: ~/.cache/oxinfer-bench/e2b-q4_0.gguf. Prints one line per environment and a
// markdown table for docs/benchmarks.md ("Memory").
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer, demoMounts } from '../serve.mjs';
import { descendants, procStatus, rendererPids } from './lib.mjs';

const MB = 1e6;

function args() {
  const a = {
    model: path.join(os.homedir(), '.cache', 'oxinfer-bench', 'e2b-q4_0.gguf'),
    only: null,
    threads: 2,
    ctx: 1024,
    simd: 'auto',
    runs: 1,
    trace: false,
    playwright: false,
    child: null,
    chromium: process.env.CHROMIUM || '/usr/bin/chromium',
  };
  const v = process.argv.slice(2);
  for (let i = 0; i < v.length; i++) {
    const k = v[i].replace(/^--/, '');
    if (!(k in a)) throw new Error(`bench:memory: unknown option ${v[i]}`);
    a[k] =
      k === 'trace' || k === 'playwright'
        ? true
        : k === 'threads' || k === 'ctx' || k === 'runs'
          ? Number(v[++i])
          : v[++i];
  }
  return a;
}

// In the page or the Node child: load from the URL, one generation, the engine's figures; then
// the time a plain streaming read of as many bytes as the load reads (the weights, from offset 0,
// one Range request, bytes dropped) takes in the same place: the HTTP ceiling of the load.
// mark(what): a phase starts (the trace's timeline; a no-op without --trace).
async function loadAndRun(loadModel, estimateMemory, url, threads, ctx, simd, mark, bare) {
  mark('estimate');
  const est = await estimateMemory(url, { threads, context: ctx, simd });
  mark('load');
  const t0 = performance.now();
  let tenth = -1;
  const onProgress = (p) =>
    Math.floor(p.fraction * 10) > tenth && mark(`load ${(tenth = Math.floor(p.fraction * 10)) * 10}%`);
  const model = await loadModel(url, { threads, maxContext: ctx, simd, onProgress });
  const loadMs = performance.now() - t0;
  mark('generate');
  let n = 0;
  const prompt = [2, 651, 6092, 529].map((t) => t % model.info.vocab); // (a test model has a small vocabulary)
  for await (const ev of model.generate(prompt, { maxTokens: 8, temperature: 0, speculative: false }))
    if (!ev.stats) n++;
  const s = await model.stats();
  const out = {
    loadMs,
    tokens: n,
    wasm: s.wasmBytes,
    heap: s.heapBytes,
    resident: s.residentBytes,
    estimate: est.total,
    estWeights: est.weights,
  };
  mark('unload');
  await model.unload();
  mark('bare read');
  const t1 = performance.now();
  await bare(url, est.weights);
  out.bareMs = performance.now() - t1;
  return out;
}

// the page's bare read: fetch with a BYOB reader into one reused buffer, as js/host/hostfile.js reads
async function bareFetch(url, bytes) {
  const r = await fetch(url, { headers: { Range: `bytes=0-${bytes - 1}` } });
  const rd = r.body.getReader({ mode: 'byob' });
  for (let buf = new ArrayBuffer(1 << 20); ;) {
    const { done, value } = await rd.read(new Uint8Array(buf));
    if (done) return;
    buf = value.buffer;
  }
}

// Node's: node:http, as the reader thread reads (js/host/reader_worker.js)
async function bareHttp(url, bytes) {
  const http = await import('node:http');
  await new Promise((resolve, reject) => {
    http
      .get(url, { headers: { Range: `bytes=0-${bytes - 1}` } }, (res) =>
        res
          .on('data', () => {})
          .on('end', resolve)
          .on('error', reject),
      )
      .on('error', reject);
  });
}

// --trace: the status of `pids()` (the largest RSS) every 50 ms, with the marks, as rows
// {t (ms), rss, anon, file, shmem, what}
function tracer(pids) {
  const rows = [],
    t0 = performance.now();
  let what = 'start';
  const sample = () => {
    const st = pids()
      .map(procStatus)
      .filter(Boolean)
      .sort((x, y) => y.rss - x.rss)[0];
    if (st) rows.push({ t: performance.now() - t0, ...st, what });
  };
  const timer = setInterval(sample, 50);
  return {
    mark(w) {
      what = w;
      sample();
    },
    stop() {
      clearInterval(timer);
      sample();
      return rows;
    },
  };
}

// the trace, condensed: per phase its largest RSS (with the split), and the peak's moment
function printTrace(env, rows) {
  const f = (b) => `${(b / MB).toFixed(0)}`;
  console.log(`${env} trace (MB: rss = anon + file + shmem):`);
  const phases = [];
  for (const r of rows) {
    if (!phases.length || phases.at(-1).what !== r.what) phases.push({ what: r.what, t: r.t, top: r });
    else if (r.rss > phases.at(-1).top.rss) phases.at(-1).top = r;
  }
  for (const p of phases)
    console.log(
      `  ${(p.t / 1000).toFixed(1).padStart(6)} s  ${p.what.padEnd(10)} max rss ${f(p.top.rss)} (anon ${f(p.top.anon)}, file ${f(p.top.file)}, shmem ${f(p.top.shmem)}) at ${(p.top.t / 1000).toFixed(1)} s`,
    );
}

async function childNode(url, threads, ctx, simd, trace) {
  const { loadModel, estimateMemory } = await import('../../js/main/index.js');
  const base = procStatus('self').rss;
  const tr = trace ? tracer(() => ['self']) : null;
  const r = await loadAndRun(loadModel, estimateMemory, url, threads, ctx, simd, (w) => tr?.mark(w), bareHttp);
  const st = procStatus('self');
  process.stdout.write(JSON.stringify({ ...r, base, hwm: st.hwm, rss: st.rss, trace: tr?.stop() }) + '\n');
}

// a fresh process (its peak is the load's); async, so this process's server keeps answering
function runNode(url, a) {
  return new Promise((resolve, reject) => {
    const c = spawn(
      process.execPath,
      [
        fileURLToPath(import.meta.url),
        '--child',
        url,
        '--threads',
        String(a.threads),
        '--ctx',
        String(a.ctx),
        '--simd',
        a.simd,
        ...(a.trace ? ['--trace'] : []),
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '',
      err = '';
    c.stdout.on('data', (d) => (out += d));
    c.stderr.on('data', (d) => (err += d));
    c.on('error', reject);
    c.on('close', (code) =>
      code === 0
        ? resolve(JSON.parse(out.trim().split('\n').at(-1)))
        : reject(new Error(`node child exited ${code}: ${err}`)),
    );
  });
}

// Chromium as a user runs it: no DevTools client. Playwright's CDP session enables the
// Network domain in the page and in every worker, and DevTools then keeps the response bodies
// it sees (up to ~100 MB of Range bodies in the renderer), which a tab without DevTools does
// not (--playwright measures that way, for comparison). The page reports to this process
// through the server's request log: GET /oxmem/<JSON> (a 404).
async function runChromium(server, url, a) {
  if (a.playwright) return runPlaywright(server, url, a);
  const marker = `--oxmem-marker=${process.pid}-${Date.now()}`;
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-memory-profile-'));
  fs.writeFileSync(
    server.page,
    `<!doctype html><meta charset="utf-8"><title>bench:memory</title>
<script type="module">
const report = (m) => fetch('/oxmem/' + encodeURIComponent(JSON.stringify(m))).catch(() => {});
try {
  const { loadModel, estimateMemory } = await import('/js/main/index.js');
  await report({ mark: 'ready' });
  const run = (${loadAndRun}), bare = (${bareFetch});
  await report({ result: await run(loadModel, estimateMemory, ${JSON.stringify(url)}, ${a.threads}, ${a.ctx}, ${JSON.stringify(a.simd)}, (w) => report({ mark: w }), bare) });
} catch (e) {
  report({ error: String(e?.stack ?? e) });
}
</script>`,
  );
  const c = spawn(
    a.chromium,
    [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--no-first-run',
      '--disable-features=SpareRendererForSitePerProcess',
      `--user-data-dir=${profile}`,
      marker,
      `${server.url}/bench-memory.html`,
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  c.stderr.on('data', (d) => (stderr = (stderr + d).slice(-4000)));
  let tr = null,
    base = NaN;
  const renderers = () => rendererPids(marker);
  try {
    return await new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`bench:memory: no result from Chromium in 15 min\n${stderr}`)),
        15 * 60e3,
      );
      c.on('exit', (code) => reject(new Error(`bench:memory: Chromium exited (${code}) before the result\n${stderr}`)));
      server.onReport = (m) => {
        if (m.mark === 'ready') {
          base = Math.max(
            ...renderers()
              .map(procStatus)
              .filter(Boolean)
              .map((s) => s.rss),
          );
          if (a.trace) tr = tracer(renderers);
        } else if (m.mark) tr?.mark(m.mark);
        else {
          clearTimeout(timer);
          if (m.error) return reject(new Error(`bench:memory: in the page: ${m.error}`));
          const st = renderers().map(procStatus).filter(Boolean);
          resolve({
            ...m.result,
            base,
            hwm: Math.max(...st.map((s) => s.hwm)),
            rss: Math.max(...st.map((s) => s.rss)),
            trace: tr?.stop(),
          });
        }
      };
    });
  } finally {
    server.onReport = null;
    // the browser's child processes write to the profile until they have exited too
    const tree = descendants(c.pid);
    c.kill();
    await new Promise((r) => (c.exitCode !== null || c.signalCode !== null ? r() : c.once('exit', r)));
    for (let t = 0; t < 100 && tree.some((p) => fs.existsSync(`/proc/${p}`)); t++)
      await new Promise((r) => setTimeout(r, 100));
    try {
      fs.rmSync(profile, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
    } catch (e) {
      console.error(`bench:memory: ${profile} left behind: ${e.message}`);
    }
  }
}

async function runPlaywright(server, url, a) {
  const { chromium } = await import('playwright-core');
  const marker = `--oxmem-marker=${process.pid}-${Date.now()}`;
  const browser = await chromium.launch({
    executablePath: a.chromium,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--no-first-run',
      '--disable-features=SpareRendererForSitePerProcess',
      marker,
    ],
  });
  try {
    const page = await browser.newPage();
    page.on('pageerror', (e) => console.error(`page: ${e.message}`));
    fs.writeFileSync(server.page, '<!doctype html><meta charset="utf-8"><title>bench:memory</title>');
    await page.goto(`${server.url}/bench-memory.html`);
    await page.evaluate(() => import('/js/main/index.js'));
    const renderers = rendererPids(marker);
    const base = Math.max(
      ...renderers
        .map(procStatus)
        .filter(Boolean)
        .map((s) => s.rss),
    );
    const tr = a.trace ? tracer(() => renderers) : null;
    await page.exposeFunction('oxMark', (w) => tr?.mark(w));
    const r = await page.evaluate(
      async ({ url, threads, ctx, simd, body, bare }) => {
        const { loadModel, estimateMemory } = await import('/js/main/index.js');
        return new Function('return ' + body)()(
          loadModel,
          estimateMemory,
          url,
          threads,
          ctx,
          simd,
          (w) => globalThis.oxMark(w),
          new Function('return ' + bare)(),
        );
      },
      { url, threads: a.threads, ctx: a.ctx, simd: a.simd, body: loadAndRun.toString(), bare: bareFetch.toString() },
    );
    const st = rendererPids(marker).map(procStatus).filter(Boolean);
    return {
      ...r,
      base,
      hwm: Math.max(...st.map((s) => s.hwm)),
      rss: Math.max(...st.map((s) => s.rss)),
      trace: tr?.stop(),
    };
  } finally {
    await browser.close();
  }
}

async function main() {
  const a = args();
  if (a.child) return childNode(a.child, a.threads, a.ctx, a.simd, a.trace);
  if (!fs.existsSync(a.model)) throw new Error(`bench:memory: ${a.model} not found`);
  const page = path.join(os.tmpdir(), `bench-memory-${process.pid}.html`);
  fs.writeFileSync(page, '');
  // the page's reports (runChromium) arrive as requests for /oxmem/<JSON>
  let server = null;
  const log = (line) => {
    const m = /^404 GET \/oxmem\/(.*)$/.exec(line);
    if (m) server.onReport?.(JSON.parse(decodeURIComponent(m[1])));
  };
  server = await startServer({
    files: { '/model.gguf': a.model, '/bench-memory.html': page },
    mounts: demoMounts(),
    log,
  });
  server.page = page;
  const url = `${server.url}/model.gguf`;
  const rows = [];
  try {
    for (const env of ['node', 'chromium'])
      for (let run = 0; run < a.runs; run++) {
        if (a.only && a.only !== env) continue;
        const r = env === 'node' ? await runNode(url, a) : await runChromium(server, url, a);
        const over = r.hwm - r.wasm;
        if (r.trace) printTrace(env, r.trace);
        console.log(
          `${env}: RSS before ${(r.base / MB).toFixed(0)} MB, peak RSS ${(r.hwm / MB).toFixed(0)} MB, wasm memory ${(r.wasm / MB).toFixed(0)} MB (peak - wasm ${(over / MB).toFixed(0)} MB), heap in use ${(r.heap / MB).toFixed(0)} MB, estimate ${(r.estimate / MB).toFixed(0)} MB, load ${(r.loadMs / 1000).toFixed(1)} s (a bare read of its ${(r.estWeights / MB).toFixed(0)} MB: ${(r.bareMs / 1000).toFixed(1)} s)`,
        );
        rows.push({ env: a.playwright && env === 'chromium' ? 'chromium (Playwright)' : env, ...r, over });
      }
  } finally {
    server.close();
    fs.rmSync(page, { force: true });
  }
  console.log(
    `\nmodel ${path.basename(a.model)}, threads ${a.threads}, context ${a.ctx}, ${os.cpus().length} cores (under load)\n`,
  );
  console.log(
    "| environment | RSS before load | peak RSS (VmHWM) | wasm memory | peak - wasm | heap in use | estimate (total) | load | bare read of the weights' bytes |",
  );
  console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- |');
  const f = (b) => `${(b / MB).toFixed(0)} MB`;
  for (const r of rows)
    console.log(
      `| ${r.env} | ${f(r.base)} | ${f(r.hwm)} | ${f(r.wasm)} | ${f(r.over)} | ${f(r.heap)} | ${f(r.estimate)} | ${(r.loadMs / 1000).toFixed(1)} s | ${(r.bareMs / 1000).toFixed(1)} s |`,
    );
  // issue #15's target: the peak at most 300 MB above the wasm memory, in every run
  for (const env of new Set(rows.map((r) => r.env))) {
    const rs = rows.filter((r) => r.env === env),
      over = rs.map((r) => r.over / MB),
      load = rs.map((r) => r.loadMs / 1000);
    const range = (xs, d) => `${Math.min(...xs).toFixed(d)}-${Math.max(...xs).toFixed(d)}`;
    console.log(
      `${env}: peak - wasm ${range(over, 0)} MB, load ${range(load, 1)} s (bare read ${range(
        rs.map((r) => r.bareMs / 1000),
        1,
      )} s) over ${rs.length} run(s); <= 300 MB in ${over.filter((x) => x <= 300).length} of ${rs.length}`,
    );
  }
}

main().catch((e) => {
  console.error(e.stack ?? String(e));
  process.exit(1);
});
