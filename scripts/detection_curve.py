#!/usr/bin/env python3
"""Detection against subtle cheaters and honest look-alikes: recall per behaviour against the
simulator's subtlety knob, pooled precision, and the look-alikes flagged.

For every seed and every subtlety, simulates a platform with honest look-alikes
(`vigie simulate --subtlety S --lookalikes L`), runs ingest, replay and detect on
a fresh lake, and reads `vigie eval --json`. Prints one table per seed (recall of
each behaviour class at each subtlety, pooled precision and recall, honest
look-alikes flagged, honest accounts block-recommended) and writes everything as
JSON with --out. Thresholds are tuned on one seed; report the others. The rules are those
built into the `--vigie` binary (to score other rule files, run `vigie detect --rules DIR` and
`vigie eval --rules DIR` on the lakes kept with --keep).

    python3 scripts/detection_curve.py --vigie target/release/vigie --work /tmp/curve \
        --seeds 11 12 --subtlety 0 0.5 1 --out docs/detection-curve.json
"""

import argparse
import json
import os
import shutil
import subprocess
import sys


def run(cmd, log):
    with open(log, "a") as err:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=err, text=True)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({p.returncode}); see {log}")
    return p.stdout


def fresh_run(base, data):
    """The data directory (`base` + `data`), lake and log of one run, emptied of a previous run's."""
    out, lake, log = base + data, base + "-lake", base + ".log"
    for d in (out, lake):
        shutil.rmtree(d, ignore_errors=True)
    if os.path.exists(log):
        os.remove(log)
    return out, lake, log


def one(args, seed, subtlety):
    sim, lake, log = fresh_run(os.path.join(args.work, f"s{seed}-x{subtlety}"), "-sim")
    v = [args.vigie, "-q"]
    run(v + ["simulate", "--out", sim, "--seed", str(seed), "--days", str(args.days),
             "--games-per-day", str(args.games_per_day), "--accounts", str(args.accounts),
             "--behaviour-rate", str(args.behaviour_rate), "--subtlety", str(subtlety),
             "--lookalikes", str(args.lookalikes)], log)
    run(v + ["ingest", "--lake", lake, sim], log)
    run(v + ["replay", "--lake", lake], log)
    run(v + ["detect", "--lake", lake], log)
    ev = json.loads(run([args.vigie, "eval", "--json", "--lake", lake, "--labels",
                         os.path.join(sim, "labels.json")], log))
    if not args.keep:
        shutil.rmtree(sim, ignore_errors=True)
        shutil.rmtree(lake, ignore_errors=True)
    return ev


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vigie", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--seeds", type=int, nargs="+", default=[11])
    ap.add_argument("--subtlety", type=float, nargs="+", default=[0.0, 0.5, 1.0])
    ap.add_argument("--days", type=int, default=30)
    ap.add_argument("--games-per-day", type=int, default=1500)
    ap.add_argument("--accounts", type=int, default=1500)
    ap.add_argument("--behaviour-rate", type=float, default=0.005)
    ap.add_argument("--lookalikes", type=float, default=0.1)
    ap.add_argument("--keep", action="store_true", help="keep the simulated logs and lakes")
    ap.add_argument("--out", help="write every evaluation here as JSON")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    results = []
    for seed in args.seeds:
        rows = {}
        for s in args.subtlety:
            ev = one(args, seed, s)
            rows[s] = ev
            results.append({"seed": seed, "subtlety": s, "evaluation": ev})
            p = ev["pooled"]
            look = {l["class"]: f"{l['flagged']}/{l['accounts']}" for l in ev["lookalikes"]}
            print(f"seed {seed} subtlety {s}: precision {p['precision']:.3f} recall "
                  f"{p['recall']:.3f} (tp {p['true_positives']} fp {p['false_positives']} "
                  f"fn {p['false_negatives']}); look-alikes flagged {look}; honest blocked "
                  f"{len(ev['honest_blocked'])}", flush=True)
        classes = sorted({c["behaviour"] for ev in rows.values() for c in ev["classes"]})
        print(f"\nseed {seed}: recall per behaviour against subtlety")
        print(f"{'behaviour':<18}" + "".join(f"{s:>8}" for s in args.subtlety))
        for b in classes:
            cells = []
            for s in args.subtlety:
                c = next(c for c in rows[s]["classes"] if c["behaviour"] == b)
                cells.append(f"{c['recall']:>8.3f}")
            print(f"{b:<18}" + "".join(cells))
        print(f"{'pooled precision':<18}" + "".join(
            f"{rows[s]['pooled']['precision']:>8.3f}" for s in args.subtlety))
        print(f"{'pooled recall':<18}" + "".join(
            f"{rows[s]['pooled']['recall']:>8.3f}" for s in args.subtlety))
        print()
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
