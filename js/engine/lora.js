// lora.js — runtime LoRA adapters in the engine worker (docs/lora.md): the files of each
// adapter are opened, read by the C loader (ox_wasm_lora_set) and closed again; the adapters
// replace the attached ones at once, or on error the old ones stay. The KV cache was filled
// with the previous weights, so it is emptied.
import { OxError } from '../shared/errors.js';

// adapters: [{sources: [descriptor, ...] (one GGUF, or the PEFT config + safetensors), scale}]
// -> {adapters, modules}
export async function setLora(engine, adapters) {
  const { heap, host } = engine.requireModel();
  if (adapters.length > 8) throw new OxError('RANGE', `setLora: ${adapters.length} adapters at once (at most 8)`);
  // LoRA runs on the CPU only: the model hands over to it first (an adapter change empties the cache anyway)
  if (adapters.length && engine.gpu)
    await engine.leaveGpu('webgpu: LoRA adapters run on the CPU only; the model moved to the CPU');
  const handles = [];
  try {
    for (const a of adapters) for (const s of a.sources) handles.push(await host.open(s));
    const counts = adapters.map((a) => a.sources.length);
    const scales = adapters.map((a) => a.scale);
    const modules = heap.withInts(handles, (pf) =>
      heap.withInts(counts, (pc) =>
        heap.scoped(8 * Math.max(1, scales.length), (ps) => {
          heap.f64(ps, scales.length).set(scales);
          return heap.check(heap.C.ox_wasm_lora_set(engine.ptr, pf, pc, ps, adapters.length));
        }),
      ),
    );
    engine.session.truncate(0);
    return { adapters: adapters.length, modules };
  } finally {
    for (const h of handles) host.close(h);
  }
}
