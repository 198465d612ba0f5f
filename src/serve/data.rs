//! The boundary between the dashboard and its data: the [`DataSource`] trait and every type it returns.
//!
//! [`crate::serve::lake_data::LakeData`] implements [`DataSource`] over the lake
//! (DataFusion); it is the only implementation: tests serve lakes that the real
//! pipeline built from the simulator and the sample logs.
//!
//! # Async, object-safe
//!
//! Every method returns a boxed `Send` future ([`DataFuture`]) so that the
//! trait stays object-safe (`Arc<dyn DataSource>`) without an extra crate and
//! an implementation can `.await` DataFusion directly. An implementation
//! writes, for instance:
//!
//! ```ignore
//! fn game<'a>(&'a self, id: &'a str) -> DataFuture<'a, Option<GameView>> {
//!     Box::pin(async move { self.load_game(id).await })
//! }
//! ```
//!
//! A synchronous implementation wraps its result in `Box::pin(std::future::ready(..))`.
//! Blocking work (file reads, CPU-heavy scans) belongs in `tokio::task::spawn_blocking`.
//!
//! # Review state
//!
//! The review state of a flag is the fold of its audit entries
//! ([`crate::review::ReviewIndex`]). The data source owns the audit log,
//! so it is the one that fills [`Flag::review`] and [`FlagBrief::review`] and
//! applies [`QueueQuery::statuses`] before paging: build a `ReviewIndex` from
//! [`DataSource::audit_log`] (or an equivalent query) and look flags up in it.
//!
//! # Audit log
//!
//! [`DataSource::append_audit`] must serialise appends (the hash chain needs a
//! total order): take a lock, read the head, seal the entry with
//! [`crate::review::seal`], persist it, release. The dashboard itself
//! additionally serialises review actions within one process.

use std::fmt;
use std::future::Future;
use std::pin::Pin;

use crate::log::syntax::{EpochMs, civil_from_days, days_from_civil};
use crate::log::{Event, Kind, Mode, Seat};

use crate::review::{AuditEntry, NewAuditEntry};
pub use crate::review::{Decision, FlagReview, ReviewStatus};

/// The future every [`DataSource`] method returns.
pub type DataFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, DataError>> + Send + 'a>>;

/// What the dashboard reads and writes. Object-safe, `Send + Sync`; see the module documentation.
pub trait DataSource: Send + Sync + 'static {
    /// Flagged accounts ordered by the highest severity of their flags not dismissed, then risk
    /// (those flags' total score, highest first), then account id; filtered and paged.
    fn queue<'a>(&'a self, q: &'a QueueQuery) -> DataFuture<'a, Page<QueueRow>>;

    /// Everything known about one account, or `None` for an unknown account.
    fn account<'a>(&'a self, id: &'a str) -> DataFuture<'a, Option<AccountView>>;

    /// One flag by id (with its review state), or `None`. Used by review actions.
    fn flag<'a>(&'a self, id: &'a str) -> DataFuture<'a, Option<Flag>>;

    /// One game (Belote: one match) with all its events in seq order, or `None`.
    fn game<'a>(&'a self, id: &'a str) -> DataFuture<'a, Option<GameView>>;

    /// Runs a named SQL file of the main crate's `queries/` (e.g.
    /// `queries/dashboard/flags_per_day_by_rule.sql`) and returns its result.
    /// An unknown file is [`DataError::NotFound`].
    fn panel<'a>(&'a self, query_file: &'a str) -> DataFuture<'a, Table>;

    /// Lake version, pipeline lag and open flags, for `/metrics` and the page footer.
    fn status(&self) -> DataFuture<'_, Status>;

    /// The whole audit log, oldest first.
    fn audit_log(&self) -> DataFuture<'_, Vec<AuditEntry>>;

    /// Appends one audit entry: assigns `seq`, chains it to the head with
    /// [`crate::review::seal`], persists it, and returns the sealed entry.
    fn append_audit(&self, e: NewAuditEntry) -> DataFuture<'_, AuditEntry>;

    /// Runs an analyst's read-only query for the SQL console (at most
    /// `max_rows` rows, under the SQL guard's checks and limits, over the
    /// tables `access` allows, logged with `who`). A refused or failed query
    /// is [`DataError::BadQuery`] with the reason. Sources without SQL answer
    /// [`DataError::Unavailable`].
    fn analyst_query<'a>(
        &'a self,
        sql: &'a str,
        who: &'a str,
        access: crate::sql::TableAccess,
        max_rows: usize,
    ) -> DataFuture<'a, QueryResult> {
        let _ = (sql, who, access, max_rows);
        Box::pin(async { Err(DataError::Unavailable("this data source has no SQL".into())) })
    }

    /// The version of the data the other methods answer from now (the lake version; a review
    /// action moves it): a page rendered from one version may be answered again until it
    /// changes ([`crate::serve::page_cache`]). `None`: the source cannot tell, nothing is reused.
    fn version(&self) -> DataFuture<'_, Option<u64>> {
        Box::pin(std::future::ready(Ok(None)))
    }

    /// The lake directory, for pages that read it directly (public
    /// verification, compliance report); `None` when there is no lake.
    fn lake_root(&self) -> Option<&std::path::Path> {
        None
    }
}

/// The result of an analyst's query, every value formatted as text.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct QueryResult {
    /// Column names.
    pub columns: Vec<String>,
    /// Rows (`None` for SQL NULL).
    pub rows: Vec<Vec<Option<String>>>,
    /// More rows existed than were returned.
    pub truncated: bool,
    /// Wall time, milliseconds.
    pub ms: u64,
    /// The lake snapshot the query read.
    pub snapshot: String,
}

/// Why the data source could not answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DataError {
    /// A named thing (query file, table) does not exist.
    #[error("not found: {0}")]
    NotFound(String),
    /// The query itself is not acceptable (bad filter value, unknown column).
    #[error("bad query: {0}")]
    BadQuery(String),
    /// Stored data could not be read as expected (a corrupt audit line, a schema mismatch).
    #[error("corrupt data: {0}")]
    Corrupt(String),
    /// The store is unreachable or failed (I/O, engine error).
    #[error("data source unavailable: {0}")]
    Unavailable(String),
    /// A write that no longer applies: a flag another process acted on since it was read.
    #[error("{0}")]
    Conflict(String),
}

/// A calendar day (UTC), as days since 1970-01-01. Displays as `YYYY-MM-DD`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Day(pub i32);

impl Day {
    /// The day of a timestamp.
    pub fn of(ms: EpochMs) -> Day {
        Day(ms.div_euclid(86_400_000) as i32)
    }

    /// Parses `YYYY-MM-DD`.
    pub fn parse(s: &str) -> Option<Day> {
        let b = s.as_bytes();
        if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
            return None;
        }
        let num = |r: std::ops::Range<usize>| -> Option<i64> {
            s.get(r)?.bytes().try_fold(0i64, |acc, c| {
                c.is_ascii_digit().then(|| acc * 10 + i64::from(c - b'0'))
            })
        };
        let (y, m, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
        if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
            return None;
        }
        let days = days_from_civil(y, m, d);
        // Reject dates such as 2026-02-31 by a round trip.
        let back = civil_from_days(days);
        (back == (y, m, d)).then_some(Day(days as i32))
    }

    /// Start of the day, epoch milliseconds.
    pub fn start_ms(self) -> EpochMs {
        i64::from(self.0) * 86_400_000
    }
}

impl fmt::Display for Day {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (y, m, d) = civil_from_days(i64::from(self.0));
        write!(f, "{y:04}-{m:02}-{d:02}")
    }
}

pub(crate) use crate::review::text_enum;

pub use crate::replay::finding::Severity;

text_enum!(
    /// What the pipeline recommends for an account.
    RecommendedAction {
        Review => "review",
        BlockRecommended => "block_recommended",
    }
);

text_enum!(
    /// The window a flag's rule looked at.
    Window {
        Day1 => "1d",
        Day7 => "7d",
        Day30 => "30d",
    }
);

text_enum!(
    /// Category of a replay finding (docs/findings.md).
    FindingCategory {
        Attempt => "attempt",
        Integrity => "integrity",
        Fairness => "fairness",
    }
);

text_enum!(
    /// How two accounts are linked.
    LinkVia {
        Device => "device",
        Ip => "ip",
    }
);

text_enum!(
    /// Comparison of a feature with its threshold.
    Cmp {
        Gt => ">",
        Ge => ">=",
        Lt => "<",
        Le => "<=",
    }
);

/// Rule ids and titles the queue filter offers (the main crate's rule catalog;
/// an id not listed here still filters when given as `?rule=`).
pub const RULES: &[(&str, &str)] = &[
    (
        "manipulation_attempts",
        "Repeated illegal or out-of-turn attempts",
    ),
    ("rage_quit", "Leaves games while losing"),
    ("sitting", "Lets the clock run out instead of playing"),
    ("stalling", "Slow play when losing"),
    ("chip_dumping", "Loses stakes to one account on purpose"),
    ("win_trading", "Alternating wins with the same opponent"),
    ("bot_timing", "Machine-regular think times"),
    (
        "shared_device_ring",
        "Accounts sharing devices that play each other",
    ),
    (
        "integrity_involvement",
        "Involved in games with server integrity findings",
    ),
    (
        "engine_assistance",
        "Finds the draughts moves only a deep search sees",
    ),
];

/// Queue filters and paging.
#[derive(Debug, Clone, PartialEq)]
pub struct QueueQuery {
    /// Only flags of this rule id.
    pub rule: Option<String>,
    /// Only flags whose evidence involves this game kind.
    pub kind: Option<Kind>,
    /// Only flags in one of these review states (empty: any).
    pub statuses: Vec<ReviewStatus>,
    /// Only flags last seen on or after this day.
    pub from: Option<Day>,
    /// Only flags last seen on or before this day.
    pub to: Option<Day>,
    /// Page number, from 0.
    pub page: u32,
    /// Rows per page (1-200).
    pub per_page: u32,
}

impl Default for QueueQuery {
    fn default() -> Self {
        QueueQuery {
            rule: None,
            kind: None,
            statuses: Vec::new(),
            from: None,
            to: None,
            page: 0,
            per_page: 25,
        }
    }
}

impl QueueQuery {
    /// Whether a flag passes the filters (rule, kind, status, dates). An
    /// account is listed when at least one of its flags passes.
    pub fn matches(&self, f: &FlagBrief) -> bool {
        self.rule.as_ref().is_none_or(|r| *r == f.rule)
            && self.kind.is_none_or(|k| f.kinds.contains(&k))
            && (self.statuses.is_empty() || self.statuses.contains(&f.review.status))
            && self.from.is_none_or(|d| Day::of(f.last_seen) >= d)
            && self.to.is_none_or(|d| Day::of(f.last_seen) <= d)
    }
}

/// One page of results.
#[derive(Debug, Clone, PartialEq)]
pub struct Page<T> {
    /// The rows of this page.
    pub items: Vec<T>,
    /// Rows matching the filters, all pages together.
    pub total: u64,
    /// This page's number, from 0.
    pub page: u32,
    /// Rows per page.
    pub per_page: u32,
}

impl<T> Page<T> {
    /// Number of pages (at least 1).
    pub fn pages(&self) -> u32 {
        let per = u64::from(self.per_page.max(1));
        u32::try_from(self.total.div_ceil(per).max(1)).unwrap_or(u32::MAX)
    }
}

/// A flag as listed in the queue.
#[derive(Debug, Clone, PartialEq)]
pub struct FlagBrief {
    /// Flag id.
    pub id: String,
    /// Rule id (`rage_quit`, ...).
    pub rule: String,
    /// Rule title for people.
    pub title: String,
    /// Severity.
    pub severity: Severity,
    /// Score (higher is riskier).
    pub score: f64,
    /// Window of the rule.
    pub window: Window,
    /// Game kinds in its evidence.
    pub kinds: Vec<Kind>,
    /// Last time the behaviour was seen.
    pub last_seen: EpochMs,
    /// Review state.
    pub review: FlagReview,
}

/// One row of the queue: a flagged account.
#[derive(Debug, Clone, PartialEq)]
pub struct QueueRow {
    /// Account id.
    pub account: String,
    /// Total score of its flags (the queue order).
    pub risk: f64,
    /// Highest severity among its flags.
    pub max_severity: Severity,
    /// Recommended action.
    pub action: RecommendedAction,
    /// All its flags (not only those matching the filters), highest score first.
    pub flags: Vec<FlagBrief>,
    /// Games played in the last 30 days.
    pub games: i64,
    /// Last time any flag saw the behaviour.
    pub last_seen: EpochMs,
}

/// A named count in a flag's evidence (`rejected attempts: 14`).
#[derive(Debug, Clone, PartialEq)]
pub struct EvidenceCount {
    /// What is counted.
    pub name: String,
    /// How many.
    pub value: i64,
}

/// A feature value that crossed its threshold.
#[derive(Debug, Clone, PartialEq)]
pub struct FeatureValue {
    /// Feature name (`departure_while_losing_rate`).
    pub name: String,
    /// Its value for this account and window.
    pub value: f64,
    /// How it compares with the threshold.
    pub cmp: Cmp,
    /// The threshold of the rule.
    pub threshold: f64,
}

/// A reference to the event behind a piece of evidence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvidenceRef {
    /// Game id.
    pub game: String,
    /// Seq of the event.
    pub seq: i64,
    /// A short note for reviewers.
    pub note: String,
}

/// Why a flag was raised.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Evidence {
    /// Counts.
    pub counts: Vec<EvidenceCount>,
    /// Features past their thresholds.
    pub features: Vec<FeatureValue>,
    /// Events to look at.
    pub refs: Vec<EvidenceRef>,
    /// Other facts as (name, text), e.g. the partner of a pair or the device of a ring.
    pub notes: Vec<(String, String)>,
}

/// A flag with its evidence.
#[derive(Debug, Clone, PartialEq)]
pub struct Flag {
    /// Flag id.
    pub id: String,
    /// Flagged account.
    pub account: String,
    /// Rule id.
    pub rule: String,
    /// Rule title.
    pub title: String,
    /// Window.
    pub window: Window,
    /// Score.
    pub score: f64,
    /// Severity.
    pub severity: Severity,
    /// First time the behaviour was seen in the window.
    pub first_seen: EpochMs,
    /// Last time.
    pub last_seen: EpochMs,
    /// Game kinds involved.
    pub kinds: Vec<Kind>,
    /// Evidence.
    pub evidence: Evidence,
    /// Review state.
    pub review: FlagReview,
}

impl Flag {
    /// The queue form of this flag.
    pub fn brief(&self) -> FlagBrief {
        FlagBrief {
            id: self.id.clone(),
            rule: self.rule.clone(),
            title: self.title.clone(),
            severity: self.severity,
            score: self.score,
            window: self.window,
            kinds: self.kinds.clone(),
            last_seen: self.last_seen,
            review: self.review.clone(),
        }
    }
}

/// Risk summary of an account.
#[derive(Debug, Clone, PartialEq)]
pub struct RiskSummary {
    /// Highest severity of the flags not dismissed.
    pub max_severity: Severity,
    /// Sum of the scores of the flags not dismissed (a dismissed flag is a false positive).
    pub total_score: f64,
    /// Recommended action.
    pub action: RecommendedAction,
    /// Games in the last 30 days.
    pub games: i64,
    /// First game seen.
    pub first_seen: Option<EpochMs>,
    /// Last game seen.
    pub last_seen: Option<EpochMs>,
}

/// A daily series of one metric, for charts.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Metric id.
    pub metric: String,
    /// Label for people.
    pub label: String,
    /// Points, one per day, ascending.
    pub points: Vec<(Day, f64)>,
    /// A rule threshold to draw, if any.
    pub threshold: Option<f64>,
}

/// An account sharing a device or IP hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkedAccount {
    /// The other account.
    pub account: String,
    /// Through what.
    pub via: LinkVia,
    /// The shared hash.
    pub hash: String,
    /// Games the two played against each other.
    pub games_together: i64,
    /// Whether the other account is flagged too.
    pub flagged: bool,
}

/// A frequent opponent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opponent {
    /// The opponent.
    pub account: String,
    /// Games together.
    pub games: i64,
    /// Games this account won against them.
    pub wins: i64,
    /// Games it lost.
    pub losses: i64,
    /// Net stake flow towards this account (payouts minus stakes, summed; negative: money went to the opponent).
    pub net_stake: i64,
    /// Whether the opponent is flagged too.
    pub flagged: bool,
}

/// A decision about the account recorded outside this dashboard's audit log (earlier tooling, support).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PastDecision {
    /// When.
    pub at: EpochMs,
    /// Who.
    pub by: String,
    /// What (`warned`, `blocked`, `unblocked`...).
    pub decision: String,
    /// Why.
    pub reason: String,
    /// Where it was recorded.
    pub source: String,
}

/// Everything about one account.
#[derive(Debug, Clone, PartialEq)]
pub struct AccountView {
    /// Account id.
    pub account: String,
    /// Risk summary.
    pub summary: RiskSummary,
    /// Every flag with its evidence, highest score first.
    pub flags: Vec<Flag>,
    /// Daily series of a few metrics.
    pub series: Vec<Series>,
    /// Accounts sharing a device or IP hash.
    pub linked: Vec<LinkedAccount>,
    /// Frequent opponents.
    pub opponents: Vec<Opponent>,
    /// Decisions recorded elsewhere (the dashboard's own come from the audit log).
    pub history: Vec<PastDecision>,
    /// The engine analysis of its draughts moves against the population's, when it has any.
    pub analysis: Option<AccountAnalysis>,
}

/// An account's analysed draughts moves (`move_analysis`, not forced, not played by the server,
/// the 30 days up to the latest analysed game) against every analysed account's.
#[derive(Debug, Clone, PartialEq)]
pub struct AccountAnalysis {
    /// The account's analysed moves.
    pub positions: i64,
    /// Its analysed games.
    pub games: i64,
    /// Its average loss, hundredths of a man.
    pub average_loss: f64,
    /// The share of its moves that are the engine's best.
    pub match_rate: f64,
    /// The same two numbers for every analysed account with at least
    /// [`AccountAnalysis::MIN_POSITIONS`] analysed moves (this one included when it has them):
    /// (average loss, match rate).
    pub population: Vec<(f64, f64)>,
}

impl AccountAnalysis {
    /// Analysed moves an account needs to count in the population.
    pub const MIN_POSITIONS: i64 = 100;

    /// Share of the population with a lower value than `v` (ties count half), 0 to 1.
    pub fn percentile(values: impl Iterator<Item = f64>, v: f64) -> Option<f64> {
        let (mut below, mut ties, mut n) = (0.0, 0.0, 0.0);
        for x in values {
            n += 1.0;
            if x < v {
                below += 1.0;
            } else if x == v {
                ties += 1.0;
            }
        }
        (n > 0.0).then(|| (below + ties / 2.0) / n)
    }
}

/// A player of a game.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GamePlayer {
    /// Account.
    pub account: String,
    /// Seat.
    pub seat: Seat,
    /// IP hash.
    pub ip: String,
    /// Device hash.
    pub device: String,
    /// win, loss or draw (null while running).
    pub outcome: Option<String>,
    /// Payout received.
    pub payout: Option<i64>,
    /// Payout minus stake.
    pub net: Option<i64>,
}

/// The game row (the `games` table of replay).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GameSummary {
    /// Game id (Belote: match id).
    pub id: String,
    /// Kind.
    pub kind: Kind,
    /// Mode.
    pub mode: Mode,
    /// Ludo variant name, Belote `target=N`.
    pub variant: Option<String>,
    /// Rated.
    pub rated: bool,
    /// Stake per player.
    pub stake: i64,
    /// Currency.
    pub currency: String,
    /// Players in the order of `game_started`.
    pub players: Vec<GamePlayer>,
    /// Start.
    pub started_at: EpochMs,
    /// End, when logged.
    pub ended_at: Option<EpochMs>,
    /// Result as logged.
    pub result_logged: Option<String>,
    /// End reason as logged.
    pub reason_logged: Option<String>,
    /// Result as replayed.
    pub result_replayed: Option<String>,
    /// End reason as replayed.
    pub reason_replayed: Option<String>,
    /// Fairness verdict: pass, fail, pending or n/a.
    pub fairness: String,
    /// Whether replay lost track of the position after a server fault.
    pub desynced: bool,
}

/// A think time as a reviewer reads it beside a move (bot-like steadiness, stalling): `850 ms`,
/// `4.2 s`, `2 min 05 s`. The game viewer's timeline and the account page's evidence both say it so.
pub fn think_text(ms: i64) -> String {
    if ms < 1_000 {
        format!("{ms} ms")
    } else if ms < 60_000 {
        format!("{:.1} s", ms as f64 / 1_000.0)
    } else {
        format!("{} min {:02} s", ms / 60_000, ms % 60_000 / 1_000)
    }
}

/// One replay finding (docs/findings.md).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// Seq of the event it is about.
    pub seq: i64,
    /// Stable code.
    pub code: String,
    /// Category.
    pub category: FindingCategory,
    /// Severity.
    pub severity: Severity,
    /// Account involved.
    pub account: Option<String>,
    /// What the rules give.
    pub expected: Option<String>,
    /// What the log says.
    pub logged: Option<String>,
    /// A sentence for reviewers.
    pub message: String,
}

/// One logged event: the typed event and its line exactly as written.
#[derive(Debug, Clone, PartialEq)]
pub struct LoggedEvent {
    /// The parsed event.
    pub event: Event,
    /// The raw line (without newline).
    pub raw: String,
}

/// A game with its events and findings.
#[derive(Debug, Clone, PartialEq)]
pub struct GameView {
    /// The game row.
    pub summary: GameSummary,
    /// All events in seq order.
    pub events: Vec<LoggedEvent>,
    /// Findings, in seq order.
    pub findings: Vec<Finding>,
    /// The engine's judgement of its moves, in seq order (empty when it was not analysed).
    pub analysis: Vec<MoveJudgement>,
}

/// The engine's judgement of one move of an analysed draughts game (a `move_analysis` row).
/// Scores are in hundredths of a man from the mover's point of view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MoveJudgement {
    /// Seq of the move event.
    pub seq: i64,
    /// The mover.
    pub player: String,
    /// The move played (full path, PDN squares).
    pub played: String,
    /// The engine's best move.
    pub best: String,
    /// Score of the best move.
    pub best_score: i64,
    /// Score of the move played.
    pub played_score: i64,
    /// best_score - played_score.
    pub loss: i64,
    /// Rank of the move played among the legal moves.
    pub rank: i64,
    /// Legal moves.
    pub legal_moves: i64,
    /// Moves within a fifth of a man of the best.
    pub near_best: i64,
    /// A single legal move.
    pub forced: bool,
    /// The move played is the engine's best.
    pub matched: bool,
    /// A move only a deep search finds.
    pub hard: bool,
    /// Played by the server after a timeout.
    pub auto: bool,
    /// The engine and its budget.
    pub engine: String,
}

/// Type of a table column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnType {
    Bool,
    Int,
    Float,
    Text,
    Date,
    Timestamp,
}

/// A column of a [`Table`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    /// Name as in the SQL result.
    pub name: String,
    /// Type.
    pub ty: ColumnType,
}

/// A typed cell.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Text(String),
    Date(Day),
    Timestamp(EpochMs),
}

impl Cell {
    /// Numeric value, when the cell is a number (or a bool: 0/1).
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Cell::Int(v) => Some(*v as f64),
            Cell::Float(v) => v.is_finite().then_some(*v),
            Cell::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
            _ => None,
        }
    }
}

impl fmt::Display for Cell {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Cell::Null => Ok(()),
            Cell::Bool(b) => write!(f, "{b}"),
            Cell::Int(v) => write!(f, "{v}"),
            Cell::Float(v) => {
                if v.fract() == 0.0 && v.abs() < 1e15 {
                    write!(f, "{v:.0}")
                } else {
                    write!(f, "{v:.3}")
                }
            }
            Cell::Text(s) => f.write_str(s),
            Cell::Date(d) => write!(f, "{d}"),
            Cell::Timestamp(ms) => f.write_str(&crate::log::syntax::format_ts(*ms)),
        }
    }
}

/// A query result: column names and rows of typed cells.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Table {
    /// Columns.
    pub columns: Vec<Column>,
    /// Rows, each with one cell per column.
    pub rows: Vec<Vec<Cell>>,
}

impl Table {
    /// Index of a column by name.
    pub fn column(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.name == name)
    }
}

/// Health of the data behind the dashboard.
#[derive(Debug, Clone, PartialEq)]
pub struct Status {
    /// Lake version string.
    pub lake_version: String,
    /// Latest event timestamp in the lake.
    pub latest_event: Option<EpochMs>,
    /// Now minus the latest event, seconds.
    pub lag_seconds: Option<f64>,
    /// Flags in state open.
    pub open_flags: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn day_parse_and_display() {
        let d = Day::parse("2026-11-29");
        assert_eq!(d.map(|d| d.to_string()), Some("2026-11-29".to_owned()));
        assert_eq!(Day::parse("2026-02-31"), None);
        assert_eq!(Day::parse("2026-1-01"), None);
        assert_eq!(Day::parse("abcd-ef-gh"), None);
        let Some(d) = d else { return };
        assert_eq!(Day::of(d.start_ms() + 5), d);
    }

    #[test]
    fn pages() {
        let p: Page<u8> = Page {
            items: vec![],
            total: 51,
            page: 0,
            per_page: 25,
        };
        assert_eq!(p.pages(), 3);
    }
}
