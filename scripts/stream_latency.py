#!/usr/bin/env python3
"""Streaming latency and memory: feed simulated server logs at a steady rate to `vigie stream`.

Appends the lines of simulated log files (one output file per input file, as
servers would) at --rate lines per second for --seconds, while `vigie stream`
follows the directory. Every 10 ms chunk records its file, end offset and
wall-clock time. At the end the streamer is stopped with SIGTERM and the
lake's commit log gives, for each chunk:

  commit latency: first `stream` commit whose checkpoint for that file passes
                  the chunk's end;
  flag latency:   first `detect` commit whose replay covers that commit, i.e.
                  the moment the `flags` table reflects the chunk.

It prints p50/p95/p99/max of both and the streamer's RSS every 10 s.

  python3 scripts/stream_latency.py --vigie target/release/vigie \
      --source /tmp/sim --work /tmp/stream-bench --rate 10000 --seconds 300
"""

import argparse
import glob
import gzip
import json
import os
import shutil
import signal
import subprocess
import time


def source_lines(src):
    files = sorted(glob.glob(os.path.join(src, "**", "*.jsonl*"), recursive=True))
    streams = []
    for f in files:
        op = gzip.open if f.endswith(".gz") else open
        with op(f, "rb") as fh:
            lines = fh.read().splitlines(keepends=True)
        if lines:
            streams.append(lines)
    return streams


def rss_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def pct(xs, p):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    k = min(len(xs) - 1, max(0, int(round(p / 100.0 * (len(xs) - 1)))))
    return xs[k]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--vigie", default="target/release/vigie")
    ap.add_argument("--source", required=True, help="directory of simulated logs")
    ap.add_argument("--work", required=True)
    ap.add_argument("--rate", type=int, default=10000)
    ap.add_argument("--seconds", type=int, default=300)
    ap.add_argument("--rules", default="queries/detect")
    args = ap.parse_args()

    shutil.rmtree(args.work, ignore_errors=True)
    follow = os.path.join(args.work, "logs")
    lake = os.path.join(args.work, "lake")
    os.makedirs(follow)
    streams = source_lines(args.source)
    total_available = sum(len(s) for s in streams)
    want = args.rate * args.seconds
    if total_available < want:
        print(f"warning: the source has {total_available} lines, fewer than {want}")
    outs = [open(os.path.join(follow, f"srv-{i:02}.jsonl"), "ab") for i in range(len(streams))]
    pos = [0] * len(streams)
    offsets = [0] * len(streams)

    proc = subprocess.Popen(
        [args.vigie, "stream", "--follow", follow, "--lake", lake, "--rules", args.rules],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=dict(os.environ, VIGIE_LOG="warn"),
    )
    chunks = []  # (file path, end offset, wall ms)
    memory = []  # (seconds, rss kB)
    tick = 0.01
    per_tick = args.rate * tick
    start = time.time()
    owed = 0.0
    fed = 0
    next_mem = 0.0
    i = 0
    while time.time() - start < args.seconds and fed < total_available:
        owed += per_tick
        n = int(owed)
        owed -= n
        # Spread the tick's lines over the files, round robin.
        while n > 0:
            k = i % len(streams)
            i += 1
            if pos[k] >= len(streams[k]):
                if all(p >= len(s) for p, s in zip(pos, streams)):
                    break
                continue
            take = min(n, max(1, n // len(streams)), len(streams[k]) - pos[k])
            data = b"".join(streams[k][pos[k]:pos[k] + take])
            outs[k].write(data)
            outs[k].flush()
            pos[k] += take
            offsets[k] += len(data)
            n -= take
            fed += take
            chunks.append((os.path.abspath(outs[k].name), offsets[k], time.time() * 1000.0, take))
        now = time.time() - start
        if now >= next_mem:
            memory.append((round(now), rss_kb(proc.pid)))
            next_mem += 10
        sleep = start + tick * (int(now / tick) + 1) - time.time()
        if sleep > 0:
            time.sleep(sleep)
    feed_seconds = time.time() - start
    # Let the last chunk reach the flags, then stop.
    time.sleep(8)
    memory.append((round(time.time() - start), rss_kb(proc.pid)))
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)

    commits = []
    for f in sorted(glob.glob(os.path.join(lake, "_vigie", "log", "*.json"))):
        if f.endswith(".checkpoint.json"):
            continue
        with open(f) as fh:
            commits.append(json.load(fh))
    commits.sort(key=lambda c: c["version"])
    stream_commits = [c for c in commits if c["op"] == "stream"]
    detects = []
    for c in commits:
        if c["op"] == "detect":
            rep = (c.get("stages", {}).get("detect", {}) or {}).get("replay") or {}
            detects.append((rep.get("version", -1), c["time_ms"]))
    # Per file: (commit version, time, offset) in order.
    by_file = {}
    for c in stream_commits:
        for s in c.get("sources", []):
            by_file.setdefault(os.path.abspath(s["path"]), []).append((c["version"], c["time_ms"], s["offset"]))
    commit_lat, flag_lat, lines_lat = [], [], 0
    for path, end, t, n in chunks:
        cands = by_file.get(path, [])
        hit = next(((v, tm) for v, tm, off in cands if off >= end), None)
        if hit is None:
            continue
        v, tm = hit
        commit_lat.append(tm - t)
        d = next((dt for rv, dt in detects if rv >= v), None)
        if d is not None:
            flag_lat.append(d - t)
            lines_lat += n
    result = {
        "rate_target": args.rate,
        "lines_fed": fed,
        "feed_seconds": round(feed_seconds, 1),
        "rate_achieved": round(fed / feed_seconds),
        "chunks": len(chunks),
        "chunks_measured": len(flag_lat),
        "stream_commits": len(stream_commits),
        "detect_runs": len(detects),
        "commit_latency_ms": {p: round(pct(commit_lat, p)) for p in (50, 95, 99, 100)},
        "flag_latency_ms": {p: round(pct(flag_lat, p)) for p in (50, 95, 99, 100)},
        "rss_kb": memory,
        "summary": err.decode(errors="replace").strip().splitlines()[-1:] if err else [],
    }
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
