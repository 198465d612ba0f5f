//! Vigie: the anti-cheat and audit analytics pipeline of an online games platform.
//!
//! Data flow (see `docs/architecture.md`):
//!
//! ```text
//! server logs ──ingest──▶ lake (events, quarantine) ──replay──▶ findings, games, moves, departures
//!      ──features──▶ account_features, pair_features ──detect──▶ flags ──▶ dashboard, reports, SQL
//! ```
//!
//! Below the pipeline rooms: [`games`] and [`fairness`] (pure rules engines
//! and the randomness protocol, no I/O, depending on nothing else in the
//! crate), [`log`] (the event model), [`lake`] (tables and atomic commits).

pub mod catalog;
pub mod detect;
pub mod fairness;
pub mod features;
pub mod games;
pub mod ingest;
pub mod lake;
pub mod log;
pub mod replay;
pub mod report;
pub mod review;
pub mod serve;
pub mod sim;
pub mod sql;
pub mod stream;
