// probe-worker.js — the wasm read-bandwidth ceiling in the browser (a classic Worker started
// by tools/bench/page.mjs): loads dist/oxinfer-mt.js directly, no model, and answers one
// {threads, mbytes, reps, glue} message with {bytes_per_s} or {error}.
onmessage = async ({ data: { threads, mbytes, reps, glue } }) => {
  try {
    importScripts(glue);
    const M = await self.OxinferMT({
      oxPoolSize: Math.max(1, threads - 1),
      mainScriptUrlOrBlob: glue,
      locateFile: (p) => new URL(p, glue).href,
    });
    const r = M._ox_probe_read_bandwidth(threads, mbytes, reps);
    postMessage(r > 0 ? { bytes_per_s: r } : { error: `ox_probe_read_bandwidth failed: ${r}` });
  } catch (e) {
    postMessage({ error: String(e?.message ?? e) });
  }
};
