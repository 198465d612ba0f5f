//! Replay over the lake: read the events of new or changed games in (game, seq) order, replay them in parallel, write the derived tables in one commit.
//!
//! Incremental and idempotent. The stage checkpoint (`replay` in the commit
//! log) is the lake version whose events were replayed. A run replays the
//! games with events in files added since, plus open games that fell silent
//! past the horizon (they become `never_ended`), plus games whose seed or
//! commitment another touched game reuses. Derived rows of games still open
//! live in small "open" files that every run rewrites; rows of closed games
//! go to files that are only rewritten in the rare case a closed game gets
//! new events. The new files, the removals and the checkpoint are one commit.

use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Instant;

use arrow::array::{Array, AsArray, BooleanArray, RecordBatch};
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::{ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder};
use parquet::file::statistics::Statistics;
use serde::Serialize;

use super::finding::{Category, Code, Finding};
use super::game::{Context, GameReplay, Logged, NEVER_ENDED_AFTER_MS, replay_game};
use super::index::GameIndex;
use super::rows::{DepartureRow, FindingRow, GameRow, MoveRow, PlayerRow};
use crate::lake::parquet::{read_file, write_sorted};
use crate::lake::tables::TableDef;
use crate::lake::{FileEntry, Lake, State, Txn};

/// The stage name in the commit log.
pub const STAGE: &str = "replay";

/// The replay's checkpoint: the lake version its last run read, and the latest event time then.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplayStage {
    pub version: u64,
    pub horizon_ms: i64,
}

impl crate::lake::Stage for ReplayStage {
    const KEY: &'static str = STAGE;
}

pub use super::error::ReplayError;
pub(crate) use super::error::io;

/// Options of a replay run.
#[derive(Debug, Clone)]
pub struct ReplayOptions {
    pub threads: usize,
    pub progress: bool,
}

impl Default for ReplayOptions {
    fn default() -> Self {
        ReplayOptions {
            threads: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(2),
            progress: true,
        }
    }
}

/// What a replay run did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ReplayReport {
    pub version: Option<u64>,
    pub games: u64,
    pub events: u64,
    pub open_games: u64,
    pub findings: u64,
    pub attempt_findings: u64,
    pub integrity_findings: u64,
    pub fairness_findings: u64,
    pub elapsed_ms: u64,
    /// Time spent in the engines (parsing lines and replaying), summed over workers.
    pub engine_ms: u64,
}

impl ReplayReport {
    pub fn summary_line(&self) -> String {
        let secs = (self.elapsed_ms as f64 / 1000.0).max(1e-3);
        format!(
            "replay: {} games ({} still open), {} events; findings: {} attempt, {} integrity, {} fairness; {}; {:.1} s, {:.0} events/s, engines {:.0} % of worker time",
            self.games,
            self.open_games,
            self.events,
            self.attempt_findings,
            self.integrity_findings,
            self.fairness_findings,
            match self.version {
                Some(v) => format!("committed lake version {v}"),
                None => "nothing to replay".into(),
            },
            secs,
            self.events as f64 / secs,
            if self.elapsed_ms > 0 {
                100.0 * self.engine_ms as f64 / (self.elapsed_ms as f64 * 2.0)
            } else {
                0.0
            }
        )
    }
}

/// The tables replay writes, in a fixed order.
pub fn derived_table_defs() -> Vec<TableDef> {
    derived_tables()
}

/// The derived tables, in a fixed order.
fn derived_tables() -> Vec<TableDef> {
    vec![
        FindingRow::def(),
        GameRow::def(),
        PlayerRow::def(),
        MoveRow::def(),
        DepartureRow::def(),
    ]
}

/// Replay state a long-running process (the stream) keeps between runs, so
/// that a run reads only the events files added since the last one.
///
/// It holds the game index (what the `games` table says of every game) and
/// the raw lines of every game still open. It is valid for one replay
/// checkpoint only: when the lake's checkpoint is not the one it was built
/// at (another process replayed, or a commit failed), the next run rebuilds
/// it from the lake, replaying every open game once.
///
/// Closed games leave the index once their last event is older than the
/// retention period (before the lake's latest event); a run recalls from the
/// lake the old games it needs ([`super::recall`]), so the index's memory
/// follows the recent games, not the lake's history.
#[derive(Debug)]
pub struct Resident {
    /// The replay checkpoint (lake version) this state reflects; `None` until built.
    version: Option<u64>,
    /// How long a closed game stays in the index after its last event (ms).
    retain_ms: i64,
    index: GameIndex,
    /// Raw lines of the games still open, by game.
    open: HashMap<String, Vec<String>>,
    /// Accounts of the games replayed since the last [`Resident::take_accounts`].
    accounts: BTreeSet<String>,
    /// Every account of the index.
    known: BTreeSet<String>,
}

/// How long a closed game stays in a resident index: a day after its last event.
pub const RETAIN_CLOSED_MS: i64 = 24 * 60 * 60 * 1000;

impl Default for Resident {
    fn default() -> Self {
        Resident::retaining(RETAIN_CLOSED_MS)
    }
}

impl Resident {
    /// An empty state whose index keeps closed games `retain_ms` after their last event.
    pub fn retaining(retain_ms: i64) -> Self {
        Resident {
            version: None,
            retain_ms,
            index: GameIndex::default(),
            open: HashMap::new(),
            accounts: BTreeSet::new(),
            known: BTreeSet::new(),
        }
    }

    /// The accounts of the games replayed since the last call.
    pub fn take_accounts(&mut self) -> BTreeSet<String> {
        std::mem::take(&mut self.accounts)
    }

    /// Games whose lines are held in memory.
    pub fn open_games(&self) -> usize {
        self.open.len()
    }

    /// Takes back the state a run worked on, valid at replay checkpoint `version`; `rebuilt`
    /// holds every account of the `games` table when the index was read from the lake (a
    /// warm run adds the accounts of the games it replayed itself). Closed games older than
    /// the retention period before `horizon` leave the index.
    fn settle(
        &mut self,
        version: u64,
        mut index: GameIndex,
        open: HashMap<String, Vec<String>>,
        rebuilt: Option<BTreeSet<String>>,
        horizon: i64,
    ) {
        if let Some(known) = rebuilt {
            self.known = known;
        }
        let evicted = index.evict(horizon.saturating_sub(self.retain_ms));
        if evicted > 0 {
            tracing::debug!(
                evicted,
                held = index.len(),
                digests = index.digests(),
                "game index"
            );
        }
        self.version = Some(version);
        self.index = index;
        self.open = open;
    }

    /// Games in the index.
    pub fn indexed_games(&self) -> usize {
        self.index.len()
    }

    /// Slice `k` of `n` of every known account (a stable partition by name).
    pub fn account_slice(&self, k: usize, n: usize) -> impl Iterator<Item = &String> {
        self.known.iter().filter(move |a| {
            // FNV-1a: stable across runs and platforms.
            let h = a.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
            });
            h % n.max(1) as u64 == k as u64
        })
    }
}

/// Replays what is new in the lake and commits the derived tables.
pub fn run(lake: &Lake, opts: &ReplayOptions) -> Result<ReplayReport, ReplayError> {
    run_with(lake, opts, None)
}

/// [`run`], keeping state between runs in `resident` (see [`Resident`]).
pub fn run_with(
    lake: &Lake,
    opts: &ReplayOptions,
    mut resident: Option<&mut Resident>,
) -> Result<ReplayReport, ReplayError> {
    let started = Instant::now();
    let mut writer = lake.writer()?;
    let state = lake.state()?;
    let root = lake.root().to_path_buf();
    let since = state.stage::<ReplayStage>()?.map_or(0, |s| s.version);
    let events: Vec<&FileEntry> = state.table_files("events").collect();
    let horizon = events.iter().filter_map(|f| f.max_ts).max().unwrap_or(0);
    let new_files: Vec<&FileEntry> = events
        .iter()
        .copied()
        .filter(|f| f.data_version() > since)
        .collect();
    // A warm resident state already knows the index and every open game's lines.
    let warm = resident.as_ref().is_some_and(|r| r.version == Some(since));
    let keep = resident.is_some();
    let (mut old_games, mut cached, mut rebuilt) = match resident.as_deref_mut() {
        Some(r) if warm => (
            std::mem::take(&mut r.index),
            std::mem::take(&mut r.open),
            None,
        ),
        _ => {
            // A resident state being built also lists the accounts (its `known` set).
            let (index, accounts) = read_game_index(&root, &state, keep)?;
            (index, HashMap::new(), accounts)
        }
    };
    if let Some(r) = resident.as_deref_mut() {
        // Valid again only once this run commits.
        r.version = None;
    }
    // Open games that fell silent past the horizon must be closed (never_ended).
    let stale: BTreeSet<String> = old_games
        .iter()
        .filter(|(_, g)| !g.closed && horizon - g.last_ts > NEVER_ENDED_AFTER_MS)
        .map(|(g, _)| g.to_string())
        .collect();
    if new_files.is_empty() && stale.is_empty() {
        if let Some(r) = resident.as_deref_mut() {
            r.settle(since, old_games, cached, rebuilt, horizon);
        }
        return Ok(ReplayReport {
            elapsed_ms: started.elapsed().as_millis() as u64,
            ..ReplayReport::default()
        });
    }
    // Which games to replay.
    let full = since == 0 && old_games.is_empty();
    let mut touched: BTreeSet<String> = stale;
    if keep && !warm {
        // Building the resident state: every open game is replayed once (to the same rows) to hold its lines.
        touched.extend(
            old_games
                .iter()
                .filter(|(_, g)| !g.closed)
                .map(|(g, _)| g.to_string()),
        );
        touched.extend(rowless_games(&root, &state, &old_games)?);
    }
    let mut new_seeds: Vec<(String, Option<String>, Option<String>)> = Vec::new();
    // The new lines by game (kept only when warm: they complete the lines held in memory).
    let mut new_lines: HashMap<String, Vec<String>> = HashMap::new();
    let columns: &[&str] = if warm {
        &["game", "commitment", "seed", "raw"]
    } else {
        &["game", "commitment", "seed"]
    };
    for f in &new_files {
        let path = crate::lake::resolve(&root, &f.path);
        for b in read_file(&path, Some(columns))? {
            let g = b.column(0).as_string::<i32>();
            let c = b.column(1).as_string::<i32>();
            let s = b.column(2).as_string::<i32>();
            let raw = warm.then(|| b.column(3).as_string::<i32>());
            for i in 0..b.num_rows() {
                touched.insert(g.value(i).to_string());
                if let Some(raw) = raw {
                    new_lines
                        .entry(g.value(i).to_string())
                        .or_default()
                        .push(raw.value(i).to_string());
                }
                if !c.is_null(i) || !s.is_null(i) {
                    new_seeds.push((
                        g.value(i).to_string(),
                        (!c.is_null(i)).then(|| c.value(i).to_string()),
                        (!s.is_null(i)).then(|| s.value(i).to_string()),
                    ));
                }
            }
        }
    }
    // A partial index gets back the old games this run needs: touched games it let go of,
    // and the games of every seed and commitment seen.
    let seen_keys: BTreeSet<String> = new_seeds
        .iter()
        .flat_map(|(_, c, s)| [c.clone(), s.clone()])
        .flatten()
        .collect();
    let recalled = super::recall::recall(
        &root,
        &state,
        &mut old_games,
        &touched,
        seen_keys.iter().cloned(),
    )?;
    if recalled.files > 0 {
        tracing::debug!(
            games = recalled.games,
            files = recalled.files,
            row_groups = recalled.row_groups,
            "recalled from the lake"
        );
    }
    // Games reusing a seed or commitment of a touched game are replayed with it.
    for (g, c, s) in &new_seeds {
        for other in old_games.users(c.as_deref(), s.as_deref()) {
            if other != g {
                touched.insert(other.to_string());
            }
        }
    }
    let filter = if full { None } else { Some(&touched) };
    let ctx = Context {
        horizon_ms: horizon,
    };
    let files: Vec<(PathBuf, bool)> = events
        .iter()
        .map(|f| {
            let p = crate::lake::resolve(&root, &f.path);
            (p, f.data_version() > since)
        })
        .collect();
    let threads = opts.threads.max(1);
    let (mut done, mut events_read, mut engine_ms) = if warm {
        // Games held in memory, and games never seen before, replay from memory; the others
        // (a closed game with new events, a seed-reuse partner) are read from the lake.
        let mut jobs = Vec::new();
        let mut missing = BTreeSet::new();
        for g in &touched {
            let new = new_lines.remove(g).unwrap_or_default();
            match cached.remove(g) {
                Some(mut lines) => {
                    lines.extend(new);
                    jobs.push((g.clone(), lines));
                }
                None if !old_games.contains(g) => jobs.push((g.clone(), new)),
                None => {
                    missing.insert(g.clone());
                }
            }
        }
        tracing::debug!(
            from_memory = jobs.len(),
            from_lake = missing.len(),
            "resident replay"
        );
        let (mut done, mut n, mut ms) = replay_jobs(&ctx, threads, keep, |tx| {
            let mut n = 0;
            for job in jobs {
                n += job.1.len() as u64;
                tx.send(job).map_err(|_| ReplayError::Worker)?;
            }
            Ok(n)
        })?;
        if !missing.is_empty() {
            let hidden = indicatif::ProgressBar::hidden();
            let (more, n2, ms2) =
                replay_files(&files, Some(&missing), &ctx, threads, keep, &hidden)?;
            done.extend(more);
            n += n2;
            ms += ms2;
            done.sort_by(|a, b| a.0.cmp(&b.0));
        }
        (done, n, ms)
    } else {
        let total_rows: u64 = events.iter().map(|f| f.rows).sum();
        let bar = progress(opts.progress, total_rows);
        let out = replay_files(&files, filter, &ctx, threads, keep, &bar)?;
        bar.finish_and_clear();
        out
    };
    // A game new to the index may take its seed or commitment from a line of an earlier pass
    // (its lines came before its game_started, so it had no game row): recall the games of
    // those keys too, and replay them, so that both sides carry the reuse.
    let late_keys: Vec<(Option<String>, Option<String>)> = done
        .iter()
        .filter_map(|(_, r, _)| r.game.as_ref())
        .filter(|g| !old_games.contains(&g.game))
        .map(|g| {
            let fresh = |k: &Option<String>| k.clone().filter(|k| !seen_keys.contains(k));
            (fresh(&g.commitment), fresh(&g.seed))
        })
        .filter(|(c, s)| c.is_some() || s.is_some())
        .collect();
    if !late_keys.is_empty() {
        let keys = late_keys
            .iter()
            .flat_map(|(c, s)| [c.clone(), s.clone()])
            .flatten();
        super::recall::recall(&root, &state, &mut old_games, &BTreeSet::new(), keys)?;
        let partners: BTreeSet<String> = late_keys
            .iter()
            .flat_map(|(c, s)| old_games.users(c.as_deref(), s.as_deref()))
            .filter(|o| !touched.contains(*o))
            .map(str::to_string)
            .collect();
        if !partners.is_empty() {
            let hidden = indicatif::ProgressBar::hidden();
            let (more, n, ms) =
                replay_files(&files, Some(&partners), &ctx, threads, keep, &hidden)?;
            done.extend(more);
            done.sort_by(|a, b| a.0.cmp(&b.0));
            events_read += n;
            engine_ms += ms;
            touched.extend(partners);
        }
    }
    let mut replays = Vec::with_capacity(done.len());
    let mut held: Vec<(String, Vec<String>)> = Vec::new();
    for (game, r, lines) in done {
        if let Some(lines) = lines {
            held.push((game, lines));
        }
        replays.push(r);
    }
    seed_reuse(&mut replays, &old_games, &touched);
    // Games that were closed before and changed: their rows sit in closed files to rewrite.
    let closed_before: BTreeSet<String> = replays
        .iter()
        .filter_map(|r| r.game.as_ref())
        .filter(|g| old_games.get(&g.game).is_some_and(|o| o.closed))
        .map(|g| g.game.clone())
        .collect();
    let replayed: BTreeSet<String> = replays
        .iter()
        .filter_map(|r| r.game.as_ref().map(|g| g.game.clone()))
        .collect();
    let mut report = ReplayReport {
        games: replays.len() as u64,
        events: events_read,
        engine_ms,
        ..ReplayReport::default()
    };
    for r in &replays {
        for f in &r.findings {
            report.findings += 1;
            match f.category {
                Category::Attempt => report.attempt_findings += 1,
                Category::Integrity => report.integrity_findings += 1,
                Category::Fairness => report.fairness_findings += 1,
            }
        }
        if r.game.as_ref().is_some_and(|g| !g.closed) {
            report.open_games += 1;
        }
    }
    // What the resident index learns if the commit lands.
    let updates: Vec<GameRow> = if keep {
        replays.iter().filter_map(|r| r.game.clone()).collect()
    } else {
        Vec::new()
    };
    let mut txn = writer.begin("replay")?;
    write_outputs(&mut txn, &root, &state, replays, &replayed, &closed_before)?;
    txn.put_stage(&ReplayStage {
        version: state.version,
        horizon_ms: horizon,
    })?;
    report.elapsed_ms = started.elapsed().as_millis() as u64;
    let summary = serde_json::to_value(&report).unwrap_or_default();
    report.version = Some(txn.commit(summary)?);
    if let Some(r) = resident {
        // A rebuilt account list replaces `known` in `settle`: complete that one.
        let known = rebuilt.as_mut().unwrap_or(&mut r.known);
        for g in updates {
            let (c, s) = (g.commitment.as_deref(), g.seed.as_deref());
            old_games.insert(&g.game, g.closed, g.last_ts.0, c, s);
            known.extend(g.players.iter().cloned());
            r.accounts.extend(g.players);
        }
        cached.extend(held);
        r.settle(state.version, old_games, cached, rebuilt, horizon);
    }
    Ok(report)
}

fn progress(enabled: bool, total: u64) -> indicatif::ProgressBar {
    if !enabled {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(total);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} replay [{bar:40}] {pos}/{len} events {per_sec} eta {eta}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    bar
}

/// Games with rows in the open `findings` files but no `games` row: their lines came before
/// their `game_started` (or never made a game). No index knows them, so a resident state
/// being built must replay them to hold their lines.
fn rowless_games(
    root: &Path,
    state: &State,
    index: &GameIndex,
) -> Result<BTreeSet<String>, ReplayError> {
    let mut out = BTreeSet::new();
    for f in state.table_files("findings").filter(|f| f.open) {
        let path = crate::lake::resolve(root, &f.path);
        for b in read_file(&path, Some(&["game"]))? {
            let games = b.column(0).as_string::<i32>();
            for i in 0..b.num_rows() {
                let g = games.value(i);
                if !index.contains(g) && !out.contains(g) {
                    out.insert(g.to_string());
                }
            }
        }
    }
    Ok(out)
}

/// Reads the `games` table's index columns: the index, and with `accounts` every account that played.
pub fn read_game_index(
    root: &Path,
    state: &State,
    accounts: bool,
) -> Result<(GameIndex, Option<BTreeSet<String>>), ReplayError> {
    let mut index = GameIndex::default();
    let mut known = accounts.then(BTreeSet::new);
    let mut columns = super::recall::COLUMNS.to_vec();
    if accounts {
        columns.push("players");
    }
    for f in state.table_files("games") {
        let path = crate::lake::resolve(root, &f.path);
        for b in read_file(&path, Some(&columns))? {
            let players = match known {
                Some(_) => Some(
                    b.column(b.schema().index_of("players")?)
                        .as_list::<i32>()
                        .clone(),
                ),
                None => None,
            };
            super::recall::index_rows(&b, |i, r| {
                index.insert(r.game, r.closed, r.last_ts, r.commitment, r.seed);
                if let (Some(known), Some(players)) = (known.as_mut(), players.as_ref()) {
                    let list = players.value(i);
                    let list = list.as_string::<i32>();
                    for k in 0..list.len() {
                        if !known.contains(list.value(k)) {
                            known.insert(list.value(k).to_string());
                        }
                    }
                }
            })?;
        }
    }
    index.shrink();
    Ok((index, known))
}

/// The row groups of a Parquet file that may hold one of the `wanted` games (all without a
/// filter): those whose `game` statistics span one of them and whose bloom filter on `game`
/// (when the file has one) does not rule them all out.
///
/// Statistics alone say little: files of different days overlap in key range (game ids are
/// kind-prefixed), so the bloom filter is what skips the files of other games.
fn row_groups_of(
    builder: &ParquetRecordBatchReaderBuilder<File>,
    filter: Option<&BTreeSet<String>>,
) -> Vec<usize> {
    let schema = builder.parquet_schema();
    let game_idx = (0..schema.num_columns()).find(|&i| schema.column(i).name() == "game");
    let mut groups = Vec::new();
    for (i, rg) in builder.metadata().row_groups().iter().enumerate() {
        let keep = match (filter, game_idx.and_then(|c| rg.column(c).statistics())) {
            (Some(wanted), Some(Statistics::ByteArray(st))) => match (st.min_opt(), st.max_opt()) {
                (Some(min), Some(max)) => {
                    let min = String::from_utf8_lossy(min.data()).into_owned();
                    let max = String::from_utf8_lossy(max.data()).into_owned();
                    wanted.range(min..).next().is_some_and(|g| *g <= max)
                }
                _ => true,
            },
            _ => true,
        };
        let keep = keep
            && match (filter, game_idx) {
                (Some(wanted), Some(c)) => match builder.get_row_group_column_bloom_filter(i, c) {
                    Ok(Some(bloom)) => wanted.iter().any(|g| bloom.check(g.as_str())),
                    _ => true,
                },
                _ => true,
            };
        if keep {
            groups.push(i);
        }
    }
    groups
}

/// Rows a cursor decodes at a time. A full replay keeps a cursor open on every events file
/// (a month batch-ingested is 1,846 files, their key ranges overlapping), so this, times the
/// files, is the decoded lines held at once.
const CURSOR_BATCH_ROWS: usize = 1024;

/// One events file read in (game, seq) order, restricted to the wanted games.
struct Cursor {
    reader: ParquetRecordBatchReader,
    batch: Option<RecordBatch>,
    row: usize,
}

impl Cursor {
    fn open(path: &Path, filter: Option<&BTreeSet<String>>) -> Result<Option<Cursor>, ReplayError> {
        let file = File::open(path).map_err(io(path))?;
        let builder = ParquetRecordBatchReaderBuilder::try_new(file)?;
        let mask = ProjectionMask::columns(builder.parquet_schema(), ["game", "seq", "raw"]);
        let groups = row_groups_of(&builder, filter);
        if groups.is_empty() {
            return Ok(None);
        }
        let reader = builder
            .with_projection(mask)
            .with_row_groups(groups)
            .with_batch_size(CURSOR_BATCH_ROWS)
            .build()?;
        let mut c = Cursor {
            reader,
            batch: None,
            row: 0,
        };
        c.refill()?;
        Ok(c.batch.is_some().then_some(c))
    }

    fn refill(&mut self) -> Result<(), ReplayError> {
        self.row = 0;
        self.batch = self.reader.next().transpose()?;
        Ok(())
    }

    fn game(&self) -> Option<&str> {
        let b = self.batch.as_ref()?;
        Some(b.column(0).as_string::<i32>().value(self.row))
    }

    /// Takes every row of `game` at the cursor (they are contiguous).
    fn take(&mut self, game: &str, out: &mut Vec<String>) -> Result<(), ReplayError> {
        while let Some(b) = self.batch.as_ref() {
            let g = b.column(0).as_string::<i32>();
            let raw = b.column(2).as_string::<i32>();
            while self.row < b.num_rows() && g.value(self.row) == game {
                out.push(raw.value(self.row).to_string());
                self.row += 1;
            }
            if self.row < b.num_rows() {
                return Ok(());
            }
            self.refill()?;
        }
        Ok(())
    }

    fn skip_game(&mut self) -> Result<(), ReplayError> {
        let Some(game) = self.game().map(str::to_string) else {
            return Ok(());
        };
        let mut sink = Vec::new();
        self.take(&game, &mut sink)
    }
}

/// A replayed game: its id, the replay, and its raw lines when asked to keep those of open games.
pub(crate) type Replayed = (String, GameReplay, Option<Vec<String>>);

/// Replays the games `feed` sends (game, raw lines) on `threads` workers, sorted by game.
///
/// `feed` runs on the calling thread and returns how many events it sent.
/// With `keep`, the lines of games still open come back with their replay.
fn replay_jobs(
    ctx: &Context,
    threads: usize,
    keep: bool,
    feed: impl FnOnce(&mpsc::SyncSender<(String, Vec<String>)>) -> Result<u64, ReplayError>,
) -> Result<(Vec<Replayed>, u64, u64), ReplayError> {
    let (job_tx, job_rx) = mpsc::sync_channel::<(String, Vec<String>)>(threads * 4);
    let job_rx = std::sync::Mutex::new(job_rx);
    std::thread::scope(|scope| {
        let (res_tx, res_rx) = mpsc::channel::<(Replayed, u64)>();
        let mut handles = Vec::new();
        for _ in 0..threads {
            let job_rx = &job_rx;
            let res_tx = res_tx.clone();
            handles.push(scope.spawn(move || {
                loop {
                    let job = match job_rx.lock() {
                        Ok(rx) => rx.recv(),
                        Err(_) => return,
                    };
                    let Ok((game, raws)) = job else { return };
                    let t0 = Instant::now();
                    let kept = keep.then(|| raws.clone());
                    let lines: Vec<Logged> = raws
                        .into_iter()
                        .filter_map(|r| Logged::parse(r).ok())
                        .collect();
                    let r = replay_game(&game, lines, ctx);
                    let kept = kept.filter(|_| r.game.as_ref().is_none_or(|g| !g.closed));
                    let us = t0.elapsed().as_micros() as u64;
                    if res_tx.send(((game, r, kept), us)).is_err() {
                        return;
                    }
                }
            }));
        }
        drop(res_tx);
        let collector = scope.spawn(move || {
            let mut out = Vec::new();
            let mut engine_us = 0;
            for (r, us) in res_rx {
                engine_us += us;
                out.push(r);
            }
            (out, engine_us)
        });
        let fed = feed(&job_tx);
        drop(job_tx);
        let mut joined = Ok(());
        for h in handles {
            if h.join().is_err() {
                joined = Err(ReplayError::Worker);
            }
        }
        let (mut out, engine_us) = collector.join().map_err(|_| ReplayError::Worker)?;
        let events = fed?;
        joined?;
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok((out, events, engine_us / 1000))
    })
}

/// Reads the events files merged by game and replays the wanted games on `threads` workers.
pub(crate) fn replay_files(
    files: &[(PathBuf, bool)],
    filter: Option<&BTreeSet<String>>,
    ctx: &Context,
    threads: usize,
    keep: bool,
    bar: &indicatif::ProgressBar,
) -> Result<(Vec<Replayed>, u64, u64), ReplayError> {
    let mut cursors = Vec::new();
    for (path, _) in files {
        if let Some(c) = Cursor::open(path, filter)? {
            cursors.push(c);
        }
    }
    replay_jobs(ctx, threads, keep, |job_tx| {
        let mut events = 0u64;
        let mut heap: BinaryHeap<std::cmp::Reverse<(String, usize)>> = BinaryHeap::new();
        for (i, c) in cursors.iter().enumerate() {
            if let Some(g) = c.game() {
                heap.push(std::cmp::Reverse((g.to_string(), i)));
            }
        }
        while let Some(std::cmp::Reverse((game, i))) = heap.pop() {
            // Every cursor positioned on this game contributes its rows.
            let mut sources = vec![i];
            while let Some(std::cmp::Reverse((g, _))) = heap.peek() {
                if *g != game {
                    break;
                }
                if let Some(std::cmp::Reverse((_, j))) = heap.pop() {
                    sources.push(j);
                }
            }
            let wanted = filter.is_none_or(|f| f.contains(&game));
            let mut raws = Vec::new();
            for &j in &sources {
                if wanted {
                    cursors[j].take(&game, &mut raws)?;
                } else {
                    cursors[j].skip_game()?;
                }
                if let Some(g) = cursors[j].game() {
                    heap.push(std::cmp::Reverse((g.to_string(), j)));
                }
            }
            if wanted {
                events += raws.len() as u64;
                bar.inc(raws.len() as u64);
                job_tx.send((game, raws)).map_err(|_| ReplayError::Worker)?;
            }
        }
        Ok(events)
    })
}

/// Seed and commitment reuse across games: a finding against every game sharing one, naming the other.
///
/// `seeds` knows the games replayed before; those of `touched` are known by their replays instead.
pub fn seed_reuse(replays: &mut [GameReplay], seeds: &GameIndex, touched: &BTreeSet<String>) {
    // Everything known after this run: old games not replayed now, and the replays.
    let mut now = GameIndex::default();
    for r in replays.iter() {
        if let Some(g) = &r.game {
            now.insert(
                &g.game,
                g.closed,
                g.last_ts.0,
                g.commitment.as_deref(),
                g.seed.as_deref(),
            );
        }
    }
    let mut found: Vec<(usize, Finding)> = Vec::new();
    for (idx, r) in replays.iter().enumerate() {
        let Some(g) = &r.game else { continue };
        let (c, s) = (g.commitment.as_deref(), g.seed.as_deref());
        let mut partners: BTreeSet<&str> = seeds
            .users(c, s)
            .filter(|o| !touched.contains(*o))
            .chain(now.users(c, s))
            .collect();
        partners.remove(g.game.as_str());
        for other in partners {
            let seq = g.reveal_seq.unwrap_or(0);
            let mut f = Finding::new(
                &g.game,
                seq,
                Code::SeedReused,
                format!("the seed or commitment of this game was also used by game {other}"),
            );
            f.expected("a fresh seed per game")
                .logged(format!("shared with {other}"));
            found.push((idx, f));
        }
    }
    for (idx, f) in found {
        let r = &mut replays[idx];
        r.findings.push(f);
        r.findings.sort_by_key(|f| (f.seq, f.code));
        if let Some(g) = r.game.as_mut() {
            g.fairness_findings += 1;
            g.fairness = "fail".into();
        }
    }
}

/// Rows of one derived table gathered for writing, by (partition, open).
type Buckets = BTreeMap<(String, bool), Vec<RecordBatch>>;

/// Writes the replays, carrying over rows of old open files and rewriting closed files that held changed games.
fn write_outputs(
    txn: &mut Txn<'_, '_>,
    root: &Path,
    state: &State,
    replays: Vec<GameReplay>,
    replayed: &BTreeSet<String>,
    closed_before: &BTreeSet<String>,
) -> Result<(), ReplayError> {
    let tables = derived_tables();
    let mut buckets: BTreeMap<&'static str, Buckets> = BTreeMap::new();
    // New rows, as batches per (partition, open).
    let mut by_key: BTreeMap<(String, bool), Vec<GameReplay>> = BTreeMap::new();
    for r in replays {
        let open = r.game.as_ref().is_none_or(|g| !g.closed);
        by_key
            .entry((format!("date={}", r.date), open))
            .or_default()
            .push(r);
    }
    for (key, group) in by_key {
        let mut findings = Vec::new();
        let mut games = Vec::new();
        let mut players = Vec::new();
        let mut moves = Vec::new();
        let mut departures = Vec::new();
        for r in group {
            findings.extend(finding_rows_with_ts(&r));
            if let Some(g) = r.game {
                games.push(g);
            }
            players.extend(r.players);
            moves.extend(r.moves);
            departures.extend(r.departures);
        }
        let push =
            |b: &mut BTreeMap<&'static str, Buckets>, name: &'static str, batch: RecordBatch| {
                if batch.num_rows() > 0 {
                    b.entry(name)
                        .or_default()
                        .entry(key.clone())
                        .or_default()
                        .push(batch);
                }
            };
        push(&mut buckets, "findings", FindingRow::to_batch(&findings)?);
        push(&mut buckets, "games", GameRow::to_batch(&games)?);
        push(&mut buckets, "game_players", PlayerRow::to_batch(&players)?);
        push(&mut buckets, "moves", MoveRow::to_batch(&moves)?);
        push(
            &mut buckets,
            "departures",
            DepartureRow::to_batch(&departures)?,
        );
    }
    // Old files to rewrite: every open file, and closed files holding a changed closed game.
    for table in &tables {
        for f in state.table_files(table.name) {
            let rewrite = f.open
                || (!closed_before.is_empty()
                    && match (&f.min_key, &f.max_key) {
                        (Some(min), Some(max)) => closed_before
                            .range(min.clone()..)
                            .next()
                            .is_some_and(|g| g <= max),
                        _ => true,
                    });
            if !rewrite {
                continue;
            }
            let path = crate::lake::resolve(root, &f.path);
            // A closed file is read whole only if it may hold a changed game (its key range
            // alone spans nearly every game id).
            if !f.open {
                let file = File::open(&path).map_err(io(&path))?;
                let builder = ParquetRecordBatchReaderBuilder::try_new(file)?;
                if row_groups_of(&builder, Some(closed_before)).is_empty() {
                    continue;
                }
            }
            let mut kept = Vec::new();
            let mut dropped = false;
            for b in read_file(&path, None)? {
                let games = b
                    .column(b.schema().index_of("game")?)
                    .as_string::<i32>()
                    .clone();
                let keep: BooleanArray = (0..b.num_rows())
                    .map(|i| Some(!replayed.contains(games.value(i))))
                    .collect();
                dropped |= keep.true_count() < b.num_rows();
                let filtered = arrow::compute::filter_record_batch(&b, &keep)?;
                if filtered.num_rows() > 0 {
                    kept.push(filtered);
                }
            }
            if !f.open && !dropped {
                continue;
            }
            txn.remove_file(&f.path);
            let key = (f.partition.clone().unwrap_or_default(), f.open);
            for b in kept {
                buckets
                    .entry(table.name)
                    .or_default()
                    .entry(key.clone())
                    .or_default()
                    .push(b);
            }
        }
    }
    for table in &tables {
        let Some(parts) = buckets.remove(table.name) else {
            continue;
        };
        for ((partition, open), batches) in parts {
            let file = txn.new_file(table.name, Some(&partition))?;
            let mut meta = write_sorted(&file.pending, table, table.schema(), &batches)?;
            meta.open = open;
            txn.add_file_meta(file, meta);
        }
    }
    Ok(())
}

/// Finding rows of a replay, with the timestamp of the event each is about.
fn finding_rows_with_ts(r: &GameReplay) -> Vec<FindingRow> {
    let ts: BTreeMap<i64, i64> = r
        .moves
        .iter()
        .map(|m| (m.seq, m.ts.0))
        .chain(r.departures.iter().map(|d| (d.seq, d.ts.0)))
        .collect();
    let mut rows = r.finding_rows();
    for row in &mut rows {
        row.ts = ts.get(&row.seq).map(|&t| crate::lake::record::Ts(t));
    }
    rows
}
