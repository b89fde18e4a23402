#!/usr/bin/env node
// decoding.mjs — `npm run bench:decoding`: what the decoding features cost and win, in the wasm
// engine under Node (threaded build, 2 threads), written to docs/benchmarks.md between the
// `bench:decoding` markers.
//
//   1. verify cost: one forward of 1 + k tokens (pending token + k drafts, every row's logits)
//      against one decode step, k = 1..8 — measured by generating from a model whose logit
//      bias makes every draft correct, so each forward verifies exactly k drafts;
//   2. speculative decoding end to end: decode tok/s with and without prompt-lookup drafts on
//      the trained demo model (a copy-heavy prompt: "repeat the story") and on a random-weight
//      model (nothing is accepted: the cost of drafting that fails);
//   2b. the MTP drafter end to end (synthetic gemma4-assistant drafters for the bench-preset
//      target, oxinfer synth --assistant-of): decode tok/s with and without MTP drafts, on a
//      random target + random drafter (nothing accepted: the cost of drafting) and on a quiet
//      target whose drafter is built to agree (synth --agree: drafts accepted);
//   3. constrained decoding: decode tok/s under a json_schema grammar against free decoding on a
//      262,144-token vocabulary (the real E2B geometry when its file is cached, else a small
//      model with that vocabulary).
//
//   options: --threads 2  --n-gen 64  --reps 3  --dir DIR (models; $OX_BENCH_DIR or
//            ~/.cache/oxinfer-bench)  --no-write  --doc FILE  --only verify,spec,mtp,json (no doc)
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadModel } from '../../js/index.js';
import { schemaGrammar } from '../../js/schema.js';
import { cli } from '../../tests/oracle/fixtures.mjs';
import { writeAtomic } from './lib.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const args = Object.fromEntries(process.argv.slice(2).join(' ').split('--').filter(Boolean).map((s) => s.trim().split(/\s+/)).map(([k, v]) => [k, v ?? true]));
const THREADS = Number(args.threads ?? 2);
const N_GEN = Number(args['n-gen'] ?? 64);
const REPS = Number(args.reps ?? 3);
const DIR = args.dir ?? process.env.OX_BENCH_DIR ?? path.join(os.homedir(), '.cache', 'oxinfer-bench');
const DOC = args.doc ?? path.join(ROOT, 'docs', 'benchmarks.md');
fs.mkdirSync(DIR, { recursive: true });

const markdownTable = (head, rows) => [head, head.map(() => '---'), ...rows].map((r) => `| ${r.join(' | ')} |`).join('\n');
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
  for await (const ev of model.generate(prompt, { temperature: 0, maxTokens: N_GEN, stopIds: [], ...opts })) {
    if (ev.stats) stats = ev.stats;
    else text += ev.text;
  }
  return { stats, text };
}

// 1. ms per forward with k drafts all kept, over ms per plain decode step
async function verifyCost() {
  const file = synthModel('bench-q8_0', ['--preset', 'bench', '--type', 'q8_0']);
  const model = await loadModel(file, { threads: THREADS });
  const prompt = [2, ...Array.from({ length: 31 }, (_, i) => 1000 + i)];
  const logitBias = { 300: 100 }; // one token wins every step: every n-gram draft of it is right
  const perForward = async (opts) => {
    const ms = [];
    for (let r = 0; r < REPS; r++) {
      const { stats } = await run(model, prompt, { logitBias, ...opts });
      ms.push(stats.decodeMs / stats.decodeSteps);
    }
    return median(ms);
  };
  await run(model, prompt, { maxTokens: 8 }); // warm-up
  const base = await perForward({});
  const rows = [['1 (plain decode)', fmt(base, 2), '1.00']];
  for (const k of [1, 2, 3, 4, 6, 8]) {
    const t = await perForward({ speculative: { draftTokens: k } });
    rows.push([`${k + 1} (pending + ${k} drafts)`, fmt(t, 2), fmt(t / base, 2)]);
  }
  await model.unload();
  return { file, rows };
}

// 2. decode tok/s with and without speculation
async function endToEnd() {
  const out = [];
  const demo = path.join(ROOT, 'web', 'models', 'oxinfer-demo.gguf');
  const cases = [];
  if (fs.existsSync(demo)) cases.push({ label: 'trained demo model, "repeat the story"', file: demo, copy: true });
  cases.push({ label: 'random weights (bench preset Q8_0)', file: synthModel('bench-q8_0', ['--preset', 'bench', '--type', 'q8_0']), copy: false });
  for (const c of cases) {
    const model = await loadModel(c.file, { threads: THREADS });
    let prompt;
    if (c.copy) {
      const story = 'The little fox ran to the river. The fox saw a fish in the water. The fish was red and the fox was happy. ';
      prompt = await model.renderChat([{ role: 'user', content: `Repeat this story: ${story.repeat(2)}` }]);
    } else prompt = [2, ...Array.from({ length: 63 }, (_, i) => 1000 + ((i * 7) % 50))];
    await run(model, prompt, { maxTokens: 8 });
    const plain = [], spec = [];
    let acc = { drafted: 0, accepted: 0 };
    for (let r = 0; r < REPS; r++) {
      plain.push((await run(model, prompt, {})).stats.decodeTokPerSec);
      const s = (await run(model, prompt, { speculative: { draftTokens: 8 } })).stats;
      spec.push(s.decodeTokPerSec);
      acc = { drafted: acc.drafted + s.draftedTokens, accepted: acc.accepted + s.acceptedTokens };
    }
    const p = median(plain), q = median(spec);
    out.push([c.label, fmt(p), fmt(q), `${fmt(q / p, 2)}×`, acc.drafted ? `${fmt((100 * acc.accepted) / acc.drafted, 0)} % of ${acc.drafted}` : 'no drafts']);
    await model.unload();
  }
  return out;
}

// 2b. decode tok/s with and without MTP drafts (4 per step)
async function mtp() {
  const drafterFlags = ['--preset', 'bench', '--type', 'q8_0', '--ple', '0', '--kv-shared', '0', '--hidden', '256', '--layers', '4', '--swa-period', '4', '--ffn', '1024', '--assistant-of', '1536'];
  const cases = [
    { label: 'random target, random drafter', target: synthModel('bench-q8_0', ['--preset', 'bench', '--type', 'q8_0']), drafter: synthModel('bench-drafter-q8_0', [...drafterFlags, '--seed', '77']) },
    { label: 'quiet target, agreeing drafter', target: synthModel('bench-quiet-q8_0', ['--preset', 'bench', '--type', 'q8_0', '--branch-gain', '0.02']), drafter: synthModel('bench-drafter-agree-q8_0', [...drafterFlags, '--agree', '--branch-gain', '0.01']) },
  ];
  const out = [];
  for (const c of cases) {
    const model = await loadModel(c.target, { threads: THREADS, drafter: c.drafter });
    const prompt = [2, ...Array.from({ length: 63 }, (_, i) => 1000 + ((i * 7) % 50))];
    const speculative = { method: 'mtp', draftTokens: 4 };
    await run(model, prompt, { maxTokens: 8, speculative });
    const plain = [], spec = [];
    let acc = { drafted: 0, accepted: 0 };
    for (let r = 0; r < REPS; r++) {
      plain.push((await run(model, prompt, {})).stats.decodeTokPerSec);
      const s = (await run(model, prompt, { speculative })).stats;
      spec.push(s.decodeTokPerSec);
      acc = { drafted: acc.drafted + s.draftedTokens, accepted: acc.accepted + s.acceptedTokens };
    }
    const p = median(plain), q = median(spec);
    out.push([c.label, fmt(p), fmt(q), `${fmt(q / p, 2)}×`, acc.drafted ? `${fmt((100 * acc.accepted) / acc.drafted, 0)} % of ${acc.drafted}` : 'no drafts']);
    await model.unload();
  }
  return out;
}

// 3. decode tok/s under a json_schema grammar against free decoding on a 262k vocabulary
async function constrained() {
  const e2b = path.join(DIR, 'e2b-q4_0.gguf');
  const file = fs.existsSync(e2b) ? e2b : synthModel('tiny-vocab262k-q8_0', ['--preset', 'tiny', '--vocab', '262144', '--type', 'q8_0']);
  const model = await loadModel(file, { threads: THREADS });
  // strings without a bound: the mask cache sees the same state at every character
  const grammar = schemaGrammar({ type: 'object', properties: { name: { type: 'string' }, notes: { type: 'array', items: { type: 'string' } } }, required: ['name', 'notes'] });
  const prompt = [2, ...Array.from({ length: 15 }, (_, i) => 1000 + i)];
  await run(model, prompt, { maxTokens: 4, grammar });
  const rate = async (opts) => {
    const xs = [];
    for (let r = 0; r < REPS; r++) xs.push((await run(model, prompt, opts)).stats.decodeTokPerSec);
    return median(xs);
  };
  const free = await rate({}), json = await rate({ grammar, stopIds: undefined });
  await model.unload();
  return { file: path.basename(file), rows: [['free', fmt(free, 2), '—'], ['json_schema grammar', fmt(json, 2), `${fmt((100 * (free - json)) / free, 1)} %`]] };
}

const t0 = Date.now();
const load = os.loadavg().map((x) => x.toFixed(2)).join(' ');
const ONLY = args.only ? String(args.only).split(',') : null; // --only verify,spec,json: print those
const want = (k) => !ONLY || ONLY.includes(k);
const v = want('verify') ? await verifyCost() : { file: '', rows: [] };
const e = want('spec') ? await endToEnd() : [];
const mt = want('mtp') ? await mtp() : [];
const c = want('json') ? await constrained() : { file: '', rows: [] };
const md = [
  `Run ${new Date().toISOString()} with \`npm run bench:decoding\` (wasm mt in Node ${process.version}, ${THREADS} threads, ${N_GEN} greedy tokens, median of ${REPS}); load average at the start ${load}, ${Math.round((Date.now() - t0) / 1000)} s.`,
  '',
  `**Verify cost** (${path.basename(v.file)}): one forward of the pending token plus k drafts (every row's logits), all drafts kept, against one decode step.`,
  '',
  markdownTable(['tokens per forward', 'ms per forward', 'relative to one decode step'], v.rows),
  '',
  '**Speculative decoding** (prompt lookup, up to 8 drafts, greedy):',
  '',
  markdownTable(['model, prompt', 'decode tok/s', 'with drafts', 'speed-up', 'drafts kept'], e),
  '',
  '**MTP drafter** (bench-preset target, a synthetic 4-layer gemma4-assistant drafter of width 256, 4 drafts per step, greedy):',
  '',
  markdownTable(['target, drafter', 'decode tok/s', 'with MTP drafts', 'speed-up', 'drafts kept'], mt),
  '',
  `**Constrained decoding** (${c.file}, 262,144-token vocabulary; decode tok/s, greedy, a JSON object with unbounded strings):`,
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
