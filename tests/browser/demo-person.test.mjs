// The demo as a person meets it (headless Chromium at 1280x900 and 390x844), issue #34: a failed
// download keeps the working model (named retries, one state everywhere), cancel keeps it too;
// one progress line that never goes backwards, in the chat area and on the card; the end of the
// last answer and the composer in view after streaming; the defaults docs/demo.md states; time
// to first token shown; links to other origins asked about first; plain-word errors for a
// non-model URL and a stray % in a URL; an axe-core pass with no serious or critical violation.
// Screenshots in test-artifacts/person-*.png.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { createRequire } from 'node:module';
import { startServer, ROOT } from '../../tools/serve.mjs';
import { launchChromium, collectErrors } from '../oracle/browser.mjs';
import { synth, tmpDir, requireDist } from '../oracle/fixtures.mjs';
import { startHfServer } from './hf_server.mjs';

const ART = path.join(ROOT, 'test-artifacts');
const TIMEOUT = 120000;
const DESKTOP = { width: 1280, height: 900 };
const PHONE = { width: 390, height: 844 };
const ENTRY = { id: 'e2b-q4km', name: 'unsloth/gemma-4-E2B-it-GGUF/gemma-4-E2B-it-Q4_K_M.gguf' };
const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');
let dir, site, hf, failing, browser;

// A hub that fails every request (503, with CORS so the page sees the status), counting them.
function startFailingServer() {
  const s = http.createServer((req, res) => {
    s.hits++;
    res.writeHead(req.method === 'OPTIONS' ? 204 : 503, {
      'Access-Control-Allow-Origin': '*',
      'Access-Control-Allow-Headers': 'Range',
      'Content-Type': 'text/plain',
    });
    res.end(req.method === 'OPTIONS' ? undefined : 'unavailable');
  });
  s.hits = 0;
  return new Promise((resolve) =>
    s.listen(0, '127.0.0.1', () => {
      s.url = `http://127.0.0.1:${s.address().port}`;
      resolve(s);
    }),
  );
}

before(async () => {
  requireDist();
  dir = tmpDir('demo-person');
  const model = synth(dir, { preset: 'tiny', type: 'q8_0' });
  site = await startServer({ files: {} });
  hf = await startHfServer({ [ENTRY.name]: model }, { slowMs: 40, sliceBytes: 96 << 10 });
  failing = await startFailingServer();
  browser = await launchChromium();
  fs.mkdirSync(ART, { recursive: true });
});

after(async () => {
  await browser?.close();
  site?.close();
  hf?.close();
  failing?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

// bypassCSP: only for injecting the axe-core checker, which the page's CSP refuses as inline script
async function openDemo(query = '', { viewport = DESKTOP, bypassCSP = false } = {}) {
  const context = await browser.newContext({ viewport, bypassCSP });
  const page = await context.newPage();
  page.errors = [];
  collectErrors(page, page.errors);
  await page.goto(`${site.url}/${query}`);
  await page.waitForFunction(() => window.oxinfer?.api && window.oxinfer.restored, null, { timeout: TIMEOUT });
  await page.evaluate(() => window.oxinfer.restored);
  return page;
}

async function loadDemoEntry(page) {
  await page.locator('.card[data-id="demo"] button.get').click();
  await page.waitForFunction(() => window.oxinfer.model && !window.oxinfer.state.loading, null, { timeout: TIMEOUT });
}

// what a person sees of the model state: the badge, the panel, the composer
const modelState = (page) =>
  page.evaluate(() => ({
    badge: document.getElementById('badge-model').textContent,
    current: document.getElementById('model-current').textContent,
    info: document.getElementById('model-info').hidden ? null : document.getElementById('model-info').textContent,
    composer: !document.getElementById('prompt').disabled && !document.getElementById('send').disabled,
    model: !!window.oxinfer.model,
  }));

// every text the progress line and the fetched card's line show, as they change
async function recordProgress(page) {
  await page.evaluate(() => {
    window.__progress = [];
    window.__card = [];
    const t = document.getElementById('progress-text');
    new MutationObserver(() => window.__progress.push(t.textContent)).observe(t, {
      childList: true,
      characterData: true,
      subtree: true,
    });
    new MutationObserver(() => {
      const c = document.querySelector('.card.fetching .card-progress');
      if (c) window.__card.push(c.textContent);
    }).observe(document.getElementById('catalog'), { childList: true, characterData: true, subtree: true });
  });
}

async function send(page, text) {
  const n = await page.locator('.msg.assistant').count();
  await page.fill('#prompt', text);
  await page.press('#prompt', 'Enter');
  await page.waitForFunction((k) => document.querySelectorAll('.msg.assistant')[k]?.dataset.done, n, {
    timeout: TIMEOUT,
  });
  return page.evaluate((k) => {
    const m = document.querySelectorAll('.msg.assistant')[k];
    return { raw: m.dataset.raw, meta: m.querySelector('.meta').textContent, error: m.classList.contains('error') };
  }, n);
}

test(
  'a failed download keeps the working model: retries named, one state everywhere, then a chat',
  { timeout: 3 * TIMEOUT },
  async () => {
    const page = await openDemo(`?hf=${encodeURIComponent(failing.url)}`);
    assert.match(
      await page.textContent('#confirm-text'),
      new RegExp(`downloads at ${failing.url.replace(/[.]/g, '\\.')}`),
      'the other origin is asked about',
    );
    await page.click('#confirm-yes');
    await loadDemoEntry(page);
    const before = await modelState(page);
    assert.equal(before.badge, 'oxinfer demo model F32');
    assert.equal(before.composer, true);
    await recordProgress(page);
    await page.locator(`.card[data-id="${ENTRY.id}"] button.get`).click();
    await page.waitForSelector('.card.fetching', { timeout: TIMEOUT });
    const during = await modelState(page);
    assert.match(
      during.badge,
      /^oxinfer demo model F32 · loading gemma-4-E2B-it-Q4_K_M\.gguf…$/,
      'the badge says what is loaded and what is loading',
    );
    assert.equal(during.info !== null, true, 'the panel still shows the loaded model');
    await page.waitForFunction(
      () => /retrying 3\/6 in \d s/.test(document.getElementById('progress-text').textContent),
      null,
      { timeout: TIMEOUT },
    );
    await page.screenshot({ path: path.join(ART, 'person-retrying.png') });
    await page.waitForSelector('#error:not([hidden])', { timeout: TIMEOUT });
    const progress = await page.evaluate(() => window.__progress);
    for (const k of [2, 3, 4, 5, 6])
      assert.ok(
        progress.some((t) => new RegExp(`retrying ${k}/6 in \\d s`).test(t)),
        `attempt ${k} of 6 named: ${progress.slice(-4)}`,
      );
    assert.ok(
      (await page.evaluate(() => window.__card)).some((t) => /retrying \d\/6/.test(t)),
      'the card shows the same line',
    );
    assert.equal(failing.hits >= 6, true, `six attempts reached the server (${failing.hits})`);
    assert.match(await page.textContent('#error-title'), /download did not get through/);
    const afterFail = await modelState(page);
    assert.deepEqual(afterFail, before, 'badge, panel and composer: the demo model, as before the failed download');
    assert.equal(await page.isVisible('#progress'), false);
    assert.equal(await page.locator('.card.fetching').count(), 0);
    await page.screenshot({ path: path.join(ART, 'person-failed-download.png') });
    await page.click('#settings summary');
    await page.fill('#temperature', '0');
    await page.uncheck('#thinking');
    const r = await send(page, 'What does a cow say?');
    assert.equal(r.error, false, r.meta);
    assert.match(r.raw, /moo/i, 'the demo model still answers');
    // Cancel on the card while it retries: the model stays, no error
    await page.locator(`.card[data-id="${ENTRY.id}"] button.get`).click();
    await page.waitForFunction(() => /retrying 2\/6/.test(document.getElementById('progress-text').textContent), null, {
      timeout: TIMEOUT,
    });
    await page.locator(`.card[data-id="${ENTRY.id}"] button.get`).click();
    await page.waitForFunction(() => !window.oxinfer.state.loading, null, { timeout: TIMEOUT });
    assert.deepEqual(await modelState(page), before, 'cancelled: the demo model as before');
    assert.equal(await page.isVisible('#error'), false, 'a cancel is not an error');
    assert.deepEqual(
      page.errors.filter((e) => !/503|Failed to load resource/.test(e)),
      [],
    );
    await page.context().close();
  },
);

test(
  'one progress line for download and load: never backwards, on the card and in the chat area, with rate, time left and Cancel',
  { timeout: 3 * TIMEOUT },
  async () => {
    const page = await openDemo(`?hf=${encodeURIComponent(hf.hub.url)}`);
    await page.click('#confirm-yes');
    await recordProgress(page);
    await page.locator(`.card[data-id="${ENTRY.id}"] button.get`).click();
    await page.waitForSelector('.card.fetching .card-progress', { timeout: TIMEOUT });
    assert.equal(await page.isVisible('#chat-panel #progress'), true, 'the progress line is in the chat area');
    assert.equal(await page.isVisible('#load-cancel'), true, 'with Cancel');
    assert.equal(await page.textContent(`.card[data-id="${ENTRY.id}"] button.get`), 'Cancel', 'the card offers Cancel');
    await page.waitForFunction(() => /\d+%/.test(document.getElementById('progress-text').textContent), null, {
      timeout: TIMEOUT,
    });
    await page.screenshot({ path: path.join(ART, 'person-progress.png') });
    await page.waitForFunction(() => window.oxinfer.model && !window.oxinfer.state.loading, null, { timeout: TIMEOUT });
    const { main, card } = await page.evaluate(() => ({ main: window.__progress, card: window.__card }));
    const lines = main.filter((t) => /\d+%/.test(t));
    assert.ok(lines.length >= 5, `several progress updates: ${main.length}`);
    assert.ok(
      lines.some((t) => /[\d.]+ [KMG]?B\/s/.test(t)) && lines.some((t) => /\d+ (s|min|h) left/.test(t)),
      `rate and time left: ${lines.slice(0, 3)}`,
    );
    const pct = lines.map((t) => Number(/(\d+)%/.exec(t)[1]));
    for (let i = 1; i < pct.length; i++)
      assert.ok(pct[i] >= pct[i - 1], `the percentage never goes back: ${lines[i - 1]} -> ${lines[i]}`);
    // no flicker between counters: each kind of line, once left, never comes back
    const kinds = lines
      .map((t) => /^(Downloading in the background|Downloading|Loading)/.exec(t)?.[1])
      .filter((k, i, a) => k !== a[i - 1]);
    assert.equal(new Set(kinds).size, kinds.length, `the line switches counters only forwards: ${kinds}`);
    assert.ok(
      !kinds.includes('Loading') || kinds.indexOf('Loading') === 0,
      `no "Loading" counter between download figures: ${kinds}`,
    );
    assert.ok(
      card.some((t) => /\d+%/.test(t)),
      'the card being fetched shows the line',
    );
    const r = await page.evaluate(() => document.getElementById('badge-model').textContent);
    assert.equal(r, 'Gemma 4 E2B instruct Q4_K_M');
    await page.context().close();
  },
);

// scripted replies (what a model could send): a long markdown answer ending with a code block
// and a last line, so the end of the reply is what must be in view
async function scriptReplies(page) {
  await page.evaluate(() => {
    const m = window.oxinfer.model;
    const text = `${'A line of the answer that fills the bubble.\n\n'.repeat(14)}\`\`\`js\nconsole.log("hi");\n\`\`\`\n\nIt prints one line.`;
    m.chat = async function* (messages, opts) {
      for (const piece of text.match(/[\s\S]{1,12}/g)) {
        await new Promise((r) => setTimeout(r, 2));
        if (opts.signal?.aborted) return;
        yield { token: 1, text: piece, thought: '', thinking: false };
      }
      yield {
        token: null,
        text: '',
        stats: { reason: 'stop', generatedTokens: 60, decodeTokPerSec: 100, firstTokenMs: 12 },
      };
    };
  });
}

async function assertInView(page, label) {
  const box = await page.evaluate(() => {
    const r = (el) => {
      const b = el.getBoundingClientRect();
      return { top: b.top, bottom: b.bottom };
    };
    const last = [...document.querySelectorAll('.msg.assistant')].at(-1);
    const lines = last.querySelectorAll('.body p');
    return {
      vh: window.innerHeight,
      messages: r(document.getElementById('messages')),
      lastLine: r(lines[lines.length - 1]),
      meta: r(last.querySelector('.meta')),
      prompt: r(document.getElementById('prompt')),
      send: r(document.getElementById('send')),
      scrollY: window.scrollY,
      docH: document.documentElement.scrollHeight,
    };
  });
  const inside = (b, what) =>
    assert.ok(
      b.top >= 0 && b.bottom <= box.vh + 0.5,
      `${label}: ${what} in the viewport (${JSON.stringify(b)}, height ${box.vh})`,
    );
  inside(box.prompt, 'the composer');
  inside(box.send, 'Send');
  inside(box.lastLine, 'the last line of the answer');
  inside(box.meta, 'the stats line under it');
  assert.ok(
    box.meta.bottom <= box.messages.bottom + 0.5 && box.lastLine.top >= box.messages.top,
    `${label}: the end of the answer within the message list (${JSON.stringify(box)})`,
  );
  assert.ok(box.docH <= box.vh + 1, `${label}: the page itself does not scroll (${box.docH} > ${box.vh})`);
}

for (const [name, viewport] of [
  ['desktop', DESKTOP],
  ['phone', PHONE],
]) {
  test(
    `${name} ${viewport.width}x${viewport.height}: the end of the last answer and the composer in view after streaming`,
    { timeout: 2 * TIMEOUT },
    async () => {
      const page = await openDemo('', { viewport });
      await loadDemoEntry(page);
      assert.equal(await page.isVisible('#notice-demo'), true, 'with the demo notice shown');
      if (name === 'phone')
        assert.equal(
          await page.evaluate(() => document.getElementById('catalog-box').open),
          false,
          'the catalog folds away on a phone once a model is in',
        );
      await scriptReplies(page);
      for (const q of ['first question', 'second question']) await send(page, q);
      await assertInView(page, name);
      await page.screenshot({ path: path.join(ART, `person-answer-${name}.png`) });
      // the demo notice put away: the chat takes the room, its end still in view
      const h0 = await page.evaluate(() => document.getElementById('messages').clientHeight);
      await page.click('#notice-demo .close');
      assert.equal(await page.isVisible('#notice-demo'), false);
      assert.ok(
        (await page.evaluate(() => document.getElementById('messages').clientHeight)) > h0,
        'the message list grows',
      );
      await assertInView(page, `${name} without the notice`);
      // an error banner (a bad setting) does not push the composer or the answer's end out
      await page.click('#settings summary');
      await page.fill('#top-p', '7');
      await page.fill('#prompt', 'with a bad setting');
      await page.press('#prompt', 'Enter');
      await page.waitForSelector('#error:not([hidden])');
      if (name === 'phone') await page.click('#settings summary'); // folded again, as a person would
      await assertInView(page, `${name} with an error banner`);
      await page.screenshot({ path: path.join(ART, `person-answer-${name}-banner.png`) });
      assert.deepEqual(
        page.errors.filter((e) => !/console: \[demo\] Error: Top-p/.test(e)),
        [],
        'only the error the page explained',
      );
      await page.context().close();
    },
  );
}

test(
  'defaults as docs/demo.md states them, with time to first token in the stats',
  { timeout: 2 * TIMEOUT },
  async () => {
    const page = await openDemo();
    await loadDemoEntry(page);
    await page.evaluate(() => {
      const m = window.oxinfer.model;
      const chat = m.chat.bind(m);
      window.__opts = [];
      m.chat = (messages, opts) => {
        window.__opts.push({ ...opts, signal: undefined });
        return chat(messages, opts);
      };
    });
    const r = await send(page, 'What color is the sky?');
    assert.equal(r.error, false, r.meta);
    const [opts] = await page.evaluate(() => window.__opts);
    delete opts.signal;
    const defaults = { temperature: 1, topK: 64, topP: 0.95, minP: 0, maxTokens: 512, thinking: false };
    assert.deepEqual(opts, defaults, 'a fresh page samples with these');
    const doc = fs.readFileSync(path.join(ROOT, 'docs', 'demo.md'), 'utf8');
    assert.match(
      doc,
      /temperature 1, top-k 64, top-p 0\.95, min-p 0, 512 tokens at most, thinking off/,
      'docs/demo.md states the same defaults',
    );
    assert.match(r.meta, /first token \d+ ms/, `each reply's stats say when its first token came: ${r.meta}`);
    assert.match(await page.textContent('#stat-ttft'), /^\d+ ms$|^[\d.]+ s$/, 'and so does the stats line');
    assert.match(await page.textContent('#stats'), /read from file/, 'no "host read" jargon');
    assert.match(
      await page.getAttribute('.card[data-id="demo"] .fit', 'title'),
      /needs about 4\.70 MB/,
      'the demo card says its real size',
    );
    await page.screenshot({ path: path.join(ART, 'person-defaults.png') });
    assert.deepEqual(page.errors, []);
    await page.context().close();
  },
);

test(
  'links to other origins are asked about; a non-model URL and a stray % get plain words',
  { timeout: 2 * TIMEOUT },
  async () => {
    const hits = failing.hits;
    const page = await openDemo(`?model=${encodeURIComponent(`${failing.url}/model.gguf`)}`);
    await page.waitForSelector('#notice-confirm:not([hidden])');
    assert.match(
      await page.textContent('#confirm-text'),
      /asks to load a model from http:\/\/127\.0\.0\.1:\d+: model\.gguf/,
    );
    await page.screenshot({ path: path.join(ART, 'person-confirm.png') });
    await page.click('#confirm-no');
    assert.equal(failing.hits, hits, 'nothing was requested from the other origin');
    assert.equal((await modelState(page)).badge, 'no model');
    await loadDemoEntry(page);
    const before = await modelState(page);
    // a page that is not a model
    await page.click('#more-sources summary');
    await page.fill('#url-input', `${site.url}/index.html`);
    await page.click('#url-form button[type=submit]');
    await page.waitForSelector('#error:not([hidden])', { timeout: TIMEOUT });
    assert.match(await page.textContent('#error-title'), /not a model file/);
    assert.deepEqual(await modelState(page), before, 'the model stays');
    // a stray % in the last segment
    await page.fill('#url-input', `${site.url}/models/50%-off.gguf`);
    await page.click('#url-form button[type=submit]');
    await page.waitForFunction(
      () => !window.oxinfer.state.loading && /50%-off/.test(document.getElementById('error-text').textContent),
      null,
      { timeout: TIMEOUT },
    );
    assert.match(await page.textContent('#error-title'), /not found/);
    assert.deepEqual(await modelState(page), before, 'state consistent: the model stays, the composer works');
    assert.deepEqual(
      page.errors.filter((e) => !/Failed to load resource|404|console: \[demo\] OxError/.test(e)),
      [],
      'only the errors the page explained',
    );
    await page.context().close();
  },
);

test(
  'accessibility: axe-core finds no serious or critical violation on the main page',
  { timeout: 2 * TIMEOUT },
  async () => {
    for (const [name, viewport] of [
      ['desktop', DESKTOP],
      ['phone', PHONE],
    ]) {
      const page = await openDemo('', { viewport, bypassCSP: true });
      const run = async (when) => {
        await page.addScriptTag({ path: AXE });
        const found = await page.evaluate(async () =>
          (await window.axe.run(document, { resultTypes: ['violations'] })).violations.map((v) => ({
            id: v.id,
            impact: v.impact,
            help: v.help,
            nodes: v.nodes.slice(0, 3).map((n) => n.target.join(' ')),
          })),
        );
        const bad = found.filter((v) => v.impact === 'serious' || v.impact === 'critical');
        assert.deepEqual(bad, [], `${name}, ${when}: ${JSON.stringify(bad, null, 1)}`);
      };
      await run('first screen');
      await loadDemoEntry(page);
      await scriptReplies(page);
      await send(page, 'hello');
      await run('after a reply');
      await page.screenshot({ path: path.join(ART, `person-a11y-${name}.png`) });
      await page.context().close();
    }
  },
);
