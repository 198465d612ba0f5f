//! The audit log as the lake table `audit_log`: one row per entry (its canonical line kept whole), appended by commits.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{
    AuditEntry, ChainReport, FlagReview, GENESIS, NewAuditEntry, ReviewAction, ReviewIndex, Role,
    seal, verify_chain,
};
use crate::lake::record::Ts;
use crate::lake::{Lake, LakeError, Snapshot};
use crate::row_table;

row_table! {
    /// One row per staff action on a flag (claim, confirm, dismiss, reopen), hash-chained so that an edit or deletion is detectable (`line` is the entry exactly as hashed, plus its hash).
    pub struct AuditRow in "audit_log" (partition None, sort ["seq"], bloom []) {
        /// Position in the log, from 1.
        seq: i64,
        /// When the action was taken.
        ts: Ts,
        /// Staff user.
        who: String,
        /// The user's role.
        role: String,
        /// claim, confirm, dismiss or reopen.
        action: String,
        /// The flag acted on.
        flag_id: String,
        /// The flagged account.
        account: String,
        /// confirm: block_recommended or blocked.
        decision: Option<String>,
        /// Why.
        reason: String,
        /// Review state before: open, claimed, confirmed, dismissed.
        prev_state: String,
        /// Review state after.
        new_state: String,
        /// Hash of the previous entry (64 zeros for the first).
        prev_hash: String,
        /// SHA-256 of the canonical entry.
        hash: String,
        /// The entry as a JSON line (canonical form plus hash).
        line: String,
    }
}

fn row(e: &AuditEntry) -> AuditRow {
    AuditRow {
        seq: e.seq as i64,
        ts: Ts(e.at),
        who: e.actor.clone(),
        role: e.role.as_str().to_string(),
        action: e.action.as_str().to_string(),
        flag_id: e.flag.clone(),
        account: e.account.clone(),
        decision: e.decision.map(|d| d.as_str().to_string()),
        reason: e.reason.clone(),
        prev_state: e.prev_state.as_str().to_string(),
        new_state: e.new_state.as_str().to_string(),
        prev_hash: e.prev_hash.clone(),
        hash: e.hash.clone(),
        line: e.to_line(),
    }
}

/// Reads the whole audit log of a snapshot, in seq order. A row whose line does not parse is an error naming it.
pub fn read_log(snapshot: &Snapshot) -> Result<Vec<AuditEntry>, LakeError> {
    use arrow::array::AsArray;
    let mut out = Vec::new();
    for path in snapshot.table_paths("audit_log") {
        for b in crate::lake::parquet::read_file(&path, Some(&["line"]))? {
            let lines = b.column(0).as_string::<i32>();
            for i in 0..b.num_rows() {
                let e =
                    AuditEntry::from_line(lines.value(i)).map_err(|msg| LakeError::Corrupt {
                        path: path.clone(),
                        msg: format!("audit entry: {msg}"),
                    })?;
                out.push(e);
            }
        }
    }
    out.sort_by_key(|e| e.seq);
    Ok(out)
}

/// The head of the audit log as a stage checkpoint: two appenders racing on the same head conflict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditHead {
    pub seq: u64,
    pub hash: String,
}

impl crate::lake::Stage for AuditHead {
    const KEY: &'static str = "audit_head";
}

/// Seals and appends one entry to the lake's audit log in its own commit; returns it.
pub fn append(lake: &Lake, entry: NewAuditEntry) -> Result<AuditEntry, AppendError> {
    let mut writer = lake.writer()?;
    loop {
        let snapshot = lake.snapshot()?;
        let log = read_log(&snapshot)?;
        // The action was judged against the flag's state as the caller read it; another process
        // (a second dashboard, a re-judgement) may have acted on the flag since, and a commit that
        // lost the race comes back here on top of that action.
        let now = ReviewIndex::from_entries(&log).get(&entry.flag);
        if still_allowed(&now, &entry).is_err() {
            return Err(AppendError::Changed(now));
        }
        let (head_seq, head_hash) = log
            .last()
            .map(|e| (e.seq, e.hash.clone()))
            .unwrap_or((0, GENESIS.to_string()));
        let sealed = seal(head_seq, &head_hash, entry.clone());
        let def = AuditRow::def();
        // Based on the version the log was read at: a commit's conflicts are looked for after
        // its base only, and a later base (another process appended in between) would chain
        // this entry to an older head, with a number already taken; another append since then
        // moved the audit head, a conflict, and this one reads the log again.
        let mut txn = writer.begin_at("audit", snapshot.version())?;
        let batch = AuditRow::to_batch(&[row(&sealed)]).map_err(LakeError::from)?;
        let file = txn.new_file(def.name, None)?;
        let mut meta = crate::lake::parquet::batch_meta(&def, &batch);
        meta.bytes = crate::lake::parquet::write_file(&file.pending, &def, def.schema(), &[batch])?;
        txn.add_file_meta(file, meta);
        // The head is a stage checkpoint: two appenders racing on the same head conflict, and one retries.
        txn.put_stage(&AuditHead {
            seq: sealed.seq,
            hash: sealed.hash.clone(),
        })?;
        match txn.commit(serde_json::json!({ "audit": sealed.seq })) {
            Ok(_) => return Ok(sealed),
            Err(LakeError::Conflict(_)) => continue,
            Err(other) => return Err(other.into()),
        }
    }
}

/// Why an entry was not appended.
#[derive(Debug, thiserror::Error)]
pub enum AppendError {
    #[error(transparent)]
    Lake(#[from] LakeError),
    /// The flag's state is no longer the one the action was taken from.
    #[error("{}", changed_message(.0))]
    Changed(FlagReview),
}

fn changed_message(now: &FlagReview) -> String {
    match &now.claimed_by {
        Some(by) => format!(
            "the flag changed meanwhile: it is now {} by {by}; reload it and decide again",
            now.status
        ),
        None => format!(
            "the flag changed meanwhile: it is now {}; reload it and decide again",
            now.status
        ),
    }
}

/// Whether `entry` may still follow the flag's state `now`: the state it was taken from, and for a
/// decision by a reviewer, their own claim.
fn still_allowed(now: &FlagReview, entry: &NewAuditEntry) -> Result<(), ()> {
    if now.status != entry.prev_state {
        return Err(());
    }
    let decides = matches!(entry.action, ReviewAction::Confirm | ReviewAction::Dismiss);
    if decides && entry.role != Role::Admin && now.claimed_by.as_deref() != Some(&entry.actor) {
        return Err(());
    }
    Ok(())
}

/// Record batch of audit entries (for evidence files).
pub fn audit_batch(
    entries: &[AuditEntry],
) -> Result<arrow::array::RecordBatch, arrow::error::ArrowError> {
    AuditRow::to_batch(&entries.iter().map(row).collect::<Vec<_>>())
}

/// What the audit log says about a period, for the compliance report.
#[derive(Debug, Clone, Default, Serialize)]
pub struct AuditSummary {
    pub entries_in_period: u64,
    pub chain_verified: bool,
    /// What is wrong with the chain, when it does not verify.
    pub chain_problem: Option<String>,
    /// Hash of the last entry (keep a copy: truncating the tail is only visible against it).
    pub chain_head: String,
    pub actions: BTreeMap<String, u64>,
    pub flags_reviewed: u64,
    pub confirmed: u64,
    pub dismissed: u64,
    pub blocks: Vec<Block>,
    /// Median time from claim to decision (ms), over decisions of the period.
    pub median_time_to_decision_ms: Option<i64>,
    #[serde(skip)]
    pub entries: Vec<AuditEntry>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Block {
    pub account: String,
    pub flag_id: String,
    pub decision: String,
    pub reason: String,
    pub who: String,
    pub ts: String,
}

/// Summarizes the audit log for a period (`from`..=`to`, UTC dates); the chain is verified whole.
pub fn summarize(snapshot: &Snapshot, from: &str, to: &str) -> Result<AuditSummary, LakeError> {
    let log = read_log(snapshot)?;
    let report: ChainReport = verify_chain(&log);
    let in_period = |e: &AuditEntry| {
        let d = crate::log::syntax::date_of(e.at);
        d.as_str() >= from && d.as_str() <= to
    };
    let mut s = AuditSummary {
        chain_verified: report.ok(),
        chain_problem: report.broken.as_ref().map(|b| b.reason.clone()),
        chain_head: report.head.clone(),
        ..AuditSummary::default()
    };
    let mut reviewed = std::collections::BTreeSet::new();
    let mut claimed_at: BTreeMap<&str, i64> = BTreeMap::new();
    let mut waits = Vec::new();
    for e in &log {
        if e.action == ReviewAction::Claim {
            claimed_at.insert(&e.flag, e.at);
        }
        if !in_period(e) {
            continue;
        }
        s.entries.push(e.clone());
        *s.actions.entry(e.action.as_str().to_string()).or_default() += 1;
        reviewed.insert(e.flag.clone());
        match e.action {
            ReviewAction::Confirm => {
                s.confirmed += 1;
                s.blocks.push(Block {
                    account: e.account.clone(),
                    flag_id: e.flag.clone(),
                    decision: e
                        .decision
                        .map(|d| d.as_str().to_string())
                        .unwrap_or_default(),
                    reason: e.reason.clone(),
                    who: e.actor.clone(),
                    ts: crate::log::syntax::format_ts(e.at),
                });
            }
            ReviewAction::Dismiss => s.dismissed += 1,
            _ => {}
        }
        if matches!(e.action, ReviewAction::Confirm | ReviewAction::Dismiss)
            && let Some(c) = claimed_at.get(e.flag.as_str())
        {
            waits.push(e.at - c);
        }
    }
    s.entries_in_period = s.entries.len() as u64;
    s.flags_reviewed = reviewed.len() as u64;
    waits.sort_unstable();
    s.median_time_to_decision_ms = (!waits.is_empty()).then(|| waits[waits.len() / 2]);
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::super::{Decision, ReviewStatus, Role};
    use super::*;

    fn entry(i: usize) -> NewAuditEntry {
        let confirm = i % 2 == 1;
        NewAuditEntry {
            at: 1_000 + i as i64,
            actor: "rev".into(),
            role: Role::Reviewer,
            action: if confirm {
                ReviewAction::Confirm
            } else {
                ReviewAction::Claim
            },
            // A claim and its confirmation per flag.
            flag: format!("f{}", i / 2),
            account: "acc-1".into(),
            reason: format!("reason {i}"),
            decision: confirm.then_some(Decision::Blocked),
            prev_state: if confirm {
                ReviewStatus::Claimed
            } else {
                ReviewStatus::Open
            },
            new_state: if confirm {
                ReviewStatus::Confirmed
            } else {
                ReviewStatus::Claimed
            },
        }
    }

    #[test]
    fn appended_log_verifies_and_tampering_is_detected() {
        let dir = tempfile::tempdir().unwrap();
        let lake = Lake::open(dir.path()).unwrap();
        for i in 0..4 {
            append(&lake, entry(i)).unwrap();
        }
        let log = read_log(&lake.snapshot().unwrap()).unwrap();
        assert_eq!(
            log.iter().map(|e| e.seq).collect::<Vec<_>>(),
            vec![1, 2, 3, 4]
        );
        assert!(verify_chain(&log).ok());
        let mut edited = log.clone();
        edited[1].entry.reason = "changed".into();
        assert_eq!(verify_chain(&edited).broken.map(|b| b.index), Some(1));
        let mut deleted = log.clone();
        deleted.remove(2);
        assert_eq!(verify_chain(&deleted).broken.map(|b| b.index), Some(2));
        let s = summarize(&lake.snapshot().unwrap(), "1970-01-01", "1970-01-01").unwrap();
        assert_eq!((s.confirmed, s.flags_reviewed, s.blocks.len()), (2, 2, 2));
        assert_eq!(s.median_time_to_decision_ms, Some(1));
        assert!(s.chain_verified);
    }

    #[test]
    fn an_action_on_a_flag_that_changed_since_it_was_read_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let lake = Lake::open(dir.path()).unwrap();
        append(&lake, entry(0)).unwrap();
        // A second claim from the same open state (another dashboard read the flag before the
        // first claim landed): refused, naming who holds it.
        let mut late = entry(0);
        late.actor = "rev2".into();
        let err = append(&lake, late).unwrap_err();
        assert!(
            matches!(&err, AppendError::Changed(now) if now.status == ReviewStatus::Claimed),
            "{err}"
        );
        assert!(err.to_string().contains("claimed by rev"), "{err}");
        // A decision by a reviewer who does not hold the claim; an admin's is taken.
        let mut other = entry(1);
        other.actor = "rev2".into();
        assert!(append(&lake, other.clone()).is_err());
        other.role = Role::Admin;
        append(&lake, other).unwrap();
        // The admin is the one who decided, not the claimer.
        let log = read_log(&lake.snapshot().unwrap()).unwrap();
        let now = ReviewIndex::from_entries(&log).get("f0");
        assert_eq!(
            (now.status, now.claimed_by.as_deref()),
            (ReviewStatus::Confirmed, Some("rev2"))
        );
        // The claimer's own decision, taken from the claimed state it read: now decided.
        assert!(matches!(
            append(&lake, entry(1)),
            Err(AppendError::Changed(now)) if now.status == ReviewStatus::Confirmed
        ));
        assert_eq!(read_log(&lake.snapshot().unwrap()).unwrap().len(), 2);
    }

    /// Two processes (two handles on one lake directory) appending at once: every entry gets its
    /// own number and the chain holds (an append whose commit was based on a later version than
    /// the log it read chained its entry to an older head).
    #[test]
    fn appenders_of_two_processes_keep_one_chain() {
        let dir = tempfile::tempdir().unwrap();
        let per = 40;
        std::thread::scope(|s| {
            for who in 0..2 {
                let path = dir.path().to_path_buf();
                s.spawn(move || {
                    let lake = Lake::open(&path).unwrap();
                    for i in 0..per {
                        let mut e = entry(0);
                        e.flag = format!("f-{who}-{i}");
                        e.actor = format!("rev{who}");
                        append(&lake, e).unwrap();
                    }
                });
            }
        });
        let lake = Lake::open(dir.path()).unwrap();
        let log = read_log(&lake.snapshot().unwrap()).unwrap();
        assert_eq!(
            log.iter().map(|e| e.seq).collect::<Vec<_>>(),
            (1..=2 * per as u64).collect::<Vec<_>>()
        );
        assert!(verify_chain(&log).ok());
    }
}
