//! A bounded cache of decoded lake files for the streaming job's scoped features runs.
//!
//! A scoped run ([`super::run_scoped`]) reads the whole 30-day window of `game_players`, the
//! window's departures and findings, and the previous feature tables, at every pass of the
//! streaming job; most of those files are the ones it read a second before. A lake file never
//! changes once written (a new version of a table is a new file), so its decoded frame can be kept
//! and used again as long as the file is live. The cache holds at most its budget of decoded
//! frames (polars' estimate of their size). It evicts only frames no recent call asked for (files
//! compacted away, a window that moved on), and drops them at once rather than when room is needed,
//! so that the memory it holds follows the live window instead of filling the budget with dead
//! files: when the window's live files outgrow the budget, the
//! frames it holds stay and the other files are scanned from disk as before, so a cyclic read of
//! more than the budget never turns every read into a miss. A file too large to be worth keeping,
//! or read when this call has already read its share, is scanned from disk too. The frames are the ones the lazy scan reads (the same reader, the same types), so a run
//! with a warm cache computes exactly what a cold one does.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

use polars::prelude::*;

/// The decoded frames the process keeps, at most (384 MiB: the 30-day window of `game_players`,
/// the departures and both feature tables of a platform of 5,000 games a day take about 330 MiB
/// as polars counts them).
pub const BUDGET_BYTES: usize = 384 << 20;

/// A frame used by one of the last this many calls is never evicted (a scoped run makes four).
const KEEP_CALLS: u64 = 16;

/// A file of the lake: its table, its absolute final path and its size on disk (a path is never
/// reused, the size makes a mistaken reuse a miss rather than wrong data).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FileKey {
    pub table: String,
    pub path: PathBuf,
    pub bytes: u64,
}

struct Entry {
    frame: DataFrame,
    size: usize,
    last_used: u64,
}

/// Decoded lake files, least recently used evicted first, within a budget of bytes.
pub struct FrameCache {
    budget: usize,
    used: usize,
    tick: u64,
    entries: HashMap<FileKey, Entry>,
    hits: u64,
    misses: u64,
}

/// What a [`FrameCache::frames`] call gives: the frames it had or read, in the order of the
/// files asked for, and the files left for a scan from disk.
pub struct Frames {
    pub frames: Vec<DataFrame>,
    pub on_disk: Vec<PathBuf>,
}

impl FrameCache {
    pub fn new(budget: usize) -> FrameCache {
        FrameCache {
            budget,
            used: 0,
            tick: 0,
            entries: HashMap::new(),
            hits: 0,
            misses: 0,
        }
    }

    /// Bytes of decoded frames held.
    pub fn used(&self) -> usize {
        self.used
    }

    /// Files found in the cache and files read into it, since the process started.
    pub fn hits_and_misses(&self) -> (u64, u64) {
        (self.hits, self.misses)
    }

    /// The largest file (on disk) read into the cache: a frame decodes to many times its
    /// compressed size, and one file must never take a large share of the budget.
    fn max_file_bytes(&self) -> u64 {
        (self.budget / 64) as u64
    }

    /// The frames of `files` (each with the path to read it from, which may be its pending name):
    /// those in the cache, then those read now while this call has read less than half the
    /// budget; the rest are left to be scanned from disk.
    pub fn frames(&mut self, files: &[(FileKey, PathBuf)]) -> PolarsResult<Frames> {
        self.tick += 1;
        let mut out = Frames {
            frames: Vec::with_capacity(files.len()),
            on_disk: Vec::new(),
        };
        let mut read_now = 0usize;
        for (key, path) in files {
            if let Some(e) = self.entries.get_mut(key) {
                e.last_used = self.tick;
                self.hits += 1;
                out.frames.push(e.frame.clone());
                continue;
            }
            if key.bytes > self.max_file_bytes() || read_now >= self.budget / 2 || !self.has_room()
            {
                out.on_disk.push(path.clone());
                continue;
            }
            let args = ScanArgsParquet {
                glob: false,
                ..ScanArgsParquet::default()
            };
            let one = std::iter::once(PlRefPath::from(path.to_string_lossy().as_ref()));
            let frame = LazyFrame::scan_parquet_files(one.collect(), args)?.collect()?;
            self.misses += 1;
            read_now += frame.estimated_size();
            self.insert(key.clone(), frame.clone());
            out.frames.push(frame);
        }
        self.drop_stale();
        Ok(out)
    }

    /// Drops the frames no call asked for lately: files compacted away or out of the window.
    fn drop_stale(&mut self) {
        let tick = self.tick;
        let mut freed = 0;
        self.entries.retain(|_, e| {
            let keep = e.last_used + KEEP_CALLS > tick;
            if !keep {
                freed += e.size;
            }
            keep
        });
        self.used -= freed;
    }

    /// Keeps `frame`, the whole new content of `key.table` (a table rewritten at each run, like
    /// the feature tables), in place of the frames of that table's older files.
    pub fn replace_table(&mut self, key: FileKey, frame: DataFrame) -> bool {
        let old: Vec<FileKey> = self
            .entries
            .keys()
            .filter(|k| k.table == key.table)
            .cloned()
            .collect();
        for k in old {
            if let Some(e) = self.entries.remove(&k) {
                self.used -= e.size;
            }
        }
        self.insert(key, frame)
    }

    /// Whether a frame read now could be kept: the budget is not spent, or a frame may be evicted.
    fn has_room(&self) -> bool {
        self.used < self.budget || self.entries.values().any(|e| self.stale(e))
    }

    /// A frame no call asked for lately.
    fn stale(&self, e: &Entry) -> bool {
        e.last_used + KEEP_CALLS <= self.tick
    }

    /// Keeps `frame` as the decoded content of `key` (a file just written, or just read) when it
    /// fits, evicting the least recently used of the stale frames; never evicts a frame one of
    /// the last [`KEEP_CALLS`] calls used.
    pub fn insert(&mut self, key: FileKey, frame: DataFrame) -> bool {
        let size = frame.estimated_size();
        if size > self.budget / 4 {
            return false;
        }
        if let Some(old) = self.entries.remove(&key) {
            self.used -= old.size;
        }
        while self.used + size > self.budget {
            let oldest = self
                .entries
                .iter()
                .filter(|(_, e)| self.stale(e))
                .min_by_key(|(_, e)| e.last_used)
                .map(|(k, _)| k.clone());
            match oldest.and_then(|k| self.entries.remove(&k)) {
                Some(e) => self.used -= e.size,
                None => return false,
            }
        }
        self.used += size;
        self.entries.insert(
            key,
            Entry {
                frame,
                size,
                last_used: self.tick,
            },
        );
        true
    }
}

/// The process's cache (the streaming job's passes share it).
pub fn global() -> &'static Mutex<FrameCache> {
    static CACHE: OnceLock<Mutex<FrameCache>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(FrameCache::new(BUDGET_BYTES)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(rows: i64) -> DataFrame {
        df!("x" => (0..rows).collect::<Vec<i64>>()).unwrap()
    }

    fn key(name: &str) -> FileKey {
        FileKey {
            table: name[..1].to_string(),
            path: PathBuf::from(name),
            bytes: 1,
        }
    }

    #[test]
    fn the_cache_stays_within_its_budget_and_evicts_the_least_recently_used_stale_frame() {
        let size = frame(1000).estimated_size();
        let mut c = FrameCache::new(size * 4);
        for name in ["a", "b", "c", "d"] {
            c.tick += 1;
            assert!(c.insert(key(name), frame(1000)));
        }
        assert_eq!(c.used(), size * 4);
        // Much later "a" is used again: "b" is now the least recently used and goes first.
        c.tick += KEEP_CALLS;
        c.entries.get_mut(&key("a")).unwrap().last_used = c.tick;
        c.tick += 1;
        assert!(c.has_room());
        assert!(c.insert(key("e"), frame(1000)));
        assert_eq!(c.used(), size * 4);
        assert!(c.entries.contains_key(&key("a")));
        assert!(!c.entries.contains_key(&key("b")));
        assert!(c.entries.contains_key(&key("c")));
        // A frame larger than a quarter of the budget is never kept.
        assert!(!c.insert(key("big"), frame(2000)));
        assert!(c.used() <= size * 4);
    }

    #[test]
    fn frames_used_lately_are_never_evicted() {
        let size = frame(1000).estimated_size();
        let mut c = FrameCache::new(size * 4);
        for name in ["a", "b", "c", "d"] {
            c.tick += 1;
            assert!(c.insert(key(name), frame(1000)));
        }
        // Every frame was used within the last calls: nothing may go, the new frame is not kept,
        // and a call reads no more files into the cache (it scans them from disk).
        c.tick += 1;
        assert!(!c.has_room());
        assert!(!c.insert(key("e"), frame(1000)));
        assert_eq!(c.used(), size * 4);
        assert!(!c.entries.contains_key(&key("e")));
        // A table rewritten whole takes the place of its older file, recent or not.
        assert!(c.replace_table(key("c2"), frame(1000)));
        assert!(!c.entries.contains_key(&key("c")));
        assert!(c.entries.contains_key(&key("c2")));
        assert_eq!(c.used(), size * 4);
    }

    /// A Parquet file of `rows` rows in `dir`, keyed as a lake file of table "t".
    fn parquet_file(dir: &std::path::Path, name: &str, rows: i64) -> (FileKey, PathBuf) {
        let path = dir.join(name);
        let mut df = frame(rows);
        ParquetWriter::new(std::fs::File::create(&path).unwrap())
            .finish(&mut df)
            .unwrap();
        let bytes = std::fs::metadata(&path).unwrap().len();
        let key = FileKey {
            table: "t".to_string(),
            path: path.clone(),
            bytes,
        };
        (key, path)
    }

    #[test]
    fn a_frame_no_call_asked_for_lately_is_dropped_though_the_budget_is_not_spent() {
        let dir = tempfile::tempdir().unwrap();
        let file = |name: &str, rows: i64| parquet_file(dir.path(), name, rows);
        let (old, live) = (file("old.parquet", 50), file("live.parquet", 20));
        let mut c = FrameCache::new(64 << 20);
        c.frames(&[old.clone(), live.clone()]).unwrap();
        let both = c.used();
        assert_eq!(
            both,
            frame(50).estimated_size() + frame(20).estimated_size()
        );
        // "old" was compacted away: the later calls ask for "live" only.
        for _ in 1..KEEP_CALLS {
            c.frames(std::slice::from_ref(&live)).unwrap();
            assert_eq!(c.used(), both, "dropped before {KEEP_CALLS} calls");
        }
        c.frames(std::slice::from_ref(&live)).unwrap();
        assert_eq!(c.used(), frame(20).estimated_size());
        assert!(!c.entries.contains_key(&old.0));
        assert!(c.entries.contains_key(&live.0));
    }

    #[test]
    fn a_file_is_read_once_then_served_from_memory_and_a_full_cache_sends_reads_to_disk() {
        let dir = tempfile::tempdir().unwrap();
        let files: Vec<(FileKey, PathBuf)> = [10i64, 20, 30]
            .into_iter()
            .enumerate()
            .map(|(i, rows)| parquet_file(dir.path(), &format!("f{i}.parquet"), rows))
            .collect();
        let mut c = FrameCache::new(64 << 20);
        let first = c.frames(&files).unwrap();
        assert!(first.on_disk.is_empty());
        let heights: Vec<usize> = first.frames.iter().map(DataFrame::height).collect();
        assert_eq!(heights, vec![10, 20, 30]);
        assert_eq!(c.hits_and_misses(), (0, 3));
        // Gone from disk, still served: the second call reads nothing.
        for (_, p) in &files {
            std::fs::remove_file(p).unwrap();
        }
        let second = c.frames(&files).unwrap();
        assert_eq!(second.frames, first.frames);
        assert_eq!(c.hits_and_misses(), (3, 3));
        // A cache with no room left for recent frames reads nothing more into memory.
        let mut full = FrameCache::new(frame(10).estimated_size() * 4);
        full.tick += 1;
        for name in ["w", "x", "y", "z"] {
            assert!(full.insert(key(name), frame(10)));
        }
        let got = full.frames(&files).unwrap();
        assert!(got.frames.is_empty());
        assert_eq!(got.on_disk.len(), 3);
    }
}
