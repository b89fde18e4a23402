#!/usr/bin/env bash
# Build native llama.cpp tools from the source that ships inside the npm package
# node-llama-cpp (llama/gitRelease.bundle) — no network but the npm registry.
#
#   tools/llamacpp.sh [target...]      default target: llama-quantize
#   e.g. tools/llamacpp.sh llama-quantize llama-bench llama-server llama-gguf-split llama-imatrix
#   a library target names its shared library: tools/llamacpp.sh mtmd -> .../bin/libmtmd.so
#
# Installs into $OX_LLAMACPP_DIR (default /root/.cache/llamacpp, i.e. ~/.cache/llamacpp);
# binaries land in $OX_LLAMACPP_DIR/src/build/bin/. Idempotent: each step is skipped when its
# result exists, and targets already built are not rebuilt. Prints the binary paths (one per
# line on stdout, everything else goes to stderr) so callers can do
#   QUANTIZE=$(tools/llamacpp.sh llama-quantize)
set -euo pipefail

VERSION=3.22.1
DIR=${OX_LLAMACPP_DIR:-${HOME:-/root}/.cache/llamacpp}
JOBS=${OX_LLAMACPP_JOBS:-2}
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(llama-quantize)

log() { echo "llamacpp.sh: $*" >&2; }
mkdir -p "$DIR"
# One build at a time: a second caller waits instead of corrupting the tree.
exec 9>"$DIR/.lock"
flock 9

bundle="$DIR/node_modules/node-llama-cpp/llama/gitRelease.bundle"
if [ ! -f "$bundle" ]; then
  log "installing node-llama-cpp@$VERSION into $DIR (npm, ~0.7 GB)"
  ( cd "$DIR"
    [ -f package.json ] || npm init -y >/dev/null
    npm install --no-save --no-audit --no-fund --ignore-scripts "node-llama-cpp@$VERSION" >&2 )
fi

if [ ! -d "$DIR/src/.git" ]; then
  log "cloning llama.cpp from $bundle"
  rm -rf "$DIR/src.tmp"
  git clone -q "$bundle" "$DIR/src.tmp"
  mv "$DIR/src.tmp" "$DIR/src"
fi

build="$DIR/src/build"
if [ ! -f "$build/CMakeCache.txt" ]; then
  log "configuring (CMake, Release, CPU only)"
  cmake -S "$DIR/src" -B "$build" -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF \
        -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF >&2
fi

# what a target leaves in bin/: the tool itself, or lib<target>.so for a library
built() {
  if [ -x "$build/bin/$1" ]; then echo "$build/bin/$1"
  elif [ -f "$build/bin/lib$1.so" ]; then echo "$build/bin/lib$1.so"
  else return 1; fi
}

todo=()
for t in "${targets[@]}"; do
  built "$t" >/dev/null || todo+=("$t")
done
if [ ${#todo[@]} -gt 0 ]; then
  log "building ${todo[*]} (-j$JOBS)"
  cmake --build "$build" -j"$JOBS" --target "${todo[@]}" >&2
fi

for t in "${targets[@]}"; do
  built "$t" || { log "missing after build: $build/bin/$t (or lib$t.so)"; exit 1; }
done
