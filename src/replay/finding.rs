//! Findings: what replay reports about a game, with stable codes (`docs/findings.md`).

use serde::Serialize;

/// Who or what a finding is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    /// A player's rejected attempt, classified by our engines.
    Attempt,
    /// The server broke the rules or the log contract.
    Integrity,
    /// The randomness protocol failed.
    Fairness,
}

impl Category {
    pub fn as_str(self) -> &'static str {
        match self {
            Category::Attempt => "attempt",
            Category::Integrity => "integrity",
            Category::Fairness => "fairness",
        }
    }
}

crate::log::string_enum!(
    /// How serious a finding or a flag is, ordered (the one severity of the lake, the rules and the dashboard).
    Severity {
        Info => "info",
        Low => "low",
        Medium => "medium",
        High => "high",
        Critical => "critical",
    }
);

impl Serialize for Severity {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

macro_rules! codes {
    ($($variant:ident => ($text:literal, $cat:ident, $sev:ident)),+ $(,)?) => {
        /// Stable finding codes.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Code { $($variant),+ }

        impl Code {
            /// Every code, in documentation order.
            pub const ALL: &'static [Code] = &[$(Code::$variant),+];

            /// The stable text of the code.
            pub fn as_str(self) -> &'static str {
                match self { $(Code::$variant => $text),+ }
            }

            /// The category of the code.
            pub fn category(self) -> Category {
                match self { $(Code::$variant => Category::$cat),+ }
            }

            /// The default severity of the code.
            pub fn severity(self) -> Severity {
                match self { $(Code::$variant => Severity::$sev),+ }
            }

            /// Parses the stable text of a code.
            pub fn parse(s: &str) -> Option<Code> {
                match s { $($text => Some(Code::$variant),)+ _ => None }
            }
        }
    };
}

codes! {
    // Player attempts.
    Unparseable => ("unparseable", Attempt, Medium),
    NotOwnPiece => ("not_own_piece", Attempt, High),
    WrongDirection => ("wrong_direction", Attempt, High),
    SkippedCapture => ("skipped_capture", Attempt, Medium),
    NotMajority => ("not_majority", Attempt, Medium),
    NoSuchPath => ("no_such_path", Attempt, Medium),
    AmbiguousMove => ("ambiguous_move", Attempt, Low),
    MissingStops => ("missing_stops", Attempt, Low),
    NoSuchToken => ("no_such_token", Attempt, High),
    TokenFinished => ("token_finished", Attempt, Medium),
    WrongDistance => ("wrong_distance", Attempt, Medium),
    NotOutOfYard => ("not_out_of_yard", Attempt, Medium),
    PassWhileMovable => ("pass_while_movable", Attempt, Medium),
    DidNotFollowSuit => ("did_not_follow_suit", Attempt, Medium),
    DidNotTrump => ("did_not_trump", Attempt, Medium),
    DidNotBeatTrump => ("did_not_beat_trump", Attempt, Medium),
    CardNotInHand => ("card_not_in_hand", Attempt, High),
    InvalidBid => ("invalid_bid", Attempt, Medium),
    InvalidAnnounce => ("invalid_announce", Attempt, Medium),
    OutOfTurn => ("out_of_turn", Attempt, Low),
    AfterEnd => ("after_end", Attempt, Info),
    WrongPhase => ("wrong_phase", Attempt, Medium),
    // Server integrity.
    AcceptedIllegal => ("accepted_illegal", Integrity, Critical),
    RejectedLegal => ("rejected_legal", Integrity, High),
    WrongRejectReason => ("wrong_reject_reason", Integrity, Low),
    WrongResult => ("wrong_result", Integrity, High),
    WrongEndReason => ("wrong_end_reason", Integrity, Medium),
    WrongPayout => ("wrong_payout", Integrity, Critical),
    PotNotConserved => ("pot_not_conserved", Integrity, Critical),
    LateMove => ("late_move", Integrity, High),
    EarlyTimeout => ("early_timeout", Integrity, High),
    TimeoutRule => ("timeout_rule", Integrity, High),
    WrongAutoMove => ("wrong_auto_move", Integrity, High),
    DuelMisapplied => ("duel_misapplied", Integrity, Critical),
    WrongScore => ("wrong_score", Integrity, High),
    WrongHands => ("wrong_hands", Integrity, High),
    SeqGap => ("seq_gap", Integrity, Medium),
    SeqDuplicate => ("seq_duplicate", Integrity, Medium),
    SeqRedelivered => ("seq_redelivered", Integrity, Info),
    ChainBroken => ("chain_broken", Integrity, High),
    EventAfterEnd => ("event_after_end", Integrity, Medium),
    NeverEnded => ("never_ended", Integrity, Medium),
    MissingStart => ("missing_start", Integrity, High),
    // Fairness.
    CommitmentMissing => ("commitment_missing", Fairness, Critical),
    CommitmentMismatch => ("commitment_mismatch", Fairness, Critical),
    LateCommitment => ("late_commitment", Fairness, Critical),
    SeedMalformed => ("seed_malformed", Fairness, High),
    SeedMissing => ("seed_missing", Fairness, High),
    SeedEarly => ("seed_early", Fairness, Critical),
    DrawMisnumbered => ("draw_misnumbered", Fairness, Critical),
    SeedReused => ("seed_reused", Fairness, Critical),
    WrongDie => ("wrong_die", Fairness, Critical),
    WrongDeal => ("wrong_deal", Fairness, Critical),
    WrongDuel => ("wrong_duel", Fairness, Critical),
    WrongSelection => ("wrong_selection", Fairness, Critical),
}

/// One finding.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    pub game: String,
    pub seq: i64,
    /// The account involved, when one is.
    pub account: Option<String>,
    #[serde(serialize_with = "code_text")]
    pub code: Code,
    pub category: Category,
    pub severity: Severity,
    /// What the rules (or the derivation) give.
    pub expected: Option<String>,
    /// What the log says.
    pub logged: Option<String>,
    /// A sentence a reviewer understands.
    pub message: String,
    /// Facts behind the finding, as a JSON object (e.g. ms since the turn changed).
    pub facts: Option<String>,
}

fn code_text<S: serde::Serializer>(c: &Code, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(c.as_str())
}

impl Finding {
    /// A finding with the code's category and default severity.
    pub fn new(game: &str, seq: i64, code: Code, message: impl Into<String>) -> Finding {
        Finding {
            game: game.to_string(),
            seq,
            account: None,
            code,
            category: code.category(),
            severity: code.severity(),
            expected: None,
            logged: None,
            message: message.into(),
            facts: None,
        }
    }

    pub fn account(&mut self, account: &str) -> &mut Finding {
        self.account = Some(account.to_string());
        self
    }

    pub fn expected(&mut self, v: impl Into<String>) -> &mut Finding {
        self.expected = Some(v.into());
        self
    }

    pub fn logged(&mut self, v: impl Into<String>) -> &mut Finding {
        self.logged = Some(v.into());
        self
    }

    pub fn severity(&mut self, s: Severity) -> &mut Finding {
        self.severity = s;
        self
    }

    pub fn facts(&mut self, v: serde_json::Value) -> &mut Finding {
        self.facts = Some(v.to_string());
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_and_round_trip() {
        let mut seen = std::collections::BTreeSet::new();
        for c in Code::ALL {
            assert!(seen.insert(c.as_str()), "duplicate code {}", c.as_str());
            assert_eq!(Code::parse(c.as_str()), Some(*c));
        }
    }

    #[test]
    fn documented_codes_match_the_code() {
        let doc = include_str!("../../docs/findings.md");
        for c in Code::ALL {
            assert!(
                doc.contains(&format!("`{}`", c.as_str())),
                "{} missing from docs/findings.md",
                c.as_str()
            );
        }
    }
}
