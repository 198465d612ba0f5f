//! Judging one attempt (move, bid, play) against the server's verdict: the findings every kind shares.

use super::context::Cx;
use super::finding::Code;
use crate::log::{Attempt, RejectReason};

/// One attempt as a kind's replayer saw it.
pub struct Attempted<'a> {
    pub seq: i64,
    pub player: &'a str,
    /// The move, token, bid or card as sent.
    pub text: &'a str,
    pub attempt: &'a Attempt,
    /// Whether it was this player's turn (and the game undecided).
    pub on_turn: bool,
    /// Milliseconds since the turn last changed hands.
    pub since_turn_ms: i64,
    /// Clock limit of the action.
    pub limit_ms: Option<i64>,
    /// Our verdict: legal, illegal with a cause, or unknown (replay lost track of the game).
    pub verdict: Option<Result<(), Code>>,
    /// What is attempted, for messages: "move", "token", "bid", "card".
    pub what: &'static str,
}

/// The turn as an attempt meets it: whether it waits on the server's automatic action (rejected,
/// logged between a timeout that owes one, at `owed_since`, and that action: the contract fixes no
/// order between them, and the turn is then the server's, whoever sent it), and the milliseconds
/// since the turn changed hands (at the timeout, for such an attempt; else at `changed`).
pub fn turn_clock(
    ts: i64,
    attempt: &Attempt,
    decided: bool,
    owed_since: Option<i64>,
    changed: i64,
) -> (bool, i64) {
    match owed_since {
        Some(at) if !attempt.accepted() && !decided => (true, ts - at),
        _ => (false, ts - changed),
    }
}

/// Emits the findings of an attempt: accepted illegal, late, rejected legal, or the classified cause.
pub fn judge_attempt(cx: &mut Cx<'_>, a: &Attempted<'_>) {
    let Some(verdict) = a.verdict else { return };
    let text = a.text;
    let facts = serde_json::json!({
        "since_turn_ms": a.since_turn_ms,
        "on_turn": a.on_turn,
        "think_ms": a.attempt.think_ms,
        "server_reason": a.attempt.reason.map(|r| r.as_str()),
    });
    if a.attempt.accepted() {
        match verdict {
            Err(cause) => {
                cx.find(
                    a.seq,
                    Code::AcceptedIllegal,
                    format!(
                        "the server accepted {} {text}, which our engine rejects ({})",
                        a.what,
                        cause.as_str()
                    ),
                )
                .account(a.player)
                .expected(format!("rejected ({})", cause.as_str()))
                .logged(format!("accepted {text}"))
                .facts(facts);
            }
            Ok(()) => {
                if let Some(limit) = a.limit_ms
                    && !a.attempt.is_auto()
                    && a.attempt.think_ms > limit
                {
                    cx.find(
                        a.seq,
                        Code::LateMove,
                        format!(
                            "{} {text} accepted after {} ms, the limit is {limit} ms",
                            a.what, a.attempt.think_ms
                        ),
                    )
                    .account(a.player)
                    .expected(format!("think_ms <= {limit}"))
                    .logged(a.attempt.think_ms.to_string());
                }
            }
        }
        return;
    }
    let server = a.attempt.reason;
    match verdict {
        Ok(()) => {
            cx.find(
                a.seq,
                Code::RejectedLegal,
                format!("the server rejected {} {text}, which is legal", a.what),
            )
            .account(a.player)
            .expected("accepted")
            .logged(format!(
                "rejected ({})",
                server.map(|r| r.as_str()).unwrap_or("?")
            ))
            .facts(facts);
        }
        Err(cause) => {
            let message = match cause {
                Code::OutOfTurn => format!(
                    "{} {text} sent out of turn ({} ms after the turn changed)",
                    a.what, a.since_turn_ms
                ),
                Code::AfterEnd => format!(
                    "{} {text} sent after the game was over for the player",
                    a.what
                ),
                _ => format!("illegal {} {text}: {}", a.what, cause_sentence(cause)),
            };
            let f = cx
                .find(a.seq, cause, message)
                .account(a.player)
                .logged(text.to_string())
                .facts(facts);
            f.expected = Some("a legal action".into());
            let reason_mismatch = match server {
                Some(RejectReason::NotYourTurn) => {
                    !matches!(cause, Code::OutOfTurn | Code::AfterEnd)
                }
                Some(RejectReason::GameOver) => cause != Code::AfterEnd,
                _ => false,
            };
            if reason_mismatch {
                cx.find(
                    a.seq,
                    Code::WrongRejectReason,
                    format!(
                        "rejected as {}, but the attempt was {}",
                        server.map(|r| r.as_str()).unwrap_or("?"),
                        cause.as_str()
                    ),
                )
                .account(a.player)
                .expected(cause.as_str())
                .logged(server.map(|r| r.as_str()).unwrap_or("?"));
            }
        }
    }
}

/// A short explanation of an attempt cause.
pub fn cause_sentence(c: Code) -> &'static str {
    match c {
        Code::Unparseable => "not a move in PDN for this board",
        Code::NotOwnPiece => "the start square does not hold one of the player's pieces",
        Code::WrongDirection => "a man cannot move backwards",
        Code::SkippedCapture => "a capture was available, and capture is mandatory",
        Code::NotMajority => "another capture takes more pieces (majority rule)",
        Code::NoSuchPath => "no legal move follows this path",
        Code::AmbiguousMove => "the short form names several moves",
        Code::MissingStops => "a capture of several pieces must list every square it stops on",
        Code::NoSuchToken => "the player has no such token",
        Code::TokenFinished => "the token has already finished",
        Code::WrongDistance => "the move would overshoot the finish",
        Code::NotOutOfYard => "this die value does not let a token out of the yard",
        Code::PassWhileMovable => "a token could move",
        Code::DidNotFollowSuit => "the player held the suit led",
        Code::DidNotTrump => "the player could not follow and held a trump",
        Code::DidNotBeatTrump => "the player could beat the trump led",
        Code::CardNotInHand => "the card is not in the player's hand",
        Code::InvalidBid => "not a bid allowed at this point",
        Code::InvalidAnnounce => "belote and rebelote go with trump K and Q, in that order",
        Code::WrongPhase => "not an action of this phase of the game",
        _ => "illegal",
    }
}
