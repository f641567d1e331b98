#!/usr/bin/env bash
# bench-layout.sh — issue #7's end-to-end measurement: the layout pass's plan
# against every single-layout plan (seed 003), on the ResNet-style stack
# (tests/data/models/make_resnet_stack.py) and on ResNet-18 exported from
# PyTorch (when python3-torch is installed), at each batch size asked for.
#
# Variants (passlab-cli bench): fused = no layout planning (NCHW, im2col +
# GEMM); nchw/nhwc/chwn = the layout pass with force=L (each conv's best
# impl and tile in that one layout); layout = the pass's own plan. All run
# in interleaved rounds (median of the rounds' medians), so a change in the
# machine's load hits every variant alike, and the plan is compared with each
# variant round by round (wins, ratio range, sign test). --refine N passes
# layout.refine=N (default 2): the plan's costs measured in context, not
# only kernel by kernel. Nothing here runs in `make test`.
#
# Usage: tests/bench/bench-layout.sh [BUILD_DIR] [--batches "1 8"] [--rounds K]
#                                    [--repeat N] [--refine N] [--no-resnet18]
set -euo pipefail

SRC="$(cd "$(dirname "$0")/../.." && pwd)"
BUILD="$SRC/build"
if [[ $# -gt 0 && $1 != --* ]]; then BUILD="$1"; shift; fi
BATCHES="1"
ROUNDS=7
REPEAT=5
RESNET18=1
REFINE=2
while [[ $# -gt 0 ]]; do
  case "$1" in
    --batches) BATCHES="$2"; shift 2 ;;
    --rounds) ROUNDS="$2"; shift 2 ;;
    --repeat) REPEAT="$2"; shift 2 ;;
    --refine) REFINE="$2"; shift 2 ;;
    --no-resnet18) RESNET18=0; shift ;;
    *) echo "bench-layout: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
CLI="$BUILD/app/passlab-cli"
[[ -x $CLI ]] || { echo "bench-layout: no $CLI (build first)" >&2; exit 2; }
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
VARIANTS=fused,nchw,nhwc,chwn,layout
PY=python3
[[ -x /usr/bin/python3 ]] && PY=/usr/bin/python3   # Debian's, where python3-torch installs

# One network: the bench table, then the plan's layouts per conv.
bench_one () {
  local name="$1" file="$2"
  echo "== $name"
  "$CLI" bench "$file" --backend cpu --variants "$VARIANTS" --repeat "$REPEAT" --rounds "$ROUNDS" \
    --param "layout.refine=$REFINE" | tail -n +2
  "$CLI" run "$file" --passes "simplify,layout{refine=$REFINE}" 2>/dev/null | sed -n '/^ *conv  /,/^ *cost sources/p' || true
  echo
}

echo "bench-layout: $(nproc) cores, $(date -u +%FT%TZ)"
for b in $BATCHES; do
  "$PY" "$SRC/tests/data/models/make_resnet_stack.py" --batch "$b" > "$TMP/stack-b$b.graph"
  bench_one "resnet_stack (11 convs), batch $b" "$TMP/stack-b$b.graph"
  if [[ $RESNET18 == 1 ]]; then
    if "$PY" -c "import torch, onnx" 2>/dev/null; then
      "$PY" "$SRC/tests/data/models/export_torch_models.py" "$TMP" --batch "$b" resnet18 >/dev/null
      bench_one "ResNet-18 (PyTorch export), batch $b" "$TMP/resnet18-b$b.onnx"
    else
      echo "== ResNet-18, batch $b: skipped (python3-torch or python3-onnx not installed)"
    fi
  fi
done
