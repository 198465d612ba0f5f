//! Detection rules: SQL files with a header of metadata and parameters (`queries/detect/*.sql`).
//!
//! A rule file starts with `--` comment lines:
//!
//! ```text
//! -- id: rage_quit
//! -- title: Rage quits
//! -- catches: accounts that leave games they are losing
//! -- why: leaving a lost game denies the opponent a proper finish ...
//! -- severity: medium
//! -- action: review
//! -- param min_games = 10 : games in the window before judging
//! ```
//!
//! then one SELECT that returns a row per flagged account with at least
//! `account`, `window` and `score`; optionally `severity`, `action`, `refs`
//! (a list of `game:seq` strings), `first_seen`, `last_seen`; every other
//! column is kept as evidence. `${name}` in the SQL is replaced by the
//! parameter's value, and `${window_end}` by the end of the features' windows
//! (the latest `window_end` of `account_features`): a literal time when detection
//! runs, so that the planner prunes what lies outside a rule's window
//! ([`Rule::render_at`]), the subquery that reads it otherwise. `${window_end_date}`
//! is that end's day (UTC), for a rule whose window is whole days: its SQL then stays
//! the same all day, and detection reuses its last result while the files it reads
//! are the same (`detect::evaluate`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One parameter of a rule.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Param {
    pub name: String,
    pub default: String,
    pub doc: String,
}

/// A parsed rule file.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Rule {
    pub id: String,
    pub title: String,
    pub catches: String,
    pub why: String,
    pub severity: String,
    pub action: String,
    /// The behaviour label of the simulator this rule targets (for evaluation), if any.
    pub behaviour: Option<String>,
    pub params: Vec<Param>,
    /// The SQL body (without the header).
    pub sql: String,
    pub path: PathBuf,
}

/// Errors reading rules.
#[derive(Debug, thiserror::Error)]
pub enum RuleError {
    #[error("reading {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {msg}")]
    Header { path: PathBuf, msg: String },
}

impl Rule {
    /// Parses a rule file's text.
    pub fn parse(path: &Path, text: &str) -> Result<Rule, RuleError> {
        let err = |msg: String| RuleError::Header {
            path: path.to_path_buf(),
            msg,
        };
        let mut fields: BTreeMap<String, String> = BTreeMap::new();
        let mut params = Vec::new();
        let mut body = Vec::new();
        let mut in_header = true;
        let mut last_key: Option<String> = None;
        for line in text.lines() {
            let trimmed = line.trim();
            if in_header && trimmed.starts_with("--") {
                let content = trimmed.trim_start_matches('-').trim();
                if let Some(rest) = content.strip_prefix("param ") {
                    let (def, doc) = rest.split_once(':').unwrap_or((rest, ""));
                    let (name, default) = def
                        .split_once('=')
                        .ok_or_else(|| err(format!("parameter without default: {rest}")))?;
                    params.push(Param {
                        name: name.trim().to_string(),
                        default: default.trim().to_string(),
                        doc: doc.trim().to_string(),
                    });
                    last_key = None;
                } else if let Some((k, v)) =
                    content.split_once(':').filter(|(k, _)| !k.contains(' '))
                {
                    fields.insert(k.trim().to_string(), v.trim().to_string());
                    last_key = Some(k.trim().to_string());
                } else if let Some(k) = &last_key {
                    // Continuation line of the previous field.
                    if let Some(v) = fields.get_mut(k) {
                        v.push(' ');
                        v.push_str(content);
                    }
                }
                continue;
            }
            if in_header && trimmed.is_empty() {
                continue;
            }
            in_header = false;
            body.push(line);
        }
        let get = |k: &str| {
            fields
                .get(k)
                .cloned()
                .ok_or_else(|| err(format!("missing `-- {k}:` in the header")))
        };
        Ok(Rule {
            id: get("id")?,
            title: get("title")?,
            catches: get("catches")?,
            why: get("why")?,
            severity: get("severity")?,
            action: get("action")?,
            behaviour: fields.get("behaviour").cloned(),
            params,
            sql: body.join("\n"),
            path: path.to_path_buf(),
        })
    }

    /// The SQL with parameters substituted (`overrides` first, then defaults), and
    /// `${window_end}` the subquery [`WINDOW_END_QUERY`].
    pub fn render(&self, overrides: &BTreeMap<String, String>) -> String {
        self.render_at(overrides, None)
    }

    /// [`Rule::render`], with `${window_end}` the literal time `window_end_ms` (epoch ms) when
    /// given. It must be the value [`WINDOW_END_QUERY`] reads from the same snapshot: the rule
    /// then means the same, and the planner knows its window's bounds, so it prunes the `date`
    /// partitions, files and row groups outside them (a subquery's value is only known when the
    /// query runs, after the files to read were chosen).
    pub fn render_at(
        &self,
        overrides: &BTreeMap<String, String>,
        window_end_ms: Option<i64>,
    ) -> String {
        let mut sql = self.sql.clone();
        for p in &self.params {
            let v = overrides
                .get(&format!("{}.{}", self.id, p.name))
                .unwrap_or(&p.default);
            sql = sql.replace(&format!("${{{}}}", p.name), v);
        }
        let (end, day) = match window_end_ms {
            Some(ms) => (format!("to_timestamp_millis({ms})"), utc_date_literal(ms)),
            None => (
                WINDOW_END_QUERY.to_string(),
                format!("CAST({WINDOW_END_QUERY} AS DATE)"),
            ),
        };
        sql.replace("${window_end_date}", &day)
            .replace("${window_end}", &end)
    }

    /// A digest of the rule text, recorded with its flags.
    pub fn version(&self) -> String {
        use sha2::{Digest, Sha256};
        let d = Sha256::digest(self.sql.as_bytes());
        crate::lake::hex(&d[..6])
    }
}

/// What `${window_end}` stands for in a rule: the end of the features' windows.
pub const WINDOW_END_QUERY: &str = "(SELECT max(window_end) FROM account_features)";

/// The SQL literal of the UTC day of the time `ms` (epoch ms): `DATE '2026-12-05'`, the day
/// `CAST(to_timestamp_millis(ms) AS DATE)` gives.
fn utc_date_literal(ms: i64) -> String {
    format!("DATE '{}'", crate::log::syntax::date_of(ms))
}

/// Where the rules come from: the files shipped inside the binary, or a directory of rule files.
///
/// The CLI's `--rules DIR` gives a directory; without it every command runs the shipped rules,
/// wherever it is started from (a `queries/detect` in the working directory is not looked at).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum RuleSource {
    /// The rules built into the binary ([`BUILTIN`]).
    #[default]
    Builtin,
    /// Every `*.sql` file of this directory ([`load_dir`]).
    Dir(PathBuf),
}

impl RuleSource {
    /// `--rules DIR` when given, else the shipped rules.
    pub fn from_arg(dir: Option<PathBuf>) -> RuleSource {
        dir.map_or(RuleSource::Builtin, RuleSource::Dir)
    }

    /// Parses the rules.
    pub fn load(&self) -> Result<Vec<Rule>, RuleError> {
        match self {
            RuleSource::Builtin => builtin(),
            RuleSource::Dir(dir) => load_dir(dir),
        }
    }
}

impl From<PathBuf> for RuleSource {
    fn from(dir: PathBuf) -> RuleSource {
        RuleSource::Dir(dir)
    }
}

impl From<&Path> for RuleSource {
    fn from(dir: &Path) -> RuleSource {
        RuleSource::Dir(dir.to_path_buf())
    }
}

/// Loads every `*.sql` rule of a directory, sorted by file name.
pub fn load_dir(dir: &Path) -> Result<Vec<Rule>, RuleError> {
    let io = |source| RuleError::Io {
        path: dir.to_path_buf(),
        source,
    };
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(io)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "sql"))
        .collect();
    paths.sort();
    paths
        .iter()
        .map(|p| {
            let text = std::fs::read_to_string(p).map_err(|source| RuleError::Io {
                path: p.clone(),
                source,
            })?;
            Rule::parse(p, &text)
        })
        .collect()
}

/// The rules shipped with the binary (`queries/detect/*.sql` at build time): (path, text).
pub const BUILTIN: [(&str, &str); 10] = [
    (
        "queries/detect/bot_timing.sql",
        include_str!("../../queries/detect/bot_timing.sql"),
    ),
    (
        "queries/detect/chip_dumping.sql",
        include_str!("../../queries/detect/chip_dumping.sql"),
    ),
    (
        "queries/detect/engine_assistance.sql",
        include_str!("../../queries/detect/engine_assistance.sql"),
    ),
    (
        "queries/detect/integrity_involvement.sql",
        include_str!("../../queries/detect/integrity_involvement.sql"),
    ),
    (
        "queries/detect/manipulation_attempts.sql",
        include_str!("../../queries/detect/manipulation_attempts.sql"),
    ),
    (
        "queries/detect/rage_quit.sql",
        include_str!("../../queries/detect/rage_quit.sql"),
    ),
    (
        "queries/detect/shared_device_ring.sql",
        include_str!("../../queries/detect/shared_device_ring.sql"),
    ),
    (
        "queries/detect/sitting.sql",
        include_str!("../../queries/detect/sitting.sql"),
    ),
    (
        "queries/detect/stalling.sql",
        include_str!("../../queries/detect/stalling.sql"),
    ),
    (
        "queries/detect/win_trading.sql",
        include_str!("../../queries/detect/win_trading.sql"),
    ),
];

/// The shipped rules, parsed ([`RuleSource::Builtin`]).
pub fn builtin() -> Result<Vec<Rule>, RuleError> {
    BUILTIN
        .iter()
        .map(|(path, text)| Rule::parse(Path::new(path), text))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_end_day_is_the_utc_date_of_the_time() {
        assert_eq!(utc_date_literal(0), "DATE '1970-01-01'");
        assert_eq!(utc_date_literal(-1), "DATE '1969-12-31'");
        // 2026-12-05T23:59:59.999Z and the next millisecond.
        assert_eq!(utc_date_literal(1_796_515_199_999), "DATE '2026-12-05'");
        assert_eq!(utc_date_literal(1_796_515_200_000), "DATE '2026-12-06'");
        // A leap day.
        assert_eq!(utc_date_literal(951_782_400_000), "DATE '2000-02-29'");
    }

    #[test]
    fn header_and_params_parse() {
        let text = "-- id: x\n-- title: X rule\n-- catches: a\n--   and b\n-- why: c\n-- severity: high\n-- action: review\n-- param n = 3 : minimum\n\nSELECT ${n} AS score\n";
        let r = Rule::parse(Path::new("x.sql"), text).unwrap();
        assert_eq!(r.id, "x");
        assert_eq!(r.catches, "a and b");
        assert_eq!(r.params[0].default, "3");
        assert_eq!(r.render(&BTreeMap::new()).trim(), "SELECT 3 AS score");
        let mut o = BTreeMap::new();
        o.insert("x.n".to_string(), "5".to_string());
        assert_eq!(r.render(&o).trim(), "SELECT 5 AS score");
        assert!(Rule::parse(Path::new("y.sql"), "-- id: y\nSELECT 1").is_err());
        let w = Rule::parse(
            Path::new("w.sql"),
            "-- id: w\n-- title: W\n-- catches: a\n-- why: c\n-- severity: low\n-- action: review\nSELECT ${window_end} AS e",
        )
        .unwrap();
        assert_eq!(
            w.render(&BTreeMap::new()).trim(),
            format!("SELECT {WINDOW_END_QUERY} AS e")
        );
        assert_eq!(
            w.render_at(&BTreeMap::new(), Some(1_795_132_770_882))
                .trim(),
            "SELECT to_timestamp_millis(1795132770882) AS e"
        );
    }

    #[test]
    fn builtin_rules_are_the_files_of_queries_detect() {
        let shipped = builtin().unwrap();
        let on_disk =
            load_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("queries/detect")).unwrap();
        let ids = |v: &[Rule]| {
            v.iter()
                .map(|r| (r.id.clone(), r.sql.clone()))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            ids(&shipped),
            ids(&on_disk),
            "a rule file was added or removed: update BUILTIN"
        );
    }
}
