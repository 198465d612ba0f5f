//! The review audit log: every staff action on a flag, hash-chained, stored as the lake table `audit_log`.
//!
//! Entry `n` carries `prev_hash` (the hash of entry `n-1`, or 64 zeros) and
//! `hash = SHA-256(prev_hash | seq | ts | who | action | flag_id | account |
//! decision | reason | prev_state | new_state)` with fields separated by a
//! unit separator: editing or deleting any entry breaks every later hash.

use std::collections::BTreeMap;

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::lake::record::Ts;
use crate::lake::{Lake, LakeError, Snapshot, hex};
use crate::row_table;

row_table! {
    /// One row per staff action on a flag (claim, confirm, dismiss, reopen), hash-chained so that an edit or deletion is detectable.
    pub struct AuditRow in "audit_log" (partition None, sort ["seq"], bloom []) {
        /// Position in the log, from 0.
        seq: i64,
        /// When the action was taken.
        ts: Ts,
        /// Staff user.
        who: String,
        /// claim, confirm, dismiss or reopen.
        action: String,
        /// The flag acted on.
        flag_id: String,
        /// The flagged account.
        account: String,
        /// confirm: block_recommended or blocked.
        decision: Option<String>,
        /// Why (mandatory for confirm, dismiss and reopen).
        reason: String,
        /// Review state before: open, claimed, confirmed, dismissed.
        prev_state: String,
        /// Review state after.
        new_state: String,
        /// Hash of the previous entry (64 zeros for the first).
        prev_hash: String,
        /// SHA-256 of prev_hash and this entry's fields.
        hash: String,
    }
}

/// The hash of the entry before the first.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// The hash an entry must carry.
pub fn entry_hash(e: &AuditRow) -> String {
    let mut h = Sha256::new();
    let fields = [
        e.prev_hash.as_str(),
        &e.seq.to_string(),
        &e.ts.0.to_string(),
        &e.who,
        &e.action,
        &e.flag_id,
        &e.account,
        e.decision.as_deref().unwrap_or(""),
        &e.reason,
        &e.prev_state,
        &e.new_state,
    ];
    for (i, f) in fields.iter().enumerate() {
        if i > 0 {
            h.update([0x1f]);
        }
        h.update(f.as_bytes());
    }
    hex(&h.finalize())
}

/// Checks the chain: `Ok(())` or the seq of the first entry that does not verify.
pub fn verify_chain(entries: &[AuditRow]) -> Result<(), i64> {
    let mut prev = GENESIS.to_string();
    for (i, e) in entries.iter().enumerate() {
        if e.seq != i as i64 || e.prev_hash != prev || entry_hash(e) != e.hash {
            return Err(i as i64);
        }
        prev = e.hash.clone();
    }
    Ok(())
}

/// Reads the whole audit log of a snapshot, in seq order.
pub fn read_log(snapshot: &Snapshot) -> Result<Vec<AuditRow>, LakeError> {
    use arrow::array::{Array, AsArray};
    let mut out = Vec::new();
    for path in snapshot.table_paths("audit_log") {
        for b in crate::lake::parquet::read_file(&path, None)? {
            let s = |n: &str| -> Result<arrow::array::StringArray, LakeError> {
                Ok(b.column(b.schema().index_of(n)?).as_string::<i32>().clone())
            };
            let seq = b
                .column(b.schema().index_of("seq")?)
                .as_primitive::<arrow::datatypes::Int64Type>()
                .clone();
            let ts = b
                .column(b.schema().index_of("ts")?)
                .as_primitive::<arrow::datatypes::TimestampMillisecondType>()
                .clone();
            let (who, action, flag, account, decision) = (
                s("who")?,
                s("action")?,
                s("flag_id")?,
                s("account")?,
                s("decision")?,
            );
            let (reason, prev_state, new_state, prev_hash, hash) = (
                s("reason")?,
                s("prev_state")?,
                s("new_state")?,
                s("prev_hash")?,
                s("hash")?,
            );
            for i in 0..b.num_rows() {
                out.push(AuditRow {
                    seq: seq.value(i),
                    ts: Ts(ts.value(i)),
                    who: who.value(i).to_string(),
                    action: action.value(i).to_string(),
                    flag_id: flag.value(i).to_string(),
                    account: account.value(i).to_string(),
                    decision: (!decision.is_null(i)).then(|| decision.value(i).to_string()),
                    reason: reason.value(i).to_string(),
                    prev_state: prev_state.value(i).to_string(),
                    new_state: new_state.value(i).to_string(),
                    prev_hash: prev_hash.value(i).to_string(),
                    hash: hash.value(i).to_string(),
                });
            }
        }
    }
    out.sort_by_key(|e| e.seq);
    Ok(out)
}

/// A new action to append (the log assigns seq, ts and hashes).
#[derive(Debug, Clone)]
pub struct NewAction {
    pub who: String,
    pub action: String,
    pub flag_id: String,
    pub account: String,
    pub decision: Option<String>,
    pub reason: String,
    pub prev_state: String,
    pub new_state: String,
}

/// Appends one action to the lake's audit log in its own commit; returns the entry.
pub fn append(lake: &Lake, action: NewAction, ts_ms: i64) -> Result<AuditRow, LakeError> {
    let mut writer = lake.writer()?;
    loop {
        let snapshot = lake.snapshot()?;
        let log = read_log(&snapshot)?;
        let prev_hash = log
            .last()
            .map(|e| e.hash.clone())
            .unwrap_or_else(|| GENESIS.to_string());
        let mut e = AuditRow {
            seq: log.len() as i64,
            ts: Ts(ts_ms),
            who: action.who.clone(),
            action: action.action.clone(),
            flag_id: action.flag_id.clone(),
            account: action.account.clone(),
            decision: action.decision.clone(),
            reason: action.reason.clone(),
            prev_state: action.prev_state.clone(),
            new_state: action.new_state.clone(),
            prev_hash,
            hash: String::new(),
        };
        e.hash = entry_hash(&e);
        let def = AuditRow::def();
        let mut txn = writer.begin("audit")?;
        let batch = AuditRow::to_batch(std::slice::from_ref(&e))?;
        let file = txn.new_file(def.name, None)?;
        let mut meta = crate::lake::parquet::batch_meta(&def, &batch);
        meta.bytes = crate::lake::parquet::write_file(&file.pending, &def, def.schema(), &[batch])?;
        txn.add_file_meta(file, meta);
        // The log's head is a stage checkpoint: two appenders racing on the same head conflict, and one retries.
        txn.set_stage(
            "audit_head",
            serde_json::json!({ "seq": e.seq, "hash": e.hash }),
        );
        match txn.commit(serde_json::json!({ "audit": e.seq })) {
            Ok(_) => return Ok(e),
            Err(LakeError::Conflict(_)) => continue,
            Err(other) => return Err(other),
        }
    }
}

/// Record batch of audit entries (for evidence files).
pub fn audit_batch(
    entries: &[AuditRow],
) -> Result<arrow::array::RecordBatch, arrow::error::ArrowError> {
    AuditRow::to_batch(entries)
}

/// What the audit log says about a period, for the compliance report.
#[derive(Debug, Clone, Default, Serialize)]
pub struct AuditSummary {
    pub entries_in_period: u64,
    pub chain_verified: bool,
    /// The seq of the first entry that fails verification, if any.
    pub chain_broken_at: Option<i64>,
    pub actions: BTreeMap<String, u64>,
    pub flags_reviewed: u64,
    pub confirmed: u64,
    pub dismissed: u64,
    pub blocks: Vec<Block>,
    /// Median time from claim to decision (ms), over decisions of the period.
    pub median_time_to_decision_ms: Option<i64>,
    #[serde(skip)]
    pub entries: Vec<AuditRow>,
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
    let chain = verify_chain(&log);
    let in_period = |e: &AuditRow| {
        let d = crate::log::syntax::date_of(e.ts.0);
        d.as_str() >= from && d.as_str() <= to
    };
    let mut s = AuditSummary {
        chain_verified: chain.is_ok(),
        chain_broken_at: chain.err(),
        ..AuditSummary::default()
    };
    let mut reviewed = std::collections::BTreeSet::new();
    let mut claimed_at: BTreeMap<&str, i64> = BTreeMap::new();
    let mut waits = Vec::new();
    for e in &log {
        if e.action == "claim" {
            claimed_at.insert(&e.flag_id, e.ts.0);
        }
        if !in_period(e) {
            continue;
        }
        s.entries.push(e.clone());
        *s.actions.entry(e.action.clone()).or_default() += 1;
        reviewed.insert(e.flag_id.clone());
        match e.action.as_str() {
            "confirm" => {
                s.confirmed += 1;
                s.blocks.push(Block {
                    account: e.account.clone(),
                    flag_id: e.flag_id.clone(),
                    decision: e.decision.clone().unwrap_or_default(),
                    reason: e.reason.clone(),
                    who: e.who.clone(),
                    ts: crate::log::syntax::format_ts(e.ts.0),
                });
            }
            "dismiss" => s.dismissed += 1,
            _ => {}
        }
        if matches!(e.action.as_str(), "confirm" | "dismiss")
            && let Some(c) = claimed_at.get(e.flag_id.as_str())
        {
            waits.push(e.ts.0 - c);
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
    use super::*;

    fn action(i: usize) -> NewAction {
        NewAction {
            who: "rev".into(),
            action: if i.is_multiple_of(2) {
                "claim".into()
            } else {
                "confirm".into()
            },
            flag_id: "f1".into(),
            account: "acc-1".into(),
            decision: (i % 2 == 1).then(|| "blocked".into()),
            reason: format!("reason {i}"),
            prev_state: "open".into(),
            new_state: "claimed".into(),
        }
    }

    #[test]
    fn appended_log_verifies_and_tampering_is_detected() {
        let dir = tempfile::tempdir().unwrap();
        let lake = Lake::open(dir.path()).unwrap();
        for i in 0..4 {
            append(&lake, action(i), 1_000 + i as i64).unwrap();
        }
        let log = read_log(&lake.snapshot().unwrap()).unwrap();
        assert_eq!(log.len(), 4);
        assert_eq!(verify_chain(&log), Ok(()));
        let mut edited = log.clone();
        edited[1].reason = "changed".into();
        assert_eq!(verify_chain(&edited), Err(1));
        let mut deleted = log.clone();
        deleted.remove(2);
        assert_eq!(verify_chain(&deleted), Err(2));
        let s = summarize(&lake.snapshot().unwrap(), "1970-01-01", "1970-01-01").unwrap();
        assert_eq!((s.confirmed, s.flags_reviewed, s.blocks.len()), (2, 1, 2));
        assert_eq!(s.median_time_to_decision_ms, Some(1));
        assert!(s.chain_verified);
    }
}
