//! Analysts' SQL on every path: the CLI, the PostgreSQL endpoint with the real `psql` and Python `psycopg`, and the lake read by DuckDB and polars.
//!
//! The same guards everywhere: writes and escapes refused with a reason, a
//! query over its time or memory limit stopped and reported while the server
//! keeps serving.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use vigie::serve::users::{Role, add_user};
use vigie::sql::QueryLimits;
use vigie::sql::pg::{PgConfig, serve};

use crate::common::{ensure_python, sample_lake, vigie};

const PASSWORD: &str = "analyst-password-1";

use crate::common::REFUSED_SQL as REFUSED;

/// Slow without being a row bomb: a three-way cross join of the sample's events.
const SLOW: &str =
    "SELECT count(*) FROM events a, events b, events c WHERE a.seq + b.seq + c.seq = -1";
/// A hash join whose build side does not fit in 1 MiB (joins do not spill).
const HUNGRY: &str = "SELECT count(*) FROM events a JOIN events b ON a.raw = b.raw";
/// A join and an aggregate whose results every client must agree on.
const JOIN: &str = "SELECT g.kind, count(*) AS moves, count(DISTINCT m.game) AS games FROM moves m JOIN games g ON g.game = m.game GROUP BY g.kind ORDER BY g.kind";
const AGGREGATE: &str = "SELECT type, count(*) AS n, count(DISTINCT game) AS games FROM events GROUP BY type ORDER BY type";

fn lake_str() -> String {
    sample_lake().to_string_lossy().into_owned()
}

/// `vigie sql --format csv` rows (without the header).
fn cli_rows(query: &str) -> Vec<String> {
    let lake = lake_str();
    let out = vigie(&["sql", "--lake", &lake, "--format", "csv", query]);
    assert!(
        out.status.success(),
        "vigie sql {query}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .skip(1)
        .map(str::to_owned)
        .collect()
}

/// Runs a Python script and returns its output, failing the test when it fails.
fn python(script: &str, what: &str) -> std::process::Output {
    let out = Command::new("python3")
        .args(["-c", script])
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A refused statement fails with a reason that says so.
fn assert_refused(bad: &str, out: &std::process::Output) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{bad} succeeded");
    assert!(
        err.contains("not allowed") || err.contains("not found") || err.contains("refused"),
        "{bad}: unclear message {err}"
    );
}

#[test]
fn the_cli_refuses_writes_and_escapes_and_enforces_its_limits() {
    let lake = lake_str();
    for bad in REFUSED {
        assert_refused(bad, &vigie(&["sql", "--lake", &lake, bad]));
    }
    assert!(!Path::new("/tmp/vigie-sql-escape.csv").exists());
    let out = vigie(&["sql", "--lake", &lake, "--timeout", "1", SLOW]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("longer than"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = vigie(&["sql", "--lake", &lake, "--memory-mb", "1", HUNGRY]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr).to_lowercase();
    assert!(
        err.contains("resources exhausted") || err.contains("memory"),
        "{err}"
    );
    // A file of statements runs like a query.
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let file = dir.join("sql-file-test.sql");
    std::fs::write(&file, "SELECT count(*) AS n FROM games").unwrap();
    let out = vigie(&[
        "sql",
        "--lake",
        &lake,
        "--format",
        "json",
        "-f",
        file.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("\"n\":80"));
}

/// A PostgreSQL endpoint over the sample lake on a free port, for one test.
struct PgServer {
    addr: SocketAddr,
    rt: tokio::runtime::Runtime,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    users: PathBuf,
}

impl PgServer {
    fn start(tag: &str, limits: QueryLimits) -> PgServer {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("pg-{tag}"));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let users = dir.join("users.json");
        add_user(&users, "ana", Role::Analyst, PASSWORD).unwrap();
        add_user(&users, "rita", Role::Reviewer, PASSWORD).unwrap();
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let lake = sample_lake().to_path_buf();
        let listener = rt
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let addr = listener.local_addr().unwrap();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let mut cfg = PgConfig::new(lake, users.clone());
        cfg.limits = limits;
        rt.spawn(serve(listener, cfg, async {
            let _ = rx.await;
        }));
        PgServer {
            addr,
            rt,
            stop: Some(tx),
            users,
        }
    }

    fn psql(&self, user: &str, password: &str, sql: &str) -> Output {
        Command::new("psql")
            .arg(format!(
                "host={} port={} user={user} dbname=vigie sslmode=disable connect_timeout=10",
                self.addr.ip(),
                self.addr.port()
            ))
            .args([
                "-X",
                "-A",
                "-t",
                "-F",
                ",",
                "-v",
                "ON_ERROR_STOP=1",
                "-c",
                sql,
            ])
            .env("PGPASSWORD", password)
            .output()
            .expect("psql is missing: apt-get install -y postgresql-client")
    }

    fn psql_rows(&self, sql: &str) -> Vec<String> {
        let out = self.psql("ana", PASSWORD, sql);
        assert!(
            out.status.success(),
            "psql {sql}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| !l.is_empty())
            .map(str::to_owned)
            .collect()
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        let _ = std::fs::remove_file(&self.users);
        let _ = &self.rt;
    }
}

/// A result held for a page or a download is cut at its byte cap counted as its cells are held:
/// 200 columns of nulls (no buffer at all) stop at the cap, not after every row of a cross join.
#[test]
fn a_result_of_null_columns_is_cut_at_its_byte_cap() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let snapshot = vigie::catalog::open(sample_lake())
        .unwrap()
        .snapshot()
        .unwrap();
    let guard = rt
        .block_on(vigie::sql::Guard::on(snapshot, QueryLimits::default()))
        .unwrap();
    let columns: Vec<String> = (0..200).map(|i| format!("NULL AS c{i}")).collect();
    let sql = format!(
        "SELECT {} FROM events a CROSS JOIN (SELECT 1 FROM events LIMIT 100) b",
        columns.join(", ")
    );
    let (batches, cut) = rt
        .block_on(guard.query_within(&sql, "test", None, Some(1 << 20)))
        .unwrap();
    let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
    assert!(cut, "not cut after {rows} rows");
    // 200 cells of at least 24 bytes a row: about 218 rows in 1 MiB (of the 501,000).
    assert!(rows > 0 && rows * 200 * 24 <= 1 << 20, "{rows} rows");
}

#[test]
fn psql_and_psycopg_read_the_lake_like_vigie_sql() {
    let pg = PgServer::start("clients", QueryLimits::default());
    // Tables are listed (psql's \dt goes through pg_catalog).
    let tables = pg.psql_rows("\\dt");
    for t in ["events", "games", "flags", "findings"] {
        assert!(
            tables.iter().any(|l| l.contains(t)),
            "\\dt lacks {t}: {tables:?}"
        );
    }
    // An analyst does not see the staff audit log (tests/it/security/sql.rs checks an admin does).
    assert!(
        !tables.iter().any(|l| l.contains("audit_log")),
        "{tables:?}"
    );
    // A join and an aggregate: the same rows as vigie sql.
    for q in [JOIN, AGGREGATE] {
        let expected = cli_rows(q);
        assert!(!expected.is_empty());
        assert_eq!(pg.psql_rows(q), expected, "{q}");
    }
    // A wrong password, an unknown user and a reviewer are refused.
    for (user, password) in [
        ("ana", "wrong-password"),
        ("nobody", PASSWORD),
        ("rita", PASSWORD),
    ] {
        let out = pg.psql(user, password, "SELECT 1");
        assert!(!out.status.success(), "{user} got in");
        let err = String::from_utf8_lossy(&out.stderr).to_lowercase();
        assert!(err.contains("password"), "{user}: {err}");
    }
    // Python psycopg (extended protocol): the same rows, and the wrong password refused.
    ensure_python(&["psycopg"]);
    let expected: Vec<Vec<String>> = cli_rows(JOIN)
        .iter()
        .map(|l| l.split(',').map(str::to_owned).collect())
        .collect();
    let script = format!(
        r#"
import json, sys, psycopg
dsn = "host={host} port={port} dbname=vigie user=ana sslmode=disable"
with psycopg.connect(dsn, password="{password}") as conn:
    rows = conn.execute("""{join}""").fetchall()
    param = conn.execute("SELECT count(*) FROM games WHERE kind = %s", ["ludo"]).fetchone()[0]
    try:
        conn.execute("DROP TABLE events")
        refused = ""
    except psycopg.Error as e:
        refused = str(e)
try:
    psycopg.connect(dsn, password="wrong-password").close()
    wrong = "accepted"
except psycopg.OperationalError as e:
    wrong = str(e)
print(json.dumps({{"rows": [[str(v) for v in r] for r in rows], "param": param, "refused": refused, "wrong": wrong}}))
"#,
        host = pg.addr.ip(),
        port = pg.addr.port(),
        password = PASSWORD,
        join = JOIN
    );
    let out = python(&script, "psycopg script");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows: Vec<Vec<String>> = serde_json::from_value(v["rows"].clone()).unwrap();
    assert_eq!(rows, expected);
    let ludo: i64 = cli_rows("SELECT count(*) FROM games WHERE kind = 'ludo'")[0]
        .parse()
        .unwrap();
    assert_eq!(v["param"].as_i64(), Some(ludo));
    assert!(
        v["refused"]
            .as_str()
            .is_some_and(|s| s.contains("not allowed")),
        "{v}"
    );
    assert!(
        v["wrong"]
            .as_str()
            .is_some_and(|s| s.to_lowercase().contains("password")),
        "{v}"
    );
}

#[test]
fn the_wire_refuses_writes_and_stops_queries_over_their_limits() {
    let pg = PgServer::start(
        "limits",
        QueryLimits {
            memory_bytes: 1 << 20,
            timeout: Duration::from_secs(2),
            max_rows: None,
        },
    );
    for bad in REFUSED {
        assert_refused(bad, &pg.psql("ana", PASSWORD, bad));
    }
    assert!(!Path::new("/tmp/vigie-sql-escape.csv").exists());
    // The slow query is stopped and reported while another connection is served.
    let slow = std::thread::scope(|s| {
        let slow = s.spawn(|| pg.psql("ana", PASSWORD, SLOW));
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(
            pg.psql_rows("SELECT count(*) FROM games"),
            vec!["80".to_string()]
        );
        slow.join().unwrap()
    });
    assert!(!slow.status.success());
    let err = String::from_utf8_lossy(&slow.stderr);
    assert!(err.contains("canceling statement"), "{err}");
    // Over the memory limit: stopped and reported.
    let out = pg.psql("ana", PASSWORD, HUNGRY);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr).to_lowercase();
    assert!(
        err.contains("resources exhausted") || err.contains("memory"),
        "{err}"
    );
    // And the server still answers.
    assert_eq!(pg.psql_rows("SELECT 1 + 1"), vec!["2".to_string()]);
}

#[test]
fn duckdb_and_polars_read_the_lake_like_vigie_sql() {
    ensure_python(&["duckdb", "polars", "duckdb_extension_delta"]);
    let lake = lake_str();
    let expected = cli_rows(
        "SELECT CAST(date AS VARCHAR) AS day, type, count(*) AS n, count(DISTINCT game) AS games, coalesce(sum(stake), 0) AS stakes \
         FROM events GROUP BY 1, 2 ORDER BY 1, 2",
    );
    assert!(expected.len() > 10);
    // Through their Delta readers, as docs/lake.md shows: never a glob of the directory.
    let script = format!(
        r#"
import duckdb, glob, os, polars as pl, duckdb_extension_delta
lake = "{lake}"
ext = glob.glob(os.path.join(os.path.dirname(duckdb_extension_delta.__file__), "extensions", "*", "delta.duckdb_extension"))[0]
c = duckdb.connect()
c.execute(f"LOAD '{{ext}}'")
d = c.sql(f"""
    SELECT CAST(date AS VARCHAR) AS day, type, count(*) AS n, count(DISTINCT game) AS games, coalesce(sum(stake), 0) AS stakes
    FROM delta_scan('{{lake}}/events')
    GROUP BY 1, 2 ORDER BY 1, 2""").fetchall()
p = (pl.scan_delta(f"{{lake}}/events")
     .group_by(pl.col("date").cast(pl.String).alias("day"), "type")
     .agg(pl.len().alias("n"), pl.col("game").n_unique().alias("games"), pl.col("stake").sum().alias("stakes"))
     .sort("day", "type").collect().rows())
for name, rows in (("duckdb", d), ("polars", p)):
    for r in rows:
        print(name + "|" + ",".join(str(v) for v in r))
"#
    );
    let out = python(&script, "duckdb/polars script");
    let text = String::from_utf8_lossy(&out.stdout);
    for engine in ["duckdb", "polars"] {
        let rows: Vec<String> = text
            .lines()
            .filter_map(|l| l.strip_prefix(&format!("{engine}|")))
            .map(str::to_owned)
            .collect();
        assert_eq!(rows, expected, "{engine} reads the lake differently");
    }
}
