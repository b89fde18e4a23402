// Fixtures for the oracle and browser tests, made with the project's own
// generator (`oxinfer synth`) and run with its own CLI (`oxinfer run`,
// `oxinfer tokenize`).  The CLI is $OX_CLI or build/oxinfer (tools/test.sh
// builds it before the Node and browser suites).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
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

/** A w x h PNG (its bytes, in an ArrayBuffer of their own) of a smooth colour pattern; seed changes it. */
export function patternPng(w, h, seed) {
  const { PNG } = createRequire(import.meta.url)('pngjs');
  const p = new PNG({ width: w, height: h });
  for (let y = 0; y < h; y++)
    for (let x = 0; x < w; x++) {
      const i = (y * w + x) * 4;
      p.data[i] = (x * 255) / w;
      p.data[i + 1] = (y * 255) / h;
      p.data[i + 2] = (128 + 127 * Math.sin((x + y) / (3 + seed))) | 0;
      p.data[i + 3] = 255;
    }
  return new Uint8Array(PNG.sync.write(p));
}
