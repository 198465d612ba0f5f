#!/usr/bin/env python3
"""Own validator for generated logs: envelope, seq, prev chain, ts, replays of
draughts10 (py-draughts) and ludo (dice from the revealed seed), payouts.
Usage: check.py DIR_OR_FILES...   prints findings (first 30) and a summary."""
import glob
import hashlib
import json
import os
import re
import sys
from collections import Counter, defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen import die_value, SAFE, SEAT_START  # noqa: E402
from draughts import StandardBoard  # noqa: E402
from draughts.models import Color  # noqa: E402

TS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
GID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
TYPES = {"game_started", "selection", "move", "roll", "deal", "bid", "hands_completed", "play",
         "deal_ended", "timeout", "draw_offer", "draw_answer", "left", "game_ended", "seed_revealed"}

findings = []
stats = Counter()


def F(g, seq, msg):
    findings.append("%s seq=%s: %s" % (g, seq, msg))


def tsms(s):
    import calendar
    import time as _t
    return calendar.timegm(_t.strptime(s[:19], "%Y-%m-%dT%H:%M:%S")) * 1000 + int(s[20:23])


def check_payouts(g, ev, players, stake, winner):
    pay, rake = ev["payouts"], ev["rake"]
    pot = stake * len(players)
    if set(pay) != set(players):
        F(g, ev["seq"], "payout accounts")
    if sum(pay.values()) + rake != pot:
        F(g, ev["seq"], "sum(payouts)+rake != pot")
    if winner is None:
        if rake != 0 or any(v != stake for v in pay.values()):
            F(g, ev["seq"], "draw payouts")
    else:
        if pay.get(winner) != pot - rake or rake != pot * 5 // 100:
            F(g, ev["seq"], "winner payout/rake")


def replay_d10(g, evs):
    st = evs[0]
    players = {p["seat"]: p["account"] for p in st["players"]}
    col = {v: k for k, v in players.items()}
    b = StandardBoard()
    quiet = 0
    turn_start = tsms(st["ts"])
    ended = None
    expected_end = None  # (result, reason)
    first_turn = True
    for e in evs[1:]:
        t = e["type"]
        ms = tsms(e["ts"])
        tomove = "white" if b.turn == Color.WHITE else "black"
        if ended is not None and t not in ("move",):
            F(g, e["seq"], "event after game_ended: " + t)
        if t == "move":
            if e["status"] == "rejected":
                if e["reason"] == "illegal":
                    if e["move"] in {str(m) for m in b.legal_moves}:
                        F(g, e["seq"], "rejected but legal")
                    stats["d10_rejected_illegal"] += 1
                elif e["reason"] == "game_over":
                    if expected_end is None:
                        F(g, e["seq"], "game_over before end")
                continue
            if expected_end is not None:
                F(g, e["seq"], "accepted move after deciding event")
            if col.get(e["player"]) != tomove:
                F(g, e["seq"], "not the player to move")
            legal = {str(m): m for m in b.legal_moves}
            if e["move"] not in legal:
                F(g, e["seq"], "illegal accepted move %s" % e["move"])
                return
            if abs(ms - (turn_start + e["think_ms"])) > 2:
                F(g, e["seq"], "think_ms/ts mismatch")
            if e["think_ms"] >= 30000:
                F(g, e["seq"], "think over clock")
            m = legal[e["move"]]
            man = b._get(m.square_list[0]) in (-1, 1)
            b.push(m)
            quiet = 0 if (m.captured_list or man) else quiet + 1
            turn_start = ms
            first_turn = False
            if quiet >= 50:
                expected_end = ("draw", "draw_rule")
            else:
                nxt = "white" if b.turn == Color.WHITE else "black"
                pieces = (b.white_men | b.white_kings) if nxt == "white" else (b.black_men | b.black_kings)
                if pieces == 0:
                    expected_end = (tomove, "no_pieces")
                elif not b.legal_moves:
                    expected_end = (tomove, "no_moves")
        elif t == "timeout":
            if col.get(e["player"]) != tomove or e["outcome"] != "loss" or e["elapsed_ms"] < 30000:
                F(g, e["seq"], "bad timeout")
            if abs(ms - (turn_start + e["elapsed_ms"])) > 2:
                F(g, e["seq"], "timeout elapsed/ts mismatch")
            expected_end = ("black" if col[e["player"]] == "white" else "white", "timeout")
        elif t == "left":
            expected_end = ("black" if col[e["player"]] == "white" else "white", "left")
        elif t == "draw_offer":
            if col.get(e["player"]) != tomove:
                F(g, e["seq"], "offer by player not to move")
        elif t == "draw_answer":
            if e["accept"]:
                expected_end = ("draw", "agreement")
        elif t == "game_ended":
            ended = e
            if expected_end is None:
                F(g, e["seq"], "game_ended without deciding event")
            elif (e["result"], e["reason"]) != expected_end:
                F(g, e["seq"], "result %s/%s expected %s/%s" % (e["result"], e["reason"], *expected_end))
            w = None if e["result"] == "draw" else players.get(e["result"])
            check_payouts(g, e, list(players.values()), st["stake"], w)
        else:
            F(g, e["seq"], "unexpected type " + t)
    if ended is None:
        F(g, evs[-1]["seq"], "no game_ended")


def replay_ludo(g, evs):
    st = evs[0]
    V = st["variant"]
    seats = [p["seat"] for p in st["players"]]
    accs = [p["account"] for p in st["players"]]
    idx = {a: i for i, a in enumerate(accs)}
    n, T = len(accs), V["tokens"]
    starts = [SEAT_START[s] for s in seats]
    exp_seats = ["red", "yellow"] if n == 2 else ["red", "green", "yellow", "blue"]
    if seats != exp_seats or n != V["players"]:
        F(g, 0, "seats")
    seed = evs[-1].get("seed") if evs[-1]["type"] == "seed_revealed" else None
    if seed is None:
        F(g, evs[-1]["seq"], "no seed_revealed last")
        return
    if hashlib.sha256(seed.encode()).hexdigest() != st["commitment"]:
        F(g, 0, "commitment mismatch")
    pos = [[-1] * T for _ in range(n)]
    alive = [True] * n
    consec = [0] * n
    cur = 0
    rolln = 0
    sixes = 0
    pending = None  # die value awaiting a move
    bonus_turn = False
    winner = None
    end_reason = None
    ended = False
    clock = V["turn_s"] * 1000

    def movable(i, d):
        out = []
        for k, p in enumerate(pos[i]):
            if p < 0:
                if d in V["exit_on"]:
                    out.append(k)
            elif p + d <= 56:
                out.append(k)
        return out

    def advance():
        nonlocal cur, sixes
        sixes = 0
        for _ in range(n):
            cur = (cur + 1) % n
            if alive[cur]:
                return

    def remove(i, why):
        nonlocal winner, end_reason, pending
        alive[i] = False
        pos[i] = [-1] * T
        al = [j for j in range(n) if alive[j]]
        if len(al) == 1:
            winner, end_reason = al[0], why
        if i == cur:
            pending = None
            advance()

    for e in evs[1:]:
        t = e["type"]
        if t == "seed_revealed":
            break
        if ended:
            F(g, e["seq"], "event after game_ended")
        if t == "roll":
            p = idx[e["player"]]
            if p != cur or pending is not None or winner is not None:
                F(g, e["seq"], "roll out of turn")
                return
            if e["n"] != rolln:
                F(g, e["seq"], "roll n")
            dv = die_value(seed, g, rolln)
            if dv != e["value"]:
                F(g, e["seq"], "die mismatch logged %d derived %d" % (e["value"], dv))
            rolln += 1
            d = e["value"]
            stats["ludo_rolls"] += 1
            if d == 6:
                sixes += 1
                if V["three_sixes"] and sixes == 3:
                    advance()
                    continue
            pending = d
        elif t == "move":
            p = idx[e["player"]]
            if e["status"] == "rejected":
                if e["reason"] == "illegal" and pending is not None and e["token"] in movable(p, pending):
                    F(g, e["seq"], "rejected but legal")
                stats["ludo_rejected_" + e["reason"]] += 1
                continue
            if p != cur or pending is None:
                F(g, e["seq"], "move out of turn")
                return
            d = pending
            pending = None
            mv = movable(p, d)
            if e.get("pass"):
                if mv:
                    F(g, e["seq"], "pass with a movable token")
                bonus = d == 6 and V["bonus_on_six"]
            else:
                if not e.get("auto"):
                    consec[p] = 0
                k = e["token"]
                if k not in mv:
                    F(g, e["seq"], "illegal accepted token")
                    return
                if e.get("auto") and k != mv[0]:
                    F(g, e["seq"], "auto move not lowest token")
                if e["think_ms"] >= clock and not e.get("auto"):
                    F(g, e["seq"], "think over clock")
                q = pos[p][k]
                np_ = 0 if q < 0 else q + d
                pos[p][k] = np_
                cap = False
                if np_ <= 50:
                    sq = (starts[p] + np_) % 52
                    if not (V["safe_squares"] and sq in SAFE):
                        for j in range(n):
                            if j != p and alive[j]:
                                for k2, q2 in enumerate(pos[j]):
                                    if 0 <= q2 <= 50 and (starts[j] + q2) % 52 == sq:
                                        pos[j][k2] = -1
                                        cap = True
                if all(x == 56 for x in pos[p]):
                    winner, end_reason = p, "finished"
                bonus = (d == 6 and V["bonus_on_six"]) or (cap and V["bonus_on_capture"]) or \
                        (np_ == 56 and V["bonus_on_finish"])
            if winner is None and not bonus:
                advance()
        elif t == "timeout":
            p = idx[e["player"]]
            if p != cur:
                F(g, e["seq"], "timeout of player not to act")
            consec[p] += 1
            if e["elapsed_ms"] < clock:
                F(g, e["seq"], "timeout under clock")
            if consec[p] >= V["max_timeouts"]:
                if e["outcome"] != "forfeit":
                    F(g, e["seq"], "should forfeit")
                if pending is not None:
                    stats["forfeit_with_pending_roll"] += 1
                remove(p, "timeouts")
            elif e["outcome"] != "auto":
                F(g, e["seq"], "timeout outcome")
            else:
                if pending is None:
                    consec[p] = consec[p]  # a roll will follow
        elif t == "left":
            p = idx[e["player"]]
            remove(p, "left")
        elif t == "game_ended":
            ended = True
            if winner is None:
                F(g, e["seq"], "game_ended without a winner")
            elif e["result"] != accs[winner] or e["reason"] != end_reason:
                F(g, e["seq"], "result %s/%s expected %s/%s" % (e["result"], e["reason"], accs[winner], end_reason))
            check_payouts(g, e, accs, st["stake"], e["result"])
        else:
            F(g, e["seq"], "unexpected type " + t)
    if not ended:
        F(g, evs[-1]["seq"], "no game_ended")


def main():
    files = []
    for a in sys.argv[1:]:
        files += sorted(glob.glob(os.path.join(a, "**", "*.jsonl"), recursive=True)) if os.path.isdir(a) else [a]
    files = [f for f in files if "/logs/" in f or not os.path.isdir(os.path.dirname(f) + "/logs")]
    seeds = Counter()
    seen_games = set()
    for fn in files:
        games = defaultdict(list)
        raw = {}
        lastts = ""
        with open(fn, encoding="utf-8") as fh:
            for ln, line in enumerate(fh):
                line = line.rstrip("\n")
                stats["lines"] += 1
                try:
                    e = json.loads(line)
                except Exception:
                    F(fn, ln, "not json")
                    continue
                if e.get("v") != 1 or not isinstance(e.get("seq"), int) or not isinstance(e.get("game"), str) \
                        or not GID.match(e["game"]) or not TS.match(e.get("ts", "")) or e.get("type") not in TYPES:
                    F(fn, ln, "envelope")
                    continue
                if e["ts"] < lastts:
                    stats["file_ts_not_sorted"] += 1
                lastts = e["ts"]
                g = e["game"]
                prevline = raw.get(g)
                if e["seq"] == 0:
                    if "prev" in e or g in raw or g in seen_games:
                        F(g, 0, "seq 0 has prev / duplicate game")
                else:
                    if prevline is None or e.get("prev") != hashlib.sha256(prevline.encode()).hexdigest():
                        F(g, e["seq"], "prev chain")
                raw[g] = line
                games[g].append(e)
        seen_games.update(games)
        for g, evs in games.items():
            for i, e in enumerate(evs):
                if e["seq"] != i:
                    F(g, e["seq"], "seq gap/order")
                    break
                if i and e["ts"] < evs[i - 1]["ts"]:
                    F(g, e["seq"], "ts goes back")
            k = evs[0].get("kind")
            stats["games_" + str(k)] += 1
            if k == "draughts10":
                replay_d10(g, evs)
            elif k == "ludo":
                replay_ludo(g, evs)
                seeds[evs[-1].get("seed")] += 1
    for s, c in seeds.items():
        if c > 1:
            F("-", "-", "seed reused %s" % s)
    for f in findings[:30]:
        print("FINDING", f)
    print(json.dumps({"findings": len(findings), "games_with_findings": len({f.split(" ")[0] for f in findings}), **dict(sorted(stats.items()))}, indent=1))
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
