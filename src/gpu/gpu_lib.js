// gpu_lib.js — Emscripten JS library (--js-library): the GPU backend's imports (src/wasm/abi.h,
// src/gpu/record.c). They hand a recorded step to Module.oxGpu (a GpuBridge from
// js/gpu/bridge.js, set by js/worker/engine.js) and wait for it synchronously.
mergeInto(LibraryManager.library, {
  ox_js_gpu_run: function (list, words, act, msg, msgCap) {
    var gpu = Module['oxGpu'];
    var r = gpu
      ? gpu.runStep(wasmMemory.buffer, list >>> 0, words, act >>> 0)
      : { code: -10, message: 'no GPU backend is attached' };
    if (r.code !== 0) stringToUTF8(String(r.message), msg, msgCap);
    return r.code;
  },
  // while loading: Module.oxGpuLoad is the GpuBridge the load uploads to (js/engine/engine.js)
  ox_js_gpu_put: function (entry, row0, rows, bytes, msg, msgCap) {
    var gpu = Module['oxGpuLoad'];
    var r = gpu
      ? gpu.put(wasmMemory.buffer, entry >>> 0, row0, rows, bytes >>> 0)
      : { code: -10, message: 'no GPU backend to load onto' };
    if (r.code !== 0) stringToUTF8(String(r.message), msg, msgCap);
    return r.code;
  },
  ox_js_gpu_forget: function (session) {
    var gpu = Module['oxGpu'];
    if (gpu) gpu.forget(session);
  },
});
