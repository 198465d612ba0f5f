#!/usr/bin/env python3
"""Plays Vigie's draughts engine against an independent engine from PyPI (py-draughts).

Both engines get the same time per move. Games start from varied openings (random legal plies from
the start position, drawn from --seed); each opening is played twice, colours swapped. The arbiter
is py-draughts' own board: its legal moves, its end of game and draw rules (25-move, repetition);
a game still running after --max-plies is scored a draw.

    python3 -m pip install py-draughts
    python3 scripts/engine_match.py --vigie target/release/vigie --variant international \\
        --games 100 --movetime 100

Vigie is driven through `vigie draughts analyse --fen - --json` (one FEN per line on stdin, one JSON
object per line out). Prints one line per game and a summary; --json writes the summary to a file.
"""

import argparse
import json
import math
import random
import shlex
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor


def fen_of(board):
    """py-draughts' FEN without its PDN tag wrapper."""
    f = board.fen
    if f.startswith("[FEN"):
        f = f.split('"')[1]
    return f


class Vigie:
    def __init__(self, cmd):
        self.proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1
        )

    def move(self, board):
        self.proc.stdin.write(fen_of(board) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("vigie ended")
        reply = json.loads(line)
        if reply.get("error"):
            raise RuntimeError(f"vigie: {reply['error']} on {fen_of(board)}")
        best = reply["lines"][0] if "lines" in reply else reply
        want = (best["from"], best["to"], frozenset(best["captures"]))
        for m in board.legal_moves:
            got = (m.square_list[0] + 1, m.square_list[-1] + 1, frozenset(c + 1 for c in m.captured_list))
            if got == want:
                return m, reply.get("depth")
        raise RuntimeError(f"vigie's move {best} is not legal for py-draughts in {fen_of(board)}")

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


def opponent(variant, movetime_s):
    from draughts import SimpleEngine

    if variant == "international":
        from draughts.engines.turbo import TurboEngine

        return TurboEngine(depth_limit=64, time_limit=movetime_s), "py-draughts TurboEngine"
    return SimpleEngine(depth_limit=64, time_limit=movetime_s), "py-draughts SimpleEngine"


def new_board(variant):
    from draughts import BrazilianBoard, StandardBoard

    return StandardBoard() if variant == "international" else BrazilianBoard()


def opening(variant, rng, plies):
    board = new_board(variant)
    moves = []
    for _ in range(plies):
        legal = board.legal_moves
        if not legal:
            break
        m = rng.choice(legal)
        moves.append(str(m))
        board.push(m)
    return moves


def play(job):
    """One game; returns Vigie's score (1, 0.5, 0) and details."""
    variant, opening_moves, vigie_white, args = job
    board = new_board(variant)
    for text in opening_moves:
        m = next(m for m in board.legal_moves if str(m) == text)
        board.push(m)
    cmd = shlex.split(args.engine_cmd) if args.engine_cmd else [
        args.vigie, "draughts", "analyse", "--variant", variant,
        "--movetime", str(args.vigie_movetime or args.movetime), "--fen", "-", "--json",
    ]
    vigie = Vigie(cmd)
    opp, _ = opponent(variant, args.movetime / 1000)
    from draughts import Color

    vigie_color = Color.WHITE if vigie_white else Color.BLACK
    plies = 0
    depths = []
    t0 = time.time()
    try:
        while not board.game_over and plies < args.max_plies:
            if board.turn == vigie_color:
                m, d = vigie.move(board)
                if d is not None:
                    depths.append(d)
            else:
                m = opp.get_best_move(board)
            board.push(m)
            plies += 1
    finally:
        vigie.close()
    if board.game_over and board.result in ("1-0", "0-1"):
        white_won = board.result == "1-0"
        score = 1.0 if white_won == vigie_white else 0.0
        how = board.result
    else:
        score = 0.5
        how = "1/2-1/2" if board.game_over else f"draw at {args.max_plies} plies"
    return {
        "opening": opening_moves,
        "vigie_white": vigie_white,
        "score": score,
        "result": how,
        "plies": plies,
        "vigie_mean_depth": (sum(depths) / len(depths)) if depths else None,
        "seconds": round(time.time() - t0, 1),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vigie", default="target/release/vigie")
    ap.add_argument("--engine-cmd", help="another command speaking the same line protocol (for tuning)")
    ap.add_argument("--variant", choices=["international", "brazilian"], default="international")
    ap.add_argument("--games", type=int, default=100)
    ap.add_argument("--movetime", type=int, default=100, help="milliseconds per move, both engines")
    ap.add_argument("--vigie-movetime", type=int, help="Vigie's milliseconds per move, if different")
    ap.add_argument("--opening-plies", type=int, default=4)
    ap.add_argument("--max-plies", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--json", help="write the summary here")
    args = ap.parse_args()

    rng = random.Random(args.seed)
    jobs = []
    for _ in range((args.games + 1) // 2):
        o = opening(args.variant, rng, args.opening_plies)
        jobs.append((args.variant, o, True, args))
        jobs.append((args.variant, o, False, args))
    jobs = jobs[: args.games]
    _, opp_name = opponent(args.variant, args.movetime / 1000)
    t0 = time.time()
    results = []
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        for i, r in enumerate(pool.map(play, jobs)):
            results.append(r)
            print(
                f"game {i + 1:3}: vigie {'white' if r['vigie_white'] else 'black'} "
                f"{r['score']:.1f} ({r['result']}, {r['plies']} plies, depth {r['vigie_mean_depth'] or 0:.1f}) "
                f"opening {' '.join(r['opening'])}",
                flush=True,
            )
    wins = sum(r["score"] == 1.0 for r in results)
    draws = sum(r["score"] == 0.5 for r in results)
    losses = sum(r["score"] == 0.0 for r in results)
    score = sum(r["score"] for r in results) / len(results)
    p = min(max(score, 1e-3), 1 - 1e-3)
    elo = -400 * math.log10(1 / p - 1)
    summary = {
        "variant": args.variant,
        "opponent": opp_name,
        "games": len(results),
        "movetime_ms": args.movetime,
        "vigie_movetime_ms": args.vigie_movetime or args.movetime,
        "wins": wins,
        "draws": draws,
        "losses": losses,
        "score": round(score, 4),
        "elo_difference": round(elo),
        "seconds": round(time.time() - t0),
        "games_detail": results,
    }
    print(
        f"vigie vs {opp_name}, {args.variant}, {len(results)} games, "
        f"{args.vigie_movetime or args.movetime} ms against {args.movetime} ms a move: "
        f"+{wins} ={draws} -{losses}, score {score:.1%} (Elo {elo:+.0f}), {summary['seconds']} s"
    )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
