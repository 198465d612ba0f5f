//! Subcommands of the `vigie` binary that are more than a call into the library.

pub mod calibrate;
pub mod engines;
pub mod pipeline;
pub mod sql;
