//! The server move log, format v1 (`../shared/spec/log-format.md`): typed events, strict validation, and writing.
//!
//! [`parse_line`] turns one line (without its newline) into an [`Event`] or a
//! [`Reject`] whose [`Reject::code`] is stable and whose message names the
//! field at stake. Validation covers the envelope, the required fields of
//! every type, and value domains (ids, timestamps, cards, squares, enums).
//! What needs the rest of the game to judge (whose turn, legal moves, chain
//! hashes, seeds) is the replay's job, not the parser's.

pub mod event;
pub mod parse;
mod scan;
pub mod syntax;
pub mod write;

pub use event::*;
pub use parse::{MAX_LINE_BYTES, Parsed, Reject, parse_line, parse_line_detail, parse_str_detail};
pub use write::to_line;
