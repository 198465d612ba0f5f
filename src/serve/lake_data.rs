//! The dashboard's data from the lake: flags, features, games and the audit log, read with DataFusion from the latest snapshot and cached per lake version.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::datatypes::{DataType, TimeUnit};

use super::data::*;
use crate::lake::Lake;
use crate::lake::sql::literal as lit;
use crate::log::{Kind, Mode, Seat};
use crate::review::{AuditEntry, NewAuditEntry, ReviewIndex};
use crate::sql::{Guard, QueryLimits, TableAccess};

/// Arrow memory of an analyst query's rows at most (the console's page, a CSV download): the rows
/// are held as text and then as CSV outside the session's memory pool, so a download of wide rows
/// is cut by size as well as by rows (`x-vigie-truncated`). Measured peak of a download that hits
/// it: docs/security.md.
pub const RESULT_BYTES: usize = 32 << 20;

/// The dashboard queries shipped with the binary (the files live in `queries/dashboard/`).
const PANELS: [(&str, &str); 4] = [
    (
        "queries/dashboard/flags_per_day_by_rule.sql",
        include_str!("../../queries/dashboard/flags_per_day_by_rule.sql"),
    ),
    (
        "queries/dashboard/rejected_attempts_per_day_by_kind.sql",
        include_str!("../../queries/dashboard/rejected_attempts_per_day_by_kind.sql"),
    ),
    (
        "queries/dashboard/departure_timeout_rates.sql",
        include_str!("../../queries/dashboard/departure_timeout_rates.sql"),
    ),
    (
        "queries/dashboard/flagged_pair_stake_flows.sql",
        include_str!("../../queries/dashboard/flagged_pair_stake_flows.sql"),
    ),
];

/// How often the lake's version is checked for new commits.
const REFRESH: Duration = Duration::from_millis(1000);

/// Games kept per lake version (a reviewer steps through a game's moves: one read per game).
const GAMES_KEPT: usize = 512;

/// Account views kept per lake version.
const ACCOUNTS_KEPT: usize = 4096;

/// Games per flag whose evidence events are named on the account page (it lists 40).
const NAMED_GAMES: usize = 64;

/// Views read since a lake version was loaded, by id (`None`: no such id), at most `cap`: when
/// full, the next one starts it again.
struct Kept<T> {
    map: Mutex<HashMap<String, T>>,
    cap: usize,
}

impl<T: Clone> Kept<T> {
    fn new(cap: usize) -> Self {
        Kept {
            map: Mutex::new(HashMap::new()),
            cap,
        }
    }

    fn get(&self, id: &str) -> Option<T> {
        self.map
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(id)
            .cloned()
    }

    fn put(&self, id: &str, v: T) {
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        if map.len() >= self.cap {
            map.clear();
        }
        map.insert(id.to_owned(), v);
    }
}

struct Cache {
    version: u64,
    guard: Arc<Guard>,
    /// The session of roles that may not read the audit log, made on first use.
    analyst_guard: tokio::sync::OnceCell<Arc<Guard>>,
    /// Every flag, with its review state (the audit log is part of the lake version).
    flags: Vec<Flag>,
    by_account: BTreeMap<String, Vec<usize>>,
    /// Recommended action of each flag, by flag id.
    actions: HashMap<String, RecommendedAction>,
    /// account -> (games in 30 days, kinds played).
    activity: HashMap<String, (i64, Vec<Kind>)>,
    audit: Vec<AuditEntry>,
    latest_event: i64,
    /// Every flagged account's queue row, in queue order: a request filters and pages it.
    queue: Vec<QueueRow>,
    /// Account views read since this version was loaded, at most [`ACCOUNTS_KEPT`].
    accounts: Kept<Option<AccountView>>,
    /// Games read since this version was loaded, at most [`GAMES_KEPT`].
    games: Kept<Option<GameView>>,
}

/// Whether a flag still counts towards its account's risk, severity and recommended action: a
/// flag a reviewer dismissed (a false positive) does not.
fn standing(f: &Flag) -> bool {
    f.review.status != ReviewStatus::Dismissed
}

impl Cache {
    /// Block recommended when any of the flags not dismissed recommends it.
    fn action_of<'f>(&self, flags: impl IntoIterator<Item = &'f Flag>) -> RecommendedAction {
        if flags
            .into_iter()
            .filter(|f| standing(f))
            .any(|f| self.actions.get(&f.id) == Some(&RecommendedAction::BlockRecommended))
        {
            RecommendedAction::BlockRecommended
        } else {
            RecommendedAction::Review
        }
    }
}

/// A [`DataSource`] over a lake directory.
pub struct LakeData {
    lake: Lake,
    /// Limits of the console's queries.
    limits: QueryLimits,
    cache: tokio::sync::RwLock<Option<Arc<Cache>>>,
    checked: Mutex<Instant>,
    append_lock: tokio::sync::Mutex<()>,
    /// Every analysed account's draughts move statistics with the `move_analysis` files they were
    /// read from: kept across lake versions (the stream commits every second) until the analysis,
    /// or a compaction of its files, changes them.
    analysed: tokio::sync::Mutex<Option<(Vec<String>, Arc<AnalysedAccounts>)>>,
}

fn df_err(e: impl std::fmt::Display) -> DataError {
    DataError::Unavailable(e.to_string())
}

/// Column accessors over a batch, by name, tolerant of types.
struct Cols<'a>(&'a RecordBatch);

/// A value read back from the lake that is not one the code knows: an error naming where it is,
/// never a silent default.
fn unknown(table: &str, column: &str, value: &str) -> DataError {
    DataError::Corrupt(format!(
        "{table}.{column} holds {value:?}, which is not a known value"
    ))
}

/// Parses a value read from the lake with `parse`, or says which table, column and value it was.
fn known<T>(
    table: &str,
    column: &str,
    value: &str,
    parse: impl Fn(&str) -> Option<T>,
) -> Result<T, DataError> {
    parse(value).ok_or_else(|| unknown(table, column, value))
}

impl Cols<'_> {
    /// A required text column parsed with `parse`: null or an unknown value is an error.
    fn parsed<T>(
        &self,
        table: &str,
        name: &str,
        i: usize,
        parse: impl Fn(&str) -> Option<T>,
    ) -> Result<T, DataError> {
        let v = self
            .str(name, i)
            .ok_or_else(|| DataError::Corrupt(format!("{table}.{name} is null or missing")))?;
        known(table, name, &v, parse)
    }

    fn idx(&self, name: &str) -> Option<usize> {
        self.0.schema().index_of(name).ok()
    }
    fn str(&self, name: &str, i: usize) -> Option<String> {
        let c = self.0.column(self.idx(name)?);
        if c.is_null(i) {
            return None;
        }
        let c = datafusion::arrow::compute::cast(c, &DataType::Utf8).ok()?;
        Some(c.as_string::<i32>().value(i).to_string())
    }
    fn int(&self, name: &str, i: usize) -> Option<i64> {
        let c = self.0.column(self.idx(name)?);
        if c.is_null(i) {
            return None;
        }
        let c = datafusion::arrow::compute::cast(c, &DataType::Int64).ok()?;
        Some(
            c.as_primitive::<datafusion::arrow::datatypes::Int64Type>()
                .value(i),
        )
    }
    fn float(&self, name: &str, i: usize) -> Option<f64> {
        let c = self.0.column(self.idx(name)?);
        if c.is_null(i) {
            return None;
        }
        let c = datafusion::arrow::compute::cast(c, &DataType::Float64).ok()?;
        Some(
            c.as_primitive::<datafusion::arrow::datatypes::Float64Type>()
                .value(i),
        )
    }
    fn bool(&self, name: &str, i: usize) -> Option<bool> {
        let c = self.0.column(self.idx(name)?);
        if c.is_null(i) {
            return None;
        }
        Some(c.as_boolean_opt()?.value(i))
    }
}

/// Per analysed account: (moves, games, average loss, match rate).
type AnalysedAccounts = HashMap<String, (i64, i64, f64, f64)>;

/// Every account's analysed draughts moves (not forced, not the server's) of the 30 days up to the
/// latest analysed game's start date: one aggregate over those partitions of `move_analysis`.
async fn analysed_accounts(g: &Guard) -> Result<AnalysedAccounts, DataError> {
    let latest = g
        .query_internal("SELECT CAST(max(date) AS VARCHAR) AS latest FROM move_analysis")
        .await
        .map_err(df_err)?;
    let Some(latest) = each_row(&latest).find_map(|(c, i)| c.str("latest", i)) else {
        return Ok(HashMap::new());
    };
    let day = Day::parse(&latest)
        .ok_or_else(|| DataError::Corrupt(format!("move_analysis.date {latest} is not a date")))?;
    let from = lit(&Day(day.0 - 30).to_string());
    let rows = g
        .query_internal(&format!(
            "SELECT player, count(*) AS positions, count(DISTINCT game) AS games, \
             avg(CAST(loss AS DOUBLE)) AS average_loss, \
             avg(CASE WHEN matched THEN 1.0 ELSE 0.0 END) AS match_rate \
             FROM move_analysis WHERE date >= {from} AND NOT forced AND NOT auto GROUP BY player"
        ))
        .await
        .map_err(df_err)?;
    let mut out = HashMap::new();
    for (c, i) in each_row(&rows) {
        let player = c.parsed("move_analysis", "player", i, |v| Some(v.to_owned()))?;
        let (Some(n), Some(games), Some(loss), Some(rate)) = (
            c.int("positions", i),
            c.int("games", i),
            c.float("average_loss", i),
            c.float("match_rate", i),
        ) else {
            return Err(DataError::Corrupt(format!(
                "move_analysis: the aggregate of {player} has a null"
            )));
        };
        out.insert(player, (n, games, loss, rate));
    }
    Ok(out)
}

/// Every flagged account's queue row (all its flags, highest score first), highest severity first, then risk.
fn queue_rows(cache: &Cache) -> Vec<QueueRow> {
    let mut rows = Vec::with_capacity(cache.by_account.len());
    for (account, idx) in &cache.by_account {
        let mut flags: Vec<&Flag> = idx.iter().map(|&i| &cache.flags[i]).collect();
        flags.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.rule.cmp(&b.rule)));
        let action = cache.action_of(flags.iter().copied());
        rows.push(QueueRow {
            account: account.clone(),
            risk: flags.iter().filter(|f| standing(f)).map(|f| f.score).sum(),
            max_severity: flags
                .iter()
                .filter(|f| standing(f))
                .map(|f| f.severity)
                .max()
                .unwrap_or(Severity::Info),
            action,
            games: cache.activity.get(account).map(|a| a.0).unwrap_or(0),
            last_seen: flags.iter().map(|f| f.last_seen).max().unwrap_or(0),
            flags: flags.iter().map(|f| f.brief()).collect(),
        });
    }
    rows.sort_by(|a, b| {
        b.max_severity
            .cmp(&a.max_severity)
            .then(b.risk.total_cmp(&a.risk))
            .then(a.account.cmp(&b.account))
    });
    rows
}

fn each_row<'a>(batches: &'a [RecordBatch]) -> impl Iterator<Item = (Cols<'a>, usize)> + 'a {
    batches
        .iter()
        .flat_map(|b| (0..b.num_rows()).map(move |i| (Cols(b), i)))
}

/// A flag's evidence JSON (see queries/detect): `min__X`/`max__X` are thresholds of column X.
fn evidence(json: &str, refs: &[String]) -> Evidence {
    let mut ev = Evidence::default();
    let Ok(serde_json::Value::Object(map)) = serde_json::from_str::<serde_json::Value>(json) else {
        return ev;
    };
    let mut used = BTreeSet::new();
    for (k, v) in &map {
        let (cmp, name) = if let Some(n) = k.strip_prefix("min__") {
            (Cmp::Ge, n)
        } else if let Some(n) = k.strip_prefix("max__") {
            (Cmp::Le, n)
        } else {
            continue;
        };
        let (Some(threshold), Some(value)) = (
            v.as_f64(),
            map.get(name).and_then(serde_json::Value::as_f64),
        ) else {
            continue;
        };
        used.insert(k.clone());
        used.insert(name.to_string());
        ev.features.push(FeatureValue {
            name: name.to_string(),
            value,
            cmp,
            threshold,
        });
    }
    for (k, v) in &map {
        if used.contains(k) {
            continue;
        }
        match v {
            serde_json::Value::Number(n) if n.is_i64() => ev.counts.push(EvidenceCount {
                name: k.clone(),
                value: n.as_i64().unwrap_or(0),
            }),
            serde_json::Value::Number(n) => {
                if let Some(f) = n.as_f64() {
                    // Small values (p-values, rates per game) keep their digits.
                    let text = if f != 0.0 && f.abs() < 0.001 {
                        format!("{f:.2e}")
                    } else {
                        format!("{f:.3}")
                    };
                    ev.notes.push((k.clone(), text));
                }
            }
            serde_json::Value::String(s) => ev.notes.push((k.clone(), s.clone())),
            // The other rows of a flag that a rule returned several times (one per partner or
            // device): one note each, their values without the thresholds.
            serde_json::Value::Array(rows) if k == "also" => {
                for (n, row) in rows.iter().enumerate() {
                    let Some(row) = row.as_object() else { continue };
                    let text: Vec<String> = row
                        .iter()
                        .filter(|(name, _)| {
                            !name.starts_with("min__") && !name.starts_with("max__")
                        })
                        .map(|(name, v)| match v {
                            serde_json::Value::String(s) => format!("{name} {s}"),
                            v => format!("{name} {v}"),
                        })
                        .collect();
                    ev.notes
                        .push((format!("also ({})", n + 1), text.join(", ")));
                }
            }
            _ => {}
        }
    }
    for r in refs {
        if let Some((game, seq)) = r.rsplit_once(':')
            && let Ok(seq) = seq.parse()
        {
            ev.refs.push(EvidenceRef {
                game: game.to_string(),
                seq,
                note: String::new(),
            });
        }
    }
    ev
}

/// Texts as a list of SQL literals (`'a', 'b'`), for `IN (...)`.
fn lit_list<'a>(items: impl IntoIterator<Item = &'a str>) -> String {
    items.into_iter().map(lit).collect::<Vec<_>>().join(", ")
}

/// Two internal queries read at once.
async fn read_both(
    g: &Guard,
    a: &str,
    b: &str,
) -> Result<(Vec<RecordBatch>, Vec<RecordBatch>), DataError> {
    let (a, b) = tokio::join!(g.query_internal(a), g.query_internal(b));
    Ok((a.map_err(df_err)?, b.map_err(df_err)?))
}

/// An analysed move as evidence: the engine's best (and whether only a deep search finds it, and
/// what a mistake would have cost, in men), or what the move played lost.
fn judged_name(matched: bool, hard: bool, second_gap: i64, loss: i64) -> String {
    if matched {
        let hard = if hard { ", hard" } else { "" };
        format!("engine's best{hard}, gap {:.2}", second_gap as f64 / 100.0)
    } else {
        format!("loss {:.2}", loss as f64 / 100.0)
    }
}

/// A move as evidence: its think time against the clock, and whether the player was behind.
fn move_name(think_ms: i64, limit_ms: Option<i64>, balance: Option<f64>) -> String {
    let of = limit_ms
        .map(|l| format!(" of {:.0} s", l as f64 / 1000.0))
        .unwrap_or_default();
    let behind = if balance.is_some_and(|b| b < 0.0) {
        ", behind"
    } else {
        ""
    };
    format!("{}{of}{behind}", think_text(think_ms))
}

impl LakeData {
    pub fn new(lake: Lake) -> LakeData {
        LakeData {
            lake,
            limits: QueryLimits::default(),
            cache: tokio::sync::RwLock::new(None),
            checked: Mutex::new(Instant::now() - REFRESH * 2),
            append_lock: tokio::sync::Mutex::new(()),
            analysed: tokio::sync::Mutex::new(None),
        }
    }

    /// The same, with these limits on the console's queries.
    pub fn with_limits(mut self, limits: QueryLimits) -> LakeData {
        self.limits = limits;
        self
    }

    /// The cache of the latest snapshot (rebuilt when the lake moved).
    async fn cache(&self) -> Result<Arc<Cache>, DataError> {
        let due = {
            let mut checked = self.checked.lock().unwrap_or_else(|e| e.into_inner());
            let due = checked.elapsed() >= REFRESH;
            if due {
                *checked = Instant::now();
            }
            due
        };
        if !due && let Some(c) = self.cache.read().await.as_ref() {
            return Ok(Arc::clone(c));
        }
        let version = self.lake.state().map_err(df_err)?.version;
        if let Some(c) = self.cache.read().await.as_ref()
            && c.version == version
        {
            return Ok(Arc::clone(c));
        }
        let mut slot = self.cache.write().await;
        if let Some(c) = slot.as_ref()
            && c.version == version
        {
            return Ok(Arc::clone(c));
        }
        let built = Arc::new(self.build().await?);
        *slot = Some(Arc::clone(&built));
        Ok(built)
    }

    async fn invalidate(&self) {
        *self.checked.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now() - REFRESH * 2;
    }

    async fn build(&self) -> Result<Cache, DataError> {
        let snapshot = self.lake.snapshot().map_err(df_err)?;
        let version = snapshot.version();
        let latest_event = snapshot.state.latest_event_ms();
        let audit =
            crate::review::read_log(&snapshot).map_err(|e| DataError::Corrupt(e.to_string()))?;
        let limits = self.limits;
        let guard = Arc::new(Guard::on(snapshot.clone(), limits).await.map_err(df_err)?);
        let flag_rows = crate::detect::read_flags(&snapshot).map_err(df_err)?;
        let mut activity = HashMap::new();
        let feats = guard
            .query_internal(
                "SELECT account, games, games_draughts10, games_draughts8, games_medieval, games_ludo, games_belote \
                 FROM account_features WHERE \"window\" = '30d'",
            )
            .await
            .map_err(df_err)?;
        for (c, i) in each_row(&feats) {
            let Some(acc) = c.str("account", i) else {
                continue;
            };
            let mut kinds = Vec::new();
            for (col, k) in [
                ("games_draughts10", Kind::Draughts10),
                ("games_draughts8", Kind::Draughts8),
                ("games_medieval", Kind::Draughts8),
                ("games_ludo", Kind::Ludo),
                ("games_belote", Kind::Belote),
            ] {
                if c.int(col, i).unwrap_or(0) > 0 && !kinds.contains(&k) {
                    kinds.push(k);
                }
            }
            activity.insert(acc, (c.int("games", i).unwrap_or(0), kinds));
        }
        let mut flags = Vec::with_capacity(flag_rows.len());
        let mut actions = HashMap::new();
        let mut by_account: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        for f in flag_rows {
            let kinds = activity
                .get(&f.account)
                .map(|a| a.1.clone())
                .unwrap_or_default();
            by_account
                .entry(f.account.clone())
                .or_default()
                .push(flags.len());
            let action = known("flags", "action", &f.action, RecommendedAction::parse)?;
            actions.insert(f.flag_id.clone(), action);
            flags.push(Flag {
                id: f.flag_id.clone(),
                account: f.account.clone(),
                rule: f.rule.clone(),
                title: f.title.clone(),
                window: known("flags", "window", &f.window, Window::parse)?,
                score: f.score,
                severity: known("flags", "severity", &f.severity, Severity::parse)?,
                first_seen: f.first_seen.map(|t| t.0).unwrap_or(f.window_end.0),
                last_seen: f.last_seen.map(|t| t.0).unwrap_or(f.window_end.0),
                kinds,
                evidence: evidence(&f.evidence, &f.refs),
                review: FlagReview::default(),
            });
        }
        let index = ReviewIndex::from_entries(&audit);
        for f in &mut flags {
            f.review = index.get(&f.id);
        }
        let mut cache = Cache {
            version,
            guard,
            analyst_guard: tokio::sync::OnceCell::new(),
            flags,
            by_account,
            actions,
            activity,
            audit,
            latest_event,
            queue: Vec::new(),
            accounts: Kept::new(ACCOUNTS_KEPT),
            games: Kept::new(GAMES_KEPT),
        };
        cache.queue = queue_rows(&cache);
        Ok(cache)
    }

    async fn queue_inner(&self, q: &QueueQuery) -> Result<Page<QueueRow>, DataError> {
        let cache = self.cache().await?;
        let per = q.per_page.clamp(1, 200);
        let skip = u64::from(q.page) * u64::from(per);
        let mut total = 0u64;
        let mut items = Vec::new();
        for row in &cache.queue {
            if !row.flags.iter().any(|f| q.matches(f)) {
                continue;
            }
            if total >= skip && items.len() < per as usize {
                items.push(row.clone());
            }
            total += 1;
        }
        Ok(Page {
            items,
            total,
            page: q.page,
            per_page: per,
        })
    }

    async fn account_inner(&self, id: &str) -> Result<Option<AccountView>, DataError> {
        let cache = self.cache().await?;
        if let Some(v) = cache.accounts.get(id) {
            return Ok(v);
        }
        let view = self.build_account(&cache, id).await?;
        cache.accounts.put(id, view.clone());
        Ok(view)
    }

    /// Names what each evidence event of the account's flags is, for the reviewer: the codes of
    /// its findings there (`not_own_piece`), else the departure or timeout there (`left:
    /// page_closed, behind`; `timeout: loss by acc-7` when another account's, as a pair rule's
    /// are), else the account's move there: the engine's judgement when the game was analysed
    /// (`engine's best, hard, gap 1.80`), else its think time (`27.4 s of 30 s, behind`). Reads the
    /// first [`NAMED_GAMES`] games of each flag.
    async fn name_evidence(
        &self,
        g: &Guard,
        id: &str,
        flags: &mut [Flag],
    ) -> Result<(), DataError> {
        // Each flag's first games in the order of their first event, as the account page lists them.
        let mut games: BTreeSet<&str> = BTreeSet::new();
        for f in flags.iter() {
            let mut mine: Vec<&str> = Vec::new();
            for r in &f.evidence.refs {
                if mine.len() == NAMED_GAMES {
                    break;
                }
                if !mine.contains(&r.game.as_str()) {
                    mine.push(&r.game);
                }
            }
            games.extend(mine);
        }
        if games.is_empty() {
            return Ok(());
        }
        let list = lit_list(games.iter().copied());
        let acc = lit(id);
        // The events lie between the flags' first and last seen: only those days' partitions are
        // read (findings are filed under the day their game started: two days earlier at most).
        let with_refs = || flags.iter().filter(|f| !f.evidence.refs.is_empty());
        let days = match (
            with_refs().map(|f| f.first_seen).min(),
            with_refs().map(|f| f.last_seen).max(),
        ) {
            (Some(first), Some(last)) => format!(
                " AND date BETWEEN {} AND {}",
                lit(&Day(Day::of(first).0 - 2).to_string()),
                lit(&Day(Day::of(last).0 + 1).to_string())
            ),
            _ => String::new(),
        };
        let mut names: HashMap<(String, i64), Vec<String>> = HashMap::new();
        // Both read at once: each is most of the page's added time.
        let findings_sql = format!(
            "SELECT game, seq, code FROM findings WHERE account = {acc} AND game IN ({list}){days} \
             ORDER BY game, seq, code"
        );
        let departures_sql = format!(
            "SELECT game, seq, player, event, reason, losing FROM departures \
             WHERE game IN ({list}){days}"
        );
        let (found, gone) = read_both(g, &findings_sql, &departures_sql).await?;
        for (c, i) in each_row(&found) {
            if let (Some(game), Some(seq), Some(code)) =
                (c.str("game", i), c.int("seq", i), c.str("code", i))
            {
                names.entry((game, seq)).or_default().push(code);
            }
        }
        for (c, i) in each_row(&gone) {
            if let (Some(game), Some(seq), Some(player), Some(event), Some(reason)) = (
                c.str("game", i),
                c.int("seq", i),
                c.str("player", i),
                c.str("event", i),
                c.str("reason", i),
            ) {
                let behind = if c.bool("losing", i) == Some(true) {
                    ", behind"
                } else {
                    ""
                };
                // A pair rule's evidence is the partner's give-up: said whose.
                let whose = if player == id {
                    String::new()
                } else {
                    format!(" by {player}")
                };
                names
                    .entry((game, seq))
                    .or_insert_with(|| vec![format!("{event}: {reason}{behind}{whose}")]);
            }
        }
        // Events of neither are the account's own moves (a staller's slow moves, an engine
        // user's analysed moves): read for the games that still have one, only when one does.
        let unnamed: BTreeSet<&str> = flags
            .iter()
            .flat_map(|f| f.evidence.refs.iter())
            .filter(|r| games.contains(r.game.as_str()))
            .filter(|r| !names.contains_key(&(r.game.clone(), r.seq)))
            .map(|r| r.game.as_str())
            .collect();
        if !unnamed.is_empty() {
            let list = lit_list(unnamed.iter().copied());
            let moves_sql = format!(
                "SELECT game, seq, think_ms, limit_ms, balance FROM moves \
                 WHERE player = {acc} AND game IN ({list}){days}"
            );
            let judged_sql = format!(
                "SELECT game, seq, matched, hard, second_gap, loss FROM move_analysis \
                 WHERE player = {acc} AND game IN ({list}){days}"
            );
            let (moves, judged) = read_both(g, &moves_sql, &judged_sql).await?;
            for (c, i) in each_row(&judged) {
                if let (Some(game), Some(seq), Some(matched), Some(gap), Some(loss)) = (
                    c.str("game", i),
                    c.int("seq", i),
                    c.bool("matched", i),
                    c.int("second_gap", i),
                    c.int("loss", i),
                ) {
                    let hard = c.bool("hard", i) == Some(true);
                    let name = judged_name(matched, hard, gap, loss);
                    names.entry((game, seq)).or_insert_with(|| vec![name]);
                }
            }
            for (c, i) in each_row(&moves) {
                if let (Some(game), Some(seq), Some(think)) =
                    (c.str("game", i), c.int("seq", i), c.int("think_ms", i))
                {
                    let name = move_name(think, c.int("limit_ms", i), c.float("balance", i));
                    names.entry((game, seq)).or_insert_with(|| vec![name]);
                }
            }
        }
        for f in flags.iter_mut() {
            for r in &mut f.evidence.refs {
                if let Some(n) = names.get(&(r.game.clone(), r.seq)) {
                    r.note = n.join(" ");
                }
            }
        }
        Ok(())
    }

    async fn build_account(
        &self,
        cache: &Cache,
        id: &str,
    ) -> Result<Option<AccountView>, DataError> {
        let g = &cache.guard;
        let acc = lit(id);
        let daily = g
            .query_internal(&format!(
                "SELECT day, games, losses, net, rejected, timeouts, departures, \
                 think_sum / nullif(timed, 0) AS think_ms, \
                 sqrt(greatest(think_sq - think_sum * think_sum / nullif(timed, 0), 0) / nullif(timed - 1, 0)) \
                   / nullif(think_sum / nullif(timed, 0), 0) AS think_cv \
                 FROM (SELECT p.date AS day, count(*) AS games, sum(CASE WHEN p.outcome = 'loss' THEN 1 ELSE 0 END) AS losses, \
                 sum(coalesce(p.net, 0)) AS net, sum(p.rejected) AS rejected, sum(p.timeouts) AS timeouts, \
                 sum(CASE WHEN p.left THEN 1 ELSE 0 END) AS departures, \
                 sum(p.timed_moves) AS timed, sum(p.think_sum_ms) AS think_sum, sum(p.think_sq_sum) AS think_sq \
                 FROM game_players p WHERE p.account = {acc} GROUP BY p.date) ORDER BY day"
            ))
            .await
            .map_err(df_err)?;
        let mut flags: Vec<Flag> = cache
            .by_account
            .get(id)
            .map(|idx| idx.iter().map(|&i| cache.flags[i].clone()).collect())
            .unwrap_or_default();
        if flags.is_empty() && daily.iter().all(|b| b.num_rows() == 0) {
            return Ok(None);
        }
        self.name_evidence(g, id, &mut flags).await?;
        let mut series: Vec<Series> = Vec::new();
        let mut push = |metric: &str, label: &str, batches: &[RecordBatch], col: &str| {
            let mut points = Vec::new();
            for (c, i) in each_row(batches) {
                let (Some(day), Some(v)) = (
                    c.str("day", i).and_then(|d| Day::parse(&d)),
                    c.float(col, i),
                ) else {
                    continue;
                };
                points.push((day, v));
            }
            series.push(Series {
                metric: metric.into(),
                label: label.into(),
                points,
                threshold: None,
            });
        };
        push("games", "Games per day", &daily, "games");
        push("losses", "Games lost per day", &daily, "losses");
        push("net", "Net stake flow per day", &daily, "net");
        push("rejected", "Rejected attempts per day", &daily, "rejected");
        push("departures", "Departures per day", &daily, "departures");
        push("timeouts", "Timeouts per day", &daily, "timeouts");
        // From game_players' per-game sums of the timed moves (those `moves` rows would give:
        // accepted, the player's own, not a pass): mean and sample CV per day.
        push("think_ms", "Mean think time (ms)", &daily, "think_ms");
        push("think_cv", "Think-time variation (CV)", &daily, "think_cv");
        let flagged: BTreeSet<&str> = cache.by_account.keys().map(String::as_str).collect();
        // Accounts seen on one of this account's devices or IPs: its hashes first (the bloom
        // filter on `account` finds its rows), then one read of the others' rows.
        let mine = g
            .query_internal(&format!(
                "SELECT DISTINCT device, ip FROM game_players WHERE account = {acc}"
            ))
            .await
            .map_err(df_err)?;
        let (mut devices, mut ips) = (BTreeSet::new(), BTreeSet::new());
        for (c, i) in each_row(&mine) {
            devices.extend(c.str("device", i));
            ips.extend(c.str("ip", i));
        }
        let mut linked_rows: BTreeSet<(String, &'static str, String)> = BTreeSet::new();
        if !devices.is_empty() || !ips.is_empty() {
            let list = |set: &BTreeSet<String>| {
                if set.is_empty() {
                    "NULL".to_owned()
                } else {
                    lit_list(set.iter().map(String::as_str))
                }
            };
            let others = g
                .query_internal(&format!(
                    "SELECT DISTINCT account, device, ip FROM game_players \
                     WHERE (device IN ({}) OR ip IN ({})) AND account <> {acc}",
                    list(&devices),
                    list(&ips)
                ))
                .await
                .map_err(df_err)?;
            for (c, i) in each_row(&others) {
                let Some(account) = c.str("account", i) else {
                    continue;
                };
                if let Some(d) = c.str("device", i).filter(|d| devices.contains(d)) {
                    linked_rows.insert((account.clone(), "device", d));
                }
                if let Some(ip) = c.str("ip", i).filter(|ip| ips.contains(ip)) {
                    linked_rows.insert((account, "ip", ip));
                }
            }
        }
        let pairs = g
            .query_internal(&format!(
                "SELECT a, b, games, a_wins, b_wins, flow_a_to_b FROM pair_features WHERE \"window\" = '30d' AND (a = {acc} OR b = {acc}) ORDER BY games DESC LIMIT 50"
            ))
            .await
            .map_err(df_err)?;
        let mut opponents = Vec::new();
        let mut together: HashMap<String, i64> = HashMap::new();
        for (c, i) in each_row(&pairs) {
            let (Some(a), Some(b)) = (c.str("a", i), c.str("b", i)) else {
                continue;
            };
            let me_a = a == id;
            let other = if me_a { b } else { a };
            let games = c.int("games", i).unwrap_or(0);
            let (aw, bw) = (
                c.int("a_wins", i).unwrap_or(0),
                c.int("b_wins", i).unwrap_or(0),
            );
            let flow = c.int("flow_a_to_b", i).unwrap_or(0);
            together.insert(other.clone(), games);
            opponents.push(Opponent {
                flagged: flagged.contains(other.as_str()),
                account: other,
                games,
                wins: if me_a { aw } else { bw },
                losses: if me_a { bw } else { aw },
                net_stake: if me_a { -flow } else { flow },
            });
        }
        let mut linked = Vec::new();
        for (account, via, hash) in linked_rows {
            linked.push(LinkedAccount {
                games_together: together.get(&account).copied().unwrap_or(0),
                flagged: flagged.contains(account.as_str()),
                account,
                via: known("game_players", "via", via, LinkVia::parse)?,
                hash,
            });
        }
        linked.sort_by(|a, b| (a.via, &a.account).cmp(&(b.via, &b.account)));
        let action = cache.action_of(&flags);
        let summary = RiskSummary {
            max_severity: flags
                .iter()
                .filter(|f| standing(f))
                .map(|f| f.severity)
                .max()
                .unwrap_or(Severity::Info),
            total_score: flags.iter().filter(|f| standing(f)).map(|f| f.score).sum(),
            action,
            games: cache.activity.get(id).map(|a| a.0).unwrap_or(0),
            first_seen: flags.iter().map(|f| f.first_seen).min(),
            last_seen: flags.iter().map(|f| f.last_seen).max(),
        };
        Ok(Some(AccountView {
            account: id.to_string(),
            summary,
            flags,
            series,
            linked,
            opponents,
            history: Vec::new(),
            analysis: self.account_analysis(cache, id).await?,
        }))
    }

    /// The account's analysed moves against every analysed account's.
    async fn account_analysis(
        &self,
        cache: &Cache,
        id: &str,
    ) -> Result<Option<AccountAnalysis>, DataError> {
        let mut files: Vec<String> = cache
            .guard
            .snapshot()
            .state
            .table_files("move_analysis")
            .map(|f| f.path.clone())
            .collect();
        files.sort_unstable();
        let all = {
            // One reader computes them; the others wait and take its result.
            let mut kept = self.analysed.lock().await;
            match kept.as_ref() {
                Some((read_from, all)) if *read_from == files => Arc::clone(all),
                _ => {
                    let all = Arc::new(analysed_accounts(&cache.guard).await?);
                    *kept = Some((files, Arc::clone(&all)));
                    all
                }
            }
        };
        let Some(&(positions, games, average_loss, match_rate)) = all.get(id) else {
            return Ok(None);
        };
        Ok(Some(AccountAnalysis {
            positions,
            games,
            average_loss,
            match_rate,
            population: all
                .values()
                .filter(|a| a.0 >= AccountAnalysis::MIN_POSITIONS)
                .map(|a| (a.2, a.3))
                .collect(),
        }))
    }

    async fn game_inner(&self, id: &str) -> Result<Option<GameView>, DataError> {
        let cache = self.cache().await?;
        if let Some(v) = cache.games.get(id) {
            return Ok(v);
        }
        let view = self.load_game(&cache, id).await?;
        cache.games.put(id, view.clone());
        Ok(view)
    }

    /// One game from the lake: its `games` row first, whose start date names the partition of its
    /// derived rows and bounds the `events` partitions to read (from the day before its start to
    /// the day after its last event; every partition from the day before its start on while it is
    /// open, or when fewer lines than replay counted are found there).
    async fn load_game(&self, cache: &Cache, id: &str) -> Result<Option<GameView>, DataError> {
        let g = &cache.guard;
        let game = lit(id);
        let rows = g
            .query_internal(&format!("SELECT * FROM games WHERE game = {game}"))
            .await
            .map_err(df_err)?;
        let Some((c, i)) = each_row(&rows).next() else {
            return Ok(None);
        };
        let start_day = c
            .str("date", i)
            .and_then(|d| Day::parse(&d))
            .ok_or_else(|| DataError::Corrupt(format!("games.date of {id} is not a date")))?;
        let date = lit(&start_day.to_string());
        let players_rows = g
            .query_internal(&format!(
                "SELECT * FROM game_players WHERE date = {date} AND game = {game} ORDER BY position"
            ))
            .await
            .map_err(df_err)?;
        let players = each_row(&players_rows)
            .map(|(p, k)| {
                Ok(GamePlayer {
                    account: p.parsed("game_players", "account", k, |a| Some(a.to_owned()))?,
                    seat: p.parsed("game_players", "seat", k, Seat::parse)?,
                    ip: p.str("ip", k).unwrap_or_default(),
                    device: p.str("device", k).unwrap_or_default(),
                    outcome: p.str("outcome", k),
                    payout: p.int("payout", k),
                    net: p.int("net", k),
                })
            })
            .collect::<Result<Vec<_>, DataError>>()?;
        let ts = |name: &str| -> Option<i64> {
            let b = c.0;
            let col = b.column(b.schema().index_of(name).ok()?);
            if col.is_null(i) {
                return None;
            }
            let v = datafusion::arrow::compute::cast(
                col,
                &DataType::Timestamp(TimeUnit::Millisecond, None),
            )
            .ok()?;
            Some(
                v.as_primitive::<datafusion::arrow::datatypes::TimestampMillisecondType>()
                    .value(i),
            )
        };
        let summary = GameSummary {
            id: id.to_string(),
            kind: c.parsed("games", "kind", i, Kind::parse)?,
            mode: c.parsed("games", "mode", i, Mode::parse)?,
            variant: c.str("variant", i),
            rated: c.bool("rated", i).unwrap_or(false),
            stake: c.int("stake", i).unwrap_or(0),
            currency: c.str("currency", i).unwrap_or_default(),
            players,
            started_at: ts("started_at").unwrap_or(0),
            ended_at: ts("ended_at"),
            result_logged: c.str("result_logged", i),
            reason_logged: c.str("reason_logged", i),
            result_replayed: c.str("result_replayed", i),
            reason_replayed: c.str("reason_replayed", i),
            fairness: c.str("fairness", i).unwrap_or_default(),
            desynced: c.bool("desynced", i).unwrap_or(false),
        };
        let first = lit(&Day(start_day.0 - 1).to_string());
        let counted = c.int("events", i).unwrap_or(0);
        let mut events_rows = Vec::new();
        if c.bool("closed", i) == Some(true)
            && let Some(last) = ts("last_ts")
        {
            let last = lit(&Day(Day::of(last).0 + 1).to_string());
            events_rows = g
                .query_internal(&format!(
                    "SELECT raw FROM events WHERE date BETWEEN {first} AND {last} AND game = {game} ORDER BY seq"
                ))
                .await
                .map_err(df_err)?;
        }
        let found: usize = events_rows.iter().map(RecordBatch::num_rows).sum();
        if (found as i64) < counted || found == 0 {
            events_rows = g
                .query_internal(&format!(
                    "SELECT raw FROM events WHERE date >= {first} AND game = {game} ORDER BY seq"
                ))
                .await
                .map_err(df_err)?;
        }
        let mut events = Vec::new();
        for (e, k) in each_row(&events_rows) {
            let Some(raw) = e.str("raw", k) else { continue };
            if let Ok(event) = crate::log::parse_line(raw.as_bytes()) {
                events.push(LoggedEvent { event, raw });
            }
        }
        let findings_rows = g
            .query_internal(&format!(
                "SELECT * FROM findings WHERE date = {date} AND game = {game} ORDER BY seq, code"
            ))
            .await
            .map_err(df_err)?;
        let findings = each_row(&findings_rows)
            .map(|(f, k)| {
                Ok(Finding {
                    seq: f
                        .int("seq", k)
                        .ok_or_else(|| DataError::Corrupt("findings.seq is null".into()))?,
                    code: f.parsed("findings", "code", k, |c| Some(c.to_owned()))?,
                    category: f.parsed("findings", "category", k, FindingCategory::parse)?,
                    severity: f.parsed("findings", "severity", k, Severity::parse)?,
                    account: f.str("account", k),
                    expected: f.str("expected", k),
                    logged: f.str("logged", k),
                    message: f.str("message", k).unwrap_or_default(),
                })
            })
            .collect::<Result<Vec<_>, DataError>>()?;
        let analysis_rows = g
            .query_internal(&format!(
                "SELECT seq, player, played, best, best_score, played_score, loss, rank, legal_moves, \
                 near_best, forced, matched, hard, auto, engine \
                 FROM move_analysis WHERE date = {date} AND game = {game} ORDER BY seq"
            ))
            .await
            .map_err(df_err)?;
        let analysis = each_row(&analysis_rows)
            .map(|(a, k)| {
                let int = |name: &str| {
                    a.int(name, k).ok_or_else(|| {
                        DataError::Corrupt(format!("move_analysis.{name} is null or missing"))
                    })
                };
                let flag = |name: &str| {
                    a.bool(name, k).ok_or_else(|| {
                        DataError::Corrupt(format!("move_analysis.{name} is null or missing"))
                    })
                };
                let text = |name: &str| a.parsed("move_analysis", name, k, |v| Some(v.to_owned()));
                Ok(MoveJudgement {
                    seq: int("seq")?,
                    player: text("player")?,
                    played: text("played")?,
                    best: text("best")?,
                    best_score: int("best_score")?,
                    played_score: int("played_score")?,
                    loss: int("loss")?,
                    rank: int("rank")?,
                    legal_moves: int("legal_moves")?,
                    near_best: int("near_best")?,
                    forced: flag("forced")?,
                    matched: flag("matched")?,
                    hard: flag("hard")?,
                    auto: flag("auto")?,
                    engine: text("engine")?,
                })
            })
            .collect::<Result<Vec<_>, DataError>>()?;
        Ok(Some(GameView {
            summary,
            events,
            findings,
            analysis,
        }))
    }

    async fn panel_inner(&self, query_file: &str) -> Result<Table, DataError> {
        let sql = match PANELS.iter().find(|(name, _)| *name == query_file) {
            Some((_, sql)) => sql.to_string(),
            None => {
                return Err(DataError::BadQuery(format!(
                    "unknown dashboard query {query_file}"
                )));
            }
        };
        let cache = self.cache().await?;
        let batches = cache.guard.query_internal(&sql).await.map_err(df_err)?;
        Ok(to_table(&batches))
    }

    async fn status_inner(&self) -> Result<Status, DataError> {
        let cache = self.cache().await?;
        let open = cache
            .flags
            .iter()
            .filter(|f| matches!(f.review.status, ReviewStatus::Open | ReviewStatus::Claimed))
            .count() as u64;
        let now = crate::lake::now_ms();
        Ok(Status {
            lake_version: cache.version.to_string(),
            latest_event: (cache.latest_event > 0).then_some(cache.latest_event),
            lag_seconds: (cache.latest_event > 0)
                .then(|| (now - cache.latest_event) as f64 / 1000.0),
            open_flags: open,
        })
    }
}

/// DataFusion batches as the dashboard's generic table.
fn to_table(batches: &[RecordBatch]) -> Table {
    let Some(first) = batches.first() else {
        return Table {
            columns: Vec::new(),
            rows: Vec::new(),
        };
    };
    let schema = first.schema();
    let columns: Vec<Column> = schema
        .fields()
        .iter()
        .map(|f| Column {
            name: f.name().clone(),
            ty: match f.data_type() {
                DataType::Boolean => ColumnType::Bool,
                DataType::Int8
                | DataType::Int16
                | DataType::Int32
                | DataType::Int64
                | DataType::UInt32
                | DataType::UInt64 => ColumnType::Int,
                DataType::Float32 | DataType::Float64 | DataType::Decimal128(_, _) => {
                    ColumnType::Float
                }
                DataType::Date32 | DataType::Date64 => ColumnType::Date,
                DataType::Timestamp(_, _) => ColumnType::Timestamp,
                _ => ColumnType::Text,
            },
        })
        .collect();
    let mut rows = Vec::new();
    for (c, i) in each_row(batches) {
        let row = columns
            .iter()
            .map(|col| match col.ty {
                ColumnType::Bool => c.bool(&col.name, i).map(Cell::Bool),
                ColumnType::Int => c.int(&col.name, i).map(Cell::Int),
                ColumnType::Float => c.float(&col.name, i).map(Cell::Float),
                ColumnType::Date => c
                    .str(&col.name, i)
                    .and_then(|d| Day::parse(&d))
                    .map(Cell::Date),
                ColumnType::Timestamp => c.int(&col.name, i).map(Cell::Timestamp),
                ColumnType::Text => c.str(&col.name, i).map(Cell::Text),
            })
            .map(|v| v.unwrap_or(Cell::Null))
            .collect();
        rows.push(row);
    }
    Table { columns, rows }
}

/// DataFusion batches as text cells (arrow's display formatting, NULL kept apart).
fn text_table(batches: &[RecordBatch]) -> Result<QueryResult, arrow::error::ArrowError> {
    use arrow::util::display::{ArrayFormatter, FormatOptions};
    let mut out = QueryResult::default();
    let Some(first) = batches.first() else {
        return Ok(out);
    };
    out.columns = first
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    let opts = FormatOptions::default();
    for b in batches {
        let fmts = b
            .columns()
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &opts))
            .collect::<Result<Vec<_>, _>>()?;
        for i in 0..b.num_rows() {
            out.rows.push(
                b.columns()
                    .iter()
                    .zip(&fmts)
                    .map(|(c, f)| (!c.is_null(i)).then(|| f.value(i).to_string()))
                    .collect(),
            );
        }
    }
    Ok(out)
}

impl DataSource for LakeData {
    fn queue<'a>(&'a self, q: &'a QueueQuery) -> DataFuture<'a, Page<QueueRow>> {
        Box::pin(self.queue_inner(q))
    }

    fn account<'a>(&'a self, id: &'a str) -> DataFuture<'a, Option<AccountView>> {
        Box::pin(self.account_inner(id))
    }

    fn flag<'a>(&'a self, id: &'a str) -> DataFuture<'a, Option<Flag>> {
        Box::pin(async move {
            let cache = self.cache().await?;
            Ok(cache.flags.iter().find(|f| f.id == id).cloned())
        })
    }

    fn game<'a>(&'a self, id: &'a str) -> DataFuture<'a, Option<GameView>> {
        Box::pin(self.game_inner(id))
    }

    fn panel<'a>(&'a self, query_file: &'a str) -> DataFuture<'a, Table> {
        Box::pin(self.panel_inner(query_file))
    }

    fn status(&self) -> DataFuture<'_, Status> {
        Box::pin(self.status_inner())
    }

    fn audit_log(&self) -> DataFuture<'_, Vec<AuditEntry>> {
        Box::pin(async move { Ok(self.cache().await?.audit.clone()) })
    }

    fn analyst_query<'a>(
        &'a self,
        sql: &'a str,
        who: &'a str,
        access: TableAccess,
        max_rows: usize,
    ) -> DataFuture<'a, QueryResult> {
        Box::pin(async move {
            let cache = self.cache().await?;
            let started = Instant::now();
            let guard = match access {
                TableAccess::All => Arc::clone(&cache.guard),
                TableAccess::WithoutAudit => Arc::clone(
                    cache
                        .analyst_guard
                        .get_or_try_init(|| async {
                            Guard::with_access(cache.guard.snapshot().clone(), self.limits, access)
                                .await
                                .map(Arc::new)
                        })
                        .await
                        .map_err(df_err)?,
                ),
            };
            let (batches, cut) = guard
                .query_within(
                    sql,
                    who,
                    Some(max_rows.saturating_add(1)),
                    Some(RESULT_BYTES),
                )
                .await
                .map_err(|e| match e {
                    crate::sql::SqlError::Lake(e) => DataError::Unavailable(e.to_string()),
                    other => DataError::BadQuery(other.to_string()),
                })?;
            let mut out = text_table(&batches).map_err(|e| DataError::BadQuery(e.to_string()))?;
            drop(batches);
            out.truncated = cut || out.rows.len() > max_rows;
            out.rows.truncate(max_rows);
            out.ms = started.elapsed().as_millis() as u64;
            out.snapshot = cache.guard.snapshot().id();
            Ok(out)
        })
    }

    fn lake_root(&self) -> Option<&std::path::Path> {
        Some(self.lake.root())
    }

    fn version(&self) -> DataFuture<'_, Option<u64>> {
        Box::pin(async move { Ok(Some(self.cache().await?.version)) })
    }

    fn append_audit(&self, e: NewAuditEntry) -> DataFuture<'_, AuditEntry> {
        Box::pin(async move {
            let _guard = self.append_lock.lock().await;
            let root = self.lake.root().to_path_buf();
            let entry = tokio::task::spawn_blocking(move || {
                let lake = crate::catalog::open(&root).map_err(df_err)?;
                crate::review::append(&lake, e).map_err(|e| match e {
                    crate::review::AppendError::Changed(_) => DataError::Conflict(e.to_string()),
                    crate::review::AppendError::Lake(e) => df_err(e),
                })
            })
            .await
            .map_err(df_err)?;
            // Recorded, or refused because another process acted on the flag: either way the
            // pages kept for the older version are out of date.
            if matches!(entry, Ok(_) | Err(DataError::Conflict(_))) {
                self.invalidate().await;
            }
            entry
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moves_as_evidence_are_named_by_their_judgement_or_think_time() {
        assert_eq!(
            judged_name(true, true, 180, 0),
            "engine's best, hard, gap 1.80"
        );
        assert_eq!(judged_name(true, false, 5, 0), "engine's best, gap 0.05");
        assert_eq!(judged_name(false, true, 180, 250), "loss 2.50");
        assert_eq!(
            move_name(27_412, Some(30_000), Some(-2.0)),
            "27.4 s of 30 s, behind"
        );
        assert_eq!(move_name(900, None, Some(0.0)), "900 ms");
        assert_eq!(
            move_name(125_000, Some(180_000), None),
            "2 min 05 s of 180 s"
        );
        assert_eq!(move_name(9_000, Some(10_000), None), "9.0 s of 10 s");
    }

    #[test]
    fn the_other_rows_of_a_merged_flag_are_shown_as_notes() {
        let ev = evidence(
            r#"{"partner":"zed","games":6,"min__games":5,"also":[{"partner":"bob","games":5,"min__games":5}]}"#,
            &["g1:3".to_owned()],
        );
        assert_eq!(ev.features.len(), 1);
        assert!(ev.notes.contains(&("partner".to_owned(), "zed".to_owned())));
        assert!(
            ev.notes
                .contains(&("also (1)".to_owned(), "games 5, partner bob".to_owned())),
            "{:?}",
            ev.notes
        );
        assert_eq!(ev.refs.len(), 1);
        let ev = evidence(r#"{"p_value":6.56e-9,"share":0.25}"#, &[]);
        assert!(
            ev.notes
                .contains(&("p_value".to_owned(), "6.56e-9".to_owned())),
            "{:?}",
            ev.notes
        );
        assert!(ev.notes.contains(&("share".to_owned(), "0.250".to_owned())));
    }
}
