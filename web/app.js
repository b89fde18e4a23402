// The chat demo: plain ES modules, no build step.  Talks to the engine only
// through the package's public API (js/index.js, mapped to "oxinfer-web" by the
// import map in index.html).

const $ = (id) => document.getElementById(id);
const ui = {
  badgeThreads: $('badge-threads'), badgeModel: $('badge-model'),
  noticeIsolation: $('notice-isolation'), noticeRandom: $('notice-random'),
  error: $('error'), errorText: $('error-text'), errorClose: $('error-close'),
  drop: $('drop'), fileInput: $('file-input'), urlForm: $('url-form'), urlInput: $('url-input'),
  progress: $('progress'), progressFill: $('progress-fill'), progressText: $('progress-text'), loadCancel: $('load-cancel'),
  modelInfo: $('model-info'),
  systemPrompt: $('system-prompt'), thinking: $('thinking'), temperature: $('temperature'), topK: $('top-k'),
  topP: $('top-p'), minP: $('min-p'), maxTokens: $('max-tokens'), seed: $('seed'), threads: $('threads'),
  messages: $('messages'), emptyHint: $('empty-hint'),
  statTps: $('stat-tps'), statTokens: $('stat-tokens'), statMem: $('stat-mem'), statHost: $('stat-host'),
  composer: $('composer'), prompt: $('prompt'), send: $('send'), stop: $('stop'), newChat: $('new-chat'),
};

const state = {
  model: null,         // the loaded model (package API object)
  loading: null,       // AbortController of a load in progress
  generating: null,    // AbortController of a reply in progress
  history: [],         // [{ role, content }]
};

// ---------- formatting ----------
function fmtBytes(n) {
  if (!Number.isFinite(n)) return '–';
  const u = ['B', 'KB', 'MB', 'GB', 'TB'];
  let i = 0;
  while (n >= 1000 && i < u.length - 1) { n /= 1000; i++; }
  return `${n.toFixed(i === 0 ? 0 : n < 10 ? 2 : n < 100 ? 1 : 0)} ${u[i]}`;
}

// ---------- errors ----------
function showError(e) {
  const msg = e && e.message ? e.message : String(e);
  ui.errorText.textContent = msg;
  ui.error.hidden = false;
  console.error('[demo]', e);
}
ui.errorClose.addEventListener('click', () => { ui.error.hidden = true; });
window.addEventListener('unhandledrejection', (ev) => showError(ev.reason));
window.addEventListener('error', (ev) => showError(ev.error || ev.message));

// The engine is imported dynamically so that a missing or broken build is
// reported in the page instead of leaving a dead page.
let ox = null;
const engineReady = import('oxinfer-web').then(
  (m) => { ox = m; window.oxinfer.api = m; },
  (e) => showError(new Error(`Could not load the engine (js/index.js, dist/): ${e.message || e}`)));

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
    if (ui[k].type === 'checkbox') ui[k].checked = !!saved[k]; else ui[k].value = saved[k];
  }
} catch { /* private mode or junk: defaults */ }
function saveSettings() {
  const s = {};
  for (const k of SETTINGS) s[k] = ui[k].type === 'checkbox' ? ui[k].checked : ui[k].value;
  try { localStorage.setItem('oxinfer-demo-settings', JSON.stringify(s)); } catch {}
}
for (const k of SETTINGS) ui[k].addEventListener('change', saveSettings);

function num(input, lo, hi, name) {
  const v = Number(input.value);
  if (input.value === '' || !Number.isFinite(v) || v < lo || v > hi) throw new Error(`${name} must be a number from ${lo} to ${hi}`);
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

// ---------- loading ----------
function setProgress(done, total) {
  ui.progress.hidden = false;
  const pct = total > 0 ? Math.min(100, (100 * done) / total) : 0;
  ui.progressFill.style.width = `${pct.toFixed(1)}%`;
  ui.progressText.textContent = total > 0
    ? `${fmtBytes(done)} / ${fmtBytes(total)} · ${pct.toFixed(0)}%`
    : `${fmtBytes(done)}`;
}

function describeSources(sources) {
  return sources.map((s) => (typeof s === 'string' ? decodeURIComponent(s.split('/').pop() || s) : s.name)).join(', ');
}

async function load(sources) {
  if (!sources.length) return;
  if (state.generating) state.generating.abort();
  if (state.loading) state.loading.abort();
  const ctl = new AbortController();
  state.loading = ctl;
  ui.error.hidden = true;
  setComposerEnabled(false);
  ui.badgeModel.textContent = `loading ${describeSources(sources)}…`;
  ui.badgeModel.className = 'badge muted';
  setProgress(0, 0);
  try {
    const threads = isolated ? Math.round(num(ui.threads, 1, 64, 'Threads')) : 1;
    await engineReady;
    if (!ox) throw new Error('The engine failed to load (see above); reload the page after building it.');
    if (state.model) { const old = state.model; state.model = null; await old.dispose?.(); }
    const t0 = performance.now();
    const model = await ox.loadModel(sources, {
      threads,
      signal: ctl.signal,
      onProgress: (p) => { if (state.loading === ctl) setProgress(p.loaded, p.total); },
    });
    if (ctl.signal.aborted) { await model.dispose?.(); return; }
    state.model = model;
    window.oxinfer.model = model;
    const secs = (performance.now() - t0) / 1000;
    showModelInfo(model, sources, secs);
    showThreadBadge(model.threads);
    setComposerEnabled(true);
    updateStats();
    ui.prompt.focus();
  } catch (e) {
    if (ctl.signal.aborted) {
      if (state.loading === ctl) ui.badgeModel.textContent = 'load cancelled';
      return;
    }
    ui.badgeModel.textContent = 'no model';
    showError(e);
  } finally {
    if (state.loading === ctl) {
      state.loading = null;
      ui.progress.hidden = true;
    }
  }
}
ui.loadCancel.addEventListener('click', () => state.loading?.abort());

function modelMeta(model) {
  const info = model.info ?? {};
  return {
    name: info.name || 'model',
    // oxinfer synth names its models "synthetic-gemma4-..."
    synthetic: info.synthetic ?? /^synthetic/i.test(info.name || ''),
    layers: info.layers, hidden: info.hidden, vocab: info.vocab, context: info.contextSize,
    quant: info.quant && info.quant !== 'stored' ? info.quant : null,
  };
}

function showModelInfo(model, sources, secs) {
  const m = modelMeta(model);
  ui.noticeRandom.hidden = !m.synthetic;
  ui.badgeModel.textContent = describeSources(sources);
  ui.badgeModel.className = 'badge';
  const parts = [`<b>${escapeHtml(m.name)}</b>`, escapeHtml(describeSources(sources))];
  const dims = [];
  if (m.layers) dims.push(`${m.layers} layers`);
  if (m.hidden) dims.push(`hidden ${m.hidden}`);
  if (m.vocab) dims.push(`vocab ${m.vocab}`);
  if (m.context) dims.push(`context ${m.context}`);
  if (m.quant) dims.push(String(m.quant));
  if (dims.length) parts.push(escapeHtml(dims.join(' · ')));
  parts.push(`loaded in ${secs.toFixed(1)} s · ${model.build === 'st' ? 'single-threaded build' : `${model.threads} threads`}${m.synthetic ? ' · <b>random weights</b>' : ''}`);
  if (model.engineNote) parts.push(escapeHtml(model.engineNote));
  ui.modelInfo.innerHTML = parts.join('<br>');
  ui.modelInfo.hidden = false;
}

function escapeHtml(s) {
  return String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));
}

// file picker and drag & drop (several files at once: GGUF shards, or
// safetensors + config.json + tokenizer files)
ui.fileInput.addEventListener('change', () => {
  const files = [...ui.fileInput.files];
  ui.fileInput.value = '';
  load(files);
});
for (const ev of ['dragenter', 'dragover']) {
  document.addEventListener(ev, (e) => { e.preventDefault(); ui.drop.classList.add('over'); });
}
for (const ev of ['dragleave', 'dragend']) {
  document.addEventListener(ev, (e) => { if (e.target === ui.drop || !e.relatedTarget) ui.drop.classList.remove('over'); });
}
document.addEventListener('drop', (e) => {
  e.preventDefault();
  ui.drop.classList.remove('over');
  const files = [...(e.dataTransfer?.files ?? [])];
  if (files.length) load(files);
});
ui.drop.addEventListener('keydown', (e) => { if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); ui.fileInput.click(); } });
ui.urlForm.addEventListener('submit', (e) => {
  e.preventDefault();
  const urls = ui.urlInput.value.trim().split(/\s+/).filter(Boolean);
  if (!urls.length) { showError(new Error('Enter the URL of a model file')); return; }
  load(urls.map((u) => new URL(u, location.href).href));
});

// ---------- chat ----------
function setComposerEnabled(on) {
  ui.prompt.disabled = !on;
  ui.send.disabled = !on;
}

function addMessage(role, text = '') {
  ui.emptyHint.hidden = true;
  const div = document.createElement('div');
  div.className = `msg ${role}`;
  div.dataset.role = role;
  if (role === 'assistant') {
    const think = document.createElement('span');
    think.className = 'thinking';
    think.hidden = true;
    const body = document.createElement('span');
    body.className = 'body';
    const meta = document.createElement('span');
    meta.className = 'meta';
    meta.hidden = true;
    div.append(think, body, meta);
  } else {
    div.textContent = text;
  }
  ui.messages.append(div);
  ui.messages.scrollTop = ui.messages.scrollHeight;
  return div;
}

// one streamed piece -> { text, thinking }
function chunkText(c) {
  if (typeof c === 'string') return { text: c, thinking: false };
  if (!c) return { text: '', thinking: false };
  return { text: c.text ?? c.token ?? c.delta ?? c.content ?? '', thinking: !!(c.thinking ?? c.reasoning) };
}

function updateStats(tps, tokens) {
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
  ui.statMem.textContent = fmtBytes(mem);
  ui.statHost.textContent = fmtBytes(host);
}

async function send(text) {
  if (!state.model || state.generating) return;
  let opts;
  try { opts = samplingOptions(); } catch (e) { showError(e); return; }
  ui.error.hidden = true;
  const history = state.history;  // New chat swaps in a new array
  history.push({ role: 'user', content: text });
  addMessage('user', text);
  const div = addMessage('assistant');
  div.classList.add('streaming');
  const body = div.querySelector('.body'), think = div.querySelector('.thinking'), meta = div.querySelector('.meta');
  const ctl = new AbortController();
  state.generating = ctl;
  ui.send.hidden = true; ui.stop.hidden = false;
  const messages = [];
  const sys = ui.systemPrompt.value.trim();
  if (sys) messages.push({ role: 'system', content: sys });
  messages.push(...history);
  let answer = '', n = 0, t0 = 0, stopped = false, final = null;
  const tick = setInterval(() => updateStats(n > 1 ? (n - 1) / ((performance.now() - t0) / 1000) : undefined, n), 500);
  try {
    for await (const c of state.model.chat(messages, { ...opts, signal: ctl.signal })) {
      if (c && c.stats) { final = c.stats; continue; }
      if (c && c.token != null) {
        if (n === 0) t0 = performance.now();
        n++;
      }
      const { text: piece, thinking } = chunkText(c);
      if (!piece) continue;
      const atBottom = ui.messages.scrollHeight - ui.messages.scrollTop - ui.messages.clientHeight < 80;
      if (thinking) { think.hidden = false; think.textContent += piece; }
      else { answer += piece; body.textContent = answer; }
      if (atBottom) ui.messages.scrollTop = ui.messages.scrollHeight;
    }
    if (ctl.signal.aborted) stopped = true;
  } catch (e) {
    if (ctl.signal.aborted || e?.name === 'AbortError') stopped = true;
    else {
      const err = document.createElement('span');
      err.className = 'meta';
      err.textContent = `error: ${e.message || e}`;
      div.classList.add('error');
      div.append(err);
      showError(e);
    }
  } finally {
    clearInterval(tick);
    div.classList.remove('streaming');
    const secs = t0 ? (performance.now() - t0) / 1000 : 0;
    const tps = final?.decodeTokPerSec ?? (n > 1 && secs > 0 ? (n - 1) / secs : NaN);
    const count = final?.generatedTokens ?? n;
    updateStats(tps, count);
    meta.hidden = false;
    const bits = [`${count} tokens`];
    if (Number.isFinite(tps) && tps > 0) bits.push(`${tps.toFixed(1)} tok/s`);
    if (final?.prefillTokens) bits.push(`prompt ${final.prefillTokens} tok at ${Math.round(final.prefillTokPerSec)} tok/s`);
    if (stopped) bits.push('stopped');
    else if (final?.reason === 'length') bits.push('max tokens reached');
    else if (final?.reason === 'context') bits.push('context full');
    meta.textContent = bits.join(' · ');
    history.push({ role: 'assistant', content: answer });
    state.generating = null;
    ui.stop.hidden = true; ui.send.hidden = false;
    setComposerEnabled(!!state.model);
    div.dataset.done = stopped ? 'stopped' : 'done';
  }
}

ui.composer.addEventListener('submit', (e) => {
  e.preventDefault();
  const text = ui.prompt.value.trim();
  if (!text || state.generating) return;
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
  state.generating?.abort();
  state.history = [];
  for (const m of [...ui.messages.querySelectorAll('.msg')]) m.remove();
  ui.emptyHint.hidden = false;
  updateStats(NaN, 0);
  state.model?.resetChat?.();
  ui.prompt.focus();
});

// ---------- test hook and ?model= preload ----------
window.oxinfer = { api: null, model: null, load, send, state, engineReady };

const pre = new URLSearchParams(location.search).getAll('model');
if (pre.length) {
  ui.urlInput.value = pre.join(' ');
  load(pre.map((u) => new URL(u, location.href).href));
}
