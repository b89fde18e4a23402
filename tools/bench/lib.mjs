// lib.mjs — helpers of tools/bench.mjs: statistics, the prompts, GGUF metadata, process
// memory from /proc, the disk-space check and the result table.
import fs from 'node:fs';
import path from 'node:path';

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
    x ^= x << 13; x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5; x >>>= 0;
    out.push(lo + (x % (hi - lo)));
  }
  return out;
}

// The prompt of one rep: BOS + nPrompt-1 ids of the USER_DEFINED <unusedN> block, which
// llama.cpp tokenizes back to exactly those ids (wllama takes text only).
export function prompt(meta, nPrompt, seed) {
  const lo = meta.userFirst, hi = meta.userFirst + meta.userCount;
  const ids = tokenSeq(nPrompt - 1, seed, lo, hi);
  return { tokens: [meta.bos, ...ids], text: ids.map((id) => `<unused${id - lo}>`).join('') };
}

// ---- GGUF metadata (the few keys the harness needs) ----

const SCALAR = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8 };

// Key/value pairs of a GGUF file; arrays are skipped except their length (key -> {n}).
export function ggufMeta(file) {
  const fd = fs.openSync(file, 'r');
  try {
    const size = fs.fstatSync(fd).size;
    let cap = Math.min(size, 16 << 20);
    for (;;) {
      const buf = Buffer.alloc(cap);
      fs.readSync(fd, buf, 0, cap, 0);
      try {
        return parseMeta(buf, file);
      } catch (e) {
        if (!(e instanceof RangeError) || cap >= size) throw e.message.startsWith(file) ? e : new Error(`${file}: ${e.message}`);
        cap = Math.min(size, cap * 4);
      }
    }
  } finally {
    fs.closeSync(fd);
  }
}

function parseMeta(b, file) {
  if (b.toString('latin1', 0, 4) !== 'GGUF') throw new Error(`${file}: not a GGUF file`);
  const version = b.readUInt32LE(4);
  if (version !== 3) throw new Error(`${file}: GGUF version ${version}, expected 3`);
  let o = 24;
  const nKv = Number(b.readBigUInt64LE(16));
  const str = () => {
    const n = Number(b.readBigUInt64LE(o));
    if (o + 8 + n > b.length) throw new RangeError('past the buffer');
    const s = b.toString('utf8', o + 8, o + 8 + n);
    o += 8 + n;
    return s;
  };
  const scalar = (t) => {
    const v = t === 4 ? b.readUInt32LE(o) : t === 5 ? b.readInt32LE(o) : t === 6 ? b.readFloatLE(o)
      : t === 7 ? b[o] !== 0 : t === 10 ? Number(b.readBigUInt64LE(o)) : t === 0 ? b[o] : null;
    o += SCALAR[t];
    return v;
  };
  const out = {};
  for (let i = 0; i < nKv; i++) {
    const key = str();
    const t = b.readUInt32LE(o);
    o += 4;
    if (t === 8) out[key] = str();
    else if (t === 9) {
      const et = b.readUInt32LE(o), n = Number(b.readBigUInt64LE(o + 4));
      o += 12;
      if (et === 8) for (let k = 0; k < n; k++) str();
      else if (SCALAR[et]) o += SCALAR[et] * n;
      else throw new Error(`${file}: ${key}: unsupported array type ${et}`);
      out[key] = { n };
    } else if (SCALAR[t]) out[key] = scalar(t);
    else throw new Error(`${file}: ${key}: unknown value type ${t}`);
    if (o > b.length) throw new RangeError('past the buffer');
  }
  return out;
}

// What the harness needs from a synthetic model's metadata.
export function modelMeta(file) {
  const kv = ggufMeta(file);
  const userFirst = kv['synthetic.user_token_first'], userCount = kv['synthetic.user_token_count'];
  if (!(userCount > 0)) throw new Error(`${file}: no synthetic.user_token_* keys (not made by oxinfer synth?)`);
  const arch = kv['general.architecture'];
  return {
    userFirst, userCount, bos: kv['tokenizer.ggml.bos_token_id'] ?? 2,
    vocab: kv['tokenizer.ggml.tokens']?.n, layers: kv[`${arch}.block_count`], hidden: kv[`${arch}.embedding_length`],
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
    return { rss: kb('VmRSS'), hwm: kb('VmHWM') };
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

// ---- disk ----

export function freeBytes(dir) {
  const s = fs.statfsSync(dir);
  return s.bavail * s.bsize;
}

// ---- formatting ----

export const fmtMB = (b) => (Number.isFinite(b) ? (b >= 1e9 ? `${(b / 1e9).toFixed(2)} GB` : `${(b / 1e6).toFixed(0)} MB`) : '–');
export const fmtS = (ms) => (Number.isFinite(ms) ? `${(ms / 1000).toFixed(2)} s` : '–');

function fmtRate(s) {
  if (!s || !Number.isFinite(s.med)) return '–';
  const d = s.med >= 100 ? 0 : s.med >= 10 ? 1 : 2;
  return s.n > 1 ? `${s.med.toFixed(d)} [${s.min.toFixed(d)}–${s.max.toFixed(d)}]` : s.med.toFixed(d);
}

const fmtRatio = (a, b) => (Number.isFinite(a) && Number.isFinite(b) && b > 0 ? `${(a / b).toFixed(2)}×` : '');

// rows: {engine, weights, threads, load: summary(ms), prefill: summary, decode: summary,
// mem: string, ref?: row of wllama to compare with}
export function markdownTable(rows) {
  const head = ['engine', 'weights', 'threads', 'load', 'prefill tok/s', 'decode tok/s', 'peak memory', 'ours / wllama (prefill, decode)'];
  const lines = [`| ${head.join(' | ')} |`, `| ${head.map(() => '---').join(' | ')} |`];
  for (const r of rows) {
    const ratio = r.ref ? `${fmtRatio(r.prefill.med, r.ref.prefill.med)}, ${fmtRatio(r.decode.med, r.ref.decode.med)}` : '';
    const load = r.load && Number.isFinite(r.load.med) ? (r.load.n > 1 ? `${fmtS(r.load.med)} [${fmtS(r.load.min)}–${fmtS(r.load.max)}]` : fmtS(r.load.med)) : '–';
    lines.push(`| ${[r.engine, r.weights, r.threads, load, fmtRate(r.prefill), fmtRate(r.decode), r.mem ?? '–', ratio].join(' | ')} |`);
  }
  return lines.join('\n');
}

export function writeAtomic(file, text) {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.tmp-${process.pid}`;
  fs.writeFileSync(tmp, text);
  fs.renameSync(tmp, file);
}
