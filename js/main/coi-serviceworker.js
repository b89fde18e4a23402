// coi-serviceworker.js — opt-in cross-origin isolation for hosts that cannot send headers.
//
// The threaded engine needs SharedArrayBuffer, which a browser gives only to a page served with
// `Cross-Origin-Opener-Policy: same-origin` and `Cross-Origin-Embedder-Policy: require-corp`
// (or `credentialless`). Static hosts such as GitHub Pages cannot send them. This one file is
// both halves of the usual workaround:
//   - as a classic <script> in the page (the first one, same origin), it registers itself as a
//     service worker and reloads the page once, when the worker has taken control;
//   - as that service worker, it answers every request of the page (and of its workers) with
//     the network's response plus the COOP/COEP headers, so the reloaded page is isolated.
// Serve it from the folder of the page or above it (a service worker controls only URLs below
// its own folder). Options on the script tag: data-coep="credentialless" (default
// "require-corp"). The page learns the outcome from `window.oxinferIsolation`, a promise:
// true once isolated, false if isolation cannot be had here (no service workers, not a secure
// context, or still not isolated after the reload); it stays pending while the page reloads,
// so `await window.oxinferIsolation` before loadModel() avoids starting a single-thread load
// that the reload would throw away. To remove it: load the page with `?nocoi` (the script then
// unregisters its worker and reloads once, uncontrolled), or call
// `window.oxinferUnregisterIsolation()` (resolves to whether a worker was removed; the page
// stays controlled until its next load). Trade-offs: docs/deploy.md.

/* global clients */
if (typeof window === 'undefined') {
  // ---- the service worker ----
  const coep =
    new URL(self.location.href).searchParams.get('coep') === 'credentialless' ? 'credentialless' : 'require-corp';
  self.addEventListener('install', () => self.skipWaiting());
  self.addEventListener('activate', (e) => e.waitUntil(clients.claim()));
  self.addEventListener('fetch', (e) => {
    const r = e.request;
    // a request the worker could not repeat (a DevTools quirk): let the browser handle it
    if (r.cache === 'only-if-cached' && r.mode !== 'same-origin') return;
    e.respondWith(isolated(r));
  });

  async function isolated(request) {
    // credentialless: cross-origin no-cors requests go without cookies, as the policy demands
    const r =
      coep === 'credentialless' && request.mode === 'no-cors' ? new Request(request, { credentials: 'omit' }) : request;
    const res = await fetch(r);
    if (res.status === 0) return res; // opaque (cross-origin no-cors): its headers are not ours to change
    const headers = new Headers(res.headers);
    headers.set('Cross-Origin-Opener-Policy', 'same-origin');
    headers.set('Cross-Origin-Embedder-Policy', coep);
    // 204 / 304 must be built without a body, even an empty one
    const body = [101, 103, 204, 205, 304].includes(res.status) ? null : res.body;
    return new Response(body, { status: res.status, statusText: res.statusText, headers });
  }
} else {
  // ---- the page ----
  const script = document.currentScript;
  // this script's service workers (any coep), unregistered
  window.oxinferUnregisterIsolation = async () => {
    const mine = new URL(script.src);
    const regs = (await navigator.serviceWorker?.getRegistrations?.()) ?? [];
    let removed = false;
    for (const reg of regs) {
      const w = reg.active ?? reg.waiting ?? reg.installing;
      if (w && new URL(w.scriptURL).pathname === mine.pathname) removed = (await reg.unregister()) || removed;
    }
    return removed;
  };
  window.oxinferIsolation = new Promise((resolve) => {
    const RELOADED = 'oxinfer-coi-reloaded';
    const UNREGISTERED = 'oxinfer-coi-unregistered';
    if (new URLSearchParams(location.search).has('nocoi')) {
      // the page asked for none: remove the worker, and reload once if it still controls us
      return window.oxinferUnregisterIsolation().then(
        () => {
          if (navigator.serviceWorker?.controller && !sessionStorage.getItem(UNREGISTERED)) {
            sessionStorage.setItem(UNREGISTERED, '1');
            return window.location.reload();
          }
          sessionStorage.removeItem(UNREGISTERED);
          resolve(window.crossOriginIsolated);
        },
        () => resolve(window.crossOriginIsolated),
      );
    }
    if (window.crossOriginIsolated) {
      sessionStorage.removeItem(RELOADED);
      return resolve(true);
    }
    const give = (why) => {
      console.warn(
        `coi-serviceworker: the page is not cross-origin isolated (${why}); the single-threaded engine will run`,
      );
      resolve(false);
    };
    if (!window.isSecureContext) return give('not a secure context: serve it over https or from localhost');
    if (!navigator.serviceWorker) return give('this browser offers no service workers here');
    const url = new URL(script.src);
    url.searchParams.set('coep', script.dataset.coep === 'credentialless' ? 'credentialless' : 'require-corp');
    const reload = () => {
      // once: a second pass that is still not isolated means the headers do not help here
      if (sessionStorage.getItem(RELOADED)) {
        sessionStorage.removeItem(RELOADED);
        return give('still not isolated after the service worker took control');
      }
      sessionStorage.setItem(RELOADED, '1');
      window.location.reload();
    };
    navigator.serviceWorker.register(url.href).then(
      (reg) => {
        // Controlled yet not isolated, or the worker is active but this load bypassed it (a
        // hard reload): reload once. A new worker: reload when it claims the page.
        if (navigator.serviceWorker.controller || reg.active) reload();
        else navigator.serviceWorker.addEventListener('controllerchange', reload, { once: true });
      },
      (e) => give(`the service worker did not register: ${e.message}`),
    );
  });
}
