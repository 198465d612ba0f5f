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

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fs::File;
use std::path::Path;
use std::time::Instant;

use arrow::array::{Array, AsArray, BooleanArray};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde::Serialize;

use super::finding::{Category, Code, Finding};
use super::game::{Context, GameReplay, NEVER_ENDED_AFTER_MS};
use super::index::GameIndex;
use super::merge::{
    EventsFile, MergeStats, Replayed, Spill, key64, replay_files, replay_jobs, row_groups_of,
};
use super::output::{Key, Outputs, Parts, key_of};
use super::rows::{DepartureRow, FindingRow, GameRow, MoveRow, PlayerRow};
use crate::lake::parquet::read_file;
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
    /// Games whose rows waited in memory for the seed-reuse check at the end of the run.
    #[serde(default)]
    pub held: u64,
    /// A re-judgement: what changed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rejudged: Option<Rejudged>,
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
    resident: Option<&mut Resident>,
) -> Result<ReplayReport, ReplayError> {
    run_scoped(lake, opts, resident, None)
}

/// A period of game start dates (UTC days, inclusive) whose games are re-judged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Period {
    pub from: String,
    pub to: String,
}

impl Period {
    /// Whether a partition (`date=YYYY-MM-DD`) lies in the period.
    pub fn holds(&self, partition: &str) -> bool {
        self.reaches(partition)
            && partition
                .strip_prefix("date=")
                .is_some_and(|d| d <= self.to.as_str())
    }

    /// Whether a partition (`date=YYYY-MM-DD`) is the period's first day or later.
    pub fn reaches(&self, partition: &str) -> bool {
        partition
            .strip_prefix("date=")
            .is_some_and(|d| d >= self.from.as_str())
    }
}

/// What changed in the findings of re-judged games (compared by game, seq and code).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Rejudged {
    pub from: String,
    pub to: String,
    /// The rules engines that judged them again (`vigie-rules` version).
    pub engine: String,
    pub games: u64,
    pub findings_before: u64,
    pub findings_after: u64,
    /// Findings the new judgement adds or withdraws: `game:seq code`.
    pub added: Vec<String>,
    pub withdrawn: Vec<String>,
    /// Accounts of the games whose findings changed.
    pub accounts: Vec<String>,
    /// Every account of the re-judged games: detection recomputes their features (other
    /// derived rows, such as think times, may change without a finding changing).
    #[serde(skip)]
    pub players: Vec<String>,
}

/// Catches up like [`run`], then judges again, with the current engines, every game that started
/// in `period`: their old derived rows are replaced in one commit (the files of the period's
/// partitions are removed whole, so nothing is lost or doubled).
pub fn rejudge(
    lake: &Lake,
    opts: &ReplayOptions,
    period: &Period,
) -> Result<(ReplayReport, ReplayReport), ReplayError> {
    let caught_up = run(lake, opts)?;
    let rejudged = run_scoped(lake, opts, None, Some(period))?;
    Ok((caught_up, rejudged))
}

/// Every game with rows in the derived tables' partitions of `period` (games and findings hold
/// them all: a game without a `games` row has only findings), and its old findings.
fn games_in_period(
    root: &Path,
    state: &State,
    period: &Period,
) -> Result<(BTreeSet<String>, BTreeSet<FindingKey>), ReplayError> {
    let mut games = BTreeSet::new();
    let mut findings = BTreeSet::new();
    for table in ["games", "findings"] {
        for f in state.table_files(table) {
            if !f.partition.as_deref().is_some_and(|p| period.holds(p)) {
                continue;
            }
            let path = crate::lake::resolve(root, &f.path);
            let columns: &[&str] = if table == "findings" {
                &["game", "seq", "code"]
            } else {
                &["game"]
            };
            for b in read_file(&path, Some(columns))? {
                let g = b.column(0).as_string::<i32>();
                for i in 0..b.num_rows() {
                    if !games.contains(g.value(i)) {
                        games.insert(g.value(i).to_string());
                    }
                }
                if table == "findings" {
                    let seq = b.column(1).as_primitive::<arrow::datatypes::Int64Type>();
                    let code = b.column(2).as_string::<i32>();
                    for i in 0..b.num_rows() {
                        findings.insert((
                            g.value(i).to_string(),
                            seq.value(i),
                            code.value(i).to_string(),
                        ));
                    }
                }
            }
        }
    }
    Ok((games, findings))
}

/// A finding as compared across a re-judgement: game, seq and code.
type FindingKey = (String, i64, String);

/// Which seeds and commitments the lines of a full run use more than once. While the run reads
/// the keys, it lists each (key, game) pair once by [`key64`] digest (16 bytes a pair); then it
/// keeps only the keys several games used (a digest collision only holds a game back for the
/// seed-reuse check, which compares the keys themselves).
#[derive(Default)]
struct KeyUse {
    pairs: Vec<(u64, u64)>,
    shared: HashSet<u64>,
}

impl KeyUse {
    /// The digest of a key, commitments and seeds apart.
    fn key(kind: &str, key: &str) -> u64 {
        key64((kind, key))
    }

    fn note(&mut self, kind: &str, key: &str, game: &str) {
        let pair = (Self::key(kind, key), key64(game));
        // A file's rows are sorted by game: a game's repeats of a key are next to each other.
        if self.pairs.last() != Some(&pair) {
            self.pairs.push(pair);
        }
    }

    /// Keeps the keys used by more than one game, and lets the pairs go.
    fn finish(&mut self) {
        let mut pairs = std::mem::take(&mut self.pairs);
        pairs.sort_unstable();
        pairs.dedup();
        self.shared = pairs
            .chunk_by(|a, b| a.0 == b.0)
            .filter(|games| games.len() > 1)
            .map(|games| games[0].0)
            .collect();
    }

    /// Whether a game row's seed or commitment is used by more than one game.
    fn shared(&self, commitment: Option<&str>, seed: Option<&str>) -> bool {
        let hit =
            |kind, k: Option<&str>| k.is_some_and(|k| self.shared.contains(&Self::key(kind, k)));
        hit("commitment", commitment) || hit("seed", seed)
    }
}

/// A replayed game whose `games` row and findings wait for the seed-reuse check at the end of
/// the run; its other rows are already on their way.
struct Held {
    key: Key,
    replay: GameReplay,
}

/// What the resident index learns of a game: id, closed, last event, commitment, seed.
type IndexUpdate = (String, bool, i64, Option<String>, Option<String>);

/// What a run gathers from each replayed game besides its rows.
#[derive(Default)]
struct Collect {
    report: ReplayReport,
    /// A full run: nothing in the lake to replace, and only games sharing a key are held.
    full: bool,
    keys: KeyUse,
    held: Vec<Held>,
    /// Every game replayed (not gathered in a full run): its old rows are replaced.
    replayed: BTreeSet<String>,
    /// Replayed games that were closed before: their rows sit in closed files.
    closed_before: BTreeSet<String>,
    /// For a resident state: what the index learns, the accounts, the lines of open games.
    keep: bool,
    updates: Vec<IndexUpdate>,
    accounts: BTreeSet<String>,
    lines: Vec<(String, Vec<String>)>,
    /// Seeds and commitments of games new to the index that the run's lines did not show.
    late_keys: Vec<(Option<String>, Option<String>)>,
    /// A re-judgement in which every game replayed is in the index (read whole from the lake):
    /// a game whose seed and commitment no other game of the index used cannot share them with
    /// any game, so its rows are written at once instead of held for the seed-reuse check
    /// (the memory of a re-judgement then follows the games that share a key, not the period).
    release_alone: bool,
    /// Re-judgements: the findings of the re-judged games, every replayed game's players, and
    /// the players of the re-judged games whose findings changed.
    findings_after: BTreeSet<FindingKey>,
    players: BTreeSet<String>,
    changed_players: BTreeSet<String>,
}

/// The findings of `game` among `keys`.
fn findings_of<'a>(
    keys: &'a BTreeSet<FindingKey>,
    game: &'a str,
) -> impl Iterator<Item = &'a FindingKey> {
    keys.range((game.to_string(), i64::MIN, String::new())..)
        .take_while(move |k| k.0 == game)
}

/// A re-judgement's period: its games, and their findings before it.
type PeriodGames<'a> = (&'a BTreeSet<String>, &'a BTreeSet<FindingKey>);

impl Collect {
    /// What a re-judgement reports of a replayed game: its findings if it is re-judged, its
    /// players, and whether its findings changed (then its players are the accounts concerned).
    fn note_period(&mut self, r: &GameReplay, (rejudged, before): PeriodGames<'_>) {
        for f in &r.findings {
            if rejudged.contains(&f.game) {
                self.findings_after
                    .insert((f.game.clone(), f.seq, f.code.as_str().to_string()));
            }
        }
        let Some(g) = &r.game else { return };
        self.players.extend(g.players.iter().cloned());
        // The game's findings after (a game is noted once) and before.
        if rejudged.contains(&g.game)
            && !findings_of(&self.findings_after, &g.game).eq(findings_of(before, &g.game))
        {
            self.changed_players.extend(g.players.iter().cloned());
        }
    }

    fn count(&mut self, r: &GameReplay) {
        for f in &r.findings {
            self.report.findings += 1;
            match f.category {
                Category::Attempt => self.report.attempt_findings += 1,
                Category::Integrity => self.report.integrity_findings += 1,
                Category::Fairness => self.report.fairness_findings += 1,
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn accept(
        &mut self,
        txn: &mut Txn<'_, '_>,
        out: &mut Outputs,
        old: &GameIndex,
        seen_keys: &BTreeSet<String>,
        period: Option<PeriodGames<'_>>,
        (game, mut r, lines): Replayed,
    ) -> Result<(), ReplayError> {
        self.report.games += 1;
        if r.game.as_ref().is_some_and(|g| !g.closed) {
            self.report.open_games += 1;
        }
        if let Some(lines) = lines {
            self.lines.push((game.clone(), lines));
        }
        if !self.full {
            if old.get(&game).is_some_and(|o| o.closed) {
                self.closed_before.insert(game.clone());
            }
            self.replayed.insert(game);
        }
        if let Some(g) = &r.game {
            if self.keep {
                self.updates.push((
                    g.game.clone(),
                    g.closed,
                    g.last_ts.0,
                    g.commitment.clone(),
                    g.seed.clone(),
                ));
                self.accounts.extend(g.players.iter().cloned());
            }
            if !self.full && !old.contains(&g.game) {
                let fresh = |k: &Option<String>| k.clone().filter(|k| !seen_keys.contains(k));
                let (c, s) = (fresh(&g.commitment), fresh(&g.seed));
                if c.is_some() || s.is_some() {
                    self.late_keys.push((c, s));
                }
            }
        }
        let hold = match &r.game {
            Some(g) if self.full => self.keys.shared(g.commitment.as_deref(), g.seed.as_deref()),
            Some(g) if self.release_alone => {
                !old.alone(&g.game, g.commitment.as_deref(), g.seed.as_deref())
            }
            _ => !self.full,
        };
        if !hold {
            if let Some(p) = period {
                self.note_period(&r, p);
            }
            self.count(&r);
            return out.push(txn, r);
        }
        // The list of draws (for public verification) is not a table.
        r.draw_list = Vec::new();
        let key = key_of(&r);
        let parts = Parts {
            players: std::mem::take(&mut r.players),
            moves: std::mem::take(&mut r.moves),
            departures: std::mem::take(&mut r.departures),
            ..Parts::default()
        };
        out.push_rows(txn, key.clone(), parts)?;
        self.held.push(Held { key, replay: r });
        Ok(())
    }
}

/// [`run`] or, with `period`, a re-judgement of the games that started in it.
fn run_scoped(
    lake: &Lake,
    opts: &ReplayOptions,
    mut resident: Option<&mut Resident>,
    period: Option<&Period>,
) -> Result<ReplayReport, ReplayError> {
    let started = Instant::now();
    let mut writer = lake.writer()?;
    let state = lake.state()?;
    let root = lake.root().to_path_buf();
    let since = state.stage::<ReplayStage>()?.map_or(0, |s| s.version);
    let events: Vec<&FileEntry> = state.table_files("events").collect();
    let horizon = state.latest_event_ms();
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
    // Games re-judged: every game with derived rows in the period.
    let (rejudged, findings_before) = match period {
        Some(p) => games_in_period(&root, &state, p)?,
        None => Default::default(),
    };
    if new_files.is_empty() && stale.is_empty() && rejudged.is_empty() {
        if let Some(r) = resident.as_deref_mut() {
            r.settle(since, old_games, cached, rebuilt, horizon);
        }
        return Ok(ReplayReport {
            elapsed_ms: started.elapsed().as_millis() as u64,
            ..ReplayReport::default()
        });
    }
    // A full run: nothing was replayed before, every game is new.
    let full = !warm && since == 0 && old_games.is_empty() && period.is_none();
    let mut touched: BTreeSet<String> = stale;
    // Games replayed before without a `games` row: their lines may be in any file.
    let rowless = if full || warm {
        BTreeSet::new()
    } else {
        rowless_games(&root, &state, &old_games)?
    };
    if keep && !warm {
        // Building the resident state: every open game is replayed once (to the same rows) to hold its lines.
        touched.extend(
            old_games
                .iter()
                .filter(|(_, g)| !g.closed)
                .map(|(g, _)| g.to_string()),
        );
        touched.extend(rowless.iter().cloned());
    }
    let mut keys = KeyUse::default();
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
            if full {
                // Every game is replayed: only which keys several games share matters here.
                for i in 0..b.num_rows() {
                    if !c.is_null(i) {
                        keys.note("commitment", c.value(i), g.value(i));
                    }
                    if !s.is_null(i) {
                        keys.note("seed", s.value(i), g.value(i));
                    }
                }
                continue;
            }
            let raw = warm.then(|| b.column(3).as_string::<i32>());
            for i in 0..b.num_rows() {
                if !touched.contains(g.value(i)) {
                    touched.insert(g.value(i).to_string());
                }
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
    keys.finish();
    // A partial index gets back the old games this run needs: touched games it let go of,
    // and the games of every seed and commitment seen.
    let seen_keys: BTreeSet<String> = new_seeds
        .iter()
        .flat_map(|(_, c, s)| [c.clone(), s.clone()])
        .flatten()
        .collect();
    if !full {
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
    }
    // Games reusing a seed or commitment of a touched game are replayed with it.
    for (g, c, s) in &new_seeds {
        for other in old_games.users(c.as_deref(), s.as_deref()) {
            if other != g {
                touched.insert(other.to_string());
            }
        }
    }
    let ctx = Context {
        horizon_ms: horizon,
    };
    let files = |pick: &dyn Fn(&FileEntry) -> bool| -> Vec<EventsFile> {
        events
            .iter()
            .filter(|f| pick(f))
            .map(|f| EventsFile {
                path: crate::lake::resolve(&root, &f.path),
                partition: f.partition.clone().unwrap_or_default(),
            })
            .collect()
    };
    let all_files = files(&|_| true);
    let threads = opts.threads.max(1);
    // Runs of a partition's many files go under the lake's temporary directory, named after the
    // writer, so that recovery deletes those of a killed run.
    let spill = Spill::new(root.join("_vigie/tmp"), writer.id());
    // The games of some files (all, or the `wanted` ones), replayed into `sink`.
    let replay = |read: &[EventsFile],
                  wanted: Option<&BTreeSet<String>>,
                  bar: &indicatif::ProgressBar,
                  sink: &mut dyn FnMut(Replayed) -> Result<(), ReplayError>| {
        replay_files(read, wanted, &ctx, threads, keep, Some(&spill), bar, sink)
    };
    // Games that may have lines in any file, read without a progress bar.
    let from_lake =
        |wanted: &BTreeSet<String>, sink: &mut dyn FnMut(Replayed) -> Result<(), ReplayError>| {
            replay(
                &all_files,
                Some(wanted),
                &indicatif::ProgressBar::hidden(),
                sink,
            )
        };
    let mut txn = writer.begin(if period.is_some() {
        "rejudge"
    } else {
        "replay"
    })?;
    let mut out = Outputs::new(derived_tables());
    // A re-judgement after the catch-up replays the period's games and the stale ones, all in
    // the index read whole from the lake, unless a game of the period has findings but no
    // `games` row: then every game is held, as in any other run.
    let release_alone = period.is_some()
        && resident.is_none()
        && !old_games.is_partial()
        && rejudged.iter().all(|g| old_games.contains(g));
    let mut col = Collect {
        full,
        keys,
        keep,
        release_alone,
        ..Collect::default()
    };
    let period_games = period.is_some().then_some((&rejudged, &findings_before));
    let mut stats = MergeStats::default();
    {
        let mut sink =
            |r: Replayed| col.accept(&mut txn, &mut out, &old_games, &seen_keys, period_games, r);
        if warm {
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
            stats += replay_jobs(
                &ctx,
                threads,
                keep,
                |feed| {
                    let mut n = 0;
                    for (game, lines) in jobs {
                        n += lines.len() as u64;
                        feed.send(game, lines)?;
                    }
                    Ok(n)
                },
                &mut sink,
            )?;
            if !missing.is_empty() {
                stats += from_lake(&missing, &mut sink)?;
            }
        } else if full {
            let total_rows: u64 = events.iter().map(|f| f.rows).sum();
            let bar = progress(opts.progress, total_rows);
            stats += replay(&all_files, None, &bar, &mut sink)?;
            bar.finish_and_clear();
        } else {
            // Re-judged games started in the period: their lines are in its partitions or later.
            let after_from = |f: &FileEntry| {
                period.is_some_and(|p| f.partition.as_deref().is_some_and(|d| p.reaches(d)))
            };
            let total: u64 = events
                .iter()
                .filter(|f| after_from(f))
                .map(|f| f.rows)
                .sum();
            let bar = progress(opts.progress && period.is_some(), total);
            // A game never replayed before has every line in the files added since: only those
            // are read for it. The others (a closed game with a late line, a seed partner, an
            // open or rowless game) may have lines in any partition.
            let (fresh, others): (BTreeSet<String>, BTreeSet<String>) = touched
                .difference(&rejudged)
                .cloned()
                .partition(|g| !old_games.contains(g) && !rowless.contains(g));
            let since_from = files(&after_from);
            let new_only = files(&|f| f.data_version() > since);
            for (read, wanted) in [
                (&since_from, &rejudged),
                (&new_only, &fresh),
                (&all_files, &others),
            ] {
                if !wanted.is_empty() {
                    stats += replay(read, Some(wanted), &bar, &mut sink)?;
                }
            }
            bar.finish_and_clear();
        }
    }
    touched.extend(rejudged.iter().cloned());
    // A game new to the index may take its seed or commitment from a line of an earlier pass
    // (its lines came before its game_started, so it had no game row): recall the games of
    // those keys too, and replay them, so that both sides carry the reuse.
    if !col.late_keys.is_empty() {
        let late_keys = std::mem::take(&mut col.late_keys);
        let keys = late_keys
            .iter()
            .flat_map(|(c, s)| [c.clone(), s.clone()])
            .flatten();
        super::recall::recall(&root, &state, &mut old_games, &BTreeSet::new(), keys)?;
        let partners: BTreeSet<String> = late_keys
            .iter()
            .flat_map(|(c, s)| old_games.users(c.as_deref(), s.as_deref()))
            .filter(|o| !touched.contains(*o) && !col.replayed.contains(*o))
            .map(str::to_string)
            .collect();
        if !partners.is_empty() {
            let mut sink = |r: Replayed| {
                col.accept(&mut txn, &mut out, &old_games, &seen_keys, period_games, r)
            };
            stats += from_lake(&partners, &mut sink)?;
            touched.extend(partners);
        }
    }
    // The held games: seed reuse against each other and the rest of the lake, then their rows.
    let mut held = std::mem::take(&mut col.held);
    let mut replays: Vec<GameReplay> = held
        .iter_mut()
        .map(|h| std::mem::take(&mut h.replay))
        .collect();
    seed_reuse(&mut replays, &old_games, &touched);
    let held_count = replays.len() as u64;
    for (h, r) in held.into_iter().zip(replays) {
        col.count(&r);
        let findings = r.finding_rows();
        if let Some(p) = period_games {
            col.note_period(&r, p);
        }
        let parts = Parts {
            findings,
            game: r.game,
            ..Parts::default()
        };
        out.push_rows(&mut txn, h.key, parts)?;
    }
    if !full {
        // Re-judged games have all their rows in the period's partitions, removed whole.
        let closed_before: BTreeSet<String> =
            col.closed_before.difference(&rejudged).cloned().collect();
        rewrite_old(
            &mut txn,
            &mut out,
            &root,
            &state,
            &col.replayed,
            &closed_before,
            period,
        )?;
    }
    out.finish(&mut txn)?;
    txn.put_stage(&ReplayStage {
        version: state.version,
        horizon_ms: horizon,
    })?;
    let mut report = std::mem::take(&mut col.report);
    report.held = held_count;
    report.events = stats.events;
    report.engine_ms = stats.engine_ms;
    if let Some(p) = period {
        report.rejudged = Some(rejudged_summary(
            p,
            &rejudged,
            &findings_before,
            &col.findings_after,
            std::mem::take(&mut col.players),
            std::mem::take(&mut col.changed_players),
        ));
    }
    report.elapsed_ms = started.elapsed().as_millis() as u64;
    let summary = serde_json::to_value(&report).unwrap_or_default();
    report.version = Some(txn.commit(summary)?);
    if let Some(r) = resident {
        // A rebuilt account list replaces `known` in `settle`: complete that one.
        let known = rebuilt.as_mut().unwrap_or(&mut r.known);
        for (game, closed, last_ts, c, s) in col.updates {
            old_games.insert(&game, closed, last_ts, c.as_deref(), s.as_deref());
        }
        known.extend(col.accounts.iter().cloned());
        r.accounts.extend(col.accounts);
        cached.extend(col.lines);
        r.settle(state.version, old_games, cached, rebuilt, horizon);
    }
    Ok(report)
}

/// What changed in the findings of a re-judgement; the accounts of the games whose findings
/// changed, and of every game replayed.
fn rejudged_summary(
    p: &Period,
    games: &BTreeSet<String>,
    before: &BTreeSet<FindingKey>,
    after: &BTreeSet<FindingKey>,
    players: BTreeSet<String>,
    accounts: BTreeSet<String>,
) -> Rejudged {
    let show = |k: &FindingKey| format!("{}:{} {}", k.0, k.1, k.2);
    Rejudged {
        from: p.from.clone(),
        to: p.to.clone(),
        engine: format!("vigie-rules {}", vigie_rules::VERSION),
        games: games.len() as u64,
        findings_before: before.len() as u64,
        findings_after: after.len() as u64,
        added: after.difference(before).map(show).collect(),
        withdrawn: before.difference(after).map(show).collect(),
        accounts: accounts.into_iter().collect(),
        players: players.into_iter().collect(),
    }
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

/// Games a `seed_reused` finding names at most; the others are counted.
const REUSE_NAMED: usize = 10;

/// Seed and commitment reuse across games: one finding against every game sharing one, naming the
/// others (the first [`REUSE_NAMED`] by id, and how many).
///
/// `seeds` knows the games replayed before; those of `touched` are known by their replays instead.
/// The games sharing a seed and commitment are listed once for all of them, not once per game: a
/// server stuck on one seed for N games costs N findings and about N steps, not N².
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
    let partners = |c: Option<&str>, s: Option<&str>| {
        seeds
            .users(c, s)
            .filter(|o| !touched.contains(*o))
            .chain(now.users(c, s))
    };
    // The games of each shared (commitment, seed), sorted: only for the games that share one.
    let mut shared: HashMap<(Option<&str>, Option<&str>), Vec<&str>> = HashMap::new();
    let mut found: Vec<(usize, Finding)> = Vec::new();
    for (idx, r) in replays.iter().enumerate() {
        let Some(g) = &r.game else { continue };
        let (c, s) = (g.commitment.as_deref(), g.seed.as_deref());
        if !partners(c, s).any(|o| o != g.game) {
            continue;
        }
        let all = shared.entry((c, s)).or_insert_with(|| {
            let set: BTreeSet<&str> = partners(c, s).collect();
            set.into_iter().collect()
        });
        let others = all.len() - usize::from(all.binary_search(&g.game.as_str()).is_ok());
        let named: Vec<&str> = all
            .iter()
            .copied()
            .filter(|o| *o != g.game)
            .take(REUSE_NAMED)
            .collect();
        let seq = g.reveal_seq.unwrap_or(0);
        let (message, logged) = if others == 1 {
            (
                format!(
                    "the seed or commitment of this game was also used by game {}",
                    named[0]
                ),
                format!("shared with {}", named[0]),
            )
        } else {
            let more = if others > named.len() { ", ..." } else { "" };
            (
                format!(
                    "the seed or commitment of this game was also used by {others} other games: {}{more}",
                    named.join(", ")
                ),
                format!("shared with {others} games"),
            )
        };
        let mut f = Finding::new(&g.game, seq, Code::SeedReused, message);
        f.expected("a fresh seed per game").logged(logged);
        found.push((idx, f));
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

/// Replaces the old rows of replayed games: every open file is rewritten (its other rows join
/// the new open files), a closed file holding a changed closed game is rewritten one for one,
/// and the files of a re-judged period are removed whole.
fn rewrite_old(
    txn: &mut Txn<'_, '_>,
    out: &mut Outputs,
    root: &Path,
    state: &State,
    replayed: &BTreeSet<String>,
    closed_before: &BTreeSet<String>,
    period: Option<&Period>,
) -> Result<(), ReplayError> {
    for table in derived_tables() {
        for f in state.table_files(table.name) {
            if period.is_some_and(|p| f.partition.as_deref().is_some_and(|d| p.holds(d))) {
                txn.remove_file(&f.path);
                continue;
            }
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
            if f.open {
                out.carry(key, table.name, kept);
            } else {
                out.write(txn, &table, &key, &kept)?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::KeyUse;

    #[test]
    fn a_key_is_shared_only_when_two_games_used_it() {
        let mut keys = KeyUse::default();
        // g1 logs its seed twice (the reveal and a later line), g2 and g3 share a commitment,
        // g4 uses as its seed the text that is g2's commitment (another kind of key).
        keys.note("seed", "s1", "g1");
        keys.note("seed", "s1", "g1");
        keys.note("commitment", "c1", "g1");
        keys.note("commitment", "c2", "g2");
        keys.note("seed", "s2", "g2");
        keys.note("commitment", "c2", "g3");
        keys.note("seed", "c2", "g4");
        keys.finish();
        assert!(
            !keys.shared(Some("c1"), Some("s1")),
            "one game's own repeats"
        );
        assert!(keys.shared(Some("c2"), None), "two games' commitment");
        assert!(!keys.shared(None, Some("s2")), "one game's seed");
        assert!(
            !keys.shared(Some("c9"), Some("c2")),
            "a seed is not a commitment"
        );
        assert!(keys.pairs.is_empty(), "the pairs are let go");
    }
}
