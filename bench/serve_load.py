#!/usr/bin/env python3
"""A bounded load test of attn-serve on 127.0.0.1.

Builds the apps tests' model folder (test/apps/model_folder.py: a Llama-shaped
model with a 32000-token vocabulary, a real tokenizer and random weights),
starts attn-serve on a free port with room for 16 requests, and for 1, 4 and
16 concurrent clients has each send streaming /v1/completions requests one
after another. Prints per concurrency: requests/s, generated tokens/s, and
p50/p99 time to first token; fails (exit 1) if any request fails.

Then two scenarios of real traffic, each run against two servers:
  shared prefix: 4 clients, each request a shared system prompt (1,000
    tokens, or 60% of the model's positions if fewer) and a distinct 20-token
    turn; time to first token and tokens/s with the prefix cache and with
    --no-prefix-cache.
  long prompt: 4 streams decoding (one event per token: "logprobs": 0) when
    a 2,000-token prompt (or the model's positions less 40) arrives; their
    inter-token latency p50 over the run and p99 while it prefills, with
    the default --prefill-chunk and with --prefill-chunk 0.

  python3 bench/serve_load.py BIN_DIR TOKENIZER_DATA [REQUESTS_PER_CLIENT] [MAX_TOKENS]
                              [MODEL_DIR CACHE_DIR] [--scenarios-only | --long-only]
                              [--chunk N]

--chunk N: the long-prompt scenario's chunked server runs with
--prefill-chunk N (default: attn-serve's default).

MODEL_DIR (a model folder with weights) and CACHE_DIR replace the test model.
"""

import http.client
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "test", "apps"))
from model_folder import make_model_folder, start_server  # noqa: E402

PROMPTS = ["Once upon a time", "三千零五", "def f(x):", "The capital of France is",
           "Hello world", "1 2 3 4", "A long time ago", "In a hole in the ground"]


def stream_once(host, port, prompt, max_tokens):
    """(time to first token, seconds, completion tokens) of one request."""
    start = time.perf_counter()
    connection = http.client.HTTPConnection(host, port, timeout=300)
    connection.request("POST", "/v1/completions",
                       json.dumps({"prompt": prompt, "max_tokens": max_tokens, "stream": True,
                                   "temperature": 0.8, "seed": 1}),
                       {"Content-Type": "application/json"})
    response = connection.getresponse()
    if response.status != 200:
        raise RuntimeError("HTTP %d: %s" % (response.status, response.read()[:200]))
    first = None
    tokens = None
    for raw in response:
        line = raw.decode().strip()
        if not line.startswith("data: "):
            continue
        if line == "data: [DONE]":
            break
        event = json.loads(line[len("data: "):])
        if "error" in event:
            raise RuntimeError(event["error"]["message"])
        if first is None:
            first = time.perf_counter() - start
        if "usage" in event:
            tokens = event["usage"]["completion_tokens"]
    connection.close()
    if tokens is None:
        raise RuntimeError("the stream ended without usage")
    return first, time.perf_counter() - start, tokens


def load(host, port, clients, requests_per_client, max_tokens):
    results, failures = [], []
    lock = threading.Lock()

    def client(index):
        for r in range(requests_per_client):
            try:
                outcome = stream_once(host, port, PROMPTS[(index + r) % len(PROMPTS)], max_tokens)
                with lock:
                    results.append(outcome)
            except Exception as error:  # counted, reported
                with lock:
                    failures.append(str(error))

    start = time.perf_counter()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    firsts = sorted(r[0] for r in results)
    p99 = firsts[min(len(firsts) - 1, int(round(0.99 * (len(firsts) - 1))))] if firsts else 0
    return {"clients": clients, "requests": len(results), "failed": len(failures),
            "requests_per_s": len(results) / elapsed,
            "tokens_per_s": sum(r[2] for r in results) / elapsed,
            "ttft_p50_ms": 1000 * statistics.median(firsts) if firsts else 0,
            "ttft_p99_ms": 1000 * p99, "errors": failures[:3]}


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))] if ordered else 0


def stream_times(host, port, body):
    """Arrival times (perf_counter) of a streamed request's events with
    tokens, and its completion tokens."""
    connection = http.client.HTTPConnection(host, port, timeout=600)
    connection.request("POST", "/v1/completions", json.dumps(dict(body, stream=True)),
                       {"Content-Type": "application/json"})
    response = connection.getresponse()
    if response.status != 200:
        raise RuntimeError("HTTP %d: %s" % (response.status, response.read()[:200]))
    times, tokens = [], None
    for raw in response:
        line = raw.decode().strip()
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        event = json.loads(line[len("data: "):])
        if "error" in event:
            raise RuntimeError(event["error"]["message"])
        if "usage" in event:
            tokens = event["usage"]["completion_tokens"]
            continue
        logprobs = event["choices"][0].get("logprobs")
        count = len(logprobs["tokens"]) if logprobs else 1
        times += [time.perf_counter()] * count
    connection.close()
    return times, tokens


def shared_prefix(host, port, positions, requests_per_client=4):
    """TTFT p50 and tokens/s of 4 clients sending shared system prompts."""
    system = [1] + [(17 * i) % 30000 + 100 for i in range(min(1000, int(positions * 0.6)) - 1)]
    results, failures = [], []
    lock = threading.Lock()

    def client(index):
        for r in range(requests_per_client):
            turn = [(7919 * (index * 31 + r + 1) + 13 * i) % 30000 + 100 for i in range(20)]
            start = time.perf_counter()
            try:
                times, tokens = stream_times(host, port, {"prompt": system + turn,
                                                          "max_tokens": 16, "temperature": 0,
                                                          "logprobs": 0})
                with lock:
                    results.append((times[0] - start, tokens))
            except Exception as error:
                with lock:
                    failures.append(str(error))

    start = time.perf_counter()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    return {"ttft_p50_ms": 1000 * statistics.median(r[0] for r in results) if results else 0,
            "tokens_per_s": sum(r[1] for r in results) / elapsed, "failed": len(failures),
            "prompt": len(system) + 20, "errors": failures[:3]}


def long_prompt(host, port, positions):
    """Inter-token latency of 4 decoding streams when a long prompt lands."""
    length = min(2000, positions - 40)
    streams, failures = [], []
    lock = threading.Lock()
    window = []

    def stream(index):
        try:
            times, _ = stream_times(host, port, {"prompt": "Once upon a time %d" % index,
                                                 "max_tokens": min(200, positions - 40),
                                                 "temperature": 0.8, "seed": index,
                                                 "logprobs": 0})
            with lock:
                streams.append(times)
        except Exception as error:
            with lock:
                failures.append(str(error))

    def arrive():
        time.sleep(0.5)
        begin = time.perf_counter()
        try:
            times, _ = stream_times(host, port, {"prompt": [1] + [(31 * i) % 30000 + 100
                                                                  for i in range(length - 1)],
                                                 "max_tokens": 1, "temperature": 0})
            window.extend([begin, times[0]])
        except Exception as error:
            with lock:
                failures.append(str(error))

    threads = [threading.Thread(target=stream, args=(i,)) for i in range(4)]
    threads.append(threading.Thread(target=arrive))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    gaps, during = [], []
    for times in streams:
        for a, b in zip(times, times[1:]):
            gaps.append(b - a)
            if window and b > window[0] and a < window[1]:
                during.append(b - a)
    p50 = statistics.median(gaps) if gaps else 0
    p99 = percentile(during, 0.99)
    if os.environ.get("SERVE_LOAD_GAPS"):  # the window's gaps, for a closer look
        print("  gaps in the window (ms):", sorted(round(1000 * g) for g in during)[-20:],
              "of", len(during))
    return {"itl_p50_ms": 1000 * p50, "itl_p99_window_ms": 1000 * p99,
            "ratio": p99 / p50 if p50 else 0, "prefill_ms": 1000 * (window[1] - window[0])
            if window else 0, "failed": len(failures), "prompt": length, "errors": failures[:3]}


def against_server(bin_dir, model, cache, parallel, flags, scenario, positions):
    """`scenario`(host, port, positions) against a server started with
    `flags`, stopped after."""
    server, base = start_server(bin_dir, model, cache, "--parallel", str(parallel), *flags)
    try:
        host, port = base[len("http://"):].split(":")
        return scenario(host, int(port), positions)
    finally:
        server.terminate()
        server.wait()


def scenarios(bin_dir, model, cache, chunk=(), long_only=False):
    """The shared-prefix and long-prompt scenarios, each against two
    servers; returns the failed requests."""
    with open(os.path.join(model, "config.json")) as f:
        positions = json.load(f).get("max_position_embeddings", 2048)
    failed = 0
    print("\nshared prefix, 4 clients      prompt  TTFT p50 ms  tokens/s")
    ttft = {}
    for label, flags in () if long_only else (("prefix cache", []),
                                              ("--no-prefix-cache", ["--no-prefix-cache"])):
        r = against_server(bin_dir, model, cache, 4, flags, shared_prefix, positions)
        failed += r["failed"]
        ttft[label] = r["ttft_p50_ms"]
        print("  %-26s  %6d  %11.1f  %8.1f" % (label, r["prompt"], r["ttft_p50_ms"],
                                               r["tokens_per_s"]))
        for error in r["errors"]:
            print("  error:", error)
    if ttft.get("--no-prefix-cache"):
        print("  TTFT with / without the prefix cache: %.2f" %
              (ttft["prefix cache"] / ttft["--no-prefix-cache"]))
    print("\nlong prompt beside 4 streams  prompt  ITL p50 ms  ITL p99 ms (window)  p99/p50"
          "  prefill ms")
    for label, flags in (("--prefill-chunk " + (chunk[1] if chunk else "default"), list(chunk)),
                         ("--prefill-chunk 0", ["--prefill-chunk", "0"])):
        r = against_server(bin_dir, model, cache, 8, flags, long_prompt, positions)
        failed += r["failed"]
        print("  %-26s  %6d  %10.1f  %19.1f  %7.2f  %10.0f" % (
            label, r["prompt"], r["itl_p50_ms"], r["itl_p99_window_ms"], r["ratio"],
            r["prefill_ms"]))
        for error in r["errors"]:
            print("  error:", error)
    return failed


def main():
    argv = list(sys.argv)
    long_only = "--long-only" in argv
    scenarios_only = "--scenarios-only" in argv or long_only
    argv = [a for a in argv if a not in ("--scenarios-only", "--long-only")]
    chunk = []
    if "--chunk" in argv:
        at = argv.index("--chunk")
        chunk = ["--prefill-chunk", argv[at + 1]]
        del argv[at:at + 2]
    sys.argv = argv
    bin_dir, data = sys.argv[1:3]
    requests_per_client = int(sys.argv[3]) if len(sys.argv) > 3 else 4
    max_tokens = int(sys.argv[4]) if len(sys.argv) > 4 else 32
    work = tempfile.mkdtemp(prefix="attn-serve-load.")
    server = None
    try:
        if len(sys.argv) > 6:
            model, cache = sys.argv[5:7]
        else:
            model, cache, compiled = make_model_folder(work, bin_dir, data)
            if compiled.returncode != 0:
                raise SystemExit("compiling failed: " + compiled.stderr)
        if scenarios_only:
            return 1 if scenarios(bin_dir, model, cache, chunk, long_only) else 0
        server, base = start_server(bin_dir, model, cache, "--parallel", "16")
        if base is None:
            raise SystemExit("attn-serve did not start")
        host, port = base[len("http://"):].split(":")
        stream_once(host, int(port), "warm up", 4)
        print("clients  requests  failed  requests/s  tokens/s  TTFT p50 ms  TTFT p99 ms")
        failed = 0
        for clients in (1, 4, 16):
            r = load(host, int(port), clients, requests_per_client, max_tokens)
            failed += r["failed"]
            print("%7d  %8d  %6d  %10.1f  %8.0f  %11.1f  %11.1f" % (
                r["clients"], r["requests"], r["failed"], r["requests_per_s"],
                r["tokens_per_s"], r["ttft_p50_ms"], r["ttft_p99_ms"]))
            for error in r["errors"]:
                print("  error:", error)
        server.terminate()
        server.wait()
        server = None
        failed += scenarios(bin_dir, model, cache)
        return 1 if failed else 0
    finally:
        if server is not None:
            server.terminate()
            server.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
