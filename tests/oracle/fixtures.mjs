// Fixtures for the oracle and browser tests, made with the project's own
// generator (`oxinfer synth`) and run with its own CLI (`oxinfer run`,
// `oxinfer tokenize`).  The CLI is $OX_CLI or build/oxinfer (tools/test.sh
// builds it before the Node and browser suites).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ROOT } from '../../tools/serve.mjs';

export const CLI = process.env.OX_CLI || path.join(ROOT, 'build', 'oxinfer');

export function requireCli() {
  if (!fs.existsSync(CLI))
    throw new Error(`${CLI} not found: build it (cmake -S . -B build && cmake --build build -j2) or set OX_CLI`);
  return CLI;
}

export function requireDist() {
  const f = path.join(ROOT, 'js', 'main', 'index.js');
  if (!fs.existsSync(f)) throw new Error(`${f} not found`);
  if (!fs.existsSync(path.join(ROOT, 'dist')))
    throw new Error(`${path.join(ROOT, 'dist')} not found: run make -f Makefile.emscripten`);
}

export function cli(args, { json = false, input = null } = {}) {
  const r = spawnSync(requireCli(), args, { encoding: 'utf8', maxBuffer: 256 << 20, input });
  if (r.error) throw new Error(`oxinfer ${args.join(' ')}: ${r.error.message}`);
  if (r.status !== 0) throw new Error(`oxinfer ${args.join(' ')} exited ${r.status}: ${r.stderr.trim()}`);
  return json ? JSON.parse(r.stdout) : r.stdout;
}

export function tmpDir(tag) {
  return fs.mkdtempSync(path.join(os.tmpdir(), `oxinfer-${tag}-`));
}

// Write a synthetic model; returns its path.  extra: more `oxinfer synth` flags.
export function synth(dir, { preset = 'tiny', type = 'f32', extra = [] } = {}) {
  const tag = extra
    .map((x) => x.replace(/^--/, ''))
    .join('-')
    .replace(/[^a-z0-9.-]+/gi, '_');
  const out = path.join(dir, `${preset}-${type}${tag ? '-' + tag : ''}.gguf`);
  if (!fs.existsSync(out)) cli(['synth', '--preset', preset, '--type', type, ...extra, '-o', out]);
  return out;
}
