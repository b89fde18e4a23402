#!/bin/sh
# A software Vulkan driver that Dawn accepts, for the WebGPU kernel tests on machines without a
# GPU: lavapipe 25 (mesa-vulkan-drivers from bookworm-backports), unpacked with dpkg -x into
# build/lavapipe25/ without touching the system's apt state (private sources list built from the
# machine's own Debian mirror, private lists and cache). Debian 12's own lavapipe (22.3) is
# refused by Dawn, but its package (tools/setup.sh) brings the libraries this one links. Writes build/lavapipe25/icd.json; tests/node/gpu-kernels.test.mjs finds it.
# Usage: tools/setup-lavapipe.sh [DIR]   (default: the repository's build/lavapipe25; prints
# nothing when DIR/icd.json already exists)
set -eu
D=$(realpath -m "${1:-$(dirname "$0")/../build/lavapipe25}")
[ -f "$D/icd.json" ] && exit 0
A=$D/.apt; mkdir -p "$A/lists/partial" "$A/cache/archives/partial" "$D/debs" "$D/root"
URI=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
[ -n "$URI" ] || URI=$(awk '/^deb / && !/security/ {for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) {print $i; exit}}' /etc/apt/sources.list)
[ -n "$URI" ] || { echo "setup-lavapipe: no Debian mirror found in /etc/apt" >&2; exit 1; }
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $URI bookworm-backports main" > "$A/sources.list"
O="-o Dir::Etc::SourceList=$A/sources.list -o Dir::Etc::SourceParts=/nonexistent -o Dir::State::Lists=$A/lists -o Dir::Cache=$A/cache -o APT::Sandbox::User=root"
# shellcheck disable=SC2086
apt-get $O -qq update
# shellcheck disable=SC2086
# the version the tests were written against, else whatever backports has now
(cd "$D/debs" && { apt-get $O -qq download mesa-vulkan-drivers=25.0.7-2~bpo12+1 2>/dev/null ||
  apt-get $O -qq download mesa-vulkan-drivers/bookworm-backports; })
for d in "$D"/debs/*.deb; do dpkg -x "$d" "$D/root"; done
L=$D/root/usr/lib/x86_64-linux-gnu
[ -f "$L/libvulkan_lvp.so" ] || { echo "setup-lavapipe: $L/libvulkan_lvp.so missing after unpacking" >&2; exit 1; }
rm -rf "$D/debs" "$A"
printf '{"file_format_version": "1.0.0", "ICD": {"library_path": "%s/libvulkan_lvp.so", "api_version": "1.4.305"}}\n' "$L" > "$D/icd.json"
