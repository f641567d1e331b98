#!/usr/bin/env bash
# bench-memory-bound-peers.sh — the memory-bound workloads of #6 side by side
# in one run: passlab (unfused, loop-fused, stitched; bench-memory-bound) and
# its peers (PyTorch eager native and decomposed, torch.compile, JAX jit;
# torch_memory_bound.py) on the same device, each as time and as a share of
# that device's copy bandwidth. Peers that cannot run here are named with the
# reason (this Debian's torch 1.13 has no torch.compile; JAX is not packaged).
#
#   tests/bench/bench-memory-bound-peers.sh [BUILD_DIR] [--device cpu|cuda] [--quick] [--repeat N]
#
# On a machine without a GPU, PASSLAB_CUDA=emulator with --device cuda runs
# passlab's side on the CUDA emulator (results checked, times meaningless)
# and torch's side skips: a check of the harness, not a measurement.
set -euo pipefail

SRC="$(cd "$(dirname "$0")/../.." && pwd)"
BUILD="$SRC/build"
if [[ $# -gt 0 && $1 != --* ]]; then BUILD="$1"; shift; fi
DEVICE=cpu
REPEAT=10
QUICK=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --device) DEVICE="$2"; shift 2 ;;
    --repeat) REPEAT="$2"; shift 2 ;;
    --quick) QUICK=(--quick); shift ;;
    *) echo "bench-memory-bound-peers: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
BENCH="$BUILD/tests/bench/bench-memory-bound"
[[ -x $BENCH ]] || { echo "bench-memory-bound-peers: no $BENCH (build first)" >&2; exit 2; }
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT

echo "== passlab ($DEVICE)"
"$BENCH" --backend "$DEVICE" --repeat "$REPEAT" "${QUICK[@]}" --json "$TMP/passlab.json"
echo
echo "== peers ($DEVICE)"
/usr/bin/python3 "$SRC/tests/bench/torch_memory_bound.py" --device "$DEVICE" --repeat "$REPEAT" "${QUICK[@]}" \
  --json "$TMP/peers.json" || true
echo
/usr/bin/python3 - "$TMP/passlab.json" "$TMP/peers.json" <<'EOF'
import json, os, re, sys
ours = json.load(open(sys.argv[1]))
peers = json.load(open(sys.argv[2])) if os.path.exists(sys.argv[2]) else {"results": [], "not_run": {}}
def key(name):  # the workload's kind: passlab names full shapes, torch the shapes it ran
    return re.sub(r"[ (].*", "", name)
rows, cols = {}, []
def add(kind, col, ms, pct):
    rows.setdefault(kind, {})[col] = (ms, pct)
    if col not in cols:
        cols.append(col)
order = []
for r in ours["results"]:
    k = r["workload"]
    order.append(k) if k not in order else None
    add(k, "passlab " + r["variant"], r["median_ms"], 100 * r["gbps"] / ours["copy_gbps"])
seen = {}
for r in peers["results"]:
    # match the peers' rows to passlab's in order within each kind
    kinds = [k for k in order if key(k) == key(r["workload"])]
    i = seen.get((key(r["workload"]), r["variant"]), 0)
    seen[(key(r["workload"]), r["variant"])] = i + 1
    if i < len(kinds):
        add(kinds[i], "torch " + r["variant"] if r["variant"] != "jax" else "jax jit", r["median_ms"],
            100 * r["gbps"] / peers["copy_gbps"])
print("side by side: median ms (% of the device's copy bandwidth)")
print(f"{'workload':30}" + "".join(f" {c:>20}" for c in cols))
for k in order:
    cells = [rows[k].get(c) for c in cols]
    print(f"{k:30}" + "".join(f" {'-':>20}" if v is None else f" {v[0]:>11.3f} ({v[1]:4.0f}%)" for v in cells))
if ours.get("emulated"):
    print("passlab ran on the CUDA emulator: its errors are real, its times are the CPU's and say nothing about a GPU")
for what, why in peers.get("not_run", {}).items():
    if why:
        print(f"{what}: not run: {why}")
EOF
