#!/usr/bin/env python3
"""Reads every table of a Vigie lake with independent Delta readers and prints, per table and reader, the row count
and a content checksum, as JSON on stdout.

    python3 tests/lake/readers.py LAKE --vigie DIR [--readers deltalake,polars,duckdb] [--spark QUERIES.json]

Each table is also read through a filter per reader: the rows equal to one value of each of its first four text
columns, against the reference's count.

Readers: `deltalake` (delta-rs: DeltaTable(path).to_pyarrow_dataset()), `polars` (scan_delta) and `duckdb`
(`delta_scan` of the delta extension, loaded from the PyPI package `duckdb-extension-delta`). `--vigie DIR` holds
`TABLE.parquet`, what `vigie sql --format parquet "SELECT * FROM TABLE"` printed: it is checksummed the same way, as
the reference. The checksum is a SHA-256 over the table's rows, each made canonical (columns by name, timestamps as
epoch milliseconds, dates as ISO text, binary as hex, lists element by element), sorted.

With `--spark QUERIES.json` ({"name": "SQL over events, games, flags"}), pyspark reads the Parquet files of the
current Delta snapshot of `events`, `games` and `flags` (their list taken from the Delta log by deltalake, never
from the directory: files removed by compaction are still there) and runs each query; the rows are printed.
"""

import argparse
import datetime
import glob
import hashlib
import json
import os
import sys


def norm(v):
    if isinstance(v, datetime.datetime):
        if v.tzinfo is None:
            v = v.replace(tzinfo=datetime.timezone.utc)
        return ["ts", round(v.timestamp() * 1000)]
    if isinstance(v, datetime.date):
        return v.isoformat()
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v).hex()
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, (list, tuple)):
        return [norm(x) for x in v]
    if isinstance(v, dict):
        return {k: norm(x) for k, x in sorted(v.items())}
    return v


def checksum(table):
    """Rows and checksum of a pyarrow table."""
    cols = sorted(table.column_names)
    values = {c: table.column(c).to_pylist() for c in cols}
    rows = []
    for i in range(table.num_rows):
        rows.append(json.dumps([norm(values[c][i]) for c in cols], sort_keys=True, default=str))
    rows.sort()
    h = hashlib.sha256()
    for r in rows:
        h.update(r.encode())
        h.update(b"\n")
    return {"rows": table.num_rows, "checksum": h.hexdigest(), "columns": cols}


def duckdb_connection():
    import duckdb
    import duckdb_extension_delta

    base = os.path.dirname(duckdb_extension_delta.__file__)
    ext = glob.glob(os.path.join(base, "extensions", "*", "delta.duckdb_extension"))
    if not ext:
        raise SystemExit(f"no delta.duckdb_extension under {base}")
    c = duckdb.connect()
    c.execute(f"LOAD '{ext[0]}'")
    return c


def read(reader, path, con):
    if reader == "deltalake":
        from deltalake import DeltaTable

        return DeltaTable(path).to_pyarrow_dataset().to_table()
    if reader == "polars":
        import polars as pl

        return pl.scan_delta(path).collect().to_arrow()
    if reader == "duckdb":
        rel = con.sql(f"SELECT * FROM delta_scan('{path}')")
        got = rel.fetch_arrow_table() if hasattr(rel, "fetch_arrow_table") else rel.arrow()
        return got.read_all() if hasattr(got, "read_all") else got
    raise SystemExit(f"unknown reader {reader}")


def filtered_counts(readers, path, con, reference):
    """Rows equal to one value of each text column (the first non-null the reference holds), per reader:
    a filter each reader pushes down to its scan (pyarrow's datasets could not compare a column polars
    declared `string_view` with a `string` value)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    out = {}
    for field in reference.schema:
        if len(out) == 4:
            break
        if not (pa.types.is_string(field.type) or pa.types.is_large_string(field.type)
                or pa.types.is_string_view(field.type)):
            continue
        values = reference[field.name].drop_null()
        if len(values) == 0:
            continue
        value = values[0].as_py()
        entry = {"value": value, "vigie": int(pc.sum(pc.equal(reference[field.name], value)).as_py() or 0)}
        for r in readers:
            if r == "deltalake":
                import pyarrow.dataset as ds
                from deltalake import DeltaTable

                n = DeltaTable(path).to_pyarrow_dataset().count_rows(filter=ds.field(field.name) == value)
            elif r == "polars":
                import polars as pl

                n = pl.scan_delta(path).filter(pl.col(field.name) == value).select(pl.len()).collect().item()
            else:
                n = con.execute(f'SELECT count(*) FROM delta_scan(?) WHERE "{field.name}" = ?', [path, value]).fetchone()[0]
            entry[r] = int(n)
        out[field.name] = entry
    return out


def spark_rows(lake, queries):
    from deltalake import DeltaTable
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("vigie-delta-files")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    for t in ("events", "games", "flags"):
        path = os.path.join(lake, t)
        files = DeltaTable(path).file_uris()
        if files:
            df = spark.read.option("basePath", path).parquet(*files)
        else:
            df = spark.read.parquet(os.path.join(path, "_no_files_"))  # raises: a table must have files
        df.createOrReplaceTempView(t)
    out = {}
    for name, sql in queries.items():
        out[name] = [[norm(v) for v in r] for r in spark.sql(sql).collect()]
    spark.stop()
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("lake")
    p.add_argument("--vigie", required=True, help="directory of TABLE.parquet exported by vigie sql")
    p.add_argument("--readers", default="deltalake,polars,duckdb")
    p.add_argument("--spark", help="JSON file of named queries to run in Spark")
    a = p.parse_args()
    import pyarrow.parquet as pq

    readers = [r for r in a.readers.split(",") if r]
    con = duckdb_connection() if "duckdb" in readers else None
    result = {}
    for name in sorted(os.listdir(a.vigie)):
        if not name.endswith(".parquet"):
            continue
        table = name[: -len(".parquet")]
        reference = pq.read_table(os.path.join(a.vigie, name))
        entry = {"vigie": checksum(reference)}
        for r in readers:
            entry[r] = checksum(read(r, os.path.join(a.lake, table), con))
        entry["filters"] = filtered_counts(readers, os.path.join(a.lake, table), con, reference)
        result[table] = entry
    if a.spark:
        with open(a.spark) as f:
            result["_spark"] = spark_rows(a.lake, json.load(f))
    json.dump(result, sys.stdout, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
