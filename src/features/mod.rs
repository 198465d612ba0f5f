//! Account and pair features with polars, read straight from the lake's Parquet, written back as `account_features` and `pair_features`.
//!
//! Windows end at the lake's horizon (the latest event timestamp) and cover
//! 1, 7 and 30 days. A window holds the games started in it (and the
//! departures and findings logged in it). Attempt and think-time features
//! add up the per-game sums the replay writes in `game_players`
//! ([`crate::replay::rows::MoveFacts`]), so features read one row per player
//! and game, never the `moves` table: their cost follows games, not moves.
//! A batch run recomputes them whole: they are small (one row per active
//! account or pair and window), and a full recomputation keeps them exactly
//! reproducible from a snapshot. The streaming job
//! recomputes only the accounts its replays touched ([`run_scoped`]), and
//! every account in turn, so a row is never more than a few minutes behind.

use std::path::{Path, PathBuf};

use polars::prelude::*;

pub mod cache;

use crate::lake::tables::{Column, TableDef};
use crate::lake::{FileMeta, Lake, LakeError, Snapshot};

/// The windows, in days.
pub const WINDOWS: [i64; 3] = [1, 7, 30];
/// The stage name in the commit log.
pub const STAGE: &str = "features";
/// The features' checkpoint: the lake version and window end they were computed at, the replay
/// checkpoint they followed, and how many accounts a scoped run recomputed.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FeaturesStage {
    pub version: u64,
    pub window_end_ms: i64,
    pub replay: Option<crate::replay::run::ReplayStage>,
    pub scoped: Option<usize>,
}

impl crate::lake::Stage for FeaturesStage {
    const KEY: &'static str = STAGE;
}

/// A game lost in fewer plies than this is a quick loss.
pub const QUICK_LOSS_PLIES: i64 = 12;
/// A game given up within this many plies is given up cheaply, whatever the balance (`gave_up_cheaply`).
pub const CHEAP_GIVE_UP_PLIES: i64 = 20;

/// Of a `game_players` row: the player gave the game up (`quit_balance` set) while not behind, or
/// within the first [`CHEAP_GIVE_UP_PLIES`] plies: a game handed over rather than lost.
fn cheap_give_up() -> Expr {
    col("quit_balance").is_not_null().and(
        col("quit_balance")
            .gt_eq(lit(0.0))
            .or(col("game_moves").lt(lit(CHEAP_GIVE_UP_PLIES)))
            .fill_null(lit(false)),
    )
}

/// The thresholds the replay's per-game sums use (defined where they are applied).
pub use crate::replay::rows::{INSTANT_MS, RACE_MS, TAMPER_CAUSES};

/// Errors of the features stage.
#[derive(Debug, thiserror::Error)]
pub enum FeaturesError {
    #[error(transparent)]
    Lake(#[from] LakeError),
    #[error("polars: {0}")]
    Polars(#[from] PolarsError),
    #[error("writing {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

fn col_def(name: &'static str, ty: arrow::datatypes::DataType, doc: &'static str) -> Column {
    Column {
        name,
        ty,
        nullable: true,
        doc,
    }
}

/// `account_features`: one row per account and window.
pub fn account_table() -> TableDef {
    use arrow::datatypes::DataType::*;
    let ts = crate::lake::tables::ts_type();
    TableDef {
        name: "account_features",
        doc: "Per account and window (1, 7, 30 days ending at the lake's latest event): activity, results and stake flows, rejected attempts by cause, departures and timeouts (overall and when losing), and think-time statistics.",
        partition: None,
        columns: vec![
            col_def("account", Utf8, "Account."),
            col_def("window", Utf8, "Window: 1d, 7d or 30d."),
            col_def(
                "window_end",
                ts.clone(),
                "End of the window (the lake's latest event).",
            ),
            col_def("games", Int64, "Games played (started in the window)."),
            col_def("games_draughts10", Int64, "International draughts games."),
            col_def(
                "games_draughts8",
                Int64,
                "Brazilian draughts games (standard).",
            ),
            col_def("games_medieval", Int64, "Brazilian Medieval games."),
            col_def("games_ludo", Int64, "Ludo games."),
            col_def("games_belote", Int64, "Belote matches."),
            col_def("rated_games", Int64, "Rated games."),
            col_def("wins", Int64, "Games won."),
            col_def("losses", Int64, "Games lost."),
            col_def("draws", Int64, "Games drawn."),
            col_def(
                "quick_losses",
                Int64,
                "Games lost within 12 accepted moves of the game.",
            ),
            col_def("rated_wins", Int64, "Rated wins, all rankings."),
            col_def(
                "rated_wins_medieval",
                Int64,
                "Rated wins in the Medieval ranking (its own ranking).",
            ),
            col_def("rated_losses", Int64, "Rated losses, all rankings."),
            col_def(
                "rated_losses_medieval",
                Int64,
                "Rated losses in the Medieval ranking.",
            ),
            col_def("staked", Int64, "Stakes paid."),
            col_def("paid_out", Int64, "Payouts received."),
            col_def("net", Int64, "Payouts minus stakes."),
            col_def(
                "attempts",
                Int64,
                "Attempts (moves, bids, plays) sent by the player, accepted or not.",
            ),
            col_def("rejected", Int64, "Rejected attempts."),
            col_def(
                "tamper_attempts",
                Int64,
                "Rejected attempts whose cause only a forged client produces (TAMPER_CAUSES), plus out-of-turn attempts well away from a turn change.",
            ),
            col_def(
                "tamper_games",
                Int64,
                "Games with at least one tamper attempt.",
            ),
            col_def("tamper_kinds", Int64, "Distinct tamper causes."),
            col_def(
                "races",
                Int64,
                "Out-of-turn attempts within 1 s of a turn change (benign races).",
            ),
            col_def(
                "malformed",
                Int64,
                "Attempts the server rejected as malformed (unparseable).",
            ),
            col_def(
                "late_attempts",
                Int64,
                "Attempts after the game was decided.",
            ),
            col_def(
                "departures",
                Int64,
                "Games left (0 when none, as every count here).",
            ),
            col_def("departures_losing", Int64, "Games left while losing."),
            col_def(
                "abandons_losing",
                Int64,
                "Games left while losing without resigning (page closed or disconnected).",
            ),
            col_def(
                "abandons",
                Int64,
                "Games left without resigning (page closed or disconnected), losing or not.",
            ),
            col_def(
                "gave_up_cheaply",
                Int64,
                "Games given up cheaply: left, or timed out for good, while not behind (balance 0 or more) or within the first 20 plies (CHEAP_GIVE_UP_PLIES).",
            ),
            col_def("timeouts", Int64, "Timeouts."),
            col_def("timeouts_losing", Int64, "Timeouts while losing."),
            col_def(
                "decisive_timeouts",
                Int64,
                "Timeouts that ended the game (or the player's part in it).",
            ),
            col_def(
                "decisive_timeouts_losing",
                Int64,
                "Decisive timeouts whose run of consecutive timeouts began while losing (sitting out starts at the first one).",
            ),
            col_def(
                "timeout_elapsed_ms",
                Float64,
                "Mean time used before timeouts.",
            ),
            col_def(
                "moves_timed",
                Int64,
                "Accepted moves of the player's own (not automatic) with a think time.",
            ),
            col_def("think_mean_ms", Float64, "Mean think time."),
            col_def(
                "think_cv",
                Float64,
                "Coefficient of variation of think times over the window.",
            ),
            col_def(
                "think_cv_game",
                Float64,
                "Median over games of the per-game coefficient of variation.",
            ),
            col_def(
                "think_cv14",
                Float64,
                "Median over games of each game's median coefficient of variation over windows of 14 consecutive moves.",
            ),
            col_def(
                "cv14_games",
                Int64,
                "Games that think_cv14 rests on (14 timed moves or more).",
            ),
            col_def(
                "think_median_ms",
                Float64,
                "Median over games of each game's median think time.",
            ),
            col_def(
                "think_spread",
                Float64,
                "Median, over games with 10 timed moves or more, of the median absolute deviation of the game's think times divided by their median: a spread that pauses now and then do not move (people about 0.3-0.6, programs under 0.1).",
            ),
            col_def("spread_games", Int64, "Games that think_spread rests on."),
            col_def("instant_share", Float64, "Share of moves under 250 ms."),
            col_def(
                "forced_think_ms",
                Float64,
                "Mean think time on forced moves (one legal move).",
            ),
            col_def("moves_losing", Int64, "Timed moves played while losing."),
            col_def(
                "slow_moves_losing",
                Int64,
                "Moves using over 80 % of the clock while losing.",
            ),
            col_def(
                "slow_share_losing",
                Float64,
                "Share of moves using over 80 % of the clock while losing.",
            ),
            col_def(
                "slow_share_other",
                Float64,
                "Share of moves using over 80 % of the clock otherwise.",
            ),
            col_def(
                "moves_other_prestall",
                Int64,
                "Timed moves played while not losing before the first slow move while losing of their game (all of a game's moves not losing when the replay of an older Vigie left this count out).",
            ),
            col_def(
                "slow_moves_other_prestall",
                Int64,
                "Of those, moves using over 80 % of the clock.",
            ),
            col_def(
                "integrity_findings",
                Int64,
                "Server-integrity findings naming the account (0 when none).",
            ),
            col_def("devices", Int64, "Distinct device hashes used."),
            col_def("ips", Int64, "Distinct ip hashes used."),
        ],
        sort_by: &["account", "window"],
        bloom: &["account"],
        no_dictionary: &[],
        no_statistics: &[],
    }
}

/// `pair_features`: one row per unordered pair of accounts (a < b) and window.
pub fn pair_table() -> TableDef {
    use arrow::datatypes::DataType::*;
    let ts = crate::lake::tables::ts_type();
    TableDef {
        name: "pair_features",
        doc: "Per pair of accounts that played each other (a < b) and window: games together, results, stake flow, quick losses, departures and timeouts in favour of the other, shared device and ip hashes.",
        partition: None,
        columns: vec![
            col_def("a", Utf8, "First account (alphabetical)."),
            col_def("b", Utf8, "Second account."),
            col_def("window", Utf8, "Window: 1d, 7d or 30d."),
            col_def("window_end", ts, "End of the window."),
            col_def("games", Int64, "Two-player games together."),
            col_def("rated_games", Int64, "Rated games together."),
            col_def("a_wins", Int64, "Games a won."),
            col_def("b_wins", Int64, "Games b won."),
            col_def("draws", Int64, "Draws."),
            col_def(
                "flow_a_to_b",
                Int64,
                "Net stake flow from a to b (b's net over their games).",
            ),
            col_def(
                "a_quick_losses",
                Int64,
                "Games a lost to b within 12 accepted moves.",
            ),
            col_def(
                "b_quick_losses",
                Int64,
                "Games b lost to a within 12 accepted moves.",
            ),
            col_def(
                "a_gave_up",
                Int64,
                "Games a lost to b by leaving or timing out.",
            ),
            col_def(
                "b_gave_up",
                Int64,
                "Games b lost to a by leaving or timing out.",
            ),
            col_def(
                "a_gave_up_cheaply",
                Int64,
                "Of a_gave_up, games a gave up cheaply: while not behind (balance 0 or more) or within the first 20 plies.",
            ),
            col_def(
                "b_gave_up_cheaply",
                Int64,
                "Of b_gave_up, games b gave up cheaply.",
            ),
            col_def(
                "a_cheap_min_stake",
                Int64,
                "Smallest stake of the games a gave up cheaply to b (null when none).",
            ),
            col_def(
                "b_cheap_min_stake",
                Int64,
                "Smallest stake of the games b gave up cheaply to a (null when none).",
            ),
            col_def(
                "result_switches",
                Int64,
                "Times the winner changed from one decided game to the next (win trading alternates).",
            ),
            col_def(
                "shared_devices",
                Int64,
                "Device hashes both used in the window.",
            ),
            col_def("shared_ips", Int64, "Ip hashes both used in the window."),
            col_def("max_stake", Int64, "Largest stake of their games."),
        ],
        sort_by: &["a", "b", "window"],
        bloom: &["a", "b"],
        no_dictionary: &[],
        no_statistics: &[],
    }
}

fn scan(snapshot: &Snapshot, table: &str) -> PolarsResult<Option<LazyFrame>> {
    scan_since(snapshot, table, None, Read::Disk)
}

/// Where a scan takes its files' rows from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Read {
    /// A lazy scan of the files (a full run: the whole history, streamed).
    Disk,
    /// The process's [`cache`] of decoded files, read into it when they fit (a scoped run of the
    /// streaming job, which reads the same window every pass).
    Cached,
}

/// [`scan`] of the files of the `date` partitions from the UTC date of `since_ms` on (all files
/// without it). Sound for rows filtered on a time whose date is their partition's, such as
/// `game_players.started_at`: older partitions hold none of them, and a reader that relies on
/// statistics alone still opens every file of the lake's history.
fn scan_since(
    snapshot: &Snapshot,
    table: &str,
    since_ms: Option<i64>,
    read: Read,
) -> PolarsResult<Option<LazyFrame>> {
    let from = since_ms.map(|ms| format!("date={}", crate::log::syntax::date_of(ms)));
    scan_files(
        snapshot,
        table,
        |f| match (&from, &f.partition) {
            (Some(from), Some(p)) => p.as_str() >= from.as_str(),
            _ => true,
        },
        read,
    )
}

/// [`scan`] of the files that may hold rows of `ts >= since_ms`: those whose latest `ts`
/// (recorded in the commit log) is at or after it, those that record none, and, when the table's
/// `ts` may be null, those that hold (or may hold: written before the count was recorded) rows
/// without a time. Sound for rows filtered on `ts >= since_ms OR ts IS NULL`: a file whose latest
/// `ts` is older and that holds no null holds none of them. Unlike [`scan_since`] it needs no
/// bound on how long a game lasts (a departure's or finding's partition is the date its game
/// started).
fn scan_ts_since(
    snapshot: &Snapshot,
    def: &crate::lake::tables::TableDef,
    since_ms: i64,
    read: Read,
) -> PolarsResult<Option<LazyFrame>> {
    let nullable = def.columns.iter().any(|c| c.name == "ts" && c.nullable);
    scan_files(
        snapshot,
        def.name,
        |f| f.may_hold_ts_since(since_ms, nullable),
        read,
    )
}

/// A lazy scan of the table's files that `keep` selects (`None` when it selects none).
fn scan_files(
    snapshot: &Snapshot,
    table: &str,
    keep: impl Fn(&crate::lake::FileEntry) -> bool,
    read: Read,
) -> PolarsResult<Option<LazyFrame>> {
    let files: Vec<(PathBuf, &crate::lake::FileEntry)> = snapshot
        .table_files(table)
        .into_iter()
        .filter(|(_, f)| keep(f))
        .collect();
    if files.is_empty() {
        return Ok(None);
    }
    // The newest file has every column the table has had (schema changes are additive): its
    // schema is the scan's, and the older files' columns it adds are read as nulls. (A lake that
    // an older Vigie wrote to after a newer one is refused: polars reads no column a file has
    // beyond the scan's schema.)
    let newest = files
        .iter()
        .max_by_key(|(_, f)| f.added)
        .map(|(p, _)| p.clone());
    let (mut frames, on_disk) = match read {
        Read::Disk => (Vec::new(), files.into_iter().map(|(p, _)| p).collect()),
        Read::Cached => {
            let keyed: Vec<(cache::FileKey, PathBuf)> = files
                .into_iter()
                .map(|(p, f)| (file_key(snapshot, f), p))
                .collect();
            let got = cache::global()
                .lock()
                .map_err(|_| polars_err!(ComputeError: "the features cache was poisoned"))?
                .frames(&keyed)?;
            let frames: Vec<LazyFrame> = got.frames.into_iter().map(DataFrame::lazy).collect();
            (frames, got.on_disk)
        }
    };
    if !on_disk.is_empty() {
        let one = ScanArgsParquet {
            glob: false,
            ..ScanArgsParquet::default()
        };
        let schema = match &newest {
            Some(p) => Some(
                LazyFrame::scan_parquet(
                    PlRefPath::from(p.to_string_lossy().as_ref()),
                    one.clone(),
                )?
                .collect_schema()?,
            ),
            None => None,
        };
        let args = ScanArgsParquet {
            schema,
            allow_missing_columns: true,
            ..one
        };
        let paths: Vec<PlRefPath> = on_disk
            .iter()
            .map(|p| PlRefPath::from(p.to_string_lossy().as_ref()))
            .collect();
        frames.push(LazyFrame::scan_parquet_files(
            paths.into_iter().collect(),
            args,
        )?);
    }
    let mut lf = match frames.len() {
        1 => frames.remove(0),
        // Kept frames are each their file's columns: stacked by name, a missing column as nulls.
        _ => concat(
            frames,
            UnionArgs {
                diagonal: true,
                ..UnionArgs::default()
            },
        )?,
    };
    // A column no file has yet (every file older than the column) is read as nulls of its type.
    if let Some(def) = table_def(table) {
        let have = lf.collect_schema()?;
        let missing: Vec<Expr> = def
            .columns
            .iter()
            .filter(|c| !have.contains(c.name))
            .map(|c| lit(NULL).cast(read_type(&c.ty)).alias(c.name))
            .collect();
        if !missing.is_empty() {
            lf = lf.with_columns(missing);
        }
    }
    Ok(Some(lf))
}

/// The polars type a lake column has when read from Parquet (a timestamp without its zone, as
/// [`conform`] says; a list of texts as a list).
fn read_type(ty: &arrow::datatypes::DataType) -> DataType {
    match ty {
        arrow::datatypes::DataType::Timestamp(_, _) => {
            DataType::Datetime(TimeUnit::Milliseconds, None)
        }
        arrow::datatypes::DataType::List(_) => DataType::List(Box::new(DataType::String)),
        t => polars_type(t),
    }
}

/// The definition of a table this module reads: the replay's tables and its own.
fn table_def(table: &str) -> Option<TableDef> {
    crate::replay::run::derived_table_defs()
        .into_iter()
        .chain([account_table(), pair_table()])
        .find(|d| d.name == table)
}

/// The cache's key of a lake file.
fn file_key(snapshot: &Snapshot, f: &crate::lake::FileEntry) -> cache::FileKey {
    cache::FileKey {
        table: f.table.clone(),
        path: snapshot.root().join(&f.path),
        bytes: f.bytes,
    }
}

/// epoch-ms column of a timestamp column.
fn ms(name: &str) -> Expr {
    col(name).cast(DataType::Int64)
}

fn count_if(cond: Expr) -> Expr {
    cond.cast(DataType::Int64).sum()
}

/// `num / den` as a float, null when `den` is 0.
fn ratio(num: Expr, den: Expr) -> Expr {
    when(den.clone().gt(lit(0)))
        .then(num.cast(DataType::Float64) / den.cast(DataType::Float64))
        .otherwise(lit(NULL).cast(DataType::Float64))
}

/// Coefficient of variation of every timed move's think time, from the per-game sums.
fn pooled_cv() -> Expr {
    let n = col("timed_moves").sum().cast(DataType::Float64);
    let sum = col("think_sum_ms").sum();
    let sq = col("think_sq_sum").sum();
    let mean = sum.clone() / n.clone();
    let var = (sq - sum.clone() * sum / n.clone()) / (n.clone() - lit(1.0));
    when(n.gt(lit(1.0)).and(mean.clone().neq(lit(0.0))))
        .then(var.sqrt() / mean)
        .otherwise(lit(NULL).cast(DataType::Float64))
}

/// Distinct tamper causes over the games (bits of `tamper_mask`).
fn tamper_kinds() -> Expr {
    (0..=TAMPER_CAUSES.len() as i64)
        .map(|k| {
            let bit = (col("tamper_mask").cast(DataType::Float64) / lit((1i64 << k) as f64))
                .floor()
                % lit(2.0);
            count_if(bit.eq(lit(1.0))).gt(lit(0)).cast(DataType::Int64)
        })
        .reduce(|a, b| a + b)
        .unwrap_or_else(|| lit(0i64))
}

/// The `account_features` counts of departures, timeouts and integrity findings: 0 for an account
/// with none in the window (they come from left joins, which leave nulls).
pub const ZERO_WHEN_NONE: [&str; 9] = [
    "departures",
    "departures_losing",
    "abandons_losing",
    "abandons",
    "timeouts",
    "timeouts_losing",
    "decisive_timeouts",
    "decisive_timeouts_losing",
    "integrity_findings",
];

/// Timed moves a game needs for its think-time spread to count in `think_spread`.
const SPREAD_MIN_MOVES: i64 = 10;

/// Whether a `game_players` row's think-time spread counts.
fn spread_game() -> Expr {
    col("timed_moves")
        .gt_eq(lit(SPREAD_MIN_MOVES))
        .and(col("think_median_ms").gt(lit(0.0)))
        .and(col("think_mad_ms").is_not_null())
        .fill_null(lit(false))
}

/// Features of one window for every account with activity in it.
fn account_window(
    players: &LazyFrame,
    departures: &LazyFrame,
    findings: Option<&LazyFrame>,
    end: i64,
    days: i64,
) -> PolarsResult<LazyFrame> {
    let from = end - days * 86_400_000;
    let window = format!("{days}d");
    let in_window = |ts: &str| ms(ts).gt_eq(lit(from)).and(ms(ts).lt_eq(lit(end)));
    let p = players.clone().filter(in_window("started_at"));
    let games = p.clone().group_by([col("account")]).agg([
        len().cast(DataType::Int64).alias("games"),
        count_if(col("kind").eq(lit("draughts10"))).alias("games_draughts10"),
        count_if(
            col("kind")
                .eq(lit("draughts8"))
                .and(col("mode").eq(lit("standard"))),
        )
        .alias("games_draughts8"),
        count_if(col("mode").eq(lit("medieval"))).alias("games_medieval"),
        count_if(col("kind").eq(lit("ludo"))).alias("games_ludo"),
        count_if(col("kind").eq(lit("belote"))).alias("games_belote"),
        count_if(col("rated")).alias("rated_games"),
        count_if(col("outcome").eq(lit("win"))).alias("wins"),
        count_if(col("outcome").eq(lit("loss"))).alias("losses"),
        count_if(col("outcome").eq(lit("draw"))).alias("draws"),
        count_if(col("rated").and(col("outcome").eq(lit("win")))).alias("rated_wins"),
        count_if(
            col("rated")
                .and(col("outcome").eq(lit("win")))
                .and(col("mode").eq(lit("medieval"))),
        )
        .alias("rated_wins_medieval"),
        count_if(col("rated").and(col("outcome").eq(lit("loss")))).alias("rated_losses"),
        count_if(
            col("rated")
                .and(col("outcome").eq(lit("loss")))
                .and(col("mode").eq(lit("medieval"))),
        )
        .alias("rated_losses_medieval"),
        col("stake").sum().alias("staked"),
        col("payout").fill_null(lit(0)).sum().alias("paid_out"),
        col("net").fill_null(lit(0)).sum().alias("net"),
        col("device")
            .n_unique()
            .cast(DataType::Int64)
            .alias("devices"),
        col("ip").n_unique().cast(DataType::Int64).alias("ips"),
        // Quick losses: lost with few accepted moves in the whole game.
        count_if(
            col("outcome")
                .eq(lit("loss"))
                .and(col("game_moves").lt(lit(QUICK_LOSS_PLIES))),
        )
        .alias("quick_losses"),
        // Attempts, from the per-game sums of `game_players`.
        col("attempts").sum().alias("attempts"),
        col("rejected").sum().alias("rejected"),
        col("tamper_attempts").sum().alias("tamper_attempts"),
        count_if(col("tamper_attempts").gt(lit(0))).alias("tamper_games"),
        tamper_kinds().alias("tamper_kinds"),
        col("races").sum().alias("races"),
        col("malformed").sum().alias("malformed"),
        col("late_attempts").sum().alias("late_attempts"),
        // Think times of the player's own accepted moves (not automatic, not passes).
        col("timed_moves").sum().alias("moves_timed"),
        ratio(col("think_sum_ms").sum(), col("timed_moves").sum()).alias("think_mean_ms"),
        pooled_cv().alias("think_cv"),
        col("think_cv").median().alias("think_cv_game"),
        col("think_cv14").median().alias("think_cv14"),
        col("think_cv14").count().alias("cv14_games"),
        col("think_median_ms").median().alias("think_median_ms"),
        (col("think_mad_ms") / col("think_median_ms"))
            .filter(spread_game())
            .median()
            .alias("think_spread"),
        count_if(spread_game()).alias("spread_games"),
        count_if(cheap_give_up()).alias("gave_up_cheaply"),
        ratio(col("instant_moves").sum(), col("timed_moves").sum()).alias("instant_share"),
        ratio(col("forced_think_ms").sum(), col("forced_moves").sum()).alias("forced_think_ms"),
        col("losing_moves").sum().alias("moves_losing"),
        col("slow_losing_moves").sum().alias("slow_moves_losing"),
        ratio(col("slow_losing_moves").sum(), col("losing_moves").sum()).alias("slow_share_losing"),
        ratio(col("slow_other_moves").sum(), col("other_moves").sum()).alias("slow_share_other"),
        // Rows an older replay wrote have no prestall counts: all their moves not losing count.
        col("other_moves_prestall")
            .fill_null(col("other_moves"))
            .sum()
            .alias("moves_other_prestall"),
        col("slow_other_moves_prestall")
            .fill_null(col("slow_other_moves"))
            .sum()
            .alias("slow_moves_other_prestall"),
    ]);
    // A run of timeouts is judged by the position when it began (`run_losing`): sitting out starts
    // at the first timeout, and a server's automatic move during the run can change the balance.
    let run = [col("game"), col("player"), col("timeout_run")];
    let d = departures
        .clone()
        .filter(in_window("ts"))
        .sort(["game", "player", "seq"], SortMultipleOptions::default())
        .with_columns([col("consecutive")
            .eq(lit(1i64))
            .fill_null(lit(true))
            .cast(DataType::Int64)
            .cum_sum(false)
            .over([col("game"), col("player")])?
            .alias("timeout_run")])
        .with_columns([col("losing")
            .fill_null(lit(false))
            .first()
            .over(run)?
            .alias("run_losing")]);
    let losing = col("losing").fill_null(lit(false));
    let deps = d.group_by([col("player")]).agg([
        count_if(col("event").eq(lit("left"))).alias("departures"),
        count_if(col("event").eq(lit("left")).and(losing.clone())).alias("departures_losing"),
        count_if(
            col("event")
                .eq(lit("left"))
                .and(losing.clone())
                .and(col("reason").neq(lit("resigned"))),
        )
        .alias("abandons_losing"),
        count_if(
            col("event")
                .eq(lit("left"))
                .and(col("reason").neq(lit("resigned"))),
        )
        .alias("abandons"),
        count_if(col("event").eq(lit("timeout"))).alias("timeouts"),
        count_if(col("event").eq(lit("timeout")).and(losing)).alias("timeouts_losing"),
        count_if(col("event").eq(lit("timeout")).and(col("decisive"))).alias("decisive_timeouts"),
        count_if(
            col("event")
                .eq(lit("timeout"))
                .and(col("decisive"))
                .and(col("run_losing")),
        )
        .alias("decisive_timeouts_losing"),
        col("elapsed_ms")
            .filter(col("event").eq(lit("timeout")))
            .cast(DataType::Float64)
            .mean()
            .alias("timeout_elapsed_ms"),
    ]);
    let mut out = games.join(
        deps,
        [col("account")],
        [col("player")],
        JoinArgs::new(JoinType::Left),
    );
    match findings {
        Some(f) => {
            let integrity = f
                .clone()
                .filter(
                    col("category")
                        .eq(lit("integrity"))
                        .and(col("account").is_not_null()),
                )
                .filter(ms("ts").gt_eq(lit(from)).or(col("ts").is_null()))
                .group_by([col("account")])
                .agg([len().cast(DataType::Int64).alias("integrity_findings")]);
            out = out.join(
                integrity,
                [col("account")],
                [col("account")],
                JoinArgs::new(JoinType::Left),
            );
        }
        None => out = out.with_columns([lit(0i64).alias("integrity_findings")]),
    }
    // An account with no departure, timeout or integrity finding in the window has counts of 0,
    // not unknown ones (the left joins above leave nulls): an analyst's `avg(departures)` or
    // `count(*) FILTER (WHERE timeouts = 0)` must count it.
    let out = out.with_columns(
        ZERO_WHEN_NONE
            .iter()
            .map(|c| col(*c).fill_null(lit(0i64)))
            .collect::<Vec<_>>(),
    );
    Ok(out.with_columns([
        lit(window).alias("window"),
        lit(end)
            .cast(DataType::Datetime(
                TimeUnit::Milliseconds,
                Some(TimeZone::UTC),
            ))
            .alias("window_end"),
    ]))
}

/// The devices and ips of every two-player game row, as [`pair_window`] reads them.
fn two_player_hashes(players: &LazyFrame) -> LazyFrame {
    players
        .clone()
        .filter(col("opponent").is_not_null())
        .select([col("account"), col("device"), col("ip"), col("started_at")])
}

/// The `game_players` columns [`pair_window`] reads.
const PAIR_INPUTS: [&str; 15] = [
    "game",
    "account",
    "opponent",
    "started_at",
    "rated",
    "outcome",
    "net",
    "stake",
    "game_moves",
    "end_reason",
    "left",
    "timeouts",
    "device",
    "ip",
    "quit_balance",
];

/// Pair features of one window: two-player games between the same accounts.
///
/// `players` gives the games (the [`PAIR_INPUTS`] columns); `hashes` the
/// devices and ips each account used in two-player games (`account`,
/// `device`, `ip`, `started_at`: one row per game, or per distinct hash
/// pair with its latest `started_at`, which selects the same hashes).
fn pair_window(
    players: &LazyFrame,
    hashes: &LazyFrame,
    end: i64,
    days: i64,
) -> PolarsResult<LazyFrame> {
    let from = end - days * 86_400_000;
    let window = format!("{days}d");
    let in_window = ms("started_at")
        .gt_eq(lit(from))
        .and(ms("started_at").lt_eq(lit(end)));
    let p = players
        .clone()
        .filter(in_window.clone())
        .filter(col("opponent").is_not_null());
    let h = hashes.clone().filter(in_window);
    // One row per game from a's side (a < b).
    let a_side = p
        .clone()
        .filter(col("account").lt(col("opponent")))
        .with_columns([
            col("account").alias("a"),
            col("opponent").alias("b"),
            col("game_moves")
                .fill_null(lit(0))
                .lt(lit(QUICK_LOSS_PLIES))
                .alias("quick"),
            col("end_reason")
                .is_in(
                    lit(Series::new("r".into(), ["left", "timeout", "timeouts"])).implode(false),
                    false,
                )
                .alias("gave_up"),
        ]);
    // Whether the loser left or timed out is on the loser's row.
    let gave_up_by = p
        .clone()
        .filter(
            col("outcome")
                .eq(lit("loss"))
                .and(col("left").or(col("timeouts").gt(lit(0)))),
        )
        .select([
            col("game"),
            col("account").alias("quitter"),
            cheap_give_up().alias("quit_cheap"),
        ]);
    let a_side = a_side
        .join(
            gave_up_by,
            [col("game")],
            [col("game")],
            JoinArgs::new(JoinType::Left),
        )
        .sort(["a", "b", "started_at"], SortMultipleOptions::default())
        .with_columns([when(col("outcome").eq(lit("win")))
            .then(lit(1i64))
            .when(col("outcome").eq(lit("loss")))
            .then(lit(-1i64))
            .otherwise(lit(NULL).cast(DataType::Int64))
            .alias("winner_sign")]);
    // Alternation: decided games in order, counting changes of winner.
    let switches = a_side
        .clone()
        .filter(col("winner_sign").is_not_null())
        .with_columns([col("winner_sign")
            .shift(lit(1))
            .over([col("a"), col("b")])?
            .alias("prev_sign")])
        .group_by([col("a"), col("b")])
        .agg([count_if(
            col("prev_sign")
                .is_not_null()
                .and(col("prev_sign").neq(col("winner_sign"))),
        )
        .alias("result_switches")]);
    // The games `who` gave up cheaply.
    let cheap_by = |who: &str| col("quitter").eq(col(who)).and(col("quit_cheap"));
    let agg = a_side.group_by([col("a"), col("b")]).agg([
        len().cast(DataType::Int64).alias("games"),
        count_if(col("rated")).alias("rated_games"),
        count_if(col("outcome").eq(lit("win"))).alias("a_wins"),
        count_if(col("outcome").eq(lit("loss"))).alias("b_wins"),
        count_if(col("outcome").eq(lit("draw"))).alias("draws"),
        (lit(0i64) - col("net").fill_null(lit(0)))
            .sum()
            .alias("flow_a_to_b"),
        count_if(col("outcome").eq(lit("loss")).and(col("quick"))).alias("a_quick_losses"),
        count_if(col("outcome").eq(lit("win")).and(col("quick"))).alias("b_quick_losses"),
        count_if(col("quitter").eq(col("a"))).alias("a_gave_up"),
        count_if(col("quitter").eq(col("b"))).alias("b_gave_up"),
        count_if(cheap_by("a")).alias("a_gave_up_cheaply"),
        count_if(cheap_by("b")).alias("b_gave_up_cheaply"),
        col("stake")
            .filter(cheap_by("a"))
            .min()
            .alias("a_cheap_min_stake"),
        col("stake")
            .filter(cheap_by("b"))
            .min()
            .alias("b_cheap_min_stake"),
        col("stake").max().alias("max_stake"),
    ]);
    // Shared hashes: devices and ips each account used in the window.
    let used = |what: &str| {
        h.clone()
            .select([col("account"), col(what).alias("hash")])
            .unique(None, UniqueKeepStrategy::Any)
    };
    let shared = |what: &str, name: &str| {
        agg.clone()
            .select([col("a"), col("b")])
            .join(
                used(what),
                [col("a")],
                [col("account")],
                JoinArgs::new(JoinType::Inner),
            )
            .join(
                used(what),
                [col("b"), col("hash")],
                [col("account"), col("hash")],
                JoinArgs::new(JoinType::Inner),
            )
            .group_by([col("a"), col("b")])
            .agg([len().cast(DataType::Int64).alias(name)])
    };
    let shared_dev = shared("device", "shared_devices");
    let shared_ip = shared("ip", "shared_ips");
    Ok(agg
        .join(
            switches,
            [col("a"), col("b")],
            [col("a"), col("b")],
            JoinArgs::new(JoinType::Left),
        )
        .join(
            shared_dev,
            [col("a"), col("b")],
            [col("a"), col("b")],
            JoinArgs::new(JoinType::Left),
        )
        .join(
            shared_ip,
            [col("a"), col("b")],
            [col("a"), col("b")],
            JoinArgs::new(JoinType::Left),
        )
        .with_columns([
            col("result_switches").fill_null(lit(0i64)),
            col("shared_devices").fill_null(lit(0i64)),
            col("shared_ips").fill_null(lit(0i64)),
            lit(window).alias("window"),
            lit(end)
                .cast(DataType::Datetime(
                    TimeUnit::Milliseconds,
                    Some(TimeZone::UTC),
                ))
                .alias("window_end"),
        ]))
}

/// The polars type of a lake column.
fn polars_type(ty: &arrow::datatypes::DataType) -> DataType {
    use arrow::datatypes::DataType as A;
    match ty {
        A::Utf8 => DataType::String,
        A::Int64 => DataType::Int64,
        A::Float64 => DataType::Float64,
        A::Boolean => DataType::Boolean,
        A::Timestamp(_, _) => DataType::Datetime(TimeUnit::Milliseconds, Some(TimeZone::UTC)),
        _ => DataType::String,
    }
}

/// An empty frame with the columns of a lake table (`base` only lends a frame to start from).
fn empty_like(base: &LazyFrame, def: &TableDef) -> LazyFrame {
    let exprs: Vec<Expr> = def
        .columns
        .iter()
        .map(|c| lit(NULL).cast(polars_type(&c.ty)).alias(c.name))
        .collect();
    base.clone().select(exprs).limit(0)
}

/// Selects the table's columns in order, cast to the declared types.
fn conform(lf: LazyFrame, def: &TableDef) -> LazyFrame {
    let exprs: Vec<Expr> = def
        .columns
        .iter()
        .map(|c| match c.ty {
            // Through epoch ms to a zone-less datetime: polars is built without time zones, so a
            // zone in a plan is not in the data, and frames read back from Parquet differ.
            arrow::datatypes::DataType::Timestamp(_, _) => col(c.name)
                .cast(DataType::Int64)
                .cast(DataType::Datetime(TimeUnit::Milliseconds, None))
                .alias(c.name),
            _ => col(c.name).cast(polars_type(&c.ty)).alias(c.name),
        })
        .collect();
    lf.select(exprs)
}

/// The frames in the table's shape, one after the other, sorted by the table's key: one plan,
/// so scans the windows share are read once.
fn union(frames: Vec<LazyFrame>, def: &TableDef) -> PolarsResult<DataFrame> {
    let frames: Vec<LazyFrame> = frames.into_iter().map(|f| conform(f, def)).collect();
    let sort: Vec<PlSmallStr> = def.sort_by.iter().map(|s| PlSmallStr::from(*s)).collect();
    concat(frames, UnionArgs::default())?
        .sort(sort, SortMultipleOptions::default())
        .collect()
}

/// What a features run did.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct FeaturesReport {
    pub version: Option<u64>,
    pub account_rows: u64,
    pub pair_rows: u64,
    pub elapsed_ms: u64,
}

/// Computes the features of the latest snapshot and commits them (replacing the previous ones).
pub fn run(lake: &Lake) -> Result<FeaturesReport, FeaturesError> {
    run_scoped(lake, None)
}

/// The accounts of the committed `account_features` table, sorted.
pub fn feature_accounts(lake: &Lake) -> Result<Vec<String>, FeaturesError> {
    let snapshot = lake.snapshot()?;
    let Some(f) = scan(&snapshot, "account_features")? else {
        return Ok(Vec::new());
    };
    let df = f
        .select([col("account")])
        .unique(None, UniqueKeepStrategy::Any)
        .sort(["account"], SortMultipleOptions::default())
        .collect()?;
    Ok(df
        .column("account")?
        .as_materialized_series()
        .str()?
        .iter()
        .flatten()
        .map(str::to_string)
        .collect())
}

/// The accounts a scoped run recomputes, as a polars membership test.
fn member_of(accounts: &[String]) -> impl Fn(&str) -> Expr {
    let set = Series::new("scope".into(), accounts.to_vec());
    move |c: &str| col(c).is_in(lit(set.clone()).implode(false), false)
}

/// [`run`], restricted to `scope` when given: the rows of those accounts
/// (and of the pairs with one of them) are recomputed with the current
/// window end, every other row is kept from the previous run.
///
/// A scoped row equals what a full run at the same snapshot gives: every
/// input of an account's features (its games and their moves, its
/// departures and findings, the devices and ips its opponents used) is
/// read whole; other accounts' games are skipped, and of its opponents'
/// other games only the distinct device and ip pairs are kept, each with
/// its latest game start. The streaming job uses it for the accounts its
/// last replays touched.
pub fn run_scoped(
    lake: &Lake,
    scope: Option<&std::collections::BTreeSet<String>>,
) -> Result<FeaturesReport, FeaturesError> {
    let started = std::time::Instant::now();
    let mut writer = lake.writer()?;
    let snapshot = lake.snapshot()?;
    let snapshot_ms = started.elapsed().as_millis() as u64;
    let replayed = snapshot.state.stage::<crate::replay::run::ReplayStage>()?;
    let end = snapshot.state.latest_event_ms();
    // The whole table as a lazy scan, built only where it is read (a scan reads its newest
    // file's footer when built).
    let all_players = || scan(&snapshot, "game_players");
    if snapshot.table_files("game_players").is_empty() {
        return Ok(FeaturesReport::default());
    }
    // No departure (a young lake, a stream's first seconds; in a scoped run, none in the window):
    // an empty table of the right shape.
    let no_departures =
        |players: &LazyFrame| empty_like(players, &crate::replay::rows::DepartureRow::def());
    let scope: Option<Vec<String>> = scope.map(|s| s.iter().cloned().collect());
    let mut account_frames = Vec::new();
    let mut pair_frames = Vec::new();
    match &scope {
        None => {
            let Some(players) = all_players()? else {
                return Ok(FeaturesReport::default());
            };
            let findings = scan(&snapshot, "findings")?;
            let departures = match scan(&snapshot, "departures")? {
                Some(d) => d,
                None => no_departures(&players),
            };
            for days in WINDOWS {
                account_frames.push(account_window(
                    &players,
                    &departures,
                    findings.as_ref(),
                    end,
                    days,
                )?);
                let hashes = two_player_hashes(&players);
                pair_frames.push(pair_window(&players, &hashes, end, days)?);
            }
        }
        Some(accounts) => {
            let is_in = member_of(accounts);
            // Only the largest window's games: the files of older `date` partitions (a game's
            // partition is the date it started) are not even opened.
            let oldest = end - WINDOWS[WINDOWS.len() - 1] * 86_400_000;
            let players =
                match scan_since(&snapshot, "game_players", Some(oldest), Read::Cached)? {
                    Some(p) => p,
                    None => match all_players()? {
                        Some(p) => p,
                        None => return Ok(FeaturesReport::default()),
                    },
                }
                .filter(ms("started_at").gt_eq(lit(oldest)));
            let window_ms = started.elapsed().as_millis() as u64;
            // Every input an account's row reads, read once and used by every window: its
            // game_players rows, the rows of its opponents in its games (with only the columns
            // pair features read), the devices and ips its opponents used in any two-player
            // game (one row per distinct hash pair), its departures and findings.
            // One read of the window for the scoped accounts' games, both sides of each.
            let games = players
                .clone()
                .filter(is_in("account").or(is_in("opponent")))
                .collect()?;
            let games_ms = started.elapsed().as_millis() as u64;
            let own = games.clone().lazy().filter(is_in("account")).collect()?;
            let mut linked = accounts.clone();
            linked.extend(
                own.column("opponent")?
                    .as_materialized_series()
                    .str()?
                    .iter()
                    .flatten()
                    .map(str::to_string),
            );
            let pair_games = games.lazy().select(PAIR_INPUTS.map(col));
            let hashes = two_player_hashes(&players.clone().filter(member_of(&linked)("account")))
                .group_by([col("account"), col("device"), col("ip")])
                .agg([col("started_at").max()])
                .collect()?
                .lazy();
            let hashes_ms = started.elapsed().as_millis() as u64;
            // Only the window's departures and findings: the windows filter on the same
            // times, and what is older (the lake's whole history) would be read for nothing.
            let departures = scan_ts_since(
                &snapshot,
                &crate::replay::rows::DepartureRow::def(),
                oldest,
                Read::Cached,
            )?
            .unwrap_or_else(|| no_departures(&players))
            .filter(is_in("player").and(ms("ts").gt_eq(lit(oldest))))
            .collect()?
            .lazy();
            let departures_ms = started.elapsed().as_millis() as u64;
            let findings = match scan_ts_since(
                &snapshot,
                &crate::replay::rows::FindingRow::def(),
                oldest,
                Read::Cached,
            )? {
                Some(f) => Some(
                    f.filter(
                        is_in("account").and(ms("ts").gt_eq(lit(oldest)).or(col("ts").is_null())),
                    )
                    .collect()?
                    .lazy(),
                ),
                None => None,
            };
            tracing::debug!(
                snapshot_ms,
                window_ms,
                games_ms,
                hashes_ms,
                departures_ms,
                findings_ms = started.elapsed().as_millis() as u64,
                "features reads"
            );
            let own = own.lazy();
            for days in WINDOWS {
                account_frames.push(account_window(
                    &own,
                    &departures,
                    findings.as_ref(),
                    end,
                    days,
                )?);
                pair_frames.push(
                    pair_window(&pair_games, &hashes, end, days)?.filter(is_in("a").or(is_in("b"))),
                );
            }
            // The previous rows of everyone else, as they were.
            account_frames.extend(
                scan_since(&snapshot, "account_features", None, Read::Cached)?
                    .map(|f| f.filter(is_in("account").not())),
            );
            pair_frames.extend(
                scan_since(&snapshot, "pair_features", None, Read::Cached)?
                    .map(|f| f.filter(is_in("a").not().and(is_in("b").not()))),
            );
        }
    }
    let read_ms = started.elapsed().as_millis() as u64;
    let accounts = union(account_frames, &account_table())?;
    let pairs = union(pair_frames, &pair_table())?;
    let computed_ms = started.elapsed().as_millis() as u64;
    let mut txn = writer.begin("features")?;
    for f in snapshot
        .state
        .table_files("account_features")
        .chain(snapshot.state.table_files("pair_features"))
    {
        txn.remove_file(&f.path);
    }
    let mut report = FeaturesReport {
        account_rows: accounts.height() as u64,
        pair_rows: pairs.height() as u64,
        ..FeaturesReport::default()
    };
    let tables = [(account_table(), accounts), (pair_table(), pairs)];
    let mut files = Vec::with_capacity(tables.len());
    for (def, _) in &tables {
        files.push(txn.new_file(def.name, None)?);
    }
    // Both tables at once, one thread each: a streaming pass waits for them before its rules.
    let written: Vec<Result<(DataFrame, u64), FeaturesError>> = std::thread::scope(|s| {
        let writers: Vec<_> = tables
            .into_iter()
            .zip(&files)
            .map(|((_, mut df), file)| {
                s.spawn(move || write_parquet(&file.pending, &mut df).map(|bytes| (df, bytes)))
            })
            .collect();
        writers
            .into_iter()
            .zip(&files)
            .map(|(w, file)| {
                w.join().unwrap_or_else(|_| {
                    Err(FeaturesError::Io {
                        path: file.pending.clone(),
                        source: std::io::Error::other("the writing thread panicked"),
                    })
                })
            })
            .collect()
    });
    for (w, file) in written.into_iter().zip(files) {
        let (df, bytes) = w?;
        let rows = df.height() as u64;
        // The next scoped run reads this table again: it finds the frame it would decode.
        if let Ok(mut c) = cache::global().lock() {
            c.replace_table(
                cache::FileKey {
                    table: file.table.clone(),
                    path: file.fin.clone(),
                    bytes,
                },
                df,
            );
        }
        txn.add_file_meta(
            file,
            FileMeta {
                rows,
                bytes,
                ..FileMeta::default()
            },
        );
    }
    let (cache_mib, (cache_hits, cache_misses)) = cache::global()
        .lock()
        .map(|c| (c.used() >> 20, c.hits_and_misses()))
        .unwrap_or_default();
    tracing::debug!(
        read_ms,
        computed_ms,
        cache_mib,
        cache_hits,
        cache_misses,
        written_ms = started.elapsed().as_millis() as u64,
        scoped = scope.as_ref().map(Vec::len),
        "features"
    );
    txn.put_stage(&FeaturesStage {
        version: snapshot.version(),
        window_end_ms: end,
        replay: replayed,
        scoped: scope.as_ref().map(Vec::len),
    })?;
    report.elapsed_ms = started.elapsed().as_millis() as u64;
    report.version = Some(txn.commit(serde_json::to_value(&report).unwrap_or_default())?);
    Ok(report)
}

fn write_parquet(path: &Path, df: &mut DataFrame) -> Result<u64, FeaturesError> {
    // Polars plans these tables with zone-less datetimes (it is built without time zones; see
    // `conform`). Every one of them is a UTC instant, and Delta's `timestamp` must be written
    // "adjusted to UTC": a reader such as DuckDB shifts zone-less values by its session's zone.
    // (A cast to a zoned type would drop the zone in this build, so the zone is set on the
    // column's epoch values directly.)
    let naive: Vec<(PlSmallStr, TimeUnit)> = df
        .columns()
        .iter()
        .filter_map(|c| match c.dtype() {
            DataType::Datetime(unit, None) => Some((c.name().clone(), *unit)),
            _ => None,
        })
        .collect();
    for (name, unit) in naive {
        let utc = df
            .column(&name)?
            .as_materialized_series()
            .to_physical_repr()
            .into_owned()
            .into_datetime(unit, Some(TimeZone::UTC));
        df.with_column(utc.into_column())?;
    }
    let file = std::fs::File::create(path).map_err(|source| FeaturesError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    ParquetWriter::new(file)
        // zstd's fastest level: the tables are written whole at every pass of the stream, and
        // polars' default (level 3) took about a fifth longer for files about 5 % smaller
        // (docs/performance.md). The level's type is the one `ParquetCompression::Zstd` takes,
        // reached through polars' (hidden) re-export of polars-utils.
        .with_compression(ParquetCompression::Zstd(
            polars::polars_utils::compression::ZstdLevel::try_new(1).ok(),
        ))
        // Minimum, maximum and null count (what readers prune on); not the distinct counts, which
        // no reader here uses and which cost a hash of every value at every pass of the stream.
        .with_statistics(StatisticsOptions::default())
        .finish(df)?;
    // polars declares its text columns `string_view` in the file's Arrow schema, whatever the
    // table's Delta schema says; pyarrow could not filter them.
    Ok(crate::lake::parquet::plain_strings_in_footer(path)?)
}
