#!/usr/bin/env python3
"""attn-serve over HTTP, as an OpenAI client speaks to it.

The attn-run test's model folder, served on a free port. Completions, plain
and streamed as server-sent events, must give the text attn-run gives for the
same prompt (greedy); requests sent at once (more than --parallel, so some
wait) must each give what they give alone; bad requests get OpenAI-style
errors; SIGTERM stops the server cleanly.

Also: the `openai` npm package's client (streaming chat included) and curl
get the same answers; a streaming client that disconnects frees its
sequence; a server whose queue is full answers 503.

Usage: attn_serve_test.py BIN_DIR TOKENIZER_DATA
"""

import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import urllib.error
import urllib.request

from model_folder import Checks, make_model_folder, render_chat, start_server

HERE = os.path.dirname(os.path.abspath(__file__))

check = Checks()


def request(base, path, body=None, raw=None):
    """(status, parsed JSON or text) of one request."""
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    req = urllib.request.Request(base + path, data=data,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=120) as response:
            text = response.read().decode()
            status = response.status
    except urllib.error.HTTPError as error:
        text = error.read().decode()
        status = error.code
    try:
        return status, json.loads(text)
    except ValueError:
        return status, text


def main():
    bin_dir, data = sys.argv[1:3]
    work = tempfile.mkdtemp(prefix="attn-serve-test.")
    server = None
    try:
        model, cache, compiled = make_model_folder(work, bin_dir, data)
        check(compiled.returncode == 0, "compiling failed: " + compiled.stderr)
        server, base = start_server(bin_dir, model, cache, "--parallel", "4")
        check(base is not None, "attn-serve did not say where it listens")
        if base is None:
            return 1

        status, health = request(base, "/health")
        check(status == 200 and health["status"] == "ok", "health: %s %s" % (status, health))
        status, models = request(base, "/v1/models")
        check(status == 200 and models["data"][0]["id"] == "model", "models: %s" % models)

        prompt = {"model": "model", "prompt": "Hello world", "max_tokens": 12, "temperature": 0}
        status, plain = request(base, "/v1/completions", prompt)
        check(status == 200, "completion: %s %s" % (status, plain))
        text = plain["choices"][0]["text"]
        alone = subprocess.run([os.path.join(bin_dir, "attn-run"), model, "--cache-dir", cache,
                                "--prompt", "Hello world", "--temperature", "0",
                                "--max-new-tokens", "12"], capture_output=True, text=True)
        check(alone.stdout == text + "\n", "attn-serve %r, attn-run %r" % (text, alone.stdout))
        check(plain["object"] == "text_completion" and plain["model"] == "model",
              "completion shape: %s" % plain)
        usage = plain["usage"]
        check(usage["prompt_tokens"] == 3 and 0 < usage["completion_tokens"] <= 12 and
              usage["total_tokens"] == 3 + usage["completion_tokens"], "usage: %s" % usage)
        check(plain["choices"][0]["finish_reason"] in ("stop", "length"), "finish: %s" % plain)

        # Streamed: server-sent events whose pieces make the same text.
        req = urllib.request.Request(base + "/v1/completions",
                                     data=json.dumps(dict(prompt, stream=True)).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=120) as response:
            check(response.headers.get("Content-Type", "").startswith("text/event-stream"),
                  "stream content type: %s" % response.headers.get("Content-Type"))
            events = [line[len("data: "):] for line in response.read().decode().split("\n")
                      if line.startswith("data: ")]
        check(events and events[-1] == "[DONE]", "the stream does not end with [DONE]")
        chunks = [json.loads(e) for e in events[:-1]]
        streamed = "".join(c["choices"][0]["text"] for c in chunks)
        check(streamed == text, "streamed %r, plain %r" % (streamed, text))
        check(chunks[-1]["choices"][0]["finish_reason"] == plain["choices"][0]["finish_reason"]
              and all(c["choices"][0]["finish_reason"] is None for c in chunks[:-1]),
              "finish reasons in the stream: %s" % chunks)

        # A stop string: the text ends before it.
        if len(text) >= 4:
            stop = text[len(text) // 2:len(text) // 2 + 2]
            status, cut = request(base, "/v1/completions", dict(prompt, stop=[stop]))
            check(status == 200 and cut["choices"][0]["text"] == text[:text.find(stop)] and
                  cut["choices"][0]["finish_reason"] == "stop", "stop %r: %s" % (stop, cut))

        # Six at once with room for four: batched and queued, each as alone.
        prompts = ["Once upon a time", "三千零五", "def f(x):", "The capital of",
                   "Hello world", "1 2 3 4"]
        alone_texts = {}
        for p in prompts:
            status, answer = request(base, "/v1/completions",
                                     {"prompt": p, "max_tokens": 10, "temperature": 0})
            alone_texts[p] = answer["choices"][0]["text"] if status == 200 else None
        together = {}

        def ask(p):
            status, answer = request(base, "/v1/completions",
                                     {"prompt": p, "max_tokens": 10, "temperature": 0})
            together[p] = answer["choices"][0]["text"] if status == 200 else answer

        threads = [threading.Thread(target=ask, args=(p,)) for p in prompts]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for p in prompts:
            check(together.get(p) == alone_texts[p],
                  "%r: alone %r, together %r" % (p, alone_texts[p], together.get(p)))

        # Bad requests: OpenAI-style errors naming the field.
        status, answer = request(base, "/v1/completions", raw=b"{not json")
        check(status == 400 and "not valid JSON" in answer["error"]["message"], "bad JSON: %s" % answer)
        status, answer = request(base, "/v1/completions", {"prompt": "x", "n": 2})
        check(status == 400 and answer["error"]["param"] == "n", "n=2: %s" % answer)
        status, answer = request(base, "/v1/completions", {"max_tokens": 3})
        check(status == 400 and answer["error"]["param"] == "prompt", "no prompt: %s" % answer)
        status, answer = request(base, "/v1/completions", {"prompt": [1, 99999999]})
        check(status == 400 and "outside the vocabulary" in answer["error"]["message"],
              "token out of range: %s" % answer)
        status, answer = request(base, "/v1/completions", {"prompt": "x", "temperature": -1})
        check(status == 400 and answer["error"]["param"] == "temperature", "temperature: %s" % answer)
        status, answer = request(base, "/v1/completions", {"prompt": "x", "temperature": -1, "seed": 3})
        check(status == 400 and answer["error"]["param"] == "temperature",
              "the invalid option named, not the last one: %s" % answer)
        status, answer = request(base, "/v1/completions", {"prompt": "x " * 400, "max_tokens": 4})
        check(status == 400 and "error" in answer, "a prompt longer than the cache: %s" % answer)
        status, answer = request(base, "/v1/chat/completions", {"messages": []})
        check(status == 400 and answer["error"]["param"] == "messages", "no messages: %s" % answer)
        status, answer = request(base, "/health")
        check(status == 200, "the server is not healthy after bad requests")

        # Chat: the messages through the model's template (Jinja2 renders the
        # same text), then as /v1/completions would for that text.
        messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi!"}]
        status, chat = request(base, "/v1/chat/completions",
                               {"messages": messages, "max_tokens": 6, "temperature": 0})
        check(status == 200 and chat["object"] == "chat.completion" and
              chat["choices"][0]["message"]["role"] == "assistant", "chat: %s" % chat)
        rendered = render_chat(messages)
        status, same = request(base, "/v1/completions",
                               {"prompt": rendered[len("<s>"):], "max_tokens": 6, "temperature": 0})
        check(chat["choices"][0]["message"]["content"] == same["choices"][0]["text"] and
              chat["usage"] == same["usage"], "chat %s, completion %s" % (chat, same))
        req = urllib.request.Request(base + "/v1/chat/completions",
                                     data=json.dumps({"messages": messages, "max_tokens": 6,
                                                      "temperature": 0, "stream": True}).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=120) as response:
            events = [line[len("data: "):] for line in response.read().decode().split("\n")
                      if line.startswith("data: ")]
        chunks = [json.loads(e) for e in events[:-1]]
        check(events[-1] == "[DONE]" and chunks[0]["choices"][0]["delta"].get("role") == "assistant"
              and all(c["object"] == "chat.completion.chunk" for c in chunks),
              "chat stream: %s" % events)
        check("".join(c["choices"][0]["delta"].get("content", "") for c in chunks) ==
              chat["choices"][0]["message"]["content"], "the chat stream's text")

        # A real OpenAI client, and curl, get the same.
        client = subprocess.run(["node", os.path.join(HERE, "openai_client.mjs"), data, base],
                                capture_output=True, text=True, timeout=120)
        check(client.returncode == 0, "the openai client failed: " + client.stderr)
        if client.returncode == 0:
            seen = json.loads(client.stdout)
            check(seen["chat_stream"] == chat["choices"][0]["message"]["content"] and
                  seen["chat"] == seen["chat_stream"] and seen["completion"] == text and
                  seen["models"] == ["model"] and seen["chat_stream_finish"] in ("stop", "length"),
                  "the openai client saw %s" % seen)
            check(seen["refused"] and seen["refused"]["status"] == 400,
                  "the openai client's n=3: %s" % seen["refused"])
        curl = subprocess.run(["curl", "-sS", "-N", base + "/v1/completions",
                               "-H", "Content-Type: application/json",
                               "-d", json.dumps(dict(prompt, stream=True))],
                              capture_output=True, text=True, timeout=120)
        pieces = [json.loads(line[len("data: "):])["choices"][0]["text"]
                  for line in curl.stdout.split("\n")
                  if line.startswith("data: {")]
        check(curl.returncode == 0 and "".join(pieces) == text and "data: [DONE]" in curl.stdout,
              "curl's stream: %r" % curl.stdout[:300])

        server.send_signal(signal.SIGTERM)
        check(server.wait(timeout=30) == 0, "attn-serve did not stop cleanly on SIGTERM")
        server = None

        # One request at a time, one waiting: a burst beyond that is turned
        # away; a streaming client that hangs up frees its sequence.
        server, base = start_server(bin_dir, model, cache, "--parallel", "1", "--max-queue", "1")
        host, port = base[len("http://"):].split(":")
        # Long and sampled over the whole vocabulary: it runs for a while.
        long_request = json.dumps({"prompt": "Once upon a time", "max_tokens": 240,
                                   "stream": True, "temperature": 1.0, "seed": 5})

        def open_stream():
            connection = http.client.HTTPConnection(host, int(port), timeout=60)
            connection.request("POST", "/v1/completions", long_request,
                               {"Content-Type": "application/json"})
            return connection, connection.getresponse()

        def wait_for(condition):
            for _ in range(400):
                status, health = request(base, "/health")
                if condition(health):
                    return health
                threading.Event().wait(0.025)
            return None

        first, first_response = open_stream()
        first_response.readline()  # its first event: it runs
        first.close()  # hang up mid-stream
        check(wait_for(lambda h: h["cancelled"] == 1 and h["running"] == 0) is not None,
              "a client that hung up still holds its sequence")

        first, first_response = open_stream()
        first_response.readline()
        second, second_response = open_stream()  # waits for room, or runs
        statuses = []

        def ask():
            status, _ = request(base, "/v1/completions",
                                {"prompt": "x", "max_tokens": 200, "temperature": 1.0})
            statuses.append(status)

        burst = [threading.Thread(target=ask) for _ in range(6)]
        for t in burst:
            t.start()
        for t in burst:
            t.join()
        check(503 in statuses and set(statuses) <= {200, 503},
              "a burst at a full queue: %s" % statuses)
        first.close()
        second.close()
        check(wait_for(lambda h: h["running"] == 0 and h["queued"] == 0) is not None,
              "the server does not come back to idle")
        status, answer = request(base, "/v1/completions", {"prompt": "x", "max_tokens": 2})
        check(status == 200, "after the hang-ups: %s %s" % (status, answer))
        server.send_signal(signal.SIGTERM)
        check(server.wait(timeout=30) == 0, "attn-serve did not stop cleanly")
        server = None
        print("attn-serve: %d checks; greedy text %r" % (check.count, text))
    finally:
        if server is not None:
            server.kill()
            server.wait()
        shutil.rmtree(work, ignore_errors=True)
    return check.status()


if __name__ == "__main__":
    sys.exit(main())
