#!/usr/bin/env bash
# gpu-bundle.sh — packs what a lent GPU machine needs to run passlab's GPU
# checks (tests/bench/gpu-check.sh) into one ignored archive at the
# repository root, gpu-bundle.tar.xz, for the device tool's `carry`. That
# machine has CUDA, PyTorch and a C compiler but none of passlab's
# libraries, and nothing can be installed there: the archive holds
# passlab-cli, libpasslab, the test and bench binaries that run on a GPU,
# every shared library they load that is not the C library (resolved with
# ldd, OpenBLAS included) and, with --conformance, ONNX's node conformance
# data. The binaries find libpasslab through their $ORIGIN/.. run path, so
# the archive keeps the build tree's layout.
#
# Usage: tests/bench/gpu-bundle.sh [BUILD_DIR] [--conformance]
# Then:  device run, carry ["gpu-bundle.tar.xz"], command
#        "tar xJf gpu-bundle.tar.xz && bash tests/bench/gpu-check.sh"
set -euo pipefail

SRC="$(cd "$(dirname "$0")/../.." && pwd)"
BUILD="$SRC/build"
if [[ $# -gt 0 && $1 != --* ]]; then BUILD="$(cd "$1" && pwd)"; shift; fi
CONFORMANCE=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --conformance) CONFORMANCE=1; shift ;;
    *) echo "gpu-bundle: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
BINARIES=(app/passlab-cli tests/test-kernels-cuda tests/test-kernels-layout tests/test-conv-direct
          tests/bench/bench-memory-bound)
for b in "${BINARIES[@]}"; do
  [[ -x $BUILD/$b ]] || { echo "gpu-bundle: no $BUILD/$b (build first)" >&2; exit 2; }
done

TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
B="$TMP/gpu-bundle"
mkdir -p "$B/lib"
for b in "${BINARIES[@]}"; do
  mkdir -p "$B/$(dirname "$b")"
  cp "$BUILD/$b" "$B/$b"
done
cp "$BUILD/libpasslab.so" "$B/"
# Every library they load except glibc's own (the device's is newer, and
# glibc is backwards compatible) and the loader.
for b in "${BINARIES[@]}"; do
  ldd "$BUILD/$b" | awk '$3 ~ /^\// { print $3 }'
done | sort -u | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|ld-linux*|libpasslab.so*) continue ;;
  esac
  cp -L "$lib" "$B/lib/"
done
if [[ $CONFORMANCE == 1 ]]; then
  mkdir -p "$B/conformance"
  cp -r /usr/share/libonnx-testdata/data/node "$B/conformance/"
fi
tar -C "$TMP" -cJf "$SRC/gpu-bundle.tar.xz" gpu-bundle
echo "gpu-bundle: $SRC/gpu-bundle.tar.xz, $(du -h "$SRC/gpu-bundle.tar.xz" | cut -f1)" \
     "($(du -sh "$B" | cut -f1) unpacked, $(ls "$B/lib" | wc -l) libraries)"
