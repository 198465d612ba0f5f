//! Staff accounts and login protection, shared by the dashboard ([`crate::serve`]) and the PostgreSQL endpoint ([`crate::sql::pg`]).
//!
//! * [`users`]: the users file (argon2 hashes) and roles.
//! * [`limiter`]: failed-login counters per address and per user.

pub mod limiter;
pub mod users;
