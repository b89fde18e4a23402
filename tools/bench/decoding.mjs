#!/usr/bin/env node
// decoding.mjs — `npm run bench:decoding`: what the decoding features cost and win, in the wasm
// engine (threaded build, 2 threads) under Node and, for 1 and 2, also in headless Chromium,
// written to docs/benchmarks.md between the `bench:decoding` markers.
//
//   1. verify cost: one forward of 1 + k tokens (pending token + k drafts, every row's logits)
//      against one decode step, k = 1..8, on the bench preset's Q8_0 and Q4_K_M files, in Node
//      and in headless Chromium (--no-chromium: Node only) — measured by generating from a
//      model whose logit bias makes every draft correct, so each forward verifies exactly k drafts;
//      beside it native llama.cpp's batch of 1 + k against its decode step (llama-bench, built by
//      tools/llamacpp.sh; --no-native skips it);
//   2. speculative decoding end to end: decode tok/s with and without prompt-lookup drafts on
//      the trained demo model (a copy-heavy prompt: a story it told before in the chat, asked
//      for again), on the same model widened to E2B's widths (oxinfer synth --widen: the same
//      outputs, but a decode step streams ~0.6-1 GB of weights, as on a real checkpoint), and
//      on a random-weight model (nothing is accepted: the cost of drafting that fails);
//   2c. for the widened models' copy task, the speed-up against the best schedule of prompt
//      lookup's drafts and the ceiling with every draft right (lookup_bound.mjs), from forward
//      costs of 1..9 tokens measured on those models (Node); then the same over 24 questions
//      answered by the trained demo model and asked again (2d), one pair of runs each;
//   2b. the MTP drafter end to end (synthetic gemma4-assistant drafters for the bench-preset
//      target, oxinfer synth --assistant-of): decode tok/s with and without MTP drafts, on a
//      random target + random drafter (nothing accepted: the cost of drafting) and on a quiet
//      target whose drafter is built to agree (synth --agree: drafts accepted);
//   3. constrained decoding: decode tok/s under a json_schema grammar against free decoding on a
//      262,144-token vocabulary (a synthetic model of E2B's geometry, Q4_0).
//
//   options: --threads 2  --n-gen 64  --reps 3  --spec-reps 5  --no-chromium  --no-native
//            --dir DIR (models; $OX_BENCH_DIR or ~/.cache/oxinfer-bench)  --no-write  --doc FILE
//            --only verify,spec,mtp,json (no doc)
import fs from 'node:fs';
import { spawnSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadModel } from '../../js/main/index.js';
import { cli } from '../../tests/oracle/fixtures.mjs';
import { writeAtomic, llamaBin } from './lib.mjs';
import { bestLookup, allRight } from './lookup_bound.mjs';
import { startServer, demoMounts } from '../serve.mjs';

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
const N_GEN = Number(args['n-gen'] ?? 64);
const REPS = Number(args.reps ?? 3);
const SPEC_REPS = Number(args['spec-reps'] ?? 5); // back-to-back pairs (sections 2, 2b, 3)
const DIR = args.dir ?? process.env.OX_BENCH_DIR ?? path.join(os.homedir(), '.cache', 'oxinfer-bench');
const DOC = args.doc ?? path.join(ROOT, 'docs', 'benchmarks.md');
fs.mkdirSync(DIR, { recursive: true });

const markdownTable = (head, rows) =>
  [head, head.map(() => '---'), ...rows].map((r) => `| ${r.join(' | ')} |`).join('\n');
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const fmt = (x, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : '—');

function synthModel(name, flags) {
  const file = path.join(DIR, `${name}.gguf`);
  if (!fs.existsSync(file)) cli(['synth', ...flags, '-o', file]);
  return file;
}

async function run(model, prompt, opts) {
  let stats = null;
  let text = '';
  const ids = [];
  for await (const ev of model.generate(prompt, {
    temperature: 0,
    maxTokens: N_GEN,
    stopIds: [],
    speculative: false,
    ...opts,
  })) {
    if (ev.stats) stats = ev.stats;
    else ((text += ev.text), ids.push(ev.token));
  }
  return { stats, text, ids };
}

// 1. ms per forward with k drafts all kept, over ms per plain decode step. Runs in Node and in
// a cross-origin-isolated Chromium page (serialized with toString: no closures).
const DRAFTS = [1, 2, 3, 4, 6, 8];
async function verifyCostIn(loadModel, source, threads, reps, nGen, drafts) {
  const model = await loadModel(source, { threads });
  const prompt = [2, ...Array.from({ length: 31 }, (_, i) => 100 + i)]; // in a 1024-token vocabulary too
  const logitBias = { 300: 100 }; // one token wins every step: every n-gram draft of it is right
  const run = async (opts) => {
    let stats = null;
    for await (const ev of model.generate(prompt, {
      temperature: 0,
      maxTokens: nGen,
      stopIds: [],
      logitBias,
      speculative: false,
      ...opts,
    }))
      if (ev.stats) stats = ev.stats;
    return stats;
  };
  const perForward = async (opts) => {
    const ms = [];
    for (let r = 0; r < reps; r++) {
      const s = await run(opts);
      ms.push(s.decodeMs / s.decodeSteps);
    }
    return ms.sort((a, b) => a - b)[Math.floor(ms.length / 2)];
  };
  await run({ maxTokens: 8 }); // warm-up
  const out = [[0, await perForward({})]];
  for (const k of drafts) out.push([k, await perForward({ speculative: { draftTokens: k, fixedLength: true } })]);
  const build = `${model.build}${model.simd ? ` ${model.simd}` : ''}`;
  await model.unload();
  return { build, out };
}

// fn(loadModel, url, ...job.args) for each job {file, args} in one cross-origin-isolated page
async function inChromium(jobs, fn) {
  const { chromium } = await import('playwright-core');
  const files = [...new Set(jobs.map((j) => j.file))];
  const server = await startServer({
    files: Object.fromEntries(files.map((f) => [`/m/${path.basename(f)}`, f])),
    mounts: { '/bench/': path.join(ROOT, 'tools', 'bench'), ...demoMounts() },
  });
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run'],
  });
  try {
    const page = await browser.newPage();
    await page.goto(`${server.url}/bench/page.html`);
    const out = [];
    for (const j of jobs) {
      out.push(
        await page.evaluate(
          async ({ body, url, rest }) => {
            const { loadModel } = await import('/js/main/index.js');
            return new Function('return ' + body)()(loadModel, url, ...rest);
          },
          { body: fn.toString(), url: `${server.url}/m/${path.basename(j.file)}`, rest: j.args },
        ),
      );
    }
    return out;
  } finally {
    await browser.close();
    server.close();
  }
}

async function verifyCost() {
  const files = [
    synthModel('bench-q8_0', ['--preset', 'bench', '--type', 'q8_0']),
    path.join(DIR, 'bench-q4_k_m.gguf'),
  ].filter((f) => fs.existsSync(f));
  const node = [];
  for (const f of files) node.push(await verifyCostIn(loadModel, f, THREADS, REPS, N_GEN, DRAFTS));
  const web = args['no-chromium']
    ? []
    : await inChromium(
        files.map((file) => ({ file, args: [THREADS, REPS, N_GEN, DRAFTS] })),
        verifyCostIn,
      );
  const native = args['no-native']
    ? []
    : files.map((f) =>
        nativeBatchCost(
          f,
          DRAFTS.map((k) => k + 1),
        ),
      );
  const rows = [];
  files.forEach((f, i) => {
    const n = node[i].out,
      w = web[i]?.out;
    n.forEach(([k, ms], j) =>
      rows.push([
        path.basename(f),
        k ? `${k + 1} (pending + ${k} drafts)` : '1 (plain decode)',
        fmt(ms, 2),
        fmt(ms / n[0][1], 2),
        w ? fmt(w[j][1], 2) : '—',
        w ? fmt(w[j][1] / w[0][1], 2) : '—',
        native[i] ? fmt(native[i].get(k + 1), 2) : '—',
      ]),
    );
  });
  return {
    files,
    rows,
    builds: `Node: ${node[0]?.build}; Chromium: ${web[0]?.build ?? 'not run'}`,
    native: native[0]?.build,
  };
}

// The same ratio for native llama.cpp (llama-bench, the machine's own SIMD): a batch of n tokens
// from an empty context against one decode step, n / pp(n) t/s over 1 / tg t/s. The peer's figure
// for what a forward of n costs on this CPU. Map n -> steps (1 -> 1), and .build.
function nativeBatchCost(file, ns) {
  const bin = llamaBin('llama-bench');
  const r = spawnSync(
    bin,
    [
      '-m',
      file,
      '-t',
      String(THREADS),
      '-p',
      ns.join(','),
      '-n',
      String(N_GEN),
      '-r',
      String(Math.max(REPS, 5)),
      '-o',
      'json',
    ],
    { encoding: 'utf8', maxBuffer: 1 << 26 },
  );
  if (r.status !== 0)
    throw new Error(`llama-bench ${file}: exit ${r.status ?? r.signal}: ${String(r.stderr).trim().split('\n').pop()}`);
  const j = JSON.parse(r.stdout);
  const tg = j.find((x) => x.n_gen > 0 && x.n_prompt === 0);
  if (!tg) throw new Error(`llama-bench ${file}: no tg result`);
  const out = new Map([[1, 1]]);
  for (const x of j) if (x.n_prompt > 0 && x.n_gen === 0) out.set(x.n_prompt, (x.n_prompt * tg.avg_ts) / x.avg_ts);
  out.build = `llama.cpp ${tg.build_commit}, ${tg.cpu_info ?? 'native'}`;
  return out;
}

// 2. decode tok/s with and without prompt-lookup drafts (8 at most), in Node or in the page
// (serialized: no closures). copy: a chat that asks a question the model has answered before in
// it (its greedy answer, then the same question again: the new answer repeats the old one);
// else fixed ids.
async function speculativeIn(loadModel, source, loadOpts, copy, reps, nGen) {
  const model = await loadModel(source, loadOpts);
  const run = async (prompt, opts) => {
    let stats = null,
      text = '';
    for await (const ev of model.generate(prompt, {
      temperature: 0,
      maxTokens: nGen,
      stopIds: [],
      speculative: false,
      ...opts,
    }))
      if (ev.stats) stats = ev.stats;
      else text += ev.text;
    return { stats, text };
  };
  let prompt = [2, ...Array.from({ length: 63 }, (_, i) => 1000 + ((i * 7) % 50))];
  if (copy) {
    const q = 'Tell me a story about a owl.';
    const turnEnd = await model.tokenize('<turn|>', { special: true });
    const first = await run(await model.renderChat([{ role: 'user', content: q }]), {
      stopIds: turnEnd,
      maxTokens: 2 * nGen,
    });
    prompt = await model.renderChat([
      { role: 'user', content: q },
      { role: 'assistant', content: first.text },
      { role: 'user', content: q },
    ]);
  }
  await run(prompt, {}); // warm-up (a page's first generations run slower)
  await run(prompt, { speculative: { draftTokens: 8 } });
  const plain = [],
    spec = [];
  let drafted = 0,
    accepted = 0,
    outIds = [];
  const runSpec = async () => {
    outIds = [];
    let s = null;
    for await (const ev of model.generate(prompt, {
      temperature: 0,
      maxTokens: nGen,
      stopIds: [],
      speculative: { draftTokens: 8 },
    }))
      if (ev.stats) s = ev.stats;
      else outIds.push(ev.token);
    spec.push(s.decodeTokPerSec);
    drafted += s.draftedTokens;
    accepted += s.acceptedTokens;
  };
  // the order alternates: a machine that slows down over the runs favours neither
  for (let r = 0; r < reps; r++) {
    if (r % 2) await runSpec();
    plain.push((await run(prompt, {})).stats.decodeTokPerSec);
    if (!(r % 2)) await runSpec();
  }
  const median = (xs) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
  const resident = (await model.stats()).residentBytes;
  const promptIds = Array.from(typeof prompt === 'string' ? await model.tokenize(prompt, { special: true }) : prompt);
  await model.unload();
  // speed-up: the median of each pair's ratio (a pair ran back to back: slow spells of a shared
  // machine cancel), beside the median rates
  return {
    plain: median(plain),
    spec: median(spec),
    ratio: median(spec.map((x, i) => x / plain[i])),
    drafted,
    accepted,
    resident,
    promptIds,
    outIds,
  };
}

async function endToEnd() {
  const demo = path.join(ROOT, 'web', 'models', 'oxinfer-demo.gguf');
  const cases = [];
  if (fs.existsSync(demo)) {
    cases.push({ label: 'trained demo model, its question asked again', file: demo, opts: {}, copy: true });
    for (const [type, embd] of [
      ['q8_0', 'q8_0'],
      ['q4_k', 'q6_k'],
    ]) {
      const file = synthModel(`demo-wide-${type}`, [
        '--widen',
        demo,
        '--hidden',
        '1536',
        '--ffn',
        '6144',
        '--layers',
        '35',
        '--type',
        type,
        '--embd-type',
        embd,
      ]);
      cases.push({
        label: `the same widened to E2B widths, ${type === 'q8_0' ? 'Q8_0' : 'Q4_K + Q6_K embedding'}, the same prompt`,
        file,
        opts: {},
        copy: true,
        wide: true,
      });
    }
  }
  cases.push({
    label: 'random weights (bench preset Q8_0)',
    file: synthModel('bench-q8_0', ['--preset', 'bench', '--type', 'q8_0']),
    opts: {},
    copy: false,
  });
  const jobs = cases.map((c) => ({ file: c.file, args: [{ threads: THREADS, ...c.opts }, c.copy, SPEC_REPS, N_GEN] }));
  const node = [];
  for (const j of jobs) node.push(await speculativeIn(loadModel, j.file, ...j.args));
  const web = args['no-chromium'] ? [] : await inChromium(jobs, speculativeIn);
  const rows = cases.map((c, i) => [
    c.label,
    `${(node[i].resident / 1e6).toFixed(1)} MB`,
    ...cell(node[i]),
    ...(web[i] ? cell(web[i]) : ['—', '—', '—', '—']),
  ]);
  return {
    rows,
    bound: await boundOf(
      cases.map((c, i) => ({ ...c, ...node[i] })).filter((c) => c.wide),
      demo,
    ),
  };
}

// 2c. the copy task on the widened models against the best drafting choices (Node): the cost
// of a forward of 1..9 tokens measured on that model, then for its copy-task text the best
// schedule of prompt lookup's own drafts and the ceiling with every draft right
// (lookup_bound.mjs), beside the speed-up measured; then the same over COPY_QUESTIONS
async function boundOf(cases, demo) {
  const rows = [];
  const prompts = cases.length ? await copyPrompts(demo) : [];
  for (const c of cases) {
    const { out } = await verifyCostIn(loadModel, c.file, THREADS, REPS, N_GEN, [1, 2, 3, 4, 5, 6, 7, 8]);
    const cost = [0, ...out.map(([, ms]) => ms / out[0][1])]; // cost[n]: n = 1 + drafts
    rows.push([
      c.label,
      fmt(cost[4], 2),
      fmt(cost[9], 2),
      `${fmt(c.ratio, 2)}×`,
      `${fmt(bestLookup(c.promptIds, c.outIds, cost), 2)}×`,
      `${fmt(allRight(c.outIds, cost), 2)}×`,
    ]);
    const m = await copyTaskOver(c.file, prompts, cost);
    const span = (xs) =>
      Math.min(...xs) === Math.max(...xs) ? 'all' : `${fmt(Math.min(...xs), 2)}-${fmt(Math.max(...xs), 2)}`;
    rows.push([
      `${c.label.replace(/, the same prompt$/, '')}, ${prompts.length} questions asked again (geometric mean, lowest-highest)`,
      '',
      '',
      `${fmt(gmean(m.ratio), 2)}× (${span(m.ratio)})`,
      `${fmt(gmean(m.best), 2)}× (${span(m.best)})`,
      `${fmt(gmean(m.right), 2)}× (${span(m.right)})`,
    ]);
  }
  return rows;
}

// 2d. more copy tasks: each question asked, answered by the trained demo model (greedy, at most
// 2 n-gen tokens), then asked again; the chat up to the second asking is the prompt
const COPY_QUESTIONS = [
  ...[
    'owl',
    'cat',
    'fox',
    'dog',
    'bird',
    'fish',
    'king',
    'girl',
    'boy',
    'tree',
    'frog',
    'bear',
    'rabbit',
    'mouse',
    'dragon',
    'princess',
    'robot',
    'ship',
    'star',
    'moon',
  ].map((s) => `Tell me a story about a ${s}.`),
  'What is the weather like?',
  'Write a poem about the sea.',
  'Why is the sky blue?',
  'Tell me a story about a duck and a cow.',
];
const gmean = (xs) => Math.exp(xs.reduce((s, x) => s + Math.log(x), 0) / xs.length);

async function copyPrompts(demo) {
  const model = await loadModel(demo, { threads: THREADS });
  const turnEnd = await model.tokenize('<turn|>', { special: true });
  const out = [];
  for (const q of COPY_QUESTIONS) {
    const first = await run(model, await model.renderChat([{ role: 'user', content: q }]), {
      stopIds: turnEnd,
      maxTokens: 2 * N_GEN,
    });
    out.push(
      await model.renderChat([
        { role: 'user', content: q },
        { role: 'assistant', content: first.text },
        { role: 'user', content: q },
      ]),
    );
  }
  await model.unload();
  return out;
}

// per prompt: the speed-up of one back-to-back pair (alternating order), and the bounds of its
// text under the forward costs `cost`
async function copyTaskOver(file, prompts, cost) {
  const model = await loadModel(file, { threads: THREADS });
  const spec = { speculative: { draftTokens: 8 } };
  await run(model, prompts[0], spec); // warm-up
  const m = { ratio: [], best: [], right: [] };
  for (const [i, prompt] of prompts.entries()) {
    const first = await run(model, prompt, i % 2 ? spec : {}),
      second = await run(model, prompt, i % 2 ? {} : spec);
    const [plain, drafted] = i % 2 ? [second, first] : [first, second];
    const promptIds = Array.from(await model.tokenize(prompt, { special: true }));
    m.ratio.push(drafted.stats.decodeTokPerSec / plain.stats.decodeTokPerSec);
    m.best.push(bestLookup(promptIds, drafted.ids, cost));
    m.right.push(allRight(drafted.ids, cost));
  }
  await model.unload();
  return m;
}

// decode tok/s, with drafts, speed-up, drafts kept
const cell = (r) => [
  fmt(r.plain),
  fmt(r.spec),
  `${fmt(r.ratio, 2)}×`,
  r.drafted ? `${fmt((100 * r.accepted) / r.drafted, 0)} % of ${r.drafted}` : 'no drafts',
];

// 2b. decode tok/s with and without MTP drafts (4 per step)
async function mtp() {
  const drafterFlags = [
    '--preset',
    'bench',
    '--type',
    'q8_0',
    '--ple',
    '0',
    '--kv-shared',
    '0',
    '--hidden',
    '256',
    '--layers',
    '4',
    '--swa-period',
    '4',
    '--ffn',
    '1024',
    '--assistant-of',
    '1536',
  ];
  const cases = [
    {
      label: 'random target, random drafter',
      target: synthModel('bench-q8_0', ['--preset', 'bench', '--type', 'q8_0']),
      drafter: synthModel('bench-drafter-q8_0', [...drafterFlags, '--seed', '77']),
    },
    {
      label: 'quiet target, agreeing drafter',
      target: synthModel('bench-quiet-q8_0', ['--preset', 'bench', '--type', 'q8_0', '--branch-gain', '0.02']),
      drafter: synthModel('bench-drafter-agree-q8_0', [...drafterFlags, '--agree', '--branch-gain', '0.01']),
    },
  ];
  const out = [];
  for (const c of cases) {
    const model = await loadModel(c.target, { threads: THREADS, drafter: c.drafter });
    const prompt = [2, ...Array.from({ length: 63 }, (_, i) => 1000 + ((i * 7) % 50))];
    const speculative = { method: 'mtp', draftTokens: 4 };
    await run(model, prompt, { maxTokens: 8, speculative });
    const plain = [],
      spec = [];
    let acc = { drafted: 0, accepted: 0 };
    for (let r = 0; r < SPEC_REPS; r++) {
      // alternating, paired, as in speculativeIn
      const withDrafts = async () => {
        const s = (await run(model, prompt, { speculative })).stats;
        spec.push(s.decodeTokPerSec);
        acc = { drafted: acc.drafted + s.draftedTokens, accepted: acc.accepted + s.acceptedTokens };
      };
      if (r % 2) await withDrafts();
      plain.push((await run(model, prompt, {})).stats.decodeTokPerSec);
      if (!(r % 2)) await withDrafts();
    }
    const p = median(plain),
      q = median(spec),
      ratio = median(spec.map((x, i) => x / plain[i]));
    out.push([
      c.label,
      fmt(p),
      fmt(q),
      `${fmt(ratio, 2)}×`,
      acc.drafted ? `${fmt((100 * acc.accepted) / acc.drafted, 0)} % of ${acc.drafted}` : 'no drafts',
    ]);
    await model.unload();
  }
  return out;
}

// 3. decode tok/s under a json_schema grammar against free decoding on a 262k vocabulary
async function constrained() {
  // E2B's geometry (2.6 GB, ~1 min to make): on a small model the mask's cost is a larger share
  const file = synthModel('e2b-q4_0', ['--preset', 'e2b', '--type', 'q4_0']);
  const model = await loadModel(file, { threads: THREADS });
  // strings without a bound: the mask cache sees the same state at every character
  const grammar = await model.jsonSchemaGrammar({
    type: 'object',
    properties: { name: { type: 'string' }, notes: { type: 'array', items: { type: 'string' } } },
    required: ['name', 'notes'],
  });
  const prompt = [2, ...Array.from({ length: 15 }, (_, i) => 1000 + i)];
  await run(model, prompt, { maxTokens: 4, grammar });
  // back-to-back pairs in alternating order, as for the drafts: a step here is ~0.1 s, and the
  // machine's speed drifts by more than the mask costs between two blocks of runs
  const free = [],
    json = [];
  const rate = async (opts) => (await run(model, prompt, opts)).stats.decodeTokPerSec;
  for (let r = 0; r < SPEC_REPS; r++) {
    if (r % 2) json.push(await rate({ grammar, stopIds: undefined }));
    free.push(await rate({}));
    if (!(r % 2)) json.push(await rate({ grammar, stopIds: undefined }));
  }
  const cost = median(json.map((x, i) => 1 - x / free[i]));
  await model.unload();
  return {
    file: path.basename(file),
    rows: [
      ['free', fmt(median(free), 2), '—'],
      ['json_schema grammar', fmt(median(json), 2), `${fmt(100 * cost, 1)} %`],
    ],
  };
}

const t0 = Date.now();
const load = os
  .loadavg()
  .map((x) => x.toFixed(2))
  .join(' ');
const ONLY = args.only ? String(args.only).split(',') : null; // --only verify,spec,json: print those
const want = (k) => !ONLY || ONLY.includes(k);
const v = want('verify') ? await verifyCost() : { files: [], rows: [], builds: '' };
const e = want('spec') ? await endToEnd() : { rows: [], bound: [] };
const mt = want('mtp') ? await mtp() : [];
const c = want('json') ? await constrained() : { file: '', rows: [] };
const md = [
  `Run ${new Date().toISOString()} with \`npm run bench:decoding\` (wasm mt in Node ${process.version}, ${THREADS} threads, ${N_GEN} greedy tokens, median of ${REPS}; end to end: ${SPEC_REPS} back-to-back pairs with and without drafts, in alternating order, the speed-up the median of the pairs' ratios); load average at the start ${load}, ${Math.round((Date.now() - t0) / 1000)} s.`,
  '',
  `**Verify cost**: one forward of the pending token plus k drafts (\`speculative.fixedLength\`: every draft k long; the mean over the forwards, the few plain steps before the first match included), every row's logits, all drafts kept, against one decode step, in Node and in a cross-origin-isolated Chromium page (${v.builds}). The last column is native llama.cpp on the same CPU with its own SIMD (\`llama-bench -p n\`: a batch of n from an empty context, against its own decode step; ${v.native ?? 'not run'}): the peer's cost of the same forward.`,
  '',
  markdownTable(
    [
      'model',
      'tokens per forward',
      'Node ms per forward',
      'Node, relative to one decode step',
      'Chromium ms per forward',
      'Chromium, relative',
      'native llama.cpp, relative',
    ],
    v.rows,
  ),
  '',
  `**Speculative decoding** (prompt lookup, up to 8 drafts, greedy, ${N_GEN} tokens), in Node and in Chromium. The copy-heavy prompt is a chat in which the user asks the trained demo model for a story it has told before in the same chat (its own greedy answer, then the question again): the new story repeats much of the old one. That model is 4.7 MB and runs from the CPU caches, compute-bound, so a forward of k tokens costs nearly k decode steps there. The widened rows are that model made as heavy per token as a real one (\`oxinfer synth --widen\`: hidden 1536, FFN 6144, 35 layers; its weights zero-padded, the extra layers silenced, so it computes the same function: src/writers/synth.h); quantizing it changes its text a little, and with it how much of the old story the new one repeats.`,
  '',
  markdownTable(
    [
      'model, prompt',
      'resident',
      'Node decode tok/s',
      'with drafts',
      'speed-up',
      'drafts kept',
      'Chromium decode tok/s',
      'with drafts',
      'speed-up',
      'drafts kept',
    ],
    e.rows,
  ),
  '',
  `**The copy task against the best drafting choices** (Node; \`tools/bench/lookup_bound.mjs\`). Greedy text does not depend on drafting, so every schedule of forwards over the text the widened model wrote can be costed offline with the forward costs measured on that model (as above: k drafts, all kept): the best schedule of prompt lookup's own drafts (its candidates, but each step's length, or no draft, chosen knowing which tokens hold), and the ceiling with every draft right, which only the verify cost limits. The second row of each model does the same over ${COPY_QUESTIONS.length} questions (20 stories and 4 others), each answered by the trained demo model and then asked again: one back-to-back pair per prompt, the geometric mean of their speed-ups.`,
  '',
  markdownTable(
    [
      'model, prompt',
      'forward of 4, in decode steps',
      'forward of 9',
      'speed-up measured',
      'best schedule of lookup drafts',
      'every draft right',
    ],
    e.bound,
  ),
  '',
  '**MTP drafter** (bench-preset target, a synthetic 4-layer gemma4-assistant drafter of width 256, 4 drafts per step, greedy):',
  '',
  markdownTable(['target, drafter', 'decode tok/s', 'with MTP drafts', 'speed-up', 'drafts kept'], mt),
  '',
  `**Constrained decoding** (${c.file}, 262,144-token vocabulary; decode tok/s, greedy, a JSON object with unbounded strings; tok/s the medians, the cost the median of ${SPEC_REPS} back-to-back pairs' ratios):`,
  '',
  markdownTable(['output', 'tok/s', 'cost over free'], c.rows),
].join('\n');
console.log(md);
if (args['no-write'] === undefined && !ONLY) {
  const doc = fs.existsSync(DOC) ? fs.readFileSync(DOC, 'utf8') : '# Benchmarks\n';
  const block = `<!-- bench:decoding -->\n## Decoding: speculative and constrained (\`npm run bench:decoding\`)\n\n${md}\n<!-- /bench:decoding -->`;
  const re = /<!-- bench:decoding -->[\s\S]*<!-- \/bench:decoding -->/;
  writeAtomic(DOC, re.test(doc) ? doc.replace(re, block) : `${doc.trimEnd()}\n\n${block}\n`);
  console.log(`wrote ${DOC}`);
}
