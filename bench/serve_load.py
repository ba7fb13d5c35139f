#!/usr/bin/env python3
"""A bounded load test of attn-serve on 127.0.0.1.

Builds the apps tests' model folder (test/apps/model_folder.py: a Llama-shaped
model with a 32000-token vocabulary, a real tokenizer and random weights),
starts attn-serve on a free port with room for 16 requests, and for 1, 4 and
16 concurrent clients has each send streaming /v1/completions requests one
after another. Prints per concurrency: requests/s, generated tokens/s, and
p50/p99 time to first token; fails (exit 1) if any request fails.

  python3 bench/serve_load.py BIN_DIR TOKENIZER_DATA [REQUESTS_PER_CLIENT] [MAX_TOKENS]
                              [MODEL_DIR CACHE_DIR]

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


def main():
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
        return 1 if failed else 0
    finally:
        if server is not None:
            server.terminate()
            server.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
