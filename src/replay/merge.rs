//! Reading the `events` table game by game in bounded memory: one date partition at a time, its files merged by game, replayed on worker threads, results handed on in a fixed order.
//!
//! Every events file is sorted by (game, seq), but files overlap in key range,
//! so a game's lines are found by merging cursors. Merging every file of the
//! lake at once (a cursor, its decoded batch and its decoder per file) costs
//! memory in proportion to the history; this module merges the files of one
//! date partition at a time instead. A game whose lines run on into a later
//! partition (it crossed midnight, or a late line came days after) is
//! carried: its lines are held until the last partition that has some, which
//! a first pass over the `game` column finds. A partition of many files (a
//! batch ingest of a long period writes one per day per flush) is first merged
//! [`MAX_FANIN`] files at a time into runs on disk, so that the files open at
//! once do not grow with it either. Every game is replayed exactly
//! once, with all its lines, and the results come back in the order the games
//! were read (partition, then game), whatever the workers' timing, so that
//! what a run writes does not depend on scheduling.

use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap};
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
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

/// The games whose lines are in more than one partition (a few in a hundred: they crossed
/// midnight, or a line came late), by [`key64`], with the index of the last partition holding
/// some. A game not listed has all its lines in one partition.
type Crossers = HashMap<u64, u32>;

/// An 8-byte digest of a game id or a (kind, key) for the tables of one run (SipHash, fixed keys:
/// the same for the same text within a process). Two texts with the same digest are treated as
/// one by those tables, which costs memory or time (a game carried further, a game held for the
/// seed-reuse check), never a wrong result.
pub(crate) fn key64(text: impl std::hash::Hash) -> u64 {
    use std::hash::Hasher;
    let mut h = std::hash::DefaultHasher::new();
    text.hash(&mut h);
    h.finish()
}

/// First pass: the partitions in date order with their useful row groups, and the wanted games
/// that run on over several partitions with the last one. What it holds while reading is 16
/// bytes per game and partition; what it keeps, an entry per game that crosses partitions.
fn plan(
    files: &[EventsFile],
    filter: Option<&BTreeSet<String>>,
) -> Result<(Vec<Partition>, Crossers), ReplayError> {
    let mut by_partition: BTreeMap<&str, Vec<&Path>> = BTreeMap::new();
    for f in files {
        by_partition
            .entry(f.partition.as_str())
            .or_default()
            .push(&f.path);
    }
    let mut parts = Vec::new();
    let mut seen: Vec<(u64, u32)> = Vec::new();
    for paths in by_partition.into_values() {
        let idx = parts.len() as u32;
        let start = seen.len();
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
                    // The file is sorted by game: note each game once.
                    if g == prev {
                        continue;
                    }
                    prev.clear();
                    prev.push_str(g);
                    if filter.is_some_and(|f| !f.contains(g)) {
                        continue;
                    }
                    wanted = true;
                    seen.push((key64(g), idx));
                }
            }
            if wanted {
                part.files.push((path.to_path_buf(), groups));
            }
        }
        // A game's lines are often in several files of its day: noted once per day.
        let mut day = seen.split_off(start);
        day.sort_unstable();
        day.dedup();
        seen.append(&mut day);
        parts.push(part);
    }
    seen.sort_unstable();
    let mut crossers = Crossers::new();
    for game in seen.chunk_by(|a, b| a.0 == b.0) {
        if let (Some(first), Some(last)) = (game.first(), game.last())
            && first.1 != last.1
        {
            crossers.insert(first.0, last.1);
        }
    }
    Ok((parts, crossers))
}

/// Where a merge may write its spill runs: a directory and a file name prefix (the writer's id,
/// so that the lake's recovery deletes the runs of a killed run; see [`crate::lake`]).
pub struct Spill {
    pub dir: PathBuf,
    pub prefix: String,
    /// Files or runs merged at once ([`MAX_FANIN`] unless set).
    fan_in: usize,
    next: AtomicU64,
}

impl Spill {
    pub fn new(dir: PathBuf, prefix: impl Into<String>) -> Self {
        Spill {
            dir,
            prefix: prefix.into(),
            fan_in: MAX_FANIN,
            next: AtomicU64::new(0),
        }
    }

    /// The same, merging `n` files or runs at once (at least 2).
    pub fn with_fan_in(mut self, n: usize) -> Self {
        self.fan_in = n.max(2);
        self
    }

    fn path(&self) -> PathBuf {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        self.dir.join(format!("{}-merge-{n}.run", self.prefix))
    }
}

/// Reads the events files a partition at a time, merged by game, and replays the wanted games
/// (all without a filter) on `threads` workers; `sink` gets each replay, in reading order.
///
/// A partition with more than [`MAX_FANIN`] files (the spill's fan-in) is first merged that many
/// files at a time into runs written under `spill` (with none, every file of a partition is open
/// at once), so that the files open at once, and so the memory, do not grow with a day's files.
#[allow(clippy::too_many_arguments)]
pub fn replay_files(
    files: &[EventsFile],
    filter: Option<&BTreeSet<String>>,
    ctx: &Context,
    threads: usize,
    keep: bool,
    spill: Option<&Spill>,
    bar: &indicatif::ProgressBar,
    sink: &mut dyn FnMut(Replayed) -> Result<(), ReplayError>,
) -> Result<MergeStats, ReplayError> {
    let (parts, crossers) = plan(files, filter)?;
    let wanted = |g: &str| filter.is_none_or(|f| f.contains(g));
    replay_jobs(
        ctx,
        threads,
        keep,
        |feed| {
            std::thread::scope(|scope| {
                // The next partition's sources are opened (and its runs spilled) on their own
                // thread while this one's games are merged and replayed.
                let (tx, rx) = mpsc::sync_channel(0);
                let parts = &parts;
                let wanted = &wanted;
                scope.spawn(move || {
                    for part in parts {
                        let sources = open_sources(&part.files, spill, wanted);
                        let failed = sources.is_err();
                        if tx.send(sources).is_err() || failed {
                            return;
                        }
                    }
                });
                let mut events = 0u64;
                // Lines of games that go on in a later partition.
                let mut carry: HashMap<String, Vec<String>> = HashMap::new();
                for idx in 0..parts.len() as u32 {
                    let sources = rx.recv().map_err(|_| ReplayError::Io {
                        path: PathBuf::from("events"),
                        source: std::io::Error::other("the reading of a partition stopped"),
                    })??;
                    let mut merger = Merger::new(sources);
                    while let Some((game, taken)) = merger.next(wanted)? {
                        let Some(lines) = taken else { continue };
                        // The last partition with lines of the game (this one unless listed).
                        let ends = crossers.get(&key64(&game)).copied().unwrap_or(idx);
                        let read = lines.len() as u64;
                        events += read;
                        bar.inc(read);
                        let mut raws = carry.remove(&game).unwrap_or_default();
                        raws.extend(lines);
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
            })
        },
        sink,
    )
}

/// Files (or runs) merged at once. A cursor on an events file holds a decoded page and a batch of
/// each column it reads, about 2 MB; a run's reader holds its buffer and one game's lines.
pub const MAX_FANIN: usize = 32;

/// A sorted source of one partition's lines: an events file or a spill run.
enum Source {
    File(Cursor),
    Run(RunReader),
}

impl Source {
    fn game(&self) -> Option<&str> {
        match self {
            Source::File(c) => c.game(),
            Source::Run(r) => r.game.as_deref(),
        }
    }

    fn take(&mut self, game: &str, out: Option<&mut Vec<String>>) -> Result<(), ReplayError> {
        match self {
            Source::File(c) => c.take(game, out),
            Source::Run(r) => r.take(game, out),
        }
    }
}

/// The sources of one partition, at most the spill's fan-in of them: with more files than that (and
/// somewhere to spill), groups of files, then of runs, are merged into runs first, in order, so
/// that a game's lines come out in the same order as from one merge of every file.
fn open_sources(
    files: &[(PathBuf, Vec<usize>)],
    spill: Option<&Spill>,
    wanted: &(dyn Fn(&str) -> bool + Sync),
) -> Result<Vec<Source>, ReplayError> {
    let open = |chunk: &[(PathBuf, Vec<usize>)]| -> Result<Vec<Source>, ReplayError> {
        let mut out = Vec::new();
        for (path, groups) in chunk {
            if let Some(c) = Cursor::open(path, groups)? {
                out.push(Source::File(c));
            }
        }
        Ok(out)
    };
    let Some(spill) = spill.filter(|s| files.len() > s.fan_in) else {
        return open(files);
    };
    let mut runs = Vec::new();
    for chunk in files.chunks(spill.fan_in) {
        runs.extend(spill_run(open(chunk)?, spill, wanted)?);
    }
    while runs.len() > spill.fan_in {
        let mut next = Vec::new();
        let mut rest = runs.into_iter();
        loop {
            let group: Vec<Source> = rest.by_ref().take(spill.fan_in).collect();
            if group.is_empty() {
                break;
            }
            next.extend(spill_run(group, spill, wanted)?);
        }
        runs = next;
    }
    Ok(runs)
}

/// Merges `sources` into one run of the wanted games' lines (none when no game is wanted).
fn spill_run(
    sources: Vec<Source>,
    spill: &Spill,
    wanted: &(dyn Fn(&str) -> bool + Sync),
) -> Result<Option<Source>, ReplayError> {
    let path = spill.path();
    let file = File::create(&path).map_err(io(&path))?;
    // Owned by the reader below, or removed here if the run fails or holds nothing.
    let guard = RemoveOnDrop(path.clone());
    let mut w = BufWriter::with_capacity(RUN_BUFFER, file);
    let mut merger = Merger::new(sources);
    let mut games = 0u64;
    while let Some((game, taken)) = merger.next(wanted)? {
        let Some(lines) = taken else { continue };
        write_record(&mut w, &game, &lines).map_err(io(&path))?;
        games += 1;
    }
    w.flush().map_err(io(&path))?;
    drop(w);
    if games == 0 {
        return Ok(None);
    }
    Ok(RunReader::open(guard)?.map(Source::Run))
}

/// Buffer of a run's writer and of each run's reader.
const RUN_BUFFER: usize = 256 * 1024;

/// A run's record: the game, the number of lines, then each line (lengths as u32, little endian).
fn write_record(w: &mut impl Write, game: &str, lines: &[String]) -> std::io::Result<()> {
    let len = |n: usize| {
        u32::try_from(n).map_err(|_| std::io::Error::other("a line or game longer than 4 GiB"))
    };
    w.write_all(&len(game.len())?.to_le_bytes())?;
    w.write_all(game.as_bytes())?;
    w.write_all(&len(lines.len())?.to_le_bytes())?;
    for l in lines {
        w.write_all(&len(l.len())?.to_le_bytes())?;
        w.write_all(l.as_bytes())?;
    }
    Ok(())
}

/// Deletes a file when dropped.
struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Reads a run back a game at a time; the file is deleted when the reader is dropped.
struct RunReader {
    file: RemoveOnDrop,
    r: BufReader<File>,
    game: Option<String>,
    lines: Vec<String>,
}

impl RunReader {
    fn open(file: RemoveOnDrop) -> Result<Option<RunReader>, ReplayError> {
        let f = File::open(&file.0).map_err(io(&file.0))?;
        let mut r = RunReader {
            file,
            r: BufReader::with_capacity(RUN_BUFFER, f),
            game: None,
            lines: Vec::new(),
        };
        r.advance()?;
        Ok(r.game.is_some().then_some(r))
    }

    /// Reads the next record (no game at the end of the run).
    fn advance(&mut self) -> Result<(), ReplayError> {
        let RunReader {
            file,
            r,
            game,
            lines,
        } = self;
        let path = &file.0;
        lines.clear();
        *game = read_string(r, true).map_err(io(path))?;
        if game.is_none() {
            return Ok(());
        }
        let n = read_u32(r).map_err(io(path))?;
        for _ in 0..n {
            match read_string(r, false).map_err(io(path))? {
                Some(l) => lines.push(l),
                None => return Err(io(path)(std::io::ErrorKind::UnexpectedEof.into())),
            }
        }
        Ok(())
    }

    fn take(&mut self, game: &str, out: Option<&mut Vec<String>>) -> Result<(), ReplayError> {
        if self.game.as_deref() == Some(game) {
            if let Some(out) = out {
                out.append(&mut self.lines);
            }
            self.advance()?;
        }
        Ok(())
    }
}

fn read_u32(r: &mut impl Read) -> std::io::Result<u32> {
    let mut b = [0u8; 4];
    r.read_exact(&mut b)?;
    Ok(u32::from_le_bytes(b))
}

/// A length-prefixed string; with `eof_ok`, None at a clean end of the file.
fn read_string(r: &mut BufReader<File>, eof_ok: bool) -> std::io::Result<Option<String>> {
    if eof_ok && r.fill_buf()?.is_empty() {
        return Ok(None);
    }
    let n = read_u32(r)? as usize;
    let mut b = vec![0u8; n];
    r.read_exact(&mut b)?;
    String::from_utf8(b)
        .map(Some)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

/// A game and, when it is wanted, its lines.
type MergedGame = (String, Option<Vec<String>>);

/// Merges sorted sources by game.
struct Merger {
    sources: Vec<Source>,
    heap: BinaryHeap<std::cmp::Reverse<(String, usize)>>,
}

impl Merger {
    fn new(sources: Vec<Source>) -> Merger {
        let mut heap = BinaryHeap::new();
        for (i, s) in sources.iter().enumerate() {
            if let Some(g) = s.game() {
                heap.push(std::cmp::Reverse((g.to_string(), i)));
            }
        }
        Merger { sources, heap }
    }

    /// The next game, with its lines from every source (in source order) when it is wanted; its
    /// lines are skipped otherwise.
    fn next(
        &mut self,
        wanted: &(dyn Fn(&str) -> bool + Sync),
    ) -> Result<Option<MergedGame>, ReplayError> {
        let Some(std::cmp::Reverse((game, i))) = self.heap.pop() else {
            return Ok(None);
        };
        // Every source positioned on this game contributes its rows, in source order.
        let mut from = vec![i];
        while let Some(std::cmp::Reverse((g, _))) = self.heap.peek() {
            if *g != game {
                break;
            }
            if let Some(std::cmp::Reverse((_, j))) = self.heap.pop() {
                from.push(j);
            }
        }
        let mut taken = wanted(&game).then(Vec::new);
        for &j in &from {
            self.sources[j].take(&game, taken.as_mut())?;
            if let Some(g) = self.sources[j].game() {
                self.heap.push(std::cmp::Reverse((g.to_string(), j)));
            }
        }
        Ok(Some((game, taken)))
    }
}

/// Replays waiting for the sink at most (a game's rows are tens of KB): enough for the workers
/// to go on while the sink writes a chunk, few enough to stay a few MB.
const RESULTS_IN_FLIGHT: usize = 256;

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
        // Bounded too: while the sink writes a chunk the workers go on, but only so far.
        let (res_tx, res_rx) = mpsc::sync_channel::<(u64, Replayed, u64)>(RESULTS_IN_FLIGHT);
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

    /// Writes one events-like file (game, seq, raw), sorted by (game, seq).
    fn events_file(path: &Path, rows: &[(String, i64, String)]) {
        use arrow::array::{Int64Array, StringArray};
        use arrow::datatypes::{DataType, Field, Schema};
        let schema = Arc::new(Schema::new(vec![
            Field::new("game", DataType::Utf8, false),
            Field::new("seq", DataType::Int64, false),
            Field::new("raw", DataType::Utf8, false),
        ]));
        let batch = RecordBatch::try_new(
            Arc::clone(&schema),
            vec![
                Arc::new(StringArray::from_iter_values(rows.iter().map(|r| &r.0))),
                Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.1))),
                Arc::new(StringArray::from_iter_values(rows.iter().map(|r| &r.2))),
            ],
        )
        .unwrap();
        let mut w = parquet::arrow::ArrowWriter::try_new(File::create(path).unwrap(), schema, None)
            .unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
    }

    /// Every game with its lines as `replay_files` hands them on (the lines of a game the engines
    /// cannot read come back with it), in the order it hands them on.
    fn merged(
        files: &[EventsFile],
        filter: Option<&BTreeSet<String>>,
        spill: Option<&Spill>,
    ) -> Vec<(String, Vec<String>)> {
        let mut out = Vec::new();
        let hidden = indicatif::ProgressBar::hidden();
        replay_files(
            files,
            filter,
            &ctx(),
            2,
            true,
            spill,
            &hidden,
            &mut |(g, _, lines)| {
                out.push((g, lines.unwrap_or_default()));
                Ok(())
            },
        )
        .unwrap();
        out
    }

    #[test]
    fn spilling_a_partitions_many_files_in_runs_changes_nothing_of_what_is_replayed() {
        let dir = std::env::temp_dir().join(format!("vigie-merge-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let spill_dir = dir.join("tmp");
        std::fs::create_dir_all(&spill_dir).unwrap();
        let mut files = Vec::new();
        // 20 files in the first partition, each with a third of 30 games (overlapping key ranges,
        // so every game's lines are spread over several files), and 4 in the second, with lines of
        // some of the first partition's games (carried) and games of its own.
        for (partition, n, games) in [
            ("date=2026-01-01", 20, 0..30),
            ("date=2026-01-02", 4, 25..40),
        ] {
            std::fs::create_dir_all(dir.join(partition)).unwrap();
            for i in 0..n {
                let mut rows = Vec::new();
                for k in games.clone().filter(|k| (k + i) % 3 == 0) {
                    for j in 0..2 {
                        let seq = (i * 10 + j) as i64;
                        rows.push((
                            format!("g{k:02}"),
                            seq,
                            format!("{partition} g{k:02} f{i} l{j}"),
                        ));
                    }
                }
                rows.sort();
                let path = dir.join(partition).join(format!("f{i}.parquet"));
                events_file(&path, &rows);
                files.push(EventsFile {
                    path,
                    partition: partition.to_string(),
                });
            }
        }
        let whole = merged(&files, None, None);
        assert_eq!(whole.len(), 40);
        assert_eq!(
            whole.iter().map(|(_, l)| l.len()).sum::<usize>(),
            20 * 10 * 2 + 4 * 5 * 2
        );
        // A carried game comes after the first partition's games, with the lines of both.
        let g27 = whole.iter().find(|(g, _)| g == "g27").unwrap();
        assert!(g27.1.iter().any(|l| l.starts_with("date=2026-01-01")));
        assert!(g27.1.iter().any(|l| l.starts_with("date=2026-01-02")));
        // Fan-in 3: 20 files make 7 runs, then 3: two levels of runs.
        for fan_in in [3, 4, 32] {
            let spill = Spill::new(spill_dir.clone(), "w1").with_fan_in(fan_in);
            assert_eq!(merged(&files, None, Some(&spill)), whole, "fan-in {fan_in}");
            let some: BTreeSet<String> = ["g03", "g26", "g27", "g39"].map(String::from).into();
            let expected: Vec<_> = whole
                .iter()
                .filter(|(g, _)| some.contains(g))
                .cloned()
                .collect();
            assert_eq!(
                merged(&files, Some(&some), Some(&spill)),
                expected,
                "fan-in {fan_in}"
            );
            if fan_in < 20 {
                assert!(spill.next.load(Ordering::Relaxed) > 0, "runs were written");
            }
        }
        let left: Vec<_> = std::fs::read_dir(&spill_dir).unwrap().collect();
        assert!(left.is_empty(), "every run is deleted: {left:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
