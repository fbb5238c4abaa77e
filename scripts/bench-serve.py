#!/usr/bin/env python3
"""Load benchmark of `whitebox-cli serve` (loopback only, bounded): requests/s, generated tokens/s and
latency percentiles at several numbers of concurrent clients.

Starts `whitebox-cli serve --port 0` on 127.0.0.1 with the given model and --parallel, then for each
client count C runs C threads that each send R non-streamed chat completions back to back (a fixed
prompt, max_tokens N, ignore_eos so every reply has N tokens, a seed per request). Reports per C:
requests/s, completion tokens/s, p50 / p99 request latency and the number of failed requests, as
Markdown on stdout (and every latency with --json FILE). Uses only the standard library.

    python3 scripts/bench-serve.py [--cli build/app/whitebox-cli] [-m MODEL] [--clients 1 4 8]
        [--requests 4] [-n 32] [--parallel 1] [--threads 2] [--json FILE]

Run it on an idle machine: on a loaded one the figures measure the other work.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import http.client
import json
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path


def start_server(args) -> tuple[subprocess.Popen, int]:
    cmd = [args.cli, "serve", "--port", "0", "--parallel", str(args.parallel), "--queue", "64",
           "--threads", str(args.threads), "--ctx", str(args.ctx)]
    if args.model:
        cmd += ["-m", args.model]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    for line in proc.stderr:
        m = re.search(r"at http://127\.0\.0\.1:(\d+)/v1", line)
        if m:
            return proc, int(m.group(1))
    raise SystemExit(f"bench-serve: the server did not start ({' '.join(cmd)})")


def one_request(port: int, n: int, seed: int) -> tuple[float, int]:
    body = json.dumps({"messages": [{"role": "user", "content": "Write a short story about a lighthouse."}],
                       "max_tokens": n, "ignore_eos": True, "seed": seed})
    t0 = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    conn.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
    resp = conn.getresponse()
    data = json.loads(resp.read())
    conn.close()
    if resp.status != 200:
        raise RuntimeError(f"HTTP {resp.status}: {data}")
    return time.perf_counter() - t0, int(data["usage"]["completion_tokens"])


def run_level(port: int, clients: int, args) -> dict:
    latencies, tokens, failures = [], 0, 0

    def client(c: int):
        out = []
        for r in range(args.requests):
            try:
                out.append(one_request(port, args.n, 1000 * c + r))
            except Exception as e:  # noqa: BLE001 - counted and reported
                print(f"bench-serve: a request failed: {e}", file=sys.stderr)
                out.append(None)
        return out

    t0 = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(clients) as pool:
        for results in pool.map(client, range(clients)):
            for r in results:
                if r is None:
                    failures += 1
                else:
                    latencies.append(r[0])
                    tokens += r[1]
    wall = time.perf_counter() - t0
    lat = sorted(latencies)
    pct = (lambda q: lat[min(len(lat) - 1, int(q * len(lat)))] if lat else float("nan"))
    return {"clients": clients, "requests": len(lat), "failures": failures, "wall_s": wall,
            "requests_per_s": len(lat) / wall, "tokens_per_s": tokens / wall,
            "p50_s": statistics.median(lat) if lat else float("nan"), "p99_s": pct(0.99), "latencies_s": lat}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cli", default=str(Path(__file__).resolve().parent.parent / "build/app/whitebox-cli"))
    p.add_argument("-m", "--model", default="")
    p.add_argument("--clients", type=int, nargs="+", default=[1, 4, 8])
    p.add_argument("--requests", type=int, default=4, help="requests per client")
    p.add_argument("-n", type=int, default=32, help="tokens per reply")
    p.add_argument("--parallel", type=int, default=1)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--ctx", type=int, default=1024)
    p.add_argument("--json", default="")
    args = p.parse_args()
    proc, port = start_server(args)
    try:
        one_request(port, 2, 0)  # warm-up: first touch of the weights
        levels = [run_level(port, c, args) for c in args.clients]
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    print(f"| clients | requests | failed | requests/s | tokens/s | p50 latency s | p99 latency s |")
    print("|---|---|---|---|---|---|---|")
    for r in levels:
        print(f"| {r['clients']} | {r['requests']} | {r['failures']} | {r['requests_per_s']:.2f} | "
              f"{r['tokens_per_s']:.1f} | {r['p50_s']:.2f} | {r['p99_s']:.2f} |")
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), "levels": levels}, indent=1))
    return 1 if any(r["failures"] for r in levels) else 0


if __name__ == "__main__":
    sys.exit(main())
