//! Engine analysis of draughts games: every move of selected rated 10x10 and 8x8 games judged by
//! the search engine (best move and score, the played move's score, rank and loss, how forced the
//! position was, whether its best move needs a deep search), into the `move_analysis` table.
//!
//! Selection ([`select`]): every finished rated standard draughts game of a focus account (the
//! caller's, e.g. the flagged accounts, and every account with an unusual win rate), and a
//! deterministic random sample of the others (the population's
//! baseline is fit from it). Analysis is incremental: a game already in `move_analysis` is never
//! analysed again. Medieval games are not analysed (the engine does not model duels). Rows are
//! written as files of one transaction, a chunk of games at a time: memory stays bounded by the
//! chunk, and a run that fails or is killed leaves the lake as it was.

use std::collections::{BTreeMap, BTreeSet};

use arrow::array::{Array, AsArray, RecordBatch};
use arrow::datatypes::{DataType, Int64Type};

use crate::lake::record::Ts;
use crate::lake::sql::literal;
use crate::lake::{Lake, LakeError, Snapshot, Stage};
use crate::row_table;
use vigie_rules::games::draughts::search::{Engine, Limits, MAN};
use vigie_rules::games::draughts::{Move, Position, Variant};

/// Errors of the analysis.
#[derive(Debug, thiserror::Error)]
pub enum AnalysisError {
    #[error(transparent)]
    Lake(#[from] LakeError),
    #[error("analysis query failed: {0}")]
    Query(#[from] datafusion::error::DataFusionError),
    #[error("starting the query runtime: {0}")]
    Runtime(#[from] std::io::Error),
    #[error(transparent)]
    Arrow(#[from] arrow::error::ArrowError),
    #[error("{table}.{column}: {problem}")]
    Corrupt {
        table: &'static str,
        column: &'static str,
        problem: String,
    },
}

row_table! {
    /// One row per move of an analysed draughts game (rated, 10x10 or 8x8 standard), judged by the search engine; partitioned by the UTC date the game started. Scores are in hundredths of a man from the mover's point of view.
    pub struct MoveAnalysisRow in "move_analysis" (partition Some("date"), sort ["game", "seq"], bloom ["game"]) {
        /// Game id.
        game: String,
        /// Seq of the move event.
        seq: i64,
        /// Accepted moves before it.
        ply: i64,
        /// draughts10 or draughts8.
        kind: String,
        /// The mover.
        player: String,
        /// The move played (full path).
        played: String,
        /// The engine's best move (full path): its deep search's choice with the whole node budget.
        best: String,
        /// The score of the best move, on the scale of the multi-line search that scores every legal move with a quarter of the budget.
        best_score: i64,
        /// The score of the move played, on the same scale.
        played_score: i64,
        /// best_score - played_score, at least 0, scores capped at +-2,000 (a missed win counts 20 men at most).
        loss: i64,
        /// Rank of the move played among the legal moves by score (1: none scores higher).
        rank: i64,
        /// Legal moves in the position.
        legal_moves: i64,
        /// Legal moves scored within 20 (a fifth of a man) of the best: 1 when only one move keeps the balance.
        near_best: i64,
        /// The best score minus the second best (0 with a single legal move): how much a mistake costs here.
        second_gap: i64,
        /// A single legal move (nothing to choose).
        forced: bool,
        /// The move played is the engine's best.
        matched: bool,
        /// The best move found by a shallow search (see shallow_depth in docs/engine.md).
        shallow_best: String,
        /// The best move is not the shallow search's and beats it by at least 30: a move that needs a deep search to find.
        hard: bool,
        /// Whether the server played it after a timeout (never analysed as the player's choice).
        auto: bool,
        /// Think time as logged (ms).
        think_ms: i64,
        /// When the move was logged (its event's ts; null in rows written before 2026-12-05).
        ts: Option<Ts>,
        /// Depth of the deep search's last completed iteration.
        depth: i64,
        /// Nodes searched for the position.
        nodes: i64,
        /// The engine and its budget, e.g. `vigie-rules 0.1.0 nodes=50000 shallow=4`.
        engine: String,
    }
}

/// Moves within this of the best count in `near_best`.
pub const NEAR_BEST: i32 = 20;
/// The deep best must beat the shallow best by this for a position to be `hard`.
pub const HARD_GAP: i32 = 30;
/// Scores are capped at this for losses (a missed forced win costs at most 20 men).
const SCORE_CAP: i32 = 20 * MAN;
/// Legal moves scored exactly per position at most (the rest ranked after them).
const MAX_MULTIPV: usize = 24;

/// How to analyse.
#[derive(Debug, Clone)]
pub struct AnalyseOptions {
    /// Nodes per position (deterministic).
    pub nodes: u64,
    /// Depth of the shallow search that tells hard positions.
    pub shallow_depth: u32,
    /// Share of the other eligible games analysed (a hash of the game id decides).
    pub sample: f64,
    /// Worker threads (0: one per core).
    pub threads: usize,
    /// Stop after this many games (the rest are for the next run).
    pub max_games: Option<usize>,
    /// Games per chunk (rows written, memory released).
    pub chunk_games: usize,
    /// While set, the run waits before each chunk's reads, each position and its commit: the
    /// stream sets it while a pass runs, so that its passes seldom share the cores with the
    /// analysis.
    pub pause: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    /// Games never selected: those an earlier run could not follow (the stream's rounds of a
    /// few games would otherwise take them again every round).
    pub exclude: BTreeSet<String>,
}

impl Default for AnalyseOptions {
    fn default() -> Self {
        AnalyseOptions {
            nodes: 50_000,
            shallow_depth: 4,
            sample: 0.05,
            threads: 0,
            max_games: None,
            chunk_games: 400,
            pause: None,
            exclude: BTreeSet::new(),
        }
    }
}

impl AnalyseOptions {
    /// Waits while [`AnalyseOptions::pause`] is set.
    pub fn wait_while_paused(&self) {
        if let Some(p) = &self.pause {
            while p.load(std::sync::atomic::Ordering::Acquire) {
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
        }
    }
}

impl AnalyseOptions {
    /// The `engine` column's value.
    pub fn engine_tag(&self) -> String {
        format!(
            "vigie-rules {} nodes={} shallow={}",
            vigie_rules::VERSION,
            self.nodes,
            self.shallow_depth
        )
    }
}

/// What a run did.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct AnalyseReport {
    /// Eligible games not analysed before.
    pub eligible: u64,
    /// Of them, selected (focus accounts' games and the sample).
    pub selected: u64,
    /// Accounts whose games are all selected (flagged, or an unusual win rate).
    pub focus_accounts: u64,
    pub games_analysed: u64,
    /// Games skipped: a move our rules refuse was accepted, or a move could not be read.
    pub games_skipped: u64,
    /// Their ids.
    pub skipped: Vec<String>,
    pub positions: u64,
    pub rows: u64,
    pub files: u64,
    pub elapsed_ms: u64,
    /// CPU time of the run's threads (the calling thread and the engine workers), where the
    /// system tells it (Linux); otherwise `elapsed_ms` times the workers (what they could have used).
    pub cpu_ms: u64,
    pub positions_per_s: f64,
    pub version: Option<u64>,
}

impl AnalyseReport {
    pub fn summary_line(&self) -> String {
        format!(
            "analyse: {} games analysed ({} selected of {} eligible, {} focus accounts, {} skipped), {} positions in {:.1} s ({:.0}/s), {}",
            self.games_analysed,
            self.selected,
            self.eligible,
            self.focus_accounts,
            self.games_skipped,
            self.positions,
            self.elapsed_ms as f64 / 1000.0,
            self.positions_per_s,
            match self.version {
                Some(v) => format!("committed lake version {v}"),
                None => "nothing to commit".into(),
            }
        )
    }
}

/// The analysis checkpoint: rows written so far (detection re-runs when it moves).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnalysisStage {
    pub games: u64,
    pub rows: u64,
}

impl Stage for AnalysisStage {
    const KEY: &'static str = "analysis";
}

/// The CPU time the calling thread has used since it started (Linux: `CLOCK_THREAD_CPUTIME_ID`;
/// `None` elsewhere or when the clock fails).
pub fn thread_cpu_time() -> Option<std::time::Duration> {
    #[cfg(target_os = "linux")]
    {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
        let done = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        if done == 0 {
            return Some(std::time::Duration::new(
                u64::try_from(ts.tv_sec).ok()?,
                u32::try_from(ts.tv_nsec).ok()?,
            ));
        }
    }
    None
}

/// A game to analyse.
#[derive(Debug, Clone)]
struct Candidate {
    game: String,
    date: String,
    variant: Variant,
    kind: String,
}

/// Whether `game` falls in a sample of share `share` (FNV-1a of its id, then the SplitMix64
/// finaliser so that similar ids spread: the same games every run).
pub fn sampled(game: &str, share: f64) -> bool {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in game.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    h = (h ^ (h >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    h ^= h >> 31;
    ((h >> 11) as f64 / (1u64 << 53) as f64) < share
}

fn corrupt(table: &'static str, column: &'static str, problem: impl Into<String>) -> AnalysisError {
    AnalysisError::Corrupt {
        table,
        column,
        problem: problem.into(),
    }
}

/// Column accessors of a query's batch; a null in a required column is an error naming it.
struct Cols<'a> {
    table: &'static str,
    batch: &'a RecordBatch,
}

impl Cols<'_> {
    fn col(
        &self,
        name: &'static str,
        ty: &DataType,
    ) -> Result<arrow::array::ArrayRef, AnalysisError> {
        let i = self
            .batch
            .schema()
            .index_of(name)
            .map_err(|_| corrupt(self.table, name, "missing column"))?;
        Ok(arrow::compute::cast(self.batch.column(i), ty)?)
    }

    /// Every value of a required column, read with `get` from the column cast to `ty`.
    fn values<T>(
        &self,
        name: &'static str,
        ty: &DataType,
        get: impl Fn(&arrow::array::ArrayRef, usize) -> T,
    ) -> Result<Vec<T>, AnalysisError> {
        let c = self.col(name, ty)?;
        (0..c.len())
            .map(|i| {
                if c.is_null(i) {
                    Err(corrupt(self.table, name, format!("null at row {i}")))
                } else {
                    Ok(get(&c, i))
                }
            })
            .collect()
    }

    fn strings(&self, name: &'static str) -> Result<Vec<String>, AnalysisError> {
        self.values(name, &DataType::Utf8, |c, i| {
            c.as_string::<i32>().value(i).to_string()
        })
    }

    fn ints(&self, name: &'static str) -> Result<Vec<i64>, AnalysisError> {
        self.values(name, &DataType::Int64, |c, i| {
            c.as_primitive::<Int64Type>().value(i)
        })
    }

    fn bools(&self, name: &'static str) -> Result<Vec<bool>, AnalysisError> {
        self.values(name, &DataType::Boolean, |c, i| c.as_boolean().value(i))
    }
}

fn runtime() -> Result<tokio::runtime::Runtime, AnalysisError> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?)
}

/// The tables the analysis reads.
fn read_tables() -> Vec<crate::lake::tables::TableDef> {
    let mut v = crate::replay::run::derived_table_defs();
    v.push(MoveAnalysisRow::def());
    v
}

async fn query(
    ctx: &datafusion::prelude::SessionContext,
    sql: &str,
) -> Result<Vec<RecordBatch>, AnalysisError> {
    Ok(ctx.sql(sql).await?.collect().await?)
}

/// The games to analyse: eligible (finished rated standard draughts, not analysed yet), of a focus
/// account or in the sample; and the number of focus accounts.
async fn select(
    ctx: &datafusion::prelude::SessionContext,
    opts: &AnalyseOptions,
    focus_in: &BTreeSet<String>,
    report: &mut AnalyseReport,
) -> Result<Vec<Candidate>, AnalysisError> {
    // The caller's accounts, and those winning rated draughts games far more than even (at least
    // 20 decided games, a chance of at most 1 in 1,000 at 1/2).
    let focus_sql = "SELECT account FROM ( \
            SELECT p.account, sum(CASE WHEN p.outcome = 'win' THEN 1 ELSE 0 END) AS wins, \
                   sum(CASE WHEN p.outcome IN ('win', 'loss') THEN 1 ELSE 0 END) AS decided \
            FROM game_players p WHERE p.kind IN ('draughts10', 'draughts8') AND p.mode = 'standard' AND p.rated \
            GROUP BY p.account) w \
        WHERE decided >= 20 AND binomial_at_least(CAST(wins AS DOUBLE), CAST(decided AS DOUBLE), 0.5) <= 0.001";
    let mut focus = focus_in.clone();
    for b in query(ctx, focus_sql).await? {
        focus.extend(
            Cols {
                table: "game_players",
                batch: &b,
            }
            .strings("account")?,
        );
    }
    report.focus_accounts = focus.len() as u64;
    let games_sql = "SELECT g.game, CAST(g.date AS VARCHAR) AS day, g.kind, g.players FROM games g \
        WHERE g.kind IN ('draughts10', 'draughts8') AND g.mode = 'standard' AND g.rated AND g.closed AND g.finished \
          AND g.game NOT IN (SELECT DISTINCT game FROM move_analysis) \
        ORDER BY day, g.game";
    let mut out = Vec::new();
    for b in query(ctx, games_sql).await? {
        let cols = Cols {
            table: "games",
            batch: &b,
        };
        let (games, dates, kinds) = (
            cols.strings("game")?,
            cols.strings("day")?,
            cols.strings("kind")?,
        );
        let players = cols.col(
            "players",
            &b.schema().field_with_name("players")?.data_type().clone(),
        )?;
        let players = players.as_list::<i32>();
        for i in 0..b.num_rows() {
            report.eligible += 1;
            let accounts = players.value(i);
            let accounts = arrow::compute::cast(&accounts, &DataType::Utf8)?;
            let accounts = accounts.as_string::<i32>();
            let of_focus = (0..accounts.len())
                .any(|k| !accounts.is_null(k) && focus.contains(accounts.value(k)));
            if !(of_focus || sampled(&games[i], opts.sample)) || opts.exclude.contains(&games[i]) {
                continue;
            }
            let variant = match kinds[i].as_str() {
                "draughts10" => Variant::International,
                "draughts8" => Variant::Brazilian,
                other => return Err(corrupt("games", "kind", format!("unknown kind {other:?}"))),
            };
            out.push(Candidate {
                game: games[i].clone(),
                date: dates[i].clone(),
                variant,
                kind: kinds[i].clone(),
            });
        }
    }
    report.selected = out.len() as u64;
    if let Some(n) = opts.max_games {
        out.truncate(n);
    }
    Ok(out)
}

/// One accepted move of a game, as replay recorded it.
#[derive(Debug, Clone)]
struct Played {
    seq: i64,
    ply: i64,
    player: String,
    text: String,
    legal: bool,
    auto: bool,
    think_ms: i64,
    ts: i64,
}

/// The accepted draughts moves of `games` (all of one start date), by game, in seq order.
async fn moves_of(
    ctx: &datafusion::prelude::SessionContext,
    date: &str,
    games: &[&Candidate],
) -> Result<BTreeMap<String, Vec<Played>>, AnalysisError> {
    let ids: Vec<String> = games.iter().map(|c| literal(&c.game)).collect();
    let sql = format!(
        "SELECT game, seq, ply, player, text, legal, auto, think_ms, ts FROM moves \
         WHERE date = {} AND accepted AND action = 'move' AND game IN ({}) ORDER BY game, seq",
        literal(date),
        ids.join(", ")
    );
    let mut out: BTreeMap<String, Vec<Played>> = BTreeMap::new();
    for b in query(ctx, &sql).await? {
        let c = Cols {
            table: "moves",
            batch: &b,
        };
        let (game, seq, ply, player, text) = (
            c.strings("game")?,
            c.ints("seq")?,
            c.ints("ply")?,
            c.strings("player")?,
            c.strings("text")?,
        );
        let (legal, auto, think) = (c.bools("legal")?, c.bools("auto")?, c.ints("think_ms")?);
        let ts = c.ints("ts")?;
        for i in 0..b.num_rows() {
            out.entry(game[i].clone()).or_default().push(Played {
                seq: seq[i],
                ply: ply[i],
                player: player[i].clone(),
                text: text[i].clone(),
                legal: legal[i],
                auto: auto[i],
                think_ms: think[i],
                ts: ts[i],
            });
        }
    }
    Ok(out)
}

/// Analyses one game; `None` when it cannot be followed (a move our rules refuse was accepted).
fn analyse_game(
    c: &Candidate,
    moves: &[Played],
    engines: &mut Engines,
    opts: &AnalyseOptions,
    tag: &str,
) -> Option<Vec<MoveAnalysisRow>> {
    engines.deep.clear();
    let mut pos = Position::new(c.variant);
    let mut rows = Vec::with_capacity(moves.len());
    for p in moves {
        if !p.legal {
            return None;
        }
        let played = pos.parse_move(&p.text).ok()?;
        opts.wait_while_paused();
        let row = judge(&pos, &played, engines, opts)?;
        rows.push(MoveAnalysisRow {
            game: c.game.clone(),
            seq: p.seq,
            ply: p.ply,
            kind: c.kind.clone(),
            player: p.player.clone(),
            played: played.to_full_string(),
            best: row.best.to_full_string(),
            best_score: i64::from(row.best_score),
            played_score: i64::from(row.played_score),
            loss: i64::from(
                (row.best_score.min(SCORE_CAP) - row.played_score.clamp(-SCORE_CAP, SCORE_CAP))
                    .max(0),
            ),
            rank: row.rank as i64,
            legal_moves: row.legal as i64,
            near_best: row.near_best as i64,
            second_gap: i64::from(row.second_gap),
            forced: row.legal == 1,
            matched: row.best.key() == played.key(),
            shallow_best: row.shallow_best.to_full_string(),
            hard: row.hard,
            auto: p.auto,
            think_ms: p.think_ms,
            ts: Some(Ts(p.ts)),
            depth: i64::from(row.depth),
            nodes: row.nodes as i64,
            engine: tag.to_string(),
        });
        let _ = pos.make(&played);
    }
    Some(rows)
}

/// The engine's judgement of one position and the move played there.
struct Judgement {
    best: Move,
    best_score: i32,
    played_score: i32,
    rank: usize,
    legal: usize,
    near_best: usize,
    second_gap: i32,
    shallow_best: Move,
    hard: bool,
    depth: u32,
    nodes: u64,
}

/// A worker's engines: the deep one keeps its table over a game; the shallow one starts afresh at
/// every position (a table filled by deep searches would let it see deeper than its depth).
struct Engines {
    deep: Engine,
    shallow: Engine,
}

impl Engines {
    fn new() -> Engines {
        Engines {
            deep: Engine::new(16),
            shallow: Engine::new(1),
        }
    }
}

/// Judges `played` in `pos`. The best move is the deep search's: one line with the whole node
/// budget, as a strong program would choose it. Every legal move (up to [`MAX_MULTIPV`]) is then
/// scored by a multi-line search with a quarter of the budget, for the rank, the loss and how
/// forced the position is; the best move found by a fresh shallow search tells hard positions.
fn judge(
    pos: &Position,
    played: &Move,
    engines: &mut Engines,
    opts: &AnalyseOptions,
) -> Option<Judgement> {
    let engine = &mut engines.deep;
    let legal = pos.legal_move_count();
    if legal == 1 {
        // Nothing to choose: a small search for the position's score only.
        let a = engine.analyse(pos, &Limits::nodes((opts.nodes / 8).max(1_000)), 1);
        let l = a.lines.first()?;
        let s = l.score.to_cp();
        return Some(Judgement {
            best: l.mv.clone(),
            best_score: s,
            played_score: s,
            rank: 1,
            legal,
            near_best: 1,
            second_gap: 0,
            shallow_best: l.mv.clone(),
            hard: false,
            depth: a.depth,
            nodes: a.nodes,
        });
    }
    let deep = engine.analyse(pos, &Limits::nodes(opts.nodes), 1);
    let best = deep.lines.first()?.mv.clone();
    let all = engine.analyse(
        pos,
        &Limits::nodes((opts.nodes / 4).max(1_000)),
        legal.min(MAX_MULTIPV),
    );
    let score_of = |m: &Move, engine: &mut Engine| -> Option<i32> {
        match all.lines.iter().find(|l| l.mv.key() == m.key()) {
            Some(l) => Some(l.score.to_cp()),
            None => Some(
                engine
                    .analyse_moves(
                        pos,
                        &Limits::nodes((opts.nodes / 8).max(1_000)),
                        1,
                        Some(std::slice::from_ref(m)),
                    )
                    .lines
                    .first()?
                    .score
                    .to_cp(),
            ),
        }
    };
    // Scores on one scale (the multi-line search's); the deep best is never below the others.
    let top = all.lines.iter().map(|l| l.score.to_cp()).max()?;
    let best_score = score_of(&best, engine)?.max(top);
    let played_score = if played.key() == best.key() {
        best_score
    } else {
        score_of(played, engine)?
    };
    let rank = 1
        + all
            .lines
            .iter()
            .filter(|l| l.mv.key() != played.key() && l.score.to_cp() > played_score)
            .count()
        + usize::from(
            played.key() != best.key() && all.lines.iter().all(|l| l.mv.key() != best.key()),
        );
    let near_best = all
        .lines
        .iter()
        .filter(|l| best_score - l.score.to_cp() <= NEAR_BEST)
        .count()
        .max(1);
    let second_gap = all
        .lines
        .iter()
        .find(|l| l.mv.key() != best.key())
        .map_or(0, |l| (best_score - l.score.to_cp()).max(0));
    engines.shallow.clear();
    let shallow = engines
        .shallow
        .analyse(pos, &Limits::depth(opts.shallow_depth), 1);
    let shallow_best = shallow.lines.first()?.mv.clone();
    let shallow_score = all
        .lines
        .iter()
        .find(|l| l.mv.key() == shallow_best.key())
        .map_or(i32::MIN / 2, |l| l.score.to_cp());
    let hard = shallow_best.key() != best.key() && best_score - shallow_score >= HARD_GAP;
    Some(Judgement {
        best,
        best_score,
        played_score,
        rank,
        legal,
        near_best,
        second_gap,
        shallow_best,
        hard,
        depth: deep.depth,
        nodes: deep.nodes + all.nodes + shallow.nodes,
    })
}

/// Analyses the selected games not analysed yet and commits their rows (see the module doc);
/// every game of an account of `focus` is selected.
pub fn run(
    lake: &Lake,
    opts: &AnalyseOptions,
    focus: &BTreeSet<String>,
    progress: &dyn Fn(u64, u64),
) -> Result<AnalyseReport, AnalysisError> {
    let started = std::time::Instant::now();
    let cpu_started = thread_cpu_time();
    // CPU time of the engine workers, added as each ends (`None` once one could not tell).
    let mut workers_cpu = Some(std::time::Duration::ZERO);
    let mut report = AnalyseReport::default();
    let snapshot: Snapshot = lake.snapshot()?;
    let rt = runtime()?;
    let ctx = rt.block_on(crate::lake::sql::session(
        &snapshot,
        &read_tables(),
        crate::lake::sql::Limits::default(),
    ))?;
    let candidates = rt.block_on(select(&ctx, opts, focus, &mut report))?;
    let threads = if opts.threads == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        opts.threads
    };
    let tag = opts.engine_tag();
    let def = MoveAnalysisRow::def();
    let mut writer = lake.writer()?;
    let mut txn = writer.begin("analyse")?;
    let total = candidates.len() as u64;
    let mut done = 0u64;
    // Chunks of one start date each, so that the moves are read from one partition.
    let mut by_date: BTreeMap<&str, Vec<&Candidate>> = BTreeMap::new();
    for c in &candidates {
        by_date.entry(c.date.as_str()).or_default().push(c);
    }
    for (date, games) in by_date {
        for chunk in games.chunks(opts.chunk_games.max(1)) {
            opts.wait_while_paused();
            let moves = rt.block_on(moves_of(&ctx, date, chunk))?;
            let next = std::sync::atomic::AtomicUsize::new(0);
            let mut results: Vec<(usize, Option<Vec<MoveAnalysisRow>>)> = Vec::new();
            let spent: Vec<Option<std::time::Duration>> = std::thread::scope(|s| {
                let workers: Vec<_> = (0..threads.min(chunk.len()).max(1))
                    .map(|_| {
                        s.spawn(|| {
                            let mut engines = Engines::new();
                            let mut out = Vec::new();
                            loop {
                                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                                let Some(c) = chunk.get(i) else { break };
                                let played = moves.get(&c.game).map_or(&[][..], |v| v.as_slice());
                                out.push((i, analyse_game(c, played, &mut engines, opts, &tag)));
                            }
                            (out, thread_cpu_time())
                        })
                    })
                    .collect();
                workers
                    .into_iter()
                    .map(|w| {
                        let (out, cpu) = w.join().unwrap_or_default();
                        results.extend(out);
                        cpu
                    })
                    .collect()
            });
            for cpu in spent {
                workers_cpu = workers_cpu.zip(cpu).map(|(a, b)| a + b);
            }
            results.sort_by_key(|(i, _)| *i);
            let mut rows = Vec::new();
            for (i, r) in results {
                match r {
                    Some(r) => {
                        report.games_analysed += 1;
                        report.positions += r.iter().filter(|x| !x.forced).count() as u64;
                        rows.extend(r);
                    }
                    None => {
                        report.games_skipped += 1;
                        report.skipped.extend(chunk.get(i).map(|c| c.game.clone()));
                    }
                }
            }
            done += chunk.len() as u64;
            progress(done, total);
            if rows.is_empty() {
                continue;
            }
            report.rows += rows.len() as u64;
            let batch = MoveAnalysisRow::to_batch(&rows)?;
            let file = txn.new_file(def.name, Some(&format!("date={date}")))?;
            let meta =
                crate::lake::parquet::write_sorted(&file.pending, &def, def.schema(), &[batch])?;
            txn.add_file_meta(file, meta);
            report.files += 1;
        }
    }
    report.elapsed_ms = started.elapsed().as_millis() as u64;
    report.positions_per_s = report.positions as f64 / (report.elapsed_ms.max(1) as f64 / 1000.0);
    // Counted again after the commit (the summary it writes has the count before it).
    let cpu_ms = |elapsed_ms: u64| {
        let own = cpu_started
            .zip(thread_cpu_time())
            .map(|(a, b)| b.saturating_sub(a));
        match own.zip(workers_cpu) {
            Some((own, workers)) => (own + workers).as_millis() as u64,
            None => elapsed_ms * threads as u64,
        }
    };
    report.cpu_ms = cpu_ms(report.elapsed_ms);
    if report.rows == 0 {
        txn.abort();
        return Ok(report);
    }
    let prev = snapshot.state.stage::<AnalysisStage>()?;
    txn.put_stage(&AnalysisStage {
        games: prev.as_ref().map_or(0, |p| p.games) + report.games_analysed,
        rows: prev.as_ref().map_or(0, |p| p.rows) + report.rows,
    })?;
    opts.wait_while_paused();
    report.version = Some(txn.commit(serde_json::to_value(&report).unwrap_or_default())?);
    report.cpu_ms = cpu_ms(report.elapsed_ms);
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sample_is_stable_and_about_its_share() {
        let ids: Vec<String> = (0..20_000).map(|i| format!("d10-{i:05}")).collect();
        let n = ids.iter().filter(|g| sampled(g, 0.1)).count();
        assert!((1_700..2_300).contains(&n), "{n}");
        assert!(ids.iter().all(|g| sampled(g, 0.1) == sampled(g, 0.1)));
        assert!(ids.iter().all(|g| !sampled(g, 0.0) && sampled(g, 1.0)));
    }

    #[test]
    fn a_paused_analysis_waits_before_its_next_position() {
        use std::sync::atomic::{AtomicBool, Ordering};
        let pause = std::sync::Arc::new(AtomicBool::new(true));
        let opts = AnalyseOptions {
            nodes: 2_000,
            shallow_depth: 2,
            pause: Some(pause.clone()),
            ..AnalyseOptions::default()
        };
        let start = Position::new(Variant::Brazilian);
        let first = start.legal_moves()[0].to_full_string();
        let game = Candidate {
            game: "g".into(),
            date: "2026-11-20".into(),
            variant: Variant::Brazilian,
            kind: "draughts8".into(),
        };
        let moves = vec![Played {
            seq: 3,
            ply: 0,
            player: "a".into(),
            text: first,
            legal: true,
            auto: false,
            think_ms: 900,
            ts: 1_763_600_000_000,
        }];
        let worker = std::thread::spawn(move || {
            analyse_game(&game, &moves, &mut Engines::new(), &opts, "t")
        });
        // Paused: the position is not judged however long it waits (a search of 2,000 nodes
        // takes a millisecond).
        std::thread::sleep(std::time::Duration::from_millis(200));
        assert!(!worker.is_finished());
        pause.store(false, Ordering::Release);
        let rows = worker
            .join()
            .expect("the worker ends")
            .expect("the game is judged");
        assert_eq!(rows.len(), 1);
        assert_eq!((rows[0].seq, rows[0].ts), (3, Some(Ts(1_763_600_000_000))));
    }

    #[test]
    fn a_position_with_one_good_move_is_judged() {
        // White must take; the capture is the only move.
        let pos = Position::from_fen(Variant::International, "W:W28,46:B23,5").expect("fen");
        let played = pos.parse_move("28x19").expect("move");
        let mut engines = Engines::new();
        let j = judge(&pos, &played, &mut engines, &AnalyseOptions::default()).expect("judged");
        assert_eq!((j.legal, j.rank, j.near_best), (1, 1, 1));
        // From the start: every move is ranked, the best is rank 1 and loses nothing.
        let start = Position::new(Variant::Brazilian);
        let opts = AnalyseOptions {
            nodes: 20_000,
            ..AnalyseOptions::default()
        };
        // Two new engines search alike (a node budget is deterministic): the first one's best,
        // played, is the second one's best.
        let best =
            judge(&start, &start.legal_moves()[0], &mut Engines::new(), &opts).expect("judged");
        let j = judge(&start, &best.best, &mut Engines::new(), &opts).expect("judged");
        assert_eq!(j.rank, 1);
        assert_eq!(j.best_score, j.played_score);
        assert_eq!(j.legal, 7);
        assert!(j.near_best >= 1 && j.near_best <= 7);
    }
}
