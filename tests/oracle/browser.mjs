// Headless Chromium through playwright-core, with Debian's /usr/bin/chromium
// (or $CHROMIUM): shared by the oracle harness and the browser tests.
import fs from 'node:fs';
import { chromium } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';

export function haveChromium() {
  return fs.existsSync(CHROMIUM);
}

export async function launchChromium({ jsFlags = '' } = {}) {
  if (!haveChromium()) throw new Error(`no Chromium at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM)`);
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
      '--disable-quic',
      ...(jsFlags ? [`--js-flags=${jsFlags}`] : []),
    ],
  });
}

// Forward a page's console errors and uncaught exceptions to `sink` (an array).
export function collectErrors(page, sink, prefix = '') {
  page.on('pageerror', (e) => sink.push(`${prefix}pageerror: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error') sink.push(`${prefix}console: ${m.text()}`);
  });
}
