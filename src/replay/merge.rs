//! Reading the `events` table game by game in bounded memory: one date partition at a time, its files merged by game, replayed on worker threads, results handed on in a fixed order.
//!
//! Every events file is sorted by (game, seq), but files overlap in key range,
//! so a game's lines are found by merging cursors. Merging every file of the
//! lake at once (a cursor, its decoded batch and its decoder per file) costs
//! memory in proportion to the history; this module merges the files of one
//! date partition at a time instead. A game whose lines run on into a later
//! partition (it crossed midnight, or a late line came days after) is
//! carried: its lines are held until the last partition that has some, which
//! a first pass over the `game` column finds. Every game is replayed exactly
//! once, with all its lines, and the results come back in the order the games
//! were read (partition, then game), whatever the workers' timing, so that
//! what a run writes does not depend on scheduling.

use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Instant;

use arrow::array::{AsArray, RecordBatch};
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::{ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder};
use parquet::file::statistics::Statistics;

use super::error::{ReplayError, io};
use super::game::{Context, GameReplay, Logged, replay_game};

/// One events file to read: its path and its partition (`date=YYYY-MM-DD`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventsFile {
    pub path: PathBuf,
    pub partition: String,
}

/// A replayed game: its id, the replay, and its raw lines when asked to keep those of open games.
pub type Replayed = (String, GameReplay, Option<Vec<String>>);

/// What a merge did: events read and time spent in the engines (summed over workers).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MergeStats {
    pub events: u64,
    pub engine_ms: u64,
}

impl std::ops::AddAssign for MergeStats {
    fn add_assign(&mut self, o: MergeStats) {
        self.events += o.events;
        self.engine_ms += o.engine_ms;
    }
}

/// The row groups of a Parquet file that may hold one of the `wanted` games (all without a
/// filter): those whose `game` statistics span one of them and whose bloom filter on `game`
/// (when the file has one) does not rule them all out.
///
/// Statistics alone say little: files of different days overlap in key range (game ids are
/// kind-prefixed), so the bloom filter is what skips the files of other games.
pub(crate) fn row_groups_of(
    builder: &ParquetRecordBatchReaderBuilder<File>,
    filter: Option<&BTreeSet<String>>,
) -> Vec<usize> {
    let schema = builder.parquet_schema();
    let game_idx = (0..schema.num_columns()).find(|&i| schema.column(i).name() == "game");
    let mut groups = Vec::new();
    for (i, rg) in builder.metadata().row_groups().iter().enumerate() {
        let keep = match (filter, game_idx.and_then(|c| rg.column(c).statistics())) {
            (Some(wanted), Some(Statistics::ByteArray(st))) => match (st.min_opt(), st.max_opt()) {
                (Some(min), Some(max)) => {
                    let min = String::from_utf8_lossy(min.data()).into_owned();
                    let max = String::from_utf8_lossy(max.data()).into_owned();
                    wanted.range(min..).next().is_some_and(|g| *g <= max)
                }
                _ => true,
            },
            _ => true,
        };
        let keep = keep
            && match (filter, game_idx) {
                (Some(wanted), Some(c)) => match builder.get_row_group_column_bloom_filter(i, c) {
                    Ok(Some(bloom)) => wanted.iter().any(|g| bloom.check(g.as_str())),
                    _ => true,
                },
                _ => true,
            };
        if keep {
            groups.push(i);
        }
    }
    groups
}

/// Rows a cursor decodes at a time: this, times the files of one partition, is the decoded
/// lines held at once.
const CURSOR_BATCH_ROWS: usize = 1024;

/// One events file read in (game, seq) order, restricted to some row groups.
struct Cursor {
    reader: ParquetRecordBatchReader,
    batch: Option<RecordBatch>,
    row: usize,
}

impl Cursor {
    fn open(path: &Path, groups: &[usize]) -> Result<Option<Cursor>, ReplayError> {
        let file = File::open(path).map_err(io(path))?;
        let builder = ParquetRecordBatchReaderBuilder::try_new(file)?;
        let mask = ProjectionMask::columns(builder.parquet_schema(), ["game", "seq", "raw"]);
        let reader = builder
            .with_projection(mask)
            .with_row_groups(groups.to_vec())
            .with_batch_size(CURSOR_BATCH_ROWS)
            .build()?;
        let mut c = Cursor {
            reader,
            batch: None,
            row: 0,
        };
        c.refill()?;
        Ok(c.batch.is_some().then_some(c))
    }

    fn refill(&mut self) -> Result<(), ReplayError> {
        self.row = 0;
        self.batch = self.reader.next().transpose()?;
        Ok(())
    }

    fn game(&self) -> Option<&str> {
        let b = self.batch.as_ref()?;
        Some(b.column(0).as_string::<i32>().value(self.row))
    }

    /// Takes every row of `game` at the cursor (they are contiguous); `out` None skips them.
    fn take(&mut self, game: &str, mut out: Option<&mut Vec<String>>) -> Result<(), ReplayError> {
        while let Some(b) = self.batch.as_ref() {
            let g = b.column(0).as_string::<i32>();
            let raw = b.column(2).as_string::<i32>();
            while self.row < b.num_rows() && g.value(self.row) == game {
                if let Some(out) = out.as_deref_mut() {
                    out.push(raw.value(self.row).to_string());
                }
                self.row += 1;
            }
            if self.row < b.num_rows() {
                return Ok(());
            }
            self.refill()?;
        }
        Ok(())
    }
}

/// The files of one partition with the row groups to read in each.
struct Partition {
    files: Vec<(PathBuf, Vec<usize>)>,
}

/// For every wanted game, the index of the last partition holding one of its lines.
type LastPartition = HashMap<Box<str>, u32>;

/// First pass: the partitions in date order with their useful row groups, and for every wanted
/// game the index of the last partition that holds one of its lines.
fn plan(
    files: &[EventsFile],
    filter: Option<&BTreeSet<String>>,
) -> Result<(Vec<Partition>, LastPartition), ReplayError> {
    let mut by_partition: BTreeMap<&str, Vec<&Path>> = BTreeMap::new();
    for f in files {
        by_partition
            .entry(f.partition.as_str())
            .or_default()
            .push(&f.path);
    }
    let mut parts = Vec::new();
    let mut last = LastPartition::new();
    for paths in by_partition.into_values() {
        let idx = parts.len() as u32;
        let mut part = Partition { files: Vec::new() };
        for path in paths {
            let file = File::open(path).map_err(io(path))?;
            let builder = ParquetRecordBatchReaderBuilder::try_new(file)?;
            let groups = row_groups_of(&builder, filter);
            if groups.is_empty() {
                continue;
            }
            let mask = ProjectionMask::columns(builder.parquet_schema(), ["game"]);
            let reader = builder
                .with_projection(mask)
                .with_row_groups(groups.clone())
                .with_batch_size(8192)
                .build()?;
            let mut prev = String::new();
            // Whether the file holds a wanted game (the bloom filters may have let it through).
            let mut wanted = filter.is_none();
            for b in reader {
                let b = b?;
                let games = b.column(0).as_string::<i32>();
                for g in games.iter().flatten() {
                    // The file is sorted by game: look up each game once.
                    if g == prev {
                        continue;
                    }
                    prev.clear();
                    prev.push_str(g);
                    if filter.is_some_and(|f| !f.contains(g)) {
                        continue;
                    }
                    wanted = true;
                    match last.get_mut(g) {
                        Some(p) => *p = idx,
                        None => {
                            last.insert(g.into(), idx);
                        }
                    }
                }
            }
            if wanted {
                part.files.push((path.to_path_buf(), groups));
            }
        }
        parts.push(part);
    }
    Ok((parts, last))
}

/// Reads the events files a partition at a time, merged by game, and replays the wanted games
/// (all without a filter) on `threads` workers; `sink` gets each replay, in reading order.
pub fn replay_files(
    files: &[EventsFile],
    filter: Option<&BTreeSet<String>>,
    ctx: &Context,
    threads: usize,
    keep: bool,
    bar: &indicatif::ProgressBar,
    sink: &mut dyn FnMut(Replayed) -> Result<(), ReplayError>,
) -> Result<MergeStats, ReplayError> {
    let (parts, last) = plan(files, filter)?;
    replay_jobs(
        ctx,
        threads,
        keep,
        |feed| {
            let mut events = 0u64;
            // Lines of games that go on in a later partition.
            let mut carry: HashMap<String, Vec<String>> = HashMap::new();
            for (idx, part) in parts.iter().enumerate() {
                let idx = idx as u32;
                let mut cursors = Vec::new();
                for (path, groups) in &part.files {
                    if let Some(c) = Cursor::open(path, groups)? {
                        cursors.push(c);
                    }
                }
                let mut heap: BinaryHeap<std::cmp::Reverse<(String, usize)>> = BinaryHeap::new();
                for (i, c) in cursors.iter().enumerate() {
                    if let Some(g) = c.game() {
                        heap.push(std::cmp::Reverse((g.to_string(), i)));
                    }
                }
                while let Some(std::cmp::Reverse((game, i))) = heap.pop() {
                    // Every cursor positioned on this game contributes its rows.
                    let mut sources = vec![i];
                    while let Some(std::cmp::Reverse((g, _))) = heap.peek() {
                        if *g != game {
                            break;
                        }
                        if let Some(std::cmp::Reverse((_, j))) = heap.pop() {
                            sources.push(j);
                        }
                    }
                    let ends = last.get(game.as_str()).copied();
                    let mut raws = match ends {
                        Some(_) => carry.remove(&game).unwrap_or_default(),
                        None => Vec::new(),
                    };
                    let before = raws.len();
                    for &j in &sources {
                        cursors[j].take(&game, ends.is_some().then_some(&mut raws))?;
                        if let Some(g) = cursors[j].game() {
                            heap.push(std::cmp::Reverse((g.to_string(), j)));
                        }
                    }
                    let Some(ends) = ends else { continue };
                    let read = (raws.len() - before) as u64;
                    events += read;
                    bar.inc(read);
                    if ends > idx {
                        carry.insert(game, raws);
                    } else {
                        feed.send(game, raws)?;
                    }
                }
            }
            // Nothing is left unless a file changed under the run; replay what was read.
            let mut rest: Vec<(String, Vec<String>)> = carry.into_iter().collect();
            rest.sort_by(|a, b| a.0.cmp(&b.0));
            for (game, raws) in rest {
                feed.send(game, raws)?;
            }
            Ok(events)
        },
        sink,
    )
}

/// The job queue a feed fills.
pub struct Feed<'a> {
    tx: mpsc::SyncSender<(u64, String, Vec<String>)>,
    next: u64,
    stop: &'a AtomicBool,
}

impl Feed<'_> {
    /// Queues one game's lines; fails once the run stopped (a worker or the sink failed).
    pub fn send(&mut self, game: String, lines: Vec<String>) -> Result<(), ReplayError> {
        if self.stop.load(Ordering::Relaxed) {
            return Err(ReplayError::Worker);
        }
        let n = self.next;
        self.next += 1;
        self.tx
            .send((n, game, lines))
            .map_err(|_| ReplayError::Worker)
    }
}

/// Replays the games `feed` queues on `threads` workers; `sink` gets each result on the calling
/// thread in the order the games were queued.
///
/// `feed` runs on its own thread and returns how many events it sent. With `keep`, the lines
/// of games still open come back with their replay. A sink error stops the feed and is returned.
pub fn replay_jobs(
    ctx: &Context,
    threads: usize,
    keep: bool,
    feed: impl FnOnce(&mut Feed<'_>) -> Result<u64, ReplayError> + Send,
    sink: &mut dyn FnMut(Replayed) -> Result<(), ReplayError>,
) -> Result<MergeStats, ReplayError> {
    let threads = threads.max(1);
    let (job_tx, job_rx) = mpsc::sync_channel::<(u64, String, Vec<String>)>(threads * 4);
    // Shared by the workers only: when they are all gone, the feed's sends fail.
    let job_rx = Arc::new(Mutex::new(job_rx));
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let (res_tx, res_rx) = mpsc::channel::<(u64, Replayed, u64)>();
        let mut handles = Vec::new();
        for _ in 0..threads {
            let job_rx = Arc::clone(&job_rx);
            let res_tx = res_tx.clone();
            handles.push(scope.spawn(move || {
                loop {
                    let job = match job_rx.lock() {
                        Ok(rx) => rx.recv(),
                        Err(_) => return,
                    };
                    let Ok((n, game, raws)) = job else { return };
                    let t0 = Instant::now();
                    let kept = keep.then(|| raws.clone());
                    let lines: Vec<Logged> = raws
                        .into_iter()
                        .filter_map(|r| Logged::parse(r).ok())
                        .collect();
                    let r = replay_game(&game, lines, ctx);
                    let kept = kept.filter(|_| r.game.as_ref().is_none_or(|g| !g.closed));
                    let us = t0.elapsed().as_micros() as u64;
                    if res_tx.send((n, (game, r, kept), us)).is_err() {
                        return;
                    }
                }
            }));
        }
        drop(res_tx);
        drop(job_rx);
        let stop = &stop;
        let fed = scope.spawn(move || {
            let mut queue = Feed {
                tx: job_tx,
                next: 0,
                stop,
            };
            feed(&mut queue)
            // Dropping the queue lets the workers finish.
        });
        // Results in queue order: a worker may finish a later game first.
        let mut pending: BTreeMap<u64, Replayed> = BTreeMap::new();
        let mut next = 0u64;
        let mut engine_us = 0u64;
        let mut failed: Option<ReplayError> = None;
        for (n, r, us) in res_rx {
            engine_us += us;
            if failed.is_some() {
                continue;
            }
            pending.insert(n, r);
            while let Some(r) = pending.remove(&next) {
                next += 1;
                if let Err(e) = sink(r) {
                    failed = Some(e);
                    stop.store(true, Ordering::Relaxed);
                    pending.clear();
                    break;
                }
            }
        }
        let mut joined = Ok(());
        for h in handles {
            if h.join().is_err() {
                joined = Err(ReplayError::Worker);
            }
        }
        let events = fed.join().map_err(|_| ReplayError::Worker)?;
        if let Some(e) = failed {
            return Err(e);
        }
        joined?;
        Ok(MergeStats {
            events: events?,
            engine_ms: engine_us / 1000,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> Context {
        Context { horizon_ms: 0 }
    }

    #[test]
    fn results_come_back_in_the_order_the_games_were_queued() {
        let mut seen = Vec::new();
        let stats = replay_jobs(
            &ctx(),
            4,
            false,
            |feed| {
                for i in 0..200 {
                    // Some games have lines to parse (garbage here), some none: uneven work.
                    let lines = vec!["{".to_string(); (i * 7) % 13];
                    feed.send(format!("g{i:03}"), lines)?;
                }
                Ok(200)
            },
            &mut |(game, _, _)| {
                seen.push(game);
                Ok(())
            },
        )
        .unwrap();
        let queued: Vec<String> = (0..200).map(|i| format!("g{i:03}")).collect();
        assert_eq!(seen, queued);
        assert_eq!(stats.events, 200);
    }

    #[test]
    fn a_failing_sink_stops_the_feed_and_its_error_is_returned() {
        let mut taken = 0;
        let out = replay_jobs(
            &ctx(),
            2,
            false,
            |feed| {
                let mut sent = 0;
                for i in 0..100_000 {
                    feed.send(format!("g{i}"), Vec::new())?;
                    sent += 1;
                }
                Ok(sent)
            },
            &mut |_| {
                taken += 1;
                if taken == 10 {
                    return Err(ReplayError::Io {
                        path: PathBuf::from("sink"),
                        source: std::io::Error::other("disk full"),
                    });
                }
                Ok(())
            },
        );
        assert!(
            matches!(out, Err(ReplayError::Io { ref path, .. }) if path == Path::new("sink")),
            "{out:?}"
        );
        assert_eq!(taken, 10, "nothing reaches the sink after its error");
    }
}
