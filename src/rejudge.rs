//! Re-judging history: the games of a period replayed again with the current rules engines, detection re-run on their players, and every change listed and written to the audit log.
//!
//! A rules-engine fix, a new rule or a disputed ban asks "what would the
//! current engines say about those games?". [`run`] answers in three commits:
//! the replay catches up with the lake, the period's derived rows are replaced
//! in one commit ([`crate::replay::run::rejudge`]), and detection runs again,
//! recomputing the features of every player of those games. Flags
//! that appear, disappear or change are listed; a flag a reviewer had already
//! decided (confirmed or dismissed) that disappears or changes is reopened in
//! the audit log, with the engines' version as the reason, so that a person
//! looks at it again.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::detect::{self, DetectError, DetectReport, FlagRow};
use crate::lake::{Lake, LakeError};
use crate::replay::run::{Period, ReplayError, ReplayOptions, ReplayReport};
use crate::review::{self, NewAuditEntry, ReviewAction, ReviewIndex, ReviewStatus, Role};

/// Errors of a re-judgement.
#[derive(Debug, thiserror::Error)]
pub enum RejudgeError {
    #[error(transparent)]
    Replay(#[from] ReplayError),
    #[error(transparent)]
    Detect(#[from] DetectError),
    #[error(transparent)]
    Lake(#[from] LakeError),
}

/// The actor of the audit entries a re-judgement writes.
pub const ACTOR: &str = "vigie-rejudge";

/// A flag that a re-judgement changed.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct FlagChange {
    pub flag_id: String,
    pub account: String,
    pub rule: String,
    pub window: String,
    /// `added`, `withdrawn` or `changed` (action, severity or score).
    pub change: String,
    pub before: Option<String>,
    pub after: Option<String>,
}

/// What a re-judgement did.
#[derive(Debug, Clone, Serialize)]
pub struct RejudgeReport {
    /// The replay that caught up with the lake first.
    pub caught_up: ReplayReport,
    /// The re-judgement's replay (its `rejudged` part lists the changed findings).
    pub replay: ReplayReport,
    pub detect: DetectReport,
    pub flags: Vec<FlagChange>,
    /// Flags whose decision was reopened in the audit log.
    pub reopened: Vec<String>,
}

impl RejudgeReport {
    pub fn summary_line(&self) -> String {
        let r = self.replay.rejudged.clone().unwrap_or_default();
        let count = |c: &str| self.flags.iter().filter(|f| f.change == c).count();
        format!(
            "rejudge {}..{} with {}: {} games, {} events; findings {} -> {} ({} added, {} withdrawn) on {} accounts; flags {} added, {} withdrawn, {} changed; {} decisions reopened; {:.1} s",
            r.from,
            r.to,
            r.engine,
            r.games,
            self.replay.events,
            r.findings_before,
            r.findings_after,
            r.added.len(),
            r.withdrawn.len(),
            r.accounts.len(),
            count("added"),
            count("withdrawn"),
            count("changed"),
            self.reopened.len(),
            (self.caught_up.elapsed_ms + self.replay.elapsed_ms + self.detect.elapsed_ms) as f64
                / 1000.0,
        )
    }
}

fn flags_of(lake: &Lake) -> Result<BTreeMap<String, FlagRow>, RejudgeError> {
    let snapshot = lake.snapshot()?;
    Ok(detect::read_flags(&snapshot)?
        .into_iter()
        .map(|f| (f.flag_id.clone(), f))
        .collect())
}

fn describe(f: &FlagRow) -> String {
    format!("{} {} score {:.4}", f.action, f.severity, f.score)
}

/// Re-judges the games that started in `period`, re-runs detection and records what changed.
pub fn run(
    lake: &Lake,
    opts: &ReplayOptions,
    period: &Period,
    rules: &detect::rules::RuleSource,
    now_ms: i64,
) -> Result<RejudgeReport, RejudgeError> {
    let before = flags_of(lake)?;
    let (caught_up, replay) = crate::replay::run::rejudge(lake, opts, period)?;
    // Every player of the re-judged games: a derived row may change without a finding changing.
    let accounts: BTreeSet<String> = replay
        .rejudged
        .as_ref()
        .map(|r| r.players.iter().cloned().collect())
        .unwrap_or_default();
    let detect = detect::run_scoped(lake, rules, &Default::default(), Some(&accounts), false)?;
    let after = flags_of(lake)?;
    let mut flags = Vec::new();
    for (id, b) in &before {
        match after.get(id) {
            None => flags.push(change(b, "withdrawn", Some(describe(b)), None)),
            Some(a) if describe(a) != describe(b) => {
                flags.push(change(a, "changed", Some(describe(b)), Some(describe(a))))
            }
            Some(_) => {}
        }
    }
    for (id, a) in &after {
        if !before.contains_key(id) {
            flags.push(change(a, "added", None, Some(describe(a))));
        }
    }
    // Decisions resting on a flag that changed go back to the queue.
    let snapshot = lake.snapshot()?;
    let reviews = ReviewIndex::from_entries(&review::read_log(&snapshot)?);
    let engine = replay
        .rejudged
        .as_ref()
        .map(|r| r.engine.clone())
        .unwrap_or_default();
    let mut reopened = Vec::new();
    for f in flags.iter().filter(|f| f.change != "added") {
        let state = reviews.get(&f.flag_id);
        if !matches!(
            state.status,
            ReviewStatus::Confirmed | ReviewStatus::Dismissed
        ) {
            continue;
        }
        let appended = review::append(
            lake,
            NewAuditEntry {
                at: now_ms,
                actor: ACTOR.to_string(),
                role: Role::Admin,
                action: ReviewAction::Reopen,
                flag: f.flag_id.clone(),
                account: f.account.clone(),
                reason: format!(
                    "re-judged games {}..{} with rules engine {engine}: flag {} ({} -> {})",
                    period.from,
                    period.to,
                    f.change,
                    f.before.as_deref().unwrap_or("none"),
                    f.after.as_deref().unwrap_or("none"),
                ),
                decision: None,
                prev_state: state.status,
                new_state: ReviewStatus::Open,
            },
        );
        match appended {
            Ok(_) => reopened.push(f.flag_id.clone()),
            // Someone acted on the flag meanwhile (reopened it, or decided it again): their
            // action stands, and a reviewer sees the change in the report.
            Err(review::AppendError::Changed(now)) => {
                tracing::warn!(flag = %f.flag_id, status = %now.status, "flag changed during the re-judgement: not reopened");
            }
            Err(review::AppendError::Lake(e)) => return Err(e.into()),
        }
    }
    Ok(RejudgeReport {
        caught_up,
        replay,
        detect,
        flags,
        reopened,
    })
}

fn change(f: &FlagRow, what: &str, before: Option<String>, after: Option<String>) -> FlagChange {
    FlagChange {
        flag_id: f.flag_id.clone(),
        account: f.account.clone(),
        rule: f.rule.clone(),
        window: f.window.clone(),
        change: what.to_string(),
        before,
        after,
    }
}
