#!/bin/bash
# test-cli.sh — exercises every passlab-cli command end to end, on the ONNX
# backend test data, on the sample graphs in data/graphs, and on bad input
# (missing, garbage, empty files), which must give exit status 1 and a
# "passlab-cli: ..." message, never a crash. Speaks TAP.
#
# Usage: test-cli.sh PATH/TO/passlab-cli
set -u

CLI=${1:?usage: test-cli.sh PATH/TO/passlab-cli}
SRC=${PASSLAB_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
NODE=/usr/share/libonnx-testdata/data/node
TMP=$(mktemp -d "${TMPDIR:-/tmp}/passlab-cli-test.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

n=0
failures=0

ok () { n=$((n + 1)); echo "ok $n - $1"; }
not_ok () { n=$((n + 1)); failures=$((failures + 1)); echo "not ok $n - $1"; }
skip () { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }
check () { # check DESC COMMAND...: ok if COMMAND succeeds
  local desc=$1; shift
  if "$@"; then ok "$desc"; else not_ok "$desc"; fi
}

# run ARGS...: runs the CLI, leaving $TMP/out, $TMP/err and $status.
run () {
  "$CLI" "$@" >"$TMP/out" 2>"$TMP/err"
  status=$?
}
# The last run exited with status $1.
status_is () {
  if [ "$status" -ne "$1" ]; then
    echo "# exit status $status, wanted $1; stderr:" ; sed 's/^/#   /' "$TMP/err" | head -20
    return 1
  fi
}
out_has () { grep -qF -- "$1" "$TMP/out" || { echo "# stdout lacks: $1"; sed 's/^/#   /' "$TMP/out" | head -30; return 1; }; }
# out_matches / file_matches: an extended regular expression, the text shown when it fails.
out_matches () { grep -qE -- "$1" "$TMP/out" || { echo "# stdout lacks a match of: $1"; sed 's/^/#   /' "$TMP/out" | head -30; return 1; }; }
file_matches () { grep -qE -- "$2" "$1" || { echo "# $1 lacks a match of: $2"; sed 's/^/#   /' "$1" | head -30; return 1; }; }
err_has () { grep -qF -- "$1" "$TMP/err" || { echo "# stderr lacks: $1"; sed 's/^/#   /' "$TMP/err" | head -10; return 1; }; }
# A clean failure: status 1 and a message, not a signal.
fails_cleanly () { status_is 1 && err_has "passlab-cli: "; }

# --- global -------------------------------------------------------------------
run --version
check "--version" eval 'status_is 0 && out_has "passlab-cli "'
run --help
check "--help lists the commands" eval 'status_is 0 && out_has "info FILE" && out_has "conformance"'
run help
check "help" eval 'status_is 0 && out_has "convert"'
run
check "no command: usage on stderr, exit 1" eval 'status_is 1 && err_has "Usage"'
run frobnicate
check "unknown command" eval 'fails_cleanly && err_has "unknown command"'
for cmd in info print convert exec conformance run passes; do
  run "$cmd" --help
  check "$cmd --help" eval 'status_is 0 && out_has "Usage:"'
done
run help exec
check "help exec" eval 'status_is 0 && out_has "--random-inputs"'
run info --no-such-option x.onnx
check "unknown option" eval 'fails_cleanly && err_has "--help"'

# --- bad input ------------------------------------------------------------------
printf 'this is not a model \x00\x01\x02\xff\xfe' >"$TMP/garbage.onnx"
head -c 4096 /dev/urandom >"$TMP/random.onnx"
printf 'graph g {\n  this is { not valid\n' >"$TMP/garbage.graph"
: >"$TMP/empty.onnx"
for cmd in info print exec; do
  run "$cmd" "$TMP/missing.onnx"
  check "$cmd: missing file" eval 'fails_cleanly && err_has "missing.onnx"'
  for f in garbage.onnx random.onnx garbage.graph empty.onnx; do
    run "$cmd" "$TMP/$f"
    check "$cmd: bad file $f" fails_cleanly
  done
done
run info
check "info without FILE" fails_cleanly
run info "$TMP"
check "info on a directory" fails_cleanly
run convert "$TMP/garbage.onnx" -o "$TMP/x.graph"
check "convert: bad input file" fails_cleanly
run conformance "$TMP/missing-dir"
check "conformance: missing dir" fails_cleanly
run conformance "$TMP"
check "conformance: dir without tests" fails_cleanly

# --- symbolic dims ----------------------------------------------------------------
# x[N, 4] -> Relu -> Neg; with N = 8 each value is 128 bytes and two are
# live at each step.
cat >"$TMP/sym.graph" <<'EOF'
graph sym opset 17 {
  input x: f32[N, 4]
  r = Relu(x)
  y = Neg(r)
  output y
}
EOF
run info --sym-size 8 "$TMP/sym.graph"
check "info: symbolic dims take --sym-size" eval 'status_is 0 && out_has "x: f32[N, 4]" && out_has "peak memory: 256 bytes" && out_has "taken as 8"'
run info "$TMP/sym.graph"
check "info: --sym-size defaults to 1" eval 'status_is 0 && out_has "peak memory: 32 bytes" && out_has "taken as 1"'
run info --sym-size -3 "$TMP/sym.graph"
check "info: negative --sym-size" fails_cleanly
run run "$TMP/sym.graph" --passes simplify --sym-size 0
check "run: --sym-size 0 is refused" eval 'fails_cleanly && err_has "--sym-size"'
run timing "$TMP/sym.graph" --sym-size -3
check "timing: negative --sym-size is refused" eval 'fails_cleanly && err_has "--sym-size"'
run run "$TMP/sym.graph" --passes simplify --check --tolerance nan
check "run: --tolerance nan is refused" eval 'fails_cleanly && err_has "--tolerance"'
run timing "$TMP/sym.graph" --sym-size 9223372036854775807
check "timing: the largest --sym-size counts, saturating" status_is 0
run exec --sym-size 3 "$TMP/sym.graph"
check "exec: random inputs take --sym-size" eval 'status_is 0 && out_has "y: f32[3, 4]"'
run exec "$TMP/sym.graph" --backend cpu --dry-run
check "exec on the cpu: a symbolic dim wants a size" eval 'fails_cleanly && err_has "give the symbolic dims sizes"'
# a shape computed by Shape ops is unknown until simplify folds it
cat >"$TMP/computed.graph" <<'EOF'
graph computed opset 17 {
  input x: f32[2, 6]
  s = Shape(x)
  y = Reshape(x, s)
  output y
}
EOF
run exec "$TMP/computed.graph" --backend cpu --dry-run
check "exec on the cpu: a computed shape points to simplify" eval 'fails_cleanly && err_has "run the simplify pass first"'
run exec "$TMP/computed.graph" --backend cpu --dry-run --passes simplify
check "exec on the cpu: after simplify the computed shape is static" status_is 0

# --- commands on an ONNX test model --------------------------------------------
if [ -f "$NODE/test_abs/model.onnx" ]; then
  M=$NODE/test_abs/model.onnx
  run info "$M"
  check "info on test_abs" eval 'status_is 0 && out_has "nodes: 1" && out_has "Abs" && out_has "inputs: 1" && out_has "peak memory:"'
  run print "$M"
  check "print test_abs" eval 'status_is 0 && out_has "Abs"'
  cp "$TMP/out" "$TMP/abs.printed"

  run convert "$M" -o "$TMP/abs.graph"
  check "convert to .graph" eval 'status_is 0 && [ -s "$TMP/abs.graph" ]'
  run print "$TMP/abs.graph"
  check "the .graph prints as the .onnx does" eval 'status_is 0 && cmp -s "$TMP/out" "$TMP/abs.printed"'
  run convert "$M" -o "$TMP/abs.onnx"
  check "convert to .onnx" eval 'status_is 0 && [ -s "$TMP/abs.onnx" ]'
  run convert "$M" "$TMP/abs.dot"
  check "convert to .dot (OUT as argument)" eval 'status_is 0 && grep -q "^digraph" "$TMP/abs.dot"'
  if command -v dot >/dev/null; then
    check "dot accepts the .dot" dot -Tsvg -o /dev/null "$TMP/abs.dot"
  else
    skip "dot accepts the .dot" "graphviz not installed"
  fi
  run convert "$M" -o "$TMP/abs.png"
  check "convert: unknown output format" eval 'fails_cleanly && err_has ".png"'
  run convert "$M"
  check "convert without OUT" fails_cleanly

  # exec: given inputs, saved outputs, compared with the expected output.
  D=$NODE/test_abs/test_data_set_0
  run exec "$M" --inputs "$D/input_0.pb" --save-outputs "$TMP/outs"
  check "exec with --inputs and --save-outputs" eval 'status_is 0 && out_has "min=" && [ -s "$TMP/outs/output_0.pb" ]'
  if /usr/bin/python3 -c 'import onnx, numpy' 2>/dev/null; then
    check "exec's output equals the expected output" /usr/bin/python3 - "$TMP/outs/output_0.pb" "$D/output_0.pb" <<'EOF'
import sys, onnx, numpy
from onnx import numpy_helper
def load(p):
    t = onnx.TensorProto(); t.ParseFromString(open(p, 'rb').read()); return numpy_helper.to_array(t)
a, b = load(sys.argv[1]), load(sys.argv[2])
sys.exit(0 if a.shape == b.shape and numpy.allclose(a, b, rtol=1e-6, atol=0) else 1)
EOF
  else
    skip "exec's output equals the expected output" "python3 onnx missing"
  fi
  run exec "$M" "$D/input_0.pb"
  check "exec with the input as an argument" status_is 0
  run exec "$M" --random-inputs 7
  cp "$TMP/out" "$TMP/seed7"
  run exec "$M" --random-inputs 7
  check "exec: same seed, same outputs" eval 'status_is 0 && diff <(grep -v "^ran " "$TMP/out") <(grep -v "^ran " "$TMP/seed7") >/dev/null'
  run exec "$M" --random-inputs 8
  check "exec: other seed, other outputs" eval 'status_is 0 && ! diff <(grep -v "^ran " "$TMP/out") <(grep -v "^ran " "$TMP/seed7") >/dev/null'
  run exec "$M" --inputs "$D/input_0.pb" --inputs "$D/input_0.pb"
  check "exec: too many inputs" eval 'fails_cleanly && err_has "1 input"'
  run exec "$M" --inputs "$TMP/garbage.onnx"
  check "exec: garbage input tensor" fails_cleanly
  run exec "$M" --inputs "$TMP/missing.pb"
  check "exec: missing input tensor" fails_cleanly
  run exec "$M" --save-outputs /proc/passlab-cannot-write
  check "exec: unwritable --save-outputs" fails_cleanly
else
  skip "commands on test_abs" "libonnx-testdata not installed"
fi

# --- conformance -------------------------------------------------------------------
if [ -d "$NODE/test_abs" ] && [ -d "$NODE/test_add" ] && [ -d "$NODE/test_relu" ]; then
  mkdir -p "$TMP/suite"
  for t in test_relu test_abs test_add; do ln -s "$NODE/$t" "$TMP/suite/$t"; done
  # A broken test: garbage model, no data. Must FAIL, not stop the run.
  mkdir -p "$TMP/suite/test_broken"
  cp "$TMP/garbage.onnx" "$TMP/suite/test_broken/model.onnx"

  run conformance "$NODE/test_abs"
  check "conformance on one test folder" eval 'status_is 0 && out_has "PASS test_abs" && out_has "1 passed, 0 failed, 0 skipped"'
  run conformance "$TMP/suite"
  check "conformance on a folder of tests, sorted" eval 'status_is 0 && [ "$(grep -E "^(PASS|FAIL|SKIP) " "$TMP/out" | cut -d" " -f2 | tr -d : | tr "\n" " ")" = "test_abs test_add test_broken test_relu " ]'
  check "a broken test is a FAIL line" eval 'out_has "FAIL test_broken: " && out_has "3 passed, 1 failed, 0 skipped"'
  run conformance --quiet "$TMP/suite"
  check "--quiet prints only failures" eval 'status_is 0 && ! grep -q "^PASS" "$TMP/out" && out_has "FAIL test_broken"'

  printf '# expected\ntest_abs\n  test_add   # with a comment\n\n' >"$TMP/expect"
  run conformance --expect "$TMP/expect" "$TMP/suite"
  check "--expect: all listed tests pass" status_is 0
  printf 'test_abs\ntest_broken\ntest_not_there\n' >"$TMP/expect-bad"
  run conformance --expect "$TMP/expect-bad" "$TMP/suite"
  check "--expect: a listed test fails" eval 'status_is 1 && err_has "test_broken" && err_has "test_not_there (not run)"'
  run conformance --expect "$TMP/missing-list" "$TMP/suite"
  check "--expect: missing list" fails_cleanly
  run conformance --write-expect "$TMP/written" "$TMP/suite"
  check "--write-expect lists the passing tests" eval 'status_is 0 && [ "$(grep -v "^#" "$TMP/written" | tr "\n" " ")" = "test_abs test_add test_relu " ]'
  run conformance --timeout 0 "$TMP/suite"
  check "--timeout 0 is refused" fails_cleanly
  run conformance --backend cpu --passes fuse-loops --cache-dir "$TMP/kc" "$TMP/suite"
  check "conformance on the cpu backend, after passes" eval 'status_is 0 && out_has "on cpu after fuse-loops" && out_has "3 of the passed tests ran generated or library kernels" && out_has "3 passed, 1 failed, 0 skipped"'
  if [ -d "$NODE/test_reflect_pad" ]; then
    # its pads are an input: the reference implementation, unless bound as a constant
    run conformance --backend cpu --passes fuse-loops --cache-dir "$TMP/kc" "$NODE/test_reflect_pad"
    check "conformance: a Pad whose pads are an input runs as the reference" eval 'status_is 0 && out_has "PASS test_reflect_pad (all fallback)"'
    run conformance --backend cpu --passes fuse-loops --cache-dir "$TMP/kc" --int-inputs-as-constants "$NODE/test_reflect_pad"
    check "conformance --int-inputs-as-constants: the same Pad generated" eval 'status_is 0 && out_has "integer inputs as constants" && out_has "1 of the passed tests ran generated or library kernels" && ! out_has "all fallback"'
    printf 'test_reflect_pad\n' >"$TMP/expect-generated"
    run conformance --backend cpu --passes fuse-loops --cache-dir "$TMP/kc" --expect-generated "$TMP/expect-generated" "$NODE/test_reflect_pad"
    check "--expect-generated: a test that ran the reference fallback fails it" eval 'status_is 1 && err_has "test_reflect_pad (a kernel ran the reference fallback)"'
    run conformance --backend cpu --passes fuse-loops --cache-dir "$TMP/kc" --int-inputs-as-constants \
      --expect-generated "$TMP/expect-generated" --write-expect-generated "$TMP/written-generated" "$NODE/test_reflect_pad"
    check "--expect-generated: all kernels generated" eval 'status_is 0 && grep -qx test_reflect_pad "$TMP/written-generated"'
    run conformance --expect-generated "$TMP/expect-generated" "$NODE/test_reflect_pad"
    check "--expect-generated without a backend is refused" eval 'fails_cleanly && err_has "expect-generated"'
  fi
  run conformance --int-inputs-as-constants "$TMP/suite"
  check "--int-inputs-as-constants without a backend or passes is refused" eval 'fails_cleanly && err_has "int-inputs-as-constants"'
  run conformance --backend tpu "$TMP/suite"
  check "conformance --backend: an unknown backend fails cleanly" eval 'fails_cleanly && err_has "tpu"'
  run conformance --backend cpu --passes no-such-pass --cache-dir "$TMP/kc" "$NODE/test_abs"
  check "conformance --passes: a bad pipeline is refused before any test runs" eval 'fails_cleanly && err_has "no-such-pass"'
else
  skip "conformance" "libonnx-testdata not installed"
fi

# A crash or a hang in a test must be a FAIL line, and the run goes on. A
# preloaded shim replaces pl_conformance_run_dir for folders named
# test_crash* / test_hang*, and calls the real one for the others. The
# timeout leaves the real tests room on a busy machine.
if [ -d "$TMP/suite" ] && command -v cc >/dev/null; then
  cat >"$TMP/shim.c" <<'EOF'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>
void pl_conformance_run_dir (const char *dir, void *result);
void pl_conformance_run_dir (const char *dir, void *result)
{
  if (strstr (dir, "test_crash") != NULL)
    raise (SIGSEGV);
  if (strstr (dir, "test_hang") != NULL)
    for (;;)
      pause ();
  void (*real) (const char *, void *) =
    (void (*) (const char *, void *)) dlsym (RTLD_NEXT, "pl_conformance_run_dir");
  real (dir, result);
}
EOF
  # A sanitizer runtime must come first in the library list, so a preloaded
  # shim cannot be combined with a sanitizer build of the CLI.
  if ldd "$CLI" 2>/dev/null | grep -q 'lib[at]san'; then
    skip "crash and hang handling" "sanitizer build: LD_PRELOAD shims do not load"
  elif cc -shared -fPIC -o "$TMP/shim.so" "$TMP/shim.c" -ldl 2>"$TMP/cc.err"; then
    for t in test_crash test_hang; do
      mkdir -p "$TMP/suite/$t"
      cp "$TMP/garbage.onnx" "$TMP/suite/$t/model.onnx"
    done
    LD_PRELOAD="$TMP/shim.so" "$CLI" conformance --timeout 3 "$TMP/suite" >"$TMP/out" 2>"$TMP/err"
    status=$?
    check "a crashing test is reported, the run goes on" eval 'status_is 0 && out_has "FAIL test_crash: crashed: signal 11" && out_has "PASS test_relu"'
    check "a hanging test times out" eval 'out_has "FAIL test_hang: timed out" && out_has "3 passed, 3 failed, 0 skipped"'
  else
    skip "crash and hang handling" "cannot build the preload shim"
  fi
else
  skip "crash and hang handling" "no test suite or no C compiler"
fi

# --- the sample graphs ---------------------------------------------------------------
shopt -s nullglob
samples=("$SRC"/data/graphs/*.graph)
if [ ${#samples[@]} -eq 0 ]; then
  skip "sample graphs" "no data/graphs/*.graph"
fi
for f in "${samples[@]}"; do
  name=$(basename "$f")
  run info --sym-size 2 "$f"
  check "info $name" eval 'status_is 0 && out_has "peak memory:"'
  run print "$f"
  check "print $name" eval 'status_is 0 && [ -s "$TMP/out" ]'
  run exec "$f" --random-inputs 1 --sym-size 2
  check "exec $name" status_is 0
  run convert "$f" -o "$TMP/sample.dot"
  check "convert $name to .dot" status_is 0
done

# --- passes, Lua and the fuzzer ------------------------------------------------------
run run "$SRC/data/graphs/layer_norm.graph" --passes simplify,decompose,fuse-loops --check --report "$TMP/report.json"
check "run a checked pipeline with a JSON report" eval 'status_is 0 && grep -q "\"pass\":\"fuse-loops\"" "$TMP/report.json"'
run run "$SRC/data/graphs/resnet_block.graph" --passes "simplify,layout{cost=analytic force=NHWC},fuse-library"
check "parameters in the pipeline text: PASS{key=value ...}" eval 'status_is 0 && out_has "best single layout" && out_has "plan/best = 1.0"'
run run "$SRC/data/graphs/resnet_block.graph" --passes "layout{force=NWHC}"
check "a bad parameter in the pipeline text says which" eval 'fails_cleanly && err_has "layout.force"'
run run "$SRC/data/graphs/layer_norm.graph" --passes simplify,no-such-pass
check "run names an unknown pass" eval 'status_is 1 && err_has "unknown pass"'
run run "$SRC/data/graphs/layer_norm.graph" --script "$SRC/data/pipelines/default.lua" --check
check "run --script with the default pipeline" status_is 0
run lua "$SRC/data/pipelines/fold_identities.lua"
check "lua runs a custom-pass sample" status_is 0
printf 'while true do end\n' > "$TMP/forever.lua"
run lua --timeout 0.2 "$TMP/forever.lua"
check "lua --timeout stops an endless loop" eval 'status_is 1 && err_has "time limit"'
printf 'print (6 * 7)\n' > "$TMP/quick.lua"
run lua --timeout 1e300 "$TMP/quick.lua"
check "lua --timeout 1e300 is no limit, not one already passed" eval 'status_is 0 && out_has 42'
run lua --timeout nan "$TMP/quick.lua"
check "lua --timeout nan is refused" eval 'fails_cleanly && err_has "--timeout"'
run lua --memory-limit 99999999999999 "$TMP/quick.lua"
check "lua --memory-limit past 2^40 MB is refused" eval 'fails_cleanly && err_has "--memory-limit"'
run fuzz --graphs 20 --seed 7 --out "$TMP" --quiet
check "fuzz 20 graphs through every pass" eval 'status_is 0 && out_has "20 passed, 0 failed"'
run fuzz --graphs 4 --seed 11 --passes simplify,fuse-loops --backend cpu --cache-dir "$TMP/kc" --out "$TMP"
check "fuzz with a backend stage: the fused graphs on the cpu agree with the reference" eval 'status_is 0 && out_has "then on the backend cpu" && out_has "4 passed, 0 failed"'
run fuzz --graphs 1 --backend tpu
check "fuzz --backend: an unknown backend fails cleanly" eval 'fails_cleanly && err_has "tpu"'

# --- backends -------------------------------------------------------------------------
LN="$SRC/data/graphs/layer_norm.graph"
run exec "$LN" --backend cpu --passes simplify,decompose,stitch --cache-dir "$TMP/kc" --trace "$TMP/trace.json"
check "exec on the cpu backend prints per-kernel totals and a trace" eval 'status_is 0 && out_has "total" && grep -q traceEvents "$TMP/trace.json"'
run bench "$LN" --backend cpu --repeat 1 --cache-dir "$TMP/kc"
check "bench unfused / loops / stitch" status_is 0
RS="$SRC/data/graphs/resnet_stack.graph"
run bench "$RS" --backend cpu --variants fused,nhwc,layout --repeat 1 --rounds 2 --cache-dir "$TMP/kc" \
  --param "layout.cost=analytic" --param "layout.table=$SRC/tests/data/layout/resnet_stack-cpu.costs"
check "bench: layout plans end to end, checked against the reference" eval 'status_is 0 && out_has "2 round" && [ "$(grep -cE "^(fused|nhwc|layout) .*e-0[5-9]" "$TMP/out")" = 3 ]'
check "bench: rounds paired, the plan against each variant with a sign test" \
  eval 'out_has "paired rounds, layout against" && [ "$(grep -cE "^  vs (fused|nhwc) +layout faster in [0-2] of 2 rounds, ratio median .* sign test p = " "$TMP/out")" = 2 ]'
run bench "$RS" --backend cpu --variants nhwc,layout,fused --repeat 1 --rounds 3 --cache-dir "$TMP/kc" --paired fused \
  --param "layout.force=NHWC" --report "$TMP/bench.json"
check "bench: an identical plan is named so, --paired picks the reference, rounds and their steal time in the JSON" \
  eval 'status_is 0 && out_matches "^layout .*the same graph as nhwc$" && out_has "vs nhwc     fused faster" \
        && file_matches "$TMP/bench.json" "\"same_graph_as\": \"nhwc\"" \
        && file_matches "$TMP/bench.json" "\"round_ms\": \[[0-9.e+-]+, [0-9.e+-]+, [0-9.e+-]+\]" \
        && file_matches "$TMP/bench.json" "\"round_steal_ms\": \[-?[0-9]+, -?[0-9]+, -?[0-9]+\]" \
        && file_matches "$TMP/bench.json" "\"round_others_ms\": \[-?[0-9]+, -?[0-9]+, -?[0-9]+\]"'
# A real CNN with depthwise convolutions (MobileNetV2 from PyTorch, batch
# statistics gathered so that no layer's output vanishes): each plan matches
# the reference, and not trivially (an error of exactly 0 would mean the
# logits were the fc bias alone).
if /usr/bin/python3 -c 'import torch, onnx' 2>/dev/null \
   && /usr/bin/python3 "$SRC/tests/data/models/export_torch_models.py" "$TMP" --batch 1 mobilenet_v2 >/dev/null 2>&1; then
  run bench "$TMP/mobilenet_v2-b1.onnx" --backend cpu --variants fused,nhwc,layout --repeat 1 --cache-dir "$TMP/kc" \
    --param "layout.cost=analytic"
  check "bench: MobileNetV2 (PyTorch export) fused, in NHWC and as planned, each matching the reference" \
    eval 'status_is 0 && [ "$(grep -cE "^(fused|nhwc|layout) .* [1-9][0-9.]*e-0[5-9]$" "$TMP/out")" = 3 ]'
else
  skip "bench: MobileNetV2 (PyTorch export) fused, in NHWC and as planned, each matching the reference" "python3-torch missing"
fi
run bench "$RS" --backend cpu --variants nhwc --repeat 1 --rounds 2 --cache-dir "$TMP/kc" --paired layout
check "bench: --paired names a variant that did not run" eval 'fails_cleanly && err_has "--paired"'
# Swap (seed 004) on a conv training step: at a 50% budget the measured device
# memory, im2col workspace included, fits the budget the runtime enforces
# (the pass counts the workspace the runtime reports at each convolution);
# without the swap pass the same budget is refused with the advice to swap.
RT="$SRC/data/graphs/resnet_train.graph"
run exec "$RT" --backend cpu --passes grad --dry-run
ws=$(sed -nE 's/.*kernel workspace ([0-9]+) bytes.*/\1/p' "$TMP/out")
check "exec --dry-run: the memory plan with the kernel workspace" eval 'status_is 0 && [ "${ws:-0}" -gt 0 ]'
run exec "$RT" --backend cpu --cache-dir "$TMP/kc" --passes grad,swap --param swap.budget=50% --param "swap.workspace=$ws" \
  --device-budget 3212822
check "exec: resnet training step swapped to 50% runs within that budget" eval 'status_is 0 && out_has "budget 3.1 MiB" && out_has "swap copies"'
arena=$(sed -nE 's/^memory: .*\(arena ([^,]+),.*/\1/p' "$TMP/out")
run exec "$RT" --backend cpu --passes grad,swap --param swap.budget=50% --param "swap.workspace=$ws" --device-budget 3212822 \
  --dry-run
check "exec --dry-run: the same memory plan as the run, nothing compiled" eval 'status_is 0 && out_has "memory plan: arena " && out_has "($arena), device peak" && out_has "budget 3212822 bytes (3.1 MiB): fits"'
run exec "$RT" --backend cpu --cache-dir "$TMP/kc" --passes grad --device-budget 3212822
check "exec: the unswapped step is refused under that budget" eval 'status_is 1 && err_has "run the swap pass with --param swap.budget=3212822 --param swap.workspace=$ws"'
for bad in nan inf 1e400 9e18TiB 0 -3MiB 3XB; do
  run exec "$RT" --backend cpu --passes grad --device-budget "$bad" --dry-run
  check "exec --device-budget $bad is refused" eval 'fails_cleanly && err_has "device-budget"'
done
run exec "$RT" --backend cpu --passes grad --device-budget 1TiB --dry-run
check "exec --device-budget takes TiB" eval 'status_is 0 && out_has "budget 1099511627776 bytes"'
run exec "$RT" --backend cpu --threads 100000
check "exec --threads beyond 1024 is refused" eval 'fails_cleanly && err_has "--threads takes 0"'
run exec "$RT" --backend cpu --passes grad --device-budget 3212822 --dry-run
check "exec --dry-run: refused alike" eval 'status_is 1 && err_has "run the swap pass"'
# In-place sharing: residual = Add(bn2, x) writes over bn2, which it reads
# last, so no step holds three activations any more; the floor no plan goes
# below is the weight gradient's convolution (two activations and its 144 KiB).
run run "$RT" --passes grad,swap --param swap.budget=1KiB
check "swap: the floor is two activations, not residual's three" \
  eval 'status_is 0 && out_has "NOT met" && out_has "the floor is 1.7 MiB: what '"'"'conv2.bw_3'"'"' alone reads and writes"'
run exec "$RT" --dry-run
check "exec --dry-run needs a backend that plans memory" eval 'fails_cleanly && err_has "--backend cpu or cuda"'
# The ResNet stack's training step at batch 16 under 39 MiB: the pass
# splits the restorations that wait across the steps where its plan peaks
# (42.9 MiB without), and the runtime packs the arena within the planned
# peak (45.0 MiB first fit, 49.0 MiB by size with longest lifetimes first).
sed -E "s/f32\[1, /f32[16, /g; s/i64\[1\]/i64[16]/" "$SRC/data/graphs/resnet_stack_train.graph" > "$TMP/stack16.graph"
run run "$TMP/stack16.graph" --passes grad,swap --param swap.budget=39MiB
check "swap: the ResNet stack's training step at batch 16 meets 39 MiB" eval 'status_is 0 && out_has "budget 39.0 MiB: met" && out_has "restorations split at the"'
run exec "$TMP/stack16.graph" --backend cpu --passes grad,swap --param swap.budget=39MiB --device-budget 39MiB --dry-run
check "exec --dry-run: ... and its arena fits 39 MiB too" eval 'status_is 0 && out_has "budget 40894464 bytes (39.0 MiB): fits"'
run exec "$RT" --backend cpu --cache-dir "$TMP/kc" --passes grad --repeat 1
check "exec: the arena packs within 5% of the peak (greedy by size)" eval 'status_is 0 && awk "/^memory:/ { exit !(\$7 <= 1.05 * \$4 && \$5 \",\" == \$8) }" "$TMP/out"'
check "exec: elementwise kernels write over inputs they read last" eval 'status_is 0 && out_has "Add — in place over bn2"'
run exec "$SRC/data/graphs/resnet_block.graph" --backend cpu --cache-dir "$TMP/kc" --predicted \
  --passes layout,fuse-library --param layout.cost=analytic --param "layout.table=$SRC/tests/data/layout/resnet_stack-cpu.costs"
check "exec --predicted: the cost model per layer against the run" eval 'status_is 0 && out_has "predicted ms" && out_has "2 layers: predicted" && out_has " direct "'
run bench "$RS" --variants layout --param "layout.cost=nonsense"
check "bench: a bad pass parameter fails cleanly" eval 'status_is 1 && err_has "cost"'
run bench "$LN" --backend cpu --threads 100000 --repeat 1 --cache-dir "$TMP/kc"
check "bench: absurd --threads is refused, not a crash in OpenMP" eval 'fails_cleanly && err_has "--threads"'
run exec "$LN" --backend cuda --show-source fusion_0 --passes simplify,decompose,stitch
check "CUDA source is viewable without a GPU" eval 'status_is 0 && out_has "__global__"'
if ! ls /dev/nvidia0 >/dev/null 2>&1; then
  run exec "$LN" --backend cuda
  check "exec --backend cuda without a GPU fails cleanly" eval 'status_is 1 && err_has "not available"'
fi
# The CUDA emulator: the CUDA backend's real path on the CPU, compared with the reference
PASSLAB_CUDA=emulator run bench "$LN" --backend cuda --variants none,stitch --repeat 1
check "bench on the CUDA emulator: results agree, the times are flagged" eval 'status_is 0 && out_has "CUDA emulator here" && awk "/^(none|stitch) / { n++; if (\$NF + 0 > 1e-4) bad = 1 } END { exit !(n == 2 && !bad) }" "$TMP/out"'
PASSLAB_CUDA=emulator PASSLAB_CXX=no-such-c++ run exec "$LN" --backend cuda
check "the emulator without a C++ compiler fails cleanly" eval 'fails_cleanly && err_has "no C++ compiler"'

# --- a transformer exported from PyTorch, against PyTorch's own output ----------
# tests/data/models/export_tiny_transformer.py wrote the model and the data.
TT=$SRC/tests/data/models/tiny_transformer
FUSE=simplify,decompose,reshape-sink,fuse-library,fuse-loops
run conformance "$TT"
check "tiny transformer: the reference agrees with PyTorch" eval 'status_is 0 && out_has "1 passed, 0 failed"'
run conformance --backend cpu --passes "$FUSE" --cache-dir "$TMP/kc" "$TT"
check "tiny transformer: the cpu after the fusion passes agrees with PyTorch" \
  eval 'status_is 0 && out_has "1 passed, 0 failed" && out_has "1 of the passed tests ran generated or library kernels"'
PASSLAB_CUDA=emulator run conformance --backend cuda --passes simplify,decompose,fuse-library,stitch "$TT"
check "tiny transformer: emulated cuda after stitching agrees with PyTorch" eval 'status_is 0 && out_has "1 passed, 0 failed"'
# the attention's input projection, x[16, 1, 32] by W[32, 96], runs as one GEMM of 16 rows
run exec "$TT/model.onnx" --backend cpu --passes "$FUSE" --cache-dir "$TMP/kc"
check "tiny transformer: batched projections by a shared weight are one GEMM" \
  eval 'status_is 0 && out_has "gemm 16x96x32" && ! out_has "gemm 16 x 1x96x32"'

# --- tune: the direct conv's tile, full vs pebble-pruned search -------------------------
RB="$SRC/data/graphs/resnet_block.graph"
run tune "$RB" --node conv1 --layout NHWC --trials 3 --repeat 1 --cache-dir "$TMP/kc" --json "$TMP/tune.json"
check "tune a conv: pebble tile, both searches, JSON" eval 'status_is 0 && out_has "pebble tile" && out_has "head to head (median of 7 rounds)" && out_has "pruned best runs at" && out_has "of the FMA peak" && out_has "FMA peak of this cpu" && grep -q "\"head_to_head\":" "$TMP/tune.json" && grep -q "\"pruned_space\":" "$TMP/tune.json"'
run tune "$RB" --layout NHWC --trials 2 --repeat 1 --rounds 1 --cache-dir "$TMP/kc"
check "tune every conv: a summary line per conv and the totals" \
  eval 'status_is 0 && [ "$(grep -cE "^ +conv[0-9a-z_]* +[0-9]+ +[0-9.]+% +[0-9]+ of [0-9]+ +[0-9]+ of [0-9]+ +[0-9]+%$" "$TMP/out")" -ge 2 ] && out_has "the pruned searches ran"'
run tune "$RB" --node bn1
check "tune names a node that is not a Conv" eval 'fails_cleanly && err_has "not a Conv"'
run tune "$RB" --node no_such_node
check "tune names a missing node" eval 'fails_cleanly && err_has "no node named"'
run tune "$RB" --layout NWHC
check "tune rejects an unknown layout" eval 'fails_cleanly && err_has "unknown layout"'
run tune "$SRC/data/graphs/layer_norm.graph"
check "tune a graph without a Conv" eval 'fails_cleanly && err_has "no Conv"'
cat > "$TMP/dynamic_conv.graph" <<'EOF'
graph dynamic_conv opset 17 {
  input x: f32[N, 8, 14, 14]
  const w: f32[16, 8, 3, 3] = random(seed=1, lo=-1, hi=1)
  y = Conv(x, w) {pads=[1, 1, 1, 1]}
  output y
}
EOF
run tune "$TMP/dynamic_conv.graph" --all
check "tune a conv with dynamic shapes fails cleanly" eval 'fails_cleanly && err_has "static shapes"'

echo "1..$n"
[ "$failures" -eq 0 ]
