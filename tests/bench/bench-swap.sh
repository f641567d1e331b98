#!/usr/bin/env bash
# bench-swap.sh — issue #8's measurement (seed 004, DESIGN.md §1.5): under a
# fixed device budget, the largest batch of a training step that runs
# without the swap pass and with it, and what swapping costs there.
#
# Per graph (its batch dimension rewritten): the largest batch is searched
# with `passlab-cli exec --dry-run` (the runtime's own memory plan and
# budget check, nothing compiled), doubling then bisecting. Without swap the
# pipeline is `grad`; with swap it is `grad,swap` with swap.budget = the
# device budget and swap.workspace = the runtime's kernel workspace (im2col,
# packed weights: the graph's memory profile does not know them), and a
# budget less by the arena's fragmentation where the first plan lacks that
# much. Then both batches
# are timed on the cpu backend, each with and without swap (the unswapped
# run of the swapped batch runs with no budget: it does not fit), in
# interleaved rounds (the machine's other load hits both alike; the least
# of the rounds' medians counts): time per training step, overhead (and
# the share of the swapped step spent in copies: on the cpu they are
# synchronous memcpys, so that share is the overhead without the noise),
# the swap copies, the planned peak (the pass's memory profile) and the
# measured device peak (the runtime's arena timeline, workspace included).
#
# Nothing here runs in `make test`. On 2 cores the ResNet stack at batch 17
# takes ~20 s per step: the whole bench runs ~12 minutes.
#
# Usage: tests/bench/bench-swap.sh [BUILD_DIR] [--graphs "resnet_train resnet_stack_train transformer_train"]
#                                  [--budget NAME=BYTES] [--repeat N] [--rounds K] [--max-batch N] [--threads N]
set -euo pipefail

SRC="$(cd "$(dirname "$0")/../.." && pwd)"
BUILD="$SRC/build"
if [[ $# -gt 0 && $1 != --* ]]; then BUILD="$1"; shift; fi
GRAPHS="resnet_train resnet_stack_train transformer_train"
REPEAT=3
ROUNDS=3
MAX_BATCH=64
THREADS=0
declare -A BUDGET=(
  [resnet_train]=$((24 * 1024 * 1024))         # 3 steps unswapped
  [resnet_stack_train]=$((40 * 1024 * 1024))   # 2 steps unswapped
  [transformer_train]=$((8 * 1024 * 1024))
)
while [[ $# -gt 0 ]]; do
  case "$1" in
    --graphs) GRAPHS="$2"; shift 2 ;;
    --budget) BUDGET[${2%%=*}]="${2#*=}"; shift 2 ;;
    --repeat) REPEAT="$2"; shift 2 ;;
    --rounds) ROUNDS="$2"; shift 2 ;;
    --max-batch) MAX_BATCH="$2"; shift 2 ;;
    --threads) THREADS="$2"; shift 2 ;;
    *) echo "bench-swap: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
CLI="$BUILD/app/passlab-cli"
[[ -x $CLI ]] || { echo "bench-swap: no $CLI (build first)" >&2; exit 2; }
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
EXEC=(exec --backend cpu --threads "$THREADS" --cache-dir "$TMP/kernels")

# The training sample NAME at batch B, written to stdout.
graph_at () {
  local name="$1" b="$2"
  case "$name" in
    resnet_train)
      sed -E "s/f32\[1, /f32[$b, /g; s/i64\[1\]/i64[$b]/" "$SRC/data/graphs/resnet_train.graph" ;;
    resnet_stack_train)
      python3 "$SRC/tests/data/models/make_resnet_stack.py" --train --batch "$b" ;;
    transformer_train)
      # 64 positions per sequence; the loss reads the batch's b*64 positions
      sed -E "s/f32\[1, /f32[$b, /g; s/f32\[64, 128\]/f32[$((64 * b)), 128]/; s/i64\[64\]/i64[$((64 * b))]/;
              s/(heads_shape: i64\[4\] = \[)1,/\1$b,/; s/(model_shape: i64\[3\] = \[)1,/\1$b,/;
              s/(tokens_shape: i64\[2\] = \[)64,/\1$((64 * b)),/" "$SRC/data/graphs/transformer_train.graph" ;;
    *) echo "bench-swap: no batch rewrite for '$name'" >&2; exit 2 ;;
  esac
}

file_at () {
  local f="$TMP/$1-b$2.graph"
  [[ -f $f ]] || graph_at "$1" "$2" > "$f"
  echo "$f"
}

# The kernel workspace of NAME at batch B (im2col, packed weights: what a
# convolution needs beside its inputs and outputs), from the runtime's plan.
workspace_of () {
  "$CLI" "${EXEC[@]}" "$(file_at "$1" "$2")" --passes grad --dry-run | sed -nE 's/.*kernel workspace ([0-9]+) bytes.*/\1/p'
}

# SWAP_PARAMS := the swap pass's parameters for NAME at batch B with which
# the runtime's plan fits the device budget: swap.budget = the budget and
# swap.workspace = the kernel workspace, then a budget less by what the
# arena still lacks (its fragmentation), twice at most; empty if none.
# Remembered (call it directly, not in $(...)).
declare -A SWAP_BUDGET=()
find_swap_params () {
  local key="$1-$2" f ws sb out arena tries
  if [[ -z ${SWAP_BUDGET[$key]+set} ]]; then
    f=$(file_at "$1" "$2")
    ws=$(workspace_of "$1" "$2")
    sb=${BUDGET[$1]}
    SWAP_BUDGET[$key]=""
    for tries in 1 2 3; do
      if out=$("$CLI" "${EXEC[@]}" "$f" --passes grad,swap --param "swap.budget=$sb" --param "swap.workspace=$ws" \
               --device-budget "${BUDGET[$1]}" --dry-run 2>&1); then
        SWAP_BUDGET[$key]="--param swap.budget=$sb --param swap.workspace=$ws"
        break
      fi
      arena=$(sed -nE 's/.*\(arena ([0-9]+) bytes.*/\1/p' <<< "$out")
      [[ -n $arena ]] || break
      sb=$((sb - (arena - BUDGET[$1])))
      ((sb > 0)) || break
    done
  fi
  read -r -a SWAP_PARAMS <<< "${SWAP_BUDGET[$key]}"
}

# Whether NAME at batch B fits its budget without ("plain") or with ("swap") the pass.
fits () {
  if [[ $3 == plain ]]; then
    "$CLI" "${EXEC[@]}" "$(file_at "$1" "$2")" --passes grad --device-budget "${BUDGET[$1]}" --dry-run > /dev/null 2>&1
  else
    find_swap_params "$1" "$2"
    ((${#SWAP_PARAMS[@]} > 0))
  fi
}

# LARGEST := the largest batch of NAME that fits (0: none), up to MAX_BATCH:
# doubling, then bisection.
largest () {
  local lo=0 hi=1 mid
  while ((hi <= MAX_BATCH)) && fits "$1" "$hi" "$2"; do lo=$hi; hi=$((hi * 2)); done
  ((hi > MAX_BATCH + 1)) && hi=$((MAX_BATCH + 1))
  while ((hi - lo > 1)); do
    mid=$(((lo + hi) / 2))
    if fits "$1" "$mid" "$2"; then lo=$mid; else hi=$mid; fi
  done
  LARGEST=$lo
}

# Field of the exec output: total ms per run, or a part of the memory line.
ms_of () { sed -nE 's/^total: .*, ([0-9.]+) ms per run.*/\1/p' <<< "$1"; }
peak_of () { sed -nE 's/^memory: device peak ([^(]+) \(arena ([^,]+),.*/\1/p' <<< "$1"; }
copies_of () { sed -nE 's/^memory: .*; ([0-9]+) swap copies, ([^,]+), copy ([0-9.]+) ms.*/\1 copies, \2, \3 ms/p' <<< "$1"; }
copy_ms_of () { sed -nE 's/^memory: .*, copy ([0-9.]+) ms.*/\1/p' <<< "$1"; }

bench_graph () {
  local name="$1" budget="${BUDGET[$1]}"
  local human
  human=$(numfmt --to=iec-i --suffix=B "$budget")
  echo "== $name, device budget $human ($budget bytes), cpu; times: the least of $ROUNDS rounds' medians of $REPEAT runs" \
    "(under 100 ms: 10x the runs, 3x the rounds)"
  local n0 n1
  largest "$name" plain
  n0=$LARGEST
  largest "$name" swap
  n1=$LARGEST
  printf "%-6s %12s %12s %9s %7s  %-34s %-13s %s\n" batch "no swap ms" "swap ms" overhead copies "swap copies" \
    "planned peak" "measured device peak"
  local b
  for b in $(printf "%s\n" "$n0" "$n1" | awk '$1 > 0' | sort -n -u); do
    local f plain swapped planned
    f=$(file_at "$name" "$b")
    find_swap_params "$name" "$b"
    # interleaved rounds: load from elsewhere hits both alike; the fastest
    # round's median counts. Steps under 100 ms: ten times the runs, three
    # times the rounds (bursts of load last seconds).
    local r t0="" t1="" ms rep=$REPEAT rounds=$ROUNDS
    for ((r = 0; r < rounds; r++)); do
      plain=$("$CLI" "${EXEC[@]}" "$f" --passes grad --repeat "$rep" 2>&1) || { echo "$plain" >&2; return 1; }
      swapped=$("$CLI" "${EXEC[@]}" "$f" --passes grad,swap "${SWAP_PARAMS[@]}" --device-budget "$budget" \
        --repeat "$rep" 2>&1) || { echo "$swapped" >&2; return 1; }
      ms=$(ms_of "$plain"); t0=$(awk -v a="${t0:-$ms}" -v b="$ms" 'BEGIN { print (b < a ? b : a) }')
      ms=$(ms_of "$swapped"); t1=$(awk -v a="${t1:-$ms}" -v b="$ms" 'BEGIN { print (b < a ? b : a) }')
      if ((rep == REPEAT)) && awk -v a="$t0" 'BEGIN { exit !(a < 100) }'; then
        rep=$((REPEAT * 10)) rounds=$((ROUNDS * 3)) r=-1 t0="" t1=""
      fi
    done
    planned=$("$CLI" run "$f" --passes grad,swap "${SWAP_PARAMS[@]}" |
      sed -nE 's/.*planned device peak .* -> ([^(]+) \(host.*/\1/p')
    printf "%-6s %12.1f %12.1f %+8.1f%% %6.1f%%  %-34s %-13s %s\n" "$b" "$t0" "$t1" \
      "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print (b - a) / a * 100 }')" \
      "$(awk -v c="$(copy_ms_of "$swapped")" -v b="$t1" 'BEGIN { print c / b * 100 }')" "$(copies_of "$swapped")" \
      "$planned" "$(peak_of "$swapped")"
  done
  local why="" next=$((n1 + 1)) params
  if ((n1 < MAX_BATCH)); then
    # what stops the next batch: the pass's floor (one step's own inputs and
    # outputs), else the runtime's arena (fragmentation)
    params=(--param "swap.budget=$budget" --param "swap.workspace=$(workspace_of "$name" "$next")")
    why=$("$CLI" run "$(file_at "$name" "$next")" --passes grad,swap "${params[@]}" |
      sed -nE 's/.*NOT met, the best plan is (.*)/the pass misses the budget: its best plan is \1/p')
    [[ -n $why ]] || why=$("$CLI" "${EXEC[@]}" "$(file_at "$name" "$next")" --passes grad,swap "${params[@]}" \
      --device-budget "$budget" --dry-run 2>&1 |
      sed -nE 's/^passlab-cli: (.*): run the swap.*/the pass meets the budget, the runtime refuses: \1/p' || true)
  fi
  echo "largest batch under $human: $n0 without swap, $n1 with swap ($(awk -v a="$n0" -v b="$n1" \
    'BEGIN { if (a > 0) printf "%.1fx", b / a; else print "-" }'))"
  [[ -n $why ]] && echo "batch $next with swap: $why"
  echo
}

echo "bench-swap: $(nproc) cores, $(date -u +%FT%TZ)"
for g in $GRAPHS; do
  bench_graph "$g"
done
