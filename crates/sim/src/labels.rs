//! The ground truth of a run, `OUT/labels.json` (schema in `docs/labels.md`), and the human summary `OUT/README`.

use std::collections::BTreeMap;

use serde::Serialize;

use super::SimOptions;
use super::output::{FileRecord, MalformedLabel};
use super::plan::{Arranged, FaultCode};
use super::population::{Behaviour, EngineUse, GroupRole, Lookalike, Population};
use vigie_log::EventType;

/// Schema tag of `labels.json`.
pub const SCHEMA: &str = "vigie-sim-labels/1";

/// One account's truth.
#[derive(Debug, Clone, Serialize)]
pub struct AccountLabel {
    pub account: String,
    pub behaviour: Behaviour,
    /// Honest accounts built to look like cheaters: the look-alike class.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lookalike: Option<Lookalike>,
    /// Index in `groups`, for pairs and rings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<GroupRole>,
    /// Engine-assisted accounts: `{"mode": "moves" | "games", "share": x}` or `{"mode": "critical"}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub engine: Option<EngineUse>,
    /// 0-1, drives the move policy.
    pub skill: f64,
    pub device: String,
    /// Home ip, then the other ip it sometimes uses.
    pub ips: Vec<String>,
}

/// A pair or ring.
#[derive(Debug, Clone, Serialize)]
pub struct GroupLabel {
    pub id: usize,
    pub behaviour: Behaviour,
    /// Chip dumping: dumper first, receiver second.
    pub accounts: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// Honest groups (households, friends): the look-alike class.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lookalike: Option<Lookalike>,
    /// Games arranged for the group.
    pub games: u64,
}

/// An injected server fault.
#[derive(Debug, Clone, Serialize)]
pub struct FaultEntry {
    pub game: String,
    pub seq: i64,
    pub code: FaultCode,
    /// The type of the event at `seq`.
    pub event: String,
    /// The simulator's kind (`draughts10`, `medieval`, `ludo_quick`, ...).
    pub kind: String,
    pub server: String,
    pub detail: String,
}

/// A game set up for a behaviour (not random matchmaking).
#[derive(Debug, Clone, Serialize)]
pub struct ArrangedGame {
    pub game: String,
    pub arranged: Arranged,
    pub accounts: Vec<String>,
    /// The account that loses on purpose (chip dumping, win trading).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loser: Option<String>,
}

/// Counts over the run.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Summary {
    pub games: u64,
    /// Games simulated but not written because they would end after the window.
    pub dropped_games: u64,
    pub events: u64,
    pub malformed_lines: u64,
    pub files: u64,
    pub accounts: u64,
    pub faulty_games: u64,
    pub games_by_kind: BTreeMap<String, u64>,
    pub end_reasons: BTreeMap<String, BTreeMap<String, u64>>,
    pub event_types: BTreeMap<String, u64>,
    pub rejected_attempts: BTreeMap<String, u64>,
    pub faults_by_code: BTreeMap<String, u64>,
    pub behaviours: BTreeMap<String, u64>,
    /// Honest look-alike accounts per class (none unless asked for).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub lookalikes: BTreeMap<String, u64>,
    pub arranged_games: BTreeMap<String, u64>,
}

/// The whole `labels.json`.
#[derive(Debug, Clone, Serialize)]
pub struct Labels<'a> {
    pub schema: &'static str,
    pub seed: u64,
    pub options: &'a SimOptions,
    /// First and last day of the window (UTC dates).
    pub window: (String, String),
    pub summary: Summary,
    pub accounts: Vec<AccountLabel>,
    pub groups: Vec<GroupLabel>,
    pub faults: Vec<FaultEntry>,
    pub arranged: Vec<ArrangedGame>,
    pub malformed: Vec<MalformedLabel>,
    pub files: Vec<FileRecord>,
}

/// Account and group labels of a population.
pub fn population_labels(
    pop: &Population,
    group_games: &[u64],
) -> (Vec<AccountLabel>, Vec<GroupLabel>) {
    let accounts = pop
        .accounts
        .iter()
        .map(|a| AccountLabel {
            account: a.id.clone(),
            behaviour: a.behaviour,
            lookalike: a.lookalike,
            group: a.group,
            role: a.role,
            engine: a.engine,
            skill: (a.skill * 100.0).round() / 100.0,
            device: a.device.clone(),
            ips: std::iter::once(a.ip.clone())
                .chain(a.alt_ip.clone())
                .collect(),
        })
        .collect();
    let groups = pop
        .groups
        .iter()
        .enumerate()
        .map(|(id, g)| GroupLabel {
            id,
            behaviour: g.behaviour,
            accounts: g
                .members
                .iter()
                .map(|&i| pop.accounts[i].id.clone())
                .collect(),
            device: g.device.clone(),
            lookalike: g.lookalike,
            games: group_games.get(id).copied().unwrap_or(0),
        })
        .collect();
    (accounts, groups)
}

/// The text of `OUT/README`.
pub fn readme(labels: &Labels<'_>) -> String {
    let s = &labels.summary;
    let mut out = String::new();
    out.push_str("Vigie simulated server logs\n===========================\n\n");
    out.push_str(&format!(
        "seed {}, window {} to {} (UTC), {} servers\n",
        labels.seed, labels.window.0, labels.window.1, labels.options.servers
    ));
    out.push_str("Layout: srv-NN/YYYY-MM-DD.jsonl.gz for past days, srv-NN/YYYY-MM-DD.jsonl for the last day;\n");
    out.push_str(
        "a line goes to the file of the UTC day of its timestamp. Ground truth: labels.json.\n\n",
    );
    out.push_str(&format!(
        "games {} (dropped past the window: {}), events {}, malformed lines {}, files {}, accounts {}\n",
        s.games, s.dropped_games, s.events, s.malformed_lines, s.files, s.accounts
    ));
    let section = |title: &str, m: &BTreeMap<String, u64>, out: &mut String| {
        out.push_str(&format!("\n{title}:\n"));
        for (k, v) in m {
            out.push_str(&format!("  {k:<22} {v}\n"));
        }
    };
    section("games by kind", &s.games_by_kind, &mut out);
    section("behaviours (accounts)", &s.behaviours, &mut out);
    if !s.lookalikes.is_empty() {
        section("honest look-alikes (accounts)", &s.lookalikes, &mut out);
    }
    section("arranged games", &s.arranged_games, &mut out);
    section("injected faults", &s.faults_by_code, &mut out);
    section("event types", &s.event_types, &mut out);
    section(
        "rejected attempts by reason",
        &s.rejected_attempts,
        &mut out,
    );
    out.push_str("\nend reasons:\n");
    for (kind, reasons) in &s.end_reasons {
        let parts: Vec<String> = reasons.iter().map(|(r, n)| format!("{r} {n}")).collect();
        out.push_str(&format!("  {kind:<14} {}\n", parts.join(", ")));
    }
    out
}

/// The event type a fault code is about (`None`: any type).
pub fn expected_event(code: FaultCode) -> Option<&'static [EventType]> {
    use EventType as T;
    Some(match code {
        FaultCode::AcceptedIllegal | FaultCode::WrongDuel => &[T::Move],
        FaultCode::RejectedLegal | FaultCode::LateMove => &[T::Move, T::Play, T::Bid],
        FaultCode::WrongResult | FaultCode::WrongPayout | FaultCode::SeedMissing => &[T::GameEnded],
        FaultCode::CommitmentMismatch | FaultCode::SeedReused => &[T::SeedRevealed],
        FaultCode::WrongDie => &[T::Roll],
        FaultCode::WrongDeal => &[T::Deal],
        FaultCode::LateCommitment => &[T::GameStarted],
        FaultCode::TimeoutRule => &[T::Timeout],
        FaultCode::SeqGap | FaultCode::ChainBroken => return None,
    })
}
