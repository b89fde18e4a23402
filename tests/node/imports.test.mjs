// The import graph of js/: every relative import (static, dynamic, and the worker scripts
// spawned with new URL(..., import.meta.url)) names a file that exists, no module imports
// itself through a cycle, and each execution context imports only what it may:
// shared/ imports only shared/, host/ and gpu/ never reach main/ or engine/, engine/ never main/
// (a folder not named here, such as a new context, is not judged).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '../..');
const js = join(root, 'js');

function files(dir) {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? files(p) : p.endsWith('.js') ? [p] : [];
  });
}

// relative specifiers of imports, re-exports, import() and new URL('...', import.meta.url)
function edges(file) {
  const text = readFileSync(file, 'utf8').replace(/^\s*\/\/.*$/gm, '');
  const specs = [
    ...text.matchAll(/\b(?:import|export)\b[^'";]*?\bfrom\s*['"](\.[^'"]+)['"]/g),
    ...text.matchAll(/\bimport\s*\(\s*(?:\/\*[^*]*\*\/\s*)*['"](\.[^'"]+)['"]/g),
    ...text.matchAll(/new URL\(\s*['"](\.[^'"]+\.js)['"]\s*,\s*(?:import\.meta\.url|here)\s*\)/g),
  ].map((m) => m[1]);
  return [...new Set(specs)].filter((s) => !s.includes('/dist/')).map((s) => join(dirname(file), s));
}

const graph = new Map(files(js).map((f) => [f, edges(f)]));
const name = (f) => relative(root, f);

test('every relative import in js/ names a file that exists', () => {
  const missing = [...graph].flatMap(([f, to]) =>
    to.filter((t) => !existsSync(t)).map((t) => `${name(f)} -> ${name(t)}`),
  );
  assert.deepEqual(missing, []);
});

test('js/ has no import cycle', () => {
  const state = new Map(); // 1: on the path, 2: done
  const cycles = [];
  const visit = (f, path) => {
    if (state.get(f) === 2) return;
    if (state.get(f) === 1) return void cycles.push([...path.slice(path.indexOf(f)), f].map(name).join(' -> '));
    state.set(f, 1);
    for (const t of graph.get(f) ?? []) visit(t, [...path, f]);
    state.set(f, 2);
  };
  for (const f of graph.keys()) visit(f, []);
  assert.deepEqual(cycles, []);
});

test('each execution context imports only what it may', () => {
  const may = {
    shared: ['shared'],
    host: ['host', 'shared'],
    gpu: ['gpu', 'shared'],
    engine: ['engine', 'host', 'gpu', 'shared'],
    main: ['main', 'engine', 'host', 'gpu', 'shared'],
  };
  const ctx = (f) => relative(js, f).split('/')[0];
  const bad = [...graph].flatMap(([f, to]) =>
    to
      .filter((t) => may[ctx(f)] && may[ctx(t)] && !may[ctx(f)].includes(ctx(t)))
      .map((t) => `${name(f)} -> ${name(t)}`),
  );
  assert.deepEqual(bad, []);
});
