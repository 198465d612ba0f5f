//! Log cleanup: deletes the commits and checkpoints of Vigie's log and of the tables' Delta logs older than the log retention, down to a checkpoint from which each log is still read.
//!
//! A stream commits a few times a second: without a cleanup, Vigie's log and the Delta log of
//! every table it writes gain a file per commit for ever (86,400 a day each at one commit a second), which every
//! reader starting on the lake lists (DuckDB, polars and Spark list a table's `_delta_log` at each
//! query). The Delta protocol's answer is its metadata cleanup: the commits and checkpoints older
//! than `delta.logRetentionDuration` go, provided a checkpoint after them stays, so that the latest
//! version (and every version since that checkpoint) reads as before; only time travel to an
//! older version is lost. Vigie does the same to both logs, with three more bounds on its own:
//!
//! - nothing of Vigie's log after the Vigie version every Delta log has reached
//!   (`_vigie/delta-synced`): a Delta log behind is rolled forward from Vigie's commits;
//! - nothing from the checkpoint a live reader's version starts from ([`super::Lake::lease`]);
//! - a checkpoint is kept with its commit (a Delta reader's head check wants the commit).
//!
//! Files go in version order, each checkpoint before its commit, so a cleanup killed halfway
//! leaves a few of the oldest versions before the checkpoint it keeps (readers start from that
//! checkpoint; the next cleanup deletes them). A process that read nothing while a cleanup went
//! past its cached state reads the log again from its checkpoint ([`super::Lake::state`]; the
//! Delta heads and metadata it caches likewise), so that no writer takes a deleted number.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::{CHECKPOINT_EVERY, IoContext, Result, Writer, delta};

/// How long the logs' commits are kept by default: as long as the removed files
/// ([`super::DEFAULT_RETENTION_MS`]); a version older than that has usually lost files to the
/// vacuum already (compaction removes them).
pub const DEFAULT_LOG_RETENTION_MS: i64 = super::DEFAULT_RETENTION_MS;

/// The most checkpoint versions looked at below the newest one old enough (a checkpoint is
/// skipped when a writer's commit was not the latest by the time it wrote it).
const CHECKPOINT_SEARCH: u64 = 1_000;

/// What [`Writer::clean_logs`] deleted.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct LogCleanup {
    /// Commits and checkpoints of Vigie's log deleted.
    pub vigie_files: u64,
    /// Commits and checkpoints of the tables' Delta logs deleted.
    pub delta_files: u64,
    /// The oldest Vigie version that can still be read, when this cleanup moved it.
    pub oldest_vigie: Option<u64>,
}

/// A log's commit and checkpoint versions.
type Versions = (BTreeSet<u64>, BTreeSet<u64>);

/// One log's files: its directory, its checkpoint interval and how it names versions.
struct Log {
    dir: PathBuf,
    every: u64,
    commit: fn(&Path, u64) -> PathBuf,
    checkpoint: fn(&Path, u64) -> PathBuf,
    /// The versions of its commits and checkpoints, listed.
    list: fn(&Path) -> Result<Versions>,
}

impl Log {
    fn vigie(root: &Path) -> Log {
        Log {
            dir: root.join("_vigie/log"),
            every: CHECKPOINT_EVERY,
            commit: |d, v| d.join(format!("{v:020}.json")),
            checkpoint: |d, v| d.join(format!("{v:020}.checkpoint.json")),
            list: super::list_log_dir,
        }
    }

    fn delta(root: &Path, table: &str) -> Log {
        Log {
            dir: delta::log_dir(root, table),
            every: delta::CHECKPOINT_INTERVAL,
            commit: delta::commit_file,
            checkpoint: delta::checkpoint_file,
            list: delta::list_versions,
        }
    }

    fn commit(&self, v: u64) -> PathBuf {
        (self.commit)(&self.dir, v)
    }

    fn checkpoint(&self, v: u64) -> PathBuf {
        (self.checkpoint)(&self.dir, v)
    }

    /// The oldest version present (commit or checkpoint), by a listing.
    fn first(&self) -> Result<Option<u64>> {
        let (commits, checkpoints) = (self.list)(&self.dir)?;
        Ok(commits
            .first()
            .into_iter()
            .chain(checkpoints.first())
            .min()
            .copied())
    }

    /// Whether commit `v` was written at or before `cutoff` (a commit already gone counts as
    /// old: only a cleanup deletes commits, and it deletes old ones).
    fn old(&self, v: u64, cutoff: SystemTime) -> bool {
        match fs::metadata(self.commit(v)).and_then(|m| m.modified()) {
            Ok(t) => t <= cutoff,
            Err(_) => true,
        }
    }

    /// The newest checkpoint in `floor..=bound` whose commit is at least as old as `cutoff` and
    /// still present: a binary search on the commits' times (commits are made in time order),
    /// then down to one that was written.
    fn newest_old_checkpoint(&self, floor: u64, bound: u64, cutoff: SystemTime) -> Option<u64> {
        let (mut lo, mut hi) = (floor.div_ceil(self.every).max(1), bound / self.every);
        if lo > hi {
            return None;
        }
        if !self.old(lo * self.every, cutoff) {
            return None;
        }
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            if self.old(mid * self.every, cutoff) {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        let lowest = floor.div_ceil(self.every).max(1);
        (lowest..=lo)
            .rev()
            .take(CHECKPOINT_SEARCH as usize)
            .map(|k| k * self.every)
            .find(|&v| self.checkpoint(v).is_file() && self.commit(v).is_file())
    }

    /// Deletes the versions `from..keep`, oldest first, each checkpoint before its commit; the
    /// number of files deleted.
    fn delete_below(&self, from: u64, keep: u64) -> Result<u64> {
        let mut deleted = 0;
        for v in from..keep {
            for path in [self.checkpoint(v), self.commit(v)] {
                match fs::remove_file(&path) {
                    Ok(()) => deleted += 1,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(e).at(&path),
                }
            }
        }
        Ok(deleted)
    }

    /// Cleans this log below the newest checkpoint at most `bound` whose commit is older than
    /// `cutoff`, starting from `floor` (the oldest version present); the version it now starts
    /// from when it moved, and the files deleted.
    fn clean(&self, floor: u64, bound: u64, cutoff: SystemTime) -> Result<Option<(u64, u64)>> {
        match self.newest_old_checkpoint(floor, bound, cutoff) {
            Some(keep) if keep > floor => Ok(Some((keep, self.delete_below(floor, keep)?))),
            _ => Ok(None),
        }
    }
}

impl Writer<'_> {
    /// Deletes the commits and checkpoints of Vigie's log and of every table's Delta log that are
    /// older than `retain_ms`, keeping in each log the newest checkpoint at least that old and
    /// everything after it (see the module's documentation for Vigie's other bounds). Versions
    /// before that checkpoint can no longer be read (time travel fails with
    /// [`super::LakeError::Expired`]); the latest and every later one read as before.
    pub fn clean_logs(&mut self, retain_ms: i64) -> Result<LogCleanup> {
        let lake = self.lake;
        let root = lake.root.clone();
        let cutoff = SystemTime::now()
            .checked_sub(Duration::from_millis(u64::try_from(retain_ms).unwrap_or(0)))
            .unwrap_or(SystemTime::UNIX_EPOCH);
        let mut report = LogCleanup::default();
        let state = lake.state()?;
        let leased = lake.leased_versions()?;
        if let (Some(hint), Some(leased)) = (delta::synced_hint(&root), leased) {
            let bound = hint
                .min(state.version)
                .min(leased.first().copied().unwrap_or(u64::MAX));
            let log = Log::vigie(&root);
            if let Some(floor) = self.floor("", &log)?
                && let Some((keep, n)) = log.clean(floor, bound, cutoff)?
            {
                report.vigie_files += n;
                report.oldest_vigie = Some(keep);
                self.set_floor("", keep);
            }
        }
        let mut tables: BTreeSet<String> = state.files.values().map(|f| f.table.clone()).collect();
        tables.extend(lake.catalogue.keys().cloned());
        for t in tables {
            let log = Log::delta(&root, &t);
            let Some(floor) = self.floor(&t, &log)? else {
                continue;
            };
            let head = match lake
                .delta_heads
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(&t)
            {
                Some(h) => h.delta,
                None => match delta::head(&root, &t)? {
                    Some(h) => h.delta,
                    None => continue,
                },
            };
            if let Some((keep, n)) = log.clean(floor, head, cutoff)? {
                report.delta_files += n;
                self.set_floor(&t, keep);
            }
        }
        if report.vigie_files + report.delta_files > 0 {
            tracing::debug!(
                vigie = report.vigie_files,
                delta = report.delta_files,
                oldest_vigie = ?report.oldest_vigie,
                "log cleanup"
            );
        }
        Ok(report)
    }

    /// The oldest version of `log` (`key` in the lake's floors): known from this process's last
    /// cleanup, else listed once.
    fn floor(&self, key: &str, log: &Log) -> Result<Option<u64>> {
        let known = self
            .lake
            .log_floors
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(key)
            .copied();
        match known {
            Some(f) => Ok(Some(f)),
            None => {
                let first = log.first()?;
                if let Some(f) = first {
                    self.set_floor(key, f);
                }
                Ok(first)
            }
        }
    }

    fn set_floor(&self, key: &str, v: u64) {
        self.lake
            .log_floors
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key.to_owned(), v);
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Lake, LakeError};
    use super::*;

    /// A lake of `n` commits, each setting stage `s` to its index.
    fn lake_of(dir: &Path, n: u64) -> Lake {
        let lake = Lake::open(dir).unwrap();
        let mut w = lake.writer().unwrap();
        for i in 0..n {
            let mut txn = w.begin("t").unwrap();
            txn.set_stage("s", serde_json::json!(i));
            txn.commit(serde_json::json!({})).unwrap();
        }
        drop(w);
        lake
    }

    fn present(dir: &Path, v: u64) -> (bool, bool) {
        let log = Log::vigie(dir);
        (log.commit(v).exists(), log.checkpoint(v).exists())
    }

    #[test]
    fn the_vigie_log_is_cleaned_down_to_its_newest_old_checkpoint() {
        let dir = tempfile::tempdir().unwrap();
        let lake = lake_of(dir.path(), 100);
        let root = lake.root().to_path_buf();
        // Nothing is an hour old.
        let r = lake.writer().unwrap().clean_logs(3_600_000).unwrap();
        assert_eq!(r, LogCleanup::default());
        assert_eq!(present(&root, 1), (true, false));
        // Everything is old: the newest checkpoint (96) stays with every later commit.
        let r = lake.writer().unwrap().clean_logs(0).unwrap();
        assert_eq!(r.oldest_vigie, Some(96));
        assert_eq!(
            r.vigie_files,
            95 + 2,
            "commits 1-95 and checkpoints 32 and 64"
        );
        assert_eq!(present(&root, 95), (false, false));
        assert_eq!(present(&root, 64), (false, false));
        assert_eq!(present(&root, 96), (true, true));
        // A new process reads the same latest state, and the versions from 96 on.
        let fresh = Lake::open(&root).unwrap();
        let s = fresh.state().unwrap();
        assert_eq!((s.version, &s.stages["s"]), (100, &serde_json::json!(99)));
        assert_eq!(
            fresh.state_at(97).unwrap().stages["s"],
            serde_json::json!(96)
        );
        match fresh.state_at(50) {
            Err(LakeError::Expired { oldest, what }) => {
                assert_eq!((oldest, what.as_str()), (96, "version 50"));
            }
            other => panic!("version 50 after the cleanup: {other:?}"),
        }
        assert!(matches!(
            fresh.version_at(0),
            Err(LakeError::Expired { oldest: 96, .. })
        ));
        assert_eq!(fresh.version_at(i64::MAX).unwrap(), 100);
        // Writers go on; a second cleanup has nothing older than the same checkpoint.
        let mut w = fresh.writer().unwrap();
        let mut txn = w.begin("t").unwrap();
        txn.set_stage("s", serde_json::json!("next"));
        assert_eq!(txn.commit(serde_json::json!({})).unwrap(), 101);
        assert_eq!(w.clean_logs(0).unwrap(), LogCleanup::default());
    }

    #[test]
    fn a_live_readers_version_and_the_delta_logs_progress_bound_the_cleanup() {
        let dir = tempfile::tempdir().unwrap();
        let lake = lake_of(dir.path(), 100);
        let root = lake.root().to_path_buf();
        // Every Delta log is known to have reached version 40 only (written after the writer's
        // start, whose recovery syncs the logs and writes the hint).
        let mut w = lake.writer().unwrap();
        fs::write(root.join("_vigie/delta-synced"), "40").unwrap();
        let r = w.clean_logs(0).unwrap();
        assert_eq!((r.oldest_vigie, r.vigie_files), (Some(32), 31));
        fs::write(root.join("_vigie/delta-synced"), "100").unwrap();
        drop(w);
        // A reader holds version 70: the checkpoint it starts from (64) stays.
        let reader = Lake::open(&root).unwrap();
        let lease = reader.lease(70).unwrap();
        let r = lake.writer().unwrap().clean_logs(0).unwrap();
        assert_eq!(r.oldest_vigie, Some(64));
        assert_eq!(
            reader.state_at(70).unwrap().stages["s"],
            serde_json::json!(69)
        );
        drop(lease);
        assert_eq!(
            lake.writer().unwrap().clean_logs(0).unwrap().oldest_vigie,
            Some(96)
        );
        // Without the hint nothing of Vigie's log goes.
        let dir = tempfile::tempdir().unwrap();
        let lake = lake_of(dir.path(), 40);
        let mut w = lake.writer().unwrap();
        fs::remove_file(lake.root().join("_vigie/delta-synced")).unwrap();
        assert_eq!(w.clean_logs(0).unwrap().vigie_files, 0);
    }

    /// A process that read nothing while another cleaned past its cached version (its commit
    /// and the next one gone) reads the log again, and its next commit comes after the latest
    /// (it stayed on its version, and would have linked its commit under a deleted number).
    #[test]
    fn a_process_left_behind_by_a_cleanup_reads_the_log_again() {
        let dir = tempfile::tempdir().unwrap();
        // One process read the lake while it was empty, another at version 40.
        let early = Lake::open(dir.path()).unwrap();
        assert_eq!(early.state().unwrap().version, 0);
        let idle = lake_of(dir.path(), 40);
        assert_eq!(idle.state().unwrap().version, 40);
        let other = Lake::open(dir.path()).unwrap();
        let mut w = other.writer().unwrap();
        for i in 0..60 {
            let mut txn = w.begin("t").unwrap();
            txn.set_stage("s", serde_json::json!(100 + i));
            txn.commit(serde_json::json!({})).unwrap();
        }
        assert_eq!(w.clean_logs(0).unwrap().oldest_vigie, Some(96));
        drop(w);
        assert_eq!(present(idle.root(), 41), (false, false));
        assert_eq!(early.state().unwrap().version, 100);
        let s = idle.state().unwrap();
        assert_eq!((s.version, &s.stages["s"]), (100, &serde_json::json!(159)));
        let mut w = idle.writer().unwrap();
        let mut txn = w.begin("t").unwrap();
        txn.set_stage("s", serde_json::json!("after"));
        assert_eq!(txn.commit(serde_json::json!({})).unwrap(), 101);
        assert_eq!(present(idle.root(), 41), (false, false));
    }

    #[test]
    fn a_log_whose_start_is_gone_is_corrupt_not_empty() {
        let dir = tempfile::tempdir().unwrap();
        let lake = lake_of(dir.path(), 5);
        fs::remove_file(Log::vigie(lake.root()).commit(1)).unwrap();
        let fresh = Lake::open(lake.root()).unwrap();
        assert!(
            matches!(fresh.state(), Err(LakeError::Corrupt { .. })),
            "no checkpoint and no commit 1: the state cannot be read"
        );
    }
}
