// The demo page for real users, in headless Chromium: the catalog's one-click download from a
// stand-in for Hugging Face (302 to another origin, Range, ETag, CORS) with progress in bytes,
// rate and time left, then a chat answer; markdown replies rendered and sanitized (an
// <img onerror> or a <script> in a reply does nothing); code blocks with Copy; the thought
// channel shown collapsed; Regenerate and Edit; the conversation kept across a reload
// (IndexedDB); an explained error for a file the hub does not have.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { startServer, ROOT } from '../../tools/serve.mjs';
import { launchChromium, collectErrors } from '../oracle/browser.mjs';
import { synth, tmpDir, requireDist } from '../oracle/fixtures.mjs';
import { startHfServer } from './hf_server.mjs';

const ART = path.join(ROOT, 'test-artifacts');
const TIMEOUT = 120000;
const ENTRY = { id: 'e2b-q4km', name: 'unsloth/gemma-4-E2B-it-GGUF/gemma-4-E2B-it-Q4_K_M.gguf' };
let dir, model, site, hf, browser;

before(async () => {
  requireDist();
  dir = tmpDir('demo-chat');
  model = synth(dir, { preset: 'tiny', type: 'q8_0' });
  site = await startServer({ files: { '/models/demo.gguf': model } });
  hf = await startHfServer({ [ENTRY.name]: model });
  browser = await launchChromium();
  fs.mkdirSync(ART, { recursive: true });
});

after(async () => {
  await browser?.close();
  site?.close();
  hf?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

async function openDemo(query = '', { viewport = { width: 1280, height: 860 }, context = null } = {}) {
  const page = await (context ?? browser).newPage({ viewport });
  page.errors = [];
  collectErrors(page, page.errors);
  await page.goto(`${site.url}/${query}`);
  await page.waitForFunction(() => window.oxinfer?.api && window.oxinfer.restored, null, { timeout: TIMEOUT });
  await page.evaluate(() => window.oxinfer.restored);
  // a hub on another origin is used once the user agrees
  if (/[?&]hf=/.test(query)) await page.click('#confirm-yes');
  return page;
}

async function waitModel(page) {
  await page.waitForFunction(() => window.oxinfer.model || !document.getElementById('error').hidden, null, {
    timeout: TIMEOUT,
  });
  const err = await page.evaluate(() =>
    document.getElementById('error').hidden ? null : document.getElementById('error').textContent,
  );
  assert.equal(err, null, `page error while loading: ${err}\n${page.errors.join('\n')}`);
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
    return {
      raw: m.dataset.raw,
      text: m.querySelector('.body').textContent,
      meta: m.querySelector('.meta').textContent,
      error: m.classList.contains('error'),
    };
  }, n);
}

// Replace model.chat by a stream of fixed chunks (what a model could send), recording calls.
async function scriptReplies(page, chunks) {
  await page.evaluate((cs) => {
    const m = window.oxinfer.model;
    window.__calls = [];
    m.chat = async function* (messages, opts) {
      window.__calls.push(JSON.parse(JSON.stringify(messages)));
      for (const c of cs) {
        await new Promise((r) => setTimeout(r, 5));
        if (opts.signal?.aborted) return;
        yield { token: 1, ...c };
      }
      yield { stats: { reason: 'stop', generatedTokens: cs.length, decodeTokPerSec: 100 } };
    };
  }, chunks);
}

test(
  'catalog: one click downloads from the hub (302, Range, CORS) with bytes, rate and time left, then chats',
  { timeout: 5 * TIMEOUT },
  async () => {
    const page = await openDemo(`?hf=${encodeURIComponent(hf.hub.url)}`);
    const card = page.locator(`.card[data-id="${ENTRY.id}"]`);
    assert.match(
      await card.textContent(),
      /Gemma 4 E2B instruct.*Q4_K_M.*unsloth.*GB/s,
      'the entry names the model, quantization, publisher and size',
    );
    assert.match(await card.locator('.fit').textContent(), /fits|may not fit|too large/);
    assert.match(
      await page.textContent('.card[data-id="e4b-q8"] .fit'),
      /too large/,
      'E4B Q8_0 does not fit 4 GiB of wasm memory',
    );
    await page.evaluate(() => {
      window.__progress = [];
      const t = document.getElementById('progress-text');
      new MutationObserver(() => window.__progress.push(t.textContent)).observe(t, {
        childList: true,
        characterData: true,
        subtree: true,
      });
    });
    await card.locator('button.get').click();
    await waitModel(page);
    const progress = await page.evaluate(() => window.__progress);
    assert.ok(
      progress.some((t) => /MB \/ [\d.]+ MB · \d+%/.test(t)),
      `progress in bytes and percent: ${progress.slice(-3)}`,
    );
    assert.ok(
      progress.some((t) => /[\d.]+ [KMG]?B\/s/.test(t)),
      `progress shows the rate: ${progress.slice(-3)}`,
    );
    assert.ok(
      progress.some((t) => /\d+ (s|min|h) left/.test(t)),
      `progress shows the time left: ${progress.slice(-3)}`,
    );
    assert.ok(
      hf.log.includes(`hub GET /${ENTRY.name.replace(/\/(?=[^/]+$)/, '/resolve/main/')}`),
      `the page asked the hub for resolve/main/<file>: ${hf.log.slice(0, 4)}`,
    );
    assert.ok(
      hf.log.some((l) => /^cdn GET \/blobs\/\w+ bytes=\d+-\d*/.test(l)),
      `the file came from the CDN by Range after the redirect: ${hf.log.slice(0, 6)}`,
    );
    // greedy: a random-weight model may sample its end-of-turn id first under a random seed
    await page.click('#settings summary');
    await page.fill('#max-tokens', '16');
    await page.fill('#temperature', '0');
    const r = await send(page, 'Hi!');
    assert.equal(r.error, false, r.meta);
    assert.ok(r.raw.length > 0, 'an answer');
    await page.screenshot({ path: path.join(ART, 'demo-catalog.png') });
    assert.deepEqual(page.errors, []);
    await page.close();
  },
);

test('a file the hub does not have: the error says so in plain words', { timeout: TIMEOUT }, async () => {
  const page = await openDemo(`?hf=${encodeURIComponent(hf.hub.url)}`);
  await page.locator('.card[data-id="e4b-q8"] button.get').click();
  await page.waitForSelector('#error:not([hidden])', { timeout: TIMEOUT });
  assert.match(await page.textContent('#error-title'), /not found/i);
  assert.match(await page.textContent('#error-text'), /404|not found/i, 'the engine message stays for the details');
  // the other explanations, for the engine's error kinds
  const titles = await page.evaluate(async () => {
    const { explain } = await import('/errors.js');
    const err = (code, message) => Object.assign(new Error(message), { code });
    return [
      explain(err('NOMEM', 'out of memory: 2147483648 bytes for tensor blk.0.ffn_up.weight')).title,
      explain(err('UNSUPPORTED', 'model.gguf: tensor blk.0.attn_q.weight: unsupported type 23 (IQ2_XXS)')).title,
      explain(new TypeError('Failed to fetch')).title,
      explain(new DOMException('The quota has been exceeded.', 'QuotaExceededError')).title,
    ];
  });
  assert.match(titles[0], /memory/);
  assert.match(titles[1], /quantization type/);
  assert.match(titles[2], /network|CORS/);
  assert.match(titles[3], /no room/);
  await page.close();
});

test(
  'markdown replies: rendered, sanitized (img onerror and script inert), code with Copy, thought collapsed',
  { timeout: 2 * TIMEOUT },
  async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: site.url });
    const page = await openDemo('?model=/models/demo.gguf', { context });
    await waitModel(page);
    const evil =
      'Hello **world** and <img src=x onerror="window.__pwned=1"> <script>window.__pwned=2</script>' +
      '<a href="javascript:window.__pwned=3">link</a>\n\n## Steps\n\n1. one\n2. two\n\n```js\nconsole.log("hi");\n```\n';
    await scriptReplies(page, [
      { text: '', thought: 'The user wants markup.', thinking: true },
      ...evil.match(/[\s\S]{1,7}/g).map((text) => ({ text, thinking: false })),
    ]);
    await page.click('#settings summary');
    await page.check('#thinking');
    const r = await send(page, 'Show me markdown');
    assert.equal(r.raw, evil, 'the raw reply is kept as the model sent it');
    const dom = await page.evaluate(() => {
      const m = [...document.querySelectorAll('.msg.assistant')].at(-1);
      const b = m.querySelector('.body');
      return {
        strong: b.querySelector('strong')?.textContent,
        h2: b.querySelector('h2')?.textContent,
        items: b.querySelectorAll('ol li').length,
        imgs: b.querySelectorAll('img').length,
        scripts: b.querySelectorAll('script').length,
        handlers: [...b.querySelectorAll('*')].filter((e) => [...e.attributes].some((a) => /^on/i.test(a.name))).length,
        jsLinks: [...b.querySelectorAll('a')].filter((a) => /^javascript:/i.test(a.getAttribute('href') ?? '')).length,
        code: b.querySelector('.code pre code')?.textContent,
        copy: !!b.querySelector('.code button.copy'),
        thinkHidden: m.querySelector('details.thinking').hidden,
        thinkOpen: m.querySelector('details.thinking').open,
        thought: m.querySelector('.think-body').textContent,
        pwned: window.__pwned ?? null,
      };
    });
    assert.equal(dom.strong, 'world');
    assert.equal(dom.h2, 'Steps');
    assert.equal(dom.items, 2);
    assert.equal(dom.imgs, 0, 'no <img> survives');
    assert.equal(dom.scripts, 0, 'no <script> survives');
    assert.equal(dom.handlers, 0, 'no on* attribute survives');
    assert.equal(dom.jsLinks, 0, 'no javascript: link survives');
    assert.equal(dom.pwned, null, 'nothing in the reply ran');
    assert.equal(dom.code, 'console.log("hi");\n');
    assert.equal(dom.copy, true, 'code blocks have a Copy button');
    assert.equal(dom.thinkHidden, false, 'the thought is shown');
    assert.equal(dom.thinkOpen, false, '... collapsed');
    assert.equal(dom.thought, 'The user wants markup.');
    await page.locator('.msg.assistant .code button.copy').last().click();
    await page.waitForFunction(() =>
      /Copied|failed/.test([...document.querySelectorAll('.code button.copy')].at(-1).textContent),
    );
    assert.equal(
      await page.evaluate(() => navigator.clipboard.readText()),
      'console.log("hi");\n',
      'Copy puts the code on the clipboard',
    );
    await page.locator('.msg.assistant details.thinking summary').last().click();
    assert.equal(
      await page
        .locator('.msg.assistant details.thinking')
        .last()
        .evaluate((d) => d.open),
      true,
      'a click opens the thought',
    );
    await page.screenshot({ path: path.join(ART, 'demo-markdown.png') });
    // the page's CSP reports the handler it refused (DOMPurify parses the dirty HTML in an inert
    // document of the page); nothing else went wrong
    assert.deepEqual(
      page.errors.filter((e) => !/violates the following Content Security Policy/.test(e)),
      [],
    );
    await context.close();
  },
);

test('regenerate, edit the last message, and the chat survives a reload', { timeout: 3 * TIMEOUT }, async () => {
  const context = await browser.newContext({ viewport: { width: 390, height: 844 } });
  const page = await openDemo('?model=/models/demo.gguf', { context });
  await waitModel(page);
  await page.click('#settings summary');
  await page.fill('#max-tokens', '6');
  await scriptReplies(page, [{ text: 'first answer' }]);
  await send(page, 'question one');
  await scriptReplies(page, [{ text: 'second answer' }]);
  await page.locator('.msg.assistant button.regen').click();
  await page.waitForFunction(
    () =>
      document.querySelector('.msg.assistant')?.dataset.raw === 'second answer' &&
      document.querySelector('.msg.assistant').dataset.done,
  );
  assert.equal(await page.locator('.msg.assistant').count(), 1, 'Regenerate replaces the reply');
  assert.deepEqual(
    await page.evaluate(() => window.__calls),
    [[{ role: 'user', content: 'question one' }]],
    'the same question again, without the old answer',
  );

  await scriptReplies(page, [{ text: 'edited answer' }]);
  await page.locator('.msg.user button.edit').click();
  await page.fill('.msg.user textarea.edit-box', 'question two');
  await page.locator('.msg.user button.save').click();
  await page.waitForFunction(
    () =>
      document.querySelector('.msg.assistant')?.dataset.raw === 'edited answer' &&
      document.querySelector('.msg.assistant').dataset.done,
  );
  assert.deepEqual(await page.evaluate(() => [...document.querySelectorAll('.msg')].map((m) => m.dataset.role)), [
    'user',
    'assistant',
  ]);
  assert.equal(await page.textContent('.msg.user .text'), 'question two');
  assert.deepEqual(
    await page.evaluate(() => window.__calls),
    [[{ role: 'user', content: 'question two' }]],
    'the edited question replaces the old one',
  );

  // a real reply after the scripted ones, then a reload
  await page.evaluate(() => {
    delete window.oxinfer.model.chat;
  });
  const r = await send(page, 'and now the model');
  assert.equal(r.error, false, r.meta);
  const before = await page.evaluate(() =>
    [...document.querySelectorAll('.msg')].map((m) => [
      m.dataset.role,
      m.dataset.raw ?? m.querySelector('.text').textContent,
    ]),
  );
  await page.reload();
  await page.waitForFunction(() => window.oxinfer?.restored);
  await page.evaluate(() => window.oxinfer.restored);
  const after = await page.evaluate(() =>
    [...document.querySelectorAll('.msg')].map((m) => [
      m.dataset.role,
      m.dataset.raw ?? m.querySelector('.text').textContent,
    ]),
  );
  assert.deepEqual(after, before, 'the conversation is back after a reload');
  assert.equal(await page.locator('#chat-list li').count(), 1, 'listed under Chats');
  await waitModel(page);
  await page.screenshot({ path: path.join(ART, 'demo-chat-phone.png'), fullPage: true });
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 0, `page fits 390 px (overflows by ${overflow} px)`);
  // New chat starts empty; the old one stays in the list and opens again
  await page.click('#new-chat');
  assert.equal(await page.locator('.msg').count(), 0);
  await page.click('#chats summary');
  await page.locator('#chat-list li button.open').first().click();
  await page.waitForFunction((n) => document.querySelectorAll('.msg').length === n, before.length);
  assert.deepEqual(page.errors, []);
  await context.close();
});

test(
  'the default offline entry: the trained demo model answers, with its thought collapsed',
  { timeout: 2 * TIMEOUT },
  async () => {
    const page = await openDemo();
    await page.locator('.card[data-id="demo"] button.get').click();
    await waitModel(page);
    assert.equal(await page.isVisible('#notice-demo'), true, 'the page says what the demo model can do');
    assert.equal(await page.isVisible('#notice-random'), false, 'trained weights are not flagged as random');
    await page.click('#settings summary');
    await page.check('#thinking');
    await page.fill('#temperature', '0');
    const r = await send(page, 'What does a duck say?');
    assert.equal(r.raw, 'A duck says quack.');
    const think = await page.evaluate(() => {
      const d = document.querySelector('.msg.assistant details.thinking');
      return { hidden: d.hidden, open: d.open, text: d.querySelector('.think-body').textContent };
    });
    assert.deepEqual(think, {
      hidden: false,
      open: false,
      text: 'The user asks a simple question. I will answer it in one line.',
    });
    assert.deepEqual(page.errors, []);
    await page.close();
  },
);
