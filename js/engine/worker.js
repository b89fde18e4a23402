// worker.js — the engine thread: one model per worker, an ES module worker (a Web Worker made
// with {type: 'module'}, or a Node worker_threads Worker). It wires the message protocol
// (worker/protocol.js) to the engine (worker/engine.js) and its operations:
//   init      start the wasm runtime            load      open the files, load the model
//   estimate  the memory a load would take, from the files' headers
//   generate  {text|tokens|messages} -> token events, then the stats (worker/generate.js)
//   render    the prompt text of a chat         logits    tokenize  detokenize
//   embed     texts -> embeddings               stats     unload
//   reset     empty the KV cache and the cache of the images' tower rows
//   setLora   attach / rescale / detach LoRA adapters (worker/lora.js)
//   schemaGrammar  a JSON schema or forced tool calls -> GBNF (src/decode/json_schema.c)
//   embedImage  one image -> the vision tower's soft-token rows (worker/vision.js)
import { setJinjaUrl } from './chat.js';
import { OxError } from '../shared/errors.js';
import { Engine } from './engine.js';
import { generate } from './generate.js';
import { setLora } from './lora.js';
import { imageEmbedding } from './vision.js';
import { chatText, promptOf } from './prompt.js';
import { Protocol } from './protocol.js';
import { isNode } from '../shared/env.js';

const PROGRESS_MS = 50; // at most one progress event per this, and the last one

function serve(protocol) {
  let engine = null; // the Engine, once init ran
  const loaded = () => {
    if (!engine) throw new OxError('STATE', 'the engine is not started (init)');
    return engine.requireModel();
  };
  protocol.ops = {
    async init(m) {
      if (m.jinjaUrl) setJinjaUrl(m.jinjaUrl);
      protocol.abortFlag = m.abortFlag ?? null;
      engine = await Engine.start(
        m,
        (what) => protocol.kill(`the wasm engine stopped: ${what}`),
        () => protocol.aborting(),
      );
      return { threads: engine.threads };
    },
    async load(m, job) {
      let last = -Infinity;
      const progress = (done, total) => {
        const now = performance.now();
        if (now - last < PROGRESS_MS && done !== total) return;
        last = now;
        job.emit({ event: 'progress', done, total });
      };
      const info = await engine.load(m, progress);
      return { ...info, chatTemplate: engine.template };
    },
    estimate: (m) => {
      if (!engine) throw new OxError('STATE', 'the engine is not started (init)');
      return engine.estimate(m);
    },
    async generate(m, job) {
      const e = loaded();
      const { tokens, opts, images } = await promptOf(e, m);
      const st = await generate(e, tokens, opts, job);
      return images ? { ...st, imagesEncoded: images.encoded, imagesCached: images.cached } : st;
    },
    render: (m) => chatText(loaded(), m),
    logits: (m) => loaded().session.logits(m.tokens, !!m.all),
    schemaGrammar: (m) => {
      if (!engine) throw new OxError('STATE', 'the engine is not started (init)');
      return engine.schemaGrammar(m.json, m);
    },
    grammarAccepts: (m) => loaded().grammarAccepts(m.grammar, m.text), // tests only
    tokenize: (m) => loaded().tokenize(m.text, m.special !== false),
    detokenize: (m) => loaded().detokenize(m.ids, !m.skipSpecial),
    embed: (m) => loaded().embed(m.texts, m.opts),
    embedImage: (m) => imageEmbedding(loaded(), m.image, m.maxImageTokens),
    stats: () => loaded().stats(),
    setLora: (m) => setLora(loaded(), m.adapters),
    reset: () => (loaded().session.truncate(0), engine.images.clear(), true),
    // tests: lose the GPU device as a driver reset would
    gpuDestroyDevice: () => loaded().gpu?.destroyDevice() ?? false,
    unload: () => (engine ? engine.unload() : true),
  };
  settlingGpu(protocol, () => engine);
}

// a GPU device lost during a request puts the model on the CPU once the request ended
function settlingGpu(protocol, engineOf) {
  for (const [name, op] of Object.entries(protocol.ops))
    protocol.ops[name] = async (m, job) => {
      try {
        return await op(m, job);
      } finally {
        await engineOf()?.settleGpu();
      }
    };
}

if (isNode) {
  // Node: messages wait in parentPort's queue until the listener is attached
  import(/* webpackIgnore: true */ 'node:worker_threads').then(({ parentPort }) => {
    const protocol = new Protocol((msg, transfer) => parentPort.postMessage(msg, transfer));
    serve(protocol);
    parentPort.on('message', (m) => protocol.receive(m));
  });
} else {
  const protocol = new Protocol((msg, transfer) => self.postMessage(msg, transfer ?? []));
  serve(protocol);
  self.onmessage = (e) => protocol.receive(e.data);
}
