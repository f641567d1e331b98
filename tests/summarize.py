#!/usr/bin/env python3
"""Counts test cases across meson's test log and prints the closing line
'N passed, N failed, N skipped'.

Each TAP test program contributes its individual cases ('ok', 'not ok',
'# SKIP'); a program that crashed or printed no TAP counts as one failure
(or one pass / skip, by its meson result). Exit status 1 if anything failed.
Each failed case is printed with the first diagnostic lines after it, so that
a CI log's tail says which check failed and why.
"""
import json
import re
import sys

DIAGNOSTIC_LINES = 8


def failed_cases(out):
    """The 'not ok' lines of a TAP output, each with its first diagnostics."""
    lines, shown = out.splitlines(), []
    for i, line in enumerate(lines):
        if line.startswith("not ok"):
            shown.append("  " + line)
            for diag in lines[i + 1:i + 1 + DIAGNOSTIC_LINES]:
                if not diag.startswith("#"):
                    break
                shown.append("    " + diag)
    return shown


passed = failed = skipped = 0
failures = []
with open(sys.argv[1]) as log:
    for line in log:
        test = json.loads(line)
        out = test.get("stdout") or ""
        cases = re.findall(r"^(not ok|ok)\b[^\n]*", out, re.M)
        p = f = s = 0
        for m in re.finditer(r"^(not ok|ok)\b([^\n]*)", out, re.M):
            if re.search(r"#\s*SKIP", m.group(2), re.I):
                s += 1
            elif m.group(1) == "ok":
                p += 1
            else:
                f += 1
        result = test.get("result")
        if not cases:
            if result == "OK":
                p = 1
            elif result == "SKIP":
                s = 1
            else:
                f = 1
        elif result not in ("OK", "SKIP", "EXPECTEDFAIL") and f == 0:
            f = 1  # it crashed or timed out after its last reported case
        if f:
            failures.append((f"{test['name']} ({result})", failed_cases(out)))
        passed, failed, skipped = passed + p, failed + f, skipped + s

for name, cases in failures:
    print(f"FAILED: {name}")
    for line in cases:
        print(line)
print(f"{passed} passed, {failed} failed, {skipped} skipped")
sys.exit(1 if failed else 0)
