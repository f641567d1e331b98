#!/usr/bin/python3
"""PyTorch (and JAX) peers of bench-memory-bound.c: the same workloads and
shapes (layer norm and softmax on [8192, 4096] and [65536, 256], group norm
on [32, 64, 56, 56] with 32 groups, bias + tanh-GELU on [8192, 4096]), f32,
on the CPU or a CUDA GPU, as
  native      PyTorch's own fused ops (F.layer_norm, softmax, ...), eager;
  decomposed  the primitive ops the passlab graphs are written in, eager
              (one ATen kernel per op);
  compile     the decomposed function through torch.compile (Inductor), when
              this torch has it (2.0 and later);
  jax         the decomposed function in jax.numpy under jax.jit, when JAX
              is installed (on the device asked for).
A variant that cannot run here is listed with the reason. Times are the
median of --repeat runs after warm-ups (compile: after compiling), with the
device synchronized around each run; GB/s counts the inputs, parameters and
outputs once, as passlab's bench does; "% copy" is against a copy of 512 MiB
on the same device (memcpy on the CPU, device to device on the GPU).

    /usr/bin/python3 tests/bench/torch_memory_bound.py [--device cpu|cuda] [--repeat N] [--threads N] [--quick] [--json OUT]

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


DEVICE = "cpu"


def sync():
    if DEVICE == "cuda":
        torch.cuda.synchronize()


def bench_once(fn):
    sync()
    t = time.perf_counter()
    out = fn()
    if hasattr(out, "block_until_ready"):  # JAX dispatches asynchronously
        out.block_until_ready()
    sync()
    return time.perf_counter() - t


def bench(fn, repeat):
    for _ in range(2):  # warm-up (and compilation)
        bench_once(fn)
    times = [bench_once(fn) * 1e3 for _ in range(repeat)]
    return statistics.median(times), min(times)


def copy_gbps():
    a = torch.ones(128 << 20, dtype=torch.float32, device=DEVICE)  # 512 MiB
    b = torch.empty_like(a)
    best = min(bench_once(lambda: b.copy_(a)) for _ in range(6))
    return 2 * a.numel() * 4 / best / 1e9


def compiler():
    """torch.compile, or why not."""
    if not hasattr(torch, "compile"):
        return None, f"torch {torch.__version__} has no torch.compile (2.0 and later)"
    return torch.compile, None


def jax_jit():
    """(jax.numpy, jax.jit, device) or why not."""
    try:
        import jax
        import jax.numpy as jnp
    except Exception as e:  # pragma: no cover - depends on the machine
        return None, f"cannot import jax ({e.__class__.__name__})"
    platform = "gpu" if DEVICE == "cuda" else "cpu"
    try:
        dev = jax.devices(platform)[0]
    except Exception as e:  # pragma: no cover
        return None, f"jax has no {platform} device ({e})"
    return (jnp, jax.jit, dev), None


def workloads(q):
    """(name, bytes moved, args, native(*args), decomposed(*args), jax_decomposed(jnp, *args))."""
    g = torch.Generator().manual_seed(1)

    def rand(*shape, lo=-1.0, hi=1.0):
        return (torch.rand(*shape, generator=g) * (hi - lo) + lo).to(DEVICE)

    def ln_dec(x, w, b):
        mean = x.mean(-1, keepdim=True)
        d = x - mean
        var = d.pow(2).mean(-1, keepdim=True)
        return d / torch.sqrt(var + 1e-5) * w + b

    def ln_jax(jnp, x, w, b):
        d = x - x.mean(-1, keepdims=True)
        return d / jnp.sqrt((d ** 2).mean(-1, keepdims=True) + 1e-5) * w + b

    def sm_dec(x):
        e = torch.exp(x - x.amax(-1, keepdim=True))
        return e / e.sum(-1, keepdim=True)

    def sm_jax(jnp, x):
        e = jnp.exp(x - x.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    def gn_dec(x, gamma, beta):
        n = x.shape[0]
        grouped = x.reshape(n, 32, -1)
        c = grouped - grouped.mean(2, keepdim=True)
        var = (c * c).mean(2, keepdim=True)
        y = (c / torch.sqrt(var + 1e-5)).reshape(x.shape)
        return y * gamma.reshape(64, 1, 1) + beta.reshape(64, 1, 1)

    def gn_jax(jnp, x, gamma, beta):
        grouped = x.reshape(x.shape[0], 32, -1)
        c = grouped - grouped.mean(2, keepdims=True)
        y = (c / jnp.sqrt((c * c).mean(2, keepdims=True) + 1e-5)).reshape(x.shape)
        return y * gamma.reshape(64, 1, 1) + beta.reshape(64, 1, 1)

    def gelu_dec(x, b):
        h = x + b
        inner = (h + torch.pow(h, 3.0) * 0.044715) * 0.7978846
        return h * 0.5 * (torch.tanh(inner) + 1.0)

    def gelu_jax(jnp, x, b):
        h = x + b
        return h * 0.5 * (jnp.tanh((h + h ** 3 * 0.044715) * 0.7978846) + 1.0)

    out = []
    for rows, cols in ((8192 // q, 4096), (65536 // q, 256)):
        x, w, b = rand(rows, cols), rand(cols, lo=0.5, hi=1.5), rand(cols, lo=-0.5, hi=0.5)
        out.append((f"layer_norm {rows}x{cols}", (2 * x.numel() + 2 * cols) * 4, (x, w, b),
                    lambda x, w, b: F.layer_norm(x, (x.shape[-1],), w, b, 1e-5), ln_dec, ln_jax))
    for rows, cols in ((8192 // q, 4096), (65536 // q, 256)):
        x = rand(rows, cols)
        out.append((f"softmax {rows}x{cols}", 2 * x.numel() * 4, (x,), lambda x: torch.softmax(x, -1), sm_dec,
                    sm_jax))
    n = 32 // (8 if q > 1 else 1)
    x = rand(n, 64, 56, 56)
    gamma, beta = rand(64, lo=0.5, hi=1.5), rand(64, lo=-0.5, hi=0.5)
    out.append((f"group_norm {n}x64x56x56 (G=32)", (2 * x.numel() + 128) * 4, (x, gamma, beta),
                lambda x, gamma, beta: F.group_norm(x, 32, gamma, beta, 1e-5), gn_dec, gn_jax))
    rows, cols = 8192 // q, 4096
    x, b = rand(rows, cols), rand(cols, lo=-0.1, hi=0.1)
    out.append((f"bias+gelu {rows}x{cols}", (2 * x.numel() + cols) * 4, (x, b),
                lambda x, b: F.gelu(x + b, approximate="tanh"), gelu_dec, gelu_jax))
    return out


def max_rel_error(got, want):
    got = torch.as_tensor(got).to(want.device, torch.float32)
    return float((got - want).abs().max() / want.abs().max().clamp_min(1e-30))


def main():
    global DEVICE
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--quick", action="store_true", help="shapes 16x smaller")
    ap.add_argument("--json")
    args = ap.parse_args()
    DEVICE = args.device
    if DEVICE == "cuda" and not torch.cuda.is_available():
        print("torch_memory_bound: skipped (torch sees no CUDA device)")
        return
    torch.set_num_threads(args.threads)
    compile_fn, no_compile = compiler()
    jax_parts, no_jax = jax_jit()
    where = torch.cuda.get_device_name() if DEVICE == "cuda" else f"{torch.get_num_threads()} threads"
    bw = copy_gbps()
    print(f"torch {torch.__version__} on {DEVICE} ({where}); copy bandwidth (read + write, 512 MiB): {bw:.2f} GB/s; "
          f"median of {args.repeat} runs")
    if no_compile:
        print(f"compile: not run: {no_compile}")
    if no_jax:
        print(f"jax: not run: {no_jax}")
    print(f"\n{'workload':30} {'variant':10} {'median ms':>10} {'min ms':>10} {'GB/s':>8} {'% copy':>7} {'max error':>10}")
    results = []
    with torch.no_grad():
        for name, nbytes, targs, native, dec, jdec in workloads(16 if args.quick else 1):
            want = native(*targs)
            fns = {"native": lambda: native(*targs), "decomposed": lambda: dec(*targs)}
            if compile_fn:
                compiled = compile_fn(dec)
                fns["compile"] = lambda: compiled(*targs)
            if jax_parts:
                jnp, jit, dev = jax_parts
                import jax
                jargs = [jax.device_put(t.cpu().numpy(), dev) for t in targs]
                jitted = jit(lambda *a: jdec(jnp, *a))
                fns["jax"] = lambda: jitted(*jargs)
            for variant, fn in fns.items():
                med, mn = bench(fn, args.repeat)
                out = fn()
                err = max_rel_error(out.__array__() if variant == "jax" else out, want)
                gbps = nbytes / (med * 1e6)
                print(f"{name:30} {variant:10} {med:10.3f} {mn:10.3f} {gbps:8.2f} {100 * gbps / bw:6.1f}% {err:10.2g}")
                results.append({"workload": name, "variant": variant, "median_ms": med, "min_ms": mn,
                                "gbps": gbps, "max_error": err})
            sys.stdout.flush()
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": DEVICE, "copy_gbps": bw, "threads": torch.get_num_threads(),
                       "not_run": {"compile": no_compile, "jax": no_jax}, "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
