// hostfile_lib.js — Emscripten JS library (--js-library): the imports of src/host/hostfile_wasm.c.
// They call the engine's host-file table, Module.oxHost (a HostFiles from js/host/hostfile.js, set
// by js/engine/engine.js at start-up), synchronously. Pool threads have no table: their reads fail with a message.
// Pointers and sizes are unsigned (memory may exceed 2 GiB), hence the `>>> 0`.
mergeInto(LibraryManager.library, {
  ox_js_host_read: function (file, off, len, dst, msg, msgCap) {
    var host = Module['oxHost'];
    var code, text;
    if (!host) {
      code = -1;
      text = 'host read off the engine thread (file ' + file + ')';
    } else {
      code = host.readInto(file, off, new Uint8Array(wasmMemory.buffer, dst >>> 0, len >>> 0));
      text = host.lastError;
    }
    if (code !== 0) stringToUTF8(String(text), msg, msgCap);
    return code;
  },
  ox_js_host_size: function (file) {
    var host = Module['oxHost'];
    return host ? host.size(file) : -1;
  },
  ox_js_host_name: function (file, buf, cap) {
    var host = Module['oxHost'];
    if (!host || host.size(file) < 0) return -1;
    stringToUTF8(host.name(file), buf, cap);
    return 0;
  },
  ox_js_progress: function (done, total) {
    var f = Module['oxProgress'];
    return f ? f(done, total) | 0 : 0;
  },
  ox_js_aborted: function () {
    var f = Module['oxAborted'];
    return f ? f() | 0 : 0;
  },
});
