#!/usr/bin/env python3
"""Scale benchmark: time and peak memory of every batch stage at a given history length.

Simulates DAYS days at GAMES games a day (or takes an existing lake with --lake),
then runs, each under /usr/bin/time -v: ingest, replay (full, from empty), detect,
report over the whole period, `stream --once` (one more simulated day arriving in
a followed directory), and a re-judgement of one week. Prints one line per stage
(wall time, peak RSS, events per second where it applies) and writes them as JSON.

    python3 scripts/scale_bench.py --vigie target/release/vigie --work /tmp/scale \
        --days 10 --games-per-day 5000
    python3 scripts/scale_bench.py --vigie target/release/vigie --work /tmp/scale \
        --lake /data/lake100m --skip ingest     # an existing ingested lake

Stages can be skipped with --skip (repeatable). The replay stage is a full replay
only on a lake that was ingested but never replayed.
"""

import argparse
import datetime as dt
import json
import os
import re
import subprocess
import sys
import time


def timed(cmd, log):
    """Runs cmd under /usr/bin/time -v; returns (seconds, peak RSS MiB, stdout)."""
    t0 = time.time()
    with open(log, "w") as err:
        p = subprocess.run(["/usr/bin/time", "-v"] + cmd, stdout=subprocess.PIPE, stderr=err,
                           text=True)
    secs = time.time() - t0
    text = open(log).read()
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({p.returncode}); see {log}:\n{text[-2000:]}")
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", text)
    rss = int(m.group(1)) / 1024 if m else float("nan")
    return secs, rss, p.stdout


def events_in(vigie, lake):
    out = subprocess.run([vigie, "-q", "sql", "--lake", lake, "--format", "json",
                          "SELECT count(*) AS n, min(date) AS lo, max(date) AS hi FROM events"],
                         stdout=subprocess.PIPE, text=True, check=True).stdout
    row = json.loads(out)[0]
    return int(row["n"]), row["lo"], row["hi"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vigie", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--lake", help="an existing lake (default: WORK/lake)")
    ap.add_argument("--days", type=int, default=10)
    ap.add_argument("--games-per-day", type=int, default=5000)
    ap.add_argument("--accounts", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=9001)
    ap.add_argument("--start", default="2026-08-01")
    ap.add_argument("--rules", help="directory of rule files (default: the rules built into the binary)")
    ap.add_argument("--skip", action="append", default=[])
    args = ap.parse_args()
    v = args.vigie
    os.makedirs(args.work, exist_ok=True)
    lake = args.lake or os.path.join(args.work, "lake")
    logs = os.path.join(args.work, "logs")
    results = []

    def stage(name, cmd, events=None):
        if name in args.skip:
            return None
        secs, rss, out = timed(cmd, os.path.join(args.work, f"{name}.time"))
        row = {"stage": name, "seconds": round(secs, 1), "peak_rss_mib": round(rss)}
        if events:
            row["events_per_s"] = round(events / secs)
        results.append(row)
        print(json.dumps(row), flush=True)
        return out

    if "simulate" not in args.skip and not args.lake:
        stage("simulate", [v, "-q", "simulate", "--out", logs, "--seed", str(args.seed),
                           "--days", str(args.days), "--games-per-day", str(args.games_per_day),
                           "--accounts", str(args.accounts), "--start", args.start])
    if "ingest" not in args.skip and not args.lake:
        stage("ingest", [v, "-q", "ingest", "--lake", lake, logs])
        subprocess.run(["rm", "-rf", logs], check=True)
    n, lo, hi = events_in(v, lake)
    print(json.dumps({"lake": lake, "events": n, "from": lo, "to": hi}), flush=True)
    stage("replay", [v, "-q", "replay", "--lake", lake], events=n)
    rules = ["--rules", args.rules] if args.rules else []
    stage("detect", [v, "-q", "detect", "--lake", lake] + rules)
    stage("report", [v, "-q", "report", "--lake", lake, "--from", lo, "--to", hi,
                     "--out", os.path.join(args.work, "bundle")])
    # One more day arrives in a followed directory: the streaming job catches up once.
    nxt = (dt.date.fromisoformat(hi) + dt.timedelta(days=1)).isoformat()
    follow = os.path.join(args.work, "follow")
    if "stream" not in args.skip:
        subprocess.run(["rm", "-rf", follow], check=True)
        subprocess.run([v, "-q", "simulate", "--out", follow, "--seed", str(args.seed + 1),
                        "--days", "1", "--games-per-day", str(args.games_per_day),
                        "--accounts", str(args.accounts), "--start", nxt],
                       check=True, stdout=subprocess.DEVNULL)
        stage("stream_once", [v, "-q", "stream", "--lake", lake, "--follow", follow, "--once"]
              + rules)
    week_end = dt.date.fromisoformat(lo) + dt.timedelta(days=6)
    stage("rejudge_week", [v, "-q", "replay", "--lake", lake, "--rejudge", "--from", lo,
                           "--to", week_end.isoformat()] + rules)
    with open(os.path.join(args.work, "scale.json"), "w") as f:
        json.dump({"events": n, "from": lo, "to": hi, "stages": results}, f, indent=1)


if __name__ == "__main__":
    main()
