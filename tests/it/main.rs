//! Integration tests of the `vigie` crate and binary (one test binary, one module per area).

mod common;
mod draughts;
mod engines;
mod ingest;
mod replay;
