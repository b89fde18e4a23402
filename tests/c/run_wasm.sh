#!/bin/sh
# Builds the C tests test_quant, test_kernels and test_pool with Emscripten (wasm SIMD128 +
# pthreads, the same flags as the wasm engine) and runs them under Node.
#   tests/c/run_wasm.sh [build-dir]     (default: /tmp/oxinfer-wasm-tests)
# Exits non-zero if a build or a test fails.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-/tmp/oxinfer-wasm-tests}
mkdir -p "$out"
export NODE_PATH=${NODE_PATH:-/usr/share/nodejs}   # emcc's optimizer needs it (Debian emscripten)
core="$root/src/quant.c $root/src/kernels.c $root/src/kernels_simd128.c $root/src/kernels_x86.c $root/src/pool.c $root/src/err.c"
flags="-O3 -msimd128 -pthread -sPTHREAD_POOL_SIZE=4 -sALLOW_MEMORY_GROWTH=1 -sMAXIMUM_MEMORY=4GB -sEXIT_RUNTIME=1 -sENVIRONMENT=node,worker"
status=0
for t in test_quant test_kernels test_pool; do
    emcc $flags -Wall -Wno-pthreads-mem-growth -I"$root/src" -I"$here" "$here/$t.c" $core -o "$out/$t.js"
    # --no-experimental-fetch: Emscripten 3.1.6 would fetch() the .wasm by path under Node 20
    if node --no-experimental-fetch "$out/$t.js"; then :; else echo "$t (wasm): FAILED"; status=1; fi
done
exit $status
