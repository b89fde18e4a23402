#!/usr/bin/env bash
# Builds every C test (tests/c/test_*.c) with Emscripten, with the wasm engine's flags (SIMD128 +
# pthreads), and runs each under Node: the same tests as ctest, against the wasm build of the
# same core (every layer of src/ and src/writers, but not the wasm entry points).
#   tests/c/run_wasm.sh [build-dir]     (default: /tmp/oxinfer-wasm-tests)
#   OX_WASM_SANITIZE=1 tests/c/run_wasm.sh [build-dir]   (default: /tmp/oxinfer-wasm-asan-tests)
#     the same under Emscripten's AddressSanitizer + UndefinedBehaviorSanitizer (-O1 -g; works with
#     pthreads in emcc 3.1.6; ASan's shadow needs a larger initial memory). A finding aborts the
#     test with ASan's report, so it has no summary line and counts as failed.
# Prints each test's summary line ("name: N passed, N failed", from check_summary; a test that
# dies before its own gets one with "1 failed") and exits non-zero if a build or a test fails.
#
# The tests use the native host-file table (hostfile.c, -DOX_HOST_NATIVE) over real files:
# NODERAWFS maps the C file calls onto Node's fs, so fixtures under /tmp work as natively.
# system() (mkdir/rm of scratch dirs) runs through Node's child_process. getenv() sees
# Emscripten's own environment, not the process's: OX_CLI is never set here, so a test that
# spawns the native CLI must skip that check when it is unset (test_cli, which is nothing else,
# is not built here).
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
san=()
dir=${1:-/tmp/oxinfer-wasm-tests}
if [ "${OX_WASM_SANITIZE:-0}" = 1 ]; then
    san=(SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined -g -O1" SANLD="-sINITIAL_MEMORY=512MB")
    dir=${1:-/tmp/oxinfer-wasm-asan-tests}
fi
mkdir -p "$dir"
out=$(cd "$dir" && pwd)
export NODE_PATH=${NODE_PATH:-/usr/share/nodejs}   # emcc's optimizer needs it (Debian emscripten)
t0=$SECONDS

# Objects once, then one link per test; -j2 (emcc is slow and the machines are small), -k so
# one broken test does not hide the others.
# The makefile is kept in $out so that after a failed build each test can be asked whether it is stale.
cat >"$out/tests.mk" <<'EOF'
SRC := $(filter-out src/host/hostfile_wasm.c,$(foreach l,base host kernels formats gpu model vision text decode engine writers,$(wildcard src/$(l)/*.c)))
OBJ := $(SRC:src/%.c=$(OUT)/obj/%.o)
TESTS := $(patsubst tests/c/%.c,$(OUT)/%.js,$(filter-out tests/c/test_cli.c,$(wildcard tests/c/test_*.c)))
# the engine's compile flags (Makefile.emscripten), plus the native host table
CFLAGS := -std=gnu11 -O3 -msimd128 -pthread -Wall -Wextra -Wno-unused-parameter -Wno-sign-compare \
  -DNDEBUG -DOX_HOST_NATIVE -Isrc -Itests/c $(SAN)
# the engine's thread/memory settings; a stack like a native main thread's
LDFLAGS := -O3 -msimd128 -pthread -sPTHREAD_POOL_SIZE=4 -sALLOW_MEMORY_GROWTH=1 -sMAXIMUM_MEMORY=4GB \
  -sEXIT_RUNTIME=1 -sENVIRONMENT=node,worker -sNODERAWFS=1 -sTOTAL_STACK=8MB -Wno-pthreads-mem-growth $(SAN) $(SANLD)
all: $(TESTS) $(OUT)/package.json
.SECONDARY: $(OBJ)
# the repository's package.json says "type": "module"; Emscripten's glue is CommonJS
$(OUT)/package.json:
	echo '{ "type": "commonjs" }' > $@
$(OUT)/obj/%.o: src/%.c $(wildcard src/*/*.h src/*/*.inc)
	@mkdir -p $(@D)
	emcc $(CFLAGS) -c $< -o $@
# tests include helpers (ref_forward.c, the fuzz harnesses) directly; an absolute path, as
# CMake's, because test_errors finds tests/fuzz/regressions from __FILE__
$(OUT)/%.js: tests/c/%.c $(OBJ) $(wildcard tests/c/*.h tests/c/ref_forward.c tests/c/ref_vision.c tests/fuzz/*.c)
	@rm -f $@ $(@:.js=.wasm)
	emcc $(CFLAGS) $(LDFLAGS) $(abspath $<) $(OBJ) -o $@
EOF
make -C "$root" -k -j2 -f "$out/tests.mk" OUT="$out" "${san[@]}"
make_rc=$?
echo "wasm-c: built in $((SECONDS - t0)) s (make exit $make_rc)"

status=0
[ "$make_rc" -ne 0 ] && status=1
for src in "$root"/tests/c/test_*.c; do
    t=$(basename "$src" .c)
    # the oxinfer command is a native program: its test has nothing to run as wasm
    [ "$t" = test_cli ] && continue
    # after a failed make, a binary that make would still rebuild is stale: never run it
    if [ ! -f "$out/$t.js" ] || { [ "$make_rc" -ne 0 ] && ! make -C "$root" -q -f "$out/tests.mk" OUT="$out" "${san[@]}" "$out/$t.js" 2>/dev/null; }; then
        echo "$t: 0 passed, 1 failed (wasm build failed)"
        status=1
        continue
    fi
    t1=$SECONDS
    # --no-experimental-fetch: Emscripten 3.1.6 would fetch() the .wasm by path under Node 20;
    # timeout: a deadlocked thread must fail the run, not hang it
    (cd "$out" && timeout 900 node --no-experimental-fetch "$t.js") >"$out/$t.out"
    rc=$?
    cat "$out/$t.out"
    [ "$rc" -ne 0 ] && status=1
    if ! grep -qE '^[A-Za-z0-9_]+: [0-9]+ passed, [0-9]+ failed$' "$out/$t.out"; then
        echo "$t: 0 passed, 1 failed (wasm run ended with exit code $rc before its summary)"
        status=1
    elif [ "$rc" -ne 0 ] && grep -qE ' 0 failed$' "$out/$t.out"; then
        echo "$t (wasm): exit code $rc after a clean summary"
    fi
    echo "   ($t: $((SECONDS - t1)) s)"
done
echo "wasm-c: built and ran in $((SECONDS - t0)) s"
exit $status
