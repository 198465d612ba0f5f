#!/usr/bin/env python3
"""Detection measured on the independent simulator: generate, ingest, replay, detect, evaluate.

For each seed: `gen.py` writes a month of logs and labels, then Vigie ingests, replays and detects
into a fresh lake and `vigie eval` scores the flags. Prints pooled precision and recall, recall per
behaviour, and the honest accounts flagged (look-alike class and rule).

    python3 scripts/independent/evaluate.py --vigie target/release/vigie --work /tmp/indep --seeds 4 5
"""
import argparse
import json
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from detection_curve import fresh_run, run  # noqa: E402  (shared by the scripts/ measures)


def one(args, seed):
    out, lake, log = fresh_run(os.path.join(args.work, f"i{seed}"), "-gen")
    run([sys.executable, os.path.join(HERE, "gen.py"), "--seed", str(seed), "--out", out,
         "--accounts", str(args.accounts), "--days", str(args.days),
         "--games-per-day", str(args.games_per_day), "--stale-clients", str(args.stale_clients)], log)
    v = [args.vigie, "-q"]
    run(v + ["ingest", "--lake", lake, os.path.join(out, "logs")], log)
    run(v + ["replay", "--lake", lake], log)
    detect = v + ["detect", "--lake", lake]
    evaluate = [args.vigie, "eval", "--json", "--lake", lake, "--labels", os.path.join(out, "labels.json")]
    if args.rules:
        detect += ["--rules", args.rules]
        evaluate += ["--rules", args.rules]
    run(detect, log)
    ev = json.loads(run(evaluate, log))
    labels = {a["account"]: a for a in json.load(open(os.path.join(out, "labels.json")))["accounts"]}
    if not args.keep:
        shutil.rmtree(out, ignore_errors=True)
        shutil.rmtree(lake, ignore_errors=True)
    return ev, labels


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vigie", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--seeds", type=int, nargs="+", default=[4, 5])
    ap.add_argument("--accounts", type=int, default=800)
    ap.add_argument("--days", type=int, default=30)
    ap.add_argument("--games-per-day", type=int, default=800)
    ap.add_argument("--stale-clients", type=float, default=0.0,
                    help="gen.py's share of honest accounts with a stale client (0: the contract)")
    ap.add_argument("--rules", help="directory of the rule files (default: Vigie's)")
    ap.add_argument("--keep", action="store_true", help="keep the logs and lakes")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    for seed in args.seeds:
        ev, labels = one(args, seed)
        p = ev["pooled"]
        print(f"seed {seed}: precision {p['precision']:.3f} recall {p['recall']:.3f} "
              f"(tp {p['true_positives']} fp {p['false_positives']} fn {p['false_negatives']})")
        honest = {}
        for c in ev["classes"]:
            for case in c["false_positive_cases"]:
                if labels.get(case["account"], {}).get("behaviour") == "honest":
                    honest[case["account"]] = case
            if c["true_positives"] + c["false_negatives"] == 0:
                continue
            print(f"  {c['behaviour']:<16} recall {c['recall']:.3f} "
                  f"({c['true_positives']}/{c['true_positives'] + c['false_negatives']})")
        # Rules without a behaviour of this simulator flag look-alikes too: their cases.
        for look in ev["lookalikes"]:
            for case in look["cases"]:
                honest.setdefault(case["account"], case)
        for account, case in sorted(honest.items()):
            truth = labels.get(account, {})
            print(f"  honest {account} ({truth.get('lookalike') or 'ordinary'}) "
                  f"flagged by {', '.join(case['rules'])}, action {case['action']}")
        if p["false_positives"] > len(honest):
            print(f"  (and {p['false_positives'] - len(honest)} more honest accounts flagged: "
                  f"see vigie eval on the lake, --keep)")


if __name__ == "__main__":
    main()
