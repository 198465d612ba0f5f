//! The catalogue of lake tables: columns, types, documentation, partitioning and sort order.
//!
//! `docs/tables.md` is generated from this catalogue (`vigie docs tables`), so
//! the documentation cannot drift from the files.

use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};

/// A column of a lake table.
#[derive(Debug, Clone)]
pub struct Column {
    pub name: &'static str,
    pub ty: DataType,
    pub nullable: bool,
    pub doc: &'static str,
}

/// A lake table.
#[derive(Debug, Clone)]
pub struct TableDef {
    pub name: &'static str,
    pub doc: &'static str,
    /// Hive partition column (its value is in the directory name, not in the files).
    pub partition: Option<&'static str>,
    pub columns: Vec<Column>,
    /// Sort order of rows within each file.
    pub sort_by: &'static [&'static str],
    /// Columns with Parquet bloom filters (point lookups).
    pub bloom: &'static [&'static str],
    /// Columns written without dictionary encoding (large unique values).
    pub no_dictionary: &'static [&'static str],
    /// Columns written without statistics: long texts kept for audit that no query bounds by range
    /// (a page's minimum and maximum of them cost two comparisons of every value and prune nothing).
    pub no_statistics: &'static [&'static str],
}

impl TableDef {
    /// The Arrow schema of the data files (without the partition column).
    pub fn schema(&self) -> SchemaRef {
        Arc::new(Schema::new(
            self.columns
                .iter()
                .map(|c| Field::new(c.name, c.ty.clone(), c.nullable))
                .collect::<Vec<_>>(),
        ))
    }

    /// The schema SQL reads: the data files' columns, then the partition column (a date, from the
    /// directory name) when the table has one.
    pub fn table_schema(&self) -> SchemaRef {
        let data = self.schema();
        let Some(p) = self.partition else {
            return data;
        };
        let mut fields: Vec<_> = data.fields().iter().cloned().collect();
        fields.push(Arc::new(Field::new(p, DataType::Date32, false)));
        Arc::new(Schema::new(fields))
    }
}

fn col(name: &'static str, ty: DataType, nullable: bool, doc: &'static str) -> Column {
    Column {
        name,
        ty,
        nullable,
        doc,
    }
}

/// The timestamp type of the lake: milliseconds, UTC.
pub fn ts_type() -> DataType {
    DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into()))
}

/// `events`: one row per valid log line.
pub fn events() -> TableDef {
    use DataType::*;
    TableDef {
        name: "events",
        doc: "One row per valid server log line, partitioned by the UTC date of `ts`. Typed columns hold the envelope and \
              the common fields; `detail` holds every type-specific field as written; `raw` is the line exactly as the \
              server wrote it.",
        partition: Some("date"),
        columns: vec![
            col("game", Utf8, false, "Game id (for Belote, the match id)."),
            col(
                "seq",
                Int64,
                false,
                "Position of the event in its game, from 0.",
            ),
            col(
                "ts",
                ts_type(),
                false,
                "Server timestamp (UTC, milliseconds).",
            ),
            col(
                "type",
                Utf8,
                false,
                "Event type (game_started, move, roll, ...).",
            ),
            col("v", Int64, false, "Log format version (1)."),
            col(
                "prev",
                Utf8,
                true,
                "SHA-256 of the previous line of the game, as logged.",
            ),
            col(
                "player",
                Utf8,
                true,
                "Acting account (selection, move, roll, bid, play, timeout, draw_offer, draw_answer, left).",
            ),
            col(
                "status",
                Utf8,
                true,
                "accepted or rejected (move, bid, play).",
            ),
            col(
                "reason",
                Utf8,
                true,
                "Rejection reason (move, bid, play), departure reason (left) or end reason (game_ended).",
            ),
            col(
                "think_ms",
                Int64,
                true,
                "Time since the turn began, as the server measured it (move, bid, play).",
            ),
            col(
                "auto",
                Boolean,
                true,
                "True when the server played the attempt after a timeout.",
            ),
            col("move", Utf8, true, "Draughts move in PDN, as sent."),
            col("token", Int64, true, "Ludo token index."),
            col("pass", Boolean, true, "Ludo pass."),
            col("n", Int64, true, "Ludo roll number in the game."),
            col("value", Int64, true, "Ludo die value."),
            col("deal", Int64, true, "Belote deal number."),
            col("round", Int64, true, "Belote bidding round."),
            col(
                "bid",
                Utf8,
                true,
                "Belote bid (take, pass, or a suit in round 2).",
            ),
            col("card", Utf8, true, "Belote card played."),
            col(
                "announce",
                Utf8,
                true,
                "Belote announce (belote, rebelote).",
            ),
            col("trump", Utf8, true, "Belote trump suit (hands_completed)."),
            col("taker", Utf8, true, "Belote taker (hands_completed)."),
            col("dealer", Utf8, true, "Belote dealer (deal)."),
            col("turned", Utf8, true, "Belote turned card (deal)."),
            col(
                "outcome",
                Utf8,
                true,
                "Timeout outcome (loss, auto, forfeit) or deal outcome (made, dedans, litige, capot, void).",
            ),
            col(
                "elapsed_ms",
                Int64,
                true,
                "Time elapsed when the timeout was declared.",
            ),
            col("accept", Boolean, true, "Draw answer."),
            col("kind", Utf8, true, "Game kind (game_started)."),
            col("mode", Utf8, true, "Game mode (game_started)."),
            col("rated", Boolean, true, "Rated game (game_started)."),
            col(
                "stake",
                Int64,
                true,
                "Stake per player in the smallest currency unit (game_started).",
            ),
            col(
                "currency",
                Utf8,
                true,
                "Currency of the stake (game_started).",
            ),
            col("commitment", Utf8, true, "Seed commitment (game_started)."),
            col("seed", Utf8, true, "Revealed seed (seed_revealed)."),
            col(
                "result",
                Utf8,
                true,
                "Result: white, black, draw, or the winning account (game_ended).",
            ),
            col(
                "rake",
                Int64,
                true,
                "Rake kept by the platform (game_ended).",
            ),
            col(
                "detail",
                Utf8,
                false,
                "JSON object of every field but the envelope (v, game, seq, ts, type, prev), exactly as written.",
            ),
            col(
                "extra",
                Utf8,
                true,
                "JSON object of the fields format v1 does not define for this type, or null.",
            ),
            col(
                "raw",
                Utf8,
                false,
                "The log line exactly as written, without its newline.",
            ),
            col(
                "src_file",
                Utf8,
                false,
                "Path of the source file when the line was ingested.",
            ),
            col(
                "src_id",
                Utf8,
                false,
                "Id of the source (its content fingerprint).",
            ),
            col(
                "src_line",
                Int64,
                false,
                "Line number in the source (1-based, decompressed).",
            ),
            col(
                "src_offset",
                Int64,
                false,
                "Byte offset of the line in the source (decompressed).",
            ),
        ],
        sort_by: &["game", "seq"],
        bloom: &["game"],
        // Columns whose values are (nearly) all distinct: a dictionary of them costs a hash of every
        // value and saves nothing (dictionary interning was 4-6 % of an ingest's CPU in perf).
        no_dictionary: &[
            "raw",
            "detail",
            "prev",
            "seed",
            "commitment",
            "extra",
            "ts",
            "src_line",
            "src_offset",
        ],
        // Comparing every line's text for the pages' minimum and maximum was 2.3 % of an ingest's
        // CPU in perf (the `raw` and `detail` columns).
        no_statistics: &["raw", "detail", "extra"],
    }
}

/// `quarantine`: one row per rejected line (or unreadable stretch of a file).
pub fn quarantine() -> TableDef {
    use DataType::*;
    TableDef {
        name: "quarantine",
        doc: "Every rejected line, byte for byte, with where it came from and why, partitioned by the UTC date of the \
              ingest run. Rows with a null `src_line` describe a file-level problem (e.g. a corrupt archive).",
        partition: Some("date"),
        columns: vec![
            col(
                "src_file",
                Utf8,
                false,
                "Path of the source file when ingested.",
            ),
            col(
                "src_id",
                Utf8,
                false,
                "Id of the source (its content fingerprint), or the path for unreadable files.",
            ),
            col(
                "src_line",
                Int64,
                true,
                "Line number in the source (1-based, decompressed); null for a file-level problem.",
            ),
            col(
                "src_offset",
                Int64,
                false,
                "Byte offset of the line (or problem) in the decompressed source.",
            ),
            col(
                "raw",
                Binary,
                false,
                "The rejected bytes exactly as read (lossless, also when not UTF-8), capped at 64 MiB.",
            ),
            col(
                "raw_len",
                Int64,
                false,
                "Length of the rejected line in bytes (even when `raw` is capped).",
            ),
            col(
                "raw_sha256",
                Utf8,
                false,
                "SHA-256 of the whole rejected line.",
            ),
            col(
                "truncated",
                Boolean,
                false,
                "True when `raw` holds only the first 64 MiB.",
            ),
            col(
                "reason",
                Utf8,
                false,
                "Stable reason code (invalid_json, missing_field, bad_timestamp, ...).",
            ),
            col("message", Utf8, false, "What is wrong, for people."),
            col(
                "field",
                Utf8,
                true,
                "The field at stake, when there is one.",
            ),
            col(
                "ingested_at",
                ts_type(),
                false,
                "When the ingest run started.",
            ),
        ],
        sort_by: &["src_id", "src_offset"],
        bloom: &[],
        no_dictionary: &["raw", "raw_sha256", "message"],
        no_statistics: &["raw", "message"],
    }
}

/// Every table of the lake, for documentation and SQL registration.
pub fn all() -> Vec<TableDef> {
    vec![events(), quarantine()]
}
