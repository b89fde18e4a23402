// vision.mjs — the vision tower row of docs/benchmarks.md (npm run bench:vision): one 240x240
// image (the 224x224 class at a multiple of 48: 225 patches, 25 soft tokens) through the
// generator's E2B-sized Q8_0 tower, with the wasm CLI under Node (SIMD128 and relaxed-SIMD
// builds) and natively. Each build runs `oxinfer image ... --repeat R` in a fresh process;
// the runs of the builds alternate, so a load from other processes falls on all of them alike.
//
//   node tools/bench/vision.mjs [--runs N] [--repeat R] [--threads T] [--size HxW]
//                               [--only wasm,relaxed,native] [--base DIR] [--dir DIR]
//
// --base DIR: a second build's tools (DIR/oxinfer.js and DIR/oxinfer_relaxed.js, e.g. a copy
// of build-wasm/tools from another commit) run alternately with this one, rows marked "base".
// The tower and its text model are generated once into --dir (default
// ~/.cache/oxinfer-bench/vision) by the native CLI (build/oxinfer). Needs the wasm tools
// (`make -f Makefile.emscripten tools relaxed-test`) and the native build. Prints the best
// embed time of each run, then a table: best, median and worst over the runs, the median CPU
// time of the process per image (user + system, from /usr/bin/time: on a machine shared with
// other work it moves less than the wall time; it includes the load, ~0.4 s in wasm), and the
// load average (1 min) at the start and the end.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { summary } from './lib.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

function args() {
  const a = {
    runs: 3,
    repeat: 3,
    threads: 2,
    size: '240x240',
    only: 'wasm,relaxed,native',
    base: null,
    dir: path.join(os.homedir(), '.cache', 'oxinfer-bench', 'vision'),
  };
  const v = process.argv.slice(2);
  for (let i = 0; i < v.length; i++) {
    const k = v[i].replace(/^--/, '');
    if (!(k in a) || i + 1 >= v.length) throw new Error(`bench:vision: bad option ${v[i]}`);
    a[k] = ['runs', 'repeat', 'threads'].includes(k) ? Number(v[++i]) : v[++i];
  }
  return a;
}

const TIME = '/usr/bin/time';

function run(cmd, argv, env) {
  const r = spawnSync(cmd, argv, { encoding: 'utf8', env: { ...process.env, ...env }, maxBuffer: 1 << 24 });
  if (r.status !== 0) throw new Error(`bench:vision: ${cmd} ${argv.join(' ')} failed:\n${r.stderr}`);
  return r;
}

// the run's stdout and its process CPU seconds (NaN without /usr/bin/time)
function timed(cmd, argv, env) {
  if (!fs.existsSync(TIME)) return { out: run(cmd, argv, env).stdout, cpu: NaN };
  const r = run(TIME, ['-f', 'cpu %U %S', cmd, ...argv], env);
  const m = /cpu ([0-9.]+) ([0-9.]+)\s*$/.exec(r.stderr);
  return { out: r.stdout, cpu: m ? Number(m[1]) + Number(m[2]) : NaN };
}

function makeTower(dir) {
  const cli = path.join(ROOT, 'build', 'oxinfer');
  const model = path.join(dir, 'm.gguf'),
    mmproj = path.join(dir, 'mm.gguf');
  fs.mkdirSync(dir, { recursive: true });
  const synth = ['synth', '--preset', 'tiny', '--vision', 'e2b', '--type', 'q8_0'];
  if (!fs.existsSync(model)) run(cli, [...synth, '-o', model]);
  if (!fs.existsSync(mmproj)) run(cli, [...synth, '--format', 'mmproj', '-o', mmproj]);
  return [model, mmproj];
}

// The builds to time: [label, command, argv prefix, env].
function builds(a) {
  const node = ['--no-experimental-fetch'],
    env = { OX_TOOL_THREADS: String(a.threads) };
  const out = [];
  const dirs = [['', path.join(ROOT, 'build-wasm', 'tools')]];
  if (a.base) dirs.push([' (base)', path.resolve(a.base)]);
  for (const [tag, dir] of dirs) {
    if (a.only.includes('wasm'))
      out.push([`wasm SIMD128${tag}`, process.execPath, [...node, path.join(dir, 'oxinfer.js')], env]);
    if (a.only.includes('relaxed'))
      out.push([
        `wasm relaxed${tag}`,
        process.execPath,
        ['--experimental-wasm-relaxed-simd', ...node, path.join(dir, 'oxinfer_relaxed.js')],
        env,
      ]);
  }
  if (a.only.includes('native')) out.push(['native', path.join(ROOT, 'build', 'oxinfer'), [], {}]);
  return out;
}

function main() {
  const a = args();
  const files = makeTower(a.dir);
  const list = builds(a);
  const times = list.map(() => []),
    cpus = list.map(() => []);
  const load0 = os.loadavg()[0];
  for (let r = 0; r < a.runs; r++)
    list.forEach(([label, cmd, pre, env], i) => {
      const { out, cpu } = timed(
        cmd,
        [...pre, 'image', ...files, '--size', a.size, '--threads', String(a.threads), '--repeat', String(a.repeat)],
        env,
      );
      const m = /embed best of \d+: ([0-9.]+) s/.exec(out);
      if (!m) throw new Error(`bench:vision: no time in the output of ${label}:\n${out}`);
      times[i].push(Number(m[1]));
      cpus[i].push(cpu / a.repeat);
      console.log(`run ${r + 1} ${label}: ${m[1]} s (CPU ${(cpu / a.repeat).toFixed(2)} s per image)`);
    });
  const load1 = os.loadavg()[0];
  console.log(
    `\n${a.size}, ${a.threads} threads, best of ${a.repeat} per run, ${a.runs} runs; load average ${load0.toFixed(1)} -> ${load1.toFixed(1)}\n`,
  );
  console.log('| build | best | median | worst | CPU per image (median) |\n| --- | --- | --- | --- | --- |');
  list.forEach(([label], i) => {
    const s = summary(times[i]);
    console.log(
      `| ${label} | ${s.min.toFixed(2)} s | ${s.med.toFixed(2)} s | ${s.max.toFixed(2)} s | ${summary(cpus[i]).med.toFixed(2)} s |`,
    );
  });
}

main();
