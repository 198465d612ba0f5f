//! Locating and reading the shared fixtures (`../shared` beside the project).

use std::path::PathBuf;

use serde_json::Value;

/// The `shared/` directory.
pub fn shared_dir() -> PathBuf {
    crate::common::shared()
}

/// Reads a JSON fixture from `shared/fixtures/`.
pub fn json(name: &str) -> Value {
    let path = shared_dir().join("fixtures").join(name);
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("parse {}: {e}", path.display()))
}

/// The lines of `shared/fixtures/server-logs/sample.jsonl`, parsed.
pub fn sample_log() -> Vec<Value> {
    let path = shared_dir().join("fixtures/server-logs/sample.jsonl");
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad line {l}: {e}")))
        .collect()
}
