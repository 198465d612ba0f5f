//! The lake's commit log: commits (deltas), checkpoints (whole states) and the state they add up to.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A data file of a table, as recorded by the commit that added it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEntry {
    /// Table name (`events`, `quarantine`, ...).
    pub table: String,
    /// Path relative to the lake root, `/`-separated, e.g. `events/date=2026-11-20/part-….parquet`.
    pub path: String,
    /// The Hive partition, e.g. `date=2026-11-20`, when the table is partitioned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<String>,
    pub rows: u64,
    pub bytes: u64,
    /// Version of the commit that added the file (set by the commit itself).
    #[serde(default)]
    pub added: u64,
    /// Smallest and largest value of the table's first sort key (e.g. `game`) in the file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_key: Option<String>,
    /// Latest event timestamp in the file (epoch ms), for tables that have one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_ts: Option<i64>,
    /// Rows whose `ts` is null, for tables that have one (absent in entries written before it was
    /// recorded: then unknown). A reader that prunes files on [`FileEntry::max_ts`] keeps a file
    /// that may hold rows without a time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ts_nulls: Option<u64>,
    /// Derived tables: the file holds rows of games that are still open (rewritten as they grow).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub open: bool,
    /// A compacted file: the latest `added` of the files it replaced. Its rows are not new to the
    /// stages that had read those files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_added: Option<u64>,
}

impl FileEntry {
    /// Whether the file may hold a row with `ts >= since_ms` (its latest `ts` is at or after it,
    /// or was not recorded) or, with `with_nulls`, a row without a time (a count of them that is
    /// not 0, or was not recorded): a reader of rows filtered on `ts >= since_ms` (or
    /// `ts >= since_ms OR ts IS NULL`) can leave out the files for which this is false.
    pub fn may_hold_ts_since(&self, since_ms: i64, with_nulls: bool) -> bool {
        self.max_ts.is_none_or(|m| m >= since_ms)
            || (with_nulls && self.ts_nulls.is_none_or(|n| n > 0))
    }

    /// The version from which this file's rows are in the lake (older than `added` when compacted).
    pub fn data_version(&self) -> u64 {
        self.data_added.unwrap_or(self.added)
    }
}

/// What a writer knows about a data file it wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileMeta {
    pub rows: u64,
    pub bytes: u64,
    pub min_key: Option<String>,
    pub max_key: Option<String>,
    pub max_ts: Option<i64>,
    pub ts_nulls: Option<u64>,
    pub open: bool,
    /// Set by compaction: see [`FileEntry::data_added`].
    pub data_added: Option<u64>,
}

/// How far a source file has been ingested. The checkpoint of batch and streaming ingest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceState {
    /// Stable id of the source (its fingerprint, disambiguated when two files share one).
    pub id: String,
    /// SHA-256 (hex) of the file's first line, decompressed, newline included.
    pub fingerprint: String,
    /// The path it was last seen at.
    pub path: String,
    /// Bytes of decompressed content ingested (every complete line before this offset).
    pub offset: u64,
    /// Complete lines before `offset`.
    pub lines: u64,
    /// SHA-256 of the first `min(offset, 64 KiB)` bytes: the content we resume after must not have changed.
    pub head: String,
    /// SHA-256 of the `min(offset, 64 KiB)` bytes before `offset`.
    pub tail: String,
    /// Whether the file was a compressed archive read to its end (nothing more can come).
    #[serde(default)]
    pub sealed: bool,
    /// Where the source was sealed before a longer copy of it was read on (the latest
    /// [`SEALED_KEPT`]): an archive holding exactly that content is known and holds nothing new.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sealed_before: Vec<SealedAt>,
}

/// Sealed checkpoints kept per source.
pub const SEALED_KEPT: usize = 16;

/// A checkpoint at which a source was sealed: `offset`, `head` and `tail` as in [`SourceState`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SealedAt {
    pub offset: u64,
    pub head: String,
    pub tail: String,
}

/// One commit: what it adds, removes, and the checkpoints it moves, all or nothing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Commit {
    pub version: u64,
    /// Which writer made it (random id) and for what.
    pub writer: String,
    pub op: String,
    /// Wall-clock time of the commit, epoch ms (informational; never used to read data).
    pub time_ms: i64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub add: Vec<FileEntry>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub remove: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<SourceState>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub stages: BTreeMap<String, serde_json::Value>,
    /// Tombstones whose files are gone from disk and can be forgotten.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub forget: Vec<String>,
    /// Counts for people reading the log.
    #[serde(default)]
    pub summary: serde_json::Value,
}

/// The committed state of the lake at one version.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct State {
    pub version: u64,
    /// Live data files by path.
    pub files: BTreeMap<String, FileEntry>,
    /// Ingest checkpoints by source id.
    pub sources: BTreeMap<String, SourceState>,
    /// Checkpoints of the derived stages (replay, detection, ...), by stage name.
    pub stages: BTreeMap<String, serde_json::Value>,
    /// Removed files still on disk (readers of older snapshots may use them), with the removal time.
    pub tombstones: BTreeMap<String, i64>,
}

impl State {
    /// Applies one commit (which must be the next version).
    pub fn apply(&mut self, c: &Commit) {
        self.version = c.version;
        for path in &c.remove {
            if self.files.remove(path).is_some() {
                self.tombstones.insert(path.clone(), c.time_ms);
            }
        }
        for f in &c.add {
            self.files.insert(f.path.clone(), f.clone());
        }
        for s in &c.sources {
            self.sources.insert(s.id.clone(), s.clone());
        }
        for (k, v) in &c.stages {
            self.stages.insert(k.clone(), v.clone());
        }
        for path in &c.forget {
            self.tombstones.remove(path);
        }
    }

    /// Live files of one table, in path order.
    pub fn table_files(&self, table: &str) -> impl Iterator<Item = &FileEntry> {
        self.files.values().filter(move |f| f.table == table)
    }

    /// Total rows of one table.
    pub fn table_rows(&self, table: &str) -> u64 {
        self.table_files(table).map(|f| f.rows).sum()
    }

    /// The lake's clock (epoch ms, 0 when empty): the latest event time, where detection's
    /// windows end and past which a silent game never ended. A stretch of days with events that
    /// starts more than [`STRAY_GAP_DAYS`] days after the previous day with any, and holds in all
    /// under 1 % of the busiest day's events, is a stray clock, not the platform's time, and is
    /// passed over: one line stamped in the year 9999 used to end every window there (no flag on
    /// anyone) and close every game in progress as `never_ended`.
    pub fn latest_event_ms(&self) -> i64 {
        // Per day (as ingest partitions events by day): events, and the latest time.
        let mut days: BTreeMap<i64, (u64, i64)> = BTreeMap::new();
        for f in self.table_files("events") {
            if let Some(ts) = f.max_ts {
                let day = i64::from(crate::log::syntax::epoch_day(ts));
                let d = days.entry(day).or_insert((0, ts));
                d.0 += f.rows;
                d.1 = d.1.max(ts);
            }
        }
        let busiest = days.values().map(|d| d.0).max().unwrap_or(0);
        let days: Vec<(i64, u64, i64)> = days
            .into_iter()
            .rev()
            .map(|(d, (n, ts))| (d, n, ts))
            .collect();
        let mut first = 0;
        while first < days.len() {
            // The stretch of days from `first` back, each at most the gap after the one before.
            let mut last = first;
            let mut rows = days[first].1;
            while last + 1 < days.len() && days[last].0 - days[last + 1].0 <= STRAY_GAP_DAYS {
                last += 1;
                rows += days[last].1;
            }
            // An earlier day exists, more than the gap before the stretch.
            let isolated = last + 1 < days.len();
            if isolated && rows.saturating_mul(100) < busiest {
                first = last + 1;
                continue;
            }
            return days[first].2;
        }
        0
    }
}

/// Days between two days with events beyond which the later, small stretch of days is taken for a
/// stray clock ([`State::latest_event_ms`]).
pub const STRAY_GAP_DAYS: i64 = 2;

/// A derived stage's checkpoint, stored in the commit log under [`Stage::KEY`] and read back typed:
/// a value that does not parse is an error naming the stage, never a default.
pub trait Stage: Serialize + serde::de::DeserializeOwned {
    /// The name in the commit log.
    const KEY: &'static str;
}

impl State {
    /// The checkpoint of stage `T`, if it ran.
    pub fn stage<T: Stage>(&self) -> Result<Option<T>, super::LakeError> {
        self.stages
            .get(T::KEY)
            .map(|v| {
                serde_json::from_value(v.clone()).map_err(|e| {
                    super::LakeError::Stage(StageError {
                        stage: T::KEY,
                        msg: e.to_string(),
                        value: v.to_string(),
                    })
                })
            })
            .transpose()
    }
}

/// A stage checkpoint that is not what its stage writes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the checkpoint of stage {stage} in the commit log is not readable ({msg}): {value}")]
pub struct StageError {
    pub stage: &'static str,
    pub msg: String,
    pub value: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Probe {
        version: u64,
    }

    impl Stage for Probe {
        const KEY: &'static str = "probe";
    }

    #[test]
    fn a_stage_checkpoint_reads_back_typed_or_names_the_stage() {
        let mut state = State::default();
        assert!(matches!(state.stage::<Probe>(), Ok(None)));
        state
            .stages
            .insert("probe".into(), serde_json::json!({ "version": 7 }));
        assert!(matches!(
            state.stage::<Probe>(),
            Ok(Some(Probe { version: 7 }))
        ));
        state
            .stages
            .insert("probe".into(), serde_json::json!({ "version": "seven" }));
        let Err(super::super::LakeError::Stage(err)) = state.stage::<Probe>() else {
            panic!("a stage error");
        };
        assert_eq!(err.stage, "probe");
        assert!(err.to_string().contains("seven"), "{err}");
    }

    /// A state whose `events` table has one file per (day, rows) pair, each ending at noon.
    fn events_days(days: &[(i64, u64)]) -> State {
        let mut state = State::default();
        for (i, &(day, rows)) in days.iter().enumerate() {
            let path = format!("events/{i}.parquet");
            state.files.insert(
                path.clone(),
                FileEntry {
                    table: "events".into(),
                    path,
                    partition: None,
                    rows,
                    bytes: 1,
                    added: 1,
                    min_key: None,
                    max_key: None,
                    max_ts: Some(day * 86_400_000 + 43_200_000),
                    ts_nulls: Some(0),
                    open: false,
                    data_added: None,
                },
            );
        }
        state
    }

    #[test]
    fn the_lake_clock_passes_over_a_stray_day_far_after_the_rest() {
        let noon = |day: i64| day * 86_400_000 + 43_200_000;
        assert_eq!(State::default().latest_event_ms(), 0);
        let month: Vec<(i64, u64)> = (20_000..20_030).map(|d| (d, 5_000)).collect();
        assert_eq!(events_days(&month).latest_event_ms(), noon(20_029));
        // One line stamped years later: passed over; and one years before changes nothing.
        let mut stray = month.clone();
        stray.extend([(2_900_000, 1), (10, 1)]);
        assert_eq!(events_days(&stray).latest_event_ms(), noon(20_029));
        // The first minutes of the next day, or of a day after one without events: the clock.
        for next in [20_030, 20_031] {
            let mut young = month.clone();
            young.push((next, 3));
            assert_eq!(events_days(&young).latest_event_ms(), noon(next));
        }
        // Stray lines on several days close together: the stretch is passed over as a whole.
        let mut strays = month.clone();
        strays.extend([(2_900_000, 1), (2_900_001, 2), (2_900_003, 1)]);
        assert_eq!(events_days(&strays).latest_event_ms(), noon(20_029));
        // After two days without events, a small day is a stray clock, a full one is not.
        let mut small = month.clone();
        small.push((20_032, 49));
        assert_eq!(events_days(&small).latest_event_ms(), noon(20_029));
        let mut full = month.clone();
        full.push((20_032, 50));
        assert_eq!(events_days(&full).latest_event_ms(), noon(20_032));
    }
}
