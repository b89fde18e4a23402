#!/usr/bin/env node
// gen_abi.mjs — writes js/shared/abi.js from the C side of the JS<->C contract: src/wasm/abi.h (exports,
// imports, record fields, the generation options) and the lists it includes (error codes in
// src/base/err.h, quant ids and stream modes in src/model/model.h, KV types in src/model/kv.h,
// poolings in src/model/embed.h, generation statuses in src/decode/generate.h, draft limits there and in src/model/kv.h).
//   node tools/gen_abi.mjs           rewrite js/shared/abi.js
//   node tools/gen_abi.mjs --check   exit 1 if js/shared/abi.js is not what the headers give
// The headers are read as text, so the lists keep a strict shape: one X(...) per line, the
// arguments a name, maybe a number, and a string (OX_WASM_GEN_PARAMS: see genRows); prototypes are OX_EXPORT/OX_IMPORT statements.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { dirname, join } from 'node:path';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const OUT = 'js/shared/abi.js';

// the X(...) entries of `#define LIST(X) \ ...` as [name, number|undefined, string]
function xlist(text, file, list) {
  const m = new RegExp(`#define ${list}\\(X\\)((?:[^\\n]*\\\\\\n)*[^\\n]*)`).exec(text);
  if (!m) throw new Error(`${file}: no #define ${list}(X)`);
  const items = [...m[1].matchAll(/X\(\s*(\w+)\s*,\s*(?:(-?\d+)\s*,\s*)?"((?:[^"\\]|\\.)*)"\s*\)/g)];
  if (!items.length) throw new Error(`${file}: ${list} has no entries`);
  return items.map((x) => [x[1], x[2] === undefined ? undefined : Number(x[2]), x[3]]);
}

const camel = (s) => s.replace(/_([a-z])/g, (_, c) => c.toUpperCase());

function kind(type) {
  const t = type.replace(/\s+/g, ' ').trim();
  if (t === 'void') return 'void';
  if (/\*$/.test(t)) return 'ptr';
  if (t === 'int' || t === 'int32_t') return 'i32';
  if (t === 'size_t' || t === 'uint32_t') return 'u32';
  if (t === 'double') return 'f64';
  if (t === 'float') return 'f32';
  throw new Error(`src/wasm/abi.h: no JS kind for the C type '${t}'`);
}

// "const int32_t *files" -> {name: 'files', type: 'const int32_t *', kind: 'ptr'}
function param(p) {
  const m = /^(.*?)(\w+)$/.exec(p.replace(/\s+/g, ' ').trim());
  if (!m) throw new Error(`src/wasm/abi.h: cannot read the parameter '${p}'`);
  const type = m[1].trim().replace(/\s*\*\s*$/, ' *');
  return { name: m[2], type, kind: kind(type) };
}

// OX_EXPORT/OX_IMPORT prototypes with the block comment just above each
function prototypes(text) {
  const out = [];
  const re = /(?:\/\*((?:[^*]|\*(?!\/))*)\*\/\s*)?\b(OX_EXPORT|OX_IMPORT)\s+([^;{]*?)\b(ox_\w+)\s*\(([^)]*)\)\s*;/g;
  for (const m of text.matchAll(re)) {
    const ret = m[3].trim().replace(/\s*\*\s*$/, ' *');
    const rk = ret === 'const char *' ? 'cstr' : kind(ret); // a returned string is NUL-terminated
    const args = m[5].trim() === 'void' ? [] : m[5].split(',').map(param);
    const doc = (m[1] ?? '')
      .split('\n')
      .map((l) => l.replace(/^\s*\*?\s?/, '').trim())
      .filter(Boolean)
      .join(' ');
    out.push({ side: m[2], name: m[4], ret: rk, args: args.map((a) => ({ name: a.name, kind: a.kind })), doc });
  }
  return out;
}

// OX_WASM_GEN_PARAMS rows: X(field, dst, kind, lo, hi, "js", "meaning"); lo / hi a number, a
// #define of generate.h, or _ (none)
function genRows(abi, define) {
  const m = /#define OX_WASM_GEN_PARAMS\(X\)((?:[^\n]*\\\n)*[^\n]*)/.exec(abi);
  if (!m) throw new Error('src/wasm/abi.h: no #define OX_WASM_GEN_PARAMS(X)');
  const bound = (t) => (t === '_' ? undefined : /^-?\d+(\.\d+)?$/.test(t) ? Number(t) : define(t));
  const rows = [
    ...m[1].matchAll(
      /X\(\s*(\w+)\s*,\s*[\w.]+\s*,\s*([FIBPS])\s*,\s*([\w.-]+)\s*,\s*([\w.-]+)\s*,\s*"([\w.]*)"\s*,\s*\\?\s*"((?:[^"\\]|\\.)*)"\s*\)/g,
    ),
  ];
  if (rows.length !== (m[1].match(/\bX\(/g) ?? []).length)
    throw new Error('src/wasm/abi.h: an OX_WASM_GEN_PARAMS row is not X(field, dst, kind, lo, hi, "js", "meaning")');
  return rows.map(([, field, kind, lo, hi, js, doc]) => ({ field, kind, min: bound(lo), max: bound(hi), js, doc }));
}

// OX_WASM_LOAD_OPTIONS rows: X(arg, kind, lo, hi, "js", "meaning") -> {option, type: enum (names:
// the list's js names), integer (min, max) or boolean}
function loadOptionsOf(abi, lists, define) {
  const m = /#define OX_WASM_LOAD_OPTIONS\(X\)((?:[^\n]*\\\n)*[^\n]*)/.exec(abi);
  if (!m) throw new Error('src/wasm/abi.h: no #define OX_WASM_LOAD_OPTIONS(X)');
  const rows = [
    ...m[1].matchAll(/X\(\s*(\w+)\s*,\s*([EIB])\s*,\s*(\w+)\s*,\s*(\w+)\s*,\s*"(\w+)"\s*,\s*"(?:[^"\\]|\\.)*"\s*\)/g),
  ];
  if (rows.length !== (m[1].match(/\bX\(/g) ?? []).length)
    throw new Error('src/wasm/abi.h: an OX_WASM_LOAD_OPTIONS row is not X(arg, kind, lo, hi, "js", "meaning")');
  const bound = (t) => (t === '_' ? undefined : /^\d+$/.test(t) ? Number(t) : define(t));
  return rows.map(([, , kind, lo, hi, js]) => {
    if (kind === 'B') return { option: js, type: 'boolean' };
    if (kind === 'E') {
      if (!lists[lo]) throw new Error(`src/wasm/abi.h: OX_WASM_LOAD_OPTIONS ${js}: no list ${lo}`);
      return { option: js, type: 'enum', names: Object.keys(lists[lo]) };
    }
    const o = { option: js, type: 'integer' };
    if (bound(lo) !== undefined) o.min = bound(lo);
    if (bound(hi) !== undefined) o.max = bound(hi);
    return o;
  });
}

// the options of generate() a row fills: {option ("a.b": option b of object option a), field,
// type (number, integer, boolean), min?, max?}
function genOptionsOf(rows) {
  const type = { F: 'number', I: 'integer', S: 'integer', B: 'boolean' };
  return rows
    .filter((r) => r.js)
    .map((r) => {
      if (!type[r.kind])
        throw new Error(`src/wasm/abi.h: OX_WASM_GEN_PARAMS ${r.field}: a ${r.kind} row has no JS option`);
      const o = { option: r.js, field: camel(r.field), type: type[r.kind] };
      if (r.min !== undefined) o.min = r.min;
      if (r.max !== undefined) o.max = r.max;
      return o;
    });
}

export function generate() {
  const read = (f) => readFileSync(join(root, f), 'utf8');
  const err = read('src/base/err.h'),
    model = read('src/model/model.h');
  const gen = read('src/decode/generate.h'),
    abi = read('src/wasm/abi.h'),
    kv = read('src/model/kv.h');
  const embed = read('src/model/embed.h');
  const gpu = read('src/gpu/record.h');
  const codes = { OK: 0 };
  for (const [name, code] of xlist(err, 'src/base/err.h', 'OX_ERR_CODES')) codes[name] = code;
  const quant = Object.fromEntries(xlist(model, 'src/model/model.h', 'OX_QUANTS').map(([, id, js]) => [js, id]));
  const stream = Object.fromEntries(xlist(model, 'src/model/model.h', 'OX_STREAMS').map(([, id, js]) => [js, id]));
  const kvType = Object.fromEntries(xlist(kv, 'src/model/kv.h', 'OX_KV_TYPES').map(([, id, js]) => [js, id]));
  const genStatus = Object.fromEntries(
    xlist(gen, 'src/decode/generate.h', 'OX_GEN_STATUSES').map(([, v, js]) => [js, v]),
  );
  const pooling = Object.fromEntries(xlist(embed, 'src/model/embed.h', 'OX_POOLINGS').map(([, id, js]) => [js, id]));
  const define = (name, text = gen + kv, file = 'src/decode/generate.h or src/model/kv.h') => {
    const m = new RegExp(`#define ${name}\\s+(\\d+)`).exec(text);
    if (!m) throw new Error(`${file}: no #define ${name}`);
    return Number(m[1]);
  };
  // the GPU command list's ops: operand names are the words before the doc's colon
  const gpuOps = Object.fromEntries(
    xlist(gpu, 'src/gpu/record.h', 'OX_GPU_OPS').map(([name, code, doc]) => [
      name,
      { code, args: doc.split(':')[0].trim().split(/\s+/) },
    ]),
  );
  const gpuDefine = (name) => Number(new RegExp(`#define ${name}\\s+(0x[0-9a-f]+|\\d+)`).exec(gpu)[1]);
  const gpuList = {
    magic: gpuDefine('OX_GPU_MAGIC'),
    header: gpuDefine('OX_GPU_HEADER'),
    entryWords: gpuDefine('OX_GPU_ENTRY_WORDS'),
  };
  const drafts = {
    max: define('OX_GEN_DRAFT_MAX'),
    greedyDefault: define('OX_GEN_DRAFT_DEFAULT'),
    asked: define('OX_GEN_DRAFT_ASKED'),
  };
  const prefillChunk = define('OX_WASM_PREFILL_CHUNK', abi, 'src/wasm/abi.h');
  const rows = genRows(abi, (name) => define(name));
  const loadOptions = loadOptionsOf(abi, { OX_QUANTS: quant, OX_STREAMS: stream, OX_KV_TYPES: kvType }, (name) =>
    define(name),
  );
  const weightCacheDefault = define('OX_WASM_WEIGHT_CACHE_DEFAULT', abi, 'src/wasm/abi.h');
  const fields = (list) => xlist(abi, 'src/wasm/abi.h', list).map(([f, , doc]) => [camel(f), doc]);
  const protos = prototypes(abi);
  const fns = (side) => protos.filter((p) => p.side === side).map(({ side: _, ...p }) => p);
  const record = (name, what, list) =>
    `/** ${what}: index i of the f64 record is field i.\n${list.map(([f, d]) => ` *   ${f}: ${d}`).join('\n')} */\n` +
    `export const ${name} = Object.freeze(${JSON.stringify(list.map(([f]) => f))});\n`;
  const json = (v) => `[\n${v.map((x) => `  ${JSON.stringify(x)},`).join('\n')}\n]`;
  return `// abi.js — GENERATED by tools/gen_abi.mjs from src/wasm/abi.h, src/base/err.h, src/model/model.h,
// src/model/kv.h, src/model/embed.h, src/decode/generate.h and src/gpu/record.h: do not edit; change the headers and run \`node tools/gen_abi.mjs\`.

/** Error codes by name (OxError.code); the C side's OX_E_* values. */
export const codes = Object.freeze(${JSON.stringify(codes)});

/** Quant ids by the name loadModel({quant}) takes. */
export const quant = Object.freeze(${JSON.stringify(quant)});

/** Stream modes by the name loadModel({streamWeights}) takes. */
export const stream = Object.freeze(${JSON.stringify(stream)});
/** KV cache types by the name loadModel({kvType}) takes. */
export const kvType = Object.freeze(${JSON.stringify(kvType)});

/** Embedding poolings by the name embed({pooling}) takes. */
export const pooling = Object.freeze(${JSON.stringify(pooling)});

/** ox_wasm_gen_step's statuses by reason name. */
export const genStatus = Object.freeze(${JSON.stringify(genStatus)});

/** Draft lengths: the most a request may ask for, what a greedy request drafts by default (the
 * memory estimate counts its verify rows), and what a request that asks for speculative
 * decoding without a length drafts. */
export const drafts = Object.freeze(${JSON.stringify(drafts)});

/** The GPU backend's command list (src/gpu/record.h): op codes and operand names by op, and the
 * list's magic, header words and weight-table entry words. */
export const gpuOps = Object.freeze(${JSON.stringify(gpuOps)});
export const gpuList = Object.freeze(${JSON.stringify(gpuList)});

${record('statsFields', 'ox_wasm_stats', fields('OX_WASM_STATS'))}
${record(
  'genParams',
  'ox_wasm_gen_new parameters (NaN: the C default)',
  rows.map((r) => [camel(r.field), r.doc]),
)}
/** The options of generate() / chat() that go to C as they are, one per field of genParams:
 * option ("a.b": option b of the object option a), field, type (number: finite; integer;
 * boolean: 0/1 in the record), min / max where the JS API checks a range. */
export const genOptions = Object.freeze(${json(genOptionsOf(rows))});

/** Prompt tokens one prefill call runs by default (generate({prefillChunk})). */
export const prefillChunk = ${prefillChunk};

/** The options of loadModel() that reach C: option, type (enum: one of names, the first the
 * default; integer: min / max; boolean). */
export const loadOptions = Object.freeze(${json(loadOptions)});

/** Bytes for streamed weights when loadModel({streamWeights}) is set without weightCache. */
export const weightCacheDefault = ${weightCacheDefault};

${record('genOut', 'ox_wasm_gen_out, rewritten by each ox_wasm_gen_step', fields('OX_WASM_GEN_OUT'))}
${record('estimateFields', 'ox_wasm_estimate (src/model/estimate.h)', fields('OX_WASM_ESTIMATE'))}
/** Functions the wasm exports (Module._name), with argument and return kinds:
 * i32, u32, f32, f64, ptr (unsigned address), cstr (returned: address of a NUL-terminated UTF-8
 * string), void. */
export const exports = Object.freeze(${json(fns('OX_EXPORT'))});

/** Functions the wasm imports from src/host/hostfile_lib.js and src/gpu/gpu_lib.js. */
export const imports = Object.freeze(${json(fns('OX_IMPORT'))});
`;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const text = generate();
  const path = join(root, OUT);
  if (process.argv.includes('--check')) {
    let cur = '';
    try {
      cur = readFileSync(path, 'utf8');
    } catch {}
    if (cur !== text) {
      console.error(`${OUT} is stale: run node tools/gen_abi.mjs`);
      process.exit(1);
    }
  } else writeFileSync(path, text);
}
