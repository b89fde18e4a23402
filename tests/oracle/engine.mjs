// Our two engines on a token sequence, as per-position log-softmax arrays:
// native (`oxinfer run --all --json`) and wasm (the package's Node API,
// model.logits(tokens, { all: true })).
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT } from '../../tools/serve.mjs';
import { cli } from './fixtures.mjs';
import { logSoftmax } from './llamacpp.mjs';

// -> { vocab, pos: Array<Float64Array> } (full-vocab log-probs per position); file: a path or
// the paths of one model (an HF directory's files)
export function nativeLogprobs(file, tokens, { threads = 1 } = {}) {
  const r = cli(
    ['run', ...[file].flat(), '--tokens', tokens.join(','), '--all', '--json', '--threads', String(threads)],
    { json: true },
  );
  if (!Array.isArray(r.positions) || r.positions.length !== tokens.length)
    throw new Error(`oxinfer run: expected ${tokens.length} positions, got ${r.positions?.length}`);
  const vocab = r.positions[0].top.length;
  const pos = r.positions.map((p) => {
    const a = new Float64Array(vocab).fill(NaN);
    for (const [id, lp] of p.top) a[id] = lp;
    return a;
  });
  return { vocab, pos };
}

let pkg = null;
export async function loadPackage() {
  pkg ??= await import(pathToFileURL(path.join(ROOT, 'js', 'main', 'index.js')).href);
  return pkg;
}

// Raw logits for every position from the wasm engine in Node.
// -> { vocab, flat: Float32Array (n * vocab), pos: Array<Float64Array> log-probs }
export async function engineLogprobs(file, tokens, { threads = 1, model = null } = {}) {
  const { loadModel } = await loadPackage();
  const m = model || (await loadModel(file, { threads }));
  try {
    const flat = await m.logits(tokens, { all: true });
    const vocab = m.info.vocab;
    if (flat.length !== tokens.length * vocab)
      throw new Error(`model.logits: ${flat.length} floats for ${tokens.length} tokens x vocab ${vocab}`);
    const pos = [];
    for (let i = 0; i < tokens.length; i++) pos.push(logSoftmax(flat.subarray(i * vocab, (i + 1) * vocab)));
    return { vocab, flat, pos, threads: m.threads, build: m.build };
  } finally {
    if (!model) await m.dispose();
  }
}

export function argmax(a) {
  let best = 0;
  for (let i = 1; i < a.length; i++) if (a[i] > a[best]) best = i;
  return best;
}
