//! Read-only, bounded SQL over the lake for analysts, the dashboard console and the PostgreSQL endpoint.
//!
//! One [`Guard`] applies the same rules on every path: one query at a time
//! (no DDL, DML or statements such as SET), no table functions (no file
//! reading, no `generate_series` row bombs), a query size and nesting limit
//! checked before planning ([`bounds`]), function calls bounded by the
//! session's memory budget ([`crate::lake::bounded`]), a memory pool per
//! session, a time limit per query that also stops streaming, planning and
//! execution on a runtime of their own ([`bounds::runtime`]), a row limit
//! where results are shown to people, the tables a role may read
//! ([`TableAccess`]), and a log line per query.

pub mod bounds;
pub mod docs;
pub mod pg;

use std::sync::Arc;
use std::time::{Duration, Instant};

use datafusion::arrow::array::RecordBatch;
use datafusion::error::DataFusionError;
use datafusion::execution::SendableRecordBatchStream;
use datafusion::prelude::SessionContext;
use datafusion::sql::parser::{DFParser, Statement as DFStatement};
use datafusion::sql::sqlparser::ast::Statement;
use datafusion::sql::sqlparser::dialect::GenericDialect;
use futures::StreamExt;

use crate::lake::sql::{Limits, session};
use crate::lake::{Lake, Snapshot, tables};

/// Limits applied to analysts' queries.
#[derive(Debug, Clone, Copy)]
pub struct QueryLimits {
    pub memory_bytes: usize,
    pub timeout: Duration,
    /// Rows returned at most (None: all).
    pub max_rows: Option<usize>,
}

impl Default for QueryLimits {
    fn default() -> Self {
        QueryLimits {
            memory_bytes: 512 << 20,
            timeout: Duration::from_secs(30),
            max_rows: None,
        }
    }
}

/// Why a query was refused or stopped.
#[derive(Debug, thiserror::Error)]
pub enum SqlError {
    #[error("refused: {0}")]
    Refused(String),
    #[error("stopped: {words} {0:?}", words = crate::lake::sql::DEADLINE_PASSED)]
    Timeout(Duration),
    #[error("{0}")]
    DataFusion(#[from] DataFusionError),
    #[error("the SQL runtime failed: {0}")]
    Runtime(String),
    #[error(transparent)]
    Lake(#[from] crate::lake::LakeError),
}

/// Every table Vigie writes, for registration.
pub fn all_tables() -> Vec<tables::TableDef> {
    crate::catalog::tables()
}

/// The analysts' views (`queries/views/*.sql`), shipped with the binary: (name, doc, SELECT).
pub const VIEW_FILES: [&str; 6] = [
    include_str!("../../queries/views/account_risk.sql"),
    include_str!("../../queries/views/daily_volumes.sql"),
    include_str!("../../queries/views/departures_when_losing.sql"),
    include_str!("../../queries/views/pair_stake_flows.sql"),
    include_str!("../../queries/views/rejected_attempts_by_cause.sql"),
    include_str!("../../queries/views/review_state.sql"),
];

/// A view: its name, documentation and query.
#[derive(Debug, Clone)]
pub struct View {
    pub name: String,
    pub doc: String,
    pub sql: String,
}

/// Parses the view files (`-- view:` and `-- doc:` header lines, then the SELECT).
pub fn views() -> Vec<View> {
    VIEW_FILES
        .iter()
        .map(|text| {
            let mut name = String::new();
            let mut doc = String::new();
            let mut body = Vec::new();
            for line in text.lines() {
                if let Some(v) = line.strip_prefix("-- view:") {
                    name = v.trim().to_string();
                } else if let Some(d) = line.strip_prefix("-- doc:") {
                    doc = d.trim().to_string();
                } else {
                    body.push(line);
                }
            }
            View {
                name,
                doc,
                sql: body.join("\n"),
            }
        })
        .collect()
}

/// A query an analyst can run in one click (dashboard console, `vigie sql --saved`).
#[derive(Debug, Clone, serde::Serialize)]
pub struct SavedQuery {
    /// Group heading: `view`, `panel` or `rule`.
    pub group: &'static str,
    /// Short name (`views/account_risk`, `dashboard/flags_per_day_by_rule`, `detect/chip_dumping`).
    pub name: String,
    pub doc: String,
    pub sql: String,
}

/// The dashboard panels' queries, shipped with the binary.
pub const PANEL_FILES: [(&str, &str); 4] = [
    (
        "flags_per_day_by_rule",
        include_str!("../../queries/dashboard/flags_per_day_by_rule.sql"),
    ),
    (
        "rejected_attempts_per_day_by_kind",
        include_str!("../../queries/dashboard/rejected_attempts_per_day_by_kind.sql"),
    ),
    (
        "departure_timeout_rates",
        include_str!("../../queries/dashboard/departure_timeout_rates.sql"),
    ),
    (
        "flagged_pair_stake_flows",
        include_str!("../../queries/dashboard/flagged_pair_stake_flows.sql"),
    ),
];

/// Every saved query of `queries/`: the views, the dashboard panels and the
/// detection rules (with their default thresholds).
pub fn saved_queries() -> Vec<SavedQuery> {
    let mut out: Vec<SavedQuery> = views()
        .into_iter()
        .map(|v| SavedQuery {
            group: "view",
            sql: format!("SELECT * FROM {}", v.name),
            name: format!("views/{}", v.name),
            doc: v.doc,
        })
        .collect();
    for (name, text) in PANEL_FILES {
        let doc = text
            .lines()
            .take_while(|l| l.starts_with("--"))
            .map(|l| l.trim_start_matches('-').trim())
            .collect::<Vec<_>>()
            .join(" ");
        out.push(SavedQuery {
            group: "panel",
            name: format!("dashboard/{name}"),
            doc,
            sql: text.to_string(),
        });
    }
    if let Ok(rules) = crate::detect::rules::builtin() {
        for r in rules {
            out.push(SavedQuery {
                group: "rule",
                name: format!("detect/{}", r.id),
                sql: r
                    .render(&std::collections::BTreeMap::new())
                    .trim()
                    .to_string(),
                doc: r.title,
            });
        }
    }
    out
}

/// Registers the views in a session.
pub async fn register_views(ctx: &SessionContext) -> Result<(), DataFusionError> {
    register_views_without(ctx, &[]).await
}

/// Registers the views that read none of the `hidden` tables.
async fn register_views_without(
    ctx: &SessionContext,
    hidden: &[&str],
) -> Result<(), DataFusionError> {
    for v in views() {
        if hidden.iter().any(|t| v.sql.contains(t)) {
            continue;
        }
        ctx.sql(&format!("CREATE VIEW {} AS {}", v.name, v.sql))
            .await?
            .collect()
            .await?;
    }
    Ok(())
}

/// Which tables and views a session registers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableAccess {
    /// Every table and view (admins, compliance, the CLI: whoever holds the lake directory).
    All,
    /// Everything but the staff audit log and the views over it (analysts: `/audit` is closed to them too).
    WithoutAudit,
}

/// Tables an analyst session does not register under [`TableAccess::WithoutAudit`].
const AUDIT_TABLES: [&str; 1] = ["audit_log"];

impl TableAccess {
    /// The tables this access leaves out.
    fn hidden_tables(self) -> &'static [&'static str] {
        match self {
            TableAccess::All => &[],
            TableAccess::WithoutAudit => &AUDIT_TABLES,
        }
    }

    /// Whether a query text may be run under this access: it names none of the tables left
    /// out, nor a view over them (the console lists only the saved queries a role can run).
    pub fn allows(self, sql: &str) -> bool {
        let hidden = self.hidden_tables();
        let views = views();
        let hidden_views = views
            .iter()
            .filter(|v| hidden.iter().any(|t| v.sql.contains(t)))
            .map(|v| v.name.as_str());
        !hidden
            .iter()
            .copied()
            .chain(hidden_views)
            .any(|name| sql.contains(name))
    }
}

/// A read-only SQL session over one snapshot of the lake.
pub struct Guard {
    ctx: SessionContext,
    snapshot: Arc<Snapshot>,
    limits: QueryLimits,
    /// The deadline the session's own planner puts in plans (set by callers that run one
    /// query at a time on the session and plan it themselves: the PostgreSQL endpoint).
    deadline: Arc<crate::lake::sql::SessionDeadline>,
}

impl Guard {
    /// Opens a session on the latest committed snapshot, with every table.
    pub async fn open(lake: &Lake, limits: QueryLimits) -> Result<Guard, SqlError> {
        let snapshot = lake.snapshot()?;
        Guard::on(snapshot, limits).await
    }

    /// Opens a session on a given snapshot, with every table.
    pub async fn on(snapshot: Snapshot, limits: QueryLimits) -> Result<Guard, SqlError> {
        Guard::with_access(snapshot, limits, TableAccess::All).await
    }

    /// Opens a session on a given snapshot with the tables `access` allows.
    pub async fn with_access(
        snapshot: Snapshot,
        limits: QueryLimits,
        access: TableAccess,
    ) -> Result<Guard, SqlError> {
        let deadline = Arc::new(crate::lake::sql::SessionDeadline::default());
        let lim = Limits {
            memory_bytes: limits.memory_bytes,
            deadline: Some(Arc::clone(&deadline)),
            spill: Some(crate::lake::sql::analyst_spill()?),
            ..Limits::default()
        };
        let mut tables = all_tables();
        let hidden = access.hidden_tables();
        tables.retain(|t| !hidden.contains(&t.name));
        let ctx = session(&snapshot, &tables, lim).await?;
        register_views_without(&ctx, hidden).await?;
        for f in ["generate_series", "range", "unnest"] {
            ctx.deregister_udtf(f);
        }
        Ok(Guard {
            ctx,
            snapshot: Arc::new(snapshot),
            limits,
            deadline,
        })
    }

    /// The snapshot the session reads.
    pub fn snapshot(&self) -> &Snapshot {
        &self.snapshot
    }

    /// The session's planner deadline: [`crate::lake::sql::SessionDeadline::start`] before
    /// planning a query outside [`Guard::query`] puts the time limit inside its plan.
    pub fn deadline(&self) -> &Arc<crate::lake::sql::SessionDeadline> {
        &self.deadline
    }

    /// The underlying DataFusion session (for registering views).
    pub fn context(&self) -> &SessionContext {
        &self.ctx
    }

    /// Checks that `sql` is one read query (or `SHOW`) within the size and nesting limits.
    pub fn check(sql: &str) -> Result<(), SqlError> {
        bounds::check_size(sql)?;
        let statements = DFParser::parse_sql_with_dialect(sql, &GenericDialect {})
            .map_err(|e| SqlError::Refused(e.to_string()))?;
        let statements: Vec<DFStatement> = statements.into_iter().collect();
        match statements.len() {
            0 => return Err(SqlError::Refused("empty query".into())),
            1 => {}
            n => {
                return Err(SqlError::Refused(format!(
                    "{n} statements in one query; send one statement at a time"
                )));
            }
        }
        bounds::check_shape(&statements)?;
        for s in &statements {
            match s {
                DFStatement::Statement(st) => match st.as_ref() {
                    Statement::Query(_)
                    | Statement::ShowVariable { .. }
                    | Statement::ShowTables { .. }
                    | Statement::ShowColumns { .. }
                    | Statement::ShowFunctions { .. } => {}
                    Statement::Explain { statement, .. }
                        if matches!(statement.as_ref(), Statement::Query(_)) => {}
                    other => {
                        let text = other.to_string();
                        let verb = text
                            .split_whitespace()
                            .next()
                            .unwrap_or("statement")
                            .to_uppercase();
                        return Err(SqlError::Refused(format!(
                            "{verb} is not allowed: the lake is read-only"
                        )));
                    }
                },
                DFStatement::CreateExternalTable(_) => {
                    return Err(SqlError::Refused(
                        "CREATE EXTERNAL TABLE is not allowed: the lake is read-only".into(),
                    ));
                }
                DFStatement::CopyTo(_) => {
                    return Err(SqlError::Refused(
                        "COPY is not allowed: the lake is read-only".into(),
                    ));
                }
                DFStatement::Explain(_) => {}
                _ => return Err(SqlError::Refused("only queries are allowed".into())),
            }
        }
        Ok(())
    }

    /// Starts one read query and returns its stream (the caller applies [`Guard::collect`] or streams it).
    ///
    /// Planning runs where this is awaited: callers outside [`Guard::query`] run it on [`bounds::runtime`].
    pub async fn stream(&self, sql: &str) -> Result<SendableRecordBatchStream, SqlError> {
        plan_stream(&self.ctx, sql, self.limits.timeout).await
    }

    /// Runs a read query to completion within the time and row limits, logging who ran what.
    pub async fn query(&self, sql: &str, who: &str) -> Result<Vec<RecordBatch>, SqlError> {
        self.query_rows(sql, who, self.limits.max_rows).await
    }

    /// Like [`Guard::query`] with another row limit (the console asks for one row more than it shows).
    pub async fn query_rows(
        &self,
        sql: &str,
        who: &str,
        max_rows: Option<usize>,
    ) -> Result<Vec<RecordBatch>, SqlError> {
        Ok(self.query_within(sql, who, max_rows, None).await?.0)
    }

    /// Like [`Guard::query_rows`], also stopping once the rows collected hold `max_bytes` of
    /// Arrow memory (results are held outside the session's memory pool, so a download of wide
    /// rows must be bounded by size as well as by rows); the flag says whether it stopped there.
    pub async fn query_within(
        &self,
        sql: &str,
        who: &str,
        max_rows: Option<usize>,
        max_bytes: Option<usize>,
    ) -> Result<(Vec<RecordBatch>, bool), SqlError> {
        let started = Instant::now();
        let result = self.query_inner(sql, max_rows, max_bytes).await;
        let rows: usize = result
            .as_ref()
            .map(|(b, _)| b.iter().map(RecordBatch::num_rows).sum())
            .unwrap_or(0);
        tracing::info!(
            target: "vigie::sql",
            who,
            query = sql,
            ms = started.elapsed().as_millis() as u64,
            rows,
            ok = result.is_ok(),
            "analyst query"
        );
        result
    }

    /// Runs a query of Vigie's own (catalogue listings) without the analyst checks.
    pub async fn query_internal(&self, sql: &str) -> Result<Vec<RecordBatch>, SqlError> {
        Ok(self.ctx.sql(sql).await?.collect().await?)
    }

    async fn query_inner(
        &self,
        sql: &str,
        max_rows: Option<usize>,
        max_bytes: Option<usize>,
    ) -> Result<(Vec<RecordBatch>, bool), SqlError> {
        let ctx = self.ctx.clone();
        let sql = sql.to_owned();
        let limit = self.limits.timeout;
        bounds::run_bounded(limit, async move {
            let mut stream = plan_stream(&ctx, &sql, limit).await?;
            let schema = stream.schema();
            let mut out = Vec::new();
            let (mut rows, mut bytes, mut cut) = (0usize, 0usize, false);
            while let Some(batch) = stream.next().await {
                let batch = batch?;
                let size = slice_bytes(&batch);
                if let Some(m) = max_bytes
                    && bytes + size > m
                {
                    // Only the rows that fit: a few wide rows (40 values of 16 MB) made one batch of
                    // 640 MB, which the page and the download then held several times over.
                    let room = m - bytes;
                    let (mut lo, mut hi) = (0, batch.num_rows());
                    while lo < hi {
                        let mid = (lo + hi).div_ceil(2);
                        if slice_bytes(&batch.slice(0, mid)) <= room {
                            lo = mid;
                        } else {
                            hi = mid - 1;
                        }
                    }
                    if lo > 0 {
                        out.push(batch.slice(0, lo));
                    }
                    cut = true;
                    break;
                }
                rows += batch.num_rows();
                bytes += size;
                out.push(batch);
                if max_rows.is_some_and(|m| rows >= m) {
                    break;
                }
                if max_bytes.is_some_and(|m| bytes >= m) {
                    // Cut only if rows remain (read on to the next batch that has some, and drop it).
                    cut = loop {
                        match stream.next().await {
                            Some(next) => {
                                if next?.num_rows() > 0 {
                                    break true;
                                }
                            }
                            None => break false,
                        }
                    };
                    break;
                }
            }
            if let Some(m) = max_rows {
                out = truncate(out, m);
            }
            if out.is_empty() {
                out.push(RecordBatch::new_empty(schema));
            }
            Ok((out, cut))
        })
        .await
    }
}

/// Checks and plans one read query in `ctx`, and starts it; past `limit` from now, its operators
/// stop at their next batch ([`crate::lake::sql::DeadlineExec`]).
async fn plan_stream(
    ctx: &SessionContext,
    sql: &str,
    limit: Duration,
) -> Result<SendableRecordBatchStream, SqlError> {
    Guard::check(sql)?;
    let opts = datafusion::execution::context::SQLOptions::new()
        .with_allow_ddl(false)
        .with_allow_dml(false)
        .with_allow_statements(false);
    let df = ctx.sql_with_options(sql, opts).await?;
    let task = Arc::new(df.task_ctx());
    let plan = crate::lake::sql::DeadlineExec::wrap(df.create_physical_plan().await?, limit)?;
    Ok(datafusion::physical_plan::execute_stream(plan, task)?)
}

/// What a batch's rows take once held or rendered cell by cell (the console's page and its CSV
/// download, through [`Guard::query_within`]): their own share of the buffers (not what a slice
/// shares with other batches), each string or binary value of a top-level view or dictionary
/// column at its length even where the batch stores it once (one long value repeated), and every
/// cell at least [`CELL_BYTES`] (a column of nulls takes no buffer, but each of its cells becomes
/// a value). Views and dictionaries nested in lists or structs count as stored.
/// Before, 250 columns of nulls counted nothing and a download of them took the server to
/// 6.4 GB, as did a long value repeated by a view array.
fn slice_bytes(batch: &RecordBatch) -> usize {
    batch
        .columns()
        .iter()
        .map(column_bytes)
        .fold(0usize, usize::saturating_add)
}

/// The least a cell takes once held as a value of its own (a `String` or `Option<String>`).
const CELL_BYTES: usize = 24;

fn column_bytes(c: &datafusion::arrow::array::ArrayRef) -> usize {
    use datafusion::arrow::array::{Array, AsArray};
    use datafusion::arrow::datatypes::DataType;
    let cells = c.len().saturating_mul(CELL_BYTES);
    let data = match c.data_type() {
        // Each view's length (the bounded functions' reading of a value's size).
        DataType::Utf8View | DataType::BinaryView => crate::lake::bounded::array_lengths(c)
            .iter()
            .fold(0usize, |n, &l| n.saturating_add(l as usize)),
        DataType::Dictionary(_, _) => {
            let dict = c.as_any_dictionary();
            let values = dict.values();
            // Each value's size, then each row's.
            let sizes: Vec<usize> = (0..values.len())
                .map(|i| column_bytes(&values.slice(i, 1)))
                .collect();
            dict.normalized_keys()
                .iter()
                .map(|&k| sizes.get(k).copied().unwrap_or(0))
                .fold(0usize, usize::saturating_add)
        }
        _ => c
            .to_data()
            .get_slice_memory_size()
            .unwrap_or_else(|_| c.get_array_memory_size()),
    };
    data.saturating_add(cells)
}

fn truncate(batches: Vec<RecordBatch>, max: usize) -> Vec<RecordBatch> {
    let mut left = max;
    let mut out = Vec::new();
    for b in batches {
        if left == 0 {
            break;
        }
        let take = b.num_rows().min(left);
        left -= take;
        out.push(b.slice(0, take));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{ArrayRef, DictionaryArray, NullArray, StringArray};
    use datafusion::arrow::datatypes::Int32Type;

    #[test]
    fn analyst_sessions_share_one_bounded_spill() {
        let dir = std::env::temp_dir().join(format!("vigie-spill-{}", std::process::id()));
        let lake = crate::catalog::open(&dir).unwrap();
        let rt = tokio::runtime::Runtime::new().unwrap();
        let guard = rt
            .block_on(Guard::on(lake.snapshot().unwrap(), QueryLimits::default()))
            .unwrap();
        let other = rt
            .block_on(Guard::on(lake.snapshot().unwrap(), QueryLimits::default()))
            .unwrap();
        let spill = guard.ctx.runtime_env().disk_manager.clone();
        assert_eq!(
            spill.max_temp_directory_size(),
            crate::lake::sql::ANALYST_SPILL_BYTES
        );
        assert!(std::sync::Arc::ptr_eq(
            &spill,
            &other.ctx.runtime_env().disk_manager
        ));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn cells_count_as_rendered_not_as_stored() {
        // A column of nulls stores nothing; each of its cells is a value once held or rendered.
        let nulls: ArrayRef = std::sync::Arc::new(NullArray::new(1000));
        assert!(column_bytes(&nulls) >= 1000 * CELL_BYTES);
        // A dictionary repeating one long value stores it once; every row renders it.
        let long = "x".repeat(1000);
        let values: ArrayRef = std::sync::Arc::new(StringArray::from(vec![long.as_str()]));
        let dict: ArrayRef = std::sync::Arc::new(
            DictionaryArray::<Int32Type>::try_new(vec![0; 5000].into(), values).unwrap(),
        );
        assert!(column_bytes(&dict) >= 5000 * 1000);
        // A plain column: its bytes and the cells.
        let plain: ArrayRef = std::sync::Arc::new(StringArray::from(vec!["ab"; 10]));
        assert!(column_bytes(&plain) >= 10 * (2 + CELL_BYTES));
    }
}
