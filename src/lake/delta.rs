//! Delta Lake transaction logs of the lake's tables: each Vigie commit projected, in order, onto the `_delta_log/` of every table it touches, so that DuckDB, polars, pyarrow and Spark read exactly what Vigie committed.
//!
//! Vigie's own commit (`_vigie/log/N.json`) stays the one commit point: it
//! spans several tables and carries the ingest offsets and stage checkpoints.
//! A table's Delta log is a projection of it, written after the Vigie commit
//! is durable:
//!
//! * version 0 of a table creates it (`protocol` 1/2, `metaData` with the
//!   schema and the `date` partition column) with the files it has at some
//!   Vigie version `V` (none for a new table) and `txn {appId: "vigie",
//!   version: V}`;
//! * every later Vigie commit `N` that adds or removes files of the table
//!   becomes the table's next Delta version: `add` and `remove` actions
//!   (`dataChange: false` for compaction), `txn {appId: "vigie", version: N}`
//!   and `commitInfo`. Its content is a function of the Vigie commit alone,
//!   and it is published with an exclusive hard link, so two writers rolling
//!   the log forward at once write the same bytes and one of them wins;
//! * every [`CHECKPOINT_INTERVAL`] versions, a Parquet checkpoint and
//!   `_last_checkpoint`.
//!
//! A crash between a Vigie commit and its Delta commits leaves the Delta logs
//! one commit behind, which Delta readers see as the previous committed
//! version; the next writer rolls them forward ([`sync`]), before anything
//! else. `docs/lake.md` has the protocol and its crash cases.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::{
    ArrayRef, BooleanArray, Int32Array, Int64Array, ListArray, MapBuilder, MapFieldNames,
    RecordBatch, StringArray, StringBuilder, StructArray,
};
use arrow::buffer::{NullBuffer, OffsetBuffer};
use arrow::datatypes::{DataType, Field, Fields, Schema, TimeUnit};
use serde_json::{Value, json};

use super::manifest::{Commit, FileEntry, State};
use super::{Lake, LakeError, Result};

/// The `appId` of Vigie's `txn` actions: its value is the Vigie version a Delta version describes.
pub const APP_ID: &str = "vigie";
/// A Parquet checkpoint every this many Delta versions of a table.
pub const CHECKPOINT_INTERVAL: u64 = 10;
/// The protocol versions: 1 and 2 cover partitions, `txn`, statistics and checkpoints.
pub const MIN_READER: i32 = 1;
pub const MIN_WRITER: i32 = 2;

/// The `_delta_log` directory of a table.
pub fn log_dir(root: &Path, table: &str) -> PathBuf {
    root.join(table).join("_delta_log")
}

fn commit_file(dir: &Path, version: u64) -> PathBuf {
    dir.join(format!("{version:020}.json"))
}

fn checkpoint_file(dir: &Path, version: u64) -> PathBuf {
    dir.join(format!("{version:020}.checkpoint.parquet"))
}

fn corrupt(path: &Path, msg: impl Into<String>) -> LakeError {
    LakeError::Corrupt {
        path: path.to_path_buf(),
        msg: msg.into(),
    }
}

/// The Delta type of an Arrow type of the lake.
pub fn delta_type(ty: &DataType) -> std::result::Result<Value, String> {
    Ok(match ty {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => json!("string"),
        DataType::Int64 => json!("long"),
        DataType::Int32 => json!("integer"),
        DataType::Int16 => json!("short"),
        DataType::Int8 => json!("byte"),
        DataType::Float64 => json!("double"),
        DataType::Float32 => json!("float"),
        DataType::Boolean => json!("boolean"),
        DataType::Date32 => json!("date"),
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView => json!("binary"),
        // Every timestamp of the lake is a UTC instant. The feature tables are written by polars,
        // built without time zones, so their files say "not adjusted to UTC"; Delta's
        // `timestamp_ntz` would need reader 3 / writer 7 for no gain, and the Delta readers read
        // both kinds of files as `timestamp`.
        DataType::Timestamp(TimeUnit::Millisecond | TimeUnit::Microsecond, tz)
            if tz.as_deref().is_none_or(|tz| tz == "UTC" || tz == "+00:00") =>
        {
            json!("timestamp")
        }
        DataType::List(f) | DataType::LargeList(f) => json!({
            "type": "array",
            "elementType": delta_type(f.data_type())?,
            "containsNull": f.is_nullable(),
        }),
        other => return Err(format!("no Delta type for {other}")),
    })
}

/// The Delta schema string of a table: its file columns, then the partition column (a date).
pub fn schema_string(
    schema: &Schema,
    partition: Option<&str>,
) -> std::result::Result<String, String> {
    let mut fields = Vec::new();
    for f in schema.fields() {
        if Some(f.name().as_str()) == partition {
            continue;
        }
        fields.push(json!({
            "name": f.name(),
            "type": delta_type(f.data_type()).map_err(|e| format!("column {}: {e}", f.name()))?,
            "nullable": f.is_nullable(),
            "metadata": {},
        }));
    }
    if let Some(p) = partition {
        fields.push(json!({"name": p, "type": "date", "nullable": true, "metadata": {}}));
    }
    Ok(json!({"type": "struct", "fields": fields}).to_string())
}

/// A UUID (version 4 layout) drawn from a SHA-256 of `label`: the table's stable Delta id.
fn uuid_of(label: &str) -> String {
    use sha2::{Digest, Sha256};
    let h = Sha256::digest(label.as_bytes());
    let mut b = [0u8; 16];
    b.copy_from_slice(&h[..16]);
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let x = super::hex(&b);
    format!(
        "{}-{}-{}-{}-{}",
        &x[..8],
        &x[8..12],
        &x[12..16],
        &x[16..20],
        &x[20..]
    )
}

/// The path of a lake file relative to its table's directory (`date=…/part-….parquet`).
fn table_path<'a>(table: &str, rel: &'a str) -> &'a str {
    rel.strip_prefix(table)
        .and_then(|r| r.strip_prefix('/'))
        .unwrap_or(rel)
}

/// Partition values of a file from its path (`date=2026-11-20/…`), as Delta wants them: strings.
fn partition_values(table: &str, rel: &str) -> serde_json::Map<String, Value> {
    let mut m = serde_json::Map::new();
    let inner = table_path(table, rel);
    if let Some((dir, _)) = inner.rsplit_once('/') {
        for part in dir.split('/') {
            if let Some((k, v)) = part.split_once('=') {
                m.insert(k.to_owned(), json!(v));
            }
        }
    }
    m
}

/// The table a lake file belongs to (its first path component).
fn table_of(rel: &str) -> &str {
    rel.split('/').next().unwrap_or(rel)
}

fn add_action(table: &str, f: &FileEntry, time_ms: i64, data_change: bool) -> Value {
    json!({"add": {
        "path": table_path(table, &f.path),
        "partitionValues": partition_values(table, &f.path),
        "size": f.bytes,
        "modificationTime": time_ms,
        "dataChange": data_change,
        "stats": json!({"numRecords": f.rows}).to_string(),
    }})
}

fn remove_action(table: &str, rel: &str, time_ms: i64, data_change: bool) -> Value {
    json!({"remove": {
        "path": table_path(table, rel),
        "deletionTimestamp": time_ms,
        "dataChange": data_change,
        "partitionValues": partition_values(table, rel),
    }})
}

fn txn_action(vigie_version: u64, time_ms: i64) -> Value {
    json!({"txn": {"appId": APP_ID, "version": vigie_version, "lastUpdated": time_ms}})
}

/// Whether a Vigie commit rewrites data without changing it (compaction): its removes and adds
/// carry `dataChange: false`.
fn rearranges_only(c: &Commit) -> bool {
    !c.add.is_empty() && c.add.iter().all(|f| f.data_added.is_some())
}

/// The actions of version 0 of a table: created with the files `files` live at Vigie version `at`.
pub fn create_actions(
    table: &str,
    schema: &Schema,
    partition: Option<&str>,
    files: &[&FileEntry],
    at: u64,
    time_ms: i64,
) -> std::result::Result<Vec<Value>, String> {
    let mut out = vec![
        json!({"commitInfo": {
            "timestamp": time_ms,
            "operation": "CREATE TABLE",
            "operationParameters": {
                "partitionBy": json!(partition.into_iter().collect::<Vec<_>>()).to_string(),
                "vigieVersion": at.to_string(),
            },
            "engineInfo": concat!("vigie/", env!("CARGO_PKG_VERSION")),
            "isBlindAppend": true,
        }}),
        json!({"protocol": {"minReaderVersion": MIN_READER, "minWriterVersion": MIN_WRITER}}),
        json!({"metaData": {
            "id": uuid_of(&format!("vigie table {table}")),
            "name": table,
            "format": {"provider": "parquet", "options": {}},
            "schemaString": schema_string(schema, partition)?,
            "partitionColumns": partition.into_iter().collect::<Vec<_>>(),
            "configuration": {},
            "createdTime": time_ms,
        }}),
        txn_action(at, time_ms),
    ];
    out.extend(files.iter().map(|f| add_action(table, f, time_ms, true)));
    Ok(out)
}

/// The actions of the Delta version that Vigie commit `c` makes of `table`, if it touches it.
pub fn commit_actions(c: &Commit, table: &str) -> Option<Vec<Value>> {
    let adds: Vec<&FileEntry> = c.add.iter().filter(|f| f.table == table).collect();
    let removes: Vec<&String> = c.remove.iter().filter(|r| table_of(r) == table).collect();
    if adds.is_empty() && removes.is_empty() {
        return None;
    }
    let data_change = !rearranges_only(c);
    let operation = if data_change { "WRITE" } else { "OPTIMIZE" };
    let mut out = vec![
        json!({"commitInfo": {
            "timestamp": c.time_ms,
            "operation": operation,
            "operationParameters": {
                "mode": "Append",
                "vigieOp": c.op,
                "vigieVersion": c.version.to_string(),
            },
            "engineInfo": concat!("vigie/", env!("CARGO_PKG_VERSION")),
            "isBlindAppend": removes.is_empty(),
        }}),
        txn_action(c.version, c.time_ms),
    ];
    out.extend(
        removes
            .iter()
            .map(|r| remove_action(table, r, c.time_ms, data_change)),
    );
    out.extend(
        adds.iter()
            .map(|f| add_action(table, f, c.time_ms, data_change)),
    );
    Some(out)
}

/// The newest Delta version of a table and the Vigie version it describes; `None` without a log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    pub delta: u64,
    pub vigie: u64,
}

/// Versions of the JSON commits and Parquet checkpoints in a `_delta_log` directory.
fn list_versions(dir: &Path) -> Result<(BTreeSet<u64>, BTreeSet<u64>)> {
    let mut commits = BTreeSet::new();
    let mut checkpoints = BTreeSet::new();
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((commits, checkpoints)),
        Err(e) => {
            return Err(LakeError::Io {
                path: dir.to_path_buf(),
                source: e,
            });
        }
    };
    for entry in entries {
        let entry = entry.map_err(|e| LakeError::Io {
            path: dir.to_path_buf(),
            source: e,
        })?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(v) = name
            .strip_suffix(".checkpoint.parquet")
            .and_then(|s| s.parse().ok())
        {
            checkpoints.insert(v);
        } else if let Some(v) = name.strip_suffix(".json").and_then(|s| s.parse().ok()) {
            commits.insert(v);
        }
    }
    Ok((commits, checkpoints))
}

/// Parses a Delta commit file: its actions, one JSON object per line.
pub fn read_actions(path: &Path) -> Result<Vec<Value>> {
    let text = fs::read_to_string(path).map_err(|e| LakeError::Io {
        path: path.to_path_buf(),
        source: e,
    })?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let v: Value = serde_json::from_str(line)
            .map_err(|e| corrupt(path, format!("line {}: {e}", i + 1)))?;
        if !v.is_object() {
            return Err(corrupt(path, format!("line {}: not a JSON object", i + 1)));
        }
        out.push(v);
    }
    Ok(out)
}

/// The Vigie version a Delta commit describes (its `txn` of app `vigie`).
fn vigie_version_of(path: &Path, actions: &[Value]) -> Result<u64> {
    actions
        .iter()
        .find_map(|a| {
            let t = a.get("txn")?;
            (t.get("appId")?.as_str()? == APP_ID).then(|| t.get("version")?.as_u64())?
        })
        .ok_or_else(|| corrupt(path, "no txn action of app vigie"))
}

/// The head of a table's Delta log: its newest version, checked for gaps since the newest
/// checkpoint (or version 0), and the Vigie version it describes.
pub fn head(root: &Path, table: &str) -> Result<Option<Head>> {
    let dir = log_dir(root, table);
    let (commits, checkpoints) = list_versions(&dir)?;
    let Some(&latest) = commits.last() else {
        if let Some(c) = checkpoints.last() {
            return Err(corrupt(
                &dir,
                format!("table {table}: checkpoint {c} without its commit"),
            ));
        }
        return Ok(None);
    };
    let from = checkpoints
        .iter()
        .rev()
        .find(|&&c| c <= latest)
        .copied()
        .unwrap_or(0);
    if let Some(missing) = (from..=latest).find(|v| !commits.contains(v)) {
        return Err(corrupt(
            &dir,
            format!(
                "table {table}: Delta version {missing} is missing (the log has a gap before {latest})"
            ),
        ));
    }
    let path = commit_file(&dir, latest);
    let actions = read_actions(&path)?;
    Ok(Some(Head {
        delta: latest,
        vigie: vigie_version_of(&path, &actions)?,
    }))
}

/// Publishes `actions` as version `version` of the log in `dir`, all or nothing: written to a
/// temporary file, fsynced, then linked under its name (which fails if it exists). When the
/// version exists already, it must describe the same Vigie version (another writer rolled
/// forward first); anything else is a conflict.
fn publish(dir: &Path, version: u64, actions: &[Value], vigie: u64) -> Result<()> {
    fs::create_dir_all(dir).map_err(|e| LakeError::Io {
        path: dir.to_path_buf(),
        source: e,
    })?;
    let mut body = String::new();
    for a in actions {
        body.push_str(&a.to_string());
        body.push('\n');
    }
    let tmp = dir.join(format!(".{version:020}.json.{}.tmp", super::random_id()));
    let target = commit_file(dir, version);
    let io = |p: &Path| {
        let p = p.to_path_buf();
        move |e| LakeError::Io { path: p, source: e }
    };
    {
        let mut f = File::create(&tmp).map_err(io(&tmp))?;
        f.write_all(body.as_bytes()).map_err(io(&tmp))?;
        f.sync_all().map_err(io(&tmp))?;
    }
    let linked = fs::hard_link(&tmp, &target);
    let _ = fs::remove_file(&tmp);
    match linked {
        Ok(()) => super::fsync_dir(dir),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let existing = read_actions(&target)?;
            let got = vigie_version_of(&target, &existing)?;
            if got == vigie {
                Ok(())
            } else {
                Err(LakeError::Conflict(format!(
                    "{} describes Vigie version {got}, expected {vigie}",
                    target.display()
                )))
            }
        }
        Err(e) => Err(LakeError::Io {
            path: target,
            source: e,
        }),
    }
}

/// The Delta version of a table that describes Vigie version `vigie`: the newest one whose `txn`
/// is at most `vigie` (a binary search: `txn` grows with the Delta version). `None` when the
/// table's log starts after it or does not exist.
pub fn version_for(root: &Path, table: &str, vigie: u64) -> Result<Option<u64>> {
    let dir = log_dir(root, table);
    let (commits, _) = list_versions(&dir)?;
    let Some(&latest) = commits.last() else {
        return Ok(None);
    };
    let txn_of = |v: u64| -> Result<u64> {
        let path = commit_file(&dir, v);
        vigie_version_of(&path, &read_actions(&path)?)
    };
    if txn_of(0)? > vigie {
        return Ok(None);
    }
    let (mut lo, mut hi) = (0u64, latest);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if txn_of(mid)? <= vigie {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    Ok(Some(lo))
}

/// How a table is declared when its Delta log is created: its file schema and partition column.
#[derive(Debug, Clone)]
pub struct TableSchema {
    pub schema: Arc<Schema>,
    pub partition: Option<String>,
}

/// The schema of a table read from one of its files' footers (for a table the catalogue does
/// not know), with the partition column from the file's path.
fn schema_from_file(root: &Path, f: &FileEntry) -> Result<TableSchema> {
    let path = root.join(&f.path);
    let file = File::open(&path).map_err(|e| LakeError::Io {
        path: path.clone(),
        source: e,
    })?;
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)?;
    let schema = reader.schema().clone();
    let partition = partition_values(&f.table, &f.path).keys().next().cloned();
    Ok(TableSchema { schema, partition })
}

/// What [`sync`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SyncReport {
    /// Tables whose Delta log was created.
    pub created: Vec<String>,
    /// Delta commits written.
    pub commits: u64,
    /// Checkpoints written.
    pub checkpoints: u64,
}

/// Rolls every table's Delta log forward to the lake's latest Vigie version: creates the logs of
/// tables that have none (from `catalogue`, or from a file's schema), then writes, in Vigie order,
/// the Delta commit of every Vigie commit a table has not got yet, and the checkpoints due.
pub fn sync(lake: &Lake, catalogue: &BTreeMap<String, TableSchema>) -> Result<SyncReport> {
    let _guard = lake.delta_lock.lock().unwrap_or_else(|p| p.into_inner());
    let root = lake.root();
    let state = lake.state()?;
    let latest = state.version;
    let mut report = SyncReport::default();
    let mut tables: BTreeSet<String> = catalogue.keys().cloned().collect();
    tables.extend(state.files.values().map(|f| f.table.clone()));
    tables.extend(state.tombstones.keys().map(|p| table_of(p).to_owned()));
    let mut heads = lake
        .delta_heads
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    let now = state_time(lake, latest)?;
    for t in &tables {
        let known = heads.get(t).copied();
        let h = match known {
            // The cached head is right unless another process wrote after it.
            Some(h) if !commit_file(&log_dir(root, t), h.delta + 1).exists() => Some(h),
            _ => head(root, t)?,
        };
        match h {
            Some(h) if h.vigie > latest => {
                return Err(corrupt(
                    &log_dir(root, t),
                    format!(
                        "table {t}: Delta version {} describes Vigie version {}, which the Vigie log (latest {latest}) does not have",
                        h.delta, h.vigie
                    ),
                ));
            }
            Some(h) => {
                heads.insert(t.clone(), h);
            }
            None => {
                let files: Vec<&FileEntry> = state.table_files(t).collect();
                let declared = match catalogue.get(t) {
                    Some(s) => s.clone(),
                    None => match files.first().map(|f| schema_from_file(root, f)) {
                        Some(Ok(s)) => s,
                        Some(Err(e)) => {
                            // Not a table of the catalogue and not readable as Parquet: Vigie's
                            // own readers still see it; `vigie lake check` reports the missing log.
                            tracing::warn!(table = %t, error = %e, "no Delta log: the table's schema is unknown");
                            continue;
                        }
                        None => continue,
                    },
                };
                let actions = create_actions(
                    t,
                    &declared.schema,
                    declared.partition.as_deref(),
                    &files,
                    latest,
                    now,
                )
                .map_err(|e| corrupt(&log_dir(root, t), format!("table {t}: {e}")))?;
                publish(&log_dir(root, t), 0, &actions, latest)?;
                let h = head(root, t)?.ok_or_else(|| corrupt(&log_dir(root, t), "no version 0"))?;
                heads.insert(t.clone(), h);
                report.created.push(t.clone());
            }
        }
    }
    // Vigie commits that some table has not got yet: every table has every commit up to the
    // hint (written after a whole sync), so only later ones are read.
    let hint_path = root.join("_vigie/delta-synced");
    let hint: Option<u64> = fs::read_to_string(&hint_path)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .filter(|&h| h <= latest);
    let oldest = heads.values().map(|h| h.vigie).min().unwrap_or(latest);
    let from = hint.map_or(oldest, |h| oldest.max(h));
    for v in from + 1..=latest {
        let c = lake.read_commit(v)?;
        let touched: BTreeSet<&str> = c
            .add
            .iter()
            .map(|f| f.table.as_str())
            .chain(c.remove.iter().map(|r| table_of(r)))
            .collect();
        for t in touched {
            let Some(h) = heads.get(t).copied() else {
                // A table created after this commit's files were already in it (from the state).
                continue;
            };
            if h.vigie >= v {
                continue;
            }
            let Some(actions) = commit_actions(&c, t) else {
                continue;
            };
            let dir = log_dir(root, t);
            let version = h.delta + 1;
            publish(&dir, version, &actions, v)?;
            report.commits += 1;
            if report.commits == 1 {
                super::failpoint("delta_partial");
            }
            heads.insert(
                t.to_owned(),
                Head {
                    delta: version,
                    vigie: v,
                },
            );
            if version % CHECKPOINT_INTERVAL == 0 && v == latest {
                write_checkpoint(root, t, version, &state)?;
                report.checkpoints += 1;
            }
        }
    }
    *lake.delta_heads.lock().unwrap_or_else(|p| p.into_inner()) = heads;
    if hint != Some(latest) {
        let tmp = root.join(format!("_vigie/tmp/delta-synced-{}", super::random_id()));
        if fs::write(&tmp, latest.to_string()).is_ok() && fs::rename(&tmp, &hint_path).is_err() {
            let _ = fs::remove_file(&tmp);
        }
    }
    Ok(report)
}

/// The time of Vigie commit `v` (0 for an empty lake): the time of actions written for it.
fn state_time(lake: &Lake, v: u64) -> Result<i64> {
    if v == 0 {
        return Ok(0);
    }
    Ok(lake.read_commit(v)?.time_ms)
}

/// A map column of string to string, with the Spark names (`key_value`, `key`, `value`).
fn string_map(rows: &[Option<Vec<(String, String)>>]) -> ArrayRef {
    let names = MapFieldNames {
        entry: "key_value".into(),
        key: "key".into(),
        value: "value".into(),
    };
    let mut b = MapBuilder::new(Some(names), StringBuilder::new(), StringBuilder::new());
    for r in rows {
        match r {
            Some(kv) => {
                for (k, v) in kv {
                    b.keys().append_value(k);
                    b.values().append_value(v);
                }
                let _ = b.append(true);
            }
            None => {
                let _ = b.append(false);
            }
        }
    }
    Arc::new(b.finish())
}

fn map_type() -> DataType {
    DataType::Map(
        Arc::new(Field::new(
            "key_value",
            DataType::Struct(Fields::from(vec![
                Field::new("key", DataType::Utf8, false),
                Field::new("value", DataType::Utf8, true),
            ])),
            false,
        )),
        false,
    )
}

fn struct_of(fields: Vec<(Field, ArrayRef)>, present: &[bool]) -> Result<ArrayRef> {
    let (f, a): (Vec<Field>, Vec<ArrayRef>) = fields.into_iter().unzip();
    let nulls = NullBuffer::from(present.to_vec());
    Ok(Arc::new(StructArray::try_new(
        Fields::from(f),
        a,
        Some(nulls),
    )?))
}

/// Writes the classic single-file checkpoint of `version` of a table (its live files and
/// tombstones at the Vigie `state`), then `_last_checkpoint`.
fn write_checkpoint(root: &Path, table: &str, version: u64, state: &State) -> Result<()> {
    let dir = log_dir(root, table);
    // Protocol and metadata are those of version 0 (Vigie never changes them).
    let v0 = read_actions(&commit_file(&dir, 0))?;
    let meta = v0
        .iter()
        .find_map(|a| a.get("metaData"))
        .cloned()
        .ok_or_else(|| corrupt(&commit_file(&dir, 0), "no metaData action"))?;
    let files: Vec<&FileEntry> = state.table_files(table).collect();
    let tombs: Vec<(&String, &i64)> = state
        .tombstones
        .iter()
        .filter(|(p, _)| table_of(p) == table)
        .collect();
    // Rows: protocol, metaData, txn, adds, removes.
    let n = 3 + files.len() + tombs.len();
    let is = |from: usize, len: usize| -> Vec<bool> {
        (0..n).map(|i| i >= from && i < from + len).collect()
    };
    let add_from = 3;
    let rem_from = 3 + files.len();
    // protocol
    let protocol = struct_of(
        vec![
            (
                Field::new("minReaderVersion", DataType::Int32, false),
                Arc::new(Int32Array::from(vec![MIN_READER; n])) as ArrayRef,
            ),
            (
                Field::new("minWriterVersion", DataType::Int32, false),
                Arc::new(Int32Array::from(vec![MIN_WRITER; n])) as ArrayRef,
            ),
        ],
        &is(0, 1),
    )?;
    // metaData
    let s = |k: &str| {
        meta.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let partition_columns: Vec<String> = meta
        .get("partitionColumns")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let list_field = Arc::new(Field::new("element", DataType::Utf8, false));
    let pc_values: Vec<String> = (0..n).flat_map(|_| partition_columns.clone()).collect();
    let offsets = OffsetBuffer::from_lengths((0..n).map(|_| partition_columns.len()));
    let partition_list = ListArray::try_new(
        Arc::clone(&list_field),
        offsets,
        Arc::new(StringArray::from(pc_values)),
        None,
    )?;
    let format = struct_of(
        vec![
            (
                Field::new("provider", DataType::Utf8, false),
                Arc::new(StringArray::from(vec!["parquet"; n])) as ArrayRef,
            ),
            (
                Field::new("options", map_type(), false),
                string_map(&vec![Some(Vec::new()); n]),
            ),
        ],
        &vec![true; n],
    )?;
    let metadata = struct_of(
        vec![
            (
                Field::new("id", DataType::Utf8, false),
                Arc::new(StringArray::from(vec![s("id"); n])) as ArrayRef,
            ),
            (
                Field::new("name", DataType::Utf8, true),
                Arc::new(StringArray::from(vec![s("name"); n])) as ArrayRef,
            ),
            (
                Field::new("format", format.data_type().clone(), false),
                format,
            ),
            (
                Field::new("schemaString", DataType::Utf8, false),
                Arc::new(StringArray::from(vec![s("schemaString"); n])) as ArrayRef,
            ),
            (
                Field::new("partitionColumns", DataType::List(list_field), false),
                Arc::new(partition_list) as ArrayRef,
            ),
            (
                Field::new("createdTime", DataType::Int64, true),
                Arc::new(Int64Array::from(vec![
                    meta.get("createdTime")
                        .and_then(Value::as_i64);
                    n
                ])) as ArrayRef,
            ),
            (
                Field::new("configuration", map_type(), false),
                string_map(&vec![Some(Vec::new()); n]),
            ),
        ],
        &is(1, 1),
    )?;
    // txn
    let txn = struct_of(
        vec![
            (
                Field::new("appId", DataType::Utf8, false),
                Arc::new(StringArray::from(vec![APP_ID; n])) as ArrayRef,
            ),
            (
                Field::new("version", DataType::Int64, false),
                Arc::new(Int64Array::from(vec![state.version as i64; n])) as ArrayRef,
            ),
            (
                Field::new("lastUpdated", DataType::Int64, true),
                Arc::new(Int64Array::from(vec![None::<i64>; n])) as ArrayRef,
            ),
        ],
        &is(2, 1),
    )?;
    // add
    let mut paths: Vec<String> = vec![String::new(); n];
    let mut pvals: Vec<Option<Vec<(String, String)>>> = vec![Some(Vec::new()); n];
    let mut sizes = vec![0i64; n];
    let mut mtimes = vec![0i64; n];
    let mut stats: Vec<Option<String>> = vec![None; n];
    for (i, f) in files.iter().enumerate() {
        let r = add_from + i;
        paths[r] = table_path(table, &f.path).to_owned();
        pvals[r] = Some(
            partition_values(table, &f.path)
                .into_iter()
                .map(|(k, v)| (k, v.as_str().unwrap_or_default().to_owned()))
                .collect(),
        );
        sizes[r] = f.bytes as i64;
        mtimes[r] = 0;
        stats[r] = Some(json!({"numRecords": f.rows}).to_string());
    }
    let add = struct_of(
        vec![
            (
                Field::new("path", DataType::Utf8, false),
                Arc::new(StringArray::from(paths.clone())) as ArrayRef,
            ),
            (
                Field::new("partitionValues", map_type(), false),
                string_map(&pvals),
            ),
            (
                Field::new("size", DataType::Int64, false),
                Arc::new(Int64Array::from(sizes)) as ArrayRef,
            ),
            (
                Field::new("modificationTime", DataType::Int64, false),
                Arc::new(Int64Array::from(mtimes)) as ArrayRef,
            ),
            (
                Field::new("dataChange", DataType::Boolean, false),
                Arc::new(BooleanArray::from(vec![true; n])) as ArrayRef,
            ),
            (
                Field::new("stats", DataType::Utf8, true),
                Arc::new(StringArray::from(stats)) as ArrayRef,
            ),
        ],
        &is(add_from, files.len()),
    )?;
    // remove
    let mut rpaths: Vec<String> = vec![String::new(); n];
    let mut rtimes: Vec<Option<i64>> = vec![None; n];
    for (i, (p, t)) in tombs.iter().enumerate() {
        rpaths[rem_from + i] = table_path(table, p).to_owned();
        rtimes[rem_from + i] = Some(**t);
    }
    let remove = struct_of(
        vec![
            (
                Field::new("path", DataType::Utf8, false),
                Arc::new(StringArray::from(rpaths)) as ArrayRef,
            ),
            (
                Field::new("deletionTimestamp", DataType::Int64, true),
                Arc::new(Int64Array::from(rtimes)) as ArrayRef,
            ),
            (
                Field::new("dataChange", DataType::Boolean, false),
                Arc::new(BooleanArray::from(vec![false; n])) as ArrayRef,
            ),
        ],
        &is(rem_from, tombs.len()),
    )?;
    let columns: Vec<(&str, ArrayRef)> = vec![
        ("txn", txn),
        ("add", add),
        ("remove", remove),
        ("metaData", metadata),
        ("protocol", protocol),
    ];
    let schema = Arc::new(Schema::new(
        columns
            .iter()
            .map(|(name, a)| Field::new(*name, a.data_type().clone(), true))
            .collect::<Vec<_>>(),
    ));
    let batch = RecordBatch::try_new(
        schema.clone(),
        columns.into_iter().map(|(_, a)| a).collect(),
    )?;
    let target = checkpoint_file(&dir, version);
    let tmp = dir.join(format!(
        ".{version:020}.checkpoint.{}.tmp",
        super::random_id()
    ));
    let io = |p: &Path| {
        let p = p.to_path_buf();
        move |e| LakeError::Io { path: p, source: e }
    };
    {
        let f = File::create(&tmp).map_err(io(&tmp))?;
        let mut w = parquet::arrow::ArrowWriter::try_new(f, schema, None)?;
        w.write(&batch)?;
        let f = w.into_inner()?;
        f.sync_all().map_err(io(&tmp))?;
    }
    let size = fs::metadata(&tmp).map_err(io(&tmp))?.len();
    // A checkpoint is written once; a second writer's (describing the same version) is dropped.
    let linked = fs::hard_link(&tmp, &target);
    let _ = fs::remove_file(&tmp);
    match linked {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Ok(()),
        Err(e) => {
            return Err(LakeError::Io {
                path: target,
                source: e,
            });
        }
    }
    let last = json!({
        "version": version,
        "size": n,
        "sizeInBytes": size,
        "numOfAddFiles": files.len(),
    })
    .to_string();
    let last_tmp = dir.join(format!("._last_checkpoint.{}.tmp", super::random_id()));
    fs::write(&last_tmp, last).map_err(io(&last_tmp))?;
    fs::rename(&last_tmp, dir.join("_last_checkpoint")).map_err(io(&dir))?;
    super::fsync_dir(&dir)
}

/// Checks the newest checkpoint of every table against Vigie's state at the version it names
/// (a writer does this before it changes anything): a checkpoint that lists other files than
/// Vigie committed is an error naming the table and version.
pub fn verify_checkpoints(lake: &Lake) -> Result<()> {
    let root = lake.root();
    let mut states: BTreeMap<u64, State> = BTreeMap::new();
    let entries = fs::read_dir(root).map_err(|e| LakeError::Io {
        path: root.to_path_buf(),
        source: e,
    })?;
    for entry in entries {
        let entry = entry.map_err(|e| LakeError::Io {
            path: root.to_path_buf(),
            source: e,
        })?;
        let t = entry.file_name().to_string_lossy().into_owned();
        if t.starts_with(['_', '.']) || !entry.path().is_dir() {
            continue;
        }
        let dir = log_dir(root, &t);
        let (commits, checkpoints) = list_versions(&dir)?;
        let Some(&c) = checkpoints.last() else {
            continue;
        };
        let commit = commit_file(&dir, c);
        if !commits.contains(&c) {
            return Err(corrupt(
                &dir,
                format!("table {t}: checkpoint {c} without its commit"),
            ));
        }
        let n = vigie_version_of(&commit, &read_actions(&commit)?)?;
        if let std::collections::btree_map::Entry::Vacant(e) = states.entry(n) {
            e.insert(lake.state_at(n)?);
        }
        let want: BTreeSet<String> = states[&n]
            .table_files(&t)
            .map(|f| table_path(&t, &f.path).to_owned())
            .collect();
        let got = checkpoint_adds(&checkpoint_file(&dir, c))
            .map_err(|e| corrupt(&dir, format!("table {t}: checkpoint {c}: {e}")))?;
        if got != want {
            return Err(corrupt(
                &dir,
                format!(
                    "table {t}: checkpoint {c} lists {} files where Vigie version {n} has {} ({} differ)",
                    got.len(),
                    want.len(),
                    got.symmetric_difference(&want).count()
                ),
            ));
        }
    }
    Ok(())
}

/// What [`check`] found in one table's Delta log.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct TableCheck {
    pub table: String,
    /// The newest Delta version and the Vigie version it describes.
    pub delta_version: Option<u64>,
    pub vigie_version: Option<u64>,
    /// Live files at the head.
    pub files: u64,
    /// Vigie commits after the head that touch the table (a writer rolls them forward).
    pub behind: u64,
    /// Everything that is wrong, each naming the version.
    pub problems: Vec<String>,
}

/// The live files (path relative to the table, size) after replaying `actions` onto `live`.
fn replay(live: &mut BTreeMap<String, u64>, actions: &[Value]) {
    for a in actions {
        if let Some(add) = a.get("add") {
            if let Some(p) = add.get("path").and_then(Value::as_str) {
                live.insert(
                    p.to_owned(),
                    add.get("size").and_then(Value::as_u64).unwrap_or(0),
                );
            }
        } else if let Some(rm) = a.get("remove")
            && let Some(p) = rm.get("path").and_then(Value::as_str)
        {
            live.remove(p);
        }
    }
}

/// The `add.path` values of a Parquet checkpoint.
fn checkpoint_adds(path: &Path) -> Result<BTreeSet<String>> {
    use arrow::array::{Array, AsArray};
    let file = File::open(path).map_err(|e| LakeError::Io {
        path: path.to_path_buf(),
        source: e,
    })?;
    let reader =
        parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)?.build()?;
    let mut out = BTreeSet::new();
    for batch in reader {
        let batch = batch?;
        let Some(add) = batch.column_by_name("add") else {
            return Err(corrupt(path, "no add column"));
        };
        let add = add.as_struct();
        let paths = add
            .column_by_name("path")
            .ok_or_else(|| corrupt(path, "no add.path column"))?
            .as_string::<i32>();
        for i in 0..add.len() {
            if add.is_valid(i) && paths.is_valid(i) {
                out.insert(paths.value(i).to_owned());
            }
        }
    }
    Ok(out)
}

/// Reads every Delta version of every table, replays them, and compares each head (and each
/// checkpoint) with Vigie's state at the Vigie version it names, and with the files on disk.
pub fn check(lake: &Lake, catalogue: &BTreeMap<String, TableSchema>) -> Result<Vec<TableCheck>> {
    let root = lake.root();
    let state = lake.state()?;
    let mut tables: BTreeSet<String> = catalogue.keys().cloned().collect();
    tables.extend(state.files.values().map(|f| f.table.clone()));
    for entry in fs::read_dir(root).map_err(|e| LakeError::Io {
        path: root.to_path_buf(),
        source: e,
    })? {
        let entry = entry.map_err(|e| LakeError::Io {
            path: root.to_path_buf(),
            source: e,
        })?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.starts_with(['_', '.']) && entry.path().is_dir() {
            tables.insert(name);
        }
    }
    let mut states: BTreeMap<u64, State> = BTreeMap::new();
    let mut out = Vec::new();
    for t in tables {
        let mut c = TableCheck {
            table: t.clone(),
            ..TableCheck::default()
        };
        let dir = log_dir(root, &t);
        let (commits, checkpoints) = list_versions(&dir)?;
        if commits.is_empty() {
            c.problems
                .push(format!("table {t}: no Delta log in {}", dir.display()));
            out.push(c);
            continue;
        }
        let latest = commits.last().copied().unwrap_or(0);
        let mut live: BTreeMap<String, u64> = BTreeMap::new();
        let mut at_version: BTreeMap<u64, BTreeSet<String>> = BTreeMap::new();
        let mut vigie = None;
        let mut broken = false;
        for v in 0..=latest {
            let path = commit_file(&dir, v);
            if !commits.contains(&v) {
                c.problems
                    .push(format!("table {t}: Delta version {v} is missing"));
                broken = true;
                break;
            }
            match read_actions(&path) {
                Ok(actions) => {
                    if v == 0
                        && !(actions.iter().any(|a| a.get("protocol").is_some())
                            && actions.iter().any(|a| a.get("metaData").is_some()))
                    {
                        c.problems.push(format!(
                            "table {t}: Delta version 0 lacks protocol or metaData"
                        ));
                    }
                    match vigie_version_of(&path, &actions) {
                        Ok(n) => vigie = Some(n),
                        Err(e) => c
                            .problems
                            .push(format!("table {t}: Delta version {v}: {e}")),
                    }
                    replay(&mut live, &actions);
                    if checkpoints.contains(&v) {
                        at_version.insert(v, live.keys().cloned().collect());
                    }
                }
                Err(e) => {
                    c.problems
                        .push(format!("table {t}: Delta version {v}: {e}"));
                    broken = true;
                    break;
                }
            }
        }
        for (&v, expected) in &at_version {
            match checkpoint_adds(&checkpoint_file(&dir, v)) {
                Ok(got) if &got == expected => {}
                Ok(got) => c.problems.push(format!(
                    "table {t}: checkpoint {v} lists {} files, its commits {} ({} differ)",
                    got.len(),
                    expected.len(),
                    got.symmetric_difference(expected).count()
                )),
                Err(e) => c.problems.push(format!("table {t}: checkpoint {v}: {e}")),
            }
        }
        c.delta_version = Some(latest);
        c.vigie_version = vigie;
        c.files = live.len() as u64;
        if !broken && let Some(n) = vigie {
            if n > state.version {
                c.problems.push(format!(
                    "table {t}: Delta version {latest} describes Vigie version {n}, after the latest ({})",
                    state.version
                ));
            } else {
                if let std::collections::btree_map::Entry::Vacant(e) = states.entry(n) {
                    e.insert(lake.state_at(n)?);
                }
                let want: BTreeMap<String, u64> = states[&n]
                    .table_files(&t)
                    .map(|f| (table_path(&t, &f.path).to_owned(), f.bytes))
                    .collect();
                for (p, size) in &live {
                    match want.get(p) {
                        None => c.problems.push(format!(
                            "table {t}: Delta version {latest} lists {p}, which Vigie version {n} does not"
                        )),
                        Some(w) if w != size => c.problems.push(format!(
                            "table {t}: Delta version {latest} gives {p} {size} bytes, Vigie {w}"
                        )),
                        Some(_) => {}
                    }
                    let on_disk = fs::metadata(root.join(&t).join(p)).map(|m| m.len()).ok();
                    if on_disk != Some(*size) {
                        c.problems.push(format!(
                            "table {t}: {p} is {} on disk, {size} bytes in Delta version {latest}",
                            on_disk.map_or_else(|| "missing".to_owned(), |b| format!("{b} bytes"))
                        ));
                    }
                }
                for p in want.keys().filter(|p| !live.contains_key(*p)) {
                    c.problems.push(format!(
                        "table {t}: Vigie version {n} has {p}, which Delta version {latest} does not list"
                    ));
                }
                for v in n + 1..=state.version {
                    if commit_actions(&lake.read_commit(v)?, &t).is_some() {
                        c.behind += 1;
                    }
                }
            }
        }
        out.push(c);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_map_to_delta_and_the_partition_comes_last_as_a_date() {
        let schema = Schema::new(vec![
            Field::new("game", DataType::Utf8, false),
            Field::new(
                "ts",
                DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into())),
                false,
            ),
            Field::new(
                "refs",
                DataType::List(Arc::new(Field::new("item", DataType::Utf8, true))),
                true,
            ),
        ]);
        let s: Value =
            serde_json::from_str(&schema_string(&schema, Some("date")).unwrap()).unwrap();
        let fields = s["fields"].as_array().unwrap();
        assert_eq!(fields[0]["type"], "string");
        assert_eq!(fields[0]["nullable"], false);
        assert_eq!(fields[1]["type"], "timestamp");
        assert_eq!(fields[2]["type"]["type"], "array");
        assert_eq!(fields[2]["type"]["elementType"], "string");
        assert_eq!(fields[3]["name"], "date");
        assert_eq!(fields[3]["type"], "date");
        // Zone-less timestamps (the polars-written feature tables) are UTC instants too.
        let naive = Schema::new(vec![Field::new(
            "t",
            DataType::Timestamp(TimeUnit::Millisecond, None),
            false,
        )]);
        assert!(
            schema_string(&naive, None)
                .unwrap()
                .contains(r#""type":"timestamp""#)
        );
        let paris = Schema::new(vec![Field::new(
            "t",
            DataType::Timestamp(TimeUnit::Millisecond, Some("Europe/Paris".into())),
            false,
        )]);
        assert!(schema_string(&paris, None).is_err());
        let nanos = Schema::new(vec![Field::new(
            "t",
            DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into())),
            false,
        )]);
        assert!(schema_string(&nanos, None).is_err());
    }

    #[test]
    fn a_compaction_is_a_rearrangement_and_paths_are_relative_to_the_table() {
        let f = |path: &str, data_added: Option<u64>| FileEntry {
            table: "events".into(),
            path: path.into(),
            partition: Some("date=2026-11-20".into()),
            rows: 5,
            bytes: 100,
            added: 7,
            min_key: None,
            max_key: None,
            max_ts: None,
            open: false,
            data_added,
        };
        let c = Commit {
            version: 7,
            writer: "w".into(),
            op: "compact".into(),
            time_ms: 1_000,
            add: vec![f("events/date=2026-11-20/part-w-000001.parquet", Some(3))],
            remove: vec![
                "events/date=2026-11-20/part-a-000001.parquet".into(),
                "quarantine/part-b.parquet".into(),
            ],
            sources: vec![],
            stages: BTreeMap::new(),
            forget: vec![],
            summary: Value::Null,
        };
        let a = commit_actions(&c, "events").unwrap();
        let text = a
            .iter()
            .map(Value::to_string)
            .collect::<Vec<_>>()
            .join("\n");
        assert!(
            text.contains(r#""path":"date=2026-11-20/part-w-000001.parquet""#),
            "{text}"
        );
        assert!(text.contains(r#""partitionValues":{"date":"2026-11-20"}"#));
        assert!(text.contains(r#""dataChange":false"#));
        assert!(!text.contains(r#""dataChange":true"#));
        assert!(
            text.contains(r#""txn":{"appId":"vigie","lastUpdated":1000,"version":7}"#),
            "{text}"
        );
        assert_eq!(a.iter().filter(|x| x.get("remove").is_some()).count(), 1);
        let q = commit_actions(&c, "quarantine").unwrap();
        assert!(q.iter().any(|x| x["remove"]["path"] == "part-b.parquet"));
        assert!(commit_actions(&c, "flags").is_none());
        let mut w = c.clone();
        w.add[0].data_added = None;
        assert!(
            commit_actions(&w, "events")
                .unwrap()
                .iter()
                .any(|x| x["add"]["dataChange"] == true)
        );
    }

    #[test]
    fn uuids_are_stable_and_well_formed() {
        let a = uuid_of("vigie table events");
        assert_eq!(a, uuid_of("vigie table events"));
        assert_ne!(a, uuid_of("vigie table flags"));
        assert_eq!(a.len(), 36);
        assert_eq!(&a[14..15], "4");
    }
}
