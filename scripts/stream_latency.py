#!/usr/bin/env python3
"""Streaming latency and memory: feed simulated server logs at a steady rate to `vigie stream`.

Appends the lines of simulated log files (one output file per input file, as
servers would) at --rate lines per second for --seconds, all servers together
in timestamp order (as a fleet writing "now" would), while `vigie stream`
follows the directory. Every 10 ms chunk records its file, end offset and
wall-clock time. At the end the streamer is stopped with SIGTERM and the
lake's commit log gives, for each chunk:

  commit latency: first `stream` commit whose checkpoint for that file passes
                  the chunk's end;
  flag latency:   first `detect` commit whose replay covers that commit, i.e.
                  the moment the `flags` table reflects the chunk.

It prints p50/p95/p99/max of both and the streamer's RSS every 10 s.

With --push, no file is written: `vigie serve --ingest-token-file` runs on the
lake instead, and each server's lines are sent to `POST /ingest` every
--push-interval seconds (one body per server, one after the other, as servers
that push would); the commit latency is then the answer's, and the flag latency
runs from the moment a body was sent to the first `detect` commit whose replay
covers the version the answer gave.

  python3 scripts/stream_latency.py --vigie target/release/vigie \
      --source /tmp/sim --work /tmp/stream-bench --rate 10000 --seconds 300

With --lake, the streamer works on that lake in place (a large history need not
be copied: the run adds to it). With --lake-from, it starts on a copy of a lake built beforehand
(e.g. a batch ingest, replay and detect of the month before the feed), so the
run measures the steady state of a full detection window instead of its fill.
"""

import argparse
import heapq
import http.client
import glob
import gzip
import json
import os
import re
import shutil
import signal
import subprocess
import time


TS = re.compile(rb'"ts":"([^"]+)"')


class Server:
    """One simulated server: its day files in order, line by line, written under the same names."""

    def __init__(self, files, follow):
        self.files = files
        self.follow = follow
        self.fh = None
        self.out = None
        self.line = None
        self.ts = b""
        self.advance()

    def advance(self):
        """Loads the next line (and its timestamp); `line` is None once every file is read."""
        while True:
            if self.fh is None:
                if not self.files:
                    self.line = None
                    return
                path = self.files.pop(0)
                op = gzip.open if path.endswith(".gz") else open
                self.fh = op(path, "rb")
                name = os.path.basename(os.path.dirname(path)) + "-" + os.path.basename(path).removesuffix(".gz")
                self.out = os.path.abspath(os.path.join(self.follow, name))
            line = self.fh.readline()
            if line:
                self.line = line
                m = TS.search(line)
                self.ts = m.group(1) if m else b""
                return
            self.fh.close()
            self.fh = None


class Fleet:
    """The servers' lines in timestamp order, as a fleet writing "now" would."""

    def __init__(self, streams):
        self.streams = streams
        self.heap = [(sv.ts, k) for k, sv in enumerate(streams) if sv.line is not None]
        heapq.heapify(self.heap)

    def __bool__(self):
        return bool(self.heap)

    def take(self, n):
        """The next `n` lines, by (server index, the file they are written to)."""
        out = {}
        while n > 0 and self.heap:
            _, k = heapq.heappop(self.heap)
            sv = self.streams[k]
            out.setdefault((k, sv.out), []).append(sv.line)
            sv.advance()
            if sv.line is not None:
                heapq.heappush(self.heap, (sv.ts, k))
            n -= 1
        return out


def servers(src, follow):
    by_dir = {}
    for f in sorted(glob.glob(os.path.join(src, "**", "*.jsonl*"), recursive=True)):
        by_dir.setdefault(os.path.dirname(f), []).append(f)
    return [Server(files, follow) for _, files in sorted(by_dir.items())]


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
    ap.add_argument("--rules", help="directory of rule files (default: the rules built into the binary)")
    ap.add_argument("--lake-from", help="copy this lake as the starting lake")
    ap.add_argument("--lake", help="stream into this lake in place (it is not removed)")
    ap.add_argument("--stream-args", default="",
                    help="more arguments for vigie stream (or serve, with --push), e.g. \"--analyse-share 0\"")
    ap.add_argument("--push", action="store_true",
                    help="send the lines to vigie serve's POST /ingest instead of writing files")
    ap.add_argument("--push-interval", type=float, default=1.0, help="seconds between two bodies of a server")
    ap.add_argument("--port", type=int, default=18480, help="port of vigie serve with --push")
    args = ap.parse_args()
    if args.push:
        if not (args.lake or args.lake_from):
            raise SystemExit("--push needs a lake to serve: --lake or --lake-from")
        return push_main(args)

    shutil.rmtree(args.work, ignore_errors=True)
    follow = os.path.join(args.work, "logs")
    lake = os.path.abspath(args.lake) if args.lake else os.path.join(args.work, "lake")
    os.makedirs(follow)
    if args.lake_from:
        shutil.copytree(args.lake_from, lake, symlinks=True)
    before = latest_version(lake)
    streams = servers(args.source, follow)

    errlog = open(os.path.join(args.work, "stream.log"), "wb")
    proc = subprocess.Popen(
        [args.vigie, "stream", "--follow", follow, "--lake", lake]
        + (["--rules", args.rules] if args.rules else [])
        + args.stream_args.split(),
        stdout=subprocess.DEVNULL,
        stderr=errlog,
        env=dict(os.environ, VIGIE_LOG=os.environ.get("VIGIE_LOG", "info")),
    )
    chunks = []  # (file path, end offset, wall ms, lines)
    memory = []  # (seconds, rss kB)
    tick = 0.01
    per_tick = args.rate * tick
    start = time.time()
    owed = 0.0
    fed = 0
    next_mem = 0.0
    fleet = Fleet(streams)
    offsets = {}
    while time.time() - start < args.seconds and fleet:
        owed += per_tick
        n = int(owed)
        owed -= n
        for (_, path), lines in fleet.take(n).items():
            data = b"".join(lines)
            with open(path, "ab") as fh:
                fh.write(data)
            offsets[path] = offsets.get(path, 0) + len(data)
            fed += len(lines)
            chunks.append((path, offsets[path], time.time() * 1000.0, len(lines)))
        now = time.time() - start
        if now >= next_mem:
            memory.append((round(now), rss_kb(proc.pid)))
            next_mem += 60
        sleep = start + tick * (int(now / tick) + 1) - time.time()
        if sleep > 0:
            time.sleep(sleep)
    feed_seconds = time.time() - start
    err = stop(proc, errlog, memory, start, 120)

    commits, detects = commits_of(lake, before)
    stream_commits = [c for c in commits if c["op"] == "stream"]
    # Per file: (commit version, time, offset) in order.
    by_file = {}
    for c in stream_commits:
        for s in c.get("sources", []):
            by_file.setdefault(os.path.abspath(s["path"]), []).append((c["version"], c["time_ms"], s["offset"]))
    commit_lat, flag_lat, lines_lat = [], [], 0
    windows = {}  # 5-minute window of the append -> flag latencies
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
            windows.setdefault(int((t / 1000.0 - start) // 300), []).append(d - t)
    result = {
        "rate_target": args.rate,
        "lines_fed": fed,
        "feed_seconds": round(feed_seconds, 1),
        "rate_achieved": round(fed / feed_seconds),
        "chunks": len(chunks),
        "chunks_measured": len(flag_lat),
        "stream_commits": len(stream_commits),
        "detect_runs": len(detects),
        **latency_stats(commit_lat, flag_lat, windows),
        "rss_kb": memory,
        "summary": err.decode(errors="replace").strip().splitlines()[-1:] if err else [],
    }
    print(json.dumps(result, indent=1))


def latency_stats(commit_lat, flag_lat, windows):
    """The percentiles of the commit and flag latencies (ms), and of the latter per 5 minutes."""
    return {
        "commit_latency_ms": {p: round(pct(commit_lat, p)) for p in (50, 95, 99, 100)} if commit_lat else None,
        "flag_latency_ms": {p: round(pct(flag_lat, p)) for p in (50, 95, 99, 100)} if flag_lat else None,
        "flag_latency_ms_per_5_min": {
            f"{w * 5}-{w * 5 + 5} min": {p: round(pct(xs, p)) for p in (50, 99)} for w, xs in sorted(windows.items())
        },
    }


def stop(proc, errlog, memory, start, timeout):
    """Lets the last lines reach the flags (8 s), samples the process's memory once more, stops it
    with SIGTERM (its last pass may take up to `timeout` seconds) and returns its log."""
    time.sleep(8)
    memory.append((round(time.time() - start), rss_kb(proc.pid)))
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=timeout)
    errlog.close()
    with open(errlog.name, "rb") as fh:
        return fh.read()


def latest_version(lake):
    """The latest version of a lake's log (-1 for none: a new lake)."""
    versions = [-1]
    for f in glob.glob(os.path.join(lake, "_vigie", "log", "*.json")):
        head = os.path.basename(f).split(".")[0]
        if head.isdigit():
            versions.append(int(head))
    return max(versions)


def commits_of(lake, after=-1):
    """The lake's commits (`_vigie/log`) after version `after` (those of the run, not of the lake it
    started from), by version; and the detect runs among them: (replay version, time)."""
    commits = []
    for f in sorted(glob.glob(os.path.join(lake, "_vigie", "log", "*.json"))):
        if f.endswith(".checkpoint.json"):
            continue
        with open(f) as fh:
            c = json.load(fh)
        if c["version"] > after:
            commits.append(c)
    commits.sort(key=lambda c: c["version"])
    detects = []
    for c in commits:
        if c["op"] == "detect":
            rep = (c.get("stages", {}).get("detect", {}) or {}).get("replay") or {}
            detects.append((rep.get("version", -1), c["time_ms"]))
    return commits, detects


def push_main(args):
    """--push: the same feed sent to `vigie serve`'s POST /ingest (see the module's doc)."""
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    lake = os.path.abspath(args.lake) if args.lake else os.path.join(args.work, "lake")
    if args.lake_from:
        shutil.copytree(args.lake_from, lake, symlinks=True)
    before = latest_version(lake)
    token = "stream-latency-push-token"
    token_file = os.path.join(args.work, "token")
    with open(token_file, "w") as fh:
        fh.write(token)
    streams = servers(args.source, args.work)
    errlog = open(os.path.join(args.work, "serve.log"), "wb")
    proc = subprocess.Popen(
        [args.vigie, "serve", "--lake", lake, "--addr", f"127.0.0.1:{args.port}",
         "--ingest-token-file", token_file]
        + (["--rules", args.rules] if args.rules else [])
        + args.stream_args.split(),
        stdout=subprocess.DEVNULL,
        stderr=errlog,
        env=dict(os.environ, VIGIE_LOG=os.environ.get("VIGIE_LOG", "info")),
    )
    deadline = time.time() + 120
    while True:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", args.port, timeout=120)
            conn.connect()
            break
        except OSError:
            if time.time() > deadline or proc.poll() is not None:
                raise SystemExit("vigie serve did not start")
            time.sleep(0.2)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/x-ndjson"}
    sent = []  # (wall ms when first sent, version, lines, answer wall ms)
    errors = 0
    memory = []
    per_tick = args.rate * args.push_interval
    start = time.time()
    owed = 0.0
    fed = 0
    next_mem = 0.0
    fleet = Fleet(streams)
    tick = 0
    while time.time() - start < args.seconds and fleet:
        owed += per_tick
        n = int(owed)
        owed -= n
        for _, lines in sorted(fleet.take(n).items()):
            body = b"".join(lines)
            first = time.time() * 1000.0
            while True:
                try:
                    conn.request("POST", "/ingest", body=body, headers=headers)
                    r = conn.getresponse()
                    answer = r.read()
                except (OSError, http.client.HTTPException):
                    conn.close()
                    conn = http.client.HTTPConnection("127.0.0.1", args.port, timeout=120)
                    errors += 1
                    time.sleep(0.2)
                    continue
                if r.status == 200:
                    v = json.loads(answer).get("version")
                    sent.append((first, v, len(lines), time.time() * 1000.0))
                    break
                if r.status != 503:
                    # A refusal sending again cannot mend (a bad token, a body too large).
                    proc.send_signal(signal.SIGTERM)
                    raise SystemExit(f"POST /ingest answered {r.status}: {answer[:300]!r}")
                errors += 1
                time.sleep(0.2)
            fed += len(lines)
        now = time.time() - start
        if now >= next_mem:
            memory.append((round(now), rss_kb(proc.pid)))
            next_mem += 60
        tick += 1
        sleep = start + args.push_interval * tick - time.time()
        if sleep > 0:
            time.sleep(sleep)
    feed_seconds = time.time() - start
    conn.close()
    err = stop(proc, errlog, memory, start, 600)
    _, detects = commits_of(lake, before)
    commit_lat, flag_lat = [], []
    windows = {}
    for t, v, n, answered in sent:
        if v is None:
            continue
        commit_lat.append(answered - t)
        d = next((dt for rv, dt in detects if rv >= v), None)
        if d is not None:
            flag_lat.append(d - t)
            windows.setdefault(int((t / 1000.0 - start) // 300), []).append(d - t)
    result = {
        "mode": "push",
        "rate_target": args.rate,
        "push_interval_s": args.push_interval,
        "lines_fed": fed,
        "feed_seconds": round(feed_seconds, 1),
        "rate_achieved": round(fed / feed_seconds),
        "bodies": len(sent),
        "bodies_measured": len(flag_lat),
        "push_errors": errors,
        "detect_runs": len(detects),
        **latency_stats(commit_lat, flag_lat, windows),
        "rss_kb": memory,
        "summary": err.decode(errors="replace").strip().splitlines()[-1:] if err else [],
    }
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
