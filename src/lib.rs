//! Vigie: the anti-cheat and audit analytics pipeline of an online games platform.
//!
//! Data flow (see `docs/architecture.md`):
//!
//! ```text
//! server logs ──ingest──▶ lake (events, quarantine) ──replay──▶ findings, games, moves, departures
//!      ──features──▶ account_features, pair_features ──detect──▶ flags ──▶ dashboard, reports, SQL
//! ```
//!
//! Below the pipeline rooms, crates of their own: [`games`] and [`fairness`]
//! (`vigie-rules`: the pure rules engines and the randomness protocol, no
//! I/O), [`log`] (`vigie-log`: the event model), [`sim`] (`vigie-sim`: the
//! simulator); in this crate, [`lake`] (tables and atomic commits) is the
//! lowest room.

pub mod analysis;
pub mod catalog;
pub mod detect;
pub mod features;
pub mod ingest;
pub mod lake;
pub mod rejudge;
pub mod replay;
pub mod report;
pub mod review;
pub mod serve;
pub mod sql;
pub mod staff;
pub mod stream;

// The crates below the pipeline, under the paths the rest of the code uses.
pub use vigie_log as log;
pub use vigie_rules::{fairness, games};
pub use vigie_sim as sim;
