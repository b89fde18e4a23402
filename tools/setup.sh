#!/usr/bin/env bash
# The toolchain the README's commands need, on a fresh Debian machine with only Node:
#   tools/setup.sh demo   what `npm run demo` needs (native CLI + wasm build)
#   tools/setup.sh test   what `npm test` needs (+ clang sanitizers/fuzzers, Chromium, clang 16)
# Installs what is missing with apt-get when run as root; otherwise stops at once with the
# exact command to run. Prints nothing when everything is there.
set -euo pipefail
need=${1:-test}

# command or file (glob) that proves a package is installed -> Debian package
declare -A have=(
  [emcc]=emscripten [cmake]=cmake [make]=make [cc]=gcc [c++]=g++ [git]=git
  [clang-16]=clang-16 [wasm-ld-16]=lld-16 # the relaxed-SIMD kernels (Makefile.emscripten)
)
if [ "$need" = test ]; then
  have+=(
    [clang]=clang [chromium]=chromium [clang-format]=clang-format # .clang-format (C style)
    ['/usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a']=libclang-rt-14-dev
    [/usr/lib/python3/dist-packages/numpy]=python3-numpy
    ['/usr/lib/*/libvulkan.so.1']=libvulkan1 # Dawn (npm webgpu) for the WebGPU kernel tests
    # Debian's own lavapipe (Dawn refuses it): brings the libraries lavapipe 25 links
    ['/usr/share/vulkan/icd.d/lvp_icd.*.json']=mesa-vulkan-drivers
  )
  # a software Vulkan driver Dawn accepts (lavapipe 25), unpacked into build/; SwiftShader
  # comes with chromium
  "$(dirname "$0")/setup-lavapipe.sh" ||
    echo "oxinfer-web: lavapipe 25 could not be had; the WebGPU tests run on SwiftShader (chromium's)" >&2
elif [ "$need" != demo ]; then
  echo "usage: tools/setup.sh demo|test" >&2
  exit 2
fi

missing=()
for probe in "${!have[@]}"; do
  if [[ $probe == /* ]]; then compgen -G "$probe" >/dev/null && continue
  else command -v "$probe" >/dev/null 2>&1 && continue
  fi
  missing+=("${have[$probe]}")
done
[ ${#missing[@]} -eq 0 ] && exit 0

mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
cmd="apt-get install -y --no-install-recommends ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  echo "oxinfer-web: missing Debian packages: ${missing[*]}" >&2
  echo "run:  sudo apt-get update && sudo $cmd" >&2
  exit 1
fi
echo "oxinfer-web: installing ${missing[*]} (apt-get)" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
$cmd -qq >/dev/null
