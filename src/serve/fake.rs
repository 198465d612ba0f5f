//! A fake [`DataSource`] with rich, consistent invented data: about a hundred legal games of every kind generated with the engines, flags derived from what happens in them, and an audit log in memory or in a JSON-lines file.
//!
//! Everything is deterministic (fixed seeds), anchored at [`NOW`]. Personas
//! drive the games: manipulators send illegal or out-of-turn moves, rage
//! quitters leave while losing, sitters let the clock run out, stallers think
//! long when behind, chip dumpers leave early against their partner, win
//! traders resign in turn, bots answer in a steady 1.1-1.2 s, a ring of
//! accounts share one device, and a few games carry server faults
//! (late moves, wrong payouts). Flags, evidence references (game, seq),
//! daily series, linked accounts, opponents and dashboard tables are all
//! computed from those games, so every link lands on a real event.

mod games;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use crate::games::ludo;
use crate::log::syntax::{EpochMs, parse_ts};
use crate::log::{Body, Kind, Mode, MoveAction};

use super::audit::{AuditEntry, AuditFile, NewAuditEntry, ReviewAction, ReviewIndex};
use super::data::{
    AccountView, Cell, Cmp, Column, ColumnType, DataError, DataFuture, DataSource, Day, Decision,
    Evidence, EvidenceCount, EvidenceRef, FeatureValue, Finding, FindingCategory, Flag, FlagReview,
    GameView, LinkVia, LinkedAccount, Opponent, Page, PastDecision, QueueQuery, QueueRow, RULES,
    RecommendedAction, ReviewStatus, RiskSummary, Series, Severity, Status, Table, Window,
};
use super::frames::{self, Board};
use super::users::Role;

pub use games::Rng;

/// The fake lake's "now": 2026-11-29T21:00:00Z.
pub const NOW_TS: &str = "2026-11-29T21:00:00.000Z";

/// [`NOW_TS`] in epoch milliseconds.
pub fn now() -> EpochMs {
    parse_ts(NOW_TS).unwrap_or(1_795_986_000_000)
}

const DAY_MS: i64 = 86_400_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Persona {
    Clean,
    Manipulator,
    RageQuitter,
    Sitter,
    Staller,
    Dumper(usize),
    Receiver(usize),
    Trader(usize),
    Bot,
    Ring,
    Integrity,
}

#[derive(Debug, Clone)]
struct Acct {
    id: String,
    ip: String,
    device: String,
    persona: Persona,
}

#[derive(Debug, Default, Clone)]
struct AccountFacts {
    series: Vec<Series>,
    linked: Vec<LinkedAccount>,
    opponents: Vec<Opponent>,
    history: Vec<PastDecision>,
    games: i64,
    first: Option<EpochMs>,
    last: Option<EpochMs>,
}

/// The invented lake.
#[derive(Debug)]
struct World {
    games: Vec<GameView>,
    game_index: HashMap<String, usize>,
    flags: Vec<Flag>,
    flag_index: HashMap<String, usize>,
    facts: HashMap<String, AccountFacts>,
    panels: HashMap<&'static str, Table>,
    latest: EpochMs,
}

/// The fake data source.
#[derive(Debug)]
pub struct FakeData {
    world: World,
    audit: AuditFile,
}

/// Ids to open in tests and demos: a flagged account, one of its flags, and the game and seq of that flag's first evidence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SampleIds {
    /// Account at the top of the queue.
    pub account: String,
    /// Its highest-scoring flag.
    pub flag: String,
    /// The game of the flag's first evidence reference.
    pub game: String,
    /// The seq of that reference.
    pub seq: i64,
}

impl FakeData {
    /// Fake data with an in-memory audit log.
    pub fn new() -> FakeData {
        FakeData {
            world: World::build(),
            audit: AuditFile::in_memory(),
        }
    }

    /// Fake data whose audit log is the JSON-lines file `path` (kept across restarts).
    pub fn with_audit_file(path: &Path) -> Result<FakeData, DataError> {
        Ok(FakeData {
            world: World::build(),
            audit: AuditFile::open(path)?,
        })
    }

    /// Adds a few past review actions by demo reviewers when the audit log is empty.
    pub fn with_demo_reviews(self) -> FakeData {
        if self.audit.entries().map(|e| e.is_empty()).unwrap_or(false) {
            let base = now() - 2 * DAY_MS;
            let pick = |rule: &str, nth: usize| {
                self.world
                    .flags
                    .iter()
                    .filter(|f| f.rule == rule)
                    .nth(nth)
                    .cloned()
            };
            type Steps<'a> = Vec<(ReviewAction, &'a str, Option<Decision>)>;
            let plan: Vec<(Option<Flag>, &str, Steps)> = vec![
                (
                    pick("rage_quit", 2),
                    "morgane",
                    vec![
                        (ReviewAction::Claim, "", None),
                        (
                            ReviewAction::Confirm,
                            "Left three games within seconds of going two pieces down; pattern matches earlier warnings.",
                            Some(Decision::BlockRecommended),
                        ),
                    ],
                ),
                (
                    pick("bot_timing", 1),
                    "morgane",
                    vec![
                        (ReviewAction::Claim, "", None),
                        (
                            ReviewAction::Dismiss,
                            "Steady times come from premoves in forced sequences; checked the positions, nothing automated.",
                            None,
                        ),
                    ],
                ),
                (
                    pick("chip_dumping", 0),
                    "yanis",
                    vec![(ReviewAction::Claim, "", None)],
                ),
            ];
            let mut t = base;
            for (flag, who, steps) in plan {
                let Some(flag) = flag else { continue };
                let mut state = ReviewStatus::Open;
                for (action, reason, decision) in steps {
                    t += 37 * 60_000;
                    let new_state = match action {
                        ReviewAction::Claim => ReviewStatus::Claimed,
                        ReviewAction::Confirm => ReviewStatus::Confirmed,
                        ReviewAction::Dismiss => ReviewStatus::Dismissed,
                        ReviewAction::Reopen => ReviewStatus::Open,
                    };
                    let _ = self.audit.append(NewAuditEntry {
                        at: t,
                        actor: who.to_owned(),
                        role: Role::Reviewer,
                        action,
                        flag: flag.id.clone(),
                        account: flag.account.clone(),
                        reason: reason.to_owned(),
                        decision,
                        prev_state: state,
                        new_state,
                    });
                    state = new_state;
                }
            }
        }
        self
    }

    /// Every generated game.
    pub fn games(&self) -> &[GameView] {
        &self.world.games
    }

    /// Every flag (review state as of creation: open).
    pub fn flags(&self) -> &[Flag] {
        &self.world.flags
    }

    /// Ids for tests and demos: the riskiest account whose top flag's first
    /// evidence is an event with a finding (a rejected attempt), so that the
    /// replay shows it on the timeline; else the riskiest account.
    pub fn sample_ids(&self) -> Option<SampleIds> {
        let rows = self.rows(&QueueQuery::default(), &ReviewIndex::default());
        let ids = |row: &QueueRow| -> Option<(SampleIds, bool)> {
            let flag = row.flags.first()?;
            let full = self
                .world
                .flags
                .get(*self.world.flag_index.get(&flag.id)?)?;
            let r = full.evidence.refs.first()?;
            let game = self.world.games.get(*self.world.game_index.get(&r.game)?)?;
            let with_finding = game.findings.iter().any(|f| f.seq == r.seq);
            Some((
                SampleIds {
                    account: row.account.clone(),
                    flag: flag.id.clone(),
                    game: r.game.clone(),
                    seq: r.seq,
                },
                with_finding,
            ))
        };
        let all: Vec<(SampleIds, bool)> = rows.iter().filter_map(ids).collect();
        all.iter()
            .find(|(_, f)| *f)
            .or(all.first())
            .map(|(s, _)| s.clone())
    }

    fn with_review(&self, f: &Flag, idx: &ReviewIndex) -> Flag {
        let mut f = f.clone();
        f.review = idx.get(&f.id);
        f
    }

    fn index(&self) -> Result<ReviewIndex, DataError> {
        Ok(ReviewIndex::from_entries(&self.audit.entries()?))
    }

    fn rows(&self, q: &QueueQuery, idx: &ReviewIndex) -> Vec<QueueRow> {
        let mut by_account: BTreeMap<&str, Vec<Flag>> = BTreeMap::new();
        for f in &self.world.flags {
            by_account
                .entry(f.account.as_str())
                .or_default()
                .push(self.with_review(f, idx));
        }
        let mut rows: Vec<QueueRow> = by_account
            .into_iter()
            .filter(|(_, flags)| flags.iter().any(|f| q.matches(&f.brief())))
            .map(|(account, mut flags)| {
                flags.sort_by(|a, b| b.score.total_cmp(&a.score));
                let (risk, sev, action) = risk_of(&flags);
                let facts = self.world.facts.get(account);
                QueueRow {
                    account: account.to_owned(),
                    risk,
                    max_severity: sev,
                    action,
                    games: facts.map_or(0, |f| f.games),
                    last_seen: flags.iter().map(|f| f.last_seen).max().unwrap_or(0),
                    flags: flags.iter().map(Flag::brief).collect(),
                }
            })
            .collect();
        rows.sort_by(|a, b| {
            b.risk
                .total_cmp(&a.risk)
                .then_with(|| a.account.cmp(&b.account))
        });
        rows
    }
}

impl Default for FakeData {
    fn default() -> Self {
        FakeData::new()
    }
}

fn risk_of(flags: &[Flag]) -> (f64, Severity, RecommendedAction) {
    let risk: f64 = flags.iter().map(|f| f.score).sum();
    let sev = flags
        .iter()
        .map(|f| f.severity)
        .max()
        .unwrap_or(Severity::Info);
    let action = if risk >= 140.0 || sev == Severity::Critical {
        RecommendedAction::BlockRecommended
    } else {
        RecommendedAction::Review
    };
    (risk, sev, action)
}

fn ready<'a, T: Send + 'a>(v: Result<T, DataError>) -> DataFuture<'a, T> {
    Box::pin(std::future::ready(v))
}

impl DataSource for FakeData {
    fn queue<'a>(&'a self, q: &'a QueueQuery) -> DataFuture<'a, Page<QueueRow>> {
        ready((|| {
            let idx = self.index()?;
            let rows = self.rows(q, &idx);
            let per = q.per_page.clamp(1, 200);
            let start = (q.page as usize).saturating_mul(per as usize);
            Ok(Page {
                total: rows.len() as u64,
                items: rows.into_iter().skip(start).take(per as usize).collect(),
                page: q.page,
                per_page: per,
            })
        })())
    }

    fn account<'a>(&'a self, id: &'a str) -> DataFuture<'a, Option<AccountView>> {
        ready((|| {
            let Some(facts) = self.world.facts.get(id) else {
                return Ok(None);
            };
            let idx = self.index()?;
            let mut flags: Vec<Flag> = self
                .world
                .flags
                .iter()
                .filter(|f| f.account == id)
                .map(|f| self.with_review(f, &idx))
                .collect();
            flags.sort_by(|a, b| b.score.total_cmp(&a.score));
            let (risk, sev, action) = risk_of(&flags);
            Ok(Some(AccountView {
                account: id.to_owned(),
                summary: RiskSummary {
                    max_severity: sev,
                    total_score: risk,
                    action,
                    games: facts.games,
                    first_seen: facts.first,
                    last_seen: facts.last,
                },
                flags,
                series: facts.series.clone(),
                linked: facts.linked.clone(),
                opponents: facts.opponents.clone(),
                history: facts.history.clone(),
            }))
        })())
    }

    fn flag<'a>(&'a self, id: &'a str) -> DataFuture<'a, Option<Flag>> {
        ready((|| {
            let Some(&i) = self.world.flag_index.get(id) else {
                return Ok(None);
            };
            let idx = self.index()?;
            Ok(self.world.flags.get(i).map(|f| self.with_review(f, &idx)))
        })())
    }

    fn game<'a>(&'a self, id: &'a str) -> DataFuture<'a, Option<GameView>> {
        ready(Ok(self
            .world
            .game_index
            .get(id)
            .and_then(|&i| self.world.games.get(i))
            .cloned()))
    }

    fn panel<'a>(&'a self, query_file: &'a str) -> DataFuture<'a, Table> {
        ready(
            self.world
                .panels
                .get(query_file)
                .cloned()
                .ok_or_else(|| DataError::NotFound(format!("query file {query_file}"))),
        )
    }

    fn status(&self) -> DataFuture<'_, Status> {
        ready((|| {
            let idx = self.index()?;
            let open = self
                .world
                .flags
                .iter()
                .filter(|f| idx.get(&f.id).status == ReviewStatus::Open)
                .count() as u64;
            Ok(Status {
                lake_version: "fake-1".to_owned(),
                latest_event: Some(self.world.latest),
                lag_seconds: Some(42.0),
                open_flags: open,
            })
        })())
    }

    fn audit_log(&self) -> DataFuture<'_, Vec<AuditEntry>> {
        ready(self.audit.entries())
    }

    fn append_audit(&self, e: NewAuditEntry) -> DataFuture<'_, AuditEntry> {
        ready(self.audit.append(e))
    }
}

// ----- building the world -----

struct Planner {
    rng: Rng,
    accounts: Vec<Acct>,
    plans: Vec<games::Plan>,
    counter: usize,
}

impl Planner {
    fn seated(&self, i: usize) -> games::Seated {
        let a = &self.accounts[i];
        games::Seated {
            account: a.id.clone(),
            ip: a.ip.clone(),
            device: a.device.clone(),
        }
    }

    fn clean(&mut self) -> usize {
        let clean: Vec<usize> = (0..self.accounts.len())
            .filter(|&i| self.accounts[i].persona == Persona::Clean)
            .collect();
        clean[self.rng.below(clean.len())]
    }

    fn start(&mut self, day_from: i64, day_to: i64) -> EpochMs {
        let day = self.rng.range(day_from, day_to);
        now() - day * DAY_MS - self.rng.range(30 * 60_000, 20 * 3_600_000)
    }

    #[allow(clippy::too_many_arguments)]
    fn add(
        &mut self,
        kind: Kind,
        mode: Mode,
        ludo: Option<ludo::Variant>,
        players: &[usize],
        days: (i64, i64),
        behaviour: games::Behaviour,
    ) {
        self.counter += 1;
        let prefix = match (kind, mode) {
            (Kind::Draughts10, _) => "d10",
            (Kind::Draughts8, Mode::Medieval) => "md",
            (Kind::Draughts8, _) => "d8",
            (Kind::Ludo, _) => "lu",
            (Kind::Belote, _) => "be",
        };
        let stake = match kind {
            Kind::Ludo => [10, 20, 50, 100][self.rng.below(4)],
            Kind::Belote => [100, 200, 500][self.rng.below(3)],
            _ => [50, 100, 200, 500][self.rng.below(4)],
        };
        let start = self.start(days.0, days.1);
        let plan = games::Plan {
            id: format!("{prefix}-7a1e-{:06}", self.counter * 7 + 3),
            kind,
            mode,
            ludo,
            players: players.iter().map(|&i| self.seated(i)).collect(),
            start,
            stake,
            behaviour,
            seed: self.rng.next_u64(),
        };
        self.plans.push(plan);
    }
}

fn two(a: usize, b: usize, first: bool) -> [usize; 2] {
    if first { [a, b] } else { [b, a] }
}

impl World {
    fn build() -> World {
        let mut rng = Rng::new(0x5649_4749_4531);
        let personas: Vec<Persona> = {
            let mut v = Vec::new();
            v.extend([Persona::Manipulator; 5]);
            v.extend([Persona::RageQuitter; 5]);
            v.extend([Persona::Sitter; 3]);
            v.extend([Persona::Staller; 4]);
            v.extend([
                Persona::Dumper(18),
                Persona::Receiver(17),
                Persona::Dumper(20),
                Persona::Receiver(19),
                Persona::Trader(22),
                Persona::Trader(21),
                Persona::Trader(24),
                Persona::Trader(23),
            ]);
            v.extend([Persona::Bot; 4]);
            v.extend([Persona::Ring; 4]);
            v.extend([Persona::Integrity; 3]);
            v.extend([Persona::Clean; 30]);
            v
        };
        let mut ids = BTreeSet::new();
        let ring_device = format!("dv-{}", rng.hex(4));
        let mut accounts = Vec::new();
        for (i, persona) in personas.iter().enumerate() {
            let mut id = format!("acc-{}", rng.range(10_000, 99_999));
            while !ids.insert(id.clone()) {
                id = format!("acc-{}", rng.range(10_000, 99_999));
            }
            let device = if *persona == Persona::Ring {
                ring_device.clone()
            } else {
                format!("dv-{}", rng.hex(4))
            };
            let _ = i;
            accounts.push(Acct {
                id,
                ip: format!("ip-{}", rng.hex(4)),
                device,
                persona: *persona,
            });
        }
        // Chip-dumping pairs play from the same household IP.
        for (a, b) in [(17usize, 18usize), (19, 20)] {
            let ip = accounts[b].ip.clone();
            accounts[a].ip = ip;
        }
        let mut p = Planner {
            rng,
            accounts,
            plans: Vec::new(),
            counter: 0,
        };
        let behave = games::Behaviour::default;
        let n = p.accounts.len();
        for i in 0..n {
            let persona = p.accounts[i].persona;
            match persona {
                Persona::Manipulator => {
                    let kinds = [
                        (Kind::Draughts10, Mode::Standard, None),
                        (Kind::Draughts8, Mode::Standard, None),
                        (Kind::Belote, Mode::Standard, None),
                        (Kind::Ludo, Mode::Standard, Some(ludo::Variant::quick())),
                        (Kind::Draughts8, Mode::Medieval, None),
                    ];
                    for g in 0..3 {
                        let (kind, mode, lv) = kinds[(i + g) % kinds.len()].clone();
                        let opp = p.clean();
                        let first = p.rng.chance(0.5);
                        let seats = two(i, opp, first);
                        let pos = if first { 0 } else { 1 };
                        let n_att = 3 + p.rng.below(4);
                        p.add(
                            kind,
                            mode,
                            lv,
                            &seats,
                            (1, 20),
                            games::Behaviour {
                                attempts: Some((pos, n_att)),
                                leave_when_losing: (g == 2 && i % 5 < 2).then_some(pos),
                                ..behave()
                            },
                        );
                    }
                }
                Persona::RageQuitter => {
                    let kinds = [
                        (Kind::Draughts10, None),
                        (Kind::Draughts8, None),
                        (Kind::Ludo, Some(ludo::Variant::duel())),
                        (Kind::Belote, None),
                    ];
                    for g in 0..3 {
                        let (kind, lv) = kinds[(i + g) % kinds.len()].clone();
                        let opp = p.clean();
                        let first = p.rng.chance(0.5);
                        let pos = if first { 0 } else { 1 };
                        p.add(
                            kind,
                            Mode::Standard,
                            lv,
                            &two(i, opp, first),
                            (0, 12),
                            games::Behaviour {
                                leave_when_losing: Some(pos),
                                ..behave()
                            },
                        );
                    }
                }
                Persona::Sitter => {
                    let kinds = [
                        (Kind::Draughts8, None),
                        (Kind::Ludo, Some(ludo::Variant::quick())),
                        (Kind::Belote, None),
                        (Kind::Draughts8, None),
                    ];
                    for g in 0..3 {
                        let (kind, lv) = kinds[(i + g) % kinds.len()].clone();
                        let opp = p.clean();
                        let first = p.rng.chance(0.5);
                        let pos = if first { 0 } else { 1 };
                        p.add(
                            kind,
                            Mode::Standard,
                            lv,
                            &two(i, opp, first),
                            (0, 25),
                            games::Behaviour {
                                timeouts: Some(pos),
                                ..behave()
                            },
                        );
                    }
                }
                Persona::Staller => {
                    for g in 0..3 {
                        let (kind, mode) = [
                            (Kind::Draughts10, Mode::Standard),
                            (Kind::Draughts8, Mode::Standard),
                            (Kind::Draughts8, Mode::Medieval),
                        ][(i + g) % 3];
                        let opp = p.clean();
                        let first = p.rng.chance(0.5);
                        let pos = if first { 0 } else { 1 };
                        p.add(
                            kind,
                            mode,
                            None,
                            &two(i, opp, first),
                            (0, 28),
                            games::Behaviour {
                                slow_when_losing: Some(pos),
                                ..behave()
                            },
                        );
                    }
                }
                Persona::Dumper(to) => {
                    for g in 0..4 {
                        let kind = [
                            Kind::Draughts10,
                            Kind::Draughts8,
                            Kind::Belote,
                            Kind::Draughts10,
                        ][g];
                        let first = p.rng.chance(0.5);
                        let pos = if first { 0 } else { 1 };
                        p.add(
                            kind,
                            Mode::Standard,
                            None,
                            &two(i, to, first),
                            (0, 6),
                            games::Behaviour {
                                dump: Some(pos),
                                ..behave()
                            },
                        );
                    }
                }
                Persona::Trader(partner) if i < partner => {
                    for g in 0..6 {
                        // They take turns losing on purpose.
                        let loser_is_i = g % 2 == 0;
                        let first = p.rng.chance(0.5);
                        let seats = two(i, partner, first);
                        let i_pos = if first { 0 } else { 1 };
                        let pos = if loser_is_i { i_pos } else { 1 - i_pos };
                        let kind = if g % 3 == 0 {
                            Kind::Draughts8
                        } else {
                            Kind::Draughts10
                        };
                        p.add(
                            kind,
                            Mode::Standard,
                            None,
                            &seats,
                            (0, 13),
                            games::Behaviour {
                                resign: Some(pos),
                                ..behave()
                            },
                        );
                    }
                }
                Persona::Bot => {
                    for g in 0..3 {
                        let (kind, mode) = [
                            (Kind::Draughts10, Mode::Standard),
                            (Kind::Draughts8, Mode::Medieval),
                            (Kind::Draughts8, Mode::Standard),
                        ][(i + g) % 3];
                        let opp = p.clean();
                        let first = p.rng.chance(0.5);
                        let pos = if first { 0 } else { 1 };
                        p.add(
                            kind,
                            mode,
                            None,
                            &two(i, opp, first),
                            (0, 9),
                            games::Behaviour {
                                bot: Some(pos),
                                ..behave()
                            },
                        );
                    }
                }
                Persona::Integrity => {
                    for g in 0..2 {
                        let opp = p.clean();
                        let first = p.rng.chance(0.5);
                        let kind = if g == 0 {
                            Kind::Draughts10
                        } else {
                            Kind::Draughts8
                        };
                        p.add(
                            kind,
                            Mode::Standard,
                            None,
                            &two(i, opp, first),
                            (0, 15),
                            games::Behaviour {
                                late_move: g == 0,
                                wrong_payout: g == 1,
                                ..behave()
                            },
                        );
                    }
                }
                _ => {}
            }
        }
        // The ring plays among itself, one side dumping to the hub.
        let ring: Vec<usize> = (0..n)
            .filter(|&i| p.accounts[i].persona == Persona::Ring)
            .collect();
        if let [hub, rest @ ..] = ring.as_slice() {
            for (k, &r) in rest.iter().enumerate() {
                for g in 0..2 {
                    let first = (k + g) % 2 == 0;
                    let pos = if first { 1 } else { 0 };
                    let kind = if g == 0 {
                        Kind::Draughts8
                    } else {
                        Kind::Belote
                    };
                    p.add(
                        kind,
                        Mode::Standard,
                        None,
                        &two(*hub, r, first),
                        (0, 10),
                        games::Behaviour {
                            dump: Some(pos),
                            ..behave()
                        },
                    );
                }
            }
        }
        // A four-player classic Ludo table with a rage quitter and a sitter.
        let (c1, c2) = (p.clean(), p.clean());
        let c2 = if c2 == c1 {
            (c1 + 1..n)
                .find(|&i| p.accounts[i].persona == Persona::Clean)
                .unwrap_or(c2)
        } else {
            c2
        };
        p.add(
            Kind::Ludo,
            Mode::Standard,
            Some(ludo::Variant::classic()),
            &[5, c1, 10, c2],
            (1, 3),
            games::Behaviour {
                leave_when_losing: Some(0),
                timeouts: Some(2),
                ..behave()
            },
        );
        // Clean games between clean players, for volume.
        for g in 0..14 {
            let (a, b) = (p.clean(), p.clean());
            if a == b {
                continue;
            }
            let (kind, mode, lv) = [
                (Kind::Draughts10, Mode::Standard, None),
                (Kind::Draughts8, Mode::Standard, None),
                (Kind::Draughts8, Mode::Medieval, None),
                (Kind::Ludo, Mode::Standard, Some(ludo::Variant::duel())),
                (Kind::Belote, Mode::Standard, None),
                (Kind::Ludo, Mode::Standard, Some(ludo::Variant::quick())),
            ][g % 6]
                .clone();
            p.add(kind, mode, lv, &[a, b], (0, 29), behave());
        }
        let mut games: Vec<GameView> = p
            .plans
            .iter()
            .map(|plan| games::generate(plan).view)
            .collect();
        games.sort_by(|a, b| {
            a.summary
                .started_at
                .cmp(&b.summary.started_at)
                .then_with(|| a.summary.id.cmp(&b.summary.id))
        });
        let game_index = games
            .iter()
            .enumerate()
            .map(|(i, g)| (g.summary.id.clone(), i))
            .collect();
        let latest = games
            .iter()
            .filter_map(|g| g.events.last().map(|e| e.event.ts))
            .max()
            .unwrap_or_else(now);
        let mut w = World {
            games,
            game_index,
            flags: Vec::new(),
            flag_index: HashMap::new(),
            facts: HashMap::new(),
            panels: HashMap::new(),
            latest,
        };
        w.derive_flags(&p.accounts);
        w.derive_facts(&p.accounts);
        w.derive_panels();
        w
    }

    fn games_of<'a>(&'a self, acc: &'a str) -> impl Iterator<Item = &'a GameView> + 'a {
        self.games
            .iter()
            .filter(move |g| g.summary.players.iter().any(|p| p.account == acc))
    }

    fn add_flag(
        &mut self,
        account: &str,
        rule: &str,
        score: f64,
        counts: Vec<(&str, i64)>,
        features: Vec<(&str, f64, Cmp, f64)>,
        refs: Vec<(String, i64, EpochMs, Kind, String)>,
    ) {
        if refs.is_empty() {
            return;
        }
        let title = RULES
            .iter()
            .find(|(id, _)| *id == rule)
            .map_or(rule, |(_, t)| *t)
            .to_owned();
        let first = refs.iter().map(|r| r.2).min().unwrap_or(0);
        let last = refs.iter().map(|r| r.2).max().unwrap_or(0);
        let span = last - first;
        let window = if span <= DAY_MS && now() - last <= DAY_MS {
            Window::Day1
        } else if now() - first <= 7 * DAY_MS {
            Window::Day7
        } else {
            Window::Day30
        };
        let mut kinds: Vec<Kind> = refs.iter().map(|r| r.3).collect();
        kinds.sort();
        kinds.dedup();
        let score = score.clamp(5.0, 99.0);
        let severity = if score >= 85.0 {
            Severity::Critical
        } else if score >= 65.0 {
            Severity::High
        } else if score >= 40.0 {
            Severity::Medium
        } else {
            Severity::Low
        };
        let id = format!("fl-{:04}", self.flags.len() + 101);
        self.flag_index.insert(id.clone(), self.flags.len());
        self.flags.push(Flag {
            id,
            account: account.to_owned(),
            rule: rule.to_owned(),
            title,
            window,
            score: (score * 10.0).round() / 10.0,
            severity,
            first_seen: first,
            last_seen: last,
            kinds,
            evidence: Evidence {
                counts: counts
                    .into_iter()
                    .map(|(n, v)| EvidenceCount {
                        name: n.to_owned(),
                        value: v,
                    })
                    .collect(),
                features: features
                    .into_iter()
                    .map(|(n, v, c, t)| FeatureValue {
                        name: n.to_owned(),
                        value: (v * 1000.0).round() / 1000.0,
                        cmp: c,
                        threshold: t,
                    })
                    .collect(),
                notes: Vec::new(),
                refs: refs
                    .into_iter()
                    .take(10)
                    .map(|(game, seq, _, _, note)| EvidenceRef { game, seq, note })
                    .collect(),
            },
            review: FlagReview::default(),
        });
    }

    fn derive_flags(&mut self, accounts: &[Acct]) {
        for a in accounts {
            let acc = a.id.as_str();
            let mine: Vec<GameView> = self.games_of(acc).cloned().collect();
            match a.persona {
                Persona::Manipulator => {
                    let mut refs = Vec::new();
                    let mut codes = BTreeSet::new();
                    let mut games_with = 0;
                    let mut actions = 0i64;
                    for g in &mine {
                        let before = refs.len();
                        for f in g.findings.iter().filter(|f| {
                            f.category == FindingCategory::Attempt
                                && f.account.as_deref() == Some(acc)
                        }) {
                            codes.insert(f.code.clone());
                            refs.push((
                                g.summary.id.clone(),
                                f.seq,
                                ts_at(g, f.seq),
                                g.summary.kind,
                                format!(
                                    "{}: sent {}",
                                    f.code,
                                    f.logged.clone().unwrap_or_default()
                                ),
                            ));
                        }
                        if refs.len() > before {
                            games_with += 1;
                        }
                        actions += accepted_actions(g, acc);
                    }
                    let n = refs.len() as i64;
                    let rate = 100.0 * n as f64 / actions.max(1) as f64;
                    self.add_flag(
                        acc,
                        "manipulation_attempts",
                        25.0 + 3.5 * n as f64,
                        vec![
                            ("rejected attempts", n),
                            ("games with attempts", games_with),
                            ("distinct causes", codes.len() as i64),
                            ("accepted actions", actions),
                        ],
                        vec![("rejected_per_100_actions", rate, Cmp::Gt, 3.0)],
                        refs,
                    );
                }
                Persona::RageQuitter => self.flag_rage_quit(acc, &mine),
                _ => {}
            }
            if a.persona == Persona::Manipulator {
                self.flag_rage_quit(acc, &mine);
            }
        }
        self.derive_more_flags(accounts);
    }

    fn flag_rage_quit(&mut self, acc: &str, mine: &[GameView]) {
        let n_games = mine.len() as i64;
        let refs = events_where(
            mine,
            |e| matches!(&e.body, Body::Left(l) if l.player == acc && l.reason != crate::log::LeftReason::Resigned),
            |g, e| {
                let reason = match &e.body {
                    Body::Left(l) => l.reason.as_str(),
                    _ => "",
                };
                format!("left ({reason}) while behind, {}", g.summary.kind)
            },
        );
        let n = refs.len() as i64;
        self.add_flag(
            acc,
            "rage_quit",
            30.0 + 14.0 * n as f64,
            vec![("departures while losing", n), ("games", n_games)],
            vec![(
                "departure_while_losing_rate",
                n as f64 / n_games.max(1) as f64,
                Cmp::Gt,
                0.25,
            )],
            refs,
        );
    }

    fn derive_more_flags(&mut self, accounts: &[Acct]) {
        for a in accounts {
            let acc = a.id.as_str();
            let mine: Vec<GameView> = self.games_of(acc).cloned().collect();
            let n_games = mine.len() as i64;
            match a.persona {
                Persona::Sitter => {
                    let refs = events_where(
                        &mine,
                        |e| matches!(&e.body, Body::Timeout(t) if t.player == acc),
                        |_, e| match &e.body {
                            Body::Timeout(t) => format!(
                                "timed out after {:.1} s ({})",
                                t.elapsed_ms as f64 / 1000.0,
                                t.outcome
                            ),
                            _ => String::new(),
                        },
                    );
                    let n = refs.len() as i64;
                    self.add_flag(
                        acc,
                        "sitting",
                        20.0 + 4.0 * n as f64,
                        vec![("timeouts", n), ("games", n_games)],
                        vec![(
                            "timeouts_per_game",
                            n as f64 / n_games.max(1) as f64,
                            Cmp::Gt,
                            0.5,
                        )],
                        refs,
                    );
                }
                Persona::Staller => {
                    let (mut losing, mut winning) = (Vec::new(), Vec::new());
                    let mut refs = Vec::new();
                    for g in &mine {
                        let fr = frames::frames(g);
                        for (i, le) in g.events.iter().enumerate() {
                            let Body::Move(m) = &le.event.body else {
                                continue;
                            };
                            if m.player != acc || !m.attempt.accepted() || m.attempt.is_auto() {
                                continue;
                            }
                            let behind = i
                                .checked_sub(1)
                                .and_then(|j| fr.get(j))
                                .is_some_and(|f| draughts_behind(&f.board, acc));
                            if behind {
                                losing.push(m.attempt.think_ms as f64);
                                if m.attempt.think_ms > 20_000 {
                                    refs.push((
                                        g.summary.id.clone(),
                                        le.event.seq,
                                        le.event.ts,
                                        g.summary.kind,
                                        format!(
                                            "{:.1} s on a move while behind",
                                            m.attempt.think_ms as f64 / 1000.0
                                        ),
                                    ));
                                }
                            } else {
                                winning.push(m.attempt.think_ms as f64);
                            }
                        }
                    }
                    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
                    let ratio = mean(&losing) / mean(&winning).max(1.0);
                    refs.sort_by(|a, b| b.4.cmp(&a.4));
                    self.add_flag(
                        acc,
                        "stalling",
                        30.0 + 3.0 * ratio,
                        vec![
                            ("moves while behind", losing.len() as i64),
                            ("moves otherwise", winning.len() as i64),
                        ],
                        vec![
                            ("think_ratio_behind_vs_ahead", ratio, Cmp::Gt, 2.0),
                            ("mean_think_s_behind", mean(&losing) / 1000.0, Cmp::Gt, 15.0),
                        ],
                        refs,
                    );
                }
                Persona::Dumper(to) | Persona::Receiver(to) => {
                    let other = accounts[to].id.clone();
                    let dumper = matches!(a.persona, Persona::Dumper(_));
                    let leaver = if dumper {
                        acc.to_owned()
                    } else {
                        other.clone()
                    };
                    let pair: Vec<GameView> = mine
                        .iter()
                        .filter(|g| g.summary.players.iter().any(|p| p.account == other))
                        .cloned()
                        .collect();
                    let refs = events_where(
                        &pair,
                        |e| matches!(&e.body, Body::Left(l) if l.player == leaver),
                        |g, e| {
                            let ply = g
                                .events
                                .iter()
                                .take_while(|x| x.event.seq < e.seq)
                                .filter(|x| is_accepted_move(&x.event))
                                .count();
                            format!(
                                "{leaver} left after {ply} moves; stake {} to the partner",
                                g.summary.stake
                            )
                        },
                    );
                    let flow: i64 = pair
                        .iter()
                        .flat_map(|g| g.summary.players.iter())
                        .filter(|p| p.account == acc)
                        .filter_map(|p| p.net)
                        .sum();
                    let n = refs.len() as i64;
                    self.add_flag(
                        acc,
                        "chip_dumping",
                        if dumper {
                            45.0 + 8.0 * n as f64
                        } else {
                            30.0 + 6.0 * n as f64
                        },
                        vec![
                            ("games against the partner", pair.len() as i64),
                            ("early departures", n),
                            (
                                if dumper {
                                    "stake lost to the partner"
                                } else {
                                    "stake received from the partner"
                                },
                                flow.abs(),
                            ),
                        ],
                        vec![
                            ("share_of_net_flow_with_one_account", 1.0, Cmp::Gt, 0.6),
                            (
                                "early_departure_rate",
                                n as f64 / pair.len().max(1) as f64,
                                Cmp::Gt,
                                0.3,
                            ),
                        ],
                        refs,
                    );
                }
                Persona::Trader(partner) => {
                    let other = accounts[partner].id.clone();
                    let pair: Vec<GameView> = mine
                        .iter()
                        .filter(|g| g.summary.players.iter().any(|p| p.account == other))
                        .cloned()
                        .collect();
                    let mut winners = Vec::new();
                    let refs = events_where(
                        &pair,
                        |e| matches!(&e.body, Body::GameEnded(_)),
                        |g, _| {
                            let w = g
                                .summary
                                .players
                                .iter()
                                .find(|p| p.outcome.as_deref() == Some("win"))
                                .map_or("nobody", |p| p.account.as_str());
                            format!("{w} won by resignation")
                        },
                    );
                    for g in &pair {
                        if let Some(w) = g
                            .summary
                            .players
                            .iter()
                            .find(|p| p.outcome.as_deref() == Some("win"))
                        {
                            winners.push(w.account.clone());
                        }
                    }
                    let alternations = winners.windows(2).filter(|w| w[0] != w[1]).count();
                    let rate = alternations as f64 / winners.len().saturating_sub(1).max(1) as f64;
                    self.add_flag(
                        acc,
                        "win_trading",
                        30.0 + 40.0 * rate,
                        vec![
                            ("games against the partner", pair.len() as i64),
                            ("resignations", refs.len() as i64),
                        ],
                        vec![("alternating_win_rate", rate, Cmp::Ge, 0.7)],
                        refs,
                    );
                }
                Persona::Bot => {
                    let mut times = Vec::new();
                    let mut refs = Vec::new();
                    for g in &mine {
                        for le in &g.events {
                            if let Body::Move(m) = &le.event.body
                                && m.player == acc
                                && m.attempt.accepted()
                                && !m.attempt.is_auto()
                            {
                                times.push(m.attempt.think_ms as f64);
                                if refs.len() < 10 && times.len() % 7 == 1 {
                                    refs.push((
                                        g.summary.id.clone(),
                                        le.event.seq,
                                        le.event.ts,
                                        g.summary.kind,
                                        format!("answered in {} ms", m.attempt.think_ms),
                                    ));
                                }
                            }
                        }
                    }
                    let mean = times.iter().sum::<f64>() / times.len().max(1) as f64;
                    let var = times.iter().map(|t| (t - mean).powi(2)).sum::<f64>()
                        / times.len().max(1) as f64;
                    let cv = var.sqrt() / mean.max(1.0);
                    self.add_flag(
                        acc,
                        "bot_timing",
                        88.0 - 250.0 * cv,
                        vec![("moves timed", times.len() as i64), ("games", n_games)],
                        vec![
                            ("think_ms_coefficient_of_variation", cv, Cmp::Lt, 0.1),
                            ("mean_think_ms", mean, Cmp::Lt, 2000.0),
                        ],
                        refs,
                    );
                }
                Persona::Ring => {
                    let ring: Vec<&Acct> =
                        accounts.iter().filter(|x| x.device == a.device).collect();
                    let others: Vec<String> = ring
                        .iter()
                        .filter(|x| x.id != acc)
                        .map(|x| x.id.clone())
                        .collect();
                    let together: Vec<GameView> = mine
                        .iter()
                        .filter(|g| {
                            g.summary
                                .players
                                .iter()
                                .any(|p| others.contains(&p.account))
                        })
                        .cloned()
                        .collect();
                    let refs: Vec<_> = together
                        .iter()
                        .map(|g| {
                            let other = g
                                .summary
                                .players
                                .iter()
                                .find(|p| p.account != acc)
                                .map_or("", |p| p.account.as_str());
                            (
                                g.summary.id.clone(),
                                0,
                                g.summary.started_at,
                                g.summary.kind,
                                format!("device {} shared with {other}", a.device),
                            )
                        })
                        .collect();
                    self.add_flag(
                        acc,
                        "shared_device_ring",
                        35.0 + 6.0 * together.len() as f64,
                        vec![
                            ("accounts on the device", ring.len() as i64),
                            ("games within the ring", together.len() as i64),
                        ],
                        vec![("accounts_sharing_device", ring.len() as f64, Cmp::Ge, 3.0)],
                        refs,
                    );
                    let flow: i64 = together
                        .iter()
                        .flat_map(|g| g.summary.players.iter())
                        .filter(|p| p.account == acc)
                        .filter_map(|p| p.net)
                        .sum();
                    let dumps = events_where(
                        &together,
                        |e| matches!(&e.body, Body::Left(_)),
                        |g, e| {
                            let who = e.player().unwrap_or("");
                            let to = g
                                .summary
                                .players
                                .iter()
                                .find(|p| p.account != who)
                                .map_or("", |p| p.account.as_str());
                            format!("{who} left early; stake {} went to {to}", g.summary.stake)
                        },
                    );
                    let n = dumps.len() as i64;
                    self.add_flag(
                        acc,
                        "chip_dumping",
                        25.0 + 4.0 * n as f64 + (flow.abs() as f64 / 100.0).min(20.0),
                        vec![
                            ("early departures within the ring", n),
                            ("net stake flow", flow),
                        ],
                        vec![("share_of_net_flow_within_ring", 1.0, Cmp::Gt, 0.6)],
                        dumps,
                    );
                }
                Persona::Integrity => {
                    let mut refs = Vec::new();
                    for g in &mine {
                        for f in g
                            .findings
                            .iter()
                            .filter(|f| f.category == FindingCategory::Integrity)
                        {
                            refs.push((
                                g.summary.id.clone(),
                                f.seq,
                                ts_at(g, f.seq),
                                g.summary.kind,
                                format!("{}: {}", f.code, f.message),
                            ));
                        }
                    }
                    let crit = mine
                        .iter()
                        .flat_map(|g| g.findings.iter())
                        .filter(|f| f.severity == Severity::Critical)
                        .count();
                    self.add_flag(
                        acc,
                        "integrity_involvement",
                        40.0 + 15.0 * refs.len() as f64 + 10.0 * crit as f64,
                        vec![
                            ("integrity findings in their games", refs.len() as i64),
                            ("critical", crit as i64),
                        ],
                        vec![("integrity_findings_30d", refs.len() as f64, Cmp::Ge, 1.0)],
                        refs,
                    );
                }
                _ => {}
            }
        }
        // Second flags: sitters who also rage-quit in the four-player table, bots also stall nothing.
        let sitter_ludo: Vec<(String, Vec<RefRow>)> = accounts
            .iter()
            .filter(|a| a.persona == Persona::RageQuitter)
            .map(|a| {
                let mine: Vec<GameView> = self.games_of(&a.id).cloned().collect();
                let refs = events_where(
                    &mine,
                    |e| matches!(&e.body, Body::Timeout(t) if t.player == a.id),
                    |_, _| "timed out".to_owned(),
                );
                (a.id.clone(), refs)
            })
            .collect();
        for (acc, refs) in sitter_ludo {
            let n = refs.len() as i64;
            if n > 0 {
                self.add_flag(
                    &acc,
                    "sitting",
                    20.0 + 6.0 * n as f64,
                    vec![("timeouts", n)],
                    vec![("timeouts_per_game", n as f64, Cmp::Gt, 0.5)],
                    refs,
                );
            }
        }
    }

    fn derive_facts(&mut self, accounts: &[Acct]) {
        let flagged: BTreeSet<String> = self.flags.iter().map(|f| f.account.clone()).collect();
        let first_day = Day::of(now()).0 - 29;
        let mut by_hash: HashMap<(LinkVia, String), BTreeSet<String>> = HashMap::new();
        for g in &self.games {
            for p in &g.summary.players {
                by_hash
                    .entry((LinkVia::Device, p.device.clone()))
                    .or_default()
                    .insert(p.account.clone());
                by_hash
                    .entry((LinkVia::Ip, p.ip.clone()))
                    .or_default()
                    .insert(p.account.clone());
            }
        }
        for a in accounts {
            let acc = a.id.as_str();
            let mine: Vec<&GameView> = self.games_of(acc).collect();
            if mine.is_empty() {
                continue;
            }
            let mut f = AccountFacts {
                games: mine.len() as i64,
                first: mine.iter().map(|g| g.summary.started_at).min(),
                last: mine
                    .iter()
                    .filter_map(|g| g.events.last().map(|e| e.event.ts))
                    .max(),
                ..AccountFacts::default()
            };
            let mut games_d = vec![0.0; 30];
            let mut rejected_d = vec![0.0; 30];
            let mut depart_d = vec![0.0; 30];
            let mut think_sum = vec![0.0; 30];
            let mut think_n = vec![0.0; 30];
            for g in &mine {
                let di = (Day::of(g.summary.started_at).0 - first_day).clamp(0, 29) as usize;
                games_d[di] += 1.0;
                for le in &g.events {
                    let di = (Day::of(le.event.ts).0 - first_day).clamp(0, 29) as usize;
                    if le.event.player() != Some(acc) {
                        continue;
                    }
                    match &le.event.body {
                        Body::Left(_) | Body::Timeout(_) => depart_d[di] += 1.0,
                        _ => {}
                    }
                    if let Some(at) = le.event.attempt() {
                        if !at.accepted() {
                            rejected_d[di] += 1.0;
                        } else if !at.is_auto() && at.think_ms > 0 {
                            think_sum[di] += at.think_ms as f64 / 1000.0;
                            think_n[di] += 1.0;
                        }
                    }
                }
            }
            let days = |v: &[f64]| -> Vec<(Day, f64)> {
                v.iter()
                    .enumerate()
                    .map(|(i, x)| (Day(first_day + i as i32), *x))
                    .collect()
            };
            let think: Vec<f64> = think_sum
                .iter()
                .zip(&think_n)
                .map(|(s, n)| {
                    if *n > 0.0 {
                        (s / n * 100.0).round() / 100.0
                    } else {
                        0.0
                    }
                })
                .collect();
            f.series = vec![
                Series {
                    metric: "games".into(),
                    label: "Games per day".into(),
                    points: days(&games_d),
                    threshold: None,
                },
                Series {
                    metric: "rejected_attempts".into(),
                    label: "Rejected attempts per day".into(),
                    points: days(&rejected_d),
                    threshold: Some(3.0),
                },
                Series {
                    metric: "departures_timeouts".into(),
                    label: "Departures and timeouts per day".into(),
                    points: days(&depart_d),
                    threshold: Some(2.0),
                },
                Series {
                    metric: "mean_think_s".into(),
                    label: "Mean think time (s)".into(),
                    points: days(&think),
                    threshold: None,
                },
            ];
            for ((via, hash), accs) in &by_hash {
                if !accs.contains(acc) {
                    continue;
                }
                for other in accs.iter().filter(|o| o.as_str() != acc) {
                    let together = mine
                        .iter()
                        .filter(|g| g.summary.players.iter().any(|p| p.account == *other))
                        .count() as i64;
                    f.linked.push(LinkedAccount {
                        account: other.clone(),
                        via: *via,
                        hash: hash.clone(),
                        games_together: together,
                        flagged: flagged.contains(other),
                    });
                }
            }
            f.linked
                .sort_by(|a, b| a.account.cmp(&b.account).then(a.via.cmp(&b.via)));
            let mut opp: BTreeMap<String, Opponent> = BTreeMap::new();
            for g in &mine {
                let me = g.summary.players.iter().find(|p| p.account == acc);
                let my_net = me.and_then(|p| p.net).unwrap_or(0);
                let my_out = me.and_then(|p| p.outcome.clone()).unwrap_or_default();
                for p in g.summary.players.iter().filter(|p| p.account != acc) {
                    let o = opp.entry(p.account.clone()).or_insert_with(|| Opponent {
                        account: p.account.clone(),
                        games: 0,
                        wins: 0,
                        losses: 0,
                        net_stake: 0,
                        flagged: flagged.contains(&p.account),
                    });
                    o.games += 1;
                    if my_out == "win" {
                        o.wins += 1;
                    }
                    if p.outcome.as_deref() == Some("win") {
                        o.losses += 1;
                    }
                    o.net_stake += my_net / (g.summary.players.len() as i64 - 1).max(1);
                }
            }
            let mut opp: Vec<Opponent> = opp.into_values().collect();
            opp.sort_by(|a, b| {
                b.games
                    .cmp(&a.games)
                    .then(b.net_stake.abs().cmp(&a.net_stake.abs()))
                    .then(a.account.cmp(&b.account))
            });
            opp.truncate(10);
            f.opponents = opp;
            if matches!(a.persona, Persona::RageQuitter | Persona::Dumper(_))
                && a.id.as_bytes().last().is_some_and(|b| b % 2 == 0)
            {
                f.history.push(PastDecision {
                    at: now() - 62 * DAY_MS,
                    by: "support-desk".to_owned(),
                    decision: "warned".to_owned(),
                    reason: "Player report: left several rated games when behind.".to_owned(),
                    source: "support tooling".to_owned(),
                });
            }
            self.facts.insert(acc.to_owned(), f);
        }
    }

    fn derive_panels(&mut self) {
        let col = |n: &str, ty| Column {
            name: n.to_owned(),
            ty,
        };
        // Flags per day by rule: every (flag, day) with evidence.
        let mut per: BTreeMap<(Day, String), i64> = BTreeMap::new();
        for f in &self.flags {
            let mut days = BTreeSet::new();
            for r in &f.evidence.refs {
                if let Some(g) = self
                    .game_index
                    .get(&r.game)
                    .and_then(|&i| self.games.get(i))
                {
                    days.insert(Day::of(ts_at(g, r.seq)));
                }
            }
            for d in days {
                *per.entry((d, f.rule.clone())).or_default() += 1;
            }
        }
        self.panels.insert(
            "queries/dashboard/flags_per_day_by_rule.sql",
            Table {
                columns: vec![
                    col("day", ColumnType::Date),
                    col("rule", ColumnType::Text),
                    col("flags", ColumnType::Int),
                ],
                rows: per
                    .into_iter()
                    .map(|((d, r), n)| vec![Cell::Date(d), Cell::Text(r), Cell::Int(n)])
                    .collect(),
            },
        );
        let mut rej: BTreeMap<(Day, Kind), i64> = BTreeMap::new();
        let mut rates: BTreeMap<Kind, (i64, i64, i64)> = BTreeMap::new();
        for g in &self.games {
            let r = rates.entry(g.summary.kind).or_default();
            r.0 += 1;
            for le in &g.events {
                match &le.event.body {
                    Body::Left(_) => r.1 += 1,
                    Body::Timeout(_) => r.2 += 1,
                    _ => {}
                }
                if le.event.attempt().is_some_and(|a| !a.accepted()) {
                    *rej.entry((Day::of(le.event.ts), g.summary.kind))
                        .or_default() += 1;
                }
            }
        }
        self.panels.insert(
            "queries/dashboard/rejected_attempts_per_day_by_kind.sql",
            Table {
                columns: vec![
                    col("day", ColumnType::Date),
                    col("kind", ColumnType::Text),
                    col("attempts", ColumnType::Int),
                ],
                rows: rej
                    .into_iter()
                    .map(|((d, k), n)| {
                        vec![
                            Cell::Date(d),
                            Cell::Text(k.as_str().to_owned()),
                            Cell::Int(n),
                        ]
                    })
                    .collect(),
            },
        );
        self.panels.insert(
            "queries/dashboard/departure_timeout_rates.sql",
            Table {
                columns: vec![
                    col("kind", ColumnType::Text),
                    col("games", ColumnType::Int),
                    col("departures_per_100_games", ColumnType::Float),
                    col("timeouts_per_100_games", ColumnType::Float),
                ],
                rows: rates
                    .into_iter()
                    .map(|(k, (g, l, t))| {
                        let per100 = |x: i64| (1000.0 * x as f64 / g.max(1) as f64).round() / 10.0;
                        vec![
                            Cell::Text(k.as_str().to_owned()),
                            Cell::Int(g),
                            Cell::Float(per100(l)),
                            Cell::Float(per100(t)),
                        ]
                    })
                    .collect(),
            },
        );
        let flagged: BTreeMap<&str, BTreeSet<&str>> =
            self.flags.iter().fold(BTreeMap::new(), |mut m, f| {
                m.entry(f.account.as_str())
                    .or_default()
                    .insert(f.rule.as_str());
                m
            });
        let mut flows: BTreeMap<(String, String), (i64, i64, BTreeSet<String>)> = BTreeMap::new();
        for g in &self.games {
            if g.summary.players.len() != 2 {
                continue;
            }
            let (a, b) = (&g.summary.players[0], &g.summary.players[1]);
            let (Some(fa), Some(fb)) = (
                flagged.get(a.account.as_str()),
                flagged.get(b.account.as_str()),
            ) else {
                continue;
            };
            let (loser, winner) = if a.net.unwrap_or(0) < b.net.unwrap_or(0) {
                (a, b)
            } else {
                (b, a)
            };
            let e = flows
                .entry((loser.account.clone(), winner.account.clone()))
                .or_default();
            e.0 += 1;
            e.1 += -loser.net.unwrap_or(0);
            e.2.extend(fa.iter().chain(fb.iter()).map(|s| (*s).to_owned()));
        }
        let mut rows: Vec<Vec<Cell>> = flows
            .into_iter()
            .map(|((from, to), (n, flow, rules))| {
                vec![
                    Cell::Text(from),
                    Cell::Text(to),
                    Cell::Int(n),
                    Cell::Int(flow),
                    Cell::Text(rules.into_iter().collect::<Vec<_>>().join(", ")),
                ]
            })
            .collect();
        rows.sort_by(|a, b| {
            b[3].as_f64()
                .partial_cmp(&a[3].as_f64())
                .unwrap_or(std::cmp::Ordering::Equal)
        });
        self.panels.insert(
            "queries/dashboard/flagged_pair_stake_flows.sql",
            Table {
                columns: vec![
                    col("from_account", ColumnType::Text),
                    col("to_account", ColumnType::Text),
                    col("games", ColumnType::Int),
                    col("net_flow", ColumnType::Int),
                    col("rules", ColumnType::Text),
                ],
                rows,
            },
        );
    }
}

fn ts_at(g: &GameView, seq: i64) -> EpochMs {
    g.events
        .iter()
        .find(|e| e.event.seq == seq)
        .map_or(g.summary.started_at, |e| e.event.ts)
}

fn is_accepted_move(e: &crate::log::Event) -> bool {
    matches!(&e.body, Body::Move(m) if m.attempt.accepted() && !matches!(m.action, MoveAction::Pass))
}

fn accepted_actions(g: &GameView, acc: &str) -> i64 {
    g.events
        .iter()
        .filter(|e| {
            e.event.player() == Some(acc) && e.event.attempt().is_some_and(|a| a.accepted())
        })
        .count() as i64
}

type RefRow = (String, i64, EpochMs, Kind, String);

fn events_where(
    games: &[GameView],
    pred: impl Fn(&crate::log::Event) -> bool,
    note: impl Fn(&GameView, &crate::log::Event) -> String,
) -> Vec<RefRow> {
    let mut out = Vec::new();
    for g in games {
        for le in &g.events {
            if pred(&le.event) {
                out.push((
                    g.summary.id.clone(),
                    le.event.seq,
                    le.event.ts,
                    g.summary.kind,
                    note(g, &le.event),
                ));
            }
        }
    }
    out
}

fn draughts_behind(b: &Board, acc: &str) -> bool {
    match b {
        Board::Draughts(d) => {
            let score =
                |s: crate::games::draughts::SideMaterial| i64::from(s.men) + 3 * i64::from(s.kings);
            let (w, bl) = (score(d.material.white), score(d.material.black));
            if d.white == acc {
                w < bl
            } else if d.black == acc {
                bl < w
            } else {
                false
            }
        }
        _ => false,
    }
}

/// Findings of a game at a seq (helper for tests).
pub fn findings_at(g: &GameView, seq: i64) -> Vec<&Finding> {
    g.findings.iter().filter(|f| f.seq == seq).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::parse_line;

    #[test]
    fn every_line_parses_and_chains() {
        let fake = FakeData::new();
        assert!(fake.games().len() > 60, "{}", fake.games().len());
        for g in fake.games() {
            let mut prev: Option<String> = None;
            for (i, le) in g.events.iter().enumerate() {
                let parsed = parse_line(le.raw.as_bytes());
                assert_eq!(parsed.as_ref(), Ok(&le.event), "{} #{i}", g.summary.id);
                assert_eq!(le.event.seq, i as i64);
                assert_eq!(le.event.prev, prev, "{} #{i}", g.summary.id);
                prev = Some(crate::serve::audit::sha256_hex(le.raw.as_bytes()));
            }
        }
    }

    #[test]
    fn games_replay_without_errors() {
        let fake = FakeData::new();
        for g in fake.games() {
            for f in frames::frames(g) {
                assert!(
                    f.error.is_none(),
                    "{} seq {}: {:?} ({})",
                    g.summary.id,
                    f.seq,
                    f.error,
                    f.summary
                );
            }
        }
    }

    #[test]
    fn flags_cover_the_rules_and_point_at_real_events() {
        let fake = FakeData::new();
        let rules: BTreeSet<&str> = fake.flags().iter().map(|f| f.rule.as_str()).collect();
        for (rule, _) in RULES {
            assert!(rules.contains(rule), "no flag for {rule}");
        }
        let accounts: BTreeSet<&str> = fake.flags().iter().map(|f| f.account.as_str()).collect();
        assert!(accounts.len() >= 30, "{}", accounts.len());
        for f in fake.flags() {
            assert!(!f.evidence.refs.is_empty(), "{}", f.id);
            for r in &f.evidence.refs {
                let Some(&gi) = fake.world.game_index.get(&r.game) else {
                    panic!("{}: no game {}", f.id, r.game);
                };
                assert!(
                    fake.games()[gi].events.iter().any(|e| e.event.seq == r.seq),
                    "{} {} {}",
                    f.id,
                    r.game,
                    r.seq
                );
            }
        }
        assert!(fake.sample_ids().is_some());
    }
}
