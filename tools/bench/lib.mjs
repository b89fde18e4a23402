// lib.mjs — helpers of tools/bench.mjs and tools/bench/*: statistics, the prompts, the GGUF
// header, process memory from /proc, the disk-space check, the result table, llama.cpp's tools.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

// ---- statistics ----

export function median(xs) {
  const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
  if (!s.length) return NaN;
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

// {med, min, max, n} of the finite values
export function summary(xs) {
  const v = xs.filter(Number.isFinite);
  return { med: median(v), min: v.length ? Math.min(...v) : NaN, max: v.length ? Math.max(...v) : NaN, n: v.length };
}

// ---- prompts ----

// n deterministic ids in [lo, hi) (xorshift32), as the wllama anchor harness makes them
export function tokenSeq(n, seed, lo, hi) {
  let x = seed >>> 0 || 1;
  const out = [];
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    out.push(lo + (x % (hi - lo)));
  }
  return out;
}

// The prompt of one rep: BOS + nPrompt-1 ids of the USER_DEFINED <unusedN> block, which
// llama.cpp tokenizes back to exactly those ids (wllama takes text only).
export function prompt(meta, nPrompt, seed) {
  const lo = meta.userFirst,
    hi = meta.userFirst + meta.userCount;
  const ids = tokenSeq(nPrompt - 1, seed, lo, hi);
  return { tokens: [meta.bos, ...ids], text: ids.map((id) => `<unused${id - lo}>`).join('') };
}

// ---- GGUF metadata (the few keys the harness needs) ----

const SCALAR = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8 };

// A GGUF file's header: key/value pairs (arrays are skipped except their length: key -> {n})
// and the tensor directory [{name, dims, type, offset}], offsets from the data start.
export function ggufHeader(file) {
  const fd = fs.openSync(file, 'r');
  try {
    const size = fs.fstatSync(fd).size;
    let cap = Math.min(size, 16 << 20);
    for (;;) {
      const buf = Buffer.alloc(cap);
      fs.readSync(fd, buf, 0, cap, 0);
      try {
        return { ...parseHeader(buf, file), size };
      } catch (e) {
        if (!(e instanceof RangeError) || cap >= size)
          throw e.message.startsWith(file) ? e : new Error(`${file}: ${e.message}`);
        cap = Math.min(size, cap * 4);
      }
    }
  } finally {
    fs.closeSync(fd);
  }
}

export const ggufMeta = (file) => ggufHeader(file).kv;

function parseHeader(b, file) {
  if (b.toString('latin1', 0, 4) !== 'GGUF') throw new Error(`${file}: not a GGUF file`);
  const version = b.readUInt32LE(4);
  if (version !== 3) throw new Error(`${file}: GGUF version ${version}, expected 3`);
  let o = 24;
  const nTensors = Number(b.readBigUInt64LE(8));
  const nKv = Number(b.readBigUInt64LE(16));
  const need = (n) => {
    if (o + n > b.length) throw new RangeError('past the buffer');
  };
  const str = () => {
    need(8);
    const n = Number(b.readBigUInt64LE(o));
    need(8 + n);
    const s = b.toString('utf8', o + 8, o + 8 + n);
    o += 8 + n;
    return s;
  };
  const scalar = (t) => {
    need(SCALAR[t]);
    const v =
      t === 4
        ? b.readUInt32LE(o)
        : t === 5
          ? b.readInt32LE(o)
          : t === 6
            ? b.readFloatLE(o)
            : t === 7
              ? b[o] !== 0
              : t === 10
                ? Number(b.readBigUInt64LE(o))
                : t === 0
                  ? b[o]
                  : null;
    o += SCALAR[t];
    return v;
  };
  const kv = {};
  for (let i = 0; i < nKv; i++) {
    const key = str();
    need(4);
    const t = b.readUInt32LE(o);
    o += 4;
    if (t === 8) kv[key] = str();
    else if (t === 9) {
      need(12);
      const et = b.readUInt32LE(o),
        n = Number(b.readBigUInt64LE(o + 4));
      o += 12;
      if (et === 8) for (let k = 0; k < n; k++) str();
      else if (SCALAR[et]) o += SCALAR[et] * n;
      else throw new Error(`${file}: ${key}: unsupported array type ${et}`);
      kv[key] = { n };
    } else if (SCALAR[t]) kv[key] = scalar(t);
    else throw new Error(`${file}: ${key}: unknown value type ${t}`);
    need(0);
  }
  const tensors = [];
  for (let i = 0; i < nTensors; i++) {
    const name = str();
    need(4);
    const nd = b.readUInt32LE(o);
    o += 4;
    need(8 * nd + 12);
    const dims = [];
    for (let d = 0; d < nd; d++) dims.push(Number(b.readBigUInt64LE(o + 8 * d)));
    o += 8 * nd;
    tensors.push({
      name,
      dims,
      type: GGML_TYPE[b.readUInt32LE(o)] ?? `type${b.readUInt32LE(o)}`,
      offset: Number(b.readBigUInt64LE(o + 4)),
    });
    o += 12;
  }
  const align = kv['general.alignment'] ?? 32;
  return { kv, tensors, dataStart: Math.ceil(o / align) * align };
}

// ggml type ids (ggml.h) -> names, for the report
const GGML_TYPE = {
  0: 'F32',
  1: 'F16',
  2: 'Q4_0',
  3: 'Q4_1',
  6: 'Q5_0',
  7: 'Q5_1',
  8: 'Q8_0',
  9: 'Q8_1',
  10: 'Q2_K',
  11: 'Q3_K',
  12: 'Q4_K',
  13: 'Q5_K',
  14: 'Q6_K',
  15: 'Q8_K',
  16: 'IQ2_XXS',
  17: 'IQ2_XS',
  18: 'IQ3_XXS',
  19: 'IQ1_S',
  20: 'IQ4_NL',
  21: 'IQ3_S',
  22: 'IQ2_S',
  23: 'IQ4_XS',
  24: 'I8',
  25: 'I16',
  26: 'I32',
  27: 'I64',
  28: 'F64',
  29: 'IQ1_M',
  30: 'BF16',
  34: 'TQ1_0',
  35: 'TQ2_0',
  39: 'MXFP4',
};

// What one decode step reads: every tensor once (the tied embedding is the output head), except
// the per-layer embedding table, of which it gathers one row. Tensor sizes are the distances
// between data offsets (so alignment padding is counted: at most 31 bytes per tensor).
// -> { bytes, mix: "Q4_K ×73, Q6_K ×9, ..." (2-D tensors by type, most bytes first) }
export function weightsPerToken(file) {
  const h = ggufHeader(file);
  const ts = [...h.tensors].sort((x, y) => x.offset - y.offset);
  const byType = new Map();
  let bytes = 0;
  ts.forEach((t, i) => {
    const n = (i + 1 < ts.length ? ts[i + 1].offset : h.size - h.dataStart) - t.offset;
    const rows = t.dims.slice(1).reduce((p, d) => p * d, 1);
    bytes += t.name === 'per_layer_token_embd.weight' ? n / rows : n;
    if (t.dims.length >= 2) {
      const e = byType.get(t.type) ?? { n: 0, bytes: 0 };
      byType.set(t.type, { n: e.n + 1, bytes: e.bytes + n });
    }
  });
  const mix = [...byType]
    .sort((x, y) => y[1].bytes - x[1].bytes)
    .map(([k, v]) => `${k} ×${v.n}`)
    .join(', ');
  return { bytes, mix };
}

// What the harness needs from a synthetic model's metadata.
export function modelMeta(file) {
  const kv = ggufMeta(file);
  const userFirst = kv['synthetic.user_token_first'],
    userCount = kv['synthetic.user_token_count'];
  if (!(userCount > 0)) throw new Error(`${file}: no synthetic.user_token_* keys (not made by oxinfer synth?)`);
  const arch = kv['general.architecture'];
  return {
    userFirst,
    userCount,
    bos: kv['tokenizer.ggml.bos_token_id'] ?? 2,
    vocab: kv['tokenizer.ggml.tokens']?.n,
    layers: kv[`${arch}.block_count`],
    hidden: kv[`${arch}.embedding_length`],
    ple: kv[`${arch}.embedding_length_per_layer_input`] ?? 0,
  };
}

// ---- process memory (Linux /proc) ----

export function procStatus(pid) {
  try {
    const s = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (k) => {
      const m = new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(s);
      return m ? Number(m[1]) * 1024 : NaN;
    };
    return { rss: kb('VmRSS'), hwm: kb('VmHWM'), anon: kb('RssAnon'), file: kb('RssFile'), shmem: kb('RssShmem') };
  } catch {
    return null;
  }
}

function procList() {
  const out = [];
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      // Chromium rewrites its children's title: the arguments may be one space-joined string
      const cmd = fs.readFileSync(`/proc/${d}/cmdline`, 'latin1').replace(/\0/g, ' ');
      out.push({ pid: Number(d), ppid, cmd });
    } catch {}
  }
  return out;
}

// The processes below `pid` (children, theirs, ...).
export function descendants(pid) {
  const ps = procList(),
    out = [];
  const walk = (p) => {
    for (const c of ps) {
      if (c.ppid !== p) continue;
      out.push(c.pid);
      walk(c.pid);
    }
  };
  walk(pid);
  return out;
}

// Renderer processes of the Chromium whose command line carries `marker`.
export function rendererPids(marker) {
  const ps = procList();
  const root = ps.find((p) => p.cmd.includes(` ${marker} `) || p.cmd.endsWith(` ${marker}`));
  if (!root) return [];
  const kids = new Map();
  for (const p of ps) kids.set(p.ppid, [...(kids.get(p.ppid) ?? []), p]);
  const out = [];
  const walk = (pid) => {
    for (const c of kids.get(pid) ?? []) {
      if (c.cmd.includes(' --type=renderer ')) out.push(c.pid);
      walk(c.pid);
    }
  };
  walk(root.pid);
  return out;
}

// MemAvailable (free + reclaimable page cache), the memory a new allocation can get
export function availableBytes() {
  try {
    return Number(/^MemAvailable:\s+(\d+) kB/m.exec(fs.readFileSync('/proc/meminfo', 'utf8'))[1]) * 1024;
  } catch {
    return os.freemem();
  }
}

// ---- disk ----

export function freeBytes(dir) {
  const s = fs.statfsSync(dir);
  return s.bavail * s.bsize;
}

// ---- formatting ----

export const fmtMB = (b) =>
  Number.isFinite(b) ? (b >= 1e9 ? `${(b / 1e9).toFixed(2)} GB` : `${(b / 1e6).toFixed(0)} MB`) : '–';
export const fmtS = (ms) => (Number.isFinite(ms) ? `${(ms / 1000).toFixed(2)} s` : '–');

function fmtRate(s) {
  if (!s || !Number.isFinite(s.med)) return '–';
  const d = s.med >= 100 ? 0 : s.med >= 10 ? 1 : 2;
  return s.n > 1 ? `${s.med.toFixed(d)} [${s.min.toFixed(d)}–${s.max.toFixed(d)}]` : s.med.toFixed(d);
}

const fmtRatio = (a, b) => (Number.isFinite(a) && Number.isFinite(b) && b > 0 ? `${(a / b).toFixed(2)}×` : '');

// rows: {engine, weights, threads, load: summary(ms), prefill: summary, decode: summary,
// bandwidth: string, mem: string, ref?: row of wllama to compare with}
export function markdownTable(rows) {
  const head = [
    'engine',
    'weights',
    'threads',
    'load',
    'prefill tok/s',
    'decode tok/s',
    'decode GB/s (% of wasm ceiling; WebGPU: of the GPU read)',
    'peak memory',
    'ours / wllama (prefill, decode)',
  ];
  const lines = [`| ${head.join(' | ')} |`, `| ${head.map(() => '---').join(' | ')} |`];
  for (const r of rows) {
    const ratio = r.ref
      ? `${fmtRatio(r.prefill.med, r.ref.prefill.med)}, ${fmtRatio(r.decode.med, r.ref.decode.med)}`
      : '';
    const load =
      r.load && Number.isFinite(r.load.med)
        ? r.load.n > 1
          ? `${fmtS(r.load.med)} [${fmtS(r.load.min)}–${fmtS(r.load.max)}]`
          : fmtS(r.load.med)
        : '–';
    lines.push(
      `| ${[r.engine, r.weights, r.threads, load, fmtRate(r.prefill), fmtRate(r.decode), r.bandwidth ?? '–', r.mem ?? '–', ratio].join(' | ')} |`,
    );
  }
  return lines.join('\n');
}

export function writeAtomic(file, text) {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.tmp-${process.pid}`;
  fs.writeFileSync(tmp, text);
  fs.renameSync(tmp, file);
}

// ---- llama.cpp's tools, built once outside the repo by tools/llamacpp.sh (from the npm package) ----

const llamaBins = new Map();
export function llamaBin(target) {
  if (!llamaBins.has(target)) {
    console.error(`$ tools/llamacpp.sh ${target}`);
    const r = spawnSync('bash', [path.join(ROOT, 'tools', 'llamacpp.sh'), target], {
      cwd: ROOT,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    if (r.status !== 0) throw new Error(`bench: tools/llamacpp.sh ${target} failed (exit ${r.status ?? r.signal})`);
    llamaBins.set(target, r.stdout.trim().split('\n').pop());
  }
  return llamaBins.get(target);
}
