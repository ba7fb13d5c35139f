#!/usr/bin/env python3
"""attnc's kernels beside ONNX Runtime's, measured in one run.

Runs ../shared/peers/ort/run-peer.sh (ONNX Runtime 1.30's CPU attention and
MLAS SGEMM, fp32, 2 threads) and then attn-bench on the same shapes, and
prints one table: each side's time and GFLOP/s (GB/s of K and V for decode),
and attnc's speed over ONNX Runtime's. The two run right after each other on
the same machine: these VMs' speed moves between runs, so only this ratio
means anything. The GEMM row compares GFLOP/s of different shapes (ORT's
2048^3 MatMul, attnc's 512-token projections), as the issue's target does.

  python3 bench/peer.py [ATTN_BENCH] [PEER_SCRIPT] [--rounds N]

With --rounds N the two sides alternate N times (ORT first, then attnc first,
...) and the ratio column gives the median over rounds and each round's own.
"""

import argparse
import json
import os
import re
import statistics
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# ORT's label (run-peer.sh) -> attn-bench's benchmark, and what is compared.
PAIRS = [
    ("prefill H32 D128 S2048 full (MHA)", "prefill/H32_KV32_D128_S2048_full/manual_time", "GFLOPS"),
    ("prefill H32 D128 S2048 causal (GQA)", "prefill/H32_KV32_D128_S2048_causal/manual_time", "GFLOPS"),
    ("prefill H32/8 D128 S2048 causal", "prefill/H32_KV8_D128_S2048_causal/manual_time", "GFLOPS"),
    ("prefill H32 D64 S512 full (MHA)", "prefill/H32_KV32_D64_S512_full/manual_time", "GFLOPS"),
    ("prefill H32 D64 S512 causal (GQA)", "prefill/H32_KV32_D64_S512_causal/manual_time", "GFLOPS"),
    ("sgemm 2048^3 (MatMul)", "linear/T512_in4096_out4096_bias/manual_time", "GFLOPS"),
    ("sgemm 2048^3 (MatMul)", "linear/T512_in11008_out4096_swiglu_down/manual_time", "GFLOPS"),
    # Narrower products against ORT's fp32: bf16 prefill (vdpbf16ps where the
    # CPU has AVX512-BF16) and the AMX-BF16 tile product alone (Intel; skipped,
    # so "missing", elsewhere).
    ("prefill H32 D128 S2048 full (MHA)", "prefill/H32_KV32_D128_S2048_full/bf16/manual_time", "GFLOPS"),
    ("prefill H32 D128 S2048 causal (GQA)", "prefill/H32_KV32_D128_S2048_causal/bf16/manual_time", "GFLOPS"),
    ("prefill H32/8 D128 S2048 causal", "prefill/H32_KV8_D128_S2048_causal/bf16/manual_time", "GFLOPS"),
    ("sgemm 2048^3 (MatMul)", "linear/T512_in4096_out4096_amx_bf16_product/manual_time", "GFLOPS"),
    # The linear kernel on bf16 weights: AMX tiles where the CPU has them.
    ("sgemm 2048^3 (MatMul)", "linear/T512_in4096_out4096_bias_wbf16/manual_time", "GFLOPS"),
    ("decode H32/8 D128 L4096 (cold)", "decode/H32_KV8_D128/B1_KV4096_contiguous_f32/manual_time", "GBps"),
    ("decode H32/8 D128 L16384 (cold)", "decode/H32_KV8_D128/B1_KV32768_contiguous_f32/manual_time", "GBps"),
]


def run_peer(peer):
    """ONNX Runtime's figures by run-peer.sh's label."""
    ort = {}
    peer_run = subprocess.run(["bash", peer], capture_output=True, text=True)
    if peer_run.returncode != 0:
        raise SystemExit("run-peer.sh failed:\n" + peer_run.stderr[-2000:])
    for line in peer_run.stdout.splitlines():
        m = re.match(r"(.+?)\s+([\d.]+) ms(?:\s+([\d.]+) GFLOP/s)?(?:\s+([\d.]+) GB/s)?", line)
        if m:
            ort[m.group(1).strip()] = {"ms": float(m.group(2)),
                                       "GFLOPS": float(m.group(3) or 0),
                                       "GBps": float(m.group(4) or 0)}
    return ort


def run_attnc(bench):
    """attn-bench's medians by benchmark name, and its roofline line."""
    names = sorted({p[1] for p in PAIRS})
    pattern = "^(" + "|".join(re.escape(n.rsplit("/manual_time", 1)[0]) for n in names) + ")/manual_time$"
    run = subprocess.run([bench, "--benchmark_filter=" + pattern, "--benchmark_format=json",
                          "--benchmark_repetitions=3", "--benchmark_report_aggregates_only=true"],
                         capture_output=True, text=True)
    if run.returncode != 0:
        raise SystemExit("attn-bench failed:\n" + run.stderr[-2000:])
    roofline = next((l for l in run.stdout.splitlines() if l.startswith("roofline")), "")
    report = json.loads(run.stdout[run.stdout.index("{"):])
    attnc = {}
    for b in report["benchmarks"]:
        if b.get("aggregate_name") == "median":
            attnc[b["run_name"]] = {"ms": b["real_time"] if b["time_unit"] == "ms"
                                    else b["real_time"] / 1e6 if b["time_unit"] == "ns"
                                    else b["real_time"] / 1e3,
                                    "GFLOPS": b.get("GFLOPS", 0), "GBps": b.get("GBps", 0)}
    return attnc, roofline


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("bench", nargs="?", default=os.path.join(ROOT, "build", "bin", "attn-bench"))
    parser.add_argument("peer", nargs="?", default=os.path.join(
        ROOT, "..", "shared", "peers", "ort", "run-peer.sh"))
    parser.add_argument("--rounds", type=int, default=1,
                        help="alternate the two sides this many times (ORT first in odd "
                             "rounds, attnc first in even ones) and report every round's "
                             "ratio and their median")
    args = parser.parse_args()
    cpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    model = re.search(r"Model name:\s*(.*)", cpu)
    family = re.search(r"CPU family:\s*(.*)", cpu)
    number = re.search(r"Model:\s*(\d+)", cpu)
    print("CPU: %s, family %s model %s" % (model.group(1) if model else "?",
                                          family.group(1) if family else "?",
                                          number.group(1) if number else "?"))

    rounds = []  # (attnc, ort) per round
    for r in range(max(1, args.rounds)):
        if r % 2 == 0:
            ort = run_peer(args.peer)
            attnc, roofline = run_attnc(args.bench)
        else:
            attnc, roofline = run_attnc(args.bench)
            ort = run_peer(args.peer)
        if roofline:
            print("round %d: %s" % (r + 1, roofline))
        rounds.append((attnc, ort))

    print("\n| shape (fp32, 2 threads) | attnc | ONNX Runtime | attnc ÷ ORT speed |")
    print("|---|---:|---:|---:|")
    for label, name, unit in PAIRS:
        pairs = [(a.get(name), o.get(label)) for a, o in rounds]
        if not all(a and o for a, o in pairs):
            print("| %s / %s | missing in a round | | |" % (label, name))
            continue
        suffix = " GFLOP/s" if unit == "GFLOPS" else " GB/s"
        ratios = [a[unit] / o[unit] if o[unit] else 0 for a, o in pairs]
        cell = lambda side: "; ".join("%.2f ms, %.1f%s" % (x["ms"], x[unit], suffix)
                                      for x in side)
        ratio = "%.2f×" % statistics.median(ratios)
        if len(ratios) > 1:
            ratio += " (" + ", ".join("%.2f" % x for x in ratios) + ")"
        print("| %s (%s) | %s | %s | %s |" % (
            label, name.split("/manual_time")[0], cell([a for a, _ in pairs]),
            cell([o for _, o in pairs]), ratio))


if __name__ == "__main__":
    main()
