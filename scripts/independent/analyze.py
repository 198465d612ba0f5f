#!/usr/bin/env python3
"""Per-class sanity metrics of a generated run (uses the logs + labels only)."""
import glob, json, math, os, sys, statistics as S
from collections import Counter, defaultdict
d = sys.argv[1]
lab = {a["account"]: a for a in json.load(open(os.path.join(d, "labels.json")))["accounts"]}
think = defaultdict(list); rej = Counter(); acc_moves = Counter(); games = Counter(); lost = Counter()
left = Counter(); tout = Counter(); won = Counter(); resigned = Counter()
for fn in sorted(glob.glob(os.path.join(d, "logs", "*.jsonl"))):
    for line in open(fn):
        e = json.loads(line)
        t = e["type"]
        if t == "move" and not e.get("pass") and not e.get("auto"):
            if e["status"] == "accepted":
                acc_moves[e["player"]] += 1
                if len(think[e["player"]]) < 4000:
                    think[e["player"]].append(e["think_ms"]) if "move" in e else None
            elif e["reason"] == "illegal":
                rej[e["player"]] += 1
        elif t == "game_started":
            for p in e["players"]: games[p["account"]] += 1
        elif t == "left":
            (resigned if e["reason"] == "resigned" else left)[e["player"]] += 1
        elif t == "timeout":
            tout[e["player"]] += 1
        elif t == "game_ended":
            pl = list(e["payouts"])
            w = e["result"] if e["result"].startswith("acc") else ({"white": pl[0], "black": pl[1]}.get(e["result"]))
            if w: won[w] += 1
def cls(a):
    l = lab[a]; return l["behaviour"] + ("/" + l["lookalike"] if l["lookalike"] else "")
rows = defaultdict(list)
for a in lab:
    if games[a] == 0: continue
    th = think[a]
    lg = [math.log(x) for x in th if x > 0]
    sd = S.pstdev(lg) if len(lg) > 5 else float("nan")
    rows[cls(a)].append((games[a], sd, rej[a] / max(1, acc_moves[a]), left[a] / games[a], tout[a] / games[a],
                         resigned[a] / games[a], S.median(th) if th else 0, won[a] / games[a]))
print("%-30s %4s %6s %6s %7s %6s %6s %6s %6s" % ("class", "n", "games", "logsd", "rej%", "left%", "tout%", "resig%", "medth") + "   win%")
for c, r in sorted(rows.items()):
    m = lambda i: S.median([x[i] for x in r])
    print("%-30s %4d %6.0f %6.2f %7.3f %6.1f %6.1f %6.1f %6.0f" % (c, len(r), m(0), m(1), 100*m(2), 100*m(3), 100*m(4), 100*m(5), m(6)) + "  %5.1f" % (100*m(7)))
