// node-engine.mjs — our wasm engine in Node through the JS API, in a child process of
// tools/bench.mjs (so its peak RSS is its own). One JSON request per stdin line:
// {op: 'load', src: {path} | {url}, threads, nCtx} | {op: 'run', tokens, nGen} | {op: 'memory'} | {op: 'quit'};
// one JSON reply per stdout line: {ok: true, value} or {ok: false, error}.
import readline from 'node:readline';
import { loadModel } from '../../js/main/index.js';
import { timeGenerate } from './measure.mjs';

let model = null;
const ops = {
  async load({ src, threads, nCtx }) {
    const t0 = performance.now();
    model = await loadModel(src, { threads, maxContext: nCtx });
    return { load_ms: performance.now() - t0, build: model.build, threads: model.threads, info: model.info };
  },
  async run({ tokens, nGen }) {
    return timeGenerate(model, tokens, nGen);
  },
  async memory() {
    const s = await model.stats();
    return {
      wasm_bytes: s.wasmMemoryBytes,
      resident_bytes: s.residentBytes,
      host_bytes_read: s.hostBytesRead,
      host_read_calls: s.hostReadCalls,
      host_bytes_all: s.hostBytesReadAll,
    };
  },
  async quit() {
    await model?.unload();
    setImmediate(() => process.exit(0));
    return true;
  },
};

const send = (m) => process.stdout.write(JSON.stringify(m) + '\n');
let chain = Promise.resolve();
readline.createInterface({ input: process.stdin }).on('line', (line) => {
  const m = JSON.parse(line);
  chain = chain.then(async () => {
    try {
      send({ ok: true, value: await ops[m.op](m) });
    } catch (e) {
      send({ ok: false, error: `${e.code ?? ''} ${e.message ?? e}`.trim() });
    }
  });
});
