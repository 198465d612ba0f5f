//! The lake in DataFusion: every table registered from one committed snapshot, read-only.
//!
//! Tables are DataFusion listing tables (Hive partitions, Parquet pruning,
//! declared sort order) over a read-only object store that lists exactly the
//! snapshot's committed files: files being written, and files removed by a
//! later commit but still on disk, are invisible; writes are refused. The files'
//! statistics and footers are cached for the whole process (a file never changes).

use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use datafusion::arrow::datatypes::DataType;
use datafusion::datasource::MemTable;
use datafusion::datasource::file_format::parquet::ParquetFormat;
use datafusion::datasource::listing::{
    ListingOptions, ListingTable, ListingTableConfig, ListingTableUrl,
};
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::logical_expr::{SortExpr, col};
use datafusion::prelude::{SessionConfig, SessionContext};
use futures::stream::{self, BoxStream, StreamExt};
use object_store::local::LocalFileSystem;
use object_store::path::Path as ObjPath;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult,
};

use super::Snapshot;
use super::bounded::{BoundFunctions, value_cap};
use super::tables::TableDef;

/// The catalog every session registers the lake's tables in (its default catalog).
pub const CATALOG: &str = "vigie";

/// The URL the snapshot store is registered under.
pub const STORE_URL: &str = "vigie://lake/";

/// Read-only object store over a snapshot's committed files.
#[derive(Debug)]
pub struct SnapshotStore {
    root: std::path::PathBuf,
    /// Committed files: object path (relative to the root) and size.
    files: Vec<(String, u64)>,
    local: LocalFileSystem,
}

impl fmt::Display for SnapshotStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SnapshotStore({})", self.root.display())
    }
}

impl SnapshotStore {
    pub fn new(snapshot: &Snapshot) -> SnapshotStore {
        let mut files: Vec<(String, u64)> = snapshot
            .state
            .files
            .values()
            .map(|f| (f.path.clone(), f.bytes))
            .collect();
        files.sort();
        SnapshotStore {
            root: snapshot.root().to_path_buf(),
            files,
            local: LocalFileSystem::new(),
        }
    }

    fn absolute(&self, location: &ObjPath) -> object_store::Result<ObjPath> {
        let rel = location.as_ref();
        if !self.files.iter().any(|(p, _)| p == rel) {
            return Err(object_store::Error::NotFound {
                path: rel.to_string(),
                source: "not a committed file of this snapshot".into(),
            });
        }
        let fin = self.root.join(rel);
        let path = if fin.exists() {
            fin
        } else {
            super::pending_path(&fin)
        };
        ObjPath::from_absolute_path(&path).map_err(object_store::Error::from)
    }

    fn meta(&self, rel: &str, size: u64) -> ObjectMeta {
        ObjectMeta {
            location: ObjPath::from(rel),
            last_modified: chrono::DateTime::<chrono::Utc>::UNIX_EPOCH,
            size,
            e_tag: None,
            version: None,
        }
    }

    fn under<'a>(
        &'a self,
        prefix: Option<&ObjPath>,
    ) -> impl Iterator<Item = &'a (String, u64)> + 'a {
        let prefix = prefix
            .map(|p| format!("{}/", p.as_ref().trim_end_matches('/')))
            .filter(|p| p != "/");
        self.files.iter().filter(move |(p, _)| {
            prefix
                .as_ref()
                .is_none_or(|pre| p.starts_with(pre.as_str()))
        })
    }
}

fn read_only(op: &str) -> object_store::Error {
    object_store::Error::NotSupported {
        source: format!("the lake is read-only here ({op})").into(),
    }
}

#[async_trait]
impl ObjectStore for SnapshotStore {
    async fn put_opts(
        &self,
        _: &ObjPath,
        _: PutPayload,
        _: PutOptions,
    ) -> object_store::Result<PutResult> {
        Err(read_only("put"))
    }

    async fn put_multipart_opts(
        &self,
        _: &ObjPath,
        _: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        Err(read_only("put"))
    }

    async fn get_opts(
        &self,
        location: &ObjPath,
        options: GetOptions,
    ) -> object_store::Result<GetResult> {
        let abs = self.absolute(location)?;
        let mut r = self.local.get_opts(&abs, options).await?;
        r.meta.location = location.clone();
        Ok(r)
    }

    async fn get_ranges(
        &self,
        location: &ObjPath,
        ranges: &[Range<u64>],
    ) -> object_store::Result<Vec<Bytes>> {
        let abs = self.absolute(location)?;
        self.local.get_ranges(&abs, ranges).await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<ObjPath>>,
    ) -> BoxStream<'static, object_store::Result<ObjPath>> {
        locations.map(|_| Err(read_only("delete"))).boxed()
    }

    fn list(
        &self,
        prefix: Option<&ObjPath>,
    ) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        let items: Vec<object_store::Result<ObjectMeta>> = self
            .under(prefix)
            .map(|(p, size)| Ok(self.meta(p, *size)))
            .collect();
        stream::iter(items).boxed()
    }

    async fn list_with_delimiter(
        &self,
        prefix: Option<&ObjPath>,
    ) -> object_store::Result<ListResult> {
        let base = prefix
            .map(|p| p.as_ref().trim_end_matches('/').to_string())
            .unwrap_or_default();
        let skip = if base.is_empty() { 0 } else { base.len() + 1 };
        let mut common = std::collections::BTreeSet::new();
        let mut objects = Vec::new();
        for (p, size) in self.under(prefix) {
            let rest = &p[skip..];
            match rest.split_once('/') {
                Some((dir, _)) => {
                    common.insert(if base.is_empty() {
                        dir.to_string()
                    } else {
                        format!("{base}/{dir}")
                    });
                }
                None => objects.push(self.meta(p, *size)),
            }
        }
        Ok(ListResult {
            common_prefixes: common.into_iter().map(ObjPath::from).collect(),
            objects,
        })
    }

    async fn copy_opts(
        &self,
        _: &ObjPath,
        _: &ObjPath,
        _: CopyOptions,
    ) -> object_store::Result<()> {
        Err(read_only("copy"))
    }
}

/// Resource limits of a SQL session.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Memory pool of the session (bytes); operators that can spill do so beyond it.
    pub memory_bytes: usize,
    /// Worker threads per query.
    pub partitions: usize,
    /// The deadline of the query being planned, for sessions that run one query at a time
    /// (the PostgreSQL endpoint's): its plans get [`DeadlineExec`] when one is set.
    pub deadline: Option<Arc<SessionDeadline>>,
    /// Tables served from the process's cache of decoded columns ([`super::decoded`]) instead of
    /// read from Parquet at each query: the detection passes' (a pass reads the same window many
    /// times, and the next pass mostly the same files).
    pub decoded: &'static [&'static str],
    /// Where operators spill beyond the memory pool, with its cap on disk: `None` gives the
    /// session a spill manager of its own with DataFusion's default cap (100 GiB, the pipeline's
    /// own queries); analysts' sessions share [`analyst_spill`].
    pub spill: Option<Arc<datafusion::execution::disk_manager::DiskManager>>,
}

/// Most bytes the analysts' queries may spill to disk, all together.
pub const ANALYST_SPILL_BYTES: u64 = 4 << 30;

/// The spill manager every analyst session shares: at most [`ANALYST_SPILL_BYTES`] on disk
/// together, in the system's temporary directory (a query past it fails with "resources
/// exhausted", as past its memory pool). Without it each session could spill up to DataFusion's
/// 100 GiB: one query filled this machine's disk.
pub fn analyst_spill()
-> datafusion::error::Result<Arc<datafusion::execution::disk_manager::DiskManager>> {
    static SPILL: std::sync::OnceLock<Arc<datafusion::execution::disk_manager::DiskManager>> =
        std::sync::OnceLock::new();
    if let Some(d) = SPILL.get() {
        return Ok(Arc::clone(d));
    }
    let built = Arc::new(
        datafusion::execution::disk_manager::DiskManagerBuilder::default()
            .with_max_temp_directory_size(ANALYST_SPILL_BYTES)
            .build()?,
    );
    Ok(Arc::clone(SPILL.get_or_init(|| built)))
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            memory_bytes: 1 << 30,
            partitions: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(2),
            deadline: None,
            decoded: &[],
            spill: None,
        }
    }
}

/// The deadline (and time limit) of the next query a session plans.
#[derive(Debug, Default)]
pub struct SessionDeadline(std::sync::Mutex<Option<(std::time::Instant, std::time::Duration)>>);

impl SessionDeadline {
    /// The next query planned must end within `limit` from now.
    pub fn start(&self, limit: std::time::Duration) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) =
            Some((std::time::Instant::now() + limit, limit));
    }

    fn get(&self) -> Option<(std::time::Instant, std::time::Duration)> {
        *self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The physical optimizer rule that puts a session's current deadline into each plan.
#[derive(Debug)]
struct DeadlineRule(Arc<SessionDeadline>);

impl datafusion::physical_optimizer::PhysicalOptimizerRule for DeadlineRule {
    fn optimize(
        &self,
        plan: Arc<dyn datafusion::physical_plan::ExecutionPlan>,
        _config: &datafusion::config::ConfigOptions,
    ) -> datafusion::error::Result<Arc<dyn datafusion::physical_plan::ExecutionPlan>> {
        match self.0.get() {
            Some((deadline, limit)) => DeadlineExec::wrap_until(plan, deadline, limit),
            None => Ok(plan),
        }
    }

    fn name(&self) -> &str {
        "VigieDeadline"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// A text value as an SQL string literal (single quotes doubled), for ids put into a query.
pub fn literal(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// A DataFusion session with every lake table of the snapshot registered, its function
/// calls bounded by the memory budget (`lake::bounded`).
pub async fn session(
    snapshot: &Snapshot,
    tables: &[TableDef],
    limits: Limits,
) -> datafusion::error::Result<SessionContext> {
    session_with_caches(snapshot, tables, limits, shared_file_caches()?).await
}

/// [`session`] with the given caches of file statistics and footers.
async fn session_with_caches(
    snapshot: &Snapshot,
    tables: &[TableDef],
    limits: Limits,
    caches: datafusion::execution::cache::cache_manager::CacheManagerConfig,
) -> datafusion::error::Result<SessionContext> {
    let mut runtime = RuntimeEnvBuilder::new()
        .with_memory_limit(limits.memory_bytes, 1.0)
        .with_cache_manager(caches);
    runtime.disk_manager = limits.spill.clone();
    let runtime = runtime.build_arc()?;
    let config = SessionConfig::new()
        .with_target_partitions(limits.partitions)
        .with_information_schema(true)
        .with_default_catalog_and_schema(CATALOG, "lake");
    let state = datafusion::execution::SessionStateBuilder::new()
        .with_config(config)
        .with_runtime_env(runtime)
        .with_default_features()
        .with_analyzer_rule(Arc::new(BoundFunctions::new(value_cap(
            limits.memory_bytes,
        ))))
        .with_optimizer_rule(Arc::new(BoundFunctions::new(value_cap(
            limits.memory_bytes,
        ))))
        .with_physical_optimizer_rule(Arc::new(YieldOften));
    let state = match &limits.deadline {
        Some(d) => state.with_physical_optimizer_rule(Arc::new(DeadlineRule(Arc::clone(d)))),
        None => state,
    }
    .build();
    let ctx = SessionContext::new_with_state(state);
    super::functions::register(&ctx);
    let url = url::Url::parse(STORE_URL)
        .map_err(|e| datafusion::error::DataFusionError::External(Box::new(e)))?;
    ctx.register_object_store(&url, Arc::new(SnapshotStore::new(snapshot)));
    for def in tables {
        if let Some(why) = snapshot.vacuumed(def.name) {
            ctx.register_table(def.name, Arc::new(Vacuumed::new(def, why)))?;
        } else if limits.decoded.contains(&def.name) {
            let table = super::decoded::DecodedTable::new(snapshot, def);
            ctx.register_table(def.name, Arc::new(table))?;
        } else {
            register(&ctx, snapshot, def).await?;
        }
    }
    Ok(ctx)
}

/// The caches of the lake files' statistics and Parquet footers, shared by every session of the
/// process: the streaming job's detection passes, and the dashboard's requests, read the same files
/// again and again, and a session would otherwise read each file's footer anew (once per query
/// that scans it). A lake file never changes: its name carries its writer's random id and a
/// number, and the size is checked on every use. Bounded by DataFusion's default limits (20 MiB
/// of statistics, 50 MiB of footers, least recently used first out). The listing cache is not
/// shared: each session lists its own snapshot's files.
fn shared_file_caches()
-> datafusion::error::Result<datafusion::execution::cache::cache_manager::CacheManagerConfig> {
    use datafusion::execution::cache::cache_manager::{CacheManager, CacheManagerConfig};
    static SHARED: std::sync::OnceLock<CacheManagerConfig> = std::sync::OnceLock::new();
    if let Some(c) = SHARED.get() {
        return Ok(c.clone());
    }
    let made = CacheManager::try_new(&CacheManagerConfig::default())?;
    let config = CacheManagerConfig::default()
        .with_file_statistics_cache(made.get_file_statistic_cache())
        .with_file_metadata_cache(Some(made.get_file_metadata_cache()));
    Ok(SHARED.get_or_init(|| config).clone())
}

/// What the shared caches of file statistics and footers hold after [`forget_removed_files`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FileCachesSweep {
    /// Entries dropped (statistics and footers together).
    pub dropped: usize,
    /// Files whose statistics are held, and their size by DataFusion's count.
    pub statistics: usize,
    pub statistics_bytes: usize,
    /// Files whose footer is held, and their size by DataFusion's count.
    pub footers: usize,
    pub footers_bytes: usize,
}

/// Drops from the process's shared caches of file statistics and footers the entries of files
/// that are not in `snapshot` (compacted away, vacuumed, or rewritten tables' older files).
///
/// Left alone they stay until the caches' bounds push them out, and a stream that writes and
/// compacts files every second fills both caches to their bounds within minutes (about 13 in run
/// U's profile, docs/performance.md). The caches' keys are paths relative to a lake's root,
/// without the lake: in a process that reads several lakes, an entry of another lake is dropped
/// too, which costs that lake one more read of the footer, never a wrong value.
pub fn forget_removed_files(snapshot: &Snapshot) -> datafusion::error::Result<FileCachesSweep> {
    Ok(forget_in(&shared_file_caches()?, snapshot))
}

fn forget_in(
    caches: &datafusion::execution::cache::cache_manager::CacheManagerConfig,
    snapshot: &Snapshot,
) -> FileCachesSweep {
    let live: std::collections::HashSet<&str> = snapshot
        .state
        .files
        .values()
        .map(|f| f.path.as_str())
        .collect();
    let mut sweep = FileCachesSweep::default();
    if let Some(c) = &caches.file_statistics_cache {
        let (held, bytes) = forget_dead(c.as_ref(), |k| k.path.as_ref(), &live, &mut sweep.dropped);
        (sweep.statistics, sweep.statistics_bytes) = (held, bytes);
    }
    if let Some(c) = &caches.file_metadata_cache {
        let (held, bytes) = forget_dead(c.as_ref(), |k| k.as_ref(), &live, &mut sweep.dropped);
        (sweep.footers, sweep.footers_bytes) = (held, bytes);
    }
    sweep
}

/// Removes from `cache` the entries whose file (`path` of the key) is not in `live`, counting them
/// in `dropped`; returns the entries left and their size by DataFusion's count.
fn forget_dead<K, V>(
    cache: &dyn datafusion::execution::cache::Cache<K, V>,
    path: impl Fn(&K) -> &str,
    live: &std::collections::HashSet<&str>,
    dropped: &mut usize,
) -> (usize, usize)
where
    K: datafusion::execution::cache::CacheKey,
    V: datafusion::execution::cache::CacheValue,
{
    let (mut held, mut bytes) = (0, 0);
    for (key, info) in cache.list_entries() {
        if live.contains(path(&key)) {
            held += 1;
            bytes += info.size_bytes;
        } else if cache.remove(&key).is_some() {
            *dropped += 1;
        }
    }
    (held, bytes)
}

/// The words of every error that stops a query at its time limit (the session's deadline, the SQL
/// guard's timer), which the pg endpoint recognises to answer PostgreSQL's statement timeout.
pub const DEADLINE_PASSED: &str = "the query ran longer than";

/// Makes every operator's input yield to the scheduler now and then (tokio's budget).
///
/// DataFusion only makes its data sources cooperative; an operator that loops over an
/// always-ready input (a nested-loop join whose filter never matches) would otherwise never
/// yield, so a query stopped at its time limit would keep its thread busy to the end. Wrapping
/// every input lets a dropped query's tasks stop at their next batch.
#[derive(Debug)]
struct YieldOften;

impl datafusion::physical_optimizer::PhysicalOptimizerRule for YieldOften {
    fn optimize(
        &self,
        plan: Arc<dyn datafusion::physical_plan::ExecutionPlan>,
        _config: &datafusion::config::ConfigOptions,
    ) -> datafusion::error::Result<Arc<dyn datafusion::physical_plan::ExecutionPlan>> {
        use datafusion::common::tree_node::{Transformed, TreeNode};
        use datafusion::physical_plan::coop::CooperativeExec;
        use datafusion::physical_plan::execution_plan::{
            ChildrenPropertiesMode, ReplaceChildrenOptions,
        };
        plan.transform_up(|node| {
            if node.children().is_empty() || node.is::<CooperativeExec>() {
                return Ok(Transformed::no(node));
            }
            let children: Vec<Arc<dyn datafusion::physical_plan::ExecutionPlan>> = node
                .children()
                .into_iter()
                .map(|c| {
                    if c.is::<CooperativeExec>() {
                        Arc::clone(c)
                    } else {
                        Arc::new(CooperativeExec::new(Arc::clone(c))) as _
                    }
                })
                .collect();
            // The wrapper keeps its input's partitioning and ordering.
            let keep = ReplaceChildrenOptions::new(ChildrenPropertiesMode::Keep);
            Ok(Transformed::yes(node.replace_children(children, keep)?))
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "YieldOften"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// Stops a query at its deadline from inside the plan: every operator's input is wrapped so that
/// pulling a batch after the deadline fails. A query cancelled from outside only stops at its
/// task's next yield, and tokio lets a task run up to 128 batches between yields: an operator
/// that does much work per batch (a nested-loop join) kept a core busy 20 s past a 3 s limit.
#[derive(Debug)]
pub struct DeadlineExec {
    input: Arc<dyn datafusion::physical_plan::ExecutionPlan>,
    deadline: std::time::Instant,
    limit: std::time::Duration,
}

impl DeadlineExec {
    /// Wraps every input of every operator of `plan`, and `plan` itself: the query must end
    /// within `limit` from now.
    pub fn wrap(
        plan: Arc<dyn datafusion::physical_plan::ExecutionPlan>,
        limit: std::time::Duration,
    ) -> datafusion::error::Result<Arc<dyn datafusion::physical_plan::ExecutionPlan>> {
        DeadlineExec::wrap_until(plan, std::time::Instant::now() + limit, limit)
    }

    fn wrap_until(
        plan: Arc<dyn datafusion::physical_plan::ExecutionPlan>,
        deadline: std::time::Instant,
        limit: std::time::Duration,
    ) -> datafusion::error::Result<Arc<dyn datafusion::physical_plan::ExecutionPlan>> {
        use datafusion::common::tree_node::{Transformed, TreeNode};
        use datafusion::physical_plan::execution_plan::{
            ChildrenPropertiesMode, ReplaceChildrenOptions,
        };
        let wrap = |c: &Arc<dyn datafusion::physical_plan::ExecutionPlan>| {
            Arc::new(DeadlineExec {
                input: Arc::clone(c),
                deadline,
                limit,
            }) as Arc<dyn datafusion::physical_plan::ExecutionPlan>
        };
        let inner = plan
            .transform_up(|node| {
                if node.children().is_empty() {
                    return Ok(Transformed::no(node));
                }
                let children = node.children().into_iter().map(wrap).collect();
                let keep = ReplaceChildrenOptions::new(ChildrenPropertiesMode::Keep);
                Ok(Transformed::yes(node.replace_children(children, keep)?))
            })?
            .data;
        Ok(wrap(&inner))
    }
}

impl datafusion::physical_plan::DisplayAs for DeadlineExec {
    fn fmt_as(
        &self,
        _: datafusion::physical_plan::DisplayFormatType,
        f: &mut fmt::Formatter<'_>,
    ) -> fmt::Result {
        write!(f, "DeadlineExec: limit={:?}", self.limit)
    }
}

impl datafusion::physical_plan::ExecutionPlan for DeadlineExec {
    fn name(&self) -> &str {
        "DeadlineExec"
    }

    fn properties(&self) -> &Arc<datafusion::physical_plan::PlanProperties> {
        self.input.properties()
    }

    fn children(&self) -> Vec<&Arc<dyn datafusion::physical_plan::ExecutionPlan>> {
        vec![&self.input]
    }

    fn maintains_input_order(&self) -> Vec<bool> {
        vec![true]
    }

    fn apply_expressions(
        &self,
        _: &mut dyn FnMut(
            &Arc<dyn datafusion::physical_plan::PhysicalExpr>,
        ) -> datafusion::error::Result<
            datafusion::common::tree_node::TreeNodeRecursion,
        >,
    ) -> datafusion::error::Result<datafusion::common::tree_node::TreeNodeRecursion> {
        Ok(datafusion::common::tree_node::TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        mut children: Vec<Arc<dyn datafusion::physical_plan::ExecutionPlan>>,
    ) -> datafusion::error::Result<Arc<dyn datafusion::physical_plan::ExecutionPlan>> {
        if children.len() != 1 {
            return Err(datafusion::error::DataFusionError::Internal(
                "DeadlineExec has one input".into(),
            ));
        }
        Ok(Arc::new(DeadlineExec {
            input: children.swap_remove(0),
            deadline: self.deadline,
            limit: self.limit,
        }))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<datafusion::execution::TaskContext>,
    ) -> datafusion::error::Result<datafusion::execution::SendableRecordBatchStream> {
        let input = self.input.execute(partition, context)?;
        let schema = input.schema();
        let (deadline, limit) = (self.deadline, self.limit);
        let checked = input.map(move |batch| {
            if std::time::Instant::now() >= deadline {
                return Err(datafusion::error::DataFusionError::ResourcesExhausted(
                    format!("stopped: {DEADLINE_PASSED} {limit:?}"),
                ));
            }
            batch
        });
        Ok(Box::pin(
            datafusion::physical_plan::stream::RecordBatchStreamAdapter::new(schema, checked),
        ))
    }
}

/// A table of an older version whose files were vacuumed: its schema, and a scan that fails
/// saying so (the session's other tables still read that version).
#[derive(Debug)]
struct Vacuumed {
    schema: datafusion::arrow::datatypes::SchemaRef,
    why: String,
}

impl Vacuumed {
    fn new(def: &TableDef, why: String) -> Vacuumed {
        Vacuumed {
            schema: def.table_schema(),
            why,
        }
    }
}

#[async_trait]
impl datafusion::catalog::TableProvider for Vacuumed {
    fn schema(&self) -> datafusion::arrow::datatypes::SchemaRef {
        Arc::clone(&self.schema)
    }

    fn table_type(&self) -> datafusion::datasource::TableType {
        datafusion::datasource::TableType::Base
    }

    async fn scan(
        &self,
        _state: &dyn datafusion::catalog::Session,
        _projection: Option<&Vec<usize>>,
        _filters: &[datafusion::logical_expr::Expr],
        _limit: Option<usize>,
    ) -> datafusion::error::Result<Arc<dyn datafusion::physical_plan::ExecutionPlan>> {
        Err(datafusion::error::DataFusionError::Plan(self.why.clone()))
    }
}

/// Registers one table of the snapshot (an empty table when it has no file yet).
pub async fn register(
    ctx: &SessionContext,
    snapshot: &Snapshot,
    def: &TableDef,
) -> datafusion::error::Result<()> {
    let schema = def.schema();
    if snapshot.state.table_files(def.name).next().is_none() {
        let empty = MemTable::try_new(def.table_schema(), vec![vec![]])?;
        ctx.register_table(def.name, Arc::new(empty))?;
        return Ok(());
    }
    let url = ListingTableUrl::parse(format!("{STORE_URL}{}/", def.name))?;
    let sort: Vec<SortExpr> = def
        .sort_by
        .iter()
        .map(|c| col(*c).sort(true, false))
        .collect();
    let mut opts =
        ListingOptions::new(Arc::new(ParquetFormat::default())).with_file_extension(".parquet");
    if let Some(p) = def.partition {
        opts = opts.with_table_partition_cols(vec![(p.to_string(), DataType::Date32)]);
    }
    if !sort.is_empty() {
        opts = opts.with_file_sort_order(vec![sort]);
    }
    let config = ListingTableConfig::new(url)
        .with_listing_options(opts)
        .with_schema(schema);
    // The session's statistics cache (shared by the process's sessions): a file's statistics are
    // read from its footer once, not at every query that plans a scan of it.
    let table = ListingTable::try_new(config)?
        .with_cache(ctx.runtime_env().cache_manager.get_file_statistic_cache());
    ctx.register_table(def.name, Arc::new(table))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lake::Lake;
    use datafusion::execution::cache::cache_manager::{CacheManager, CacheManagerConfig};

    crate::row_table! {
        /// A partitioned test table.
        pub struct Row in "sweep_rows" (partition Some("date"), sort ["k"], bloom []) {
            /// Key.
            k: String,
        }
    }

    fn commit(lake: &Lake, date: &str, k: &str) {
        let batch = Row::to_batch(&[Row { k: k.into() }]).unwrap();
        crate::lake::decoded::tests::commit_batch(lake, &Row::def(), date, batch);
    }

    /// The paths held in the statistics cache and the footer cache.
    fn held(caches: &CacheManagerConfig) -> (Vec<String>, Vec<String>) {
        let mut stats: Vec<String> = caches
            .file_statistics_cache
            .as_ref()
            .unwrap()
            .list_entries()
            .into_keys()
            .map(|k| k.path.to_string())
            .collect();
        let mut footers: Vec<String> = caches
            .file_metadata_cache
            .as_ref()
            .unwrap()
            .list_entries()
            .into_keys()
            .map(|k| k.to_string())
            .collect();
        stats.sort();
        footers.sort();
        (stats, footers)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_file_caches_forget_the_files_a_later_snapshot_no_longer_has() {
        let dir = tempfile::tempdir().unwrap();
        let lake = Lake::open(dir.path()).unwrap();
        commit(&lake, "2026-11-20", "a");
        commit(&lake, "2026-11-21", "b");
        let made = CacheManager::try_new(&CacheManagerConfig::default()).unwrap();
        let caches = CacheManagerConfig::default()
            .with_file_statistics_cache(made.get_file_statistic_cache())
            .with_file_metadata_cache(Some(made.get_file_metadata_cache()));
        let snapshot = lake.snapshot().unwrap();
        let def = Row::def();
        let ctx = session_with_caches(
            &snapshot,
            std::slice::from_ref(&def),
            Limits::default(),
            caches.clone(),
        )
        .await
        .unwrap();
        let rows = ctx
            .sql("SELECT k FROM sweep_rows")
            .await
            .unwrap()
            .collect()
            .await
            .unwrap();
        assert_eq!(rows.iter().map(|b| b.num_rows()).sum::<usize>(), 2);
        let mut files: Vec<String> = snapshot
            .state
            .table_files(def.name)
            .map(|f| f.path.clone())
            .collect();
        files.sort();
        assert_eq!(held(&caches), (files.clone(), files.clone()));
        // Nothing to forget while both files are live.
        let sweep = forget_in(&caches, &snapshot);
        assert_eq!((sweep.dropped, sweep.statistics, sweep.footers), (0, 2, 2));
        assert!(sweep.statistics_bytes > 0 && sweep.footers_bytes > 0);
        // The first file removed (compacted away): its statistics and footer go.
        let mut w = lake.writer().unwrap();
        let mut txn = w.begin("test").unwrap();
        txn.remove_file(&files[0]);
        txn.commit(serde_json::json!({})).unwrap();
        drop(w);
        let later = lake.snapshot().unwrap();
        let sweep = forget_in(&caches, &later);
        assert_eq!((sweep.dropped, sweep.statistics, sweep.footers), (2, 1, 1));
        assert_eq!(held(&caches), (files[1..].to_vec(), files[1..].to_vec()));
    }
}
