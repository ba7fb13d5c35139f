#!/usr/bin/env python3
"""Three attn-serve replicas behind nginx (deploy/nginx/attn-serve.conf).

The apps tests' model folder served by three replicas on free loopback
ports, nginx in front of them with the committed configuration (its listen
port and server lines replaced). Clients send streaming and plain
completions through nginx for a few seconds; meanwhile one replica is
killed (SIGKILL) and started again on its port. What must hold:

  - no request fails except streams that were running on the killed
    replica (nginx retries a refused connection, a 503 and a plain request
    whose replica died on the next one);
  - nothing is served by the restarted replica before its /health answers
    200 (it answers 503 while it loads, and nginx moves on);
  - every replica serves requests, the restarted one again after it is up.

And deploy/kubernetes/attn-serve.yaml parses, with readiness on /health and
a grace period longer than the drain.

Usage: attn_serve_replicas_test.py BIN_DIR TOKENIZER_DATA [SOURCE_DIR]
"""

import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

from model_folder import Checks, make_model_folder, start_server

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

check = Checks()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def health(base):
    try:
        with urllib.request.urlopen(base + "/health", timeout=2) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code
    except OSError:
        return None


def render_nginx(prefix, listen, ports):
    """The committed configuration with our ports, under `prefix`."""
    with open(os.path.join(ROOT, "deploy", "nginx", "attn-serve.conf")) as f:
        conf = f.read()
    servers = re.findall(r"^\s*server 127\.0\.0\.1:\d+ .*;$", conf, re.M)
    check(len(servers) == len(ports), "the configuration lists %d replicas" % len(servers))
    for line, port in zip(servers, ports):
        conf = conf.replace(line, re.sub(r":\d+ ", ":%d " % port, line), 1)
    conf, listens = re.subn(r"listen 127\.0\.0\.1:\d+;", "listen 127.0.0.1:%d;" % listen, conf)
    check(listens == 1, "the configuration's listen line")
    for folder in ("logs", "temp"):
        os.makedirs(os.path.join(prefix, folder), exist_ok=True)
    with open(os.path.join(prefix, "attn-serve.conf"), "w") as f:
        f.write(conf)


def one_request(port, index, stream):
    """(ok, final replica address, start, end, error) of one completion."""
    start = time.monotonic()
    # Streams long enough that the killed replica has some running.
    body = {"prompt": "Request %d: once upon a time" % index,
            "temperature": 1.0 if stream else 0, "seed": index,
            "max_tokens": 160 if stream else 8, "stream": stream}
    upstream, error = "", ""
    try:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        connection.request("POST", "/v1/completions", json.dumps(body),
                           {"Content-Type": "application/json"})
        response = connection.getresponse()
        upstream = (response.getheader("X-Upstream") or "").split(",")[-1].strip()
        text = response.read().decode(errors="replace")
        connection.close()
        if response.status != 200:
            error = "HTTP %d: %s" % (response.status, text[:200])
        elif stream and not text.rstrip().endswith("data: [DONE]"):
            error = "the stream ended early: %r" % text[-200:]
        elif not stream and "choices" not in json.loads(text):
            error = "no choices: %s" % text[:200]
    except Exception as exception:  # a cut connection: counted
        error = "%s: %s" % (type(exception).__name__, exception)
    return not error, upstream, start, time.monotonic(), error


def check_kubernetes():
    """deploy/kubernetes: readiness on /health, a grace period longer than
    the drain, the Service selecting the Deployment's pods."""
    import yaml  # Debian python3-yaml
    with open(os.path.join(ROOT, "deploy", "kubernetes", "attn-serve.yaml")) as f:
        documents = {d["kind"]: d for d in yaml.safe_load_all(f)}
    deployment, service = documents.get("Deployment"), documents.get("Service")
    check(deployment is not None and service is not None, "a Deployment and a Service")
    if not deployment or not service:
        return
    pod = deployment["spec"]["template"]["spec"]
    container = pod["containers"][0]
    args = container["args"]
    drain = float(args[args.index("--drain-seconds") + 1])
    check(container["readinessProbe"]["httpGet"]["path"] == "/health", "readiness on /health")
    check(pod["terminationGracePeriodSeconds"] > drain,
          "the grace period must outlast --drain-seconds")
    check(service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"] ==
          deployment["spec"]["template"]["metadata"]["labels"], "the Service's selector")


def main():
    bin_dir, data = sys.argv[1:3]
    check_kubernetes()
    nginx_binary = shutil.which("nginx") or "/usr/sbin/nginx"
    if not os.path.exists(nginx_binary):
        print("nginx is not installed (scripts/setup.sh installs it)")
        return 1
    work = tempfile.mkdtemp(prefix="attn-serve-replicas.")
    replicas, nginx = [], None
    try:
        model, cache, compiled = make_model_folder(work, bin_dir, data)
        check(compiled.returncode == 0, "compiling failed: " + compiled.stderr)
        bases = []
        for _ in range(3):
            server, base = start_server(bin_dir, model, cache, "--parallel", "2")
            check(base is not None, "a replica did not start")
            if base is None:
                return check.status()
            replicas.append(server)
            bases.append(base)
        ports = [int(b.rsplit(":", 1)[1]) for b in bases]
        listen = free_port()
        render_nginx(work, listen, ports)
        nginx = subprocess.Popen([nginx_binary, "-p", work, "-c", "attn-serve.conf",
                                  "-g", "daemon off;"], stderr=subprocess.PIPE, text=True)
        for _ in range(200):
            if health("http://127.0.0.1:%d" % listen) == 200:
                break
            time.sleep(0.05)
        check(health("http://127.0.0.1:%d" % listen) == 200, "nginx does not answer")

        results, lock, running = [], threading.Lock(), [True]

        def client(index):
            n = 0
            while running[0]:
                outcome = one_request(listen, index * 1000 + n, stream=(index + n) % 2 == 0)
                with lock:
                    results.append(outcome + ((index + n) % 2 == 0,))
                n += 1

        threads = [threading.Thread(target=client, args=(i,)) for i in range(6)]
        for t in threads:
            t.start()
        time.sleep(2.0)
        victim = "127.0.0.1:%d" % ports[1]
        killed_at = time.monotonic()
        replicas[1].kill()
        replicas[1].wait()
        time.sleep(1.0)
        restarted_at = time.monotonic()
        ready_at = [None]

        def watch():  # when the restarted replica's /health says 200
            while running[0] and ready_at[0] is None:
                if health(bases[1]) == 200:
                    ready_at[0] = time.monotonic()
                time.sleep(0.01)

        watcher = threading.Thread(target=watch)
        watcher.start()
        replicas[1], again = start_server(bin_dir, model, cache, "--parallel", "2",
                                          port=ports[1])
        check(again == bases[1], "the replica did not come back on its port: %s" % again)
        time.sleep(3.0)
        running[0] = False
        for t in threads:
            t.join()
        watcher.join()

        failures = [r for r in results if not r[0]]
        allowed = [r for r in failures
                   if r[5] and r[1] == victim and r[2] <= killed_at <= r[3]]
        check(len(failures) == len(allowed),
              "requests failed beyond the killed replica's streams: %s" %
              [r for r in failures if r not in allowed][:5])
        served = {}
        for r in results:
            if r[0]:
                served[r[1]] = served.get(r[1], 0) + 1
        check(all(served.get("127.0.0.1:%d" % p, 0) > 0 for p in ports),
              "not every replica served: %s" % served)
        check(ready_at[0] is not None, "the restarted replica never became healthy")
        after = [r for r in results if r[0] and r[1] == victim and r[3] > restarted_at]
        check(after and all(r[3] >= ready_at[0] for r in after),
              "the restarted replica served before its /health said 200 (%d served)" % len(after))
        print("replicas behind nginx: %d requests (%d streams), %d failed (streams on the "
              "killed replica), served per replica %s" %
              (len(results), sum(1 for r in results if r[5]), len(failures), served))

        for server in replicas:
            server.send_signal(signal.SIGTERM)
        for server in replicas:
            check(server.wait(timeout=60) == 0, "a replica did not drain and exit 0")
        replicas = []
    finally:
        for server in replicas:
            server.kill()
            server.wait()
        if nginx is not None:
            nginx.send_signal(signal.SIGQUIT)
            try:
                nginx.wait(timeout=10)
            except subprocess.TimeoutExpired:
                nginx.kill()
        shutil.rmtree(work, ignore_errors=True)
    return check.status()


if __name__ == "__main__":
    sys.exit(main())
