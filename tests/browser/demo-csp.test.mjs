// Hostile model output in the demo page, in headless Chromium: a reply full of markup that
// would fetch from another origin (style url(), table background, srcset, svg image/use href,
// link, meta refresh, CSS @import, form action, poster, object/embed, base href, markdown
// images…) makes zero requests to it. A second loopback server is the other origin and counts
// every hit; Playwright's request events are checked too. Both fences are tested on their own:
// the sanitizer (web/markdown.js) in a page without a CSP, and the page's Content-Security-Policy
// (web/index.html) against raw, unsanitized HTML; and a control shows that the same raw HTML in
// a page with neither does reach the other server (the counter can see a leak).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { startServer, ROOT } from '../../tools/serve.mjs';
import { launchChromium, collectErrors } from '../oracle/browser.mjs';
import { tmpDir } from '../oracle/fixtures.mjs';

const T = 60000;
let dir, site, other, browser;
const hits = [];

// Markup a model could write, each piece aimed at the other origin (O).
const vectors = (O) =>
  [
    `<div style="background-image:url(${O}/style-attr)">a</div>`,
    `<p style="list-style-image:url(${O}/list-style)">b</p>`,
    `<table background="${O}/table-bg"><tr><td background="${O}/td-bg">c</td></tr></table>`,
    `<img src="${O}/img"><img srcset="${O}/srcset 1x">`,
    `<picture><source srcset="${O}/source"><img src="${O}/picture-img"></picture>`,
    `<svg><image href="${O}/svg-image" width="5" height="5"/><use href="${O}/svg-use#a"/></svg>`,
    `<svg><style>@import url(${O}/svg-style);</style></svg>`,
    `<link rel="stylesheet" href="${O}/link-css">`,
    `<style>@import url(${O}/css-import); body { background: url(${O}/css-bg) }</style>`,
    `<form action="${O}/form"><input type="image" src="${O}/input-image"><button>go</button></form>`,
    `<video poster="${O}/poster" src="${O}/video"></video><audio src="${O}/audio" autoplay></audio>`,
    `<object data="${O}/object"></object><embed src="${O}/embed">`,
    `<iframe src="${O}/iframe"></iframe>`,
    `<base href="${O}/base/"><a href="rel">rel</a>`,
    `<input type="image" src="${O}/input-image-2">`,
    `<body background="${O}/body-bg">`,
    `<math><mglyph src="${O}/mglyph"></mglyph></math>`,
    `<span style="font-family:x;src:url(${O}/font)">d</span>`,
    `![md image](${O}/md-image.png) and [a link](${O}/a-link-not-clicked)`,
  ].join('\n\n');
// What only the sanitizer stops (kept out of the raw tests): a refresh navigates the page away
// rather than fetching, and a prefetch falls under connect-src, which stays open to https and
// loopback for the models a user loads from any URL (docs/security.md).
const sanitizerOnly = (O) =>
  `<meta http-equiv="refresh" content="0;url=${O}/meta-refresh"><link rel="prefetch" href="${O}/link-prefetch">`;

before(async () => {
  dir = tmpDir('demo-csp');
  other = http.createServer((req, res) => {
    hits.push(req.url);
    res
      .writeHead(200, {
        'Content-Type': 'text/plain',
        'Access-Control-Allow-Origin': '*',
        'Cross-Origin-Resource-Policy': 'cross-origin',
      })
      .end('x');
  });
  await new Promise((r) => other.listen(0, '127.0.0.1', r));
  other.url = `http://127.0.0.1:${other.address().port}`;
  // a page without the demo's CSP, with its renderer (for the sanitizer alone, and the control)
  const imports = {
    marked: '/node_modules/marked/lib/marked.esm.js',
    dompurify: '/node_modules/dompurify/dist/purify.es.mjs',
  };
  const bare = path.join(dir, 'bare.html');
  fs.writeFileSync(
    bare,
    `<!doctype html><meta charset="utf-8"><script type="importmap">${JSON.stringify({ imports })}</script><div id="out"></div>`,
  );
  site = await startServer({ files: { '/bare.html': bare } });
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  site?.close();
  other?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

// Open path, render html into the page (sanitized: through web/markdown.js; else raw
// innerHTML), let it settle, and return the other origin's hits and the page's requests to it.
async function render(pagePath, text, { sanitize }) {
  hits.length = 0;
  const ctx = await browser.newContext();
  const requests = [];
  const failed = new Map(); // url -> the browser's reason ("csp"; "origin" for a cross-origin svg <use>)
  ctx.on('request', (r) => {
    if (r.url().startsWith(other.url)) requests.push(r.url());
  });
  ctx.on('requestfailed', (r) => {
    if (r.url().startsWith(other.url)) failed.set(r.url(), r.failure()?.errorText);
  });
  const page = await ctx.newPage();
  const errors = [];
  collectErrors(page, errors);
  await page.goto(site.url + pagePath);
  const r = await page.evaluate(
    async ({ text, sanitize }) => {
      const violations = [];
      document.addEventListener('securitypolicyviolation', (e) => violations.push(e.blockedURI));
      const { renderMarkdown, markdownToHtml } = await import('/markdown.js');
      const el = document.createElement('div');
      document.body.append(el);
      if (sanitize) renderMarkdown(el, text);
      else el.innerHTML = text;
      // a style attribute or background is fetched once laid out
      el.getBoundingClientRect();
      await new Promise((res) => setTimeout(res, 1500));
      return { html: sanitize ? markdownToHtml(text) : null, violations, url: location.href };
    },
    { text, sanitize },
  );
  await ctx.close();
  return { ...r, hits: [...hits], requests, failed, errors };
}

test('the CSP in index.html names the hash of its import map', () => {
  const html = fs.readFileSync(path.join(ROOT, 'web/index.html'), 'utf8');
  const map = /<script type="importmap">([\s\S]*?)<\/script>/.exec(html)[1];
  const hash = crypto.createHash('sha256').update(map).digest('base64');
  const csp = /http-equiv="Content-Security-Policy" content="([^"]+)"/.exec(html)?.[1];
  assert.ok(csp, 'index.html has a CSP');
  assert.ok(csp.includes(`'sha256-${hash}'`), `the CSP's script-src names 'sha256-${hash}'`);
  for (const d of [
    "default-src 'self'",
    "img-src 'self' data:",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'none'",
  ])
    assert.ok(csp.includes(d), d);
});

test('control: raw hostile HTML in a page with neither fence reaches the other origin', { timeout: T }, async () => {
  const r = await render('/bare.html', vectors(other.url), { sanitize: false });
  assert.ok(r.hits.length >= 5, `the counter sees the leaks: ${r.hits.join(' ')}`);
  assert.ok(r.requests.length >= 5, 'so do the request events');
});

test(
  'sanitizer alone (a page without CSP): hostile markdown makes zero requests to another origin',
  { timeout: T },
  async () => {
    const O = other.url;
    const r = await render('/bare.html', vectors(O) + '\n\n' + sanitizerOnly(O), { sanitize: true });
    assert.deepEqual(r.hits, [], 'no hit on the other origin');
    assert.deepEqual(r.requests, [], 'no request event to it');
    assert.equal(r.url, site.url + '/bare.html', 'the page was not navigated away');
    // what remains can fetch nothing: no style/src/srcset/background/action, href only on <a>
    assert.doesNotMatch(r.html, /\s(style|src|srcset|background|action|poster|data|xlink:href)=/i);
    assert.doesNotMatch(
      r.html,
      /<(img|svg|image|use|link|meta|style|form|input|video|audio|object|embed|iframe|base|body|math|picture|source)\b/i,
    );
    assert.match(r.html, /<table>/, 'the harmless part stays (a table without background)');
    assert.match(r.html, /<a href="[^"]*a-link-not-clicked"/, 'links stay (they fetch only when clicked)');
    assert.deepEqual(r.errors, []);
  },
);

test(
  'the demo page: its CSP alone stops raw hostile HTML (no sanitizer), and the sanitized render is clean',
  { timeout: T },
  async () => {
    const O = other.url;
    const raw = await render('/', vectors(O), { sanitize: false });
    assert.deepEqual(raw.hits, [], 'no hit on the other origin');
    // the renderer starts them and the browser stops them before the network: each one failed
    assert.deepEqual(
      raw.requests.filter((u) => !['csp', 'origin'].includes(raw.failed.get(u))),
      [],
      'every request to it was blocked before the network',
    );
    assert.ok(raw.violations.length >= 5, `the CSP reported what it blocked: ${raw.violations.join(' ')}`);
    const clean = await render('/', vectors(O) + '\n\n' + sanitizerOnly(O), { sanitize: true });
    assert.deepEqual(clean.hits, []);
    assert.deepEqual(clean.requests, []);
    // (violations are reported here too, on the console: DOMPurify parses the dirty HTML in an
    // inert document of this page, whose inline styles and <base> the CSP refuses; nothing there
    // fetches)
    assert.deepEqual(
      clean.errors.filter((e) => !/Content Security Policy/.test(e)),
      [],
      'the page runs under its CSP without other errors',
    );
  },
);
