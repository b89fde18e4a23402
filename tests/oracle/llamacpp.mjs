#!/usr/bin/env node
// llama.cpp as an independent reference: wllama (llama.cpp compiled to wasm,
// npm @wllama/wllama) in headless Chromium, on a synthetic Gemma 4 GGUF.
//
//   const o = new Oracle();
//   const ref = await o.reference('tiny-q8_0.gguf', { seqLen: 16, seqSeed: 7, topK: 20 });
//   //  ref.seq = [2, ...]; ref.positions[k] = { pos, argmax, top: [[id, logprob], ...] }
//   //  = log-softmax of llama.cpp's raw logits for the token after seq[0..k]
//   const ids = await o.tokenize('tiny-q8_0.gguf', ['hello world', ...]);
//   await o.close();
//
// Settings: f32 KV cache, flash attention off, 1 thread (llama.cpp's tightest
// CPU path).  Results are cached as JSON under $OX_ORACLE_CACHE (default
// build/oracle-cache/), keyed by the SHA-256 of the model file and the
// request, so reruns need no browser.  Command line:
//
//   node tests/oracle/llamacpp.mjs --model F [--seq 2,900,..|--seq-len 16 --seq-seed 7]
//        [--top 20] [--tokenize TEXT]... [--out F.json] [--no-cache]
import fs from 'node:fs';
import path from 'node:path';
import crypto from 'node:crypto';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { startServer, ROOT } from '../../tools/serve.mjs';
import { launchChromium } from './browser.mjs';
import { tokenSeq } from '../../tools/bench/lib.mjs';

export { tokenSeq }; // deterministic prompt ids, shared with the benchmark

const HERE = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const WLLAMA_DIR = path.dirname(require.resolve('@wllama/wllama/package.json'));
const WLLAMA_VERSION = JSON.parse(fs.readFileSync(path.join(WLLAMA_DIR, 'package.json'), 'utf8')).version;
// bump when the page's method changes, so stale cache entries are not reused
const METHOD = 'teacher-forcing-v1;f32-kv;no-flash;threads1';

export const CACHE_DIR = process.env.OX_ORACLE_CACHE || path.join(ROOT, 'build', 'oracle-cache');

const fileHashes = new Map();
export function sha256File(file) {
  const st = fs.statSync(file);
  const memo = `${path.resolve(file)}:${st.size}:${st.mtimeMs}`;
  if (fileHashes.has(memo)) return fileHashes.get(memo);
  const h = crypto.createHash('sha256');
  const fd = fs.openSync(file, 'r');
  try {
    const buf = Buffer.allocUnsafe(1 << 20);
    let n;
    while ((n = fs.readSync(fd, buf, 0, buf.length, null)) > 0) h.update(buf.subarray(0, n));
  } finally {
    fs.closeSync(fd);
  }
  const d = h.digest('hex');
  fileHashes.set(memo, d);
  return d;
}

export class Oracle {
  constructor({ cacheDir = CACHE_DIR, useCache = true, verbose = false, log = null } = {}) {
    this.cacheDir = cacheDir;
    this.useCache = useCache;
    this.verbose = verbose;
    this.log = log;
    this.browser = null;
    this.server = null;
    this.page = null;
    this.loaded = null; // path of the model the page holds
    this.served = null; // { '/model.gguf': path }
    this.info = null;
  }

  cachePath(file, request) {
    const key = crypto
      .createHash('sha256')
      .update(JSON.stringify({ METHOD, wllama: WLLAMA_VERSION, request }))
      .digest('hex')
      .slice(0, 16);
    return path.join(this.cacheDir, `${sha256File(file).slice(0, 24)}-${key}.json`);
  }

  async cached(file, request, compute) {
    const cp = this.cachePath(file, request);
    if (this.useCache && fs.existsSync(cp)) {
      try {
        return { ...JSON.parse(fs.readFileSync(cp, 'utf8')), cached: true };
      } catch {
        /* recompute */
      }
    }
    const out = await compute();
    if (this.useCache) {
      fs.mkdirSync(this.cacheDir, { recursive: true });
      const tmp = `${cp}.${process.pid}.tmp`;
      fs.writeFileSync(tmp, JSON.stringify(out));
      fs.renameSync(tmp, cp);
    }
    return { ...out, cached: false };
  }

  async ensurePage(file) {
    const abs = path.resolve(file);
    if (!this.browser) {
      this.served = { '/': path.join(HERE, 'page.html'), '/model.gguf': abs };
      this.server = await startServer({
        files: this.served,
        mounts: { '/oracle/': HERE, '/wllama/': WLLAMA_DIR },
      });
      this.browser = await launchChromium();
      this.page = await this.browser.newPage();
      this.page.on('console', (m) => {
        if (this.verbose) console.log('[oracle page]', m.text());
      });
      this.page.on('pageerror', (e) => {
        if (this.log) this.log(`[oracle page] ${e.message}`);
      });
      await this.page.goto(this.server.url + '/');
      await this.page.waitForFunction(() => window.oracle && window.oracle.ready, null, { timeout: 60000 });
    }
    if (this.loaded !== abs) {
      this.served['/model.gguf'] = abs; // the server reads the map on each request
      this.info = await this.page.evaluate((v) => window.oracle.load('/model.gguf', { verbose: v }), this.verbose);
      this.loaded = abs;
      if (this.log) this.log(`oracle: loaded ${path.basename(abs)} in llama.cpp ${this.info.libllama}`);
    }
    return this.page;
  }

  // Teacher-forced reference log-probs.  seq: ids starting with BOS (2) and
  // otherwise from the <unusedN> block; or seqLen/seqSeed to draw them.
  async reference(file, { seq = null, seqLen = 16, seqSeed = 7, topK = 20 } = {}) {
    const request = { kind: 'logprobs', seq, seqLen: seq ? null : seqLen, seqSeed: seq ? null : seqSeed, topK };
    return this.cached(file, request, async () => {
      const page = await this.ensurePage(file);
      const s = seq || [
        this.info.bos ?? 2,
        ...tokenSeq(seqLen - 1, seqSeed, this.info.userFirst, this.info.userFirst + this.info.userCount),
      ];
      let positions;
      try {
        positions = await page.evaluate(([s1, k]) => window.oracle.logprobs(s1, k), [s, topK]);
      } catch (e) {
        // wllama's JSON output dies on tokens that render as lone non-UTF-8
        // bytes (BYTE-typed <0x80>..<0xFF>, e.g. synth --all-byte-tokens)
        const msg = e.message.split('\n')[0].replace(/^page\.evaluate: /, '');
        const hint = /typed array length|UTF-8|json/i.test(msg)
          ? " (a vocab with <0x80>..<0xFF> typed BYTE breaks wllama's output: use the default synth vocab)"
          : '';
        throw new Error(`llama.cpp (wllama) on ${path.basename(file)}: ${msg}${hint}`);
      }
      return {
        model: path.basename(file),
        sha256: sha256File(file),
        wllama: WLLAMA_VERSION,
        libllama: this.info.libllama,
        method: METHOD,
        seq: s,
        topK,
        nVocab: this.info.nVocab,
        positions,
      };
    });
  }

  // llama.cpp's tokenization of each text (no BOS, special tokens not parsed):
  // wllama has no tokenize call, but llama.cpp's sampling parameters take a
  // logit_bias keyed by a string, which the server tokenizes and echoes back
  // (in order) in the verbose response's generation_settings.
  async tokenize(file, texts) {
    const request = { kind: 'tokenize', texts };
    const r = await this.cached(file, request, async () => {
      const page = await this.ensurePage(file);
      const ids = [];
      for (const text of texts) {
        const res = await page.evaluate(
          (t) =>
            window.oracle.complete({
              prompt: t,
              max_tokens: 1,
              temperature: 0,
              verbose: true,
              cache_prompt: false,
              logit_bias: [[t, false]],
            }),
          text,
        );
        const gs = res.__verbose?.generation_settings;
        if (!gs || !Array.isArray(gs.logit_bias))
          throw new Error('tokenize probe: no generation_settings.logit_bias in the response');
        const t = gs.logit_bias.map((e) => e.token);
        // the prompt was tokenized the same way, plus the BOS
        if (res.usage && res.usage.prompt_tokens !== t.length + 1)
          throw new Error(
            `tokenize probe: ${t.length} ids from logit_bias but ${res.usage.prompt_tokens} prompt tokens for ${JSON.stringify(text)}`,
          );
        ids.push(t);
      }
      return { model: path.basename(file), sha256: sha256File(file), texts, ids };
    });
    return r.ids;
  }

  async close() {
    if (this.page) {
      try {
        await this.page.evaluate(() => window.oracle.exit());
      } catch {}
    }
    if (this.browser) await this.browser.close();
    if (this.server) this.server.close();
    this.browser = this.server = this.page = this.loaded = null;
  }
}

// --- comparison helpers shared by the tests ---

// log-softmax of a Float32Array/Array of logits
export function logSoftmax(logits) {
  let mx = -Infinity;
  for (const v of logits) if (v > mx) mx = v;
  let s = 0;
  for (const v of logits) s += Math.exp(v - mx);
  const lse = mx + Math.log(s);
  const out = new Float64Array(logits.length);
  for (let i = 0; i < logits.length; i++) out[i] = logits[i] - lse;
  return out;
}

// max that keeps a NaN (a NaN log-prob is a failure, never hidden)
const nanMax = (a, b) => (Number.isNaN(a) || Number.isNaN(b) ? NaN : Math.max(a, b));

// Compare one engine's per-position log-probs with the reference.
// getLogprob(pos, id) -> the engine's log-prob of id after seq[0..pos];
// argmaxOf(pos) -> the engine's argmax.  A different argmax counts as a
// near-tie when the engine's own log-probs of both ids are within tieTol.
export function compareToReference(ref, getLogprob, argmaxOf, { tieTol = 1e-2 } = {}) {
  let maxDelta = 0,
    worstPos = -1,
    argmaxAgree = 0,
    nearTies = 0;
  const perPos = [];
  const mismatches = [];
  for (const p of ref.positions) {
    let d = 0;
    for (const [id, lp] of p.top) d = nanMax(d, Math.abs(getLogprob(p.pos, id) - lp));
    perPos.push(d);
    if (!Number.isNaN(maxDelta) && (Number.isNaN(d) || d > maxDelta)) {
      maxDelta = d;
      worstPos = p.pos;
    }
    const a = argmaxOf(p.pos);
    if (a === p.argmax) argmaxAgree++;
    else if (Math.abs(getLogprob(p.pos, a) - getLogprob(p.pos, p.argmax)) <= tieTol) {
      argmaxAgree++;
      nearTies++;
    } else mismatches.push({ pos: p.pos, ours: a, llamacpp: p.argmax });
  }
  return { positions: ref.positions.length, maxDelta, worstPos, perPos, argmaxAgree, nearTies, mismatches };
}

async function main(argv) {
  const a = {
    model: null,
    seq: null,
    seqLen: 16,
    seqSeed: 7,
    top: 20,
    tokenize: [],
    out: null,
    cache: true,
    verbose: false,
  };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i];
    const v = () => {
      if (i + 1 >= argv.length) throw new Error(`${k} needs a value`);
      return argv[++i];
    };
    if (k === '--model') a.model = v();
    else if (k === '--seq') a.seq = v().split(',').map(Number);
    else if (k === '--seq-len') a.seqLen = Number(v());
    else if (k === '--seq-seed') a.seqSeed = Number(v());
    else if (k === '--top') a.top = Number(v());
    else if (k === '--tokenize') a.tokenize.push(v());
    else if (k === '--out') a.out = v();
    else if (k === '--no-cache') a.cache = false;
    else if (k === '--verbose') a.verbose = true;
    else throw new Error(`unknown option ${k}`);
  }
  if (!a.model)
    throw new Error(
      'usage: llamacpp.mjs --model FILE [--seq 2,..|--seq-len N --seq-seed S] [--top K] [--tokenize TEXT]... [--out F] [--no-cache]',
    );
  if (a.seq && a.seq.some((x) => !Number.isInteger(x))) throw new Error('--seq: comma-separated integer ids');
  const o = new Oracle({ useCache: a.cache, verbose: a.verbose, log: (l) => console.error(l) });
  try {
    const out = {};
    if (a.tokenize.length) {
      out.tokenize = await o.tokenize(a.model, a.tokenize);
      a.tokenize.forEach((t, i) => console.log(`${JSON.stringify(t)} -> ${out.tokenize[i].join(',')}`));
    } else {
      const r = await o.reference(a.model, { seq: a.seq, seqLen: a.seqLen, seqSeed: a.seqSeed, topK: a.top });
      out.reference = r;
      console.log(
        `llama.cpp ${r.libllama}: ${r.positions.length} positions, top ${r.topK}${r.cached ? ' (cached)' : ''}; seq ${r.seq.join(',')}`,
      );
      console.log(`argmax per position: ${r.positions.map((p) => p.argmax).join(',')}`);
    }
    if (a.out) {
      fs.writeFileSync(a.out, JSON.stringify(out, null, 1));
      console.log('wrote', a.out);
    }
  } finally {
    await o.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] || '').href) {
  main(process.argv.slice(2)).catch((e) => {
    console.error(e.stack || String(e));
    process.exit(1);
  });
}
