//! Compaction: merge a partition's small files into one, in a commit of its own, so that streaming does not leave thousands of files.
//!
//! A reader takes its file list from one snapshot: before the commit it reads
//! the small files, after it the merged one, never both. The replaced files
//! become tombstones and stay on disk for their grace period, so a reader of
//! an older snapshot is not cut off. A merged `events` file records the
//! latest version of the data it holds (`data_added`), so the replay does
//! not take its rows for new ones; only `events` files the replay has already
//! read are merged. Open files of derived tables (rewritten by every replay)
//! are left alone.

use std::collections::BTreeMap;

use serde::Serialize;

use super::StreamError;
use crate::lake::parquet::{read_file, write_sorted};
use crate::lake::tables::{self, TableDef};
use crate::lake::{FileEntry, Lake};

/// A file is small below this size.
pub const SMALL_BYTES: u64 = 16 << 20;
/// A merged file stays below about this size. Its inputs are held in memory
/// while it is written (events decompress to several times their size), so
/// this bounds the streaming job's peak memory.
pub const MERGED_BYTES: u64 = 32 << 20;

/// What a compaction did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CompactReport {
    pub version: Option<u64>,
    pub files_removed: u64,
    pub files_written: u64,
    pub rows: u64,
}

fn err(e: impl std::fmt::Display) -> StreamError {
    StreamError::Compact(e.to_string())
}

/// Input bytes one streaming compaction commit merges at most (beyond its first group): it
/// runs on the replay thread, between two detection passes, so its length is added to the flag
/// latency of everything that arrives meanwhile. A slice of one merged file's worth (about half
/// a second on a small machine) keeps that pause short; the stream calls it every few commits,
/// more often than it takes to fill one, so a backlog (a stream started on a batch-ingested lake
/// of thousands of small files) still drains.
pub const PASS_BYTES: u64 = MERGED_BYTES;

/// Merges, per table and partition, runs of at least `min_files` small files.
///
/// With `budget`, one commit merges the groups of the newest partitions first and stops
/// once their input passes `budget` bytes (it always merges one group); the rest waits for
/// the next call. Without, it merges everything eligible.
pub fn compact(
    lake: &Lake,
    min_files: usize,
    budget: Option<u64>,
) -> Result<CompactReport, StreamError> {
    let min_files = min_files.max(2);
    let state = lake.state()?;
    let replayed = state
        .stage::<crate::replay::run::ReplayStage>()?
        .map_or(0, |s| s.version);
    let mut defs = vec![tables::events(), tables::quarantine()];
    defs.extend(crate::replay::run::derived_table_defs());
    // Groups of files to merge: (table, partition) -> files.
    let mut groups: Vec<(TableDef, Vec<FileEntry>)> = Vec::new();
    for def in defs {
        let mut by_part: BTreeMap<Option<String>, Vec<FileEntry>> = BTreeMap::new();
        for f in state.table_files(def.name) {
            let eligible = f.bytes < SMALL_BYTES
                && !f.open
                && (def.name != "events" || f.data_version() <= replayed);
            if eligible {
                by_part
                    .entry(f.partition.clone())
                    .or_default()
                    .push(f.clone());
            }
        }
        // Derived files are small and every detection run opens all of them: merge them sooner.
        let min_files = if def.name == "events" || def.name == "quarantine" {
            min_files
        } else {
            (min_files / 4).max(2)
        };
        // Only the newest partition still fills up; an older one keeps what it has (a day's
        // games started before midnight), so its small files are merged as soon as there are two.
        let newest = state
            .table_files(def.name)
            .filter_map(|f| f.partition.clone())
            .max();
        for (part, mut files) in by_part {
            let min_files = if part.is_some() && part < newest {
                2
            } else {
                min_files
            };
            if files.len() < min_files {
                continue;
            }
            files.sort_by_key(|f| f.added);
            let mut run = Vec::new();
            let mut bytes = 0;
            for f in files {
                if bytes + f.bytes > MERGED_BYTES && run.len() >= 2 {
                    groups.push((def.clone(), std::mem::take(&mut run)));
                    bytes = 0;
                }
                bytes += f.bytes;
                run.push(f);
            }
            if run.len() >= 2 {
                groups.push((def.clone(), run));
            }
        }
    }
    let mut report = CompactReport::default();
    if groups.is_empty() {
        return Ok(report);
    }
    if let Some(budget) = budget {
        // Newest partitions first: they are the ones still read and written.
        groups.sort_by(|a, b| b.1[0].partition.cmp(&a.1[0].partition));
        let mut bytes = 0u64;
        let mut take = 0;
        for (_, files) in &groups {
            let size: u64 = files.iter().map(|f| f.bytes).sum();
            if take > 0 && bytes + size > budget {
                break;
            }
            bytes += size;
            take += 1;
        }
        groups.truncate(take);
    }
    let mut writer = lake.writer()?;
    let mut txn = writer.begin("compact")?;
    let root = lake.root();
    for (def, files) in groups {
        let schema = def.schema();
        let mut batches = Vec::new();
        for f in &files {
            let path = crate::lake::resolve(root, &f.path);
            batches.extend(read_file(&path, None)?);
        }
        let file = txn.new_file(def.name, files[0].partition.as_deref())?;
        let mut meta = write_sorted(&file.pending, &def, schema, &batches)?;
        drop(batches);
        meta.data_added = files.iter().map(FileEntry::data_version).max();
        report.rows += meta.rows;
        let expected: u64 = files.iter().map(|f| f.rows).sum();
        if meta.rows != expected {
            txn.abort();
            return Err(err(format!(
                "{}: merged {} rows from files holding {expected}",
                def.name, meta.rows
            )));
        }
        txn.add_file_meta(file, meta);
        for f in &files {
            txn.remove_file(&f.path);
        }
        report.files_removed += files.len() as u64;
        report.files_written += 1;
    }
    let summary = serde_json::to_value(&report).unwrap_or_default();
    report.version = Some(txn.commit(summary)?);
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_files_merge_into_one_with_the_same_rows() {
        let dir = tempfile::tempdir().unwrap();
        let logs = dir.path().join("logs");
        std::fs::create_dir_all(&logs).unwrap();
        let sample = crate::stream::tests::sample_text();
        let lines: Vec<&str> = sample.lines().collect();
        let lake = Lake::open(dir.path().join("lake")).unwrap();
        let file = logs.join("s.jsonl");
        // Six commits of a growing file: six small events files in each partition they touch.
        let chunk = lines.len().div_ceil(6);
        let mut written = String::new();
        for part in lines.chunks(chunk) {
            for l in part {
                written.push_str(l);
                written.push('\n');
            }
            std::fs::write(&file, &written).unwrap();
            super::super::commit_batch(&lake, std::slice::from_ref(&file)).unwrap();
        }
        let before = lake.state().unwrap();
        let events_before = before.table_rows("events");
        let files_before = before.table_files("events").count();
        assert!(files_before >= 6, "{files_before}");
        // Not yet replayed: events files are not merged.
        let r = compact(&lake, 3, None).unwrap();
        assert_eq!(r.files_removed, 0);
        crate::replay::run::run(
            &lake,
            &crate::replay::run::ReplayOptions {
                threads: 1,
                progress: false,
            },
        )
        .unwrap();
        // A budget of one byte: one group, of the newest partition that has one.
        let before = lake.state().unwrap();
        let first = compact(&lake, 3, Some(1)).unwrap();
        assert_eq!(first.files_written, 1, "{first:?}");
        let mid = lake.state().unwrap();
        let merged: Vec<&FileEntry> = before
            .files
            .values()
            .filter(|f| !mid.files.contains_key(&f.path))
            .collect();
        assert!(merged.len() >= 2, "{merged:?}");
        let part = &merged[0].partition;
        assert!(merged.iter().all(|f| &f.partition == part));
        // The rest goes in the unbounded pass, none of it newer.
        let r = compact(&lake, 3, None).unwrap();
        assert!(r.files_written >= 1, "{r:?}");
        assert!(first.files_removed + r.files_removed >= 6, "{r:?}");
        let after = lake.state().unwrap();
        for f in mid
            .files
            .values()
            .filter(|f| !after.files.contains_key(&f.path))
        {
            assert!(
                f.partition <= *part,
                "{:?} merged after {part:?}",
                f.partition
            );
        }
        assert_eq!(after.table_rows("events"), events_before);
        assert!(after.table_files("events").count() < files_before);
        // Partitions before the newest one are down to one file (or none) per table.
        for def in crate::replay::run::derived_table_defs()
            .into_iter()
            .chain([tables::events()])
        {
            let mut by_part: BTreeMap<Option<String>, usize> = BTreeMap::new();
            for f in after.table_files(def.name).filter(|f| !f.open) {
                *by_part.entry(f.partition.clone()).or_default() += 1;
            }
            let newest = by_part.keys().max().cloned();
            for (part, n) in by_part {
                assert!(
                    Some(&part) == newest.as_ref() || n == 1,
                    "{} {part:?}: {n} files",
                    def.name
                );
            }
        }
        // The merged rows are not new to the replay: it has nothing to do.
        let again = crate::replay::run::run(
            &lake,
            &crate::replay::run::ReplayOptions {
                threads: 1,
                progress: false,
            },
        )
        .unwrap();
        assert_eq!(again.games, 0, "{again:?}");
    }
}
