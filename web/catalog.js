// The models the demo offers with one click: the project's own small demo model (served by
// `npm run demo`, works offline) and Gemma 4 E2B / E4B instruct GGUFs on Hugging Face.
//
// Sizes are as listed on Hugging Face when the catalog was written, rounded (the download
// shows the exact size). `ple` is the share of the file that is the per-layer embedding
// table (E2B: 262144 x 35 x 256 values, E4B: 262144 x 42 x 256), which the engine reads from
// the file on demand instead of holding it in wasm memory.

export const HF_BASE = 'https://huggingface.co';
const GB = 1e9;

/** @typedef {{id: string, title: string, publisher: string, quant: string, size: number, ple: number,
 *   repo?: string, file?: string, url?: string, offline?: boolean, note?: string}} CatalogEntry */

/** @type {CatalogEntry} */
export const DEMO_MODEL = {
  id: 'demo',
  title: 'oxinfer demo model',
  publisher: 'trained by this project',
  quant: 'F32',
  size: 4.7e6,
  ple: 0,
  url: 'models/oxinfer-demo.gguf',
  offline: true,
  note: 'A 1.2 M-parameter Gemma 4 trained on simple made-up English: short stories, colours, animals, small sums.',
};

/** @type {CatalogEntry[]} */
export const CATALOG = [
  DEMO_MODEL,
  {
    id: 'e2b-q4km',
    title: 'Gemma 4 E2B instruct',
    publisher: 'unsloth',
    quant: 'Q4_K_M',
    size: 3.2 * GB,
    ple: 1.4 * GB,
    repo: 'unsloth/gemma-4-E2B-it-GGUF',
    file: 'gemma-4-E2B-it-Q4_K_M.gguf',
  },
  {
    id: 'e2b-q8',
    title: 'Gemma 4 E2B instruct',
    publisher: 'unsloth',
    quant: 'Q8_0',
    size: 5.0 * GB,
    ple: 2.5 * GB,
    repo: 'unsloth/gemma-4-E2B-it-GGUF',
    file: 'gemma-4-E2B-it-Q8_0.gguf',
  },
  {
    id: 'e4b-q4km',
    title: 'Gemma 4 E4B instruct',
    publisher: 'unsloth',
    quant: 'Q4_K_M',
    size: 5.3 * GB,
    ple: 1.7 * GB,
    repo: 'unsloth/gemma-4-E4B-it-GGUF',
    file: 'gemma-4-E4B-it-Q4_K_M.gguf',
  },
  {
    id: 'e4b-q8',
    title: 'Gemma 4 E4B instruct',
    publisher: 'unsloth',
    quant: 'Q8_0',
    size: 8.2 * GB,
    ple: 3.0 * GB,
    repo: 'unsloth/gemma-4-E4B-it-GGUF',
    file: 'gemma-4-E4B-it-Q8_0.gguf',
  },
];

/** Download URL of an entry: Hugging Face's resolve/main path (hfBase replaces the host). */
export function entryUrl(e, { hfBase = HF_BASE, pageUrl = globalThis.location?.href } = {}) {
  if (e.url) return new URL(e.url, pageUrl).href;
  return `${hfBase.replace(/\/$/, '')}/${e.repo}/resolve/main/${e.file}`;
}

export const WASM32_LIMIT = 4 * 2 ** 30;
const OVERHEAD = 0.3 * GB; // KV cache at a few thousand tokens, scratch, the engine itself

/**
 * Whether an entry fits here: the weights the engine keeps in wasm memory (the file minus the
 * per-layer table) against the 4 GiB a wasm32 page can address and the device's memory
 * (navigator.deviceMemory, in GiB, rounded down and capped at 8 by browsers).
 * @returns {{fit: 'yes'|'tight'|'no', resident: number, why: string}}
 */
export function fitOf(e, { deviceMemoryGiB = globalThis.navigator?.deviceMemory } = {}) {
  const resident = e.size - e.ple + (e.offline ? 0 : OVERHEAD);
  if (resident > 0.95 * WASM32_LIMIT)
    return {
      fit: 'no',
      resident,
      why: `needs about ${fmtBytes(resident)} of wasm memory; a page can address at most 4 GiB`,
    };
  if (deviceMemoryGiB > 0 && resident > 0.6 * deviceMemoryGiB * 2 ** 30)
    return {
      fit: 'tight',
      resident,
      why: `needs about ${fmtBytes(resident)}; this device reports ${deviceMemoryGiB} GB of memory`,
    };
  if (resident > 0.85 * WASM32_LIMIT)
    return { fit: 'tight', resident, why: `needs about ${fmtBytes(resident)}, close to the 4 GiB wasm limit` };
  return { fit: 'yes', resident, why: `needs about ${fmtBytes(resident)} of memory in this tab` };
}

export function fmtBytes(n) {
  if (!Number.isFinite(n)) return '–';
  const u = ['B', 'KB', 'MB', 'GB', 'TB'];
  let i = 0;
  while (n >= 1000 && i < u.length - 1) {
    n /= 1000;
    i++;
  }
  return `${n.toFixed(i === 0 ? 0 : n < 10 ? 2 : n < 100 ? 1 : 0)} ${u[i]}`;
}

export function fmtDuration(s) {
  if (!Number.isFinite(s)) return '–';
  if (s < 60) return `${Math.max(1, Math.round(s))} s`;
  if (s < 3600) return `${Math.round(s / 60)} min`;
  return `${(s / 3600).toFixed(1)} h`;
}
