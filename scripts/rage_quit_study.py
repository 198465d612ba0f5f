#!/usr/bin/env python3
"""Recompute the `rage_quit` rule's test outside Vigie, with other baselines, to see what limits its recall.

Reads `account_features` and `departures` of lakes kept by `scripts/detection_curve.py --keep`
(with `vigie sql`) and the simulator's labels, and applies the rule's binomial test per account:
abandons while losing (left without resigning) among its lost games, against a baseline. With no
option it is the rule of `queries/detect/rage_quit.sql` at its default parameters (the same flags).
The options change one thing at a time:

  --fixed R        every account's baseline is R (e.g. the honest players' own rate: an oracle)
  --two-pass       the "sound" share is re-estimated without the accounts the first pass flags
  --deep Q         count only abandons at or below the Q-quantile of balances in play (per game
                   kind, from `moves`) instead of any balance below 0
  --deep-scale F   multiply the own-rate part of the baseline by F (the deep share of abandons)

Prints, per seed, the rage-quitters with their counts and p-values, every flagged honest account,
and the total of rage-quitters flagged and of false flags.

    python3 scripts/rage_quit_study.py --vigie target/release/vigie --work /work/curve --seeds 40 41 42
    python3 scripts/rage_quit_study.py ... --fixed 0.015 --min-ratio 0
"""

import argparse
import csv
import io
import json
import math
import subprocess
import sys


def sql(vigie, lake, query):
    p = subprocess.run([vigie, "-q", "sql", "--lake", lake, "--format", "csv", query],
                       capture_output=True, text=True)
    if p.returncode:
        sys.exit(f"vigie sql failed on {lake}: {p.stderr[-2000:]}")
    return list(csv.DictReader(io.StringIO(p.stdout)))


def binom_at_least(k, n, p):
    """P(X >= k) for X ~ Binomial(n, p)."""
    if k <= 0:
        return 1.0
    if p <= 0:
        return 0.0
    if p >= 1:
        return 1.0
    return min(1.0, sum(math.exp(math.lgamma(n + 1) - math.lgamma(j + 1) - math.lgamma(n - j + 1)
                                 + j * math.log(p) + (n - j) * math.log1p(-p))
                        for j in range(k, n + 1)))


def num(v):
    return int(v) if v not in (None, "") else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vigie", required=True)
    ap.add_argument("--work", required=True, help="the --work directory of detection_curve.py --keep")
    ap.add_argument("--seeds", type=int, nargs="+", required=True)
    ap.add_argument("--subtlety", default="1.0", help="as in the kept lakes' names (s{seed}-x{subtlety})")
    ap.add_argument("--min-abandons", type=int, default=3)
    ap.add_argument("--prior-games", type=float, default=30)
    ap.add_argument("--min-ratio", type=float, default=3)
    ap.add_argument("--max-p", type=float, default=1e-3)
    ap.add_argument("--fixed", type=float)
    ap.add_argument("--two-pass", action="store_true")
    ap.add_argument("--deep", type=float)
    ap.add_argument("--deep-scale", type=float, default=1.0)
    a = ap.parse_args()

    found = false_flags = cheaters = 0
    for seed in a.seeds:
        base = f"{a.work}/s{seed}-x{a.subtlety}"
        labels = json.load(open(f"{base}-sim/labels.json"))
        truth = {x["account"]: (x.get("lookalike") or x["behaviour"]) for x in labels["accounts"]}
        lake = f"{base}-lake"
        feats = sql(a.vigie, lake, """SELECT account, games, losses, abandons_losing,
            coalesce(abandons, 0) AS abandons FROM account_features WHERE "window" = '30d'""")
        deep = {}
        if a.deep is not None:
            cut = (f"(SELECT kind, approx_percentile_cont(balance, {a.deep}) AS t FROM moves "
                   "WHERE balance IS NOT NULL GROUP BY kind)")
            for r in sql(a.vigie, lake, f"""SELECT d.player, count(*) FILTER (WHERE d.balance <= c.t) AS n
                FROM departures d JOIN {cut} c ON c.kind = d.kind
                WHERE d.event = 'left' AND d.reason <> 'resigned' GROUP BY d.player"""):
                deep[r["player"]] = num(r["n"])
        rows = []
        for r in feats:
            losing = num(r["abandons_losing"])
            rows.append(dict(account=r["account"], games=num(r["games"]), losses=num(r["losses"]),
                             k=deep.get(r["account"], 0) if a.deep is not None else losing,
                             other=max(num(r["abandons"]) - losing, 0)))

        def total(key, rs):
            return sum(x[key] for x in rs)

        def not_lost(x):
            return max(x["games"] - x["losses"], 0) + x["other"]

        def n_of(x):
            return max(x["losses"], x["k"])

        share = total("k", rows) / max(total("losses", rows), 1)
        sound_rows = [x for x in rows if x["other"] == 0]
        sound = total("k", sound_rows) / max(total("losses", sound_rows), 1) or share
        if a.two_pass:
            kept = [x for x in sound_rows
                    if not (x["k"] >= a.min_abandons
                            and binom_at_least(x["k"], n_of(x), sound) <= a.max_p
                            and x["k"] / n_of(x) >= a.min_ratio * sound)]
            sound = total("k", kept) / max(total("losses", kept), 1) or sound
        other_rate = total("other", rows) / max(sum(not_lost(x) for x in rows), 1)
        losing_factor = max(share / other_rate, 1.0) if other_rate > 0 else 1.0
        print(f"seed {seed}: share {share:.4f}, sound share {sound:.4f}, other rate {other_rate:.4f}, "
              f"losing factor {losing_factor:.2f}")
        for x in rows:
            cls = truth.get(x["account"], "?")
            cheaters += cls == "rage_quit"
            if x["k"] < a.min_abandons:
                if cls == "rage_quit":
                    print(f"       rage_quit   below the minimum: {x['k']} in {x['losses']} lost")
                continue
            own = (x["other"] + a.prior_games * other_rate) / (not_lost(x) + a.prior_games)
            baseline = a.fixed if a.fixed is not None else max(sound, own * losing_factor * a.deep_scale)
            p = binom_at_least(x["k"], n_of(x), baseline)
            ratio = x["k"] / n_of(x) / baseline
            flag = p <= a.max_p and ratio >= a.min_ratio
            if cls == "rage_quit":
                found += flag
            elif flag:
                false_flags += 1
            if cls == "rage_quit" or flag:
                print(f"  {'FLAG' if flag else '    '} {cls:15} {x['k']:3} in {x['losses']:3} lost, "
                      f"{x['other']:3} otherwise, baseline {baseline:.4f}, p {p:.1e}, ratio {ratio:.1f}")
    print(f"rage-quitters flagged {found} of {cheaters}, false flags {false_flags}")


if __name__ == "__main__":
    main()
