//! The lake as Delta tables: independent Delta readers (delta-rs, polars, DuckDB) and Spark read exactly what `vigie sql` reads; a reader sampling during a stream never sees a mix; bad logs stop every writer; time travel.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{ensure_python, sql_text, vigie};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Whether `python3` can import every module; prints why a test part is skipped when not.
pub fn python_has(modules: &[&str], what: &str) -> bool {
    let ok = Command::new("python3")
        .arg("-c")
        .arg(format!("import {}", modules.join(", ")))
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        println!(
            "skipped {what}: python3 cannot import {} (.ci/run installs them)",
            modules.join(", ")
        );
    }
    ok
}

/// Queries Spark runs over the files of the current Delta snapshot, and `vigie sql` runs over the lake.
const SPARK_QUERIES: [(&str, &str); 2] = [
    (
        "events_per_kind",
        "SELECT g.kind, count(*) AS n, count(DISTINCT e.game) AS games, sum(e.seq) AS seqs \
         FROM events e JOIN games g ON g.game = e.game GROUP BY g.kind ORDER BY g.kind",
    ),
    (
        "flagged_accounts_events",
        "SELECT f.rule, count(DISTINCT f.account) AS accounts, count(e.seq) AS events \
         FROM flags f LEFT JOIN events e ON e.player = f.account GROUP BY f.rule ORDER BY f.rule",
    ),
];

/// Every table read by delta-rs, polars and DuckDB (and, when `spark`, two joins in Spark) gives
/// the same rows as `vigie sql`: same count, same content checksum.
pub fn external_readers_agree(lake: &Path, spark: bool) {
    ensure_python(&[
        "deltalake",
        "polars",
        "duckdb",
        "duckdb_extension_delta",
        "pyarrow",
    ]);
    let dir = tempfile::tempdir().unwrap();
    let tables: Vec<String> = vigie::catalog::tables()
        .iter()
        .map(|t| t.name.to_owned())
        .collect();
    for t in &tables {
        let out = vigie(&[
            "sql",
            "--lake",
            lake.to_str().unwrap(),
            "--format",
            "parquet",
            &format!("SELECT * FROM {t}"),
        ]);
        assert!(
            out.status.success(),
            "{t}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::fs::write(dir.path().join(format!("{t}.parquet")), &out.stdout).unwrap();
    }
    let mut cmd = Command::new("python3");
    cmd.arg(root().join("tests/lake/readers.py"))
        .arg(lake)
        .arg("--vigie")
        .arg(dir.path());
    let spark = spark && python_has(&["pyspark"], "the Spark half of the external readers");
    if spark {
        let q: serde_json::Map<String, serde_json::Value> = SPARK_QUERIES
            .iter()
            .map(|(k, v)| ((*k).to_owned(), serde_json::Value::from(*v)))
            .collect();
        let qf = dir.path().join("queries.json");
        std::fs::write(&qf, serde_json::to_vec(&q).unwrap()).unwrap();
        cmd.arg("--spark").arg(&qf);
    }
    let out = cmd.output().expect("python3");
    assert!(
        out.status.success(),
        "readers.py: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result: serde_json::Value = serde_json::from_slice(&out.stdout).expect("readers.py JSON");
    for t in &tables {
        let entry = &result[t.as_str()];
        let want = &entry["vigie"];
        assert!(want["rows"].is_u64(), "{t}: {entry}");
        for reader in ["deltalake", "polars", "duckdb"] {
            let got = &entry[reader];
            assert_eq!(got["rows"], want["rows"], "{reader} counts {t} differently");
            assert_eq!(
                got["checksum"], want["checksum"],
                "{reader} reads other rows of {t} ({} rows)",
                want["rows"]
            );
        }
        // Filtered reads: every text column's first value, counted by each reader's scan.
        let filters = entry["filters"].as_object().expect("filtered counts");
        for (column, counts) in filters {
            for reader in ["deltalake", "polars", "duckdb"] {
                assert_eq!(
                    counts[reader], counts["vigie"],
                    "{reader} filters {t}.{column} = {} differently",
                    counts["value"]
                );
            }
        }
        if want["rows"].as_u64().unwrap_or(0) > 0 && t.ends_with("features") {
            assert!(!filters.is_empty(), "{t}: no text column filtered");
        }
    }
    assert!(
        result["events"]["vigie"]["rows"].as_u64().unwrap_or(0) > 0,
        "the lake has events"
    );
    if spark {
        for (name, sql) in SPARK_QUERIES {
            let want: Vec<Vec<serde_json::Value>> = sql_text(lake, sql)
                .into_iter()
                .map(|r| {
                    r.into_iter()
                        .map(|v| match v.parse::<i64>() {
                            Ok(n) => serde_json::Value::from(n),
                            Err(_) => serde_json::Value::from(v),
                        })
                        .collect()
                })
                .collect();
            let got: Vec<Vec<serde_json::Value>> =
                serde_json::from_value(result["_spark"][name].clone()).expect("spark rows");
            assert_eq!(got, want, "Spark's {name} differs from vigie sql");
        }
    }
}

/// A lake made by the stream from the sample in a few passes (so with compaction and detection
/// re-runs), in `dir`.
fn streamed_lake(dir: &Path) -> PathBuf {
    let follow = dir.join("follow");
    let lake = dir.join("lake");
    std::fs::create_dir_all(&follow).unwrap();
    let mut lines: Vec<String> = Vec::new();
    for server in ["srv-01", "srv-02"] {
        let sdir = root().join("data/sample").join(server);
        let mut files: Vec<PathBuf> = std::fs::read_dir(&sdir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        for f in files {
            let bytes = std::fs::read(&f).unwrap();
            let text = if f.extension().is_some_and(|e| e == "gz") {
                let mut s = String::new();
                std::io::Read::read_to_string(
                    &mut flate2::read::GzDecoder::new(&bytes[..]),
                    &mut s,
                )
                .unwrap();
                s
            } else {
                String::from_utf8(bytes).unwrap()
            };
            lines.extend(text.lines().map(str::to_owned));
        }
    }
    // Enough passes for a Delta checkpoint of the busiest tables (every 10 versions).
    let parts = 12;
    let per = lines.len().div_ceil(parts);
    for (i, chunk) in lines.chunks(per).enumerate() {
        let mut text = chunk.join("\n");
        text.push('\n');
        std::fs::write(follow.join(format!("part-{i}.jsonl")), text).unwrap();
        stream_once(&follow, &lake, &[]);
    }
    lake
}

/// `vigie stream --once` of `follow` into `lake` with the shipped rules, which must succeed.
fn stream_once(follow: &Path, lake: &Path, extra: &[&str]) {
    let rules = root().join("queries/detect");
    let mut args = vec![
        "stream",
        "--follow",
        follow.to_str().unwrap(),
        "--lake",
        lake.to_str().unwrap(),
        "--once",
        "--rules",
        rules.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let out = vigie(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn check_ok(lake: &Path) -> serde_json::Value {
    let out = vigie(&["lake", "check", "--json", "--lake", lake.to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    assert!(
        out.status.success(),
        "lake check: {v:#}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    v
}

#[test]
fn delta_readers_and_spark_read_a_streamed_lake_like_vigie() {
    let dir = tempfile::tempdir().unwrap();
    let lake = streamed_lake(dir.path());
    let checks = check_ok(&lake);
    let tables = checks.as_array().expect("one entry per table");
    assert_eq!(tables.len(), vigie::catalog::tables().len());
    for t in tables {
        assert_eq!(t["behind"], 0, "{t}");
    }
    // Compaction removed files that are still on disk (until vacuum): a glob would count them.
    let state = vigie::lake::Lake::open(&lake).unwrap().state().unwrap();
    assert!(
        state.tombstones.keys().any(|p| p.starts_with("events/")),
        "the stream compacted events"
    );
    external_readers_agree(&lake, true);
}

#[test]
fn vacuum_deletes_only_what_the_retention_allows_and_time_travel_reads_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let lake = streamed_lake(dir.path());
    let l = vigie::lake::Lake::open(&lake).unwrap();
    let state = l.state().unwrap();
    let removed: Vec<PathBuf> = state.tombstones.keys().map(|p| lake.join(p)).collect();
    assert!(!removed.is_empty());
    assert!(
        removed.iter().all(|p| p.exists()),
        "removed files stay until vacuum"
    );
    // Every version can be read again, and counts what it counted then.
    let first_events = (1..=state.version)
        .find(|&v| l.state_at(v).unwrap().table_rows("events") > 0)
        .unwrap();
    let then = l.state_at(first_events).unwrap().table_rows("events");
    let old = sql_as_of(
        &lake,
        &first_events.to_string(),
        "SELECT count(*) FROM events",
    );
    assert_eq!(old, then.to_string());
    assert_ne!(
        then,
        state.table_rows("events"),
        "the first commit had fewer events"
    );
    // A week's retention keeps everything.
    let out = vigie(&["vacuum", "--lake", lake.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(removed.iter().all(|p| p.exists()));
    // The stream's shorter retention for the tables each detection pass rewrites whole deletes
    // only their removed files; the other tables of an old version still read as they were.
    let rewritten = vigie::stream::rewritten_each_pass();
    let of = |p: &str| p.split('/').next().unwrap_or_default().to_owned();
    let (short, long): (Vec<&String>, Vec<&String>) = state
        .tombstones
        .keys()
        .partition(|p| rewritten.contains(&of(p).as_str()));
    assert!(!short.is_empty() && !long.is_empty(), "{short:?} {long:?}");
    let table = of(short[0]);
    let with_table = (1..=state.version)
        .find(|&v| {
            l.state_at(v)
                .unwrap()
                .table_files(&table)
                .any(|f| state.tombstones.contains_key(&f.path))
        })
        .unwrap();
    let shorter = rewritten.iter().map(|t| (*t, 0i64)).collect();
    let week = 7 * 24 * 3_600_000;
    // A reader holding that version (a long SQL session) keeps its files through any vacuum; a
    // dead reader's lease holds nothing and goes.
    let held = l.snapshot_at(with_table).unwrap();
    let lease = l.lease(with_table).unwrap();
    let dead = lake.join("_vigie/readers/0000dead.lease");
    std::fs::write(&dead, "1\n").unwrap();
    l.writer().unwrap().vacuum_with(week, &shorter).unwrap();
    assert!(!dead.exists());
    assert!(
        held.state
            .files
            .values()
            .all(|f| lake.join(&f.path).exists())
    );
    // Only its files: the rewritten tables' other removed files went.
    assert!(
        short
            .iter()
            .filter(|p| !held.state.files.contains_key(p.as_str()))
            .all(|p| !lake.join(p).exists())
    );
    let count = format!("SELECT count(*) FROM {table}");
    assert_eq!(
        sql_as_of(&lake, &with_table.to_string(), &count),
        held.state.table_rows(&table).to_string()
    );
    // A live lease that cannot be read stops the vacuum: nothing is deleted.
    let garbled = lake.join("_vigie/readers/0000garbled.lease");
    std::fs::write(&garbled, "not a version\n").unwrap();
    let lock = std::fs::File::open(&garbled).unwrap();
    lock.lock().unwrap();
    let present: Vec<&PathBuf> = removed.iter().filter(|p| p.exists()).collect();
    assert_eq!(l.writer().unwrap().vacuum(0).unwrap().files, 0);
    assert!(present.iter().all(|p| p.exists()));
    drop(lock);
    drop(lease);
    l.writer().unwrap().vacuum_with(week, &shorter).unwrap();
    assert!(!garbled.exists());
    assert!(short.iter().all(|p| !lake.join(p).exists()));
    assert!(long.iter().all(|p| lake.join(p).exists()));
    let out = vigie(&[
        "sql",
        "--lake",
        lake.to_str().unwrap(),
        "--as-of",
        &with_table.to_string(),
        &count,
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains(&table) && err.contains("vacuumed"), "{err}");
    let at = with_table.max(first_events);
    assert_eq!(
        sql_as_of(&lake, &at.to_string(), "SELECT count(*) FROM events"),
        l.state_at(at).unwrap().table_rows("events").to_string()
    );
    // Zero hours deletes every removed file, and old versions say why they cannot be read.
    let out = vigie(&["vacuum", "--retain", "0", "--lake", lake.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(removed.iter().all(|p| !p.exists()));
    let out = vigie(&[
        "sql",
        "--lake",
        lake.to_str().unwrap(),
        "--as-of",
        &first_events.to_string(),
        "SELECT count(*) FROM events",
    ]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("vacuumed"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The latest version is whole, for Vigie and for the Delta readers.
    check_ok(&lake);
    assert!(l.state().unwrap().tombstones.is_empty());
    external_readers_agree(&lake, false);
}

#[test]
fn the_stream_vacuums_what_each_pass_rewrites_on_its_own_retention() {
    let dir = tempfile::tempdir().unwrap();
    let lake = streamed_lake(dir.path());
    let before = vigie::lake::Lake::open(&lake).unwrap().state().unwrap();
    let rewritten = vigie::stream::rewritten_each_pass();
    let is_rewritten = |p: &str| rewritten.iter().any(|t| p.starts_with(&format!("{t}/")));
    assert!(before.tombstones.keys().any(|p| is_rewritten(p)));
    let empty = dir.path().join("nothing-new");
    std::fs::create_dir_all(&empty).unwrap();
    stream_once(&empty, &lake, &["--vacuum-retain-rewrites", "0"]);
    let after = vigie::lake::Lake::open(&lake).unwrap().state().unwrap();
    for p in before.tombstones.keys() {
        let kept = lake.join(p).exists();
        assert_eq!(kept, !is_rewritten(p), "{p}");
        assert_eq!(after.tombstones.contains_key(p), kept, "{p}");
    }
    check_ok(&lake);
}

/// The log cleanup (`vigie vacuum --log-retain 0`) on a streamed lake: Vigie's log and the Delta
/// logs lose their oldest versions down to a checkpoint, and then every Delta reader still reads
/// what `vigie sql` reads, `lake check` finds nothing wrong, time travel before the checkpoint
/// fails saying why, and writers go on.
#[test]
fn after_the_log_cleanup_every_reader_reads_the_latest_version_and_writers_go_on() {
    let dir = tempfile::tempdir().unwrap();
    let lake = streamed_lake(dir.path());
    let l = vigie::lake::Lake::open(&lake).unwrap();
    let state = l.state().unwrap();
    assert!(
        state.version > vigie::lake::CHECKPOINT_EVERY,
        "{}",
        state.version
    );
    let events = state.table_rows("events");
    drop(l);
    let lake_arg = lake.to_str().unwrap();
    let out = vigie(&["vacuum", "--lake", lake_arg, "--log-retain", "0"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("of Vigie's log"), "{said}");
    let first_of = |dir: &Path, suffix: &str| -> Option<u64> {
        std::fs::read_dir(dir)
            .unwrap()
            .filter_map(|e| {
                let name = e.unwrap().file_name().to_string_lossy().into_owned();
                name.strip_suffix(suffix)?.parse::<u64>().ok()
            })
            .min()
    };
    let vigie_first = first_of(&lake.join("_vigie/log"), ".json").unwrap();
    assert!(
        vigie_first >= vigie::lake::CHECKPOINT_EVERY,
        "Vigie's log starts at {vigie_first}"
    );
    let events_first = first_of(&lake.join("events/_delta_log"), ".json").unwrap();
    assert!(
        events_first >= 10,
        "events' Delta log starts at {events_first}"
    );
    // Every reader reads the latest version as before.
    let checks = check_ok(&lake);
    for t in checks.as_array().expect("one entry per table") {
        assert_eq!(t["behind"], 0, "{t}");
        assert_eq!(t["problems"], serde_json::json!([]), "{t}");
    }
    assert_eq!(
        sql_text(&lake, "SELECT count(*) FROM events")[0][0],
        events.to_string()
    );
    external_readers_agree(&lake, false);
    // A version before the checkpoint is gone, and the error says so.
    let out = vigie(&[
        "sql",
        "--lake",
        lake_arg,
        "--as-of",
        "1",
        "SELECT count(*) FROM events",
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("older than the lake's log keeps"), "{err}");
    // Writers go on: a stream pass, another cleanup, and the lake still checks.
    stream_once(&dir.path().join("follow"), &lake, &[]);
    let out = vigie(&["vacuum", "--lake", lake_arg, "--log-retain", "0"]);
    assert!(out.status.success());
    check_ok(&lake);
}

fn sql_as_of(lake: &Path, as_of: &str, q: &str) -> String {
    let out = vigie(&[
        "sql",
        "--lake",
        lake.to_str().unwrap(),
        "--format",
        "csv",
        "--as-of",
        as_of,
        q,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .nth(1)
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn a_bad_delta_log_stops_every_writer_and_lake_check_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let good = streamed_lake(dir.path());
    let events_log = |lake: &Path| lake.join("events/_delta_log");
    let versions = |lake: &Path| -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(events_log(lake))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .collect();
        v.sort();
        v
    };
    assert!(
        versions(&good).len() >= 11,
        "{} events versions",
        versions(&good).len()
    );
    assert!(
        good.join("events/_delta_log/00000000000000000010.checkpoint.parquet")
            .exists()
    );
    assert!(
        good.join("moves/_delta_log/00000000000000000010.checkpoint.parquet")
            .exists()
    );
    type Damage = fn(&Path, &[PathBuf]);
    let cases: [(&str, Damage, &str); 4] = [
        (
            "gap",
            |lake, v| {
                // The second newest version goes (and a checkpoint after it, if any).
                let gone = &v[v.len() - 2];
                std::fs::remove_file(gone).unwrap();
                let stem = gone.file_stem().unwrap().to_string_lossy().into_owned();
                let n: u64 = stem.parse().unwrap();
                let cp = lake.join(format!(
                    "events/_delta_log/{:020}.checkpoint.parquet",
                    n + 1
                ));
                let _ = std::fs::remove_file(cp);
            },
            "missing",
        ),
        (
            "corrupt line",
            |_, v| {
                let last = &v[v.len() - 1];
                let mut text = std::fs::read_to_string(last).unwrap();
                text.push_str("{not json\n");
                std::fs::write(last, text).unwrap();
            },
            "line",
        ),
        (
            "no log",
            |lake, _| std::fs::remove_dir_all(lake.join("games/_delta_log")).unwrap(),
            "",
        ),
        (
            "checkpoint",
            |lake, _| {
                // Events' checkpoint replaced by the moves table's of the same version: it names
                // other files than its commits.
                let name = "_delta_log/00000000000000000010.checkpoint.parquet";
                std::fs::copy(
                    lake.join("moves").join(name),
                    lake.join("events").join(name),
                )
                .unwrap();
            },
            "checkpoint",
        ),
    ];
    for (name, damage, why) in cases {
        let lake = dir.path().join(format!("bad-{}", name.replace(' ', "-")));
        crate::common::copy_dir(&good, &lake);
        let v = versions(&lake);
        damage(&lake, &v);
        let before = vigie::lake::Lake::open(&lake)
            .unwrap()
            .state()
            .unwrap()
            .version;
        // Every writing command refuses, naming the table, and changes nothing.
        for args in [
            vec!["replay", "-q"],
            vec!["vacuum"],
            vec![
                "ingest",
                "--quiet",
                dir.path().join("follow").to_str().unwrap(),
            ],
        ] {
            let mut all = vec![args[0], "--lake", lake.to_str().unwrap()];
            all.extend_from_slice(&args[1..]);
            let out = vigie(&all);
            let err = String::from_utf8_lossy(&out.stderr);
            if name == "no log" {
                // A missing log is one a crash before its creation leaves: the writer creates it.
                assert!(out.status.success(), "{name}: {args:?}: {err}");
                continue;
            }
            assert!(!out.status.success(), "{name}: {args:?} went on");
            assert!(err.contains("events") && err.contains(why), "{name}: {err}");
        }
        let after = vigie::lake::Lake::open(&lake)
            .unwrap()
            .state()
            .unwrap()
            .version;
        if name != "no log" {
            assert_eq!(before, after, "{name}: a refused command committed");
        }
        let out = vigie(&["lake", "check", "--lake", lake.to_str().unwrap()]);
        let text = String::from_utf8_lossy(&out.stdout);
        if name == "no log" {
            assert!(out.status.success(), "{text}");
        } else {
            assert_eq!(out.status.code(), Some(1), "{name}: {text}");
            assert!(
                text.contains("events") && text.contains(why),
                "{name}: {text}"
            );
        }
    }
}

/// Samples, while `vigie stream` commits (with compaction), every table's Delta count every second
/// for `seconds`, and on until the stream has compacted (at most five times as long: a loaded
/// machine commits less often, so compacts later): each count must be the count of the Vigie
/// version its Delta version names.
#[test]
fn a_delta_reader_during_a_stream_sees_committed_versions_only() {
    if !python_has(
        &["deltalake"],
        "a_delta_reader_during_a_stream_sees_committed_versions_only",
    ) {
        return;
    }
    let seconds: u64 = std::env::var("VIGIE_SAMPLE_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    let dir = tempfile::tempdir().unwrap();
    let follow = dir.path().join("follow");
    let lake = dir.path().join("lake");
    // The sampler samples until this file exists.
    let stop = dir.path().join("stop");
    std::fs::create_dir_all(&follow).unwrap();
    let text = std::fs::read_to_string(crate::common::shared_sample()).expect("the sample log");
    let lines: Vec<&str> = text.lines().collect();
    // On any exit, a panic included: the sampler told to stop (it also stops by itself at a
    // deadline) and the stream ended.
    struct Cleanup {
        stop: std::path::PathBuf,
        child: std::process::Child,
    }
    impl Drop for Cleanup {
        fn drop(&mut self) {
            let _ = std::fs::write(&self.stop, b"");
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
    let child = Command::new(crate::common::vigie_bin())
        .args(["stream", "--follow"])
        .arg(&follow)
        .arg("--lake")
        .arg(&lake)
        .args(["--commit-interval", "0.2", "--detect-interval", "0.5"])
        .args(["--analyse-share", "0"])
        .arg("--rules")
        .arg(root().join("queries/detect"))
        .env("VIGIE_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("vigie stream");
    let cleanup = Cleanup {
        stop: stop.clone(),
        child,
    };
    let deadline = seconds * 5 + 60;
    let sampler = std::thread::spawn({
        let lake = lake.clone();
        let stop = stop.clone();
        move || {
            let script = format!(
                r#"
import json, os, sys, time
from deltalake import DeltaTable
lake, stop, end = {lake:?}, {stop:?}, time.time() + {deadline}
while not os.path.isdir(os.path.join(lake, "events", "_delta_log")):
    if os.path.exists(stop) or time.time() > end:
        sys.exit(0)
    time.sleep(0.1)
# One whole round more once told to stop, so that the last versions the stream made are read.
while time.time() < end:
    last = os.path.exists(stop)
    for t in ("events", "games", "moves", "game_players", "findings", "account_features", "flags"):
        try:
            d = DeltaTable(os.path.join(lake, t))
        except Exception:
            continue
        n = d.to_pyarrow_dataset().count_rows()
        print(json.dumps({{"table": t, "delta": d.version(), "vigie": d.transaction_version("vigie"), "rows": n}}), flush=True)
    if last:
        break
    time.sleep(1)
"#
            );
            Command::new("python3")
                .arg("-c")
                .arg(script)
                .output()
                .expect("python3")
        }
    });
    // Whether the lake's last version has removed files of `events` (a compaction).
    let has_compacted = |lake: &std::path::Path| {
        vigie::lake::Lake::open_existing(lake)
            .and_then(|l| l.state())
            .is_ok_and(|st| st.tombstones.keys().any(|p| p.starts_with("events/")))
    };
    let mut seen_compacted: Option<Instant> = None;
    let mut last_look = Instant::now();
    // The servers: the sample, a few games at a time, for the whole sampling time, then repeated
    // under new game ids, until the stream has compacted and been sampled a few seconds since.
    let started = Instant::now();
    let mut copy = 0;
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(follow.join("a.jsonl"))
        .unwrap();
    'feed: loop {
        let renamed: Vec<String> = lines
            .iter()
            .map(|l| l.replace("\"game\":\"", &format!("\"game\":\"r{copy}-")))
            .collect();
        for chunk in renamed.chunks(60) {
            let done = seen_compacted.is_some_and(|t| t.elapsed() > Duration::from_secs(3));
            if started.elapsed() > Duration::from_secs(seconds + 2)
                && (done || started.elapsed() > Duration::from_secs(seconds * 5))
            {
                break 'feed;
            }
            if seen_compacted.is_none() && last_look.elapsed() > Duration::from_secs(1) {
                last_look = Instant::now();
                if has_compacted(&lake) {
                    seen_compacted = Some(Instant::now());
                }
            }
            for l in chunk {
                use std::io::Write;
                writeln!(file, "{l}").unwrap();
            }
            std::thread::sleep(Duration::from_millis(150));
        }
        copy += 1;
    }
    std::fs::write(&stop, b"").unwrap();
    let out = sampler.join().expect("sampler");
    drop(cleanup);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let l = vigie::lake::Lake::open(&lake).unwrap();
    let mut samples = 0;
    let mut versions = std::collections::BTreeMap::new();
    let mut compacted = false;
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let s: serde_json::Value = serde_json::from_str(line).unwrap();
        let t = s["table"].as_str().unwrap();
        let v = s["vigie"].as_u64().expect("txn version");
        let rows = s["rows"].as_u64().unwrap();
        let state = versions.entry(v).or_insert_with(|| l.state_at(v).unwrap());
        compacted |= state.tombstones.keys().any(|p| p.starts_with("events/"));
        assert_eq!(
            rows,
            state.table_rows(t),
            "{t} read at Delta version {} counts {rows} rows; Vigie version {v} has {}",
            s["delta"],
            state.table_rows(t)
        );
        samples += 1;
    }
    assert!(samples >= seconds as usize, "{samples} samples");
    assert!(compacted, "the stream compacted while the reader sampled");
}

/// A writer killed between its Vigie commit and its Delta commits leaves the Delta logs behind:
/// `lake check` says so (not a problem: a live writer is there too for a moment), and `lake sync`
/// rolls them forward without waiting for the next writing command.
#[test]
fn after_a_killed_writer_lake_sync_rolls_the_delta_logs_forward() {
    let dir = tempfile::tempdir().unwrap();
    let lake = killed_after_commit(dir.path());
    let lake_arg = lake.to_str().unwrap();
    let behind = |v: &serde_json::Value| -> u64 {
        v.as_array()
            .unwrap()
            .iter()
            .map(|t| t["behind"].as_u64().unwrap())
            .sum()
    };
    assert!(behind(&check_ok(&lake)) > 0);
    let text = vigie(&["lake", "check", "--lake", lake_arg]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("behind Vigie's log"), "{text}");
    let out = vigie(&["lake", "sync", "--json", "--lake", lake_arg]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(report["commits"].as_u64().unwrap() > 0, "{report}");
    assert_eq!(behind(&check_ok(&lake)), 0);
    // Nothing left: a second sync writes nothing.
    let out = vigie(&["lake", "sync", "--json", "--lake", lake_arg]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["commits"], 0, "{report}");
}

/// The sample ingested into `dir/lake` by a writer killed between its Vigie commit and its Delta
/// commits: the Delta logs are behind.
fn killed_after_commit(dir: &Path) -> PathBuf {
    let lake = dir.join("lake");
    let sample = root().join("tests/fixtures/server-logs/sample.jsonl");
    let status = Command::new(crate::common::vigie_bin())
        .args(["ingest", "--quiet", "--lake", lake.to_str().unwrap()])
        .arg(&sample)
        .env("VIGIE_FAILPOINT", "after_commit")
        .env("VIGIE_LOG", "off")
        .status()
        .unwrap();
    assert!(!status.success(), "the failpoint did not fire");
    lake
}

/// A report of a lake whose Delta logs are behind its version names the Delta versions a reader
/// reads its data at: it rolls the logs forward first (it named the version before the commit).
#[test]
fn a_report_names_the_delta_versions_of_its_data_after_a_killed_writer() {
    let dir = tempfile::tempdir().unwrap();
    let lake = killed_after_commit(dir.path());
    let lake_arg = lake.to_str().unwrap();
    let l = vigie::lake::Lake::open(&lake).unwrap();
    let version = l.state().unwrap().version;
    assert!(vigie::lake::delta::behind(&l, "events", version).unwrap());
    drop(l);
    let out_dir = dir.path().join("bundle");
    let out = vigie(&[
        "report",
        "--lake",
        lake_arg,
        "--from",
        "2026-11-20",
        "--to",
        "2026-11-21",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out_dir.join("summary.json")).unwrap()).unwrap();
    let named = &summary["scope"]["delta_versions"]["events"];
    let head = vigie::lake::delta::head(&lake, "events").unwrap().unwrap();
    assert_eq!(head.vigie, version, "rolled forward");
    assert_eq!(named, &serde_json::Value::from(head.delta));
    let checks = check_ok(&lake);
    assert!(checks.as_array().unwrap().iter().all(|t| t["behind"] == 0));
}

/// `vigie lake check` beside a live writer: a table whose Delta log a commit rolled forward after
/// the check read the Vigie log is the writer's work, not a problem (it was reported as "Delta
/// version N describes Vigie version V, after the latest"). Forty commits of another `Lake` of the
/// same directory, each with a piece of the sample, while the check runs again and again.
#[test]
fn lake_check_beside_a_writer_reports_no_false_problem() {
    let dir = tempfile::tempdir().unwrap();
    let (pieces, lake) = (dir.path().join("pieces"), dir.path().join("lake"));
    std::fs::create_dir_all(&pieces).unwrap();
    let text = std::fs::read_to_string(crate::common::shared_sample()).expect("the sample log");
    let lines: Vec<&str> = text.lines().collect();
    let files: Vec<PathBuf> = lines
        .chunks(lines.len().div_ceil(40))
        .enumerate()
        .map(|(i, chunk)| {
            let f = pieces.join(format!("piece-{i:02}.jsonl"));
            std::fs::write(&f, chunk.join("\n") + "\n").unwrap();
            f
        })
        .collect();
    // The first piece before the check starts, so that every table the check reads has a log.
    vigie::stream::commit_final(&vigie::catalog::open(&lake).unwrap(), &files[..1]).unwrap();
    let checks = std::thread::scope(|s| {
        let writer = s.spawn(|| {
            let writer = vigie::catalog::open(&lake).unwrap();
            for f in &files[1..] {
                vigie::stream::commit_final(&writer, std::slice::from_ref(f)).unwrap();
            }
        });
        let mut checks = 0;
        while !writer.is_finished() {
            let problems: Vec<String> = vigie::catalog::open(&lake)
                .unwrap()
                .check_delta()
                .unwrap()
                .into_iter()
                .flat_map(|c| c.problems)
                .collect();
            assert!(problems.is_empty(), "check {checks}: {problems:#?}");
            checks += 1;
        }
        checks
    });
    assert!(checks > 0);
    // Quiet again: every table's log describes the latest version.
    let lake = vigie::catalog::open(&lake).unwrap();
    let latest = lake.state().unwrap().version;
    for c in lake.check_delta().unwrap() {
        assert!(c.problems.is_empty() && c.behind == 0, "{c:?}");
        assert!(c.vigie_version.is_some_and(|v| v <= latest), "{c:?}");
    }
}

/// Writes one `pair_features` file with the columns of `def`, one row per pair, every count and
/// stake `n`, in one commit.
fn commit_pairs(
    lake: &vigie::lake::Lake,
    def: &vigie::lake::tables::TableDef,
    pairs: &[(&str, &str)],
    n: i64,
) {
    let rows: Vec<serde_json::Value> = pairs
        .iter()
        .map(|(a, b)| {
            let mut row = serde_json::Map::new();
            for c in &def.columns {
                if c.ty == arrow::datatypes::DataType::Int64 {
                    row.insert(c.name.into(), n.into());
                }
            }
            row.insert("a".into(), (*a).into());
            row.insert("b".into(), (*b).into());
            row.insert("window".into(), "30d".into());
            row.insert("window_end".into(), "2026-11-27T00:00:00Z".into());
            serde_json::Value::Object(row)
        })
        .collect();
    let schema = def.schema();
    let mut decoder = arrow::json::ReaderBuilder::new(schema.clone())
        .build_decoder()
        .unwrap();
    decoder.serialize(&rows).unwrap();
    let batch = decoder.flush().unwrap().unwrap();
    let mut w = lake.writer().unwrap();
    let mut txn = w.begin("test").unwrap();
    let file = txn.new_file(def.name, None).unwrap();
    let mut meta = vigie::lake::parquet::batch_meta(def, &batch);
    meta.bytes = vigie::lake::parquet::write_file(&file.pending, def, schema, &[batch]).unwrap();
    txn.add_file_meta(file, meta);
    txn.commit(serde_json::json!({})).unwrap();
}

/// The field names of a Delta `metaData` action's schema.
fn delta_columns(meta: &serde_json::Value) -> Vec<String> {
    let schema: serde_json::Value =
        serde_json::from_str(meta["schemaString"].as_str().expect("schemaString")).unwrap();
    schema["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap().to_owned())
        .collect()
}

/// A lake made by an older build, whose catalogue lacked `pair_features.a_cheap_min_stake` and
/// `b_cheap_min_stake`, gets a Delta schema version from the first sync of this build: the
/// latest metaData, the next checkpoint and every Delta reader have the columns (null in the
/// older file), `lake check` is clean, and the older build neither undoes it nor writes more.
#[test]
fn columns_the_catalogue_adds_reach_the_delta_log_its_checkpoints_and_its_readers() {
    use vigie::lake::delta;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lake");
    let added = ["a_cheap_min_stake", "b_cheap_min_stake"];
    let full = vigie::features::pair_table();
    let mut older = full.clone();
    older.columns.retain(|c| !added.contains(&c.name));
    let older_catalogue: Vec<_> = vigie::catalog::tables()
        .into_iter()
        .map(|t| {
            if t.name == full.name {
                older.clone()
            } else {
                t
            }
        })
        .collect();
    let table = full.name;
    let has_added = |meta: &serde_json::Value| {
        let cols = delta_columns(meta);
        added.iter().all(|a| cols.iter().any(|c| c == a))
    };

    // The older build creates every log and commits a file without the columns (Vigie 1).
    let old = vigie::lake::Lake::open(&path)
        .unwrap()
        .with_catalogue(&older_catalogue);
    commit_pairs(&old, &older, &[("p0", "q0"), ("p1", "q1")], 1);
    assert_eq!(old.sync_delta().unwrap().evolved, Vec::<String>::new());
    let before = delta::metadata(&path, table).unwrap().expect("a log");
    assert!(!has_added(&before), "{before}");
    assert_eq!(
        delta::head(&path, table).unwrap(),
        Some(delta::Head { delta: 1, vigie: 1 })
    );

    // This build, before any sync: `check` names the missing columns.
    let new = vigie::catalog::open(&path).unwrap();
    let problems = |lake: &vigie::lake::Lake| -> Vec<String> {
        let checks = lake.check_delta().unwrap();
        checks.into_iter().flat_map(|c| c.problems).collect()
    };
    let problems_new = problems(&new);
    assert_eq!(problems_new.len(), 1, "{problems_new:?}");
    assert!(
        problems_new[0].contains(table) && problems_new[0].contains("a_cheap_min_stake"),
        "{problems_new:?}"
    );

    // Its sync publishes Delta version 2: the new schema, on the files of Vigie version 1.
    let report = new.sync_delta().unwrap();
    assert_eq!(report.evolved, vec![table.to_owned()]);
    assert_eq!(report.commits, 0);
    assert_eq!(
        delta::head(&path, table).unwrap(),
        Some(delta::Head { delta: 2, vigie: 1 })
    );
    let v2 = delta::read_actions(
        &path
            .join(table)
            .join("_delta_log/00000000000000000002.json"),
    )
    .unwrap();
    let meta2 = v2
        .iter()
        .find_map(|a| a.get("metaData"))
        .expect("a metaData action");
    assert!(has_added(meta2), "{meta2}");
    let mut rest = meta2.clone();
    rest["schemaString"] = before["schemaString"].clone();
    assert_eq!(rest, before, "only the schema changes");
    assert!(
        v2.iter()
            .all(|a| a.get("add").is_none() && a.get("remove").is_none())
    );
    assert_eq!(delta::metadata(&path, table).unwrap().as_ref(), Some(meta2));
    // Time travel: Vigie version 1 reads Delta version 2 (same files, newer schema).
    assert_eq!(delta::version_for(&path, table, 1).unwrap(), Some(2));
    assert_eq!(delta::version_for(&path, table, 0).unwrap(), Some(0));
    // Once is enough; the other tables had nothing to change.
    assert_eq!(new.sync_delta().unwrap(), delta::SyncReport::default());
    // The older build reports the difference but neither undoes it nor writes anything.
    assert_eq!(old.sync_delta().unwrap(), delta::SyncReport::default());
    assert_eq!(delta::head(&path, table).unwrap().map(|h| h.delta), Some(2));
    let old_problems = problems(&old);
    assert!(
        old_problems.len() == 1 && old_problems[0].contains("no writer changes it"),
        "{old_problems:?}"
    );

    // This build's files (Vigie 2..9, Delta 3..10): Delta 10 is checkpointed with the new schema.
    for n in 2..=9 {
        let (a, b) = (format!("p{n}"), format!("q{n}"));
        commit_pairs(&new, &full, &[(&a, &b)], n);
    }
    new.sync_delta().unwrap();
    let cp = path
        .join(table)
        .join("_delta_log/00000000000000000010.checkpoint.parquet");
    let schema_in_checkpoint: Vec<String> = {
        use arrow::array::{Array, AsArray};
        let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
            std::fs::File::open(&cp).expect("checkpoint 10"),
        )
        .unwrap()
        .build()
        .unwrap();
        let mut out = Vec::new();
        for batch in reader {
            let batch = batch.unwrap();
            let meta = batch.column_by_name("metaData").unwrap().as_struct();
            let s = meta
                .column_by_name("schemaString")
                .unwrap()
                .as_string::<i32>();
            out.extend(
                (0..meta.len())
                    .filter(|&i| meta.is_valid(i))
                    .map(|i| s.value(i).to_owned()),
            );
        }
        out
    };
    assert_eq!(schema_in_checkpoint.len(), 1);
    assert_eq!(
        schema_in_checkpoint[0],
        meta2["schemaString"].as_str().unwrap()
    );
    // A new process reads the latest metaData from that checkpoint (its JSON has none).
    assert_eq!(delta::metadata(&path, table).unwrap().as_ref(), Some(meta2));
    assert_eq!(problems(&new), Vec::<String>::new());
    check_ok(&path);

    // Vigie reads the older file's rows with null stakes; so do the Delta readers.
    let counts =
        "SELECT count(*), count(a_cheap_min_stake), sum(a_cheap_min_stake) FROM pair_features";
    assert_eq!(
        sql_text(&path, counts),
        vec![vec!["10".to_owned(), "8".to_owned(), "44".to_owned()]]
    );
    if !python_has(
        &["deltalake", "duckdb", "duckdb_extension_delta"],
        "the Delta readers' part of the schema evolution test",
    ) {
        return;
    }
    let polars = python_has(&["polars"], "polars' part of the schema evolution test");
    let script = r#"
import json, sys
sys.path.insert(0, sys.argv[2])
from readers import duckdb_connection
from deltalake import DeltaTable
path, polars = sys.argv[1], sys.argv[3] == "1"
def summary(rows):
    stakes = [r for r in rows if r is not None]
    return {"rows": len(rows), "stakes": len(stakes), "sum": sum(stakes)}
out = {}
t = DeltaTable(path)
out["deltalake"] = summary(t.to_pyarrow_table().column("a_cheap_min_stake").to_pylist())
out["deltalake_columns"] = {str(v): [f.name for f in DeltaTable(path, version=v).schema().fields] for v in (1, 2)}
out["deltalake_v2"] = summary(DeltaTable(path, version=2).to_pyarrow_table().column("a_cheap_min_stake").to_pylist())
out["duckdb"] = summary([r[0] for r in duckdb_connection().sql(f"SELECT a_cheap_min_stake FROM delta_scan('{path}')").fetchall()])
if polars:
    import polars as pl
    out["polars"] = summary(pl.scan_delta(path).select("a_cheap_min_stake").collect().to_series().to_list())
print(json.dumps(out))
"#;
    let out = Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(path.join(table))
        .arg(root().join("tests/lake"))
        .arg(if polars { "1" } else { "0" })
        .output()
        .expect("python3");
    let got: serde_json::Value = match (out.status.success(), serde_json::from_slice(&out.stdout)) {
        (true, Ok(v)) => v,
        _ => panic!("python3: {}", String::from_utf8_lossy(&out.stderr)),
    };
    let want = serde_json::json!({"rows": 10, "stakes": 8, "sum": 44});
    assert_eq!(got["deltalake"], want, "{got}");
    assert_eq!(got["duckdb"], want, "{got}");
    if polars {
        assert_eq!(got["polars"], want, "{got}");
    }
    // Time travel: before the schema version, no column; at it, the older file's rows, null.
    let cols = |v: &str| -> Vec<String> {
        serde_json::from_value(got["deltalake_columns"][v].clone()).unwrap()
    };
    assert!(!cols("1").iter().any(|c| c == "a_cheap_min_stake"), "{got}");
    assert!(cols("2").iter().any(|c| c == "a_cheap_min_stake"), "{got}");
    assert_eq!(
        got["deltalake_v2"],
        serde_json::json!({"rows": 2, "stakes": 0, "sum": 0}),
        "{got}"
    );
}

#[test]
fn every_timestamp_of_every_data_file_is_written_adjusted_to_utc() {
    // Delta's `timestamp` is an instant: its Parquet files must say "adjusted to UTC", or a reader
    // such as DuckDB shifts the values by its session's time zone. The feature tables are written
    // by polars, the others by arrow-rs: both are checked.
    let lake = crate::common::sample_lake();
    let mut checked = std::collections::BTreeSet::new();
    for path in crate::common::data_files(lake) {
        if path.extension().is_none_or(|e| e != "parquet") {
            continue;
        }
        let file = std::fs::File::open(&path).unwrap();
        let builder =
            parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file).unwrap();
        for field in builder.schema().fields() {
            if let arrow::datatypes::DataType::Timestamp(_, tz) = field.data_type() {
                assert!(
                    tz.is_some(),
                    "{}: {} is not adjusted to UTC",
                    path.display(),
                    field.name()
                );
                checked.insert(field.name().clone());
            }
        }
    }
    assert!(
        checked.contains("window_end"),
        "feature tables checked: {checked:?}"
    );
    assert!(checked.contains("ts"), "{checked:?}");
}
