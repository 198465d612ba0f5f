//! Integration tests of the `vigie` crate and binary (one test binary, one module per area).

mod analysis;
mod architecture;
mod cli;
mod common;
mod dashboard;
mod detect;
mod fixtures;
mod ingest;
mod lake;
mod replay;
mod report;
mod security;
mod sim;
mod slt;
mod sql;
mod stream;
