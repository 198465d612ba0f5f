"""Times dame-rs (PyPI package `dame-rs`, module `dame`) perft for PERF.md.

Usage: python3 scripts/dame_perft.py [FEN] [DEPTH] [RUNS]
"""
import sys
import time

import dame

fen = sys.argv[1] if len(sys.argv) > 1 else dame.STARTING_FEN
depth = int(sys.argv[2]) if len(sys.argv) > 2 else 9
runs = int(sys.argv[3]) if len(sys.argv) > 3 else 5
board = dame.Board(fen)
times = []
nodes = 0
for _ in range(runs):
    t = time.perf_counter()
    nodes = dame.perft(board, depth)
    times.append(time.perf_counter() - t)
times.sort()
median = times[len(times) // 2]
print(f"dame-rs {dame.__version__} perft {fen} depth {depth}: {nodes} leaves; runs {runs}; "
      f"min {times[0]:.3f} s, median {median:.3f} s, {nodes / median / 1e6:.1f} M leaves/s (median)")
