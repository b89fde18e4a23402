// The chat demo: plain ES modules, no build step.  Talks to the engine only
// through the package's public API (js/main/index.js, mapped to "oxinfer-web" by the
// import map in index.html).
import { CATALOG, entryUrl, fitOf, fmtBytes, fmtDuration, HF_BASE } from './catalog.js';
import { explain } from './errors.js';
import { deleteChat, getChat, listChats, newChatId, saveChat } from './history.js';
import { renderMarkdown } from './markdown.js';
import { hasCache, loadUrl } from './source.js';
import { attachImages, contentOf, initAttach, setImagesEnabled, takeImages, thumbnails } from './attach.js';

const $ = (id) => document.getElementById(id);
const ui = {
  badgeThreads: $('badge-threads'),
  badgeModel: $('badge-model'),
  badgeBackend: $('badge-backend'),
  backend: $('backend'),
  noticeIsolation: $('notice-isolation'),
  noticeRandom: $('notice-random'),
  noticeDemo: $('notice-demo'),
  error: $('error'),
  errorTitle: $('error-title'),
  errorText: $('error-text'),
  errorClose: $('error-close'),
  confirm: $('notice-confirm'),
  confirmText: $('confirm-text'),
  confirmYes: $('confirm-yes'),
  confirmNo: $('confirm-no'),
  catalogBox: $('catalog-box'),
  modelCurrent: $('model-current'),
  catalog: $('catalog'),
  cached: $('cached'),
  cachedList: $('cached-list'),
  drop: $('drop'),
  fileInput: $('file-input'),
  urlForm: $('url-form'),
  urlInput: $('url-input'),
  progress: $('progress'),
  progressFill: $('progress-fill'),
  progressText: $('progress-text'),
  loadCancel: $('load-cancel'),
  modelInfo: $('model-info'),
  systemPrompt: $('system-prompt'),
  thinking: $('thinking'),
  temperature: $('temperature'),
  topK: $('top-k'),
  topP: $('top-p'),
  minP: $('min-p'),
  maxTokens: $('max-tokens'),
  seed: $('seed'),
  threads: $('threads'),
  chatList: $('chat-list'),
  messages: $('messages'),
  emptyHint: $('empty-hint'),
  statTtft: $('stat-ttft'),
  statTps: $('stat-tps'),
  statTokens: $('stat-tokens'),
  statMem: $('stat-mem'),
  statHost: $('stat-host'),
  composer: $('composer'),
  prompt: $('prompt'),
  send: $('send'),
  stop: $('stop'),
  newChat: $('new-chat'),
  attach: $('attach'),
  attachInput: $('attach-input'),
  tray: $('attach-tray'),
};
initAttach(ui);

const params = new URLSearchParams(location.search);
// ?hf=ORIGIN: a Hugging Face mirror (or the tests' stand-in) for the catalog's downloads; one on
// another origin is used only once the user agrees (below)
let hfBase = HF_BASE;

const state = {
  model: null, // the loaded model (package API object)
  lastLoad: null, // load()'s arguments for that model: a backend switch loads it again
  modelEntry: null, // the catalog entry it came from, if any
  modelLabel: '', // its files, for the badge and the panel
  loading: null, // a load (or background download) in progress: {ctl, label, entryId, text, pct}
  generating: null, // AbortController of a reply in progress
  history: [], // [{ role, content, images?, thinking?, meta? }]
  chatId: null,
};

// ---------- errors ----------
function showError(e) {
  const { title, detail } = explain(e);
  ui.errorTitle.textContent = title;
  ui.errorText.textContent = ` ${detail}`;
  ui.error.hidden = false;
  console.error('[demo]', e);
}
ui.errorClose.addEventListener('click', () => {
  ui.error.hidden = true;
});
// the notices about the model can be put away (they come back with the next model)
for (const n of [ui.noticeDemo, ui.noticeRandom])
  n.querySelector('.close').addEventListener('click', () => {
    n.hidden = true;
  });

// A question in the page (not window.confirm, which blocks the page): resolves to the choice.
function askUser(text, yes, no) {
  ui.confirmText.textContent = text;
  ui.confirmYes.textContent = yes;
  ui.confirmNo.textContent = no;
  ui.confirm.hidden = false;
  ui.confirmYes.focus();
  return new Promise((resolve) => {
    const answer = (v) => () => {
      ui.confirm.hidden = true;
      ui.confirmYes.onclick = ui.confirmNo.onclick = null;
      resolve(v);
    };
    ui.confirmYes.onclick = answer(true);
    ui.confirmNo.onclick = answer(false);
  });
}

const fmtMs = (ms) =>
  Number.isFinite(ms) ? (ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`) : '–';
window.addEventListener('unhandledrejection', (ev) => showError(ev.reason));
window.addEventListener('error', (ev) => showError(ev.error || ev.message));

// The engine is imported dynamically so that a missing or broken build is
// reported in the page instead of leaving a dead page.
let ox = null;
const engineReady = import('oxinfer-web').then(
  (m) => {
    ox = m;
    window.oxinfer.api = m;
  },
  (e) => showError(new Error(`Could not load the engine (js/main/index.js, dist/): ${e.message || e}`)),
);

// ---------- environment ----------
const isolated = self.crossOriginIsolated === true;
const cores = navigator.hardwareConcurrency || 1;
ui.noticeIsolation.hidden = isolated;
ui.threads.value = String(isolated ? Math.max(1, Math.min(cores, 8)) : 1);
ui.threads.disabled = !isolated;
function showThreadBadge(n) {
  ui.badgeThreads.textContent = isolated ? `${n} thread${n === 1 ? '' : 's'} · isolated` : '1 thread · not isolated';
  ui.badgeThreads.className = isolated ? 'badge' : 'badge warn';
}
showThreadBadge(Number(ui.threads.value));

// ---------- settings (kept across reloads) ----------
const SETTINGS = ['systemPrompt', 'thinking', 'temperature', 'topK', 'topP', 'minP', 'maxTokens', 'seed'];
try {
  const saved = JSON.parse(localStorage.getItem('oxinfer-demo-settings') || '{}');
  for (const k of SETTINGS) {
    if (!(k in saved)) continue;
    if (ui[k].type === 'checkbox') ui[k].checked = !!saved[k];
    else ui[k].value = saved[k];
  }
} catch {
  /* private mode or junk: defaults */
}
function saveSettings() {
  const s = {};
  for (const k of SETTINGS) s[k] = ui[k].type === 'checkbox' ? ui[k].checked : ui[k].value;
  try {
    localStorage.setItem('oxinfer-demo-settings', JSON.stringify(s));
  } catch {}
}
for (const k of SETTINGS) ui[k].addEventListener('change', saveSettings);

function num(input, lo, hi, name) {
  const v = Number(input.value);
  if (input.value === '' || !Number.isFinite(v) || v < lo || v > hi)
    throw new Error(`${name} must be a number from ${lo} to ${hi}`);
  return v;
}
function samplingOptions() {
  return {
    temperature: num(ui.temperature, 0, 5, 'Temperature'),
    topK: Math.round(num(ui.topK, 0, 1e6, 'Top-k')),
    topP: num(ui.topP, 0, 1, 'Top-p'),
    minP: num(ui.minP, 0, 1, 'Min-p'),
    maxTokens: Math.round(num(ui.maxTokens, 1, 1 << 20, 'Max tokens')),
    thinking: ui.thinking.checked,
    // empty = a new random seed per reply; a number makes replies reproducible
    ...(ui.seed.value === '' ? {} : { seed: Math.round(num(ui.seed, 0, 2 ** 32 - 1, 'Seed')) }),
  };
}

// ---------- catalog ----------
let cachedByUrl = new Map(); // the model cache's records by URL, as last listed
function renderCatalog() {
  ui.catalog.replaceChildren();
  for (const e of CATALOG) {
    const url = entryUrl(e, { hfBase });
    const { fit, why } = fitOf(e);
    const card = document.createElement('div');
    card.className = `card${e.offline ? ' default' : ''}`;
    card.dataset.id = e.id;
    const head = document.createElement('div');
    head.className = 'card-title';
    head.textContent = e.title;
    const q = document.createElement('span');
    q.className = 'quant';
    q.textContent = e.quant;
    head.append(' ', q);
    const sub = document.createElement('div');
    sub.className = 'card-sub';
    const rec = cachedByUrl.get(url);
    const have = rec
      ? rec.complete
        ? ' · downloaded'
        : ` · ${Math.floor((100 * rec.bytes) / (rec.size || 1))}% downloaded`
      : '';
    sub.textContent = `${e.publisher} · ${e.offline ? `${fmtBytes(e.size)} · offline` : `≈${(e.size / 1e9).toFixed(1)} GB`}${have}`;
    sub.title = e.note ?? `${e.repo}/${e.file}`;
    const badge = document.createElement('span');
    badge.className = `fit ${fit}`;
    badge.textContent = { yes: 'fits', tight: 'may not fit', no: 'too large' }[fit];
    badge.title = why;
    const go = document.createElement('button');
    go.type = 'button';
    go.className = 'get small';
    const fetching = state.loading?.entryId === e.id;
    go.textContent = fetching ? 'Cancel' : e.offline || rec?.complete ? 'Chat' : 'Download & chat';
    go.setAttribute('aria-label', `${go.textContent}: ${e.title} ${e.quant}`);
    go.addEventListener('click', () =>
      state.loading?.entryId === e.id ? state.loading.ctl.abort() : load([url], { entry: e, cache: !e.offline }),
    );
    const row = document.createElement('div');
    row.className = 'card-row';
    row.append(badge, go);
    card.append(head, sub, row);
    card.setAttribute('role', 'listitem');
    if (fetching) {
      card.classList.add('fetching');
      const line = document.createElement('div');
      line.className = 'card-progress';
      card.append(line);
      paintCardProgress(line, state.loading);
    }
    ui.catalog.append(card);
  }
}

async function refreshCached() {
  if (!hasCache(ox)) {
    renderCatalog();
    return;
  }
  let list = [];
  try {
    list = await ox.listCachedModels();
  } catch (e) {
    console.warn('[demo] listCachedModels', e);
  }
  cachedByUrl = new Map(list.map((r) => [r.url, r]));
  renderCatalog();
  ui.cached.hidden = list.length === 0;
  ui.cachedList.replaceChildren(
    ...list.map((r) => {
      const li = document.createElement('li');
      const name = document.createElement('span');
      name.textContent = `${fileName(r.url)} · ${fmtBytes(r.complete ? r.size : r.bytes)}${r.complete ? '' : ` of ${fmtBytes(r.size)}`}`;
      name.title = r.url;
      const del = document.createElement('button');
      del.type = 'button';
      del.className = 'small secondary';
      del.textContent = 'Delete';
      del.addEventListener('click', async () => {
        try {
          await ox.deleteCachedModel(r.url);
        } catch (e) {
          showError(e);
        }
        refreshCached();
      });
      li.append(name, del);
      return li;
    }),
  );
}
renderCatalog();
engineReady.then(refreshCached);

// ---------- loading ----------
// One progress line for a download-and-load, in the chat area (#progress, with Cancel) and on
// the catalog card being fetched. The cache reports the download's bytes and the engine its
// read of the local copy; while a download runs only its figures are shown, so the line never
// switches between two counters, and a figure never goes back.
const RETRY_S = [1, 2, 2, 4, 4]; // waits before attempts 2..6 of a download that failed on the network
const ATTEMPTS = RETRY_S.length + 1;

function progressText(job, p) {
  const { phase = 'load', total = 0, rate = 0, eta = 0 } = p;
  const bytes = Math.max(p.bytes ?? p.loaded ?? 0, job.phase === phase ? job.bytes : 0); // load events count `loaded`
  if (phase === 'load' && job.phase === 'download') return null; // the download's line stays
  job.phase = phase;
  job.bytes = bytes;
  job.pct = total > 0 ? Math.min(100, (100 * bytes) / total) : 0;
  const parts = [total > 0 ? `${fmtBytes(bytes)} / ${fmtBytes(total)} · ${job.pct.toFixed(0)}%` : fmtBytes(bytes)];
  if (phase === 'download' && rate > 0) parts.push(`${fmtBytes(rate)}/s`);
  if (phase === 'download' && bytes < total && Number.isFinite(eta) && rate > 0) parts.push(`${fmtDuration(eta)} left`);
  const what = phase === 'download' ? (job.ready ? 'Downloading in the background' : 'Downloading') : 'Loading';
  return `${what} ${job.label}: ${parts.join(' · ')}`;
}

function setProgressLine(job, text) {
  if (state.loading !== job || text === null) return;
  job.text = text;
  ui.progress.hidden = false;
  ui.progressFill.style.width = `${(job.pct ?? 0).toFixed(1)}%`;
  ui.progressText.textContent = text;
  const line = ui.catalog.querySelector('.card.fetching .card-progress');
  if (line) paintCardProgress(line, job);
}

function paintCardProgress(line, job) {
  const bar = document.createElement('div');
  bar.className = 'bar';
  const fill = document.createElement('div');
  fill.className = 'fill';
  fill.style.width = `${(job.pct ?? 0).toFixed(1)}%`;
  bar.append(fill);
  line.replaceChildren(job.text ?? '', bar);
}

const EMPTY_HINT = ui.emptyHint.textContent.replace(/\s+/g, ' ').trim();

// The model state, the same everywhere: the badge, the panel's summary line and the composer.
function showModelState() {
  const job = state.loading?.ready ? null : state.loading; // a background download is not a load
  const current = state.model ? state.modelLabel : '';
  ui.badgeModel.textContent = job ? `${current ? `${current} · ` : ''}loading ${job.label}…` : current || 'no model';
  ui.badgeModel.className = current && !job ? 'badge' : 'badge muted';
  ui.modelCurrent.textContent = current
    ? `${current}${job ? ` (loading ${job.label})` : ''}`
    : job
      ? `loading ${job.label}`
      : 'none loaded';
  ui.modelInfo.hidden = !state.model;
  ui.emptyHint.textContent = current
    ? `${current} is ready: type a message below.`
    : job
      ? `Loading ${job.label}: the progress is below.`
      : EMPTY_HINT;
  setComposerEnabled(!!state.model && !job);
  if (!state.loading) ui.progress.hidden = true;
}

const fileName = (u) => {
  const last = String(u).split(/[?#]/)[0].split('/').pop() || String(u);
  try {
    return decodeURIComponent(last);
  } catch {
    return last;
  } // a stray % stays as it is
};
function describeSources(sources) {
  return sources.map((s) => (typeof s === 'string' ? fileName(s) : s.name)).join(', ');
}
function absoluteUrls(list) {
  return list.map((u) => {
    try {
      return new URL(u, location.href).href;
    } catch {
      throw new Error(`${u}: not a valid address`);
    }
  });
}

// Network failures are worth another try (the cache resumes from the bytes it has); a missing
// file, a refusal or a bad file are not.
const retryable = (e) => e?.code === 'IO' && !/HTTP 4\d\d/.test(e.message ?? '');

// wait s seconds, saying so on the progress line; false if the load was cancelled meanwhile
async function retryWait(job, attempt, e) {
  const why = explain(e).title.split(/[.:]/)[0];
  for (let left = RETRY_S[attempt - 1]; left > 0; left--) {
    setProgressLine(job, `${job.label}: ${why.toLowerCase()} — retrying ${attempt + 1}/${ATTEMPTS} in ${left} s`);
    await new Promise((r) => setTimeout(r, 1000));
    if (job.ctl.signal.aborted) return false;
  }
  setProgressLine(job, `${job.label}: retrying ${attempt + 1}/${ATTEMPTS}…`);
  return true;
}

// sources: Files or URLs. entry: the catalog entry; cache: download through the model cache.
// The loaded model stays loaded and usable until the new one is ready: a failed or cancelled
// load leaves it as it was.
async function load(sources, { entry = null, cache = false } = {}) {
  if (!sources.length) return;
  if (state.generating) state.generating.abort();
  state.loading?.ctl.abort();
  const job = {
    ctl: new AbortController(),
    label: describeSources(sources),
    entryId: entry?.id ?? null,
    phase: null,
    bytes: 0,
    pct: 0,
    text: '',
    ready: false,
  };
  const { signal } = job.ctl;
  state.loading = job;
  ui.error.hidden = true;
  showModelState();
  renderCatalog();
  setProgressLine(job, `Starting ${job.label}…`);
  let background = false;
  try {
    const threads = isolated ? Math.round(num(ui.threads, 1, 64, 'Threads')) : 1;
    await window.oxinferIsolation; // pending while the isolation worker reloads the page
    await engineReady;
    if (!ox) throw new Error('The engine failed to load (see above); reload the page after building it.');
    const t0 = performance.now();
    // backend: the GPU where there is one (auto), or as chosen; ?fallbackAdapter=1 lets 'GPU'
    // take a software adapter (SwiftShader in headless Chromium: the tests)
    const opts = {
      threads,
      signal,
      onProgress: (p) => setProgressLine(job, progressText(job, p)),
      backend: ui.backend.value,
      allowFallbackAdapter: params.get('fallbackAdapter') === '1',
    };
    const urls = sources.every((s) => typeof s === 'string');
    let model;
    for (let attempt = 1; ; attempt++) {
      try {
        model =
          cache && sources.length === 1 && urls
            ? await loadUrl(ox, sources[0], opts)
            : await ox.loadModel(sources, opts);
        break;
      } catch (e) {
        if (signal.aborted || !urls || !retryable(e) || attempt >= ATTEMPTS || !(await retryWait(job, attempt, e)))
          throw e;
      }
    }
    if (signal.aborted) {
      await model.unload?.();
      return;
    }
    const old = state.model;
    state.model = model;
    state.lastLoad = { sources, entry, cache };
    state.modelEntry = entry;
    state.modelLabel = entry ? `${entry.title} ${entry.quant}` : job.label;
    window.oxinfer.model = model;
    old?.unload?.().catch((e) => console.warn('[demo] unload', e));
    const secs = (performance.now() - t0) / 1000;
    showModelInfo(model, sources, secs);
    showThreadBadge(model.threads);
    showBackend(model);
    // on a phone the catalog gives its room back to the chat once a model is in
    if (matchMedia('(max-width: 760px)').matches) ui.catalogBox.open = false;
    refreshTools();
    updateStats();
    // the cache may still be downloading (the engine reads what is missing from the network)
    if (model.download && typeof model.download.then === 'function') {
      background = true;
      job.ready = true;
      model.download.then(
        () => {
          if (state.loading === job) {
            state.loading = null;
            showModelState();
          }
          refreshCached();
        },
        (e) => {
          if (state.loading === job) {
            state.loading = null;
            showModelState();
          }
          if (!signal.aborted) showError(e);
          refreshCached();
        },
      );
    }
  } catch (e) {
    if (!signal.aborted) showError(e);
  } finally {
    if (state.loading === job && !background) state.loading = null;
    showModelState();
    if (state.model) ui.prompt.focus();
    refreshCached();
  }
}
ui.loadCancel.addEventListener('click', () => state.loading?.ctl.abort());

function modelMeta(model) {
  const info = model.info ?? {};
  return {
    name: info.name || 'model',
    // oxinfer synth names its random-weight models "synthetic-gemma4-..."
    synthetic: info.synthetic ?? /^synthetic/i.test(info.name || ''),
    layers: info.layers,
    hidden: info.hidden,
    vocab: info.vocab,
    context: info.contextSize,
    quant: info.quant && info.quant !== 'stored' ? info.quant : null,
  };
}

function showModelInfo(model, sources, secs) {
  const m = modelMeta(model);
  const demo = state.modelEntry?.offline || /^oxinfer-trained/.test(m.name); // synth names trained models so
  ui.noticeRandom.hidden = !m.synthetic || demo;
  ui.noticeDemo.hidden = !demo;
  const parts = [`<b>${escapeHtml(m.name)}</b>`, escapeHtml(describeSources(sources))];
  const dims = [];
  if (m.layers) dims.push(`${m.layers} layers`);
  if (m.hidden) dims.push(`hidden ${m.hidden}`);
  if (m.vocab) dims.push(`vocab ${m.vocab}`);
  if (m.context) dims.push(`context ${m.context}`);
  if (m.quant) dims.push(String(m.quant));
  if (dims.length) parts.push(escapeHtml(dims.join(' · ')));
  parts.push(
    `loaded in ${secs.toFixed(1)} s · ${model.build === 'st' ? 'single-threaded build' : `${model.threads} threads`}${m.synthetic && !demo ? ' · <b>random weights</b>' : ''}`,
  );
  if (model.engineNote) parts.push(escapeHtml(model.engineNote));
  if (model.info?.streamWeights && model.info.streamWeights !== 'none')
    parts.push(`weights streamed from the file (${escapeHtml(model.info.streamWeights)}) to fit this tab's memory`);
  ui.modelInfo.innerHTML = parts.join('<br>');
  ui.modelInfo.hidden = false;
}

// where the model runs: the header's badge (the adapter, or why the GPU is not used, as its title)
function showBackend(model) {
  const gpu = model?.backend === 'webgpu';
  const adapter = model?.info?.gpu?.adapter;
  ui.badgeBackend.textContent = !model ? '–' : gpu ? `GPU · ${adapter || 'WebGPU'}` : 'CPU';
  ui.badgeBackend.title = !model
    ? 'where the model runs'
    : gpu
      ? `WebGPU${model.info.gpu.fallbackAdapter ? ' (a software adapter)' : ''}: ${adapter}`
      : (model.info?.backendNote ?? 'the CPU (WebAssembly)');
  ui.badgeBackend.className = model ? 'badge' : 'badge muted';
  ui.badgeBackend.dataset.backend = model?.backend ?? '';
}

// a change of backend loads the model again with it; the old one goes first (a cached model's
// local copy opens once at a time)
ui.backend.addEventListener('change', async () => {
  const l = state.lastLoad;
  if (!l || state.loading) return;
  state.generating?.abort();
  const old = state.model;
  state.model = window.oxinfer.model = null;
  showBackend(null);
  await old?.unload?.().catch((e) => console.warn('[demo] unload', e));
  load(l.sources, { entry: l.entry, cache: l.cache });
});

function escapeHtml(s) {
  return String(s).replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c],
  );
}

// file picker and drag & drop (several files at once: GGUF shards, or
// safetensors + config.json + tokenizer files)
ui.fileInput.addEventListener('change', () => {
  const files = [...ui.fileInput.files];
  ui.fileInput.value = '';
  load(files);
});
for (const ev of ['dragenter', 'dragover']) {
  document.addEventListener(ev, (e) => {
    e.preventDefault();
    ui.drop.classList.add('over');
  });
}
for (const ev of ['dragleave', 'dragend']) {
  document.addEventListener(ev, (e) => {
    if (e.target === ui.drop || !e.relatedTarget) ui.drop.classList.remove('over');
  });
}
document.addEventListener('drop', (e) => {
  e.preventDefault();
  ui.drop.classList.remove('over');
  const files = [...(e.dataTransfer?.files ?? [])];
  if (files.length && !(state.model && !state.loading && attachImages(files))) load(files);
});
ui.drop.addEventListener('keydown', (e) => {
  if (e.key === 'Enter' || e.key === ' ') {
    e.preventDefault();
    ui.fileInput.click();
  }
});
ui.urlForm.addEventListener('submit', (e) => {
  e.preventDefault();
  const urls = ui.urlInput.value.trim().split(/\s+/).filter(Boolean);
  if (!urls.length) {
    showError(new Error('Enter the URL of a model file'));
    return;
  }
  let abs;
  try {
    abs = absoluteUrls(urls);
  } catch (err) {
    showError(err);
    return;
  }
  load(abs, { cache: abs.length === 1 });
});

// ---------- messages ----------
function setComposerEnabled(on) {
  ui.prompt.disabled = !on;
  ui.send.disabled = !on;
  setImagesEnabled(on ? state.model : null);
}

// Keep the end of the messages in view across a change when it was in view before it (the
// reader has not scrolled up); run after the change is rendered.
function nearBottom() {
  return ui.messages.scrollHeight - ui.messages.scrollTop - ui.messages.clientHeight < 80;
}
function keepBottom(stick, change) {
  change();
  if (stick) ui.messages.scrollTop = ui.messages.scrollHeight;
}
// When the list itself changes size (a notice or an error banner above it, the window, the
// phone's keyboard), its end stays in view if it was.
let atEnd = true;
ui.messages.addEventListener(
  'scroll',
  () => {
    atEnd = nearBottom();
  },
  { passive: true },
);
new ResizeObserver(() => {
  if (atEnd) ui.messages.scrollTop = ui.messages.scrollHeight;
}).observe(ui.messages);

function tool(label, cls, onClick) {
  const b = document.createElement('button');
  b.type = 'button';
  b.className = `small secondary ${cls}`;
  b.textContent = label;
  b.addEventListener('click', onClick);
  return b;
}

// A message bubble. Assistant bubbles: a collapsed <details> for the thought, the markdown
// body, a meta line, and Regenerate (shown on the last reply only, see refreshTools).
function addMessage(role, text = '', { thinking = '', meta = '', images = [] } = {}) {
  ui.emptyHint.hidden = true;
  const div = document.createElement('div');
  div.className = `msg ${role}`;
  div.dataset.role = role;
  const tools = document.createElement('div');
  tools.className = 'tools';
  if (role === 'assistant') {
    const think = document.createElement('details');
    think.className = 'thinking';
    think.hidden = !thinking;
    const sum = document.createElement('summary');
    sum.textContent = 'Thought';
    const tb = document.createElement('div');
    tb.className = 'think-body';
    tb.textContent = thinking;
    think.append(sum, tb);
    const body = document.createElement('div');
    body.className = 'body md';
    renderMarkdown(body, text);
    div.dataset.raw = text;
    const m = document.createElement('span');
    m.className = 'meta';
    m.hidden = !meta;
    m.textContent = meta;
    tools.append(tool('Regenerate', 'regen', regenerate));
    div.append(think, body, m, tools);
  } else {
    const body = document.createElement('div');
    body.className = 'text';
    body.textContent = text;
    tools.append(tool('Edit', 'edit', () => editMessage(div)));
    if (images.length) div.append(thumbnails(images));
    div.append(body, tools);
  }
  keepBottom(true, () => ui.messages.append(div));
  refreshTools();
  return div;
}

// Regenerate on the last reply, Edit on the last question; none while a reply streams.
function refreshTools() {
  const msgs = [...ui.messages.querySelectorAll('.msg')];
  const lastA = msgs.findLast((m) => m.dataset.role === 'assistant');
  const lastU = msgs.findLast((m) => m.dataset.role === 'user');
  for (const m of msgs) {
    const t = m.querySelector('.tools');
    if (t)
      t.hidden = !!state.generating || !state.model || (m !== lastA && m !== lastU) || m.classList.contains('editing');
    const regen = m.querySelector('.regen');
    if (regen) regen.hidden = m !== lastA || msgs[msgs.length - 1] !== lastA;
    const edit = m.querySelector('.edit');
    if (edit) edit.hidden = m !== lastU;
  }
}

function clearMessages() {
  for (const m of [...ui.messages.querySelectorAll('.msg')]) m.remove();
  ui.emptyHint.hidden = false;
}

function renderHistory() {
  clearMessages();
  for (const m of state.history) addMessage(m.role === 'user' ? 'user' : 'assistant', m.content, m);
}

function updateStats(tps, tokens, ttftMs) {
  if (ttftMs !== undefined) ui.statTtft.textContent = fmtMs(ttftMs);
  if (tps !== undefined) ui.statTps.textContent = Number.isFinite(tps) ? tps.toFixed(1) : '–';
  if (tokens !== undefined) ui.statTokens.textContent = String(tokens);
  const st = state.model?.stats?.();
  if (st && typeof st.then !== 'function') showStats(st);
  else if (st) st.then(showStats, () => {});
}
function showStats(st) {
  if (!st) return;
  const mem = st.residentBytes ?? st.resident_bytes ?? st.wasmMemoryBytes;
  const host = st.hostBytesRead ?? st.host_bytes_read;
  // on the GPU the weights and KV caches are the device's: both figures
  ui.statMem.textContent = st.gpuBytes ? `${fmtBytes(mem)} + GPU ${fmtBytes(st.gpuBytes)}` : fmtBytes(mem);
  ui.statHost.textContent = fmtBytes(host);
}

// ---------- history (IndexedDB) ----------
async function persist() {
  if (!state.chatId) state.chatId = newChatId();
  try {
    localStorage.setItem('oxinfer-demo-chat', state.chatId);
    await saveChat({ id: state.chatId, messages: state.history });
  } catch (e) {
    console.warn('[demo] could not save the chat', e);
  }
  refreshChatList();
}

async function refreshChatList() {
  let chats = [];
  try {
    chats = await listChats();
  } catch {
    return;
  }
  ui.chatList.replaceChildren(
    ...chats.map((c) => {
      const li = document.createElement('li');
      if (c.id === state.chatId) li.className = 'current';
      const open = document.createElement('button');
      open.type = 'button';
      open.className = 'small secondary open';
      open.textContent = c.title;
      open.title = new Date(c.updated).toLocaleString();
      open.addEventListener('click', () => openChat(c.id));
      const del = tool('×', 'del', async () => {
        await deleteChat(c.id);
        if (c.id === state.chatId) startNewChat();
        refreshChatList();
      });
      del.setAttribute('aria-label', `Delete chat ${c.title}`);
      li.append(open, del);
      return li;
    }),
  );
}

async function openChat(id) {
  if (state.generating) return;
  const c = await getChat(id).catch(() => null);
  if (!c) return;
  state.chatId = c.id;
  state.history = c.messages ?? [];
  try {
    localStorage.setItem('oxinfer-demo-chat', c.id);
  } catch {}
  renderHistory();
  refreshChatList();
}

function startNewChat() {
  state.generating?.abort();
  state.history = [];
  state.chatId = newChatId();
  try {
    localStorage.setItem('oxinfer-demo-chat', state.chatId);
  } catch {}
  clearMessages();
  updateStats(NaN, 0, NaN);
  state.model?.resetChat?.();
}

// ---------- chat ----------
async function send(text, images = takeImages()) {
  if (!state.model || state.generating) return;
  let opts;
  try {
    opts = samplingOptions();
  } catch (e) {
    showError(e);
    return;
  }
  const msg = { role: 'user', content: text, ...(images.length ? { images } : {}) };
  state.history.push(msg);
  addMessage('user', text, msg);
  await reply(opts);
}

// Generate the model's turn for the history as it stands (ending with a user message).
async function reply(opts) {
  ui.error.hidden = true;
  const history = state.history; // New chat swaps in a new array
  const ctl = new AbortController();
  state.generating = ctl;
  const div = addMessage('assistant');
  div.classList.add('streaming');
  const body = div.querySelector('.body'),
    think = div.querySelector('.thinking'),
    meta = div.querySelector('.meta');
  const thinkBody = think.querySelector('.think-body');
  ui.send.hidden = true;
  ui.stop.hidden = false;
  const messages = [];
  const sys = ui.systemPrompt.value.trim();
  if (sys) messages.push({ role: 'system', content: sys });
  messages.push(...history.map((m) => ({ role: m.role, content: contentOf(m) })));
  let answer = '',
    thought = '',
    n = 0,
    t0 = 0,
    stopped = false,
    final = null,
    failed = false,
    frame = 0;
  const tCall = performance.now();
  // markdown is re-rendered at most once per frame while the reply streams; the view follows
  // the end of the reply after each render (unless the reader scrolled up)
  const paint = () => {
    frame = 0;
    keepBottom(nearBottom(), () => {
      renderMarkdown(body, answer);
      div.dataset.raw = answer;
    });
  };
  const tick = setInterval(() => updateStats(n > 1 ? (n - 1) / ((performance.now() - t0) / 1000) : undefined, n), 500);
  try {
    for await (const c of state.model.chat(messages, { ...opts, signal: ctl.signal })) {
      if (c && c.stats) {
        final = c.stats;
        continue;
      }
      if (c.token != null) {
        if (n === 0) {
          t0 = performance.now();
          updateStats(undefined, undefined, t0 - tCall);
        }
        n++;
      }
      // chat() puts the thought channel's text in `thought` and the answer in `text`
      if (c.thought) {
        thought += c.thought;
        keepBottom(nearBottom(), () => {
          think.hidden = false;
          thinkBody.textContent = thought;
        });
      }
      if (c.text) {
        answer += c.text;
        if (!frame) frame = requestAnimationFrame(paint);
      }
    }
    if (ctl.signal.aborted) stopped = true;
  } catch (e) {
    if (ctl.signal.aborted || e?.name === 'AbortError') stopped = true;
    else {
      failed = true;
      const err = document.createElement('span');
      err.className = 'meta';
      err.textContent = `error: ${explain(e).title} (${e.message || e})`;
      div.classList.add('error');
      div.append(err);
      showError(e);
    }
  } finally {
    clearInterval(tick);
    if (frame) cancelAnimationFrame(frame);
    const stick = nearBottom();
    paint();
    div.classList.remove('streaming');
    const secs = t0 ? (performance.now() - t0) / 1000 : 0;
    const tps = final?.decodeTokPerSec ?? (n > 1 && secs > 0 ? (n - 1) / secs : NaN);
    const count = final?.generatedTokens ?? n;
    const ttft = final?.firstTokenMs ?? (t0 ? t0 - tCall : NaN);
    updateStats(tps, count, ttft);
    const bits = [`${count} tokens`];
    if (Number.isFinite(ttft)) bits.push(`first token ${fmtMs(ttft)}`);
    if (Number.isFinite(tps) && tps > 0) bits.push(`${tps.toFixed(1)} tok/s`);
    if (final?.prefillTokens)
      bits.push(`prompt ${final.prefillTokens} tok at ${Math.round(final.prefillTokPerSec)} tok/s`);
    if (stopped) bits.push('stopped');
    else if (final?.reason === 'length') bits.push('max tokens reached');
    else if (final?.reason === 'context') bits.push('context full');
    if (!failed) history.push({ role: 'assistant', content: answer, thinking: thought, meta: bits.join(' · ') });
    state.generating = null;
    ui.stop.hidden = true;
    ui.send.hidden = false;
    showModelState();
    // the stats line and the tools change the reply's height: after them, its end in view
    keepBottom(stick, () => {
      meta.hidden = false;
      meta.textContent = bits.join(' · ');
      refreshTools();
    });
    div.dataset.done = stopped ? 'stopped' : 'done';
    if (history === state.history) persist();
  }
}

// Regenerate: drop the last reply and answer the same question again.
async function regenerate() {
  if (!state.model || state.generating || state.history.at(-1)?.role !== 'assistant') return;
  let opts;
  try {
    opts = samplingOptions();
  } catch (e) {
    showError(e);
    return;
  }
  state.history.pop();
  ui.messages
    .querySelectorAll('.msg.assistant')
    .item(ui.messages.querySelectorAll('.msg.assistant').length - 1)
    ?.remove();
  await reply(opts);
}

// Edit the last question in place; saving drops it (and its reply) and sends the new text.
function editMessage(div) {
  if (state.generating) return;
  const old = div.querySelector('.text').textContent;
  div.classList.add('editing');
  const box = document.createElement('textarea');
  box.className = 'edit-box';
  box.value = old;
  box.rows = Math.min(8, old.split('\n').length + 1);
  const save = tool('Save & send', 'save', () => {
    const text = box.value.trim();
    if (!text) return;
    const i = state.history.findLastIndex((m) => m.role === 'user');
    const images = state.history[i]?.images ?? [];
    state.history.splice(i);
    let m = div;
    while (m) {
      const next = m.nextElementSibling;
      m.remove();
      m = next;
    }
    send(text, images);
  });
  save.classList.remove('secondary');
  const cancel = tool('Cancel', 'cancel', () => {
    div.classList.remove('editing');
    bar.remove();
    box.remove();
    div.querySelector('.text').hidden = false;
    refreshTools();
  });
  const bar = document.createElement('div');
  bar.className = 'edit-bar';
  bar.append(save, cancel);
  div.querySelector('.text').hidden = true;
  div.prepend(box, bar);
  refreshTools();
  box.focus();
}

ui.composer.addEventListener('submit', (e) => {
  e.preventDefault();
  const text = ui.prompt.value.trim();
  if (!(text || ui.tray.childElementCount) || state.generating) return;
  ui.prompt.value = '';
  send(text);
});
ui.prompt.addEventListener('keydown', (e) => {
  if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    ui.composer.requestSubmit();
  }
});
ui.stop.addEventListener('click', () => state.generating?.abort());
ui.newChat.addEventListener('click', () => {
  startNewChat();
  refreshChatList();
  ui.prompt.focus();
});

// ---------- test hook, restored chat, and ?model= preload ----------
window.oxinfer = { api: null, model: null, load, send, state, engineReady };

const restored = (async () => {
  let id = null;
  try {
    id = localStorage.getItem('oxinfer-demo-chat');
  } catch {}
  if (id) await openChat(id);
  if (!state.chatId) state.chatId = newChatId();
  refreshChatList();
})();
window.oxinfer.restored = restored;

// ?hf= and ?model= come from a link: another origin is asked about first (a link must not make
// the page fetch from, or point downloads at, a server the user did not choose)
(async () => {
  const hf = params.get('hf');
  if (hf) {
    let origin = null;
    try {
      origin = new URL(hf, location.href).origin;
    } catch {
      showError(new Error(`?hf=${hf}: not a valid address`));
    }
    if (
      origin &&
      (origin === location.origin ||
        (await askUser(
          `This link points the catalog's downloads at ${origin} instead of Hugging Face.`,
          `Use ${origin}`,
          'Keep Hugging Face',
        )))
    ) {
      hfBase = new URL(hf, location.href).href;
      refreshCached();
    }
  }
  const pre = params.getAll('model');
  if (!pre.length) return;
  ui.urlInput.value = pre.join(' ');
  let urls;
  try {
    urls = absoluteUrls(pre);
  } catch (e) {
    showError(e);
    return;
  }
  const others = [...new Set(urls.map((u) => new URL(u).origin).filter((o) => o !== location.origin))];
  if (
    others.length &&
    !(await askUser(
      `This link asks to load a model from ${others.join(', ')}: ${describeSources(urls)}.`,
      'Load it',
      "Don't load",
    ))
  )
    return;
  load(urls);
})();
