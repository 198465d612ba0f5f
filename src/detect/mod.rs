//! Detection: features, then the SQL rules of `queries/detect/` run by DataFusion over the lake, into the `flags` table.
//!
//! Flags are recomputed whole from one snapshot (so they are reproducible and
//! a rule change applies everywhere); a run is skipped when neither the
//! replayed data nor the rules changed since the last one, unless that one was
//! scoped (a pass of the stream or of the push endpoint, a re-judging: some
//! accounts' features left as they were).

pub mod eval;
pub mod rules;

use std::collections::BTreeMap;

use arrow::array::{Array, AsArray, RecordBatch};
use arrow::datatypes::DataType;

use crate::lake::record::Ts;
use crate::lake::{Lake, LakeError};
use crate::row_table;
use rules::{Rule, RuleError};

/// The stage name in the commit log.
pub const STAGE: &str = "detect";

row_table! {
    /// One row per (account, rule, window) that a detection rule flags, with its score, severity, recommended action and the evidence a reviewer checks.
    pub struct FlagRow in "flags" (partition None, sort ["account", "rule", "window"], bloom ["account"]) {
        /// Stable id of the flag: account, rule and window.
        flag_id: String,
        /// The flagged account.
        account: String,
        /// Rule id (queries/detect/<rule>.sql).
        rule: String,
        /// Rule title.
        title: String,
        /// Window of the features: 1d, 7d or 30d.
        window: String,
        /// Rule score (higher is more suspicious; rule-specific scale, documented in docs/detection.md).
        score: f64,
        /// info, low, medium, high or critical.
        severity: String,
        /// review or block_recommended.
        action: String,
        /// JSON object of the values that crossed the thresholds, with the thresholds.
        evidence: String,
        /// Evidence events as `game:seq`.
        refs: Vec<String>,
        /// First evidence event.
        first_seen: Option<Ts>,
        /// Last evidence event.
        last_seen: Option<Ts>,
        /// End of the window (the lake's latest event when computed).
        window_end: Ts,
        /// Digest of the rule's SQL.
        rule_version: String,
    }
}

/// Errors of the detection stage.
#[derive(Debug, thiserror::Error)]
pub enum DetectError {
    #[error(transparent)]
    Lake(#[from] LakeError),
    #[error(transparent)]
    Features(#[from] crate::features::FeaturesError),
    #[error(transparent)]
    Rule(#[from] RuleError),
    #[error("rule {rule}: {source}")]
    Query {
        rule: String,
        source: datafusion::error::DataFusionError,
    },
    #[error("rule {rule}: {msg}")]
    Output { rule: String, msg: String },
    #[error("arrow: {0}")]
    Arrow(#[from] arrow::error::ArrowError),
    #[error("runtime: {0}")]
    Runtime(#[from] std::io::Error),
}

/// What a detection run did.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct DetectReport {
    pub version: Option<u64>,
    pub flags: u64,
    pub accounts: u64,
    pub block_recommended: u64,
    pub by_rule: BTreeMap<String, u64>,
    /// Rules whose last result was reused: their SQL and the files they read were the same.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rules_reused: Vec<String>,
    /// Rules that read no features, run while the features were computed (on the same files).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rules_run_before_features: Vec<String>,
    /// Nothing ran: the replay, the analysis and the rules are those of the last run, whose flags
    /// stand (the counts above are then zero, not the lake's).
    pub unchanged: bool,
    pub elapsed_ms: u64,
}

impl DetectReport {
    pub fn summary_line(&self) -> String {
        if self.unchanged {
            return "detect: nothing changed since the last run (same replay, analysis and rules); \
                    its flags stand"
                .into();
        }
        let rules: Vec<String> = self
            .by_rule
            .iter()
            .map(|(r, n)| format!("{r} {n}"))
            .collect();
        let mut line = format!(
            "detect: {} flags on {} accounts ({} block recommended)",
            self.flags, self.accounts, self.block_recommended,
        );
        if !rules.is_empty() {
            line.push_str("; ");
            line.push_str(&rules.join(", "));
        }
        line.push_str("; ");
        line.push_str(&match self.version {
            Some(v) => format!("committed lake version {v}"),
            None => "not committed".into(),
        });
        line
    }
}

/// The stable id of a flag.
pub fn flag_id(account: &str, rule: &str, window: &str) -> String {
    use sha2::{Digest, Sha256};
    let d = Sha256::digest(format!("{account}\u{1f}{rule}\u{1f}{window}").as_bytes());
    crate::lake::hex(&d[..8])
}

/// Runs features and every rule of `rules`, and commits the flags (when anything changed).
pub fn run(
    lake: &Lake,
    rules: &rules::RuleSource,
    overrides: &BTreeMap<String, String>,
) -> Result<DetectReport, DetectError> {
    run_scoped(lake, rules, overrides, None, false)
}

/// [`run`], recomputing the features of the accounts of `scope` only
/// ([`crate::features::run_scoped`]); the rules still run over every account.
/// `force` runs even when nothing changed since the last run (benchmarks).
pub fn run_scoped(
    lake: &Lake,
    source: &rules::RuleSource,
    overrides: &BTreeMap<String, String>,
    scope: Option<&std::collections::BTreeSet<String>>,
    force: bool,
) -> Result<DetectReport, DetectError> {
    let started = std::time::Instant::now();
    let rules = source.load()?;
    let fingerprint = {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        for r in &rules {
            h.update(r.render(overrides).as_bytes());
        }
        // The features' definitions too: a build that counts a feature differently recomputes them.
        for t in [
            crate::features::account_table(),
            crate::features::pair_table(),
        ] {
            for c in &t.columns {
                h.update(c.name.as_bytes());
                h.update(c.doc.as_bytes());
            }
        }
        crate::lake::hex(&h.finalize()[..8])
    };
    let state = lake.state()?;
    let replayed = state.stage::<crate::replay::run::ReplayStage>()?;
    let analysed = state.stage::<crate::analysis::AnalysisStage>()?;
    let prev = state.stage::<DetectStage>()?;
    if let Some(prev) = &prev
        && !force
        && prev.replay == replayed
        && prev.analysis == analysed
        && prev.rules == fingerprint
        && !prev.scoped
    {
        return Ok(DetectReport {
            unchanged: true,
            elapsed_ms: started.elapsed().as_millis() as u64,
            ..DetectReport::default()
        });
    }
    // A scoped run keeps the other accounts' rows of the last run: only when that run had the same
    // rules and features' definitions (a new build may count, or name, a feature differently).
    let scope = scope.filter(|_| prev.as_ref().is_some_and(|p| p.rules == fingerprint));
    // The rules that read no features run meanwhile, on the snapshot before the features' commit
    // (the same files of the tables they read): their results wait in the reuse cache for the
    // evaluation below, which takes them when their SQL and files are still the same.
    let early = {
        let snapshot = lake.snapshot()?;
        let (rules, overrides) = (rules.clone(), overrides.clone());
        runtime()?.spawn(async move { run_without_features(&snapshot, &rules, &overrides).await })
    };
    let features = crate::features::run_scoped(lake, scope);
    if features.is_err() {
        early.abort();
    }
    // Its failures are its own to report: the evaluation below runs those rules again.
    match runtime()?.block_on(early) {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            tracing::debug!(error = %e, "a rule run before the features failed; run again after them")
        }
        Err(e) if e.is_cancelled() => {}
        Err(e) => {
            tracing::warn!(error = %e, "the rules run before the features stopped; run again after them")
        }
    }
    features?;
    let snapshot = lake.snapshot()?;
    let window_end = snapshot.state.latest_event_ms();
    let Evaluation {
        flags,
        reused,
        before_features,
    } = runtime()?.block_on(evaluate(&snapshot, &rules, overrides, window_end))?;
    let mut report = DetectReport {
        rules_reused: reused,
        rules_run_before_features: before_features,
        ..DetectReport::default()
    };
    let mut accounts = std::collections::BTreeSet::new();
    for f in &flags {
        *report.by_rule.entry(f.rule.clone()).or_default() += 1;
        accounts.insert(f.account.clone());
        if f.action == "block_recommended" {
            report.block_recommended += 1;
        }
    }
    report.flags = flags.len() as u64;
    report.accounts = accounts.len() as u64;
    let mut writer = lake.writer()?;
    let mut txn = writer.begin("detect")?;
    for f in snapshot.state.table_files("flags") {
        txn.remove_file(&f.path);
    }
    let def = FlagRow::def();
    if !flags.is_empty() {
        let batch = FlagRow::to_batch(&flags)?;
        let file = txn.new_file(def.name, None)?;
        let meta = crate::lake::parquet::write_sorted(&file.pending, &def, def.schema(), &[batch])?;
        txn.add_file_meta(file, meta);
    }
    txn.put_stage(&DetectStage {
        replay: replayed,
        analysis: analysed,
        rules: fingerprint,
        window_end_ms: window_end,
        scoped: scope.is_some(),
    })?;
    report.elapsed_ms = started.elapsed().as_millis() as u64;
    report.version = Some(txn.commit(serde_json::to_value(&report).unwrap_or_default())?);
    Ok(report)
}

/// The runtime detection runs its queries on, built once per process (the
/// streaming job runs detection every few seconds).
fn runtime() -> Result<&'static tokio::runtime::Runtime, DetectError> {
    static RUNTIME: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    if let Some(rt) = RUNTIME.get() {
        return Ok(rt);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    Ok(RUNTIME.get_or_init(|| rt))
}

/// Detection's checkpoint: the replay checkpoint it followed, the fingerprint of the rules it ran
/// (with their parameters) and of the features' definitions, the window end, and whether it was
/// scoped.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DetectStage {
    pub replay: Option<crate::replay::run::ReplayStage>,
    /// The engine analysis it read (absent in checkpoints written before the analysis existed).
    #[serde(default)]
    pub analysis: Option<crate::analysis::AnalysisStage>,
    pub rules: String,
    pub window_end_ms: i64,
    /// Only some accounts' features were recomputed (a pass of the stream or of the push
    /// endpoint, `replay --rejudge`, `detect --bench-scope`): the others' rows may be those of an
    /// earlier window end, so the next run that is not scoped runs even with nothing new (absent,
    /// `false`, in whole runs' checkpoints and in those written before it existed; a build older
    /// than it refuses a checkpoint that has it, until a whole run writes one without).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub scoped: bool,
}

impl crate::lake::Stage for DetectStage {
    const KEY: &'static str = STAGE;
}

/// The tables rules read: everything detection runs after (never the flags they make, nor the
/// staff's audit log).
pub fn rule_tables() -> Vec<crate::lake::tables::TableDef> {
    let mut v = crate::lake::tables::all();
    v.extend(crate::replay::run::derived_table_defs());
    v.push(crate::features::account_table());
    v.push(crate::features::pair_table());
    v.push(crate::analysis::MoveAnalysisRow::def());
    v
}

/// The accounts with a flag in the lake (the engine analysis takes their games first).
///
/// On a runtime of its own on the calling thread, not on detection's: the stream's analysis
/// thread calls it at the lowest priority, and the threads of a runtime it built first (which
/// inherit that priority) would run every pass's rules.
pub fn flagged_accounts(lake: &Lake) -> Result<std::collections::BTreeSet<String>, DetectError> {
    let snapshot = lake.snapshot()?;
    let query = |source| DetectError::Query {
        rule: "(flagged accounts)".into(),
        source,
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let batches = rt.block_on(async {
        let ctx = crate::lake::sql::session(
            &snapshot,
            &[FlagRow::def()],
            crate::lake::sql::Limits::default(),
        )
        .await
        .map_err(query)?;
        ctx.sql("SELECT DISTINCT account FROM flags")
            .await
            .map_err(query)?
            .collect()
            .await
            .map_err(query)
    })?;
    let mut out = std::collections::BTreeSet::new();
    for b in &batches {
        let c = arrow::compute::cast(b.column(0), &DataType::Utf8)?;
        let c = c.as_string::<i32>();
        out.extend(
            (0..c.len())
                .filter(|&i| !c.is_null(i))
                .map(|i| c.value(i).to_string()),
        );
    }
    Ok(out)
}

/// How many rules run at once: one per core. A pass's rules are small queries that each spend
/// much of their time planning on one thread; two at a time keep both cores of a small machine
/// busy, while the session's memory pool (shared by the rules running together) stays the bound.
fn rules_at_once() -> usize {
    cores().clamp(1, 4)
}

/// The machine's cores (2 when it cannot say): how many rules run at once, and the partitions each
/// plans for.
fn cores() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}

/// The tables the rules read from the process's cache of decoded columns
/// ([`crate::lake::decoded`]): a pass's rules read these windows about fifteen times, and the
/// next pass mostly the same files.
const DECODED_TABLES: &[&str] = &[
    "game_players",
    "departures",
    "findings",
    "account_features",
    "pair_features",
    "move_analysis",
];

/// The session a pass's rules run on: the rule tables of `snapshot`, those of [`DECODED_TABLES`]
/// read from the process's cache of decoded columns.
///
/// The rules run [`rules_at_once`] at a time, so each plans for its share of the cores (one
/// partition on a machine of fewer than eight: no repartitioning of its rows between threads, the
/// rules' execution in a scoped pass on the month lake 30 % shorter), and its logical plan is
/// optimised in one pass of DataFusion's optimizer rules instead of up to three (half the
/// optimisation time). docs/performance.md ("The rules without features during the features, one
/// partition, the ring in one pipeline") has the measures; the flags are the same (their
/// evidence's sums to the last bits of a double: summed in another order). In one pass, an
/// equality that reaches a join only once the filters are pushed down stays the join's filter (a
/// nested-loop join): a rule joins with `ON` or `IN`, and cross joins only tables of one row
/// (docs/detection.md).
async fn rule_session(
    snapshot: &crate::lake::Snapshot,
) -> Result<datafusion::prelude::SessionContext, DetectError> {
    let limits = crate::lake::sql::Limits {
        decoded: DECODED_TABLES,
        partitions: (cores() / rules_at_once()).max(1),
        ..Default::default()
    };
    let ctx = crate::lake::sql::session(snapshot, &rule_tables(), limits)
        .await
        .map_err(|source| DetectError::Query {
            rule: "(session)".into(),
            source,
        })?;
    ctx.state_ref()
        .write()
        .config_mut()
        .options_mut()
        .optimizer
        .max_passes = 1;
    Ok(ctx)
}

/// What the rules found on a snapshot.
#[derive(Debug)]
pub struct Evaluation {
    pub flags: Vec<FlagRow>,
    /// The rules whose last result on this lake was reused (see [`Reusable`]), in the rules' order.
    pub reused: Vec<String>,
    /// The rules whose result was computed on this pass's files before the features' commit
    /// (see `run_without_features`), in the rules' order.
    pub before_features: Vec<String>,
}

/// Runs the rules on a snapshot and returns their flags.
///
/// The rules run concurrently (at most [`rules_at_once`], each a task of the runtime, the longest
/// when last run first) on one session; their flags are merged in the rules' order, so the result
/// does not depend on which started or finished first. The first failing rule (in that order) is
/// the error.
pub async fn evaluate(
    snapshot: &crate::lake::Snapshot,
    rules: &[Rule],
    overrides: &BTreeMap<String, String>,
    window_end: i64,
) -> Result<Evaluation, DetectError> {
    use futures::StreamExt;
    let ctx = rule_session(snapshot).await?;
    let features_end = features_window_end(&ctx).await?;
    // The rules that took longest when last run start first, and a rule starts as soon as a slot
    // is free (not when the rules listed before it are done): on two cores a pass's rules then end
    // together instead of one core waiting on the longest while the other is idle.
    let order = {
        let costs = rule_costs().lock().unwrap_or_else(|p| p.into_inner());
        longest_first(rules.iter().map(|r| r.id.as_str()), &costs)
    };
    let tasks = order.into_iter().map(|i| {
        let rule = &rules[i];
        let task = tokio::spawn(run_rule(
            ctx.clone(),
            snapshot.clone(),
            rule.clone(),
            rule.render_at(overrides, features_end),
            window_end,
            false,
        ));
        let id = rule.id.clone();
        async move {
            let r = task.await.map_err(|e| DetectError::Output {
                rule: id,
                msg: format!("the rule's task failed: {e}"),
            });
            (i, r.and_then(|r| r))
        }
    });
    // (the rule's position, its result)
    let mut results: Vec<_> = futures::stream::iter(tasks)
        .buffer_unordered(rules_at_once())
        .collect()
        .await;
    results.sort_by_key(|(i, _)| *i);
    let cached = crate::lake::decoded::cache().stats();
    tracing::debug!(
        held_mib = cached.held_bytes >> 20,
        hits = cached.hits,
        misses = cached.misses,
        "detection columns cache"
    );
    let mut flags = Vec::new();
    let (mut reused, mut before_features) = (Vec::new(), Vec::new());
    for ((_, r), rule) in results.into_iter().zip(rules) {
        let (f, how) = r?;
        flags.extend(f);
        match how {
            Ran::Now => {}
            Ran::Reused => reused.push(rule.id.clone()),
            Ran::BeforeFeatures => before_features.push(rule.id.clone()),
        }
    }
    Ok(Evaluation {
        flags: merge_same_flag(flags),
        reused,
        before_features,
    })
}

/// Runs, on `snapshot` (taken before the features' commit), the rules that read neither
/// `account_features` nor `pair_features` when last run (the tables their reusable result lists),
/// one at a time: the features stage keeps about one core and a half busy, and these rules'
/// results then wait in the reuse cache ([`Reusable`]) for the pass's evaluation. Rendered with
/// the window end the features are about to write (the latest event of the snapshot): when the
/// features end elsewhere, the SQL differs and the evaluation runs the rule again.
async fn run_without_features(
    snapshot: &crate::lake::Snapshot,
    rules: &[Rule],
    overrides: &BTreeMap<String, String>,
) -> Result<(), DetectError> {
    let features = [
        crate::features::account_table().name,
        crate::features::pair_table().name,
    ];
    let independent: Vec<&Rule> = {
        let cache = reusable().lock().unwrap_or_else(|p| p.into_inner());
        rules
            .iter()
            .filter(|r| {
                cache
                    .get(&(snapshot.root().to_path_buf(), r.id.clone()))
                    .is_some_and(|e| e.files.iter().all(|(t, _)| !features.contains(&t.as_str())))
            })
            .collect()
    };
    if independent.is_empty() {
        return Ok(());
    }
    let ctx = rule_session(snapshot).await?;
    let end = snapshot.state.latest_event_ms();
    for rule in independent {
        run_rule(
            ctx.clone(),
            snapshot.clone(),
            rule.clone(),
            rule.render_at(overrides, Some(end)),
            end,
            true,
        )
        .await?;
    }
    Ok(())
}

/// How long each rule took when it last ran (not when its result was reused), for the whole
/// process: the order in which a pass starts its rules.
fn rule_costs() -> &'static std::sync::Mutex<BTreeMap<String, std::time::Duration>> {
    static COSTS: std::sync::OnceLock<std::sync::Mutex<BTreeMap<String, std::time::Duration>>> =
        std::sync::OnceLock::new();
    COSTS.get_or_init(Default::default)
}

/// The positions of `ids` in the order their rules start: those never run first (in their
/// order), then the longest when last run.
fn longest_first<'a>(
    ids: impl Iterator<Item = &'a str>,
    costs: &BTreeMap<String, std::time::Duration>,
) -> Vec<usize> {
    let mut order: Vec<(usize, Option<std::time::Duration>)> = ids
        .enumerate()
        .map(|(i, id)| (i, costs.get(id).copied()))
        .collect();
    // A rule never run counts as the longest; the sort is stable, so ties keep the rules' order.
    order.sort_by_key(|&(_, cost)| std::cmp::Reverse(cost.unwrap_or(std::time::Duration::MAX)));
    order.into_iter().map(|(i, _)| i).collect()
}

/// The end of the features' windows in the session's snapshot (epoch ms; `None` without
/// features), what [`rules::WINDOW_END_QUERY`] reads: the rules get it as a literal.
async fn features_window_end(
    ctx: &datafusion::prelude::SessionContext,
) -> Result<Option<i64>, DetectError> {
    let q = |source| DetectError::Query {
        rule: "(window end)".into(),
        source,
    };
    let sql = format!(
        "SELECT CAST({} AS BIGINT) AS end_ms",
        rules::WINDOW_END_QUERY
    );
    let batches = ctx.sql(&sql).await.map_err(q)?.collect().await.map_err(q)?;
    let mut end = None;
    for b in &batches {
        let c = arrow::compute::cast(b.column(0), &DataType::Int64)?;
        let c = c.as_primitive::<arrow::datatypes::Int64Type>();
        end = end.or((0..c.len()).find(|&i| !c.is_null(i)).map(|i| c.value(i)));
    }
    Ok(end)
}

/// A rule's last result, kept to be reused while its SQL and the files of every table it reads
/// are the same: a rule is a query without any function whose value changes from call to call
/// (checked on its plan), and a lake file never changes, so the same SQL over the same files
/// returns the same rows. In a streaming job the features change at every pass and the derived
/// tables at every replay: the rules that read neither are reused (`engine_assistance` reads
/// `move_analysis` alone, over whole days with `${window_end_date}`: until the next analysis
/// commit; `shared_device_ring` reads `game_players`: in the passes that followed no replay
/// commit).
struct Reusable {
    sql: String,
    /// The tables the plan scans, with the paths of their files in the snapshot it ran on.
    files: Vec<(String, Vec<String>)>,
    batches: Vec<RecordBatch>,
    /// Computed before the features' commit of a pass (`run_without_features`) and not yet taken
    /// by that pass's evaluation.
    early: bool,
}

/// How a rule's result of a pass came.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ran {
    /// Its query ran.
    Now,
    /// Its last result (the same SQL over the same files).
    Reused,
    /// Its query ran on this pass's files before the features' commit.
    BeforeFeatures,
}

/// The last reusable result of each (lake, rule), for the whole process.
fn reusable() -> &'static std::sync::Mutex<BTreeMap<(std::path::PathBuf, String), Reusable>> {
    static CACHE: std::sync::OnceLock<
        std::sync::Mutex<BTreeMap<(std::path::PathBuf, String), Reusable>>,
    > = std::sync::OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// The paths of the files of `table` in `snapshot`, in path order.
fn table_file_paths<'a>(
    snapshot: &'a crate::lake::Snapshot,
    table: &'a str,
) -> impl Iterator<Item = &'a String> {
    snapshot.state.table_files(table).map(|f| &f.path)
}

/// The lake tables a logical plan scans, or `None` when its result may not be reused: it scans
/// something that is not a lake table of detection (a view, an information schema table), or it
/// calls a function that is not immutable (`now()`, `random()`...).
fn reusable_scans(plan: &datafusion::logical_expr::LogicalPlan) -> Option<Vec<String>> {
    use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
    use datafusion::logical_expr::{Expr, LogicalPlan, Volatility};
    let lake_tables: std::collections::BTreeSet<String> = rule_tables()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    let mut tables = std::collections::BTreeSet::new();
    let mut reusable = true;
    let walked = plan.apply_with_subqueries(|node| {
        if let LogicalPlan::TableScan(scan) = node {
            let name = scan.table_name.table();
            if lake_tables.contains(name) {
                tables.insert(name.to_string());
            } else {
                reusable = false;
            }
        }
        node.apply_expressions(|e| {
            e.apply(|e| {
                if let Expr::ScalarFunction(f) = e
                    && f.func.signature().volatility != Volatility::Immutable
                {
                    reusable = false;
                }
                Ok(TreeNodeRecursion::Continue)
            })
        })
    });
    (walked.is_ok() && reusable).then(|| tables.into_iter().collect())
}

/// One rule's query on the session, into flags; its last result when neither its SQL nor the
/// files it reads changed (see [`Reusable`]). `early`: run before the features' commit, for the
/// pass's evaluation to take.
async fn run_rule(
    ctx: datafusion::prelude::SessionContext,
    snapshot: crate::lake::Snapshot,
    rule: Rule,
    sql: String,
    window_end: i64,
    early: bool,
) -> Result<(Vec<FlagRow>, Ran), DetectError> {
    let q = |source| DetectError::Query {
        rule: rule.id.clone(),
        source,
    };
    let started = std::time::Instant::now();
    let key = (snapshot.root().to_path_buf(), rule.id.clone());
    let reused = {
        let mut cache = reusable().lock().unwrap_or_else(|p| p.into_inner());
        cache
            .get_mut(&key)
            .filter(|r| {
                r.sql == sql
                    && r.files
                        .iter()
                        .all(|(t, paths)| table_file_paths(&snapshot, t).eq(paths))
            })
            .map(|r| {
                // The pass's evaluation takes what ran before its features once: then it is a
                // last result like any other.
                let how = if r.early && !early {
                    Ran::BeforeFeatures
                } else {
                    Ran::Reused
                };
                r.early = false;
                (r.batches.clone(), how)
            })
    };
    if let Some((batches, how)) = reused {
        let flags = batches_to_flags(&rule, &batches, window_end)?;
        tracing::debug!(
            rule = %rule.id,
            flags = flags.len(),
            reused = how == Ran::Reused,
            before_features = how == Ran::BeforeFeatures,
            ms = started.elapsed().as_millis() as u64,
            "detection rule"
        );
        return Ok((flags, how));
    }
    // The steps apart (as `DataFrame::collect` runs them), so that the debug log says where a
    // rule's time goes: parsing and the logical plan, its optimisation, the physical plan (the
    // tables' file listing happens there), the execution.
    let state = ctx.state();
    let logical = state.create_logical_plan(&sql).await.map_err(q)?;
    let planned = started.elapsed();
    let optimized = state.optimize(&logical).map_err(q)?;
    let optimised = started.elapsed();
    let physical = state
        .query_planner()
        .create_physical_plan(&optimized, &state)
        .await
        .map_err(q)?;
    let physical_done = started.elapsed();
    let batches = datafusion::physical_plan::collect(physical, ctx.task_ctx())
        .await
        .map_err(q)?;
    let entry = reusable_scans(&logical).map(|tables| Reusable {
        sql,
        files: tables
            .into_iter()
            .map(|t| {
                let paths = table_file_paths(&snapshot, &t).cloned().collect();
                (t, paths)
            })
            .collect(),
        batches: batches.clone(),
        early,
    });
    {
        let mut cache = reusable().lock().unwrap_or_else(|p| p.into_inner());
        match entry {
            Some(e) => cache.insert(key, e),
            None => cache.remove(&key),
        };
    }
    rule_costs()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(rule.id.clone(), started.elapsed());
    let flags = batches_to_flags(&rule, &batches, window_end)?;
    tracing::debug!(
        rule = %rule.id,
        flags = flags.len(),
        logical_ms = planned.as_millis() as u64,
        optimise_ms = (optimised - planned).as_millis() as u64,
        physical_ms = (physical_done - optimised).as_millis() as u64,
        execute_ms = (started.elapsed() - physical_done).as_millis() as u64,
        ms = started.elapsed().as_millis() as u64,
        before_features = early,
        "detection rule"
    );
    Ok((flags, Ran::Now))
}

/// One flag per (account, rule, window), as its id says. A pair rule returns one row per partner
/// and the ring rule one per device: their rows become one flag with the strongest row's score,
/// severity and evidence, the other rows' evidence under `"also"` (strongest first), every ref once,
/// and the earliest and latest times seen.
fn merge_same_flag(mut flags: Vec<FlagRow>) -> Vec<FlagRow> {
    flags.sort_by(|a, b| {
        (&a.account, &a.rule, &a.window)
            .cmp(&(&b.account, &b.rule, &b.window))
            .then(b.score.total_cmp(&a.score))
            .then_with(|| a.evidence.cmp(&b.evidence))
    });
    let mut out: Vec<FlagRow> = Vec::with_capacity(flags.len());
    let mut also: Vec<serde_json::Value> = Vec::new();
    let close = |f: &mut FlagRow, also: &mut Vec<serde_json::Value>| {
        if also.is_empty() {
            return;
        }
        let mut ev: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(&f.evidence).unwrap_or_default();
        ev.insert(
            "also".into(),
            serde_json::Value::Array(std::mem::take(also)),
        );
        f.evidence = serde_json::Value::Object(ev).to_string();
    };
    for f in flags {
        match out.last_mut() {
            Some(top) if top.flag_id == f.flag_id => {
                for r in f.refs {
                    if !top.refs.contains(&r) {
                        top.refs.push(r);
                    }
                }
                top.first_seen = match (top.first_seen, f.first_seen) {
                    (Some(a), Some(b)) => Some(Ts(a.0.min(b.0))),
                    (a, b) => a.or(b),
                };
                top.last_seen = match (top.last_seen, f.last_seen) {
                    (Some(a), Some(b)) => Some(Ts(a.0.max(b.0))),
                    (a, b) => a.or(b),
                };
                also.push(serde_json::from_str(&f.evidence).unwrap_or(serde_json::Value::Null));
            }
            _ => {
                if let Some(top) = out.last_mut() {
                    close(top, &mut also);
                }
                out.push(f);
            }
        }
    }
    if let Some(top) = out.last_mut() {
        close(top, &mut also);
    }
    out
}

const RESERVED: [&str; 8] = [
    "account",
    "window",
    "score",
    "severity",
    "action",
    "refs",
    "first_seen",
    "last_seen",
];

/// A rule's result batches, into flags.
fn batches_to_flags(
    rule: &Rule,
    batches: &[RecordBatch],
    window_end: i64,
) -> Result<Vec<FlagRow>, DetectError> {
    let mut flags = Vec::new();
    for b in batches {
        flags.extend(rows_to_flags(rule, b, window_end)?);
    }
    Ok(flags)
}

fn rows_to_flags(
    rule: &Rule,
    b: &RecordBatch,
    window_end: i64,
) -> Result<Vec<FlagRow>, DetectError> {
    let out_err = |msg: String| DetectError::Output {
        rule: rule.id.clone(),
        msg,
    };
    let schema = b.schema();
    let get = |name: &str| schema.index_of(name).ok().map(|i| b.column(i).clone());
    let account = get("account").ok_or_else(|| out_err("no `account` column".into()))?;
    let account = arrow::compute::cast(&account, &DataType::Utf8)?;
    let account = account.as_string::<i32>();
    let window = get("window").ok_or_else(|| out_err("no `window` column".into()))?;
    let window = arrow::compute::cast(&window, &DataType::Utf8)?;
    let window = window.as_string::<i32>();
    let score = get("score").ok_or_else(|| out_err("no `score` column".into()))?;
    let score = arrow::compute::cast(&score, &DataType::Float64)?;
    let score = score.as_primitive::<arrow::datatypes::Float64Type>();
    let text = |name: &str| -> Result<Option<arrow::array::ArrayRef>, DetectError> {
        get(name)
            .map(|c| arrow::compute::cast(&c, &DataType::Utf8))
            .transpose()
            .map_err(DetectError::from)
    };
    let severity = text("severity")?;
    let action = text("action")?;
    let ts = |name: &str| -> Result<Option<arrow::array::ArrayRef>, DetectError> {
        get(name)
            .map(|c| arrow::compute::cast(&c, &DataType::Int64))
            .transpose()
            .map_err(DetectError::from)
    };
    let first_seen = ts("first_seen")?;
    let last_seen = ts("last_seen")?;
    let refs = get("refs");
    // Evidence: every other column, as JSON objects.
    let keep: Vec<usize> = (0..schema.fields().len())
        .filter(|&i| !RESERVED.contains(&schema.field(i).name().as_str()))
        .collect();
    let evidence_batch = b.project(&keep)?;
    let mut evidence: Vec<String> = Vec::with_capacity(b.num_rows());
    if evidence_batch.num_columns() > 0 {
        let mut buf = Vec::new();
        {
            let mut w = arrow::json::ArrayWriter::new(&mut buf);
            w.write(&evidence_batch)?;
            w.finish()?;
        }
        let values: Vec<serde_json::Value> = serde_json::from_slice(&buf).unwrap_or_default();
        evidence.extend(values.into_iter().map(|v| v.to_string()));
    }
    evidence.resize(b.num_rows(), "{}".to_string());
    let mut out = Vec::with_capacity(b.num_rows());
    for (i, evidence_i) in evidence.into_iter().enumerate() {
        if account.is_null(i) {
            continue;
        }
        let str_at = |a: &Option<arrow::array::ArrayRef>, default: &str| -> String {
            a.as_ref()
                .map(|a| a.as_string::<i32>())
                .filter(|a| !a.is_null(i))
                .map(|a| a.value(i).to_string())
                .unwrap_or_else(|| default.to_string())
        };
        let ts_at = |a: &Option<arrow::array::ArrayRef>| -> Option<Ts> {
            a.as_ref()
                .map(|a| a.as_primitive::<arrow::datatypes::Int64Type>())
                .filter(|a| !a.is_null(i))
                .map(|a| Ts(a.value(i)))
        };
        let refs_i: Vec<String> = match &refs {
            Some(r) => match r.data_type() {
                DataType::List(_) => {
                    let l = r.as_list::<i32>();
                    if l.is_null(i) {
                        Vec::new()
                    } else {
                        let v = arrow::compute::cast(&l.value(i), &DataType::Utf8)?;
                        let v = v.as_string::<i32>();
                        (0..v.len())
                            .filter(|&k| !v.is_null(k))
                            .map(|k| v.value(k).to_string())
                            .collect()
                    }
                }
                _ => {
                    return Err(out_err(
                        "`refs` must be a list of `game:seq` strings".into(),
                    ));
                }
            },
            None => Vec::new(),
        };
        let acc = account.value(i).to_string();
        let win = window.value(i).to_string();
        out.push(FlagRow {
            flag_id: flag_id(&acc, &rule.id, &win),
            account: acc,
            rule: rule.id.clone(),
            title: rule.title.clone(),
            window: win,
            score: if score.is_null(i) {
                0.0
            } else {
                score.value(i)
            },
            severity: str_at(&severity, &rule.severity),
            action: str_at(&action, &rule.action),
            evidence: evidence_i,
            refs: refs_i,
            first_seen: ts_at(&first_seen),
            last_seen: ts_at(&last_seen),
            window_end: Ts(window_end),
            rule_version: rule.version(),
        });
    }
    Ok(out)
}

/// Reads the committed flags of a snapshot.
pub fn read_flags(snapshot: &crate::lake::Snapshot) -> Result<Vec<FlagRow>, DetectError> {
    let mut out = Vec::new();
    for path in snapshot.table_paths("flags") {
        let batches = crate::lake::parquet::read_file(&path, None)?;
        for b in batches {
            let s = |n: &str| -> Result<arrow::array::StringArray, DetectError> {
                let c = b.column(b.schema().index_of(n)?);
                Ok(c.as_string::<i32>().clone())
            };
            let (flag_id, account, rule, title, window) = (
                s("flag_id")?,
                s("account")?,
                s("rule")?,
                s("title")?,
                s("window")?,
            );
            let (severity, action, evidence, version) = (
                s("severity")?,
                s("action")?,
                s("evidence")?,
                s("rule_version")?,
            );
            let score = b
                .column(b.schema().index_of("score")?)
                .as_primitive::<arrow::datatypes::Float64Type>()
                .clone();
            let refs = b
                .column(b.schema().index_of("refs")?)
                .as_list::<i32>()
                .clone();
            let tscol = |n: &str| -> Result<arrow::array::TimestampMillisecondArray, DetectError> {
                Ok(b.column(b.schema().index_of(n)?)
                    .as_primitive::<arrow::datatypes::TimestampMillisecondType>()
                    .clone())
            };
            let (first, last, end) = (
                tscol("first_seen")?,
                tscol("last_seen")?,
                tscol("window_end")?,
            );
            for i in 0..b.num_rows() {
                let r = refs.value(i);
                let r = r.as_string::<i32>();
                out.push(FlagRow {
                    flag_id: flag_id.value(i).to_string(),
                    account: account.value(i).to_string(),
                    rule: rule.value(i).to_string(),
                    title: title.value(i).to_string(),
                    window: window.value(i).to_string(),
                    score: score.value(i),
                    severity: severity.value(i).to_string(),
                    action: action.value(i).to_string(),
                    evidence: evidence.value(i).to_string(),
                    refs: (0..r.len()).map(|k| r.value(k).to_string()).collect(),
                    first_seen: (!first.is_null(i)).then(|| Ts(first.value(i))),
                    last_seen: (!last.is_null(i)).then(|| Ts(last.value(i))),
                    window_end: Ts(end.value(i)),
                    rule_version: version.value(i).to_string(),
                });
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_start_longest_first_and_those_never_run_before_all() {
        use std::time::Duration;
        let costs: std::collections::BTreeMap<String, Duration> =
            [("a", 20), ("b", 110), ("d", 5), ("e", 110)]
                .into_iter()
                .map(|(id, ms)| (id.to_string(), Duration::from_millis(ms)))
                .collect();
        let ids = ["a", "b", "c", "d", "e", "f"];
        // c and f were never run (in the rules' order), then b and e (a tie, in the rules'
        // order), a, d.
        assert_eq!(
            longest_first(ids.into_iter(), &costs),
            vec![2, 5, 1, 4, 0, 3]
        );
        assert_eq!(
            longest_first(ids.into_iter(), &Default::default()),
            vec![0, 1, 2, 3, 4, 5]
        );
    }

    #[test]
    fn the_summary_says_when_nothing_ran_instead_of_counting_zero_flags() {
        let unchanged = DetectReport {
            unchanged: true,
            ..DetectReport::default()
        };
        assert!(
            unchanged.summary_line().contains("nothing changed"),
            "{}",
            unchanged.summary_line()
        );
        assert!(!unchanged.summary_line().contains("0 flags"));
        let none = DetectReport {
            version: Some(4),
            ..DetectReport::default()
        };
        assert_eq!(
            none.summary_line(),
            "detect: 0 flags on 0 accounts (0 block recommended); committed lake version 4"
        );
        let some = DetectReport {
            version: Some(5),
            flags: 3,
            accounts: 2,
            block_recommended: 1,
            by_rule: [("rage_quit".to_string(), 2), ("sitting".to_string(), 1)].into(),
            ..DetectReport::default()
        };
        assert_eq!(
            some.summary_line(),
            "detect: 3 flags on 2 accounts (1 block recommended); rage_quit 2, sitting 1; \
             committed lake version 5"
        );
    }

    fn row(account: &str, score: f64, evidence: &str, refs: &[&str], seen: (i64, i64)) -> FlagRow {
        FlagRow {
            flag_id: flag_id(account, "win_trading", "30d"),
            account: account.into(),
            rule: "win_trading".into(),
            title: "Win trading".into(),
            window: "30d".into(),
            score,
            severity: "high".into(),
            action: "review".into(),
            evidence: evidence.into(),
            refs: refs.iter().map(|r| (*r).to_owned()).collect(),
            first_seen: Some(Ts(seen.0)),
            last_seen: Some(Ts(seen.1)),
            window_end: Ts(100),
            rule_version: "v".into(),
        }
    }

    #[test]
    fn rows_of_one_account_rule_and_window_become_one_flag() {
        let flags = merge_same_flag(vec![
            row(
                "alice",
                4.0,
                r#"{"partner":"bob"}"#,
                &["g1:3", "g2:5"],
                (10, 20),
            ),
            row("carol", 2.0, r#"{"partner":"dave"}"#, &["g9:1"], (5, 6)),
            row(
                "alice",
                9.0,
                r#"{"partner":"zed"}"#,
                &["g2:5", "g7:2"],
                (15, 40),
            ),
        ]);
        assert_eq!(flags.len(), 2);
        let alice = &flags[0];
        assert_eq!(alice.account, "alice");
        assert_eq!(alice.score, 9.0, "the strongest row leads");
        let ev: serde_json::Value = serde_json::from_str(&alice.evidence).unwrap();
        assert_eq!(ev["partner"], "zed");
        assert_eq!(ev["also"], serde_json::json!([{ "partner": "bob" }]));
        assert_eq!(alice.refs, ["g2:5", "g7:2", "g1:3"]);
        assert_eq!(
            (alice.first_seen, alice.last_seen),
            (Some(Ts(10)), Some(Ts(40)))
        );
        // A flag with one row is left as it was.
        assert_eq!(flags[1].evidence, r#"{"partner":"dave"}"#);
        let ids: std::collections::BTreeSet<&str> =
            flags.iter().map(|f| f.flag_id.as_str()).collect();
        assert_eq!(ids.len(), flags.len());
    }
}
