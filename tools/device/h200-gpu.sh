#!/usr/bin/env bash
# h200-gpu.sh — the WebGPU bench rows on a machine with an NVIDIA GPU (an H200 reached through
# Vulkan) and no Node, npm or package access; docs/benchmarks.md "WebGPU backend" says how to
# prepare and run it. Writes everything under $OUT: the log, nvidia-smi, the adapter, the rows
# (markdown and JSON). Not run yet: no figure of it is in the docs until a session runs it.
#
# It expects, next to the working tree (carried into the run; 64 MiB in all):
#   $KIT (default device-kit/):
#     node or node.xz        the official Node 20 linux-x64 binary (xz: 24 MB)
#     webgpu/                the npm package `webgpu` (0.6.2): package.json, index.js and
#                            dist/linux-x64/dawn.node (or dawn.node.xz)
#     debs/*.deb             Debian 12's libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0
#                            libgles2 (the Vulkan loader and the GL vendor libraries the NVIDIA
#                            ICD needs)
#     oxinfer                the native CLI built for any x86-64 (-DOX_NATIVE=OFF): it writes the model
#   dist/                    the wasm engine (make -f Makefile.emscripten)
# Knobs (environment): OX_PRESET (e2b), OX_TYPE (q4_k) and OX_EMBD (q6_k): the generator's
# model, E2B's geometry with Q4_K_M's main types; OX_REPS (3), OX_N_PROMPT (64), OX_N_GEN (64),
# OX_BACKENDS (cpu,webgpu), OX_THREADS (the cores, at most 16); OX_FALLBACK=1 takes a software
# adapter too (a dry run where there is no GPU: OX_PRESET=tiny with lavapipe's VK_ICD_FILENAMES).
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${OUT:?OUT must name the folder for the results}"
KIT=${KIT:-device-kit}
TMP=${TMPDIR:-/tmp}/oxinfer-device
mkdir -p "$OUT" "$TMP"
exec > >(tee -a "$OUT/log.txt") 2>&1
say() { echo "== $(date -u +%H:%M:%S) $*"; }
unxz_to() { # file.xz dest: xz, else Python's lzma
  if command -v xz >/dev/null; then xz -dc "$1" >"$2"; else python3 -c 'import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],"wb"))' "$1" "$2"; fi
}

say "kit: $KIT"
[ -d "$KIT" ] || { echo "no $KIT/ (see the header of this script)"; exit 2; }
[ -f dist/oxinfer-mt.wasm ] || { echo "no dist/ (the wasm build): carry it"; exit 2; }

# Node
NODE=$KIT/node
if [ ! -x "$NODE" ] && [ -f "$KIT/node.xz" ]; then unxz_to "$KIT/node.xz" "$TMP/node" && chmod +x "$TMP/node" && NODE=$TMP/node; fi
[ -x "$NODE" ] || { echo "no Node binary in $KIT (node or node.xz)"; exit 2; }
"$NODE" --version

# the webgpu package where the engine imports it from
mkdir -p node_modules
if [ ! -f node_modules/webgpu/index.js ]; then
  rm -rf node_modules/webgpu && cp -r "$KIT/webgpu" node_modules/webgpu
  d=node_modules/webgpu/dist/linux-x64
  [ -f "$d/dawn.node" ] || { [ -f "$d/dawn.node.xz" ] && unxz_to "$d/dawn.node.xz" "$d/dawn.node"; }
fi
[ -f node_modules/webgpu/dist/linux-x64/dawn.node ] || { echo "no dawn.node in $KIT/webgpu"; exit 2; }

# the Vulkan loader and GL vendor libraries (docs: webgpu.md, "What a real GPU reports")
if ! ldconfig -p 2>/dev/null | grep -q 'libvulkan.so.1 '; then
  for deb in "$KIT"/debs/*.deb; do
    if command -v dpkg >/dev/null; then dpkg -x "$deb" /; else (cd "$TMP" && ar x "$deb" data.tar.xz && tar -C / -xJf data.tar.xz); fi
  done
  ldconfig || true
fi
icd=$(find /usr/share/vulkan/icd.d /etc/vulkan/icd.d /usr/lib /usr/local /opt -maxdepth 6 -name 'nvidia_icd*.json' 2>/dev/null | head -1 || true)
if [ -n "$icd" ]; then export VK_DRIVER_FILES=$icd VK_ICD_FILENAMES=$icd; fi
say "NVIDIA ICD: ${icd:-none found, the loader searches its defaults}"
command -v nvidia-smi >/dev/null && nvidia-smi >"$OUT/nvidia-smi.txt" 2>&1 || true
nproc >"$OUT/nproc.txt"

# the adapter, before anything long
"$NODE" --input-type=module -e "
import { nodeGpu, openDevice } from './js/gpu/device.js';
const { device, caps } = await openDevice(await nodeGpu(), { allowFallback: process.env.OX_FALLBACK === '1' });
console.log(JSON.stringify(caps));
device.destroy(); process.exit(0);" | tee "$OUT/adapter.json"

# the model
PRESET=${OX_PRESET:-e2b} TYPE=${OX_TYPE:-q4_k} EMBD=${OX_EMBD:-q6_k}
THREADS=${OX_THREADS:-$(($(nproc) < 16 ? $(nproc) : 16))}
MODEL=$TMP/$PRESET-$TYPE-$EMBD.gguf
if [ ! -f "$MODEL" ]; then
  say "generating $MODEL"
  "$KIT/oxinfer" synth --preset "$PRESET" --type "$TYPE" --embd-type "$EMBD" --threads "$THREADS" -o "$MODEL.part"
  mv "$MODEL.part" "$MODEL"
fi
ls -l "$MODEL"

say "bench: $PRESET $TYPE (emb $EMBD), $THREADS threads"
"$NODE" tools/device/gpu-bench.mjs "$MODEL" --threads "$THREADS" --reps "${OX_REPS:-3}" \
  --n-prompt "${OX_N_PROMPT:-64}" --n-gen "${OX_N_GEN:-64}" --backends "${OX_BACKENDS:-cpu,webgpu}" \
  --json "$OUT/rows.json" $([ "${OX_FALLBACK:-}" = 1 ] && echo --fallback) | tee "$OUT/rows.md"
say done
