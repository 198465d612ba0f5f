//! The lake's tables, all in one list, and the lake opened with them: every writing command opens the lake here so that every table has its Delta log, empty ones included.
//!
//! The definitions live beside the code that writes each table (the ingest
//! tables in [`crate::lake::tables`], the derived ones in replay, features,
//! detection and review); this module only gathers them, so that the SQL
//! layer, the report and the Delta logs use the same list.

use std::path::Path;

use crate::lake::{Lake, LakeError, tables::TableDef};

/// Every table of the lake, in catalogue order.
pub fn tables() -> Vec<TableDef> {
    let mut v = crate::lake::tables::all();
    v.extend(crate::replay::run::derived_table_defs());
    v.push(crate::features::account_table());
    v.push(crate::features::pair_table());
    v.push(crate::analysis::MoveAnalysisRow::def());
    v.push(crate::detect::FlagRow::def());
    v.push(crate::review::AuditRow::def());
    v
}

/// Opens (creating if needed) a lake with the catalogue declared.
pub fn open(dir: impl AsRef<Path>) -> Result<Lake, LakeError> {
    Ok(Lake::open(dir.as_ref())?.with_catalogue(&tables()))
}

/// Opens a lake that must exist, with the catalogue declared.
pub fn open_existing(dir: impl AsRef<Path>) -> Result<Lake, LakeError> {
    Ok(Lake::open_existing(dir.as_ref())?.with_catalogue(&tables()))
}
