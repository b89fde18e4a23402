// options.js — the checks of every option object of the public API (js/main/index.js): each call
// has a table of the options it reads, name -> check; an option not in its table (a typo, an
// option of another call) or a value its check refuses is a RANGE error naming it, never
// silently ignored or coerced. A check returns null when the value is fine, else what it
// must be. Token ids are checked against the vocabulary when it is known (vocab > 0).
//
// checkOptions(call, table, opts, vocab) throws an OxError with code 'RANGE'.
import { genOptions, loadOptions, pooling } from '../shared/abi.js';
import { OxError } from '../shared/errors.js';

const show = (v) => {
  if (typeof v === 'string') return JSON.stringify(v.length > 40 ? v.slice(0, 40) + '...' : v);
  if (typeof v === 'bigint') return `${v}n`;
  if (typeof v === 'function') return 'a function';
  if (v && typeof v === 'object')
    return Array.isArray(v) ? 'an array' : `an object (${Object.prototype.toString.call(v).slice(8, -1)})`;
  return String(v);
};

// ---- checks ----------------------------------------------------------------------------

const finite =
  (lo = -Infinity) =>
  (v) =>
    typeof v === 'number' && Number.isFinite(v) && v >= lo
      ? null
      : lo > -Infinity
        ? `a finite number >= ${lo}`
        : 'a finite number';
const int =
  (lo, hi = Number.MAX_SAFE_INTEGER) =>
  (v) =>
    Number.isInteger(v) && v >= lo && v <= hi
      ? null
      : `an integer from ${lo} to ${hi === Number.MAX_SAFE_INTEGER ? '2^53-1' : hi}`;
const bool = (v) => (typeof v === 'boolean' ? null : 'true or false');
const oneOf =
  (...xs) =>
  (v) =>
    xs.includes(v) ? null : `one of ${xs.map((x) => JSON.stringify(x)).join(', ')}`;
const fn = (v) => (typeof v === 'function' ? null : 'a function');
const signal = (v) =>
  v && typeof v === 'object' && typeof v.aborted === 'boolean' && typeof v.addEventListener === 'function'
    ? null
    : 'an AbortSignal';
const string = (v) => (typeof v === 'string' ? null : 'a string');
const plainObject = (v) => (v && typeof v === 'object' && !Array.isArray(v) ? null : 'an object');
const array = (v) => (Array.isArray(v) ? null : 'an array');
const range = (lo, hi) => (v) => (typeof v === 'number' && v >= lo && v <= hi ? null : `a number from ${lo} to ${hi}`);
const names = (table) => oneOf(...Object.keys(table));

// the check of a generation option that goes to C as it is (js/shared/abi.js genOptions)
function genCheck({ type, min, max }) {
  if (type === 'boolean') return bool;
  if (type === 'integer') return int(min ?? Number.MIN_SAFE_INTEGER, max);
  return max === undefined ? finite(min) : range(min, max);
}
// genOptions' checks of the options at `under` ('': top level; 'speculative': its object)
const genTable = (under) =>
  Object.fromEntries(
    genOptions
      .map((o) => [o.option.split('.'), genCheck(o)])
      .filter(([path]) => (path.length === 1 ? '' : path[0]) === under)
      .map(([path, check]) => [path.at(-1), check]),
  );

function tokenId(v, vocab) {
  const max = vocab > 0 ? vocab - 1 : 2 ** 31 - 1;
  return Number.isInteger(v) && v >= 0 && v <= max ? null : `a token id (an integer from 0 to ${max})`;
}

const tokenIds = (v, vocab) => {
  if (!Array.isArray(v) && !ArrayBuffer.isView(v)) return 'an array of token ids';
  for (const t of v)
    if (tokenId(t, vocab)) return `an array of token ids (${show(t)} is not one: ${tokenId(t, vocab)})`;
  return null;
};

const stop = (v) => {
  const xs = Array.isArray(v) ? v : [v];
  return xs.every((s) => typeof s === 'string') ? null : 'a string or an array of strings';
};

// {id: bias} or a Map; ids are token ids (object keys are decimal integers), biases finite
function logitBias(v, vocab) {
  const entries =
    v instanceof Map ? [...v] : v && typeof v === 'object' && !Array.isArray(v) ? Object.entries(v) : null;
  if (!entries) return 'an object or a Map of token id -> bias';
  for (const [k, b] of entries) {
    const id = typeof k === 'string' && /^(0|[1-9][0-9]*)$/.test(k) ? Number(k) : k;
    const bad = tokenId(id, vocab);
    if (bad) return `a map of token id -> bias: key ${show(k)} is not ${bad}`;
    if (typeof b !== 'number' || Number.isNaN(b))
      return `a map of token id -> bias: the bias of ${k} is ${show(b)}, not a number (-Infinity bans the token)`;
  }
  return null;
}

// a table for an object-valued option: its own keys are checked the same way
const nested = (call, table) => (v, vocab) => plainObject(v) ?? (checkOptions(call, table, v, vocab), null);

// ---- the tables ------------------------------------------------------------------------

export const HOST_OPTIONS = {
  cacheBytes: int(0),
  cacheMaxRead: int(0),
  timeoutMs: int(1),
};

// the model cache (js/main/cache.js); cache.js checks the sha256 digits itself
const CACHE_OPTIONS = { sha256: string, dir: string, retries: int(0), maxBytes: int(0) };

// memoryBudget: bytes, 'auto' (defaultMemoryBudget()), or {bytes?: bytes | 'auto', fit?: 'context' | 'none'}
const BUDGET_OPTIONS = { bytes: (v) => (v === 'auto' ? null : int(1)(v)), fit: oneOf('context', 'none') };
const memoryBudget = (v, vocab) =>
  v === 'auto' ? null : typeof v === 'number' ? int(1)(v) : nested('loadModel: memoryBudget', BUDGET_OPTIONS)(v, vocab);

// the load options that reach C (src/wasm/abi.h OX_WASM_LOAD_OPTIONS), and the JS side's own
const loadCheck = ({ type, names: xs, min, max }) =>
  type === 'enum' ? oneOf(...xs) : type === 'boolean' ? bool : int(min, max);

export const LOAD_OPTIONS = {
  ...Object.fromEntries(loadOptions.map((o) => [o.option, loadCheck(o)])),
  threads: int(1, 64),
  build: oneOf('auto', 'mt', 'st'),
  onProgress: fn,
  onWarning: fn,
  signal,
  host: nested('loadModel: host', HOST_OPTIONS),
  simd: oneOf('auto', 'relaxed', 'simd128'),
  assetBase: (v) =>
    typeof v === 'string' || v instanceof URL ? null : 'a URL (string or URL) of the folder with the engine files',
  locateFile: fn,
  cache: (v, vocab) => (typeof v === 'boolean' ? null : nested('loadModel: cache', CACHE_OPTIONS)(v, vocab)),
  // the gemma4-assistant MTP drafter's file(s), sources as for the model (describeSource checks each)
  drafter: (v) =>
    v != null && v !== false && !(Array.isArray(v) && !v.length)
      ? null
      : 'a model source or a non-empty array of them (the MTP drafter)',
  memoryBudget,
  // 'auto': WebGPU where a hardware adapter exists, else the CPU; 'webgpu': WebGPU or an error
  // (a software adapter too with allowFallbackAdapter); 'cpu'
  backend: oneOf('auto', 'webgpu', 'cpu'),
  allowFallbackAdapter: bool,
  // bytes of weights the GPU backend may hold (0: no limit): fewer layers on it until they fit
  gpuMemory: int(0),
};

// estimateMemory(sources, opts): what loadModel would allocate, from the headers
export const ESTIMATE_OPTIONS = {
  context: int(0),
  kvType: LOAD_OPTIONS.kvType,
  quant: LOAD_OPTIONS.quant,
  tablesOnHost: bool,
  threads: int(1, 64),
  streamWeights: LOAD_OPTIONS.streamWeights,
  weightCache: LOAD_OPTIONS.weightCache,
  build: LOAD_OPTIONS.build,
  simd: LOAD_OPTIONS.simd,
  assetBase: LOAD_OPTIONS.assetBase,
  locateFile: fn,
  host: nested('estimateMemory: host', HOST_OPTIONS),
  memoryBudget,
  signal,
  backend: LOAD_OPTIONS.backend,
};

// {method: 'prompt-lookup' | 'mtp', draftTokens, minProbability, fixedLength}, or true / false ('mtp' needs loadModel's drafter)
export const SPECULATIVE_OPTIONS = { method: oneOf('prompt-lookup', 'mtp'), ...genTable('speculative') };
const speculative = (v, vocab) =>
  typeof v === 'boolean' ? null : nested('speculative', SPECULATIVE_OPTIONS)(v, vocab);
const softTokens = (v) =>
  plainObject(v) ??
  (v.embeddings instanceof Float32Array && (typeof v.token === 'string' || Number.isInteger(v.token))
    ? null
    : '{token: a token id or piece, embeddings: a Float32Array}');

// the options that go to C as they are (sampling, limits: src/wasm/abi.h OX_WASM_GEN_PARAMS), and
// those the worker turns into the record's arrays and flags
export const GENERATE_OPTIONS = {
  ...genTable(''),
  logitBias,
  stop,
  stopIds: tokenIds,
  prefillChunk: int(1),
  signal,
  grammar: (v) => (typeof v === 'string' && v.length ? null : 'a non-empty GBNF string'),
  speculative,
  softTokens,
  images: array,
  maxImageTokens: oneOf(70, 140, 280, 560, 1120),
};

export const IMAGE_OPTIONS = { maxImageTokens: GENERATE_OPTIONS.maxImageTokens };

export const EMBED_OPTIONS = { pooling: names(pooling), normalize: bool };

export const CHAT_OPTIONS = {
  ...GENERATE_OPTIONS,
  thinking: bool,
  template: (v) => (v === null ? null : string(v)),
  tools: array,
  vars: plainObject,
  addGenerationPrompt: bool,
  bosToken: string,
  eosToken: string,
};

export const TOKENIZE_OPTIONS = { special: bool, addBos: bool };
export const DETOKENIZE_OPTIONS = { skipSpecial: bool };
export const SCHEMA_OPTIONS = { toolCalls: bool, afterName: bool, parallel: bool };
export const LOGITS_OPTIONS = { all: bool };

// one adapter of setLora: source like loadModel's, or the two PEFT files as an array
const loraSource = (v) =>
  v === undefined || v === null || (Array.isArray(v) && (v.length < 1 || v.length > 2))
    ? 'a path, URL, File/Blob or handle (a GGUF adapter), or an array [adapter_config.json, adapter_model.safetensors]'
    : null;
export const LORA_OPTIONS = { source: loraSource, scale: finite() };

// ---- the check -------------------------------------------------------------------------

// Throws an OxError (RANGE) for the first option of `opts` that `table` does not have or refuses.
// Options set to undefined count as not given.
export function checkOptions(call, table, opts, vocab = 0) {
  if (opts === undefined || opts === null) return;
  if (typeof opts !== 'object' || Array.isArray(opts))
    throw new OxError('RANGE', `${call}: options must be an object, not ${show(opts)}`);
  for (const k of Object.keys(opts)) {
    const v = opts[k];
    if (v === undefined) continue;
    const check = Object.hasOwn(table, k) ? table[k] : null;
    if (!check)
      throw new OxError(
        'RANGE',
        `${call}: unknown option ${JSON.stringify(k)} (known: ${Object.keys(table).join(', ')})`,
      );
    const want = check(v, vocab);
    if (want) throw new OxError('RANGE', `${call}: ${k} must be ${want}, not ${show(v)}`);
  }
}
