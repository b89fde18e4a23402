// The demo's images (web/attach.js, docs/images.md) in headless Chromium, with a generated model
// that has a vision tower (oxinfer synth --vision tiny: text GGUF + mmproj GGUF): the Image…
// button shows for it (not for a text-only model); an image attached by the file picker, by
// pasting into the message box and by dropping it on the page lands in the tray as a
// thumbnail (× removes it); sending puts it in the user's bubble and in chat()'s content
// parts; the answer is the one Node gives for the same image and text; the page's decoder
// (createImageBitmap + OffscreenCanvas in the engine worker) gives the tower the rows pngjs
// gives it in Node, from every kind of image a page holds (ImageBitmap, <img>, canvas, ImageData,
// OffscreenCanvas, data: URL, fetched URL); the conversation keeps the image across a reload.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { startServer, ROOT } from '../../tools/serve.mjs';
import { launchChromium, collectErrors } from '../oracle/browser.mjs';
import { patternPng, synth, tmpDir, requireDist } from '../oracle/fixtures.mjs';
import { loadModel } from '../../js/main/index.js';

const ART = path.join(ROOT, 'test-artifacts');
const TIMEOUT = 120000;
let dir, text, mmproj, site, browser, node;

const IMG = patternPng(72, 48, 1);
const IMG2 = patternPng(50, 50, 4);

before(async () => {
  requireDist();
  dir = tmpDir('demo-image');
  text = synth(dir, { preset: 'tiny', type: 'f32', extra: ['--vision', 'tiny'] });
  mmproj = synth(dir, { preset: 'tiny', type: 'f32', extra: ['--vision', 'tiny', '--format', 'mmproj'] });
  const png = path.join(dir, 'a.png');
  fs.writeFileSync(png, IMG);
  site = await startServer({ files: { '/models/text.gguf': text, '/models/mmproj.gguf': mmproj, '/img/a.png': png } });
  browser = await launchChromium();
  node = await loadModel([text, mmproj], { threads: 1 });
  fs.mkdirSync(ART, { recursive: true });
});

after(async () => {
  await node?.unload();
  await browser?.close();
  site?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

async function openDemo(context) {
  const page = await context.newPage({ viewport: { width: 1280, height: 860 } });
  page.errors = [];
  collectErrors(page, page.errors);
  await page.goto(`${site.url}/`);
  await page.waitForFunction(() => window.oxinfer?.api && window.oxinfer.restored, null, { timeout: TIMEOUT });
  await page.evaluate(() => window.oxinfer.restored);
  return page;
}

async function loadIn(page, files) {
  await page.evaluate(
    (urls) => window.oxinfer.load(urls),
    files.map((f) => `${site.url}/models/${f}`),
  );
  await page.waitForFunction(() => window.oxinfer.model || !document.getElementById('error').hidden, null, {
    timeout: TIMEOUT,
  });
  const err = await page.evaluate(() =>
    document.getElementById('error').hidden ? null : document.getElementById('error').textContent,
  );
  assert.equal(err, null, `page error while loading: ${err}\n${page.errors.join('\n')}`);
}

// the tray's thumbnails once they are drawn
async function trayCount(page, n) {
  await page.waitForFunction(
    (k) =>
      document.querySelectorAll('#attach-tray .thumb img').length === k &&
      [...document.querySelectorAll('#attach-tray .thumb img')].every((i) => i.src.startsWith('data:image/png')),
    n,
    { timeout: TIMEOUT },
  );
}

test(
  'the demo attaches images (pick, paste, drop), shows them and sends them: Node’s answer',
  { timeout: 10 * TIMEOUT },
  async () => {
    const context = await browser.newContext();
    const page = await openDemo(context);
    await page.click('#settings summary');
    await page.fill('#threads', '1');
    await page.fill('#temperature', '0');
    await page.fill('#max-tokens', '8');
    await page.dispatchEvent('#threads', 'change');

    // a text-only model: no Image… button
    await loadIn(page, ['text.gguf']);
    assert.equal(await page.isVisible('#attach'), false, 'no Image… button without a vision tower');
    await loadIn(page, ['text.gguf', 'mmproj.gguf']);
    await page.waitForFunction(() => window.oxinfer.model?.info?.vision, null, { timeout: TIMEOUT });
    assert.equal(await page.isVisible('#attach'), true, 'Image… shows for a model with a vision tower');

    // pick, then remove
    await page.setInputFiles('#attach-input', { name: 'pick.png', mimeType: 'image/png', buffer: Buffer.from(IMG2) });
    await trayCount(page, 1);
    await page.click('#attach-tray .thumb .close');
    await trayCount(page, 0);
    assert.equal(await page.isVisible('#attach-tray'), false);
    // paste into the message box
    await page.evaluate(
      (bytes) => {
        const dt = new DataTransfer();
        dt.items.add(new File([new Uint8Array(bytes)], 'pasted.png', { type: 'image/png' }));
        document
          .getElementById('prompt')
          .dispatchEvent(new ClipboardEvent('paste', { clipboardData: dt, bubbles: true, cancelable: true }));
      },
      [...IMG],
    );
    await trayCount(page, 1);
    // drop on the page (a model is loaded: images attach, they do not load as a model)
    await page.evaluate(
      (bytes) => {
        const dt = new DataTransfer();
        dt.items.add(new File([new Uint8Array(bytes)], 'dropped.png', { type: 'image/png' }));
        document.dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
      },
      [...IMG2],
    );
    await trayCount(page, 2);
    await page.locator('#attach-tray .thumb .close').nth(1).click();
    await trayCount(page, 1);

    // send: the image goes with the text, as a content part
    await page.evaluate(() => {
      const m = window.oxinfer.model;
      const chat = m.chat.bind(m);
      window.__sent = [];
      m.chat = (messages, opts) => {
        window.__sent.push(messages.map((x) => (Array.isArray(x.content) ? x.content.map((p) => p.type) : 'text')));
        return chat(messages, opts);
      };
    });
    await page.fill('#prompt', 'What is in it?');
    await page.press('#prompt', 'Enter');
    await page.waitForFunction(() => document.querySelector('.msg.assistant')?.dataset.done, null, {
      timeout: TIMEOUT,
    });
    const reply = await page.evaluate(() => {
      const m = document.querySelector('.msg.assistant');
      return { raw: m.dataset.raw, error: m.classList.contains('error'), meta: m.querySelector('.meta').textContent };
    });
    assert.equal(reply.error, false, reply.meta);
    assert.deepEqual(await page.evaluate(() => window.__sent), [[['image', 'text']]]);
    assert.equal(await page.locator('.msg.user .thumb img').count(), 1, 'the thumbnail in the user bubble');
    assert.equal(await page.isVisible('#attach-tray'), false, 'the tray empties on send');

    // Node, same image and text, greedy: the same answer
    const want = [];
    for await (const c of node.chat(
      [
        {
          role: 'user',
          content: [
            { type: 'image', image: IMG },
            { type: 'text', text: 'What is in it?' },
          ],
        },
      ],
      { temperature: 0, maxTokens: 8 },
    ))
      if (!c.stats) want.push(c.text);
    assert.equal(reply.raw, want.join(''), 'the page answers as Node does');

    // the page's decoder gives the tower Node's rows
    const inPage = await page.evaluate(
      async (bytes) => {
        const r = await window.oxinfer.model.embedImage(new Blob([new Uint8Array(bytes)], { type: 'image/png' }));
        return { n: r.softTokens, rows: Array.from(r.embeddings) };
      },
      [...IMG],
    );
    const inNode = await node.embedImage(IMG);
    assert.equal(inPage.n, inNode.softTokens);
    let maxd = 0;
    for (let i = 0; i < inPage.rows.length; i++) maxd = Math.max(maxd, Math.abs(inPage.rows[i] - inNode.embeddings[i]));
    console.log(`page vs Node image rows: ${inPage.n} x ${node.info.hidden}, max |diff| ${maxd.toExponential(2)}`);
    assert.ok(maxd <= 1e-4, `page and Node image rows agree (max |diff| ${maxd})`);
    // every kind of image a page has gives the same rows: ImageBitmap, <img>, canvas, ImageData,
    // OffscreenCanvas, a data: URL and a URL the page fetches
    const kinds = await page.evaluate(
      async (bytes) => {
        const blob = new Blob([new Uint8Array(bytes)], { type: 'image/png' });
        const bitmap = await createImageBitmap(blob);
        const canvas = document.createElement('canvas');
        [canvas.width, canvas.height] = [bitmap.width, bitmap.height];
        canvas.getContext('2d').drawImage(bitmap, 0, 0);
        const off = new OffscreenCanvas(bitmap.width, bitmap.height);
        off.getContext('2d').drawImage(bitmap, 0, 0);
        const reader = new FileReader();
        const dataUrl = await new Promise(
          (r) => ((reader.onload = () => r(reader.result)), reader.readAsDataURL(blob)),
        );
        const img = new Image(); // from the data: URL: the page CSP allows data: images, not blob: ones
        img.src = dataUrl;
        await img.decode();
        const inputs = {
          ImageBitmap: bitmap,
          HTMLImageElement: img,
          HTMLCanvasElement: canvas,
          ImageData: canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height),
          OffscreenCanvas: off,
          'data: URL': dataUrl,
          'fetched URL': '/img/a.png',
        };
        const out = {};
        for (const [k, x] of Object.entries(inputs))
          out[k] = Array.from((await window.oxinfer.model.embedImage(x)).embeddings);
        return out;
      },
      [...IMG],
    );
    const diffs = [];
    for (const [k, rows] of Object.entries(kinds)) {
      let d = 0;
      for (let i = 0; i < rows.length; i++) d = Math.max(d, Math.abs(rows[i] - inNode.embeddings[i]));
      assert.equal(rows.length, inNode.embeddings.length, k);
      assert.ok(d <= 1e-4, `${k}: max |diff| ${d}`);
      diffs.push(`${k} ${d.toExponential(1)}`);
    }
    console.log(`image kinds vs Node rows, max |diff|: ${diffs.join(', ')}`);
    await page.screenshot({ path: path.join(ART, 'demo-image.png') });

    // the conversation keeps its image across a reload
    await page.waitForTimeout(300);
    await page.reload();
    await page.waitForFunction(() => window.oxinfer?.restored, null, { timeout: TIMEOUT });
    await page.evaluate(() => window.oxinfer.restored);
    await page.waitForFunction(
      () => document.querySelector('.msg.user .thumb img')?.src.startsWith('data:image/png'),
      null,
      { timeout: TIMEOUT },
    );
    assert.deepEqual(page.errors, [], 'no page errors');
    await context.close();
  },
);
