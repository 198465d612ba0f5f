//! Helpers shared by the integration tests: paths, the binary, and reading a lake back.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use arrow::array::{Array, AsArray, RecordBatch};
use arrow::datatypes::Int64Type;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use vigie::lake::Lake;

/// The contract fixtures committed in the repository (copies of `../shared`: `tests/fixtures/README.md`).
/// Paths under it mirror the shared directory: `fixtures/…`.
pub fn shared() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests")
}

/// The independent implementation's clean sample.
pub fn shared_sample() -> PathBuf {
    shared().join("fixtures/server-logs/sample.jsonl")
}

/// The `vigie` binary of this build, copied once per test run: another checkout building into
/// the same target directory replaces `target/debug/vigie`, never this copy.
pub fn vigie_bin() -> &'static Path {
    static BIN: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BIN.get_or_init(|| {
        let built = Path::new(env!("CARGO_BIN_EXE_vigie"));
        let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
        // Copies of earlier runs whose process is gone take a binary's size each: remove them.
        if let Ok(entries) = std::fs::read_dir(&tmp) {
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if let Some(pid) = name.strip_prefix("bin-")
                    && !Path::new("/proc").join(pid).exists()
                {
                    let _ = std::fs::remove_dir_all(e.path());
                }
            }
        }
        let dir = tmp.join(format!("bin-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("binary dir");
        let copy = dir.join("vigie");
        std::fs::copy(built, &copy).expect("copy the vigie binary");
        copy
    })
}

/// Runs the `vigie` binary.
pub fn vigie(args: &[&str]) -> Output {
    Command::new(vigie_bin())
        .args(args)
        .env("VIGIE_LOG", "warn")
        .output()
        .expect("run vigie")
}

/// Reads every batch of a table from the lake's committed snapshot.
pub fn read_table(lake: &Path, table: &str) -> Vec<RecordBatch> {
    let lake = Lake::open(lake).expect("open lake");
    let snap = lake.snapshot().expect("snapshot");
    let mut out = Vec::new();
    for path in snap.table_paths(table) {
        let reader =
            ParquetRecordBatchReaderBuilder::try_new(File::open(&path).expect("open file"))
                .expect("parquet")
                .build()
                .expect("reader");
        for b in reader {
            out.push(b.expect("batch"));
        }
    }
    out
}

/// A string column of a batch.
pub fn strings(b: &RecordBatch, name: &str) -> Vec<Option<String>> {
    let col = b.column_by_name(name).expect("column");
    let a = col.as_string::<i32>();
    (0..a.len())
        .map(|i| (!a.is_null(i)).then(|| a.value(i).to_string()))
        .collect()
}

/// An Int64 column of a batch.
pub fn ints(b: &RecordBatch, name: &str) -> Vec<Option<i64>> {
    let col = b.column_by_name(name).expect("column");
    let a = col.as_primitive::<Int64Type>();
    (0..a.len())
        .map(|i| (!a.is_null(i)).then(|| a.value(i)))
        .collect()
}

/// The events of a lake as a sorted list of (game, seq, raw), duplicates kept.
pub fn event_rows(lake: &Path) -> Vec<(String, i64, String)> {
    let mut out = Vec::new();
    for b in read_table(lake, "events") {
        let g = strings(&b, "game");
        let s = ints(&b, "seq");
        let r = strings(&b, "raw");
        for i in 0..b.num_rows() {
            out.push((
                g[i].clone().unwrap_or_default(),
                s[i].unwrap_or(-1),
                r[i].clone().unwrap_or_default(),
            ));
        }
    }
    out.sort();
    out
}

/// The quarantine of a lake as a sorted list of (src_id, offset, reason, raw bytes).
pub fn quarantine_rows(lake: &Path) -> Vec<(String, i64, String, Vec<u8>)> {
    let mut out = Vec::new();
    for b in read_table(lake, "quarantine") {
        let id = strings(&b, "src_id");
        let off = ints(&b, "src_offset");
        let reason = strings(&b, "reason");
        let raw = b.column_by_name("raw").expect("raw");
        let raw = raw.as_binary::<i32>();
        for i in 0..b.num_rows() {
            out.push((
                id[i].clone().unwrap_or_default(),
                off[i].unwrap_or(-1),
                reason[i].clone().unwrap_or_default(),
                raw.value(i).to_vec(),
            ));
        }
    }
    out.sort();
    out
}

/// The ingest checkpoints of a lake: source id -> (offset, lines).
pub fn checkpoints(lake: &Path) -> BTreeMap<String, (u64, u64)> {
    let lake = Lake::open(lake).expect("open lake");
    let state = lake.state().expect("state");
    state
        .sources
        .values()
        .map(|s| (s.id.clone(), (s.offset, s.lines)))
        .collect()
}

/// Every file name under the table directories of a lake (not `_vigie`).
pub fn data_files(lake: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(lake).expect("read lake") {
        let entry = entry.expect("entry");
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.starts_with('_') && entry.path().is_dir() {
            // The table's data files, not its Delta log.
            out.extend(
                vigie::lake::walk_files(&entry.path())
                    .expect("walk")
                    .into_iter()
                    .filter(|p| !p.components().any(|c| c.as_os_str() == "_delta_log")),
            );
        }
    }
    out.sort();
    out
}

/// Makes sure Python modules the cross-engine tests use are importable (installs them with pip if not).
pub fn ensure_python(modules: &[&str]) {
    let check = |m: &str| {
        Command::new("python3")
            .args(["-c", &format!("import {m}")])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    let missing: Vec<&str> = modules.iter().copied().filter(|m| !check(m)).collect();
    if missing.is_empty() {
        return;
    }
    let out = Command::new("python3")
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
        ])
        .args(&missing)
        .output()
        .expect("run pip");
    assert!(
        out.status.success(),
        "pip install {missing:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Ingests `input` (a file or directory) into the lake at `lake`, without progress bars.
pub fn quiet_ingest(lake: &Path, input: &Path) {
    let l = vigie::catalog::open(lake).expect("open lake");
    vigie::ingest::ingest_paths(
        &l,
        &[input.to_path_buf()],
        &vigie::ingest::IngestOptions {
            progress: false,
            ..Default::default()
        },
    )
    .expect("ingest");
}

/// Replay options of the tests: two threads, no progress bar.
pub fn quiet_replay_options() -> vigie::replay::run::ReplayOptions {
    vigie::replay::run::ReplayOptions {
        threads: 2,
        progress: false,
    }
}

/// Replays what is new in the lake at `lake`.
pub fn quiet_replay(lake: &Path) -> vigie::replay::run::ReplayReport {
    let l = vigie::catalog::open(lake).expect("open lake");
    vigie::replay::run::run(&l, &quiet_replay_options()).expect("replay")
}

/// Simulates `opts` into `dir/logs`, then ingests and replays them into the lake `dir/lake`,
/// which it returns.
pub fn simulated_lake(opts: &vigie::sim::SimOptions, dir: &Path) -> PathBuf {
    let (logs, lake) = (dir.join("logs"), dir.join("lake"));
    vigie::sim::simulate(opts, &logs, &|_| {}).expect("simulate");
    quiet_ingest(&lake, &logs);
    quiet_replay(&lake);
    lake
}

/// A lake built once per test run from `data/sample` (the simulator's sample):
/// ingested, replayed, detected. Read-only: copy it to write.
pub fn sample_lake() -> &'static Path {
    static LAKE: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    LAKE.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("sample-lake");
        let _ = std::fs::remove_dir_all(&dir);
        quiet_ingest(&dir, &root.join("data/sample"));
        quiet_replay(&dir);
        let lake = vigie::catalog::open(&dir).expect("open lake");
        vigie::detect::run(
            &lake,
            &root.join("queries/detect").into(),
            &Default::default(),
        )
        .expect("detect on the sample");
        dir
    })
}

/// A query over a lake through the analysts' SQL guard, every value as text.
pub fn sql_text(lake: &Path, query: &str) -> Vec<Vec<String>> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let guard = vigie::sql::Guard::open(&Lake::open(lake).expect("lake"), Default::default())
            .await
            .expect("sql session");
        let batches = guard.query(query, "test").await.expect("query");
        batch_text(&batches, &Default::default())
    })
}

/// Batches' rows, every value as text (`opts` says how, e.g. how a null shows).
pub fn batch_text(
    batches: &[RecordBatch],
    opts: &arrow::util::display::FormatOptions,
) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for b in batches {
        let fmts: Vec<_> = b
            .columns()
            .iter()
            .map(|c| {
                arrow::util::display::ArrayFormatter::try_new(c.as_ref(), opts).expect("formatter")
            })
            .collect();
        for i in 0..b.num_rows() {
            out.push(fmts.iter().map(|f| f.value(i).to_string()).collect());
        }
    }
    out
}

/// The first value of the first row of a query.
pub fn sql_first(lake: &Path, query: &str) -> String {
    sql_text(lake, query)
        .into_iter()
        .next()
        .and_then(|r| r.into_iter().next())
        .unwrap_or_else(|| panic!("no row for {query}"))
}

/// Writes, escapes and row bombs: refused on every path.
pub const REFUSED_SQL: [&str; 9] = [
    "CREATE TABLE t AS SELECT 1",
    "INSERT INTO flags SELECT * FROM flags",
    "COPY (SELECT 1) TO '/tmp/vigie-sql-escape.csv'",
    "DROP TABLE events",
    "SET datafusion.execution.batch_size = 1",
    "CREATE EXTERNAL TABLE x STORED AS CSV LOCATION '/etc/passwd'",
    "SELECT * FROM '/etc/passwd'",
    "SELECT count(*) FROM generate_series(1, 1000000000000)",
    "SELECT 1; DROP TABLE events",
];

/// A table's rows as sorted text, every column shown (content comparison independent of files).
pub fn table_rows(lake: &Path, table: &str) -> Vec<String> {
    let mut out: Vec<String> = batch_text(&read_table(lake, table), &Default::default())
        .into_iter()
        .map(|row| row.join("|"))
        .collect();
    out.sort();
    out
}

/// Copies a directory tree (a lake, to write to it without touching the original).
pub fn copy_dir(from: &Path, to: &Path) {
    for f in vigie::lake::walk_files(from).expect("walk") {
        let rel = f.strip_prefix(from).expect("under the source");
        let dst = to.join(rel);
        std::fs::create_dir_all(dst.parent().expect("a parent")).expect("mkdir");
        std::fs::copy(&f, &dst).expect("copy");
    }
}
