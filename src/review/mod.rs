//! The review audit log: every staff action on a flag (claim, confirm, dismiss, reopen), hash-chained, and its home in the lake (`audit_log`).
//!
//! Entry `n` (from 1) stores the hash of entry `n-1` (64 zeros for the first)
//! and `hash = SHA-256(canonical JSON of seq, time, actor, role, action, flag,
//! account, reason, decision, states and prev_hash)`: editing, deleting,
//! inserting or reordering any entry breaks the chain at that entry. The
//! dashboard appends to it; the compliance report verifies it.

pub mod lake;

use std::collections::HashMap;
use std::fmt::Write as _;

use sha2::{Digest, Sha256};

use crate::log::syntax::{EpochMs, format_ts, parse_ts};

/// The enum-with-text-form macro of the log model, shared.
pub(crate) use crate::log::string_enum as text_enum;

text_enum!(
    /// Staff roles. Reviewers review; analysts read the queue, accounts, games and
    /// dashboards; compliance reads everything including decisions and audit;
    /// admin may do everything.
    Role {
        Reviewer => "reviewer",
        Compliance => "compliance",
        Analyst => "analyst",
        Admin => "admin",
    }
);

text_enum!(
    /// Review state of a flag (the fold of its audit entries).
    ReviewStatus {
        Open => "open",
        Claimed => "claimed",
        Confirmed => "confirmed",
        Dismissed => "dismissed",
    }
);

text_enum!(
    /// Decision recorded when a flag is confirmed.
    Decision {
        BlockRecommended => "block_recommended",
        Blocked => "blocked",
    }
);

/// The review state of one flag, as folded from the audit log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlagReview {
    /// Current state.
    pub status: ReviewStatus,
    /// Who holds the claim (claimed, and kept on confirmed/dismissed: who decided).
    pub claimed_by: Option<String>,
    /// The decision when confirmed.
    pub decision: Option<Decision>,
    /// Last audit entry touching the flag.
    pub updated_at: Option<EpochMs>,
    /// Its author.
    pub updated_by: Option<String>,
    /// Its reason.
    pub last_reason: Option<String>,
}

impl Default for FlagReview {
    fn default() -> Self {
        FlagReview {
            status: ReviewStatus::Open,
            claimed_by: None,
            decision: None,
            updated_at: None,
            updated_by: None,
            last_reason: None,
        }
    }
}

/// `prev_hash` of the first entry.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

text_enum!(
    /// A review action.
    ReviewAction {
        Claim => "claim",
        Confirm => "confirm",
        Dismiss => "dismiss",
        Reopen => "reopen",
    }
);

/// An audit entry before it is chained: what the dashboard asks the store to append.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewAuditEntry {
    /// When (server clock).
    pub at: EpochMs,
    /// Who (username).
    pub actor: String,
    /// Their role at the time.
    pub role: Role,
    /// What.
    pub action: ReviewAction,
    /// Which flag.
    pub flag: String,
    /// The flagged account.
    pub account: String,
    /// Why (mandatory for confirm, dismiss and reopen; may be empty for claim).
    pub reason: String,
    /// The decision of a confirmation.
    pub decision: Option<Decision>,
    /// State before.
    pub prev_state: ReviewStatus,
    /// State after.
    pub new_state: ReviewStatus,
}

/// A chained audit entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditEntry {
    /// Position in the log, from 1.
    pub seq: u64,
    /// The entry's content.
    pub entry: NewAuditEntry,
    /// Hash of the previous entry ([`GENESIS`] for the first).
    pub prev_hash: String,
    /// SHA-256 of this entry's canonical form.
    pub hash: String,
}

impl std::ops::Deref for AuditEntry {
    type Target = NewAuditEntry;
    fn deref(&self) -> &NewAuditEntry {
        &self.entry
    }
}

fn json_str(out: &mut String, s: &str) {
    // serde_json escapes deterministically; a String never fails to serialise.
    match serde_json::to_string(s) {
        Ok(q) => out.push_str(&q),
        Err(_) => out.push_str("\"\""),
    }
}

/// The canonical serialisation hashed for an entry (see the module documentation).
pub fn canonical(seq: u64, prev_hash: &str, e: &NewAuditEntry) -> String {
    let mut o = String::with_capacity(320 + e.reason.len());
    let _ = write!(o, "{{\"seq\":{seq},\"at\":");
    json_str(&mut o, &format_ts(e.at));
    for (k, v) in [
        ("actor", e.actor.as_str()),
        ("role", e.role.as_str()),
        ("action", e.action.as_str()),
        ("flag", e.flag.as_str()),
        ("account", e.account.as_str()),
        ("reason", e.reason.as_str()),
    ] {
        let _ = write!(o, ",\"{k}\":");
        json_str(&mut o, v);
    }
    o.push_str(",\"decision\":");
    match e.decision {
        Some(d) => json_str(&mut o, d.as_str()),
        None => o.push_str("null"),
    }
    o.push_str(",\"prev_state\":");
    json_str(&mut o, e.prev_state.as_str());
    o.push_str(",\"new_state\":");
    json_str(&mut o, e.new_state.as_str());
    o.push_str(",\"prev_hash\":");
    json_str(&mut o, prev_hash);
    o.push('}');
    o
}

/// Lowercase hex SHA-256.
pub fn sha256_hex(data: &[u8]) -> String {
    let digest = Sha256::digest(data);
    let mut s = String::with_capacity(64);
    for b in digest {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// Chains a new entry after a head (`seq` and `hash` of the last entry; `(0, GENESIS)` for an empty log).
pub fn seal(head_seq: u64, head_hash: &str, e: NewAuditEntry) -> AuditEntry {
    let seq = head_seq + 1;
    let hash = sha256_hex(canonical(seq, head_hash, &e).as_bytes());
    AuditEntry {
        seq,
        entry: e,
        prev_hash: head_hash.to_owned(),
        hash,
    }
}

impl AuditEntry {
    /// The hash this entry's content gives.
    pub fn computed_hash(&self) -> String {
        sha256_hex(canonical(self.seq, &self.prev_hash, &self.entry).as_bytes())
    }

    /// The stored JSON line (canonical form plus `hash`).
    pub fn to_line(&self) -> String {
        let mut c = canonical(self.seq, &self.prev_hash, &self.entry);
        c.pop();
        c.push_str(",\"hash\":");
        json_str(&mut c, &self.hash);
        c.push('}');
        c
    }

    /// Parses a stored line.
    pub fn from_line(line: &str) -> Result<AuditEntry, String> {
        let v: serde_json::Value = serde_json::from_str(line).map_err(|e| e.to_string())?;
        let obj = v.as_object().ok_or("not a JSON object")?;
        let s = |k: &str| -> Result<String, String> {
            obj.get(k)
                .and_then(|x| x.as_str())
                .map(str::to_owned)
                .ok_or_else(|| format!("missing or non-string field {k:?}"))
        };
        let seq = obj
            .get("seq")
            .and_then(serde_json::Value::as_u64)
            .ok_or("missing or invalid field \"seq\"")?;
        let at = parse_ts(&s("at")?).map_err(|e| format!("at: {e}"))?;
        let role = Role::parse(&s("role")?).ok_or("unknown role")?;
        let action = ReviewAction::parse(&s("action")?).ok_or("unknown action")?;
        let decision = match obj.get("decision") {
            None | Some(serde_json::Value::Null) => None,
            Some(serde_json::Value::String(d)) => {
                Some(Decision::parse(d).ok_or("unknown decision")?)
            }
            Some(_) => return Err("invalid field \"decision\"".to_owned()),
        };
        let prev_state = ReviewStatus::parse(&s("prev_state")?).ok_or("unknown prev_state")?;
        let new_state = ReviewStatus::parse(&s("new_state")?).ok_or("unknown new_state")?;
        Ok(AuditEntry {
            seq,
            entry: NewAuditEntry {
                at,
                actor: s("actor")?,
                role,
                action,
                flag: s("flag")?,
                account: s("account")?,
                reason: s("reason")?,
                decision,
                prev_state,
                new_state,
            },
            prev_hash: s("prev_hash")?,
            hash: s("hash")?,
        })
    }
}

/// The first entry where the chain breaks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainBreak {
    /// Position in the log (0-based).
    pub index: usize,
    /// The `seq` written in that entry.
    pub seq: u64,
    /// What is wrong, for people.
    pub reason: String,
}

/// What [`verify_chain`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainReport {
    /// Entries checked.
    pub entries: usize,
    /// Hash of the last entry ([`GENESIS`] when empty).
    pub head: String,
    /// The first broken entry, if any.
    pub broken: Option<ChainBreak>,
}

impl ChainReport {
    /// Whether the whole chain holds.
    pub fn ok(&self) -> bool {
        self.broken.is_none()
    }
}

/// Checks `seq` numbering, `prev_hash` links and every entry's hash; reports the first broken entry.
pub fn verify_chain(entries: &[AuditEntry]) -> ChainReport {
    let mut prev = GENESIS.to_owned();
    for (index, e) in entries.iter().enumerate() {
        let want_seq = index as u64 + 1;
        let reason = if e.computed_hash() != e.hash {
            Some(format!(
                "entry {} was modified: its content no longer matches its hash",
                e.seq
            ))
        } else if e.seq != want_seq {
            Some(format!(
                "entry at position {want_seq} has seq {}: an entry before it was deleted, inserted or moved",
                e.seq
            ))
        } else if e.prev_hash != prev {
            Some(format!(
                "entry {} does not chain to the entry before it (prev_hash mismatch): an earlier entry was removed, replaced or rewritten",
                e.seq
            ))
        } else {
            None
        };
        if let Some(reason) = reason {
            return ChainReport {
                entries: entries.len(),
                head: entries
                    .last()
                    .map_or_else(|| GENESIS.to_owned(), |l| l.hash.clone()),
                broken: Some(ChainBreak {
                    index,
                    seq: e.seq,
                    reason,
                }),
            };
        }
        prev.clone_from(&e.hash);
    }
    ChainReport {
        entries: entries.len(),
        head: prev,
        broken: None,
    }
}

/// Review state of every flag that has audit entries: the fold of the log.
#[derive(Debug, Clone, Default)]
pub struct ReviewIndex {
    states: HashMap<String, FlagReview>,
}

impl ReviewIndex {
    /// Folds the entries in log order: each entry sets its flag's state to `new_state`.
    pub fn from_entries(entries: &[AuditEntry]) -> ReviewIndex {
        let mut states: HashMap<String, FlagReview> = HashMap::new();
        for e in entries {
            let r = states.entry(e.flag.clone()).or_default();
            r.status = e.new_state;
            match e.action {
                ReviewAction::Claim => r.claimed_by = Some(e.actor.clone()),
                ReviewAction::Reopen => r.claimed_by = None,
                // Who decided: the claimer, or an admin deciding over a claim.
                ReviewAction::Confirm | ReviewAction::Dismiss => {
                    r.claimed_by = Some(e.actor.clone());
                }
            }
            r.decision = if e.new_state == ReviewStatus::Confirmed {
                e.decision
            } else {
                None
            };
            r.updated_at = Some(e.at);
            r.updated_by = Some(e.actor.clone());
            r.last_reason = Some(e.reason.clone());
        }
        ReviewIndex { states }
    }

    /// The state of a flag (open when it has no entry).
    pub fn get(&self, flag: &str) -> FlagReview {
        self.states.get(flag).cloned().unwrap_or_default()
    }
}

pub use lake::{
    AppendError, AuditRow, AuditSummary, Block, append, audit_batch, read_log, summarize,
};
