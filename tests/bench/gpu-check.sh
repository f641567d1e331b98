#!/usr/bin/env bash
# gpu-check.sh — passlab's GPU checks in one call, for a lent GPU machine
# (the device tool), from the repository root with gpu-bundle.tar.xz
# unpacked there (tests/bench/gpu-bundle.sh makes it). Each step has its
# own time limit, so that the whole fits one call and a step that hangs
# costs only its own share; logs go to $OUT (the device tool's folder that
# comes back), or gpu-check-out/. The last lines are a table of the steps.
#
# Steps (all by default, or those named):
#   smoke        nvidia-smi, and `exec` of a sample on the cuda backend
#   unit         the CUDA unit tests (generated kernels, layouts, direct conv) on the GPU
#   conformance  ONNX node tests on the cuda backend (when the bundle has the data)
#   memory       bench-memory-bound --backend cuda (stitched kernels against a device copy)
#   layout       bench-layout.sh --backend cuda: issue #7's plan against single layouts
#                (ResNet stack, ResNet-18 and ResNeXt-50 exported by the device's PyTorch)
#
# Usage: bash tests/bench/gpu-check.sh [STEP...]
set -uo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BUNDLE="$ROOT/gpu-bundle"
OUTDIR="${OUT:-$ROOT/gpu-check-out}"
mkdir -p "$OUTDIR"
[[ -x $BUNDLE/app/passlab-cli ]] || { echo "gpu-check: no $BUNDLE (unpack gpu-bundle.tar.xz)" >&2; exit 2; }
export LD_LIBRARY_PATH="$BUNDLE/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PASSLAB_SOURCE_DIR="$ROOT" PASSLAB_BUILD_DIR="$BUNDLE"
export XDG_CACHE_HOME="${XDG_CACHE_HOME:-$(mktemp -d)}"
export PASSLAB_PYTHON="${PASSLAB_PYTHON:-python3}"   # the device's python3 holds PyTorch
CLI="$BUNDLE/app/passlab-cli"
STEPS=("$@")
[[ ${#STEPS[@]} -gt 0 ]] || STEPS=(smoke unit conformance memory layout)
declare -a TABLE

# run NAME LIMIT_S COMMAND...: the command's output in $OUTDIR/NAME.log, a row in the table.
run () {
  local name="$1" limit="$2"
  shift 2
  local t0=$SECONDS
  timeout "$limit" "$@" > "$OUTDIR/$name.log" 2>&1
  local rc=$?
  local what="ok"
  [[ $rc == 124 ]] && what="TIMED OUT after ${limit} s"
  [[ $rc != 0 && $rc != 124 ]] && what="FAILED (exit $rc)"
  # a TAP log says how many subtests passed; another, its last line
  local last
  if grep -qE '^(not )?ok ' "$OUTDIR/$name.log"; then
    last="$(grep -c '^ok ' "$OUTDIR/$name.log") subtests ok, $(grep -c '^not ok ' "$OUTDIR/$name.log") not ok"
  else
    last="$(tail -n 1 "$OUTDIR/$name.log" | cut -c1-70)"
  fi
  TABLE+=("$(printf '%-22s %-26s %5d s   %s' "$name" "$what" $((SECONDS - t0)) "$last")")
  echo "== $name: $what"
  tail -n 5 "$OUTDIR/$name.log"
}

for step in "${STEPS[@]}"; do
  case "$step" in
    smoke)
      run nvidia-smi 30 nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv
      run exec-sample 120 "$CLI" exec "$ROOT/data/graphs/transformer_block.graph" --backend cuda
      ;;
    unit)
      run test-kernels-cuda 150 "$BUNDLE/tests/test-kernels-cuda" --tap
      run test-kernels-layout 150 "$BUNDLE/tests/test-kernels-layout" --tap
      run test-conv-direct-cuda 60 "$BUNDLE/tests/test-conv-direct" --tap -p /Passlab/ConvDirect/cuda
      ;;
    conformance)
      if [[ -d $BUNDLE/conformance/node ]]; then
        run conformance-cuda 180 "$CLI" conformance --quiet --backend cuda \
          --passes simplify,decompose,fuse-library,stitch --int-inputs-as-constants --timeout 60 \
          --expect "$ROOT/tests/conformance-expected-cpu.txt" \
          --expect-generated "$ROOT/tests/conformance-generated.txt" "$BUNDLE/conformance/node"
      else
        echo "== conformance: skipped (the bundle was made without --conformance)"
      fi
      ;;
    memory)
      run bench-memory-bound 90 "$BUNDLE/tests/bench/bench-memory-bound" --backend cuda
      ;;
    layout)
      run bench-layout 300 bash "$ROOT/tests/bench/bench-layout.sh" "$BUNDLE" --backend cuda \
        --cnns "resnet18 resnext50" --batches "1 16" --rounds 9 --repeat 3
      ;;
    *) echo "gpu-check: unknown step '$step'" >&2; exit 2 ;;
  esac
done

echo
echo "step                   result                      time   last line of its log ($OUTDIR)"
printf '%s\n' "${TABLE[@]}"
