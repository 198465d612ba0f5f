//! The review audit log: entries, their SHA-256 hash chain, chain verification, the review-state fold, and a JSON-lines store.
//!
//! # Chain
//!
//! Entry `seq` (from 1) carries `prev_hash`, the `hash` of entry `seq - 1`
//! ([`GENESIS`] for the first), and `hash = hex(SHA-256(canonical))` where
//! `canonical` is the entry without `hash` written as one JSON object with
//! exactly these keys in this order, no spaces, strings escaped by
//! `serde_json`, `at` as the log's RFC 3339 millisecond UTC form and
//! `decision` `null` when absent:
//!
//! ```text
//! {"seq":1,"at":"2026-11-29T20:15:03.120Z","actor":"alice","role":"reviewer","action":"confirm",
//!  "flag":"fl-0007","account":"acc-10482","reason":"...","decision":"blocked",
//!  "prev_state":"claimed","new_state":"confirmed","prev_hash":"000…0"}
//! ```
//!
//! The stored line is `canonical` with `,"hash":"…"` added before the closing
//! brace. Editing any field of any entry breaks its hash; deleting, inserting
//! or reordering entries breaks the `seq` sequence and the `prev_hash` links
//! of the entry after. [`verify_chain`] names the first broken entry.
//! Truncating the tail cannot be seen from the chain alone: compare the head
//! (`seq`, `hash`, shown on `/audit` and in `/metrics`) with a copy kept elsewhere.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::data::DataError;
pub use crate::review::{
    AuditEntry, ChainBreak, ChainReport, GENESIS, NewAuditEntry, ReviewAction, ReviewIndex,
    canonical, seal, sha256_hex, verify_chain,
};

/// An audit log kept in memory and, optionally, appended to a JSON-lines file
/// (one [`AuditEntry::to_line`] per line, fsynced). Used by the fake data source and tests;
/// the main crate keeps its log as a lake table.
#[derive(Debug)]
pub struct AuditFile {
    path: Option<PathBuf>,
    state: Mutex<AuditState>,
}

#[derive(Debug, Default)]
struct AuditState {
    entries: Vec<AuditEntry>,
    /// Lines that could not be read (line number from 1, error).
    corrupt: Option<String>,
}

impl AuditFile {
    /// A log that lives in memory only.
    pub fn in_memory() -> AuditFile {
        AuditFile {
            path: None,
            state: Mutex::new(AuditState::default()),
        }
    }

    /// Opens (or starts) the log at `path`. Lines that do not parse are not
    /// an error here: [`AuditFile::entries`] then reports the log as corrupt
    /// and [`AuditFile::append`] refuses to extend it.
    pub fn open(path: &Path) -> Result<AuditFile, DataError> {
        let mut state = AuditState::default();
        match std::fs::read_to_string(path) {
            Ok(text) => {
                for (i, line) in text.lines().enumerate() {
                    if line.trim().is_empty() {
                        continue;
                    }
                    match AuditEntry::from_line(line) {
                        Ok(e) => state.entries.push(e),
                        Err(err) => {
                            state.corrupt.get_or_insert(format!(
                                "{} line {}: {err}",
                                path.display(),
                                i + 1
                            ));
                        }
                    }
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(DataError::Unavailable(format!(
                    "reading {}: {e}",
                    path.display()
                )));
            }
        }
        Ok(AuditFile {
            path: Some(path.to_owned()),
            state: Mutex::new(state),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, AuditState> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// All entries, oldest first.
    pub fn entries(&self) -> Result<Vec<AuditEntry>, DataError> {
        let st = self.lock();
        match &st.corrupt {
            Some(msg) => Err(DataError::Corrupt(msg.clone())),
            None => Ok(st.entries.clone()),
        }
    }

    /// Seals and appends an entry (to the file first, then in memory).
    pub fn append(&self, e: NewAuditEntry) -> Result<AuditEntry, DataError> {
        let mut st = self.lock();
        if let Some(msg) = &st.corrupt {
            return Err(DataError::Corrupt(format!(
                "refusing to append to a corrupt audit log: {msg}"
            )));
        }
        let (head_seq, head_hash) = st
            .entries
            .last()
            .map_or((0, GENESIS.to_owned()), |l| (l.seq, l.hash.clone()));
        let sealed = seal(head_seq, &head_hash, e);
        if let Some(path) = &self.path {
            let mut line = sealed.to_line();
            line.push('\n');
            let write = || -> std::io::Result<()> {
                let mut f = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)?;
                f.write_all(line.as_bytes())?;
                f.sync_data()
            };
            write().map_err(|err| {
                DataError::Unavailable(format!("appending to {}: {err}", path.display()))
            })?;
        }
        st.entries.push(sealed.clone());
        Ok(sealed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::review::{Decision, ReviewStatus, Role};

    fn entry(i: i64, action: ReviewAction, from: ReviewStatus, to: ReviewStatus) -> NewAuditEntry {
        NewAuditEntry {
            at: 1_790_000_000_000 + i,
            actor: "alice".to_owned(),
            role: Role::Reviewer,
            action,
            flag: "fl-1".to_owned(),
            account: "acc-1".to_owned(),
            reason: format!("reason \"{i}\" é"),
            decision: (to == ReviewStatus::Confirmed).then_some(Decision::Blocked),
            prev_state: from,
            new_state: to,
        }
    }

    fn chain() -> Vec<AuditEntry> {
        let log = AuditFile::in_memory();
        let steps = [
            (
                ReviewAction::Claim,
                ReviewStatus::Open,
                ReviewStatus::Claimed,
            ),
            (
                ReviewAction::Confirm,
                ReviewStatus::Claimed,
                ReviewStatus::Confirmed,
            ),
            (
                ReviewAction::Reopen,
                ReviewStatus::Confirmed,
                ReviewStatus::Open,
            ),
        ];
        for (i, (a, f, t)) in steps.into_iter().enumerate() {
            assert!(log.append(entry(i as i64, a, f, t)).is_ok());
        }
        log.entries().unwrap_or_default()
    }

    #[test]
    fn line_round_trip_and_chain() {
        let entries = chain();
        assert_eq!(entries.len(), 3);
        assert_eq!(entries[0].prev_hash, GENESIS);
        for e in &entries {
            assert_eq!(AuditEntry::from_line(&e.to_line()).as_ref(), Ok(e));
        }
        let report = verify_chain(&entries);
        assert!(report.ok(), "{report:?}");
        assert_eq!(report.head, entries[2].hash);
    }

    #[test]
    fn tampering_is_named() {
        let mut entries = chain();
        entries[1].entry.reason = "edited".to_owned();
        let r = verify_chain(&entries);
        assert_eq!(r.broken.map(|b| b.seq), Some(2));

        let mut entries = chain();
        entries.remove(1);
        let r = verify_chain(&entries);
        assert_eq!(r.broken.map(|b| (b.index, b.seq)), Some((1, 3)));
    }

    #[test]
    fn fold_states() {
        let entries = chain();
        let idx = ReviewIndex::from_entries(&entries[..2]);
        let r = idx.get("fl-1");
        assert_eq!(r.status, ReviewStatus::Confirmed);
        assert_eq!(r.decision, Some(Decision::Blocked));
        assert_eq!(r.claimed_by.as_deref(), Some("alice"));
        let idx = ReviewIndex::from_entries(&entries);
        assert_eq!(idx.get("fl-1").status, ReviewStatus::Open);
        assert_eq!(idx.get("fl-1").claimed_by, None);
        assert_eq!(idx.get("other").status, ReviewStatus::Open);
    }
}
