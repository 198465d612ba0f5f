//! The detection passes' tables read from a process-wide cache of decoded lake columns instead of from Parquet at every query.
//!
//! A streaming pass runs ten rules, and five of them read the same 30-day window of
//! `game_players` (two of them twice), two the window's `departures`, every one the feature
//! tables: each read decoded the same Parquet pages again, and the next pass, a second later,
//! decoded them once more, though all but the newest files were the same. A lake file never
//! changes once written (a new version of a table is a new file, and its name is never reused),
//! so a column decoded once is good as long as the file is live.
//!
//! [`DecodedTable`] is a DataFusion table over one table of a snapshot: a scan keeps the files
//! whose partition passes the query's filters on the partition column (as a listing table
//! prunes them), takes each projected column of each such file from the cache (decoding the file's
//! missing columns once, cast to the table's types, a column the file lacks read as nulls, as
//! the listing table does), and serves them from memory; every filter is applied above the scan
//! by DataFusion. The cache holds at most [`BUDGET_BYTES`]; a column no scan asked for in the
//! last [`KEEP_SCANS`] scans goes first when room is needed, a column of a file no longer in the
//! table's snapshot is dropped at the next scan of that table, a column that none of the last
//! [`DROP_SCANS`] scans of its table asked for (a day the rules' windows moved past) is dropped
//! though the budget is not spent, so that what the cache holds follows the windows the rules
//! read, and when the live columns outgrow
//! the budget the others are decoded per scan and not kept (a cache that never thrashes). Files
//! are also skipped on the latest `ts` the manifest records for each, for the filters on `ts` of
//! the rules that read `departures` and `findings` by time. Left: the columns are decoded while
//! the plan is made, one file after another, and the decoded batches a scan serves are not
//! counted in the session's memory pool (the window the rules read, not the history).

use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use async_trait::async_trait;
use datafusion::arrow::array::{Array, ArrayRef, BooleanArray, StringArray, new_null_array};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::record_batch::{RecordBatch, RecordBatchOptions};
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::{DFSchema, DataFusionError};
use datafusion::datasource::TableType;
use datafusion::datasource::memory::MemorySourceConfig;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_plan::ExecutionPlan;

use super::FileEntry;
use super::Snapshot;
use super::tables::TableDef;

/// The decoded columns the process keeps, at most (the 30-day window's columns the rules read
/// and both feature tables of a platform of 5,000 games a day take about 70 MiB).
pub const BUDGET_BYTES: usize = 256 << 20;

/// A column used by one of the last this many scans is never evicted to make room (a pass's
/// rules make about fifteen scans).
pub const KEEP_SCANS: u64 = 64;

/// A column that none of the last this many scans of its table used is dropped at the next scan of
/// that table, whatever room is left: the columns of days the rules' windows moved past are used by
/// no scan again (their files stay live). Counted per table, so that the columns of a table only
/// a rule whose result is reused reads (`move_analysis`) stay while no scan of it runs. A pass of
/// the stream scans `game_players` about nine times and `findings` once, so a day the windows
/// moved past goes within 20 s to 3 minutes of the stream. Before, such columns stayed until the
/// budget was spent, and the cache grew by about 2 MiB a minute over a 30-minute stream (136 -> 198
/// MiB in run T, docs/performance.md).
pub const DROP_SCANS: u64 = 256;

/// One column of one lake file: the file's table, absolute path and size on disk (a path is never
/// reused; the size makes a mistaken reuse a miss rather than wrong data), and the column.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct ColumnKey {
    table: &'static str,
    path: PathBuf,
    bytes: u64,
    /// The column's place in the table's definition (fixed for the process).
    column: usize,
}

struct Entry {
    array: ArrayRef,
    size: usize,
    /// The scan that last used it.
    used: u64,
    /// The scan of its table that last used it (the table's count of scans then).
    table_used: u64,
}

/// The cache's counters since the process started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Columns of files served from memory.
    pub hits: u64,
    /// Columns of files decoded from disk.
    pub misses: u64,
    /// Bytes held now.
    pub held_bytes: usize,
}

/// A bounded cache of decoded columns of lake files.
pub struct ColumnCache {
    budget: usize,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    entries: HashMap<ColumnKey, Entry>,
    held: usize,
    scans: u64,
    /// Scans begun per table.
    table_scans: HashMap<&'static str, u64>,
    hits: u64,
    misses: u64,
}

impl ColumnCache {
    /// An empty cache that holds at most `budget` bytes of decoded columns.
    pub fn new(budget: usize) -> ColumnCache {
        ColumnCache {
            budget,
            inner: Mutex::new(Inner::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // The map is consistent after any panic (every change is one insert or remove).
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The counters so far.
    pub fn stats(&self) -> CacheStats {
        let g = self.lock();
        CacheStats {
            hits: g.hits,
            misses: g.misses,
            held_bytes: g.held,
        }
    }

    /// Starts a scan of `table` whose live files are `live`: drops the columns of the table's
    /// files that are not live any more and those none of the table's last [`DROP_SCANS`] scans
    /// used, and returns the scan's number.
    fn begin_scan(&self, table: &'static str, live: &[(PathBuf, u64)]) -> u64 {
        let mut g = self.lock();
        g.scans += 1;
        let count = g.table_scans.entry(table).or_insert(0);
        *count += 1;
        let table_scan = *count;
        let live: std::collections::HashSet<(&PathBuf, u64)> =
            live.iter().map(|(p, b)| (p, *b)).collect();
        let dead: Vec<ColumnKey> = g
            .entries
            .iter()
            .filter(|(k, e)| {
                k.table == table
                    && (!live.contains(&(&k.path, k.bytes))
                        || e.table_used + DROP_SCANS < table_scan)
            })
            .map(|(k, _)| k.clone())
            .collect();
        for k in dead {
            if let Some(e) = g.entries.remove(&k) {
                g.held -= e.size;
            }
        }
        g.scans
    }

    /// The cached columns among `keys` (in their order; `None` where missing), marked as used by
    /// scan `scan`.
    fn get(&self, keys: &[ColumnKey], scan: u64) -> Vec<Option<ArrayRef>> {
        let mut guard = self.lock();
        let g = &mut *guard;
        let found: Vec<Option<ArrayRef>> = keys
            .iter()
            .map(|k| {
                let table_scan = g.table_scans.get(k.table).copied().unwrap_or(0);
                g.entries.get_mut(k).map(|e| {
                    e.used = e.used.max(scan);
                    e.table_used = e.table_used.max(table_scan);
                    Arc::clone(&e.array)
                })
            })
            .collect();
        let hits = found.iter().filter(|f| f.is_some()).count() as u64;
        g.hits += hits;
        g.misses += keys.len() as u64 - hits;
        found
    }

    /// Keeps a decoded column if there is room, making room from the columns no recent scan
    /// used (least recently used first); otherwise it is not kept.
    fn put(&self, key: ColumnKey, array: &ArrayRef, scan: u64) {
        let size = array.get_array_memory_size();
        if size > self.budget / 4 {
            return;
        }
        let mut g = self.lock();
        if g.entries.contains_key(&key) {
            return;
        }
        if g.held + size > self.budget {
            let mut stale: Vec<(u64, ColumnKey)> = g
                .entries
                .iter()
                .filter(|(_, e)| e.used + KEEP_SCANS < scan)
                .map(|(k, e)| (e.used, k.clone()))
                .collect();
            stale.sort_by_key(|(used, _)| *used);
            for (_, k) in stale {
                if g.held + size <= self.budget {
                    break;
                }
                if let Some(e) = g.entries.remove(&k) {
                    g.held -= e.size;
                }
            }
            if g.held + size > self.budget {
                return;
            }
        }
        g.held += size;
        let table_used = g.table_scans.get(key.table).copied().unwrap_or(0);
        g.entries.insert(
            key,
            Entry {
                array: Arc::clone(array),
                size,
                used: scan,
                table_used,
            },
        );
    }
}

/// The process's cache (the streaming job's passes share it).
pub fn cache() -> &'static ColumnCache {
    static CACHE: OnceLock<ColumnCache> = OnceLock::new();
    CACHE.get_or_init(|| ColumnCache::new(BUDGET_BYTES))
}

/// One live file of the table: its absolute path and what the manifest records of it.
#[derive(Debug, Clone)]
struct LiveFile {
    path: PathBuf,
    entry: FileEntry,
}

impl LiveFile {
    /// The partition value (`2026-11-20` of `date=2026-11-20`), for partitioned tables.
    fn partition(&self) -> Option<&str> {
        self.entry
            .partition
            .as_deref()
            .and_then(|p| p.split_once('='))
            .map(|(_, v)| v)
    }

    fn rows(&self) -> usize {
        self.entry.rows as usize
    }
}

/// `array` as `ty`, where a value `ty` cannot hold is an error, never a null.
fn cast_strict(
    array: &dyn Array,
    ty: &DataType,
) -> Result<ArrayRef, datafusion::arrow::error::ArrowError> {
    let strict = datafusion::arrow::compute::CastOptions {
        safe: false,
        ..Default::default()
    };
    datafusion::arrow::compute::cast_with_options(array, ty, &strict)
}

/// One table of a snapshot, served from [`cache`] (see the module's documentation).
pub struct DecodedTable {
    name: &'static str,
    /// The data columns (the files' schema, without the partition column).
    data: SchemaRef,
    /// The data columns and the partition column, last.
    schema: SchemaRef,
    partition: Option<&'static str>,
    files: Vec<LiveFile>,
    cache: &'static ColumnCache,
}

impl fmt::Debug for DecodedTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DecodedTable({}, {} files)", self.name, self.files.len())
    }
}

impl DecodedTable {
    /// The table `def` of `snapshot`, read through the process's cache.
    pub fn new(snapshot: &Snapshot, def: &TableDef) -> DecodedTable {
        DecodedTable::with_cache(snapshot, def, cache())
    }

    fn with_cache(snapshot: &Snapshot, def: &TableDef, cache: &'static ColumnCache) -> Self {
        let data = def.schema();
        let files = snapshot
            .table_files(def.name)
            .into_iter()
            .map(|(path, f)| LiveFile {
                path,
                entry: f.clone(),
            })
            .collect();
        DecodedTable {
            name: def.name,
            data,
            schema: def.table_schema(),
            partition: def.partition,
            files,
            cache,
        }
    }

    /// The files whose partition passes every filter that reads only the partition column.
    fn pruned(
        &self,
        state: &dyn Session,
        filters: &[Expr],
    ) -> datafusion::error::Result<Vec<usize>> {
        let all: Vec<usize> = (0..self.files.len()).collect();
        let Some(p) = self.partition else {
            return Ok(all);
        };
        let on_partition: Vec<&Expr> = filters
            .iter()
            .filter(|f| {
                let cols = f.column_refs();
                !cols.is_empty() && cols.iter().all(|c| c.name == p)
            })
            .collect();
        if on_partition.is_empty() || self.files.is_empty() {
            return Ok(all);
        }
        let values = self.partition_values()?;
        let schema = Arc::new(Schema::new(vec![Field::new(p, DataType::Date32, true)]));
        let batch = RecordBatch::try_new(Arc::clone(&schema), vec![values])?;
        let df_schema = DFSchema::try_from(Arc::clone(&schema))?;
        let mut keep = vec![true; self.files.len()];
        for f in on_partition {
            let expr = state.create_physical_expr(f.clone(), &df_schema)?;
            let out = expr.evaluate(&batch)?.into_array(batch.num_rows())?;
            let out = out.as_any().downcast_ref::<BooleanArray>().ok_or_else(|| {
                DataFusionError::Internal(format!(
                    "{}: a filter on {p} is not a boolean",
                    self.name
                ))
            })?;
            for (i, k) in keep.iter_mut().enumerate() {
                // A null (an unknown partition) keeps nothing, as in a WHERE clause.
                *k &= out.is_valid(i) && out.value(i);
            }
        }
        Ok(all.into_iter().filter(|&i| keep[i]).collect())
    }

    /// Of `kept`, the files that may hold a row passing the filters on `ts` of the forms
    /// `ts >= X`, `ts > X` and `ts IS NULL OR ts >= X` (X without columns), judged on the latest
    /// `ts` the manifest records for each file (a file without that record is kept, and one that may
    /// hold rows without a time too when the filter lets those through): the rules read the
    /// window of `departures` and `findings` by time, and their older files are never decoded.
    fn pruned_on_ts(&self, state: &dyn Session, filters: &[Expr], kept: Vec<usize>) -> Vec<usize> {
        if !self.data.fields().iter().any(|f| f.name() == "ts") {
            return kept;
        }
        let mut out = kept;
        for f in filters {
            let Some((bound, strict, nulls_pass)) = ts_bound(state, f) else {
                continue;
            };
            // On whole milliseconds, `ts > X` is `ts >= X + 1`.
            let since = if strict {
                bound.saturating_add(1)
            } else {
                bound
            };
            out.retain(|&i| self.files[i].entry.may_hold_ts_since(since, nulls_pass));
        }
        out
    }

    /// Each file's partition value as a date: a file of a partitioned table whose partition is
    /// missing or not a date is an error naming it, never a file silently left out.
    fn partition_values(&self) -> datafusion::error::Result<ArrayRef> {
        let text: StringArray = self.files.iter().map(LiveFile::partition).collect();
        let bad = |f: &LiveFile, why: String| {
            DataFusionError::Execution(format!(
                "{} ({}): the partition {:?} is not a date: {why}",
                self.name,
                f.path.display(),
                f.partition()
            ))
        };
        if let Some(f) = self.files.iter().find(|f| f.partition().is_none()) {
            return Err(bad(f, "none".into()));
        }
        cast_strict(&text, &DataType::Date32).map_err(|e| {
            // Which file: the first whose value alone does not cast.
            let one = |f: &LiveFile| {
                cast_strict(&StringArray::from(vec![f.partition()]), &DataType::Date32)
            };
            match self.files.iter().find_map(|f| one(f).err().map(|e| (f, e))) {
                Some((f, e)) => bad(f, e.to_string()),
                None => DataFusionError::Execution(format!("{}: {e}", self.name)),
            }
        })
    }

    /// The data columns `columns` (indices into the data schema) of one file, from the cache or
    /// decoded now (and offered to the cache).
    fn file_columns(
        &self,
        file: &LiveFile,
        columns: &[usize],
        scan: u64,
    ) -> datafusion::error::Result<Vec<ArrayRef>> {
        let keys: Vec<ColumnKey> = columns
            .iter()
            .map(|&c| ColumnKey {
                table: self.name,
                path: file.path.clone(),
                bytes: file.entry.bytes,
                column: c,
            })
            .collect();
        let mut found = self.cache.get(&keys, scan);
        let missing: Vec<usize> = (0..columns.len()).filter(|&i| found[i].is_none()).collect();
        if !missing.is_empty() {
            let wanted: Vec<usize> = missing.iter().map(|&i| columns[i]).collect();
            let decoded = self.decode(file, &wanted)?;
            for (&i, array) in missing.iter().zip(decoded) {
                self.cache.put(keys[i].clone(), &array, scan);
                found[i] = Some(array);
            }
        }
        found
            .into_iter()
            .map(|a| {
                a.ok_or_else(|| {
                    DataFusionError::Internal(format!("{}: a column was lost", self.name))
                })
            })
            .collect()
    }

    /// Decodes the data columns `columns` of one file ([`super::parquet::read_file`]), cast to
    /// the table's types (a column the file does not have is all nulls, as the listing table
    /// reads it).
    fn decode(
        &self,
        file: &LiveFile,
        columns: &[usize],
    ) -> datafusion::error::Result<Vec<ArrayRef>> {
        let at = |e: String| {
            DataFusionError::Execution(format!("{} ({}): {e}", self.name, file.path.display()))
        };
        let names: Vec<&str> = columns
            .iter()
            .map(|&c| self.data.field(c).name().as_str())
            .collect();
        let read =
            super::parquet::read_file(&file.path, Some(&names)).map_err(|e| at(e.to_string()))?;
        // A file without any of the columns yields no batch: its rows are the manifest's.
        let rows = if read.is_empty() {
            file.rows()
        } else {
            read.iter().map(RecordBatch::num_rows).sum()
        };
        columns
            .iter()
            .map(|&c| {
                let field = self.data.field(c);
                let parts: Option<Vec<&dyn Array>> = read
                    .iter()
                    .map(|b| b.column_by_name(field.name()).map(|a| a.as_ref()))
                    .collect();
                let whole: ArrayRef = match parts.as_deref() {
                    None | Some([]) => return Ok(new_null_array(field.data_type(), rows)),
                    Some([one]) => one.slice(0, one.len()),
                    Some(parts) => datafusion::arrow::compute::concat(parts)?,
                };
                if whole.data_type() == field.data_type() {
                    Ok(whole)
                } else {
                    cast_strict(&whole, field.data_type()).map_err(|e| {
                        at(format!(
                            "column {}: {} read as {}: {e}",
                            field.name(),
                            whole.data_type(),
                            field.data_type()
                        ))
                    })
                }
            })
            .collect()
    }
}

/// The lower bound a filter puts on `ts` (epoch ms), whether it is strict, and whether rows
/// without a time pass it too; `None` when the filter is not of a form [`DecodedTable`] prunes on
/// (or its bound cannot be computed: then nothing is pruned).
fn ts_bound(state: &dyn Session, filter: &Expr) -> Option<(i64, bool, bool)> {
    use datafusion::logical_expr::{BinaryExpr, Operator};
    let is_ts = |e: &Expr| match e {
        Expr::Column(c) => c.name == "ts",
        // A widening cast of the column keeps its order.
        Expr::Cast(c) => matches!(c.expr.as_ref(), Expr::Column(col) if col.name == "ts"),
        _ => false,
    };
    match filter {
        Expr::BinaryExpr(BinaryExpr { left, op, right })
            if matches!(op, Operator::GtEq | Operator::Gt)
                && is_ts(left)
                && right.column_refs().is_empty() =>
        {
            let bound = scalar_ms(state, right)?;
            Some((bound, *op == Operator::Gt, false))
        }
        Expr::BinaryExpr(BinaryExpr {
            left,
            op: Operator::Or,
            right,
        }) => {
            let (null, other) = match (left.as_ref(), right.as_ref()) {
                (Expr::IsNull(n), o) | (o, Expr::IsNull(n)) => (n, o),
                _ => return None,
            };
            if !is_ts(null) {
                return None;
            }
            let (bound, strict, _) = ts_bound(state, other)?;
            Some((bound, strict, true))
        }
        _ => None,
    }
}

/// The value of an expression without columns, as epoch milliseconds (a timestamp of any unit,
/// floored to the millisecond: a lower bound stays a lower bound).
fn scalar_ms(state: &dyn Session, expr: &Expr) -> Option<i64> {
    use datafusion::arrow::array::Int64Array;
    use datafusion::arrow::datatypes::TimeUnit;
    let empty = Arc::new(Schema::empty());
    let df_schema = DFSchema::try_from(Arc::clone(&empty)).ok()?;
    let physical = state.create_physical_expr(expr.clone(), &df_schema).ok()?;
    let one = RecordBatch::try_new_with_options(
        empty,
        vec![],
        &RecordBatchOptions::new().with_row_count(Some(1)),
    )
    .ok()?;
    let value = physical.evaluate(&one).ok()?.into_array(1).ok()?;
    if !matches!(value.data_type(), DataType::Timestamp(_, _)) {
        return None;
    }
    let ms =
        datafusion::arrow::compute::cast(&value, &DataType::Timestamp(TimeUnit::Millisecond, None))
            .ok()?;
    let ms = datafusion::arrow::compute::cast(&ms, &DataType::Int64).ok()?;
    let ms = ms.as_any().downcast_ref::<Int64Array>()?;
    ms.is_valid(0).then(|| ms.value(0))
}

#[async_trait]
impl TableProvider for DecodedTable {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> datafusion::error::Result<Vec<TableProviderFilterPushDown>> {
        // Every filter is handed to the scan (which prunes partitions with those on the
        // partition column) and applied again above it.
        Ok(vec![TableProviderFilterPushDown::Inexact; filters.len()])
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        _limit: Option<usize>,
    ) -> datafusion::error::Result<Arc<dyn ExecutionPlan>> {
        let projection: Vec<usize> = match projection {
            Some(p) => p.clone(),
            None => (0..self.schema.fields().len()).collect(),
        };
        let projected = Arc::new(self.schema.project(&projection)?);
        let kept = self.pruned_on_ts(state, filters, self.pruned(state, filters)?);
        let live: Vec<(PathBuf, u64)> = self
            .files
            .iter()
            .map(|f| (f.path.clone(), f.entry.bytes))
            .collect();
        let scan = self.cache.begin_scan(self.name, &live);
        let n_data = self.data.fields().len();
        let data_columns: Vec<usize> = projection.iter().copied().filter(|&c| c < n_data).collect();
        let dates = if self.partition.is_some() && projection.iter().any(|&c| c >= n_data) {
            Some(self.partition_values()?)
        } else {
            None
        };
        // One batch per file, the files spread over the session's partitions by rows.
        let parts = state.config().target_partitions().max(1);
        let mut partitions: Vec<(usize, Vec<RecordBatch>)> = vec![(0, Vec::new()); parts];
        let mut order = kept;
        order.sort_by_key(|&i| std::cmp::Reverse(self.files[i].rows()));
        for i in order {
            let file = &self.files[i];
            let decoded = self.file_columns(file, &data_columns, scan)?;
            let rows = decoded.first().map_or(file.rows(), |a| a.len());
            let mut decoded = decoded.into_iter();
            let mut arrays = Vec::with_capacity(projection.len());
            for &c in &projection {
                if c < n_data {
                    arrays.push(decoded.next().ok_or_else(|| {
                        DataFusionError::Internal(format!("{}: a column was lost", self.name))
                    })?);
                } else {
                    let date = dates.as_ref().map(|d| d.slice(i, 1)).ok_or_else(|| {
                        DataFusionError::Internal(format!("{}: no partition values", self.name))
                    })?;
                    let index = datafusion::arrow::array::UInt32Array::from(vec![0u32; rows]);
                    arrays.push(datafusion::arrow::compute::take(&date, &index, None)?);
                }
            }
            let batch = RecordBatch::try_new_with_options(
                Arc::clone(&projected),
                arrays,
                &RecordBatchOptions::new().with_row_count(Some(rows)),
            )?;
            if let Some(slot) = partitions.iter_mut().min_by_key(|(r, _)| *r) {
                slot.0 += rows;
                slot.1.push(batch);
            }
        }
        let partitions: Vec<Vec<RecordBatch>> = partitions.into_iter().map(|(_, b)| b).collect();
        Ok(MemorySourceConfig::try_new_exec(
            &partitions,
            projected,
            None,
        )?)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::lake::Lake;
    use crate::lake::sql::{Limits, session};
    use datafusion::arrow::util::pretty::pretty_format_batches;

    crate::row_table! {
        /// A partitioned test table.
        pub struct Row in "decoded_rows" (partition Some("date"), sort ["k"], bloom []) {
            /// Key.
            k: String,
            /// A number.
            n: i64,
            /// A column the oldest file lacks.
            extra: Option<String>,
        }
    }

    fn row(k: &str, n: i64, extra: Option<&str>) -> Row {
        Row {
            k: k.into(),
            n,
            extra: extra.map(Into::into),
        }
    }

    /// Commits one file of `rows` in partition `date`; with `narrow`, the file lacks `extra`.
    fn commit(lake: &Lake, date: &str, rows: &[Row], narrow: bool) {
        let mut batch = Row::to_batch(rows).unwrap();
        if narrow {
            batch = batch.project(&[0, 1]).unwrap();
        }
        commit_batch(lake, &Row::def(), date, batch);
    }

    /// Commits `batch` as one file of `def` in partition `date`, with what the manifest records of
    /// it (rows, size, latest `ts`).
    pub(crate) fn commit_batch(lake: &Lake, def: &TableDef, date: &str, batch: RecordBatch) {
        let mut meta = crate::lake::parquet::batch_meta(def, &batch);
        let mut w = lake.writer().unwrap();
        let mut txn = w.begin("test").unwrap();
        let f = txn
            .new_file(def.name, Some(&format!("date={date}")))
            .unwrap();
        meta.bytes =
            crate::lake::parquet::write_file(&f.pending, def, batch.schema(), &[batch]).unwrap();
        txn.add_file_meta(f, meta);
        txn.commit(serde_json::json!({})).unwrap();
    }

    fn leaked_cache() -> &'static ColumnCache {
        Box::leak(Box::new(ColumnCache::new(BUDGET_BYTES)))
    }

    /// A session where `def` is a [`DecodedTable`] over `cache`, and nothing else.
    fn decoded_session(
        snapshot: &Snapshot,
        def: &TableDef,
        cache: &'static ColumnCache,
    ) -> datafusion::prelude::SessionContext {
        let ctx = datafusion::prelude::SessionContext::new();
        let table = DecodedTable::with_cache(snapshot, def, cache);
        ctx.register_table(def.name, Arc::new(table)).unwrap();
        ctx
    }

    async fn run(ctx: &datafusion::prelude::SessionContext, q: &str) -> String {
        let b = ctx.sql(q).await.unwrap().collect().await.unwrap();
        pretty_format_batches(&b).unwrap().to_string()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn queries_read_from_memory_what_the_listing_table_reads_from_parquet() {
        let dir = tempfile::tempdir().unwrap();
        let lake = Lake::open(dir.path()).unwrap();
        commit(
            &lake,
            "2026-11-20",
            &[row("a", 1, None), row("b", 2, None)],
            true,
        );
        commit(
            &lake,
            "2026-11-21",
            &[row("c", 3, Some("x")), row("d", 4, None)],
            false,
        );
        commit(&lake, "2026-11-22", &[row("e", 5, Some("y"))], false);
        let snapshot = lake.snapshot().unwrap();
        let def = Row::def();
        let listed = session(&snapshot, std::slice::from_ref(&def), Limits::default())
            .await
            .unwrap();
        let decoded = session(
            &snapshot,
            std::slice::from_ref(&def),
            Limits {
                decoded: &["decoded_rows"],
                ..Limits::default()
            },
        )
        .await
        .unwrap();
        for q in [
            "SELECT * FROM decoded_rows ORDER BY k",
            "SELECT k, date FROM decoded_rows WHERE date >= DATE '2026-11-21' ORDER BY k",
            "SELECT count(*) FROM decoded_rows WHERE date < CAST('2026-11-21' AS DATE)",
            "SELECT date, sum(n), count(extra) FROM decoded_rows GROUP BY date ORDER BY date",
            "SELECT count(*) FROM decoded_rows",
            // Only the column the oldest file lacks: none of its wanted columns is in that file.
            "SELECT date, count(*) FROM decoded_rows WHERE extra IS NULL GROUP BY date ORDER BY date",
        ] {
            assert_eq!(run(&decoded, q).await, run(&listed, q).await, "{q}");
        }
        // What both read: the partition as a date, nulls for the column the oldest file lacks.
        let all = run(
            &decoded,
            "SELECT k, n, extra, date FROM decoded_rows ORDER BY k",
        )
        .await;
        assert!(all.contains("| a | 1 |       | 2026-11-20 |"), "{all}");
        assert!(all.contains("| c | 3 | x     | 2026-11-21 |"), "{all}");
        let some = run(
            &decoded,
            "SELECT k FROM decoded_rows WHERE date > DATE '2026-11-21'",
        )
        .await;
        assert!(some.contains("| e |") && !some.contains("| a |"), "{some}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_column_is_decoded_once_and_dropped_when_its_file_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let lake = Lake::open(dir.path()).unwrap();
        commit(&lake, "2026-11-20", &[row("a", 1, None)], false);
        commit(&lake, "2026-11-21", &[row("b", 2, None)], false);
        let cache = leaked_cache();
        let def = Row::def();
        let snapshot = lake.snapshot().unwrap();
        let ctx = decoded_session(&snapshot, &def, cache);
        run(&ctx, "SELECT k, n FROM decoded_rows").await;
        assert_eq!(cache.stats().misses, 4);
        assert_eq!(cache.stats().hits, 0);
        run(&ctx, "SELECT k, n FROM decoded_rows").await;
        assert_eq!(cache.stats().hits, 4);
        // Pruned partitions are not read at all.
        run(
            &ctx,
            "SELECT k FROM decoded_rows WHERE date = DATE '2026-11-21'",
        )
        .await;
        assert_eq!(cache.stats().hits, 5);
        let held = cache.stats().held_bytes;
        assert!(held > 0);
        // A later snapshot without the first file: its columns go at the next scan.
        let first = snapshot
            .state
            .table_files(def.name)
            .next()
            .unwrap()
            .path
            .clone();
        let mut w = lake.writer().unwrap();
        let mut txn = w.begin("test").unwrap();
        txn.remove_file(&first);
        txn.commit(serde_json::json!({})).unwrap();
        drop(w);
        let later = lake.snapshot().unwrap();
        let ctx = decoded_session(&later, &def, cache);
        let out = run(&ctx, "SELECT k FROM decoded_rows").await;
        assert!(out.contains("| b |") && !out.contains("| a |"), "{out}");
        assert!(cache.stats().held_bytes < held);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_partition_that_is_not_a_date_is_an_error_naming_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let lake = Lake::open(dir.path()).unwrap();
        commit(&lake, "2026-11-20", &[row("a", 1, None)], false);
        commit(&lake, "someday", &[row("b", 2, None)], false);
        let ctx = decoded_session(&lake.snapshot().unwrap(), &Row::def(), leaked_cache());
        let err = match ctx
            .sql("SELECT date, count(*) FROM decoded_rows GROUP BY date")
            .await
        {
            Ok(df) => df.collect().await.unwrap_err(),
            Err(e) => e,
        }
        .to_string();
        assert!(
            err.contains("someday") && err.contains("not a date"),
            "{err}"
        );
    }

    crate::row_table! {
        /// A test table with event times.
        pub struct TsRow in "decoded_ts" (partition Some("date"), sort ["k"], bloom []) {
            /// Key.
            k: String,
            /// Time (epoch ms).
            ts: Option<crate::lake::record::Ts>,
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn files_older_than_a_filter_on_ts_are_never_decoded_and_the_rows_are_the_same() {
        use crate::lake::record::Ts;
        let dir = tempfile::tempdir().unwrap();
        let lake = Lake::open(dir.path()).unwrap();
        let def = TsRow::def();
        // Three files: all before 1,000; from 1,000 to 2,000 with a row without a time; after.
        let files: [(&str, Vec<TsRow>); 3] = [
            (
                "2026-11-20",
                vec![TsRow {
                    k: "old".into(),
                    ts: Some(Ts(500)),
                }],
            ),
            (
                "2026-11-21",
                vec![
                    TsRow {
                        k: "mid".into(),
                        ts: Some(Ts(1_500)),
                    },
                    TsRow {
                        k: "untimed".into(),
                        ts: None,
                    },
                ],
            ),
            (
                "2026-11-22",
                vec![TsRow {
                    k: "new".into(),
                    ts: Some(Ts(2_500)),
                }],
            ),
        ];
        for (date, rows) in &files {
            commit_batch(&lake, &def, date, TsRow::to_batch(rows).unwrap());
        }
        // What the manifest recorded: the latest time of each file.
        let snapshot = lake.snapshot().unwrap();
        let mut latest: Vec<Option<i64>> = snapshot
            .state
            .table_files(def.name)
            .map(|f| f.max_ts)
            .collect();
        latest.sort();
        assert_eq!(latest, vec![Some(500), Some(1_500), Some(2_500)]);
        let cache = leaked_cache();
        let decoded = decoded_session(&snapshot, &def, cache);
        let listed = session(&snapshot, std::slice::from_ref(&def), Limits::default())
            .await
            .unwrap();
        let cases = [
            // (query, files decoded: one column each)
            (
                "SELECT k FROM decoded_ts WHERE ts >= to_timestamp_millis(1000) ORDER BY k",
                2,
            ),
            (
                "SELECT k FROM decoded_ts WHERE ts > to_timestamp_millis(1500) ORDER BY k",
                1,
            ),
            (
                "SELECT k FROM decoded_ts WHERE ts IS NULL OR ts >= to_timestamp_millis(2000) ORDER BY k",
                2,
            ),
            (
                "SELECT k FROM decoded_ts WHERE ts IS NOT NULL ORDER BY k",
                3,
            ),
        ];
        for (q, files) in cases {
            let before = cache.stats();
            assert_eq!(run(&decoded, q).await, run(&listed, q).await, "{q}");
            let after = cache.stats();
            let read = (after.hits + after.misses) - (before.hits + before.misses);
            // Each kept file's `k` (and `ts`, for the filter DataFusion applies above the scan).
            assert_eq!(read, 2 * files, "{q}");
        }
        let out = run(
            &decoded,
            "SELECT k FROM decoded_ts WHERE ts >= to_timestamp_millis(1000)",
        )
        .await;
        assert!(
            out.contains("mid") && out.contains("new") && !out.contains("old"),
            "{out}"
        );
    }

    #[test]
    fn the_cache_keeps_its_budget_and_makes_room_only_from_columns_no_recent_scan_used() {
        let array = |n: usize| -> ArrayRef {
            Arc::new(datafusion::arrow::array::Int64Array::from(vec![7i64; n]))
        };
        let one = array(1000).get_array_memory_size();
        let cache = ColumnCache::new(one * 5);
        let key = |i: usize| ColumnKey {
            table: "t",
            path: PathBuf::from(format!("f{i}")),
            bytes: 1,
            column: 0,
        };
        for i in 0..4 {
            cache.put(key(i), &array(1000), 1);
        }
        assert_eq!(cache.stats().held_bytes, 4 * one);
        // Full of columns a recent scan used: a new one is served but not kept.
        cache.put(key(4), &array(1000), 2);
        cache.put(key(5), &array(1000), 2);
        assert_eq!(cache.stats().held_bytes, 5 * one);
        assert!(cache.get(&[key(5)], 2)[0].is_none());
        // Much later, key 0 used again: room is made from the stalest others, never from it.
        let late = 2 + KEEP_SCANS + 1;
        assert!(cache.get(&[key(0)], late)[0].is_some());
        cache.put(key(6), &array(1000), late);
        let found = cache.get(&[key(0), key(6)], late);
        assert!(found.iter().all(Option::is_some));
        assert!(cache.stats().held_bytes <= one * 5);
        // A column larger than a quarter of the budget is never kept.
        cache.put(key(7), &array(2000), late);
        assert!(cache.get(&[key(7)], late)[0].is_none());
    }

    #[test]
    fn a_column_its_tables_recent_scans_did_not_use_is_dropped_though_the_budget_is_not_spent() {
        let array: ArrayRef = Arc::new(datafusion::arrow::array::Int64Array::from(vec![7i64; 100]));
        let one = array.get_array_memory_size();
        let cache = ColumnCache::new(one * 100);
        let key = |table: &'static str, i: usize| ColumnKey {
            table,
            path: PathBuf::from(format!("{table}{i}")),
            bytes: 1,
            column: 0,
        };
        let live = |table: &str| {
            [
                (PathBuf::from(format!("{table}0")), 1),
                (PathBuf::from(format!("{table}1")), 1),
            ]
        };
        let first = cache.begin_scan("t", &live("t"));
        cache.put(key("t", 0), &array, first);
        cache.put(key("t", 1), &array, first);
        // A table no scan reads for a long while (a reused rule's): its column stays.
        let other = cache.begin_scan("u", &live("u"));
        cache.put(key("u", 0), &array, other);
        // Scans of "t": key 1 is read now and then, key 0 never again.
        for n in 1..=DROP_SCANS {
            let scan = cache.begin_scan("t", &live("t"));
            if n % 100 == 0 {
                assert!(cache.get(&[key("t", 1)], scan)[0].is_some());
            }
        }
        // Still held at the start of the DROP_SCANS-th scan of "t" since the one that used both.
        assert_eq!(cache.stats().held_bytes, 3 * one);
        let scan = cache.begin_scan("t", &live("t"));
        assert_eq!(cache.stats().held_bytes, 2 * one);
        let found = cache.get(&[key("t", 0), key("t", 1), key("u", 0)], scan);
        assert!(found[0].is_none() && found[1].is_some() && found[2].is_some());
        // The next scan of "u" does not drop its column either: "u" had one scan since.
        let scan = cache.begin_scan("u", &live("u"));
        assert!(cache.get(&[key("u", 0)], scan)[0].is_some());
    }
}
