// The chat demo (web/) in headless Chromium: load a synthetic model through
// the file input and through a URL, chat with streamed tokens, Stop, a second
// message, the threaded build under COOP/COEP, one thread without them,
// screenshots (not blank), and the page engine's logits against the Node run
// of the same wasm.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { startServer, ROOT } from '../../tools/serve.mjs';
import { launchChromium, collectErrors } from '../oracle/browser.mjs';
import { synth, tmpDir, requireDist } from '../oracle/fixtures.mjs';
import { engineLogprobs } from '../oracle/engine.mjs';

const ART = path.join(ROOT, 'test-artifacts');
const TIMEOUT = 120000;
let dir, model, iso, plain, browser;

before(async () => {
  requireDist();
  dir = tmpDir('browser');
  model = synth(dir, { preset: 'tiny', type: 'q8_0' });
  const files = { '/models/demo.gguf': model };
  iso = await startServer({ files });
  plain = await startServer({ files, isolate: false });
  browser = await launchChromium();
  fs.mkdirSync(ART, { recursive: true });
});

after(async () => {
  await browser?.close();
  iso?.close();
  plain?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

async function openDemo(server, { viewport = { width: 1280, height: 860 }, query = '' } = {}) {
  const page = await browser.newPage({ viewport });
  page.errors = [];
  collectErrors(page, page.errors);
  await page.goto(`${server.url}/${query}`);
  await page.waitForFunction(() => window.oxinfer, null, { timeout: TIMEOUT });
  return page;
}

// wait for a loaded model; fail with the page's error text if it shows one
async function waitModel(page) {
  await page.waitForFunction(() => window.oxinfer.model || !document.getElementById('error').hidden, null, {
    timeout: TIMEOUT,
  });
  const err = await page.evaluate(() =>
    document.getElementById('error').hidden ? null : document.getElementById('error-text').textContent,
  );
  assert.equal(err, null, `page error while loading: ${err}\n${page.errors.join('\n')}`);
  assert.equal(await page.isEnabled('#prompt'), true, 'composer enabled after load');
}

// count distinct lengths the streaming answer goes through
async function watchStream(page) {
  await page.evaluate(() => {
    window.__lengths = [];
    const box = document.getElementById('messages');
    window.__obs?.disconnect();
    window.__obs = new MutationObserver(() => {
      const all = box.querySelectorAll('.msg.assistant .body');
      const body = all[all.length - 1];
      const n = body ? body.textContent.length : 0;
      if (window.__lengths[window.__lengths.length - 1] !== n) window.__lengths.push(n);
    });
    window.__obs.observe(box, { childList: true, subtree: true, characterData: true });
  });
}

async function send(page, text) {
  const before = await page.locator('.msg.assistant').count();
  await page.fill('#prompt', text);
  await page.press('#prompt', 'Enter'); // Enter sends
  await page.waitForFunction((n) => document.querySelectorAll('.msg.assistant').length > n, before, {
    timeout: TIMEOUT,
  });
  return before; // index of the new reply
}

async function waitReply(page, index) {
  await page.waitForFunction((i) => document.querySelectorAll('.msg.assistant')[i]?.dataset.done, index, {
    timeout: TIMEOUT,
  });
  return page.evaluate((i) => {
    const m = document.querySelectorAll('.msg.assistant')[i];
    return {
      done: m.dataset.done,
      text: m.querySelector('.body').textContent,
      raw: m.dataset.raw,
      meta: m.querySelector('.meta').textContent,
      error: m.classList.contains('error'),
    };
  }, index);
}

// pixel variance of a PNG, computed by the browser's own decoder
async function pngVariance(png) {
  const p = await browser.newPage();
  try {
    return await p.evaluate(async (b64) => {
      const img = new Image();
      img.src = `data:image/png;base64,${b64}`;
      await img.decode();
      const c = new OffscreenCanvas(img.width, img.height);
      const g = c.getContext('2d');
      g.drawImage(img, 0, 0);
      const d = g.getImageData(0, 0, img.width, img.height).data;
      let s = 0,
        s2 = 0,
        n = 0;
      for (let i = 0; i < d.length; i += 4) {
        const y = 0.299 * d[i] + 0.587 * d[i + 1] + 0.114 * d[i + 2];
        s += y;
        s2 += y * y;
        n++;
      }
      const mean = s / n;
      return s2 / n - mean * mean;
    }, png.toString('base64'));
  } finally {
    await p.close();
  }
}

test(
  'file input load, streamed reply, Stop, second message, threaded build, screenshots',
  { timeout: 10 * TIMEOUT },
  async () => {
    const page = await openDemo(iso);
    assert.equal(await page.evaluate(() => self.crossOriginIsolated), true, 'COOP/COEP page is cross-origin isolated');
    assert.equal(await page.isVisible('#notice-isolation'), false, 'no single-thread notice when isolated');
    await page.setInputFiles('#file-input', model);
    await waitModel(page);
    // the synthetic model is flagged as random weights
    assert.equal(await page.isVisible('#notice-random'), true, 'random-weights notice shown for a synthetic model');
    const [build, threads] = await page.evaluate(() => [window.oxinfer.model.build, window.oxinfer.model.threads]);
    assert.equal(build, 'mt', 'threaded wasm build under COOP/COEP');
    assert.ok(threads > 1, `more than one thread (model.threads = ${threads})`);

    // a long answer, stopped mid-way
    await page.click('#settings summary'); // open the settings
    await page.fill('#max-tokens', '4000');
    // sampling is seeded at random: should the model end its answer (EOS) before
    // the click lands, ask again (at most 3 times)
    let r0;
    for (let attempt = 0; attempt < 3; attempt++) {
      await watchStream(page);
      const i0 = await send(page, 'Tell me a long story.');
      // the answer grows in several steps (streamed), or ends
      await page.waitForFunction(
        (i) =>
          window.__lengths.filter((n) => n > 0).length >= 3 ||
          document.querySelectorAll('.msg.assistant')[i].dataset.done,
        i0,
        { timeout: TIMEOUT },
      );
      // a click on Stop while it is shown (it hides when the answer ends)
      await page.evaluate(() => {
        const b = document.getElementById('stop');
        if (!b.hidden) b.click();
      });
      r0 = await waitReply(page, i0);
      if (r0.done === 'stopped') break;
    }
    assert.equal(r0.done, 'stopped', `reply stopped by the Stop button (meta: ${r0.meta})`);
    assert.match(r0.meta, /stopped/);
    const lengths = await page.evaluate(() => window.__lengths);
    assert.ok(
      lengths.filter((n) => n > 0).length >= 3,
      `tokens streamed in several steps (lengths seen: ${lengths.slice(0, 20)})`,
    );
    assert.equal(await page.isVisible('#send'), true, 'Send is back after Stop');

    // another message after Stop, greedy (a random-weight model may sample its end-of-turn id
    // first under a random seed)
    await page.fill('#max-tokens', '24');
    await page.fill('#temperature', '0');
    await watchStream(page);
    const i1 = await send(page, 'And another one?');
    const r1 = await waitReply(page, i1);
    assert.equal(r1.done, 'done');
    assert.equal(r1.error, false, `second reply without error: ${r1.meta}`);
    assert.ok(r1.text.length > 0, 'second reply has text');
    const n1 = Number(/^(\d+) tokens/.exec(r1.meta)?.[1]);
    assert.ok(n1 >= 1 && n1 <= 24, `second reply respects max tokens (${r1.meta})`);
    const stats = await page.evaluate(() => [
      document.getElementById('stat-tps').textContent,
      document.getElementById('stat-mem').textContent,
    ]);
    assert.notEqual(stats[1], '–', 'resident memory shown');

    // Shift+Enter is a newline, not a send
    await page.fill('#prompt', 'line one');
    await page.press('#prompt', 'Shift+Enter');
    await page.type('#prompt', 'line two');
    assert.equal(await page.inputValue('#prompt'), 'line one\nline two');
    const users = await page.locator('.msg.user').count();
    await page.waitForTimeout(200);
    assert.equal(await page.locator('.msg.user').count(), users, 'Shift+Enter did not send');

    const shot = await page.screenshot({ path: path.join(ART, 'demo-desktop.png') });
    const v = await pngVariance(shot);
    assert.ok(v > 50, `desktop screenshot is not blank (luma variance ${v.toFixed(1)})`);

    // New chat clears the conversation
    await page.click('#new-chat');
    assert.equal(await page.locator('.msg').count(), 0);
    assert.deepEqual(page.errors, [], 'no page errors');
    await page.close();
  },
);

test(
  'URL load (?model=), phone width, and the page engine gives the Node logits',
  { timeout: 10 * TIMEOUT },
  async () => {
    const page = await openDemo(iso, { viewport: { width: 390, height: 844 }, query: '?model=/models/demo.gguf' });
    await waitModel(page);
    // greedy: a random-weight model may sample its end-of-turn id first under a random seed
    await page.click('#settings summary');
    await page.fill('#temperature', '0');
    const i0 = await send(page, 'Hi!');
    const r0 = await waitReply(page, i0);
    assert.equal(r0.error, false, r0.meta);
    assert.ok(r0.text.length > 0);
    const shot = await page.screenshot({ path: path.join(ART, 'demo-phone.png'), fullPage: true });
    const v = await pngVariance(shot);
    assert.ok(v > 50, `phone screenshot is not blank (luma variance ${v.toFixed(1)})`);
    // no horizontal scrolling at phone width
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 0, `page fits 390 px (overflows by ${overflow} px)`);

    // same tokens through the page's engine and through Node
    const tokens = [2, 900, 901, 950, 1000, 910, 920, 1020];
    const inPage = await page.evaluate(async (t) => {
      const m = window.oxinfer.model;
      const l = await m.logits(t, { all: true });
      return Array.from(l, (x) => Number(x));
    }, tokens);
    const node = await engineLogprobs(model, tokens);
    assert.equal(inPage.length, node.flat.length, 'same logits shape in page and Node');
    let maxd = 0;
    for (let i = 0; i < inPage.length; i++) maxd = Math.max(maxd, Math.abs(inPage[i] - node.flat[i]));
    console.log(`page vs Node logits: ${tokens.length} positions x ${node.vocab}, max |diff| ${maxd.toExponential(2)}`);
    assert.ok(maxd <= 1e-4, `page and Node logits agree (max |diff| ${maxd})`);
    assert.deepEqual(page.errors, [], 'no page errors');
    await page.close();
  },
);

test(
  'without COOP/COEP the isolation service worker makes the page isolated: the threaded build runs',
  { timeout: 10 * TIMEOUT },
  async () => {
    const page = await openDemo(plain);
    let isolated = false;
    for (let i = 0; i < 100 && !isolated; i++) {
      // the worker reloads the page once
      isolated = await page.evaluate(() => self.crossOriginIsolated === true && !!window.oxinfer).catch(() => false);
      if (!isolated) await page.waitForTimeout(200);
    }
    assert.equal(isolated, true, 'isolated after the service worker reload');
    await page.click('#more-sources summary');
    await page.fill('#url-input', `${plain.url}/models/demo.gguf`);
    await page.click('#url-form button[type=submit]');
    await waitModel(page);
    assert.equal(await page.evaluate(() => window.oxinfer.model.build), 'mt');
    await page.close();
  },
);

test('without COOP/COEP the page says so and still answers on one thread', { timeout: 10 * TIMEOUT }, async () => {
  const page = await openDemo(plain, { query: '?nocoi' });
  assert.equal(await page.evaluate(() => self.crossOriginIsolated), false);
  assert.equal(await page.isVisible('#notice-isolation'), true, 'single-thread notice visible');
  await page.click('#more-sources summary'); // the file and URL inputs are under this disclosure
  await page.fill('#url-input', `${plain.url}/models/demo.gguf`);
  await page.click('#url-form button[type=submit]');
  await waitModel(page);
  const [build, threads] = await page.evaluate(() => [window.oxinfer.model.build, window.oxinfer.model.threads]);
  assert.equal(build, 'st', 'single-threaded wasm build without COOP/COEP');
  assert.equal(threads, 1, 'one thread without isolation');
  // greedy: a random-weight model may sample its end-of-turn id first under a random seed
  await page.click('#settings summary');
  await page.fill('#temperature', '0');
  const i0 = await send(page, 'Hello?');
  const r0 = await waitReply(page, i0);
  assert.equal(r0.error, false, r0.meta);
  assert.ok(r0.text.length > 0, 'reply on one thread');
  await page.screenshot({ path: path.join(ART, 'demo-single-thread.png') });
  assert.deepEqual(page.errors, [], 'no page errors');
  await page.close();
});

test('drag and drop loads a model, with a progress bar in bytes and percent', { timeout: 2 * TIMEOUT }, async () => {
  const page = await openDemo(iso);
  await page.evaluate(() => {
    window.__progress = [];
    const t = document.getElementById('progress-text');
    new MutationObserver(() => window.__progress.push(t.textContent)).observe(t, {
      childList: true,
      characterData: true,
      subtree: true,
    });
  });
  // a drop event carrying the model file, as a file manager would send it
  await page.evaluate(async () => {
    const blob = await (await fetch('/models/demo.gguf')).blob();
    const dt = new DataTransfer();
    dt.items.add(new File([blob], 'dropped.gguf'));
    document
      .getElementById('drop')
      .dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
  });
  await waitModel(page);
  assert.match(await page.textContent('#model-info'), /dropped\.gguf/);
  const progress = await page.evaluate(() => window.__progress);
  assert.ok(
    progress.some((t) => /MB \/ [\d.]+ MB · \d+%/.test(t)),
    `progress shown in bytes and percent: ${JSON.stringify(progress.slice(-5))}`,
  );
  assert.equal(await page.isVisible('#progress'), false, 'progress bar hidden after the load');
  assert.deepEqual(page.errors, [], 'no page errors');
  await page.close();
});

test(
  'settings, system prompt, thinking and history reach the engine; New chat forgets',
  { timeout: 2 * TIMEOUT },
  async () => {
    const page = await openDemo(iso, { query: '?model=/models/demo.gguf' });
    await waitModel(page);
    // record what the page passes to model.chat
    await page.evaluate(() => {
      const m = window.oxinfer.model;
      const chat = m.chat.bind(m);
      window.__calls = [];
      m.chat = (messages, opts) => {
        window.__calls.push({
          messages: JSON.parse(JSON.stringify(messages)),
          opts: { ...opts, signal: !!opts.signal },
        });
        return chat(messages, opts);
      };
    });
    await page.click('#settings summary');
    await page.fill('#system-prompt', 'You are terse.');
    await page.check('#thinking');
    await page.fill('#temperature', '0.5');
    await page.fill('#top-k', '10');
    await page.fill('#top-p', '0.9');
    await page.fill('#min-p', '0.05');
    await page.fill('#max-tokens', '8');
    const r0 = await waitReply(page, await send(page, 'first'));
    assert.equal(r0.error, false, r0.meta);
    await waitReply(page, await send(page, 'second'));
    const calls = await page.evaluate(() => window.__calls);
    assert.equal(calls.length, 2);
    assert.deepEqual(calls[0].opts, {
      temperature: 0.5,
      topK: 10,
      topP: 0.9,
      minP: 0.05,
      maxTokens: 8,
      thinking: true,
      signal: true,
    });
    assert.deepEqual(calls[0].messages, [
      { role: 'system', content: 'You are terse.' },
      { role: 'user', content: 'first' },
    ]);
    assert.deepEqual(
      calls[1].messages.map((m) => m.role),
      ['system', 'user', 'assistant', 'user'],
    );
    assert.equal(
      calls[1].messages[2].content,
      r0.raw,
      'the first answer (as the model wrote it, before markdown) is in the history',
    );
    // settings survive a reload (localStorage)
    await page.reload();
    await page.waitForFunction(() => window.oxinfer);
    assert.equal(await page.inputValue('#top-k'), '10');
    assert.equal(await page.isChecked('#thinking'), true);
    await waitModel(page);
    await page.evaluate(() => {
      const m = window.oxinfer.model;
      const chat = m.chat.bind(m);
      window.__calls = [];
      m.chat = (messages, opts) => {
        window.__calls.push(JSON.parse(JSON.stringify(messages)));
        return chat(messages, opts);
      };
    });
    await waitReply(page, await send(page, 'third'));
    await page.click('#new-chat');
    await waitReply(page, await send(page, 'fresh start'));
    const after = await page.evaluate(() => window.__calls);
    assert.deepEqual(
      after[1],
      [
        { role: 'system', content: 'You are terse.' },
        { role: 'user', content: 'fresh start' },
      ],
      'New chat starts an empty history',
    );
    // a bad setting is reported, not sent
    await page.click('#settings summary');
    await page.fill('#top-p', '7');
    await page.fill('#prompt', 'nope');
    await page.press('#prompt', 'Enter');
    await page.waitForSelector('#error:not([hidden])');
    assert.match(await page.textContent('#error-text'), /Top-p/);
    assert.equal(await page.evaluate(() => window.__calls.length), 2);
    await page.evaluate(() => localStorage.clear());
    await page.close();
  },
);

test('load errors are shown in the page', { timeout: TIMEOUT }, async () => {
  const page = await openDemo(iso);
  await page.click('#more-sources summary'); // the file and URL inputs are under this disclosure
  await page.fill('#url-input', `${iso.url}/models/missing.gguf`);
  await page.click('#url-form button[type=submit]');
  await page.waitForSelector('#error:not([hidden])', { timeout: TIMEOUT });
  const text = await page.textContent('#error-text');
  assert.match(text, /missing\.gguf|404|not found/i, `error names the problem: ${text}`);
  assert.equal(await page.isEnabled('#prompt'), false, 'no chat without a model');
  await page.close();
});
