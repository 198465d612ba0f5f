#!/usr/bin/env python3
"""Engine-assisted play: recall by engine use, precision, and the very strong honest players flagged.

For each seed: simulates a platform with engine-assisted accounts and very strong honest players
(`vigie simulate --engine-users N --strong-players M`), runs ingest, replay, analyse (every eligible
game: --sample 1) and detect on a fresh lake, then reads the lake's Delta tables with the
`deltalake` package (not with Vigie): `flags` for the `engine_assistance` rule and `move_analysis`
for the analysed games per account. Recall counts the engine users with at least --min-games
analysed games, per use (share of moves, share of games, critical positions only); precision
counts every flag of the rule, very strong honest players included. Tune on one seed, report the
others.

    python3 -m pip install deltalake pyarrow
    python3 scripts/engine_eval.py --vigie target/release/vigie --work /tmp/engine --seeds 31 32
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
from collections import defaultdict


def run(cmd, log):
    with open(log, "a") as err:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=err, text=True)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({p.returncode}); see {log}")
    return p.stdout


def table(lake, name):
    from deltalake import DeltaTable

    return DeltaTable(os.path.join(lake, name)).to_pyarrow_table().to_pylist()


def use_label(engine):
    if engine["mode"] == "critical":
        return "critical"
    return f"{engine['mode']} {engine['share']:.2f}"


def one(args, seed):
    base = os.path.join(args.work, f"s{seed}")
    sim, lake, log = base + "-sim", base + "-lake", base + ".log"
    if not args.reuse:
        for d in (sim, lake):
            shutil.rmtree(d, ignore_errors=True)
        if os.path.exists(log):
            os.remove(log)
        v = [args.vigie, "-q"]
        run(v + ["simulate", "--out", sim, "--seed", str(seed), "--days", str(args.days),
                 "--games-per-day", str(args.games_per_day), "--accounts", str(args.accounts),
                 "--engine-users", str(args.engine_users), "--strong-players", str(args.strong_players)], log)
        run(v + ["ingest", "--lake", lake, sim], log)
        run(v + ["replay", "--lake", lake], log)
        run(v + ["analyse", "--lake", lake, "--sample", "1", "--nodes", str(args.nodes),
                 "--threads", str(args.threads)], log)
    run([args.vigie, "-q", "detect", "--lake", lake], log)
    labels = json.load(open(os.path.join(sim, "labels.json")))
    truth = {a["account"]: a for a in labels["accounts"]}
    games = defaultdict(set)
    for r in table(lake, "move_analysis"):
        games[r["player"]].add(r["game"])
    flagged = {f["account"]: f for f in table(lake, "flags") if f["rule"] == "engine_assistance"}
    by_use = defaultdict(lambda: [0, 0, 0])  # eligible, caught, all users of this use
    for acc, a in truth.items():
        if a["behaviour"] != "engine_assisted":
            continue
        u = use_label(a["engine"])
        by_use[u][2] += 1
        if len(games[acc]) >= args.min_games:
            by_use[u][0] += 1
            by_use[u][1] += acc in flagged
    tp = sum(truth.get(a, {}).get("behaviour") == "engine_assisted" for a in flagged)
    fp = [a for a in flagged if truth.get(a, {}).get("behaviour") != "engine_assisted"]
    strong = [a for a, t in truth.items() if t.get("lookalike") == "very_strong"]
    strong_flagged = [a for a in strong if a in flagged]
    # A share of 30 % or more of the moves: on each move with such a chance, or on every move of
    # such a share of games (critical-only users have no share: reported apart).
    big = [u for u in by_use if u != "critical" and float(u.split()[1]) >= 0.3 - 1e-9]
    elig = sum(by_use[u][0] for u in big)
    caught = sum(by_use[u][1] for u in big)
    out = {
        "seed": seed,
        "recall_by_use": {u: {"eligible": e, "flagged": c, "users": n, "recall": (c / e) if e else None}
                          for u, (e, c, n) in sorted(by_use.items())},
        "recall_share_at_least_0.3": (caught / elig) if elig else None,
        "flags": len(flagged),
        "precision": (tp / len(flagged)) if flagged else None,
        "false_flags": [{"account": a, "truth": truth.get(a, {}).get("behaviour"),
                         "lookalike": truth.get(a, {}).get("lookalike"),
                         "analysed_games": len(games[a])} for a in fp],
        "very_strong": len(strong),
        "very_strong_flagged": len(strong_flagged),
        "analysed_accounts": len(games),
    }
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vigie", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--seeds", type=int, nargs="+", default=[31])
    ap.add_argument("--days", type=int, default=4)
    ap.add_argument("--games-per-day", type=int, default=800)
    ap.add_argument("--accounts", type=int, default=160)
    ap.add_argument("--engine-users", type=int, default=21)
    ap.add_argument("--strong-players", type=int, default=10)
    ap.add_argument("--nodes", type=int, default=50000)
    ap.add_argument("--min-games", type=int, default=10)
    ap.add_argument("--threads", type=int, default=0, help="analysis threads (0: one per core)")
    ap.add_argument("--reuse", action="store_true", help="keep the simulated lake, re-run detect only")
    ap.add_argument("--out")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    results = []
    for seed in args.seeds:
        r = one(args, seed)
        results.append(r)
        print(f"seed {seed}: {r['flags']} flags, precision {r['precision']}, "
              f"recall (share >= 0.3, >= {args.min_games} analysed games) {r['recall_share_at_least_0.3']}, "
              f"very strong flagged {r['very_strong_flagged']}/{r['very_strong']}")
        for u, v in r["recall_by_use"].items():
            print(f"  {u:12} users {v['users']:3} eligible {v['eligible']:3} flagged {v['flagged']:3} recall {v['recall']}")
        for f in r["false_flags"]:
            print(f"  false flag: {f}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
