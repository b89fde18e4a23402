#!/usr/bin/env node
// `npm run demo`: build what the page needs, serve web/ with COOP/COEP and print the URLs.
//
//   npm run demo [-- --model FILE]... [--port 8080] [--no-isolation] [--no-build]
//                [--random [--preset tiny] [--type q8_0]]
//
// Build: `make -f Makefile.emscripten` (incremental) for dist/. The page offers the project's
// trained demo model (web/models/oxinfer-demo.gguf, see docs/demo.md) and a catalog of
// Gemma 4 GGUFs on Hugging Face. --random also serves a random-weight model from
// `oxinfer synth` (native CLI, cmake build/), written to $XDG_CACHE_HOME/oxinfer-web/
// (default ~/.cache/oxinfer-web/), outside the repo.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startServer, modelFiles, ROOT } from './serve.mjs';

function parseArgs(argv) {
  const a = { models: [], port: 8080, isolate: true, build: true, random: false, preset: 'tiny', type: 'q8_0' };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i];
    const v = () => {
      if (i + 1 >= argv.length) throw new Error(`${k} needs a value`);
      return argv[++i];
    };
    if (k === '--model') a.models.push(v());
    else if (k === '--port') a.port = Number(v());
    else if (k === '--no-isolation') a.isolate = false;
    else if (k === '--no-build') a.build = false;
    else if (k === '--random') a.random = true;
    else if (k === '--preset') a.preset = v();
    else if (k === '--type') a.type = v();
    else if (k === '-h' || k === '--help') {
      console.log(
        'usage: npm run demo [-- --model FILE]... [--port N] [--no-isolation] [--no-build] [--random [--preset tiny] [--type q8_0]]',
      );
      process.exit(0);
    } else throw new Error(`demo: unknown option ${k} (see --help)`);
  }
  if (!Number.isInteger(a.port) || a.port < 0 || a.port > 65535) throw new Error('demo: --port must be 0..65535');
  return a;
}

function run(cmd, args, opts = {}) {
  console.log(`$ ${cmd} ${args.join(' ')}`);
  const r = spawnSync(cmd, args, { cwd: ROOT, stdio: 'inherit', ...opts });
  if (r.error) throw new Error(`demo: cannot run ${cmd}: ${r.error.message}`);
  if (r.status !== 0) throw new Error(`demo: \`${cmd} ${args.join(' ')}\` failed (exit ${r.status})`);
}

function buildWasm() {
  const env = { ...process.env, NODE_PATH: process.env.NODE_PATH || '/usr/share/nodejs' };
  run('make', ['-f', 'Makefile.emscripten', '-j2'], { env });
}

function buildNative() {
  const dir = path.join(ROOT, 'build');
  if (!fs.existsSync(path.join(dir, 'CMakeCache.txt')))
    run('cmake', ['-S', ROOT, '-B', dir, '-DCMAKE_BUILD_TYPE=Release']);
  run('cmake', ['--build', dir, '--target', 'oxinfer', '-j2']);
  return path.join(dir, 'oxinfer');
}

function cacheDir() {
  const base = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  return path.join(base, 'oxinfer-web');
}

function demoModel(a, cli) {
  const dir = cacheDir();
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `demo-${a.preset}-${a.type}.gguf`);
  if (fs.existsSync(file)) return file;
  const tmp = `${file}.${process.pid}.tmp`;
  run(cli, ['synth', '--preset', a.preset, '--type', a.type, '-o', tmp]);
  fs.renameSync(tmp, file);
  return file;
}

async function main() {
  const a = parseArgs(process.argv.slice(2));
  if (a.build) buildWasm();
  if (!fs.existsSync(path.join(ROOT, 'dist'))) throw new Error('demo: dist/ is missing (run without --no-build)');
  if (a.random) {
    const cli = a.build ? buildNative() : path.join(ROOT, 'build', 'oxinfer');
    if (!fs.existsSync(cli)) throw new Error(`demo: ${cli} is missing (run without --no-build, or pass --model FILE)`);
    a.models.push(demoModel(a, cli));
  }
  const files = modelFiles(a.models);
  const server = await startServer({ files, isolate: a.isolate, port: a.port });
  const urls = Object.keys(files);
  if (!urls.length) urls.push('/models/oxinfer-demo.gguf');
  console.log(
    `\noxinfer-web demo: ${server.url}/  (${a.isolate ? 'cross-origin isolated: multi-threaded' : 'no COOP/COEP: single-threaded'})`,
  );
  console.log(
    `with the model preloaded: ${server.url}/?${urls.map((u) => `model=${encodeURIComponent(u)}`).join('&')}`,
  );
  for (const [u, f] of Object.entries(files))
    console.log(`  ${u} = ${f}${f.startsWith(cacheDir()) ? ' (random weights)' : ''}`);
  console.log('Ctrl+C stops the server.');
}

main().catch((e) => {
  console.error(e.message || e);
  process.exit(1);
});
