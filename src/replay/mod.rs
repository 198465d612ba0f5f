//! Replay: every game through the rules engines and the fairness checks, into findings and per-move facts.
//!
//! [`replay_game`] judges one game from its logged lines: every attempt by
//! our engines (not by the server's word), every server verdict, clock
//! decision, result and payout, and every random draw once the seed is
//! revealed. It is pure; reading the lake and writing the derived tables is
//! [`run`]'s job.

pub mod attempt;
pub mod belote;
pub mod context;
pub mod draughts;
pub mod error;
pub mod fairness;
pub mod finding;
pub mod game;
pub mod index;
pub mod ludo;
pub mod merge;
pub mod output;
pub mod recall;
pub mod rows;
pub mod run;
pub mod verify;

pub use finding::{Category, Code, Finding, Severity};
pub use game::{Context, GameReplay, Logged, NEVER_ENDED_AFTER_MS, replay_game};
