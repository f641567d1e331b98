#!/usr/bin/python3
"""PyTorch CPU peers of bench-memory-bound.c: the same workloads and shapes
(layer norm and softmax on [8192, 4096] and [65536, 256], group norm on
[32, 64, 56, 56] with 32 groups, bias + tanh-GELU on [8192, 4096]), f32, as
PyTorch's native fused ops ("native") and as the primitive ops the passlab
graphs are written in ("decomposed", one ATen kernel per op). Times are the
median of --repeat runs after a warm-up; GB/s counts the inputs, parameters
and outputs once, as passlab's bench does.

    /usr/bin/python3 tests/bench/torch_memory_bound.py [--repeat N] [--threads N] [--quick] [--json OUT]

Skips (exit 0) when torch cannot be imported."""
import argparse
import json
import os
import statistics
import sys
import time

try:
    import torch
    import torch.nn.functional as F
except Exception as e:  # pragma: no cover - depends on the machine
    print(f"torch_memory_bound: skipped (cannot import torch: {e})")
    sys.exit(0)


def bench(fn, repeat):
    fn()  # warm-up
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times), min(times)


def copy_gbps():
    a = torch.ones(128 << 20, dtype=torch.float32)  # 512 MiB
    b = torch.empty_like(a)
    best = min(bench_once(lambda: b.copy_(a)) for _ in range(5))
    return 2 * a.numel() * 4 / best / 1e9


def bench_once(fn):
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def workloads(q):
    g = torch.Generator().manual_seed(1)

    def rand(*shape, lo=-1.0, hi=1.0):
        return torch.rand(*shape, generator=g) * (hi - lo) + lo

    out = []
    for rows, cols in ((8192 // q, 4096), (65536 // q, 256)):
        x, w, b = rand(rows, cols), rand(cols, lo=0.5, hi=1.5), rand(cols, lo=-0.5, hi=0.5)

        def ln_dec(x=x, w=w, b=b):
            mean = x.mean(-1, keepdim=True)
            d = x - mean
            var = d.pow(2).mean(-1, keepdim=True)
            return d / torch.sqrt(var + 1e-5) * w + b

        nbytes = (2 * x.numel() + 2 * cols) * 4
        out.append((f"layer_norm {rows}x{cols}", nbytes,
                    {"native": lambda x=x, w=w, b=b: F.layer_norm(x, (x.shape[-1],), w, b, 1e-5),
                     "decomposed": ln_dec}))

    for rows, cols in ((8192 // q, 4096), (65536 // q, 256)):
        x = rand(rows, cols)

        def sm_dec(x=x):
            e = torch.exp(x - x.amax(-1, keepdim=True))
            return e / e.sum(-1, keepdim=True)

        out.append((f"softmax {rows}x{cols}", 2 * x.numel() * 4,
                    {"native": lambda x=x: torch.softmax(x, -1), "decomposed": sm_dec}))

    n = 32 // (8 if q > 1 else 1)
    x = rand(n, 64, 56, 56)
    gamma, beta = rand(64, lo=0.5, hi=1.5), rand(64, lo=-0.5, hi=0.5)

    def gn_dec(x=x):
        grouped = x.reshape(n, 32, -1)
        mean = grouped.mean(2, keepdim=True)
        c = grouped - mean
        var = (c * c).mean(2, keepdim=True)
        y = (c / torch.sqrt(var + 1e-5)).reshape(x.shape)
        return y * gamma.reshape(64, 1, 1) + beta.reshape(64, 1, 1)

    out.append(("group_norm 32x64x56x56 (G=32)", (2 * x.numel() + 128) * 4,
                {"native": lambda x=x: F.group_norm(x, 32, gamma, beta, 1e-5), "decomposed": gn_dec}))

    rows, cols = 8192 // q, 4096
    x, b = rand(rows, cols), rand(cols, lo=-0.1, hi=0.1)

    def gelu_dec(x=x, b=b):
        h = x + b
        inner = (h + torch.pow(h, 3.0) * 0.044715) * 0.7978846
        return h * 0.5 * (torch.tanh(inner) + 1.0)

    out.append((f"bias+gelu {rows}x{cols}", (2 * x.numel() + cols) * 4,
                {"native": lambda x=x, b=b: F.gelu(x + b, approximate="tanh"), "decomposed": gelu_dec}))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--quick", action="store_true", help="shapes 16x smaller")
    ap.add_argument("--json")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    bw = copy_gbps()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; copy bandwidth (read + write, 512 MiB): "
          f"{bw:.2f} GB/s; median of {args.repeat} runs\n")
    print(f"{'workload':30} {'variant':10} {'median ms':>10} {'min ms':>10} {'GB/s':>8} {'% copy':>7}")
    results = []
    with torch.no_grad():
        for name, nbytes, fns in workloads(16 if args.quick else 1):
            for variant, fn in fns.items():
                med, mn = bench(fn, args.repeat)
                gbps = nbytes / (med * 1e6)
                print(f"{name:30} {variant:10} {med:10.3f} {mn:10.3f} {gbps:8.2f} {100 * gbps / bw:6.1f}%")
                results.append({"workload": name, "variant": variant, "median_ms": med, "min_ms": mn,
                                "gbps": gbps})
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"copy_gbps": bw, "threads": torch.get_num_threads(), "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
