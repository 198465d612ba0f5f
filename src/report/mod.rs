//! The compliance audit report: a period's evidence that games were fair and rules enforced, as a hashed, reproducible bundle.
//!
//! The bundle holds `summary.json` and `summary.html`, the evidence files
//! behind every figure (`evidence/*.csv` and `evidence/*.parquet`), a
//! `MANIFEST.sha256` in `sha256sum` format and `DIGEST` (the SHA-256 of the
//! manifest: one number for the whole bundle). Nothing in it depends on the
//! wall clock: the same lake snapshot and period give the same bytes.
//!
//! Memory does not grow with the period: the queries that list every roll,
//! deal, duel and selection run a week of game start days at a time, their
//! rows streamed into the evidence files and the randomness tally
//! ([`randomness::Tally`]); the other queries are aggregates or findings.

pub mod calibrate;
pub mod html;
pub mod randomness;
pub mod stats;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use arrow::array::RecordBatch;
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::lake::{Lake, LakeError, Snapshot, hex};

/// The report's SQL, shipped with the binary (the files live in `queries/report/`).
pub const QUERIES: [(&str, &str); 11] = [
    ("volumes", include_str!("../../queries/report/volumes.sql")),
    (
        "fairness_checks",
        include_str!("../../queries/report/fairness_checks.sql"),
    ),
    (
        "fairness_failures",
        include_str!("../../queries/report/fairness_failures.sql"),
    ),
    (
        "integrity",
        include_str!("../../queries/report/integrity.sql"),
    ),
    (
        "integrity_events",
        include_str!("../../queries/report/integrity_events.sql"),
    ),
    ("flags", include_str!("../../queries/report/flags.sql")),
    ("dice", include_str!("../../queries/report/dice.sql")),
    ("seeds", include_str!("../../queries/report/seeds.sql")),
    ("deals", include_str!("../../queries/report/deals.sql")),
    ("duels", include_str!("../../queries/report/duels.sql")),
    (
        "selections",
        include_str!("../../queries/report/selections.sql"),
    ),
];

/// The queries that list every random outcome of the period, in the order a chunk runs them
/// (a game's seed before its deals and selections).
const CHUNKED: [&str; 5] = ["seeds", "dice", "deals", "duels", "selections"];

/// Chunked queries whose rows are raw lines, not evidence files (their counts are).
const NOT_EVIDENCE: [&str; 2] = ["duels", "selections"];

/// Days of game starts per chunk of the chunked queries.
const CHUNK_DAYS: i64 = 7;

/// Rows per row group of the evidence Parquet files (what the writer buffers).
const EVIDENCE_GROUP_ROWS: usize = 128 * 1024;

/// A report query with its period filled in: `${from}` and `${to}` bound the games' start days;
/// `${events_from}` and `${events_to}` bound the `events` partitions read for them (a literal
/// range, so that partitions outside it are never opened).
pub fn render_query(sql: &str, from: &str, to: &str, events_from: &str, events_to: &str) -> String {
    sql.replace("${from}", from)
        .replace("${to}", to)
        .replace("${events_from}", events_from)
        .replace("${events_to}", events_to)
}

/// Options of a report.
#[derive(Debug, Clone)]
pub struct ReportOptions {
    /// First day of the period (`YYYY-MM-DD`, UTC).
    pub from: String,
    /// Last day of the period (inclusive).
    pub to: String,
    /// When the report is generated (an input, so that runs are reproducible).
    pub generated_at: String,
    /// Significance level of the randomness tests (before the Holm correction).
    pub alpha: f64,
    pub out: PathBuf,
    /// Read the lake as it was at this version (default: the latest); a bundle generated again
    /// `as_of` the version it records is byte-identical.
    pub as_of: Option<u64>,
}

/// Errors of the report.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error(transparent)]
    Lake(#[from] LakeError),
    #[error("query {name}: {source}")]
    Query {
        name: String,
        source: datafusion::error::DataFusionError,
    },
    #[error("arrow: {0}")]
    Arrow(#[from] arrow::error::ArrowError),
    #[error("parquet: {0}")]
    Parquet(#[from] parquet::errors::ParquetError),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("invalid option: {0}")]
    Option(String),
    #[error("runtime: {0}")]
    Runtime(std::io::Error),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ReportError + '_ {
    move |source| ReportError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The figures of the report (also `summary.json`).
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub scope: Scope,
    pub volumes: Vec<BTreeMap<String, serde_json::Value>>,
    pub fairness: Fairness,
    pub randomness: randomness::Randomness,
    pub integrity: Vec<BTreeMap<String, serde_json::Value>>,
    pub enforcement: Enforcement,
    /// Evidence files by figure.
    pub evidence: BTreeMap<String, Vec<String>>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Scope {
    pub period_from: String,
    pub period_to: String,
    pub generated_at: String,
    pub vigie_version: String,
    pub build: String,
    pub lake_snapshot: String,
    pub lake_version: u64,
    /// The Delta version of every table at that lake version (`None`: the table has no Delta
    /// version that old), for readers that check the figures with their own Delta reader.
    pub delta_versions: BTreeMap<String, Option<u64>>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Fairness {
    pub by_kind: Vec<BTreeMap<String, serde_json::Value>>,
    pub commitments_checked: i64,
    pub commitments_failed: i64,
    pub seed_reuse: i64,
    pub missing_reveals: i64,
    pub failures: Vec<BTreeMap<String, serde_json::Value>>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Enforcement {
    pub flags: Vec<BTreeMap<String, serde_json::Value>>,
    pub flags_total: i64,
    pub audit: crate::review::AuditSummary,
}

/// The build the binary came from (set by build.rs from git), or `unknown`.
pub fn build_id() -> &'static str {
    option_env!("VIGIE_BUILD").unwrap_or("unknown")
}

fn check_date(s: &str) -> Result<(), ReportError> {
    crate::log::syntax::parse_ts(&format!("{s}T00:00:00.000Z"))
        .map(|_| ())
        .map_err(|e| ReportError::Option(format!("{s:?} is not a date YYYY-MM-DD ({e})")))
}

/// Generates the bundle into `opts.out` from the lake's latest snapshot; returns the summary and the digest.
pub fn generate(lake: &Lake, opts: &ReportOptions) -> Result<(Summary, String), ReportError> {
    check_date(&opts.from)?;
    check_date(&opts.to)?;
    // Dates YYYY-MM-DD compare as text.
    if opts.from > opts.to {
        return Err(ReportError::Option(format!(
            "the period starts ({}) after it ends ({})",
            opts.from, opts.to
        )));
    }
    // A level at which no test could fail (0, NaN) or every one would is no test.
    if !(opts.alpha > 0.0 && opts.alpha < 1.0) {
        return Err(ReportError::Option(format!(
            "the significance level must be between 0 and 1 (exclusive), got {}",
            opts.alpha
        )));
    }
    check_out(lake, &opts.out)?;
    if crate::log::syntax::parse_ts(&opts.generated_at).is_err() {
        return Err(ReportError::Option(format!(
            "{:?} is not a timestamp YYYY-MM-DDTHH:MM:SS.mmmZ",
            opts.generated_at
        )));
    }
    let (snapshot, _lease) = lake.held_snapshot(opts.as_of)?;
    let delta_versions = delta_versions(lake, snapshot.version())?;
    // Written aside, then put in place: a failed run leaves no half bundle under `out`.
    let dir = partial_dir(&opts.out);
    if dir.exists() {
        std::fs::remove_dir_all(&dir).map_err(io(&dir))?;
    }
    let evidence_dir = dir.join("evidence");
    std::fs::create_dir_all(&evidence_dir).map_err(io(&evidence_dir))?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(ReportError::Runtime)?;
    let (results, counts, mut evidence) =
        rt.block_on(run_queries(&snapshot, opts, &evidence_dir))?;
    let mut tables: BTreeMap<String, Vec<BTreeMap<String, serde_json::Value>>> = BTreeMap::new();
    for (name, batches) in &results {
        let files = write_evidence(&evidence_dir, name, batches)?;
        evidence.insert(name.clone(), files);
        tables.insert(name.clone(), rows(batches)?);
    }
    let randomness = randomness::compute_counts(&counts, opts.alpha);
    for (name, batch) in randomness::evidence_tables(&randomness)? {
        let files = write_evidence(&evidence_dir, &name, &[batch])?;
        evidence.insert(name, files);
    }
    let audit = crate::review::summarize(&snapshot, &opts.from, &opts.to)
        .map_err(|e| ReportError::Option(e.to_string()))?;
    {
        let batch = crate::review::audit_batch(&audit.entries)?;
        let files = write_evidence(&evidence_dir, "audit_log", &[batch])?;
        evidence.insert("audit_log".into(), files);
    }
    let fairness_rows = tables.remove("fairness_checks").unwrap_or_default();
    let failures = tables.remove("fairness_failures").unwrap_or_default();
    let sum = |rows: &[BTreeMap<String, serde_json::Value>], k: &str| -> i64 {
        rows.iter()
            .filter_map(|r| r.get(k).and_then(serde_json::Value::as_i64))
            .sum()
    };
    let count_code = |code: &str| {
        failures
            .iter()
            .filter(|f| f.get("code").and_then(|c| c.as_str()) == Some(code))
            .count() as i64
    };
    let fairness = Fairness {
        commitments_checked: sum(&fairness_rows, "commitments"),
        commitments_failed: count_code("commitment_mismatch")
            + count_code("commitment_missing")
            + count_code("late_commitment"),
        seed_reuse: count_code("seed_reused"),
        missing_reveals: count_code("seed_missing"),
        by_kind: fairness_rows,
        failures,
    };
    let flags = tables.remove("flags").unwrap_or_default();
    let summary = Summary {
        scope: Scope {
            period_from: opts.from.clone(),
            period_to: opts.to.clone(),
            generated_at: opts.generated_at.clone(),
            vigie_version: env!("CARGO_PKG_VERSION").to_string(),
            build: build_id().to_string(),
            lake_snapshot: snapshot.id(),
            lake_version: snapshot.version(),
            delta_versions,
        },
        volumes: tables.remove("volumes").unwrap_or_default(),
        fairness,
        randomness,
        integrity: tables.remove("integrity").unwrap_or_default(),
        enforcement: Enforcement {
            flags_total: sum(&flags, "flags"),
            flags,
            audit,
        },
        evidence,
    };
    let json =
        serde_json::to_string_pretty(&summary).map_err(|e| ReportError::Option(e.to_string()))?;
    let json_path = dir.join("summary.json");
    std::fs::write(&json_path, json + "\n").map_err(io(&json_path))?;
    let html_path = dir.join("summary.html");
    std::fs::write(&html_path, html::render(&summary)).map_err(io(&html_path))?;
    let digest = write_manifest(&dir)?;
    if opts.out.exists() {
        std::fs::remove_dir_all(&opts.out).map_err(io(&opts.out))?;
    }
    std::fs::rename(&dir, &opts.out).map_err(io(&opts.out))?;
    Ok((summary, digest))
}

/// The Delta version of every table that describes Vigie version `v`. A Delta log behind it (a
/// writer between its Vigie commit and its Delta commits, or killed there) is rolled forward
/// first, as a writer's recovery would: the version named must be the one a Delta reader reads
/// the report's data at, the same when the report is made again.
fn delta_versions(lake: &Lake, v: u64) -> Result<BTreeMap<String, Option<u64>>, ReportError> {
    let tables = crate::catalog::tables();
    let behind = |lake: &Lake| -> Result<Vec<&str>, ReportError> {
        let mut out = Vec::new();
        for t in &tables {
            if crate::lake::delta::behind(lake, t.name, v)? {
                out.push(t.name);
            }
        }
        Ok(out)
    };
    if !behind(lake)?.is_empty() {
        if let Err(e) = lake.sync_delta() {
            tracing::warn!(error = %e, "the Delta logs behind the report's version could not be rolled forward");
        }
        let still = behind(lake)?;
        if !still.is_empty() {
            return Err(ReportError::Option(format!(
                "the Delta logs of {} are behind lake version {v}: run `vigie lake sync`, then the report again",
                still.join(", ")
            )));
        }
    }
    let mut out = BTreeMap::new();
    for t in &tables {
        out.insert(
            t.name.to_owned(),
            crate::lake::delta::version_for(lake.root(), t.name, v)?,
        );
    }
    Ok(out)
}

/// A bundle replaces what is at `out` only when that is an earlier bundle (it has a `DIGEST`):
/// any other directory, a file, or one holding the lake is refused, never deleted.
fn check_out(lake: &Lake, out: &Path) -> Result<(), ReportError> {
    let refuse = |why: &str| {
        Err(ReportError::Option(format!(
            "--out {}: {why}; give a new directory or an earlier report's",
            out.display()
        )))
    };
    let Some(o) = resolved(out) else {
        return refuse(
            "the path cannot be resolved (a `..` after a directory that does not exist)",
        );
    };
    if let Ok(l) = lake.root().canonicalize()
        && (l.starts_with(&o) || o.starts_with(&l))
    {
        return refuse("it holds the lake or is inside it");
    }
    match std::fs::symlink_metadata(out) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(ReportError::Io {
            path: out.to_path_buf(),
            source: e,
        }),
        Ok(m) if !m.is_dir() => refuse("it exists and is not a directory"),
        Ok(_) if out.join("DIGEST").is_file() => Ok(()),
        Ok(_) => match std::fs::read_dir(out).map(|mut d| d.next().is_none()) {
            Ok(true) => Ok(()),
            _ => refuse("it exists and is not a report bundle (no DIGEST)"),
        },
    }
}

/// `path` made absolute through its nearest existing ancestor (a path that does not exist yet
/// cannot be canonicalised whole).
fn resolved(path: &Path) -> Option<PathBuf> {
    let mut tail = Vec::new();
    let mut cur = path.to_path_buf();
    loop {
        if let Ok(mut found) = cur.canonicalize() {
            found.extend(tail.iter().rev());
            return Some(found);
        }
        tail.push(cur.file_name()?.to_owned());
        cur = match cur.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
    }
}

/// Where a bundle is written before it is complete: beside `out`, `<name>.partial`.
fn partial_dir(out: &Path) -> PathBuf {
    let mut name = out
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_else(|| "bundle".into());
    name.push(".partial");
    out.with_file_name(name)
}

/// The chunks of game start days of a period: (first, last) days, `CHUNK_DAYS` at most each.
fn chunks(from: &str, to: &str) -> Result<Vec<(String, String)>, ReportError> {
    let day = |s: &str| {
        chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d")
            .map_err(|e| ReportError::Option(format!("{s:?} is not a date YYYY-MM-DD ({e})")))
    };
    let (mut d, end) = (day(from)?, day(to)?);
    let mut out = Vec::new();
    while d <= end {
        let last = (d + chrono::Duration::days(CHUNK_DAYS - 1)).min(end);
        out.push((
            d.format("%Y-%m-%d").to_string(),
            last.format("%Y-%m-%d").to_string(),
        ));
        d = last + chrono::Duration::days(1);
    }
    Ok(out)
}

/// Whether a spreadsheet would run a CSV field as a formula: it starts with `=`, `+`, `-`, `@`, a
/// tab or a carriage return, and is not a number (OWASP's "CSV injection").
pub fn spreadsheet_formula(v: &str) -> bool {
    v.starts_with(['=', '+', '-', '@', '\t', '\r']) && v.parse::<f64>().is_err()
}

/// The batch for a CSV: every text value a spreadsheet would run as a formula gets a leading `'`
/// (accounts are chosen by players, reasons typed by staff); the Parquet twin keeps the values
/// exactly.
fn csv_safe(b: &RecordBatch) -> Result<RecordBatch, ReportError> {
    use arrow::array::{ArrayRef, AsArray, LargeStringArray, StringArray, StringViewArray};
    use arrow::datatypes::DataType;
    use std::borrow::Cow;
    use std::sync::Arc;
    fn safe<'a>(v: Option<&'a str>) -> Option<Cow<'a, str>> {
        v.map(|s| {
            if spreadsheet_formula(s) {
                Cow::Owned(format!("'{s}"))
            } else {
                Cow::Borrowed(s)
            }
        })
    }
    let formula = |v: Option<&str>| v.is_some_and(spreadsheet_formula);
    let columns: Vec<ArrayRef> = b
        .columns()
        .iter()
        .map(|c| match c.data_type() {
            DataType::Utf8 if c.as_string::<i32>().iter().any(formula) => Arc::new(
                c.as_string::<i32>()
                    .iter()
                    .map(safe)
                    .collect::<StringArray>(),
            ) as ArrayRef,
            DataType::LargeUtf8 if c.as_string::<i64>().iter().any(formula) => Arc::new(
                c.as_string::<i64>()
                    .iter()
                    .map(safe)
                    .collect::<LargeStringArray>(),
            ),
            DataType::Utf8View if c.as_string_view().iter().any(formula) => Arc::new(
                c.as_string_view()
                    .iter()
                    .map(safe)
                    .collect::<StringViewArray>(),
            ),
            _ => Arc::clone(c),
        })
        .collect();
    Ok(RecordBatch::try_new(b.schema(), columns)?)
}

/// An evidence table written as it streams: CSV and Parquet.
struct EvidenceWriter {
    csv: arrow::csv::Writer<std::fs::File>,
    parquet: parquet::arrow::ArrowWriter<std::fs::File>,
}

impl EvidenceWriter {
    fn create(
        dir: &Path,
        name: &str,
        schema: arrow::datatypes::SchemaRef,
    ) -> Result<Self, ReportError> {
        let csv_path = dir.join(format!("{name}.csv"));
        let file = std::fs::File::create(&csv_path).map_err(io(&csv_path))?;
        let csv = arrow::csv::WriterBuilder::new()
            .with_header(true)
            .build(file);
        let pq_path = dir.join(format!("{name}.parquet"));
        let file = std::fs::File::create(&pq_path).map_err(io(&pq_path))?;
        let props = parquet::file::properties::WriterProperties::builder()
            .set_created_by(format!("vigie {}", env!("CARGO_PKG_VERSION")))
            .set_max_row_group_row_count(Some(EVIDENCE_GROUP_ROWS))
            .build();
        let parquet = parquet::arrow::ArrowWriter::try_new(file, schema, Some(props))?;
        Ok(EvidenceWriter { csv, parquet })
    }

    fn write(&mut self, b: &RecordBatch) -> Result<(), ReportError> {
        self.csv.write(&csv_safe(b)?)?;
        self.parquet.write(b)?;
        Ok(())
    }

    fn finish(self, name: &str) -> Result<Vec<String>, ReportError> {
        self.parquet.close()?;
        Ok(vec![
            format!("evidence/{name}.csv"),
            format!("evidence/{name}.parquet"),
        ])
    }
}

/// Runs the report's queries: the aggregates and findings whole (returned), the chunked ones a
/// chunk of game start days at a time, streamed into their evidence files and the tally.
async fn run_queries(
    snapshot: &Snapshot,
    opts: &ReportOptions,
    evidence_dir: &Path,
) -> Result<
    (
        Vec<(String, Vec<RecordBatch>)>,
        randomness::Counts,
        BTreeMap<String, Vec<String>>,
    ),
    ReportError,
> {
    use futures::StreamExt as _;
    let tables = crate::catalog::tables();
    let ctx = crate::lake::sql::session(snapshot, &tables, crate::lake::sql::Limits::default())
        .await
        .map_err(|source| ReportError::Query {
            name: "(session)".into(),
            source,
        })?;
    let q = |name: &str| {
        let name = name.to_string();
        move |source| ReportError::Query { name, source }
    };
    let mut out = Vec::new();
    for (name, sql) in QUERIES {
        if CHUNKED.contains(&name) {
            continue;
        }
        let sql = render_query(sql, &opts.from, &opts.to, &opts.from, &opts.to);
        let batches = ctx
            .sql(&sql)
            .await
            .map_err(q(name))?
            .collect()
            .await
            .map_err(q(name))?;
        out.push((name.to_string(), batches));
    }
    let mut tally = randomness::Tally::default();
    let mut writers: BTreeMap<&str, EvidenceWriter> = BTreeMap::new();
    for (from, to) in chunks(&opts.from, &opts.to)? {
        // The chunk's games log their events from the day before their start (clocks) to the
        // day of their last event.
        let bounds = format!(
            "SELECT CAST(min(date) - INTERVAL '1' DAY AS VARCHAR) AS lo, \
             CAST(CAST(max(last_ts) AS DATE) AS VARCHAR) AS hi \
             FROM games WHERE date BETWEEN DATE '{from}' AND DATE '{to}'"
        );
        let b = ctx
            .sql(&bounds)
            .await
            .map_err(q("(chunk bounds)"))?
            .collect()
            .await
            .map_err(q("(chunk bounds)"))?;
        let (Some(lo), Some(hi)) = (first_text(&b, 0), first_text(&b, 1)) else {
            continue; // no game started in the chunk
        };
        for name in CHUNKED {
            let Some((_, sql)) = QUERIES.iter().find(|(n, _)| *n == name) else {
                continue;
            };
            let sql = render_query(sql, &from, &to, &lo, &hi);
            let df = ctx.sql(&sql).await.map_err(q(name))?;
            let mut stream = df.execute_stream().await.map_err(q(name))?;
            if !NOT_EVIDENCE.contains(&name) && !writers.contains_key(name) {
                writers.insert(
                    name,
                    EvidenceWriter::create(evidence_dir, name, stream.schema())?,
                );
            }
            while let Some(batch) = stream.next().await {
                let batch = batch.map_err(q(name))?;
                tally.add(name, &batch)?;
                if let Some(w) = writers.get_mut(name) {
                    w.write(&batch)?;
                }
            }
        }
        tally.end_chunk();
    }
    let mut evidence = BTreeMap::new();
    for name in CHUNKED {
        if NOT_EVIDENCE.contains(&name) {
            continue;
        }
        let files = match writers.remove(name) {
            Some(w) => w.finish(name)?,
            // No game in the period: an empty table.
            None => write_evidence(evidence_dir, name, &[])?,
        };
        evidence.insert(name.to_string(), files);
    }
    Ok((out, tally.finish(), evidence))
}

/// The text in column `col` of the first row of a query's result (None when null or absent).
fn first_text(batches: &[RecordBatch], col: usize) -> Option<String> {
    use arrow::array::{Array, AsArray};
    let b = batches.iter().find(|b| b.num_rows() > 0)?;
    // VARCHAR may come back as a string view: read it as plain text.
    let a = arrow::compute::cast(b.column(col), &arrow::datatypes::DataType::Utf8).ok()?;
    let a = a.as_string_opt::<i32>()?;
    (!a.is_null(0)).then(|| a.value(0).to_string())
}

/// Batches as JSON objects (column order kept by BTreeMap's sorting: stable).
pub fn rows(
    batches: &[RecordBatch],
) -> Result<Vec<BTreeMap<String, serde_json::Value>>, ReportError> {
    let mut out = Vec::new();
    for b in batches {
        if b.num_rows() == 0 {
            continue;
        }
        let mut buf = Vec::new();
        {
            let mut w = arrow::json::ArrayWriter::new(&mut buf);
            w.write(b)?;
            w.finish()?;
        }
        let v: Vec<BTreeMap<String, serde_json::Value>> =
            serde_json::from_slice(&buf).map_err(|e| ReportError::Option(e.to_string()))?;
        out.extend(v);
    }
    Ok(out)
}

/// Writes one evidence table as CSV and Parquet; returns the relative paths.
fn write_evidence(
    dir: &Path,
    name: &str,
    batches: &[RecordBatch],
) -> Result<Vec<String>, ReportError> {
    let schema = match batches.first() {
        Some(b) => b.schema(),
        None => std::sync::Arc::new(arrow::datatypes::Schema::empty()),
    };
    let csv_path = dir.join(format!("{name}.csv"));
    {
        let file = std::fs::File::create(&csv_path).map_err(io(&csv_path))?;
        let mut w = arrow::csv::WriterBuilder::new()
            .with_header(true)
            .build(file);
        if batches.is_empty() {
            w.write(&RecordBatch::new_empty(schema.clone()))?;
        }
        for b in batches {
            w.write(&csv_safe(b)?)?;
        }
    }
    let pq_path = dir.join(format!("{name}.parquet"));
    {
        let file = std::fs::File::create(&pq_path).map_err(io(&pq_path))?;
        let props = parquet::file::properties::WriterProperties::builder()
            .set_created_by(format!("vigie {}", env!("CARGO_PKG_VERSION")))
            .build();
        let mut w = parquet::arrow::ArrowWriter::try_new(file, schema, Some(props))?;
        for b in batches {
            w.write(b)?;
        }
        w.close()?;
    }
    Ok(vec![
        format!("evidence/{name}.csv"),
        format!("evidence/{name}.parquet"),
    ])
}

/// Every file of a bundle (relative, sorted), manifest and digest excepted.
fn bundle_files(dir: &Path) -> Result<Vec<String>, ReportError> {
    let files = crate::lake::walk_files(dir)?;
    let mut out: Vec<String> = files
        .iter()
        .filter_map(|p| p.strip_prefix(dir).ok())
        .map(|p| {
            p.components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/")
        })
        .filter(|p| p != "MANIFEST.sha256" && p != "DIGEST")
        .collect();
    out.sort();
    Ok(out)
}

fn sha256_file(path: &Path) -> Result<String, ReportError> {
    let mut f = std::fs::File::open(path).map_err(io(path))?;
    let mut h = Sha256::new();
    std::io::copy(&mut f, &mut h).map_err(io(path))?;
    Ok(hex(&h.finalize()))
}

/// Writes `MANIFEST.sha256` (sha256sum format) and `DIGEST`; returns the digest.
fn write_manifest(dir: &Path) -> Result<String, ReportError> {
    let mut manifest = String::new();
    for f in bundle_files(dir)? {
        manifest.push_str(&format!("{}  {f}\n", sha256_file(&dir.join(&f))?));
    }
    let path = dir.join("MANIFEST.sha256");
    std::fs::write(&path, &manifest).map_err(io(&path))?;
    let digest = hex(&Sha256::digest(manifest.as_bytes()));
    let dpath = dir.join("DIGEST");
    std::fs::write(&dpath, format!("{digest}\n")).map_err(io(&dpath))?;
    Ok(digest)
}

/// What `vigie report verify` found.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct BundleCheck {
    pub changed: Vec<String>,
    pub missing: Vec<String>,
    /// Entries of the bundle the manifest does not list (with their kind when not a regular file).
    pub extra: Vec<String>,
    /// Manifest entries that are not a relative path inside the bundle, or not a regular file there.
    pub refused: Vec<String>,
    /// Whether DIGEST is the SHA-256 of the manifest.
    pub digest_ok: bool,
    pub digest: String,
}

impl BundleCheck {
    pub fn ok(&self) -> bool {
        self.changed.is_empty()
            && self.missing.is_empty()
            && self.extra.is_empty()
            && self.refused.is_empty()
            && self.digest_ok
    }
}

/// Whether a manifest path names a file inside the bundle: relative, made of plain names only
/// (no `..`, no `.`, no root, no empty or backslash-separated part).
fn inside_bundle(file: &str) -> bool {
    !file.is_empty()
        && !file.contains(['\\', '\0'])
        && file
            .split('/')
            .all(|part| !part.is_empty() && part != "." && part != "..")
        && Path::new(file)
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)))
}

/// Whether a directory on the way to `file` (inside `dir`) is a symbolic link.
fn through_link(dir: &Path, file: &str) -> bool {
    let mut at = dir.to_path_buf();
    let parts: Vec<&str> = file.split('/').collect();
    parts[..parts.len().saturating_sub(1)].iter().any(|p| {
        at.push(p);
        std::fs::symlink_metadata(&at).is_ok_and(|m| !m.file_type().is_dir())
    })
}

/// Every entry below `dir` that is not a directory, with its kind when it is not a regular file
/// (symbolic links are not followed).
fn bundle_entries(dir: &Path) -> Result<Vec<(String, Option<&'static str>)>, ReportError> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).map_err(io(&d))? {
            let entry = entry.map_err(io(&d))?;
            let path = entry.path();
            let ft = entry.file_type().map_err(io(&path))?;
            if ft.is_dir() {
                stack.push(path);
                continue;
            }
            let kind = if ft.is_file() {
                None
            } else if ft.is_symlink() {
                Some("symbolic link")
            } else {
                Some("special file")
            };
            let rel = path
                .strip_prefix(dir)
                .map(|p| {
                    p.components()
                        .map(|c| c.as_os_str().to_string_lossy().into_owned())
                        .collect::<Vec<_>>()
                        .join("/")
                })
                .unwrap_or_default();
            out.push((rel, kind));
        }
    }
    out.sort();
    Ok(out)
}

/// Re-hashes a bundle against its manifest. Only relative paths inside the bundle that are regular
/// files are hashed; every other entry of the directory is reported.
pub fn verify(dir: &Path) -> Result<BundleCheck, ReportError> {
    let mpath = dir.join("MANIFEST.sha256");
    let manifest = std::fs::read_to_string(&mpath).map_err(io(&mpath))?;
    let mut check = BundleCheck {
        digest: hex(&Sha256::digest(manifest.as_bytes())),
        ..BundleCheck::default()
    };
    // Byte for byte, as written: a space, CR or form feed in place of the newline is a change
    // like any other (it passed when the comparison trimmed).
    check.digest_ok = std::fs::read(dir.join("DIGEST"))
        .is_ok_and(|d| d == format!("{}\n", check.digest).as_bytes());
    let mut listed = std::collections::BTreeSet::new();
    for line in manifest.lines() {
        let Some((hash, file)) = line.split_once("  ") else {
            check
                .changed
                .push(format!("MANIFEST.sha256: unreadable line {line:?}"));
            continue;
        };
        if !inside_bundle(file) {
            check
                .refused
                .push(format!("{file:?}: not a relative path inside the bundle"));
            continue;
        }
        listed.insert(file.to_string());
        let path = dir.join(file);
        if through_link(dir, file) {
            check
                .refused
                .push(format!("{file}: reached through a symbolic link"));
            continue;
        }
        match std::fs::symlink_metadata(&path) {
            Err(_) => check.missing.push(file.to_string()),
            Ok(m) if !m.file_type().is_file() => {
                check.refused.push(format!("{file}: not a regular file"))
            }
            Ok(_) => {
                if sha256_file(&path)? != hash {
                    check.changed.push(file.to_string());
                }
            }
        }
    }
    for (f, kind) in bundle_entries(dir)? {
        if f == "MANIFEST.sha256" || f == "DIGEST" || listed.contains(&f) {
            continue;
        }
        check.extra.push(match kind {
            Some(k) => format!("{f} ({k})"),
            None => f,
        });
    }
    Ok(check)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_csv_twin_neutralises_formulas_and_the_parquet_keeps_values() {
        use arrow::array::{Int64Array, StringArray, StringViewArray};
        use arrow::datatypes::{DataType, Field, Schema};
        use std::sync::Arc;
        let accounts = [
            "=HYPERLINK(\"http://x\")",
            "acc-1",
            "-3",
            "@SUM(A1)",
            "+a",
            "-",
        ];
        let schema = Arc::new(Schema::new(vec![
            Field::new("account", DataType::Utf8, true),
            Field::new("reason", DataType::Utf8View, true),
            Field::new("n", DataType::Int64, false),
        ]));
        let b = RecordBatch::try_new(
            schema,
            vec![
                Arc::new(StringArray::from_iter(accounts.iter().map(Some))),
                Arc::new(StringViewArray::from_iter(
                    [
                        Some("=1+1"),
                        None,
                        Some("ok"),
                        Some("\tx"),
                        Some("1e3"),
                        Some(""),
                    ]
                    .into_iter(),
                )),
                Arc::new(Int64Array::from(vec![-1, 2, 3, 4, 5, 6])),
            ],
        )
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let files = write_evidence(dir.path(), "t", std::slice::from_ref(&b)).unwrap();
        assert!(files.iter().any(|f| f.ends_with("t.csv")), "{files:?}");
        let csv = std::fs::read_to_string(dir.path().join("t.csv")).unwrap();
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(
            lines,
            [
                "account,reason,n",
                r#""'=HYPERLINK(""http://x"")",'=1+1,-1"#,
                "acc-1,,2",
                "-3,ok,3",
                "'@SUM(A1),'\tx,4",
                "'+a,1e3,5",
                "'-,,6",
            ]
        );
        let file = std::fs::File::open(dir.path().join("t.parquet")).unwrap();
        let read: Vec<RecordBatch> =
            parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
                .unwrap()
                .build()
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
        assert_eq!(
            read,
            vec![b],
            "the Parquet twin holds the values as they are"
        );
    }

    #[test]
    fn a_period_is_cut_into_weeks_of_start_days_with_nothing_left_out() {
        let c = chunks("2026-02-25", "2026-03-12").unwrap();
        assert_eq!(
            c,
            vec![
                ("2026-02-25".to_string(), "2026-03-03".to_string()),
                ("2026-03-04".to_string(), "2026-03-10".to_string()),
                ("2026-03-11".to_string(), "2026-03-12".to_string()),
            ]
        );
        assert_eq!(
            chunks("2026-11-20", "2026-11-20").unwrap(),
            vec![("2026-11-20".to_string(), "2026-11-20".to_string())]
        );
        assert!(chunks("2026-11-21", "2026-11-20").unwrap().is_empty());
        assert!(chunks("2026-13-01", "2026-13-02").is_err());
    }

    #[test]
    fn a_query_gets_its_period_and_partition_bounds() {
        let q = render_query(
            "g.date BETWEEN '${from}' AND '${to}' AND e.date BETWEEN '${events_from}' AND '${events_to}'",
            "2026-11-01",
            "2026-11-07",
            "2026-10-31",
            "2026-11-09",
        );
        assert_eq!(
            q,
            "g.date BETWEEN '2026-11-01' AND '2026-11-07' AND e.date BETWEEN '2026-10-31' AND '2026-11-09'"
        );
    }
}
