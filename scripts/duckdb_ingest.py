"""DuckDB side of the ingest benchmark: JSON Lines to one zstd Parquet file, 2 threads (docs/performance.md).

Usage: python3 scripts/duckdb_ingest.py DIR OUT.parquet   (DIR holds SERVER/*.jsonl and SERVER/*.jsonl.gz)
"""
import duckdb, time, sys, os, glob
src = sys.argv[1]; out = sys.argv[2]
files = sorted(glob.glob(os.path.join(src, "*", "*.jsonl")) + glob.glob(os.path.join(src, "*", "*.jsonl.gz")))
size = sum(os.path.getsize(f) for f in files)
con = duckdb.connect()
con.execute("SET threads = 2")
con.execute("SET preserve_insertion_order = false")
t = time.perf_counter()
con.execute(f"COPY (SELECT * FROM read_json({files!r}, format='newline_delimited', union_by_name=true)) TO '{out}' (FORMAT parquet, COMPRESSION zstd)")
dt = time.perf_counter() - t
n = con.execute(f"SELECT count(*) FROM read_parquet('{out}')").fetchone()[0]
print(f"duckdb {duckdb.__version__}: {n} rows, {size/1e6:.0f} MB on disk in {dt:.1f} s: {size/1e6/dt:.1f} MB/s, {n/dt:.0f} events/s")
