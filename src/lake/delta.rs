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
//! * when the catalogue declares another schema for a table than the latest
//!   `metaData` of its log (a build added columns), [`sync`] publishes, after
//!   rolling the logs forward, a schema version: `commitInfo` (`ADD
//!   COLUMNS`), the `metaData` action with the new `schemaString` (id, name,
//!   format, partition columns, configuration and creation time kept) and the
//!   `txn` of the head's Vigie version (the files do not change), a function of
//!   the head and the catalogue. Delta readers use the latest `metaData` and
//!   read the new columns as null in older files, so only additive changes
//!   are written (see [`SchemaChange`]); any other is left for `vigie lake
//!   check` to report ([`check`]);
//! * every [`CHECKPOINT_INTERVAL`] versions, a Parquet checkpoint (with the
//!   latest `metaData`) and `_last_checkpoint`.
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

/// Where a sync says which Vigie version every table's Delta log has reached.
const SYNCED_HINT: &str = "_vigie/delta-synced";

/// The Vigie version every table's Delta log had reached at the end of the last whole sync.
pub(crate) fn synced_hint(root: &Path) -> Option<u64> {
    fs::read_to_string(root.join(SYNCED_HINT))
        .ok()
        .and_then(|s| s.trim().parse().ok())
}

pub(crate) fn commit_file(dir: &Path, version: u64) -> PathBuf {
    dir.join(format!("{version:020}.json"))
}

pub(crate) fn checkpoint_file(dir: &Path, version: u64) -> PathBuf {
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
        // Every timestamp of the lake is a UTC instant, written "adjusted to UTC" as Delta's
        // `timestamp` requires (the feature tables too: `features::write_parquet` sets the zone
        // that polars, built without time zones, leaves out of its plans). Files of older builds
        // say "not adjusted": delta-rs, polars and Spark read them as the same instants, DuckDB
        // shifts them by its session's time zone.
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
pub(crate) fn table_of(rel: &str) -> &str {
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
            // Unique per table and lake, as the protocol asks (a name alone gave every lake's
            // `events` the same id); later `metaData` actions keep it.
            "id": uuid_of(&format!("vigie table {table} {}", super::random_id())),
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

/// How a table's declared schema stands to the schema of its Delta log (its latest `metaData`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SchemaChange {
    /// The same schema.
    Same,
    /// A change Delta readers take on files written before it: every field of the log's schema
    /// is still declared with the same type (and stays nullable if it was), the partition
    /// columns are the same, and the fields `added` (possibly none: a reordering, or a column
    /// made nullable) are nullable, so that older files read them as null.
    Additive { added: Vec<String> },
    /// Anything else (a field dropped, retyped or made non-nullable, a non-nullable new field,
    /// other partition columns), said in words: Vigie does not write it.
    Incompatible(String),
}

/// The fields of a Delta schema string: name, type and nullability, in order.
fn schema_fields(schema: &str) -> std::result::Result<Vec<(String, Value, bool)>, String> {
    let v: Value = serde_json::from_str(schema).map_err(|e| format!("schemaString: {e}"))?;
    let fields = v
        .get("fields")
        .and_then(Value::as_array)
        .ok_or("schemaString: not a struct with fields")?;
    fields
        .iter()
        .map(|f| {
            let name = f
                .get("name")
                .and_then(Value::as_str)
                .ok_or("schemaString: a field without a name")?;
            Ok((
                name.to_owned(),
                f.get("type").cloned().unwrap_or(Value::Null),
                f.get("nullable").and_then(Value::as_bool).unwrap_or(true),
            ))
        })
        .collect()
}

/// Compares the `metaData` action `current` of a table's log with the declared schema string
/// `declared` (see [`schema_string`]) and partition column.
pub fn schema_change(current: &Value, declared: &str, partition: Option<&str>) -> SchemaChange {
    let Some(old) = current.get("schemaString").and_then(Value::as_str) else {
        return SchemaChange::Incompatible("the log's metaData has no schemaString".into());
    };
    let old_partition: Vec<&str> = current
        .get("partitionColumns")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let new_partition: Vec<&str> = partition.into_iter().collect();
    if old_partition != new_partition {
        return SchemaChange::Incompatible(format!(
            "partition columns {old_partition:?} in the log, {new_partition:?} declared"
        ));
    }
    // Every writer's roll-forward asks, and the answer is nearly always the very same string.
    if old == declared {
        return SchemaChange::Same;
    }
    let (old_fields, new_fields) = match (schema_fields(old), schema_fields(declared)) {
        (Ok(o), Ok(n)) => (o, n),
        (Err(e), _) => return SchemaChange::Incompatible(format!("the log's {e}")),
        (_, Err(e)) => return SchemaChange::Incompatible(format!("the declared {e}")),
    };
    if old_fields == new_fields {
        return SchemaChange::Same;
    }
    let mut problems = Vec::new();
    for (name, ty, nullable) in &old_fields {
        match new_fields.iter().find(|(n, ..)| n == name) {
            None => problems.push(format!("column {name} is dropped")),
            Some((_, t, _)) if t != ty => {
                problems.push(format!("column {name} changes type from {ty} to {t}"));
            }
            Some((.., false)) if *nullable => {
                problems.push(format!("column {name} becomes non-nullable"));
            }
            Some(_) => {}
        }
    }
    let mut added = Vec::new();
    for (name, _, nullable) in &new_fields {
        if !old_fields.iter().any(|(n, ..)| n == name) {
            if *nullable {
                added.push(name.clone());
            } else {
                problems.push(format!(
                    "new column {name} is non-nullable (older files have no value for it)"
                ));
            }
        }
    }
    if problems.is_empty() {
        SchemaChange::Additive { added }
    } else {
        SchemaChange::Incompatible(problems.join("; "))
    }
}

/// The `metaData` action `current` with the schema string `schema`: its id, name, format,
/// partition columns, configuration and creation time unchanged.
pub fn with_schema(current: &Value, schema: &str) -> Value {
    let mut meta = current.clone();
    if let Some(m) = meta.as_object_mut() {
        m.insert("schemaString".into(), json!(schema));
    }
    meta
}

/// The actions of a schema version: `commitInfo`, the new `metaData` action `meta` (see
/// [`with_schema`]) and the `txn` of Vigie version `at` (the one the previous Delta version
/// describes: the files are the same).
pub fn schema_actions(meta: &Value, added: &[String], at: u64, time_ms: i64) -> Vec<Value> {
    vec![
        json!({"commitInfo": {
            "timestamp": time_ms,
            "operation": if added.is_empty() { "CHANGE COLUMN" } else { "ADD COLUMNS" },
            "operationParameters": {
                "columns": json!(added).to_string(),
                "vigieVersion": at.to_string(),
            },
            "engineInfo": concat!("vigie/", env!("CARGO_PKG_VERSION")),
            "isBlindAppend": true,
        }}),
        json!({"metaData": meta}),
        txn_action(at, time_ms),
    ]
}

/// The newest Delta version of a table and the Vigie version it describes; `None` without a log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    pub delta: u64,
    pub vigie: u64,
}

/// Versions of the JSON commits and Parquet checkpoints in a `_delta_log` directory.
pub(crate) fn list_versions(dir: &Path) -> Result<(BTreeSet<u64>, BTreeSet<u64>)> {
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
    parse_actions(path, &text)
}

/// The actions of the JSON commit `text`, read from `path`.
fn parse_actions(path: &Path, text: &str) -> Result<Vec<Value>> {
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

/// The latest `metaData` action of a table's log, as of Delta version `through`.
#[derive(Debug, Clone, PartialEq)]
pub struct TableMeta {
    pub through: u64,
    pub action: Value,
}

/// The `metaData` action among `actions`, if any.
fn metadata_of(actions: &[Value]) -> Option<&Value> {
    actions.iter().find_map(|a| a.get("metaData"))
}

/// The latest `metaData` action of a table's log as of Delta version `head`: from `known` (as
/// of an earlier version) and the JSON commits after it; without `known`, from the newest JSON
/// commit since the newest checkpoint that carries one, else from that checkpoint.
pub fn latest_metadata(
    root: &Path,
    table: &str,
    head: u64,
    known: Option<TableMeta>,
) -> Result<TableMeta> {
    let dir = log_dir(root, table);
    let newest_in = |from: u64| -> Result<Option<Value>> {
        for v in (from..=head).rev() {
            let path = commit_file(&dir, v);
            let text = fs::read_to_string(&path).map_err(|e| LakeError::Io {
                path: path.clone(),
                source: e,
            })?;
            // Most versions only add and remove files: no need to parse them.
            if !text.contains("\"metaData\"") {
                continue;
            }
            if let Some(m) = metadata_of(&parse_actions(&path, &text)?) {
                return Ok(Some(m.clone()));
            }
        }
        Ok(None)
    };
    // Known as of a version the log still has (a cleanup may have gone past it).
    if let Some(k) = known.filter(|k| k.through <= head && commit_file(&dir, k.through).exists()) {
        let action = newest_in(k.through + 1)?.unwrap_or(k.action);
        return Ok(TableMeta {
            through: head,
            action,
        });
    }
    let (_, checkpoints) = list_versions(&dir)?;
    let cp = checkpoints.iter().rev().find(|&&c| c <= head).copied();
    let action = match newest_in(cp.unwrap_or(0))? {
        Some(m) => m,
        None => match cp {
            Some(c) => checkpoint_metadata(&checkpoint_file(&dir, c))?
                .ok_or_else(|| corrupt(&checkpoint_file(&dir, c), "no metaData action"))?,
            None => return Err(corrupt(&commit_file(&dir, 0), "no metaData action")),
        },
    };
    Ok(TableMeta {
        through: head,
        action,
    })
}

/// The latest `metaData` action of a table's Delta log (the one Delta readers use); `None`
/// without a log.
pub fn metadata(root: &Path, table: &str) -> Result<Option<Value>> {
    match head(root, table)? {
        Some(h) => Ok(Some(latest_metadata(root, table, h.delta, None)?.action)),
        None => Ok(None),
    }
}

/// One value of an Arrow array as JSON: strings, integers, booleans, lists, string maps and
/// structs (whose null fields are left out, as a JSON commit leaves them out).
fn cell(a: &dyn arrow::array::Array, i: usize) -> std::result::Result<Value, String> {
    use arrow::array::{Array, AsArray};
    use arrow::datatypes::{Int32Type, Int64Type};
    if a.is_null(i) {
        return Ok(Value::Null);
    }
    Ok(match a.data_type() {
        DataType::Utf8 => json!(a.as_string::<i32>().value(i)),
        DataType::LargeUtf8 => json!(a.as_string::<i64>().value(i)),
        DataType::Int64 => json!(a.as_primitive::<Int64Type>().value(i)),
        DataType::Int32 => json!(a.as_primitive::<Int32Type>().value(i)),
        DataType::Boolean => json!(a.as_boolean().value(i)),
        DataType::List(_) => {
            let l = a.as_list::<i32>().value(i);
            Value::Array(
                (0..l.len())
                    .map(|j| cell(&l, j))
                    .collect::<std::result::Result<_, _>>()?,
            )
        }
        DataType::Map(..) => {
            let entries = a.as_map().value(i);
            let mut m = serde_json::Map::new();
            for j in 0..entries.len() {
                let Value::String(k) = cell(entries.column(0), j)? else {
                    return Err("a map key is not a string".into());
                };
                m.insert(k, cell(entries.column(1), j)?);
            }
            Value::Object(m)
        }
        DataType::Struct(_) => {
            let st = a.as_struct();
            let mut m = serde_json::Map::new();
            for (f, c) in st.fields().iter().zip(st.columns()) {
                let v = cell(c, i)?;
                if !v.is_null() {
                    m.insert(f.name().clone(), v);
                }
            }
            Value::Object(m)
        }
        other => return Err(format!("no JSON for {other}")),
    })
}

/// The `metaData` action of a Parquet checkpoint, as a JSON commit carries it; `None` when the
/// checkpoint has none.
pub fn checkpoint_metadata(path: &Path) -> Result<Option<Value>> {
    use arrow::array::{Array, AsArray};
    let file = File::open(path).map_err(|e| LakeError::Io {
        path: path.to_path_buf(),
        source: e,
    })?;
    let builder = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)?;
    let Some(root) = builder
        .parquet_schema()
        .root_schema()
        .get_fields()
        .iter()
        .position(|f| f.name() == "metaData")
    else {
        return Err(corrupt(path, "no metaData column"));
    };
    let mask = parquet::arrow::ProjectionMask::roots(builder.parquet_schema(), [root]);
    for batch in builder.with_projection(mask).build()? {
        let batch = batch?;
        let meta = batch
            .column_by_name("metaData")
            .and_then(|c| c.as_struct_opt())
            .ok_or_else(|| corrupt(path, "metaData is not a struct column"))?;
        if let Some(i) = (0..meta.len()).find(|&i| meta.is_valid(i)) {
            return cell(meta, i)
                .map(Some)
                .map_err(|e| corrupt(path, format!("metaData: {e}")));
        }
    }
    Ok(None)
}

/// Links `actions` as version `version` of the log in `dir`, all or nothing: written to a
/// temporary file, fsynced, then linked under its name (which fails if it exists). `None` when
/// this call wrote the version, else the actions of the version that exists already.
fn try_link(dir: &Path, version: u64, actions: &[Value]) -> Result<Option<Vec<Value>>> {
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
    // Delta readers without in-commit timestamps date a version by its file's modification time:
    // the file gets the time of the Vigie commit it describes, also when a later writer rolls a
    // version forward after a crash (it was dated by the recovery, and time travel to a moment
    // in between read the version before the commit).
    let committed = actions
        .iter()
        .find_map(|a| a.get("commitInfo")?.get("timestamp")?.as_u64())
        .filter(|&ms| ms > 0)
        .map(|ms| std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms));
    {
        let mut f = File::create(&tmp).map_err(io(&tmp))?;
        f.write_all(body.as_bytes()).map_err(io(&tmp))?;
        if let Some(at) = committed {
            f.set_modified(at).map_err(io(&tmp))?;
        }
        f.sync_all().map_err(io(&tmp))?;
    }
    let linked = fs::hard_link(&tmp, &target);
    let _ = fs::remove_file(&tmp);
    match linked {
        Ok(()) => super::fsync_dir(dir).map(|()| None),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => read_actions(&target).map(Some),
        Err(e) => Err(LakeError::Io {
            path: target,
            source: e,
        }),
    }
}

/// Whether a Delta version only changes the table's metadata (a schema version: `metaData`,
/// no file).
fn is_schema_only(actions: &[Value]) -> bool {
    actions.iter().any(|a| a.get("metaData").is_some())
        && !actions
            .iter()
            .any(|a| a.get("add").is_some() || a.get("remove").is_some())
}

/// Publishes `actions`, which describe Vigie version `vigie`, as version `version` of the log in
/// `dir` (see [`try_link`]) and returns the version it holds. When the version exists already,
/// it must describe the same Vigie version (another writer rolled forward first); a schema
/// version another writer published on an earlier Vigie version is stepped over (the actions
/// go to the next version); anything else is a conflict.
fn publish(dir: &Path, version: u64, actions: &[Value], vigie: u64) -> Result<u64> {
    let mut version = version;
    loop {
        let Some(existing) = try_link(dir, version, actions)? else {
            return Ok(version);
        };
        let target = commit_file(dir, version);
        let got = vigie_version_of(&target, &existing)?;
        if got == vigie {
            return Ok(version);
        }
        if got < vigie && is_schema_only(&existing) {
            version += 1;
            continue;
        }
        return Err(LakeError::Conflict(format!(
            "{} describes Vigie version {got}, expected {vigie}",
            target.display()
        )));
    }
}

/// The Delta version of a table that describes Vigie version `vigie`: the newest one whose `txn`
/// is at most `vigie` (a binary search: `txn` never decreases with the Delta version). A schema
/// version repeats the `txn` of the version before it (same files, newer schema), so it is the
/// one chosen for that Vigie version. `None` when the table's log starts after it or does not
/// exist; [`LakeError::Expired`] when a log cleanup deleted the versions before it.
pub fn version_for(root: &Path, table: &str, vigie: u64) -> Result<Option<u64>> {
    let dir = log_dir(root, table);
    let (commits, _) = list_versions(&dir)?;
    let (Some(&first), Some(&latest)) = (commits.first(), commits.last()) else {
        return Ok(None);
    };
    let txn_of = |v: u64| -> Result<u64> {
        let path = commit_file(&dir, v);
        vigie_version_of(&path, &read_actions(&path)?)
    };
    let oldest = txn_of(first)?;
    if oldest > vigie {
        if first > 0 {
            return Err(LakeError::Expired {
                what: format!("the Delta version of table {table} for Vigie version {vigie}"),
                oldest,
            });
        }
        return Ok(None);
    }
    let (mut lo, mut hi) = (first, latest);
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

/// Whether the Delta log of `table` lacks a Vigie commit up to `vigie` that touches the table
/// (its writer has not written it yet, or was killed first): a Delta reader then reads an older
/// version of it than Vigie version `vigie`. Reads the Vigie commits after the table's head and
/// after the version every log is known to have reached (`_vigie/delta-synced`).
pub fn behind(lake: &Lake, table: &str, vigie: u64) -> Result<bool> {
    let head = head(lake.root(), table)?.map_or(0, |h| h.vigie);
    let mut from = head.max(synced_hint(lake.root()).unwrap_or(0).min(vigie));
    // Commits the log no longer keeps were in every Delta log before they were cleaned.
    if from < vigie && !lake.commit_path(from + 1).exists() {
        from = from.max(lake.first_commit()?.saturating_sub(1));
    }
    for v in from + 1..=vigie {
        if commit_actions(&lake.read_commit(v)?, table).is_some() {
            return Ok(true);
        }
    }
    Ok(false)
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
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct SyncReport {
    /// Tables whose Delta log was created.
    pub created: Vec<String>,
    /// Delta commits written.
    pub commits: u64,
    /// Checkpoints written.
    pub checkpoints: u64,
    /// Tables given a schema version (the catalogue added columns to them).
    pub evolved: Vec<String>,
}

/// Rolls every table's Delta log forward to the lake's latest Vigie version: creates the logs of
/// tables that have none (from `catalogue`, or from a file's schema), then writes, in Vigie order,
/// the Delta commit of every Vigie commit a table has not got yet, and the checkpoints due. Last,
/// a table of `catalogue` whose log has another schema gets a schema version when the change is
/// additive (see [`SchemaChange`]); otherwise it is left as it is, with a warning (and
/// [`check`] reports it).
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
    let mut metas = lake
        .delta_meta
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    let now = state_time(lake, latest)?;
    for t in &tables {
        let known = heads.get(t).copied();
        let h = match known {
            // The cached head is right unless another process wrote after it.
            // (and its own commit still there: a log cleanup leaves no version before its floor,
            // and a head it went past would be written again under a deleted number).
            Some(h)
                if !commit_file(&log_dir(root, t), h.delta + 1).exists()
                    && commit_file(&log_dir(root, t), h.delta).exists() =>
            {
                Some(h)
            }
            _ => head(root, t)?,
        };
        match h {
            // Another writer (another process, or another `Lake` of this one: the push endpoint's
            // commits, its replay and its compaction thread each have theirs) committed after this
            // sync read the state, and rolled this table's log forward: its Delta commits are
            // written after its Vigie commit, so the Vigie log read again has that version. This
            // table's log is then ahead of what this sync has to write; only a version the Vigie
            // log does not have is corrupt.
            Some(h) if h.vigie > latest && lake.state()?.version < h.vigie => {
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
    let hint_path = root.join(SYNCED_HINT);
    let raw_hint = synced_hint(root);
    // A hint ahead of the log (a lake restored without it) says nothing; the one written at the
    // end is this sync's.
    let hint = raw_hint.filter(|&h| h <= latest);
    let oldest = heads.values().map(|h| h.vigie).min().unwrap_or(latest);
    let mut from = hint.map_or(oldest, |h| oldest.max(h));
    // Commits the log no longer has were in every table's log before they were cleaned
    // ([`super::cleanup`] deletes none after the hint): a table untouched since is not behind.
    if from < latest && !lake.commit_path(from + 1).exists() {
        from = from.max(lake.first_commit()?.saturating_sub(1));
    }
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
            let version = publish(&dir, h.delta + 1, &actions, v)?;
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
            // A commit of files carries no metaData: the known one holds on, unless the version
            // stepped over another writer's schema version (then the next look reads it).
            if let Some(m) = metas.get_mut(t)
                && m.through == h.delta
                && version == h.delta + 1
            {
                m.through = version;
            }
            if version % CHECKPOINT_INTERVAL == 0 && v == latest {
                let meta = latest_metadata(root, t, version, metas.remove(t))?;
                write_checkpoint(root, t, version, &state, &meta.action)?;
                mark_verified(lake, t, version);
                metas.insert(t.to_owned(), meta);
                report.checkpoints += 1;
            }
        }
    }
    evolve(lake, catalogue, &state, &mut heads, &mut metas, &mut report)?;
    *lake.delta_heads.lock().unwrap_or_else(|p| p.into_inner()) = heads;
    *lake.delta_meta.lock().unwrap_or_else(|p| p.into_inner()) = metas;
    if raw_hint != Some(latest) {
        let tmp = root.join(format!("_vigie/tmp/delta-synced-{}", super::random_id()));
        if fs::write(&tmp, latest.to_string()).is_ok() && fs::rename(&tmp, &hint_path).is_err() {
            let _ = fs::remove_file(&tmp);
        }
    }
    Ok(report)
}

/// The schema step of [`sync`], once every log is rolled forward: for every table of
/// `catalogue` with a log, compares its latest `metaData` with the declared schema and, when the
/// change is additive, publishes a schema version (see [`schema_actions`]) after its head. The
/// version is a function of the head and the catalogue alone (the time is that of the Vigie
/// version the head describes, while the log keeps it), so writers of the same build racing
/// write the same bytes. A
/// writer that finds the version taken (by another writer's schema version or next commit)
/// leaves it to the next sync.
fn evolve(
    lake: &Lake,
    catalogue: &BTreeMap<String, TableSchema>,
    state: &State,
    heads: &mut BTreeMap<String, Head>,
    metas: &mut BTreeMap<String, TableMeta>,
    report: &mut SyncReport,
) -> Result<()> {
    let root = lake.root();
    for (t, declared) in catalogue {
        let Some(h) = heads.get(t).copied() else {
            continue;
        };
        let dir = log_dir(root, t);
        let first_look = !metas.contains_key(t);
        let meta = latest_metadata(root, t, h.delta, metas.remove(t))?;
        let schema = schema_string(&declared.schema, declared.partition.as_deref())
            .map_err(|e| corrupt(&dir, format!("table {t}: {e}")))?;
        let added = match schema_change(&meta.action, &schema, declared.partition.as_deref()) {
            SchemaChange::Same => {
                metas.insert(t.clone(), meta);
                continue;
            }
            SchemaChange::Incompatible(why) => {
                // Once per process and table, not at every commit of a stream.
                if first_look {
                    tracing::warn!(table = %t, delta_version = h.delta, reason = %why, "the Delta log keeps its schema: the catalogue's cannot replace it");
                }
                metas.insert(t.clone(), meta);
                continue;
            }
            SchemaChange::Additive { added } => added,
        };
        let time = state_time(lake, h.vigie)?;
        let new_meta = with_schema(&meta.action, &schema);
        let actions = schema_actions(&new_meta, &added, h.vigie, time);
        let version = h.delta + 1;
        if try_link(&dir, version, &actions)?.is_some() {
            tracing::debug!(table = %t, delta_version = version, "another writer took the Delta version: the schema waits for the next sync");
            metas.insert(t.clone(), meta);
            continue;
        }
        tracing::info!(table = %t, delta_version = version, added = ?added, "Delta schema version");
        let new = TableMeta {
            through: version,
            action: new_meta,
        };
        heads.insert(
            t.clone(),
            Head {
                delta: version,
                vigie: h.vigie,
            },
        );
        report.evolved.push(t.clone());
        if version % CHECKPOINT_INTERVAL == 0 && h.vigie == state.version {
            write_checkpoint(root, t, version, state, &new.action)?;
            mark_verified(lake, t, version);
            report.checkpoints += 1;
        }
        metas.insert(t.clone(), new);
    }
    Ok(())
}

/// The time of Vigie commit `v` (0 for an empty lake): the time of actions written for it.
fn state_time(lake: &Lake, v: u64) -> Result<i64> {
    if v == 0 {
        // A new lake: its tables' version 0 is dated now, not 1970.
        return Ok(super::now_ms());
    }
    match lake.read_commit(v) {
        Ok(c) => Ok(c.time_ms),
        // A table untouched since a commit the log no longer keeps ([`super::cleanup`]).
        Err(LakeError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            Ok(super::now_ms())
        }
        Err(e) => Err(e),
    }
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
/// tombstones at the Vigie `state`, its latest `metaData` action `meta`), then
/// `_last_checkpoint`.
fn write_checkpoint(
    root: &Path,
    table: &str,
    version: u64,
    state: &State,
    meta: &Value,
) -> Result<()> {
    let dir = log_dir(root, table);
    // The protocol is version 0's (Vigie never changes it); the metadata is the latest.
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
    let s = |k: &str| meta.get(k).and_then(Value::as_str).map(str::to_owned);
    let required = |k: &str| {
        s(k).ok_or_else(|| corrupt(&dir, format!("table {table}: its metaData has no {k}")))
    };
    let (id, schema_string) = (required("id")?, required("schemaString")?);
    // The format's options and the configuration: maps of strings.
    let strings = |v: Option<&Value>| -> Vec<(String, String)> {
        v.and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .map(|(k, v)| {
                        (
                            k.clone(),
                            v.as_str().map_or_else(|| v.to_string(), str::to_owned),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let options = strings(meta.get("format").and_then(|f| f.get("options")));
    let configuration = strings(meta.get("configuration"));
    let provider = meta
        .get("format")
        .and_then(|f| f.get("provider"))
        .and_then(Value::as_str)
        .unwrap_or("parquet");
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
                Arc::new(StringArray::from(vec![provider; n])) as ArrayRef,
            ),
            (
                Field::new("options", map_type(), false),
                string_map(&vec![Some(options); n]),
            ),
        ],
        &vec![true; n],
    )?;
    let metadata = struct_of(
        vec![
            (
                Field::new("id", DataType::Utf8, false),
                Arc::new(StringArray::from(vec![id; n])) as ArrayRef,
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
                Arc::new(StringArray::from(vec![schema_string; n])) as ArrayRef,
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
                string_map(&vec![Some(configuration); n]),
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
    // Never back to an older checkpoint (a slower writer's), which a log cleanup may delete.
    let newer = fs::read_to_string(dir.join("_last_checkpoint"))
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .and_then(|v| v.get("version")?.as_u64())
        .is_some_and(|v| v > version);
    if newer {
        return Ok(());
    }
    let last_tmp = dir.join(format!("._last_checkpoint.{}.tmp", super::random_id()));
    fs::write(&last_tmp, last).map_err(io(&last_tmp))?;
    fs::rename(&last_tmp, dir.join("_last_checkpoint")).map_err(io(&dir))?;
    super::fsync_dir(&dir)
}

/// Records that checkpoint `version` of `table` was written or checked by this process.
fn mark_verified(lake: &Lake, table: &str, version: u64) {
    let mut done = lake
        .checkpoints_verified
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    let v = done.entry(table.to_owned()).or_insert(version);
    *v = (*v).max(version);
}

/// Checks the newest checkpoint of every table against Vigie's state at the version it names
/// (a writer does this before it changes anything): a checkpoint that lists other files than
/// Vigie committed is an error naming the table and version. A checkpoint is written once and
/// never changes, so one this process wrote or already checked is not read again (a long-lived
/// writer such as the stream would otherwise read Vigie's state and every table's newest
/// checkpoint at every commit, a cost that grows with the log).
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
        let known = lake
            .checkpoints_verified
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&t)
            .copied();
        if known == Some(c) {
            continue;
        }
        let commit = commit_file(&dir, c);
        if !commits.contains(&c) {
            return Err(corrupt(
                &dir,
                format!("table {t}: checkpoint {c} without its commit"),
            ));
        }
        let n = vigie_version_of(&commit, &read_actions(&commit)?)?;
        if let std::collections::btree_map::Entry::Vacant(e) = states.entry(n) {
            match lake.state_at(n) {
                Ok(s) => {
                    e.insert(s);
                }
                // A table untouched since a Vigie version the log no longer keeps (or one a cleanup
                // is deleting now): nothing to compare its checkpoint with (`vigie lake check`
                // still reads it whole).
                Err(LakeError::Expired { .. }) => {
                    mark_verified(lake, &t, c);
                    continue;
                }
                Err(LakeError::Io { source, .. })
                    if source.kind() == std::io::ErrorKind::NotFound =>
                {
                    continue;
                }
                Err(e) => return Err(e),
            }
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
        mark_verified(lake, &t, c);
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
    Ok(checkpoint_files(path)?.into_keys().collect())
}

/// The files a Parquet checkpoint lists (its `add` actions' paths), with their sizes.
fn checkpoint_files(path: &Path) -> Result<BTreeMap<String, u64>> {
    use arrow::array::{Array, AsArray};
    use arrow::datatypes::Int64Type;
    let file = File::open(path).map_err(|e| LakeError::Io {
        path: path.to_path_buf(),
        source: e,
    })?;
    let reader =
        parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)?.build()?;
    let mut out = BTreeMap::new();
    for batch in reader {
        let batch = batch?;
        let Some(add) = batch.column_by_name("add") else {
            return Err(corrupt(path, "no add column"));
        };
        let add = add.as_struct();
        let paths = add
            .column_by_name("path")
            .ok_or_else(|| corrupt(path, "no add.path column"))?
            .as_string_opt::<i32>()
            .ok_or_else(|| corrupt(path, "add.path is not a string column"))?;
        let sizes = add
            .column_by_name("size")
            .ok_or_else(|| corrupt(path, "no add.size column"))?
            .as_primitive_opt::<Int64Type>()
            .ok_or_else(|| corrupt(path, "add.size is not a 64-bit integer column"))?;
        for i in 0..add.len() {
            if add.is_valid(i) && paths.is_valid(i) {
                let size = u64::try_from(sizes.value(i)).map_err(|_| {
                    corrupt(path, format!("add.size {} is negative", sizes.value(i)))
                })?;
                out.insert(paths.value(i).to_owned(), size);
            }
        }
    }
    Ok(out)
}

/// Reads every Delta version of every table, replays them, and compares each head (and each
/// checkpoint) with Vigie's state at the Vigie version it names, and with the files on disk.
pub fn check(lake: &Lake, catalogue: &BTreeMap<String, TableSchema>) -> Result<Vec<TableCheck>> {
    let root = lake.root();
    let mut state = lake.state()?;
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
    let vigie_first = lake.first_commit()?;
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
        // The live files and the latest metaData at each checkpoint's version.
        let mut at_version: BTreeMap<u64, (BTreeSet<String>, Option<Value>)> = BTreeMap::new();
        let mut meta: Option<Value> = None;
        let mut vigie = None;
        let mut broken = false;
        // A log cleaned of its oldest versions ([`super::cleanup`]) is read from its oldest
        // checkpoint with its commit and every later one.
        let mut first = 0;
        if !commits.contains(&0)
            && let Some(&k) = checkpoints.iter().find(|&&k| {
                commits.contains(&k) && commits.range(k..).count() as u64 == latest - k + 1
            })
        {
            let cp = checkpoint_file(&dir, k);
            match checkpoint_files(&cp).and_then(|f| Ok((f, checkpoint_metadata(&cp)?))) {
                Ok((files, m)) => {
                    live = files;
                    meta = m;
                    let path = commit_file(&dir, k);
                    match read_actions(&path).and_then(|a| vigie_version_of(&path, &a)) {
                        Ok(n) => vigie = Some(n),
                        Err(e) => c
                            .problems
                            .push(format!("table {t}: Delta version {k}: {e}")),
                    }
                    first = k + 1;
                }
                Err(e) => c.problems.push(format!("table {t}: checkpoint {k}: {e}")),
            }
        }
        for v in first..=latest {
            let path = commit_file(&dir, v);
            // Listed, or written since the listing (which is no snapshot beside a live writer).
            if !commits.contains(&v) && !path.exists() {
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
                    if let Some(m) = metadata_of(&actions) {
                        meta = Some(m.clone());
                    }
                    if checkpoints.contains(&v) {
                        at_version.insert(v, (live.keys().cloned().collect(), meta.clone()));
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
        for (&v, (expected, expected_meta)) in &at_version {
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
            match checkpoint_metadata(&checkpoint_file(&dir, v)) {
                Ok(got) if got.as_ref() == expected_meta.as_ref() => {}
                Ok(_) => c.problems.push(format!(
                    "table {t}: checkpoint {v} carries other metadata (schema) than its commits"
                )),
                Err(e) => c.problems.push(format!("table {t}: checkpoint {v}: {e}")),
            }
        }
        if !broken && let (Some(m), Some(declared)) = (&meta, catalogue.get(&t)) {
            match schema_string(&declared.schema, declared.partition.as_deref()) {
                Ok(want) => match schema_change(m, &want, declared.partition.as_deref()) {
                    SchemaChange::Same => {}
                    SchemaChange::Additive { added } => c.problems.push(format!(
                        "table {t}: the schema of Delta version {latest} is not the catalogue's ({}; the next writer publishes it)",
                        if added.is_empty() {
                            "columns reordered or made nullable".to_owned()
                        } else {
                            format!("without the columns {}", added.join(", "))
                        }
                    )),
                    SchemaChange::Incompatible(why) => c.problems.push(format!(
                        "table {t}: the schema of Delta version {latest} is not the catalogue's, and no writer changes it: {why}"
                    )),
                },
                Err(e) => c.problems.push(format!("table {t}: {e}")),
            }
        }
        c.delta_version = Some(latest);
        c.vigie_version = vigie;
        c.files = live.len() as u64;
        if !broken && let Some(n) = vigie {
            // A writer beside this check (a stream, the push endpoint) committed after it read the
            // Vigie log and rolled this table's log forward: the Vigie log read again has that
            // version, and only one it does not have is a problem.
            if n > state.version {
                state = lake.state()?;
            }
            if n > state.version {
                c.problems.push(format!(
                    "table {t}: Delta version {latest} describes Vigie version {n}, after the latest ({})",
                    state.version
                ));
            } else {
                if let std::collections::btree_map::Entry::Vacant(e) = states.entry(n) {
                    e.insert(match lake.state_at(n) {
                        Ok(s) => s,
                        // The table's head describes a Vigie version the log no longer keeps:
                        // no commit touched the table from then to the oldest it keeps (the
                        // cleaned commits were all in the Delta logs), so its files are those of
                        // that version.
                        Err(LakeError::Expired { oldest, .. }) if oldest > n => {
                            lake.state_at(oldest)?
                        }
                        Err(e) => return Err(e),
                    });
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
                    // Unless the log went on since it was read (a writer removed the file in a
                    // later version, and the vacuum deleted it: the head checked is no longer the
                    // table's).
                    if on_disk != Some(*size) && !commit_file(&dir, latest + 1).exists() {
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
                // Commits the Vigie log no longer keeps were in every table's log before they
                // were cleaned.
                for v in (n + 1).max(vigie_first)..=state.version {
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
            ts_nulls: None,
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

    fn nullable(name: &str, ty: DataType) -> Field {
        Field::new(name, ty, true)
    }

    /// The `metaData` action version 0 gives a table of `fields`, partitioned by `date`.
    fn created(fields: Vec<Field>) -> Value {
        let a = create_actions("t", &Schema::new(fields), Some("date"), &[], 3, 1_000).unwrap();
        metadata_of(&a).unwrap().clone()
    }

    #[test]
    fn each_created_table_has_an_id_of_its_own() {
        let one = created(vec![nullable("a", DataType::Utf8)]);
        let two = created(vec![nullable("a", DataType::Utf8)]);
        let id = |m: &Value| m["id"].as_str().unwrap().to_owned();
        assert_ne!(id(&one), id(&two), "two lakes' tables of one name");
        assert_eq!(id(&one).len(), 36);
    }

    fn declared(fields: Vec<Field>, partition: Option<&str>) -> String {
        schema_string(&Schema::new(fields), partition).unwrap()
    }

    /// The declared schema of a table `t` of columns `a` (a string) and `b` (a long).
    fn a_and_b() -> String {
        declared(
            vec![
                nullable("a", DataType::Utf8),
                nullable("b", DataType::Int64),
            ],
            Some("date"),
        )
    }

    #[test]
    fn only_additive_schema_changes_evolve_the_log() {
        use DataType::{Int64, Utf8};
        let base = || vec![Field::new("a", Utf8, false), nullable("n", Int64)];
        let meta = created(base());
        let change = |fields: Vec<Field>| {
            schema_change(&meta, &declared(fields, Some("date")), Some("date"))
        };
        assert_eq!(change(base()), SchemaChange::Same);
        // A nullable column anywhere (Delta matches columns by name) is additive.
        let mut more = base();
        more.insert(1, nullable("x", Int64));
        more.push(nullable("y", Utf8));
        assert_eq!(
            change(more),
            SchemaChange::Additive {
                added: vec!["x".into(), "y".into()]
            }
        );
        // Reordering, or relaxing a column to nullable, changes no file's meaning.
        assert_eq!(
            change(vec![nullable("n", Int64), Field::new("a", Utf8, false)]),
            SchemaChange::Additive { added: vec![] }
        );
        assert_eq!(
            change(vec![nullable("a", Utf8), nullable("n", Int64)]),
            SchemaChange::Additive { added: vec![] }
        );
        let incompatible = |c: SchemaChange, word: &str| match c {
            SchemaChange::Incompatible(why) => assert!(why.contains(word), "{why}"),
            other => panic!("{other:?} where {word} was expected"),
        };
        incompatible(change(vec![Field::new("a", Utf8, false)]), "n is dropped");
        incompatible(
            change(vec![Field::new("a", Utf8, false), nullable("n", Utf8)]),
            "changes type",
        );
        incompatible(
            change(vec![
                Field::new("a", Utf8, false),
                Field::new("n", Int64, false),
            ]),
            "non-nullable",
        );
        let mut strict = base();
        strict.push(Field::new("z", Int64, false));
        incompatible(change(strict), "new column z is non-nullable");
        incompatible(
            schema_change(&meta, &declared(base(), None), None),
            "partition columns",
        );
        incompatible(
            schema_change(&json!({"id": "x"}), &declared(base(), None), None),
            "no schemaString",
        );
    }

    #[test]
    fn a_schema_version_keeps_the_metadata_but_the_schema_and_repeats_the_txn() {
        let old = created(vec![nullable("a", DataType::Utf8)]);
        let schema = a_and_b();
        let meta = with_schema(&old, &schema);
        let added = vec!["b".to_owned()];
        let actions = schema_actions(&meta, &added, 7, 5_000);
        // The same inputs give the same bytes (racing writers write the same version).
        let text = |a: &[Value]| {
            a.iter()
                .map(Value::to_string)
                .collect::<Vec<_>>()
                .join("\n")
        };
        assert_eq!(
            text(&actions),
            text(&schema_actions(&meta, &added, 7, 5_000))
        );
        assert!(is_schema_only(&actions));
        // Version 0 (metaData and files) is not one.
        assert!(!is_schema_only(&[
            json!({"metaData": {}}),
            json!({"add": {}})
        ]));
        let m = metadata_of(&actions).unwrap();
        assert_eq!(m["schemaString"], json!(schema));
        // All the rest is the old metaData's.
        let mut rest = m.clone();
        rest["schemaString"] = old["schemaString"].clone();
        assert_eq!(rest, old);
        assert_eq!(m["createdTime"], 1_000);
        assert_eq!(schema_change(m, &schema, Some("date")), SchemaChange::Same);
        let info = &actions[0]["commitInfo"];
        assert_eq!(info["operation"], "ADD COLUMNS");
        assert_eq!(info["operationParameters"]["columns"], r#"["b"]"#);
        assert_eq!(info["timestamp"], 5_000);
        assert_eq!(
            actions
                .iter()
                .filter_map(|a| a.get("txn"))
                .collect::<Vec<_>>(),
            vec![&json!({"appId": "vigie", "version": 7, "lastUpdated": 5_000})]
        );
        assert_eq!(
            schema_actions(&meta, &[], 7, 5_000)[0]["commitInfo"]["operation"],
            "CHANGE COLUMN"
        );
    }

    #[test]
    fn the_latest_metadata_comes_from_the_newest_commit_or_checkpoint_and_writers_step_over_a_schema_version()
     {
        let root = tempfile::tempdir().unwrap();
        let dir = log_dir(root.path(), "t");
        let v0 = create_actions(
            "t",
            &Schema::new(vec![nullable("a", DataType::Utf8)]),
            Some("date"),
            &[],
            0,
            0,
        )
        .unwrap();
        assert_eq!(publish(&dir, 0, &v0, 0).unwrap(), 0);
        let old = metadata_of(&v0).unwrap().clone();
        let schema = a_and_b();
        let new = with_schema(&old, &schema);
        // Another writer's schema version on Vigie version 0 takes Delta version 1...
        assert!(
            try_link(&dir, 1, &schema_actions(&new, &["b".into()], 0, 0))
                .unwrap()
                .is_none()
        );
        // ...and taking it again finds it there.
        assert!(
            try_link(&dir, 1, &schema_actions(&new, &["b".into()], 0, 0))
                .unwrap()
                .is_some()
        );
        // A writer rolling Vigie commit 4 forward from head 0 lands after it.
        let commit4 = vec![txn_action(4, 9), json!({"add": {"path": "p.parquet"}})];
        assert_eq!(publish(&dir, 1, &commit4, 4).unwrap(), 2);
        assert_eq!(
            publish(&dir, 2, &commit4, 4).unwrap(),
            2,
            "the same commit again"
        );
        assert!(matches!(
            publish(&dir, 2, &commit4, 5),
            Err(LakeError::Conflict(_))
        ));
        assert_eq!(
            head(root.path(), "t").unwrap(),
            Some(Head { delta: 2, vigie: 4 })
        );
        // Time travel: Vigie version 0 reads the newest version naming it, the schema version.
        assert_eq!(version_for(root.path(), "t", 0).unwrap(), Some(1));
        assert_eq!(version_for(root.path(), "t", 3).unwrap(), Some(1));
        assert_eq!(version_for(root.path(), "t", 4).unwrap(), Some(2));
        // From the JSON commits: fresh, or from what was known at an older version.
        let fresh = latest_metadata(root.path(), "t", 2, None).unwrap();
        assert_eq!(
            fresh,
            TableMeta {
                through: 2,
                action: new.clone()
            }
        );
        let stale = TableMeta {
            through: 0,
            action: old.clone(),
        };
        assert_eq!(
            latest_metadata(root.path(), "t", 2, Some(stale.clone()))
                .unwrap()
                .action,
            new
        );
        assert_eq!(
            latest_metadata(root.path(), "t", 0, None).unwrap().action,
            old
        );
        // A checkpoint carries the latest metaData, and reads back as the JSON carries it.
        let state = State {
            version: 4,
            ..State::default()
        };
        write_checkpoint(root.path(), "t", 2, &state, &new).unwrap();
        assert_eq!(
            checkpoint_metadata(&checkpoint_file(&dir, 2)).unwrap(),
            Some(new.clone())
        );
        // With versions 0 and 1 gone, the checkpoint is where the metadata comes from.
        for v in [0, 1] {
            fs::remove_file(commit_file(&dir, v)).unwrap();
        }
        assert_eq!(
            latest_metadata(root.path(), "t", 2, None).unwrap().action,
            new
        );
        assert_eq!(metadata(root.path(), "t").unwrap(), Some(new));
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
