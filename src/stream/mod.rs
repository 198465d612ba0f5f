//! Streaming: follow a log directory live, commit micro-batches exactly once, then replay and detect what they touched.
//!
//! A micro-batch is a batch ingest ([`crate::ingest::ingest_files`]) of the
//! files that changed since the last look (by size, mtime and inode), so it
//! has the batch guarantees: files are known by fingerprint (a renamed or
//! compressed copy is not read twice), a partial last line waits, every
//! rejected line is quarantined, and the source checkpoints move in the same
//! atomic commit as the data. A process killed at any moment loses nothing
//! and duplicates nothing: the next run starts from the last commit.
//!
//! After a commit, the incremental replay replays the games with new events
//! (open games up to their last event; they are revisited as they grow), and
//! detection runs again (at most every `detect_interval`, by default as soon as
//! the replay is done), so findings and flags follow the logs within seconds.
//! The replay thread pulls: before a pass that takes commits which waited while
//! the last one ran, it has the commit thread commit what is written at once,
//! so the pass starts with everything written until it began. Small files are
//! compacted into one per partition in separate commits, on a thread of their
//! own at the lowest priority; readers see a snapshot, never a row
//! twice or missing (the replaced files stay readable until their grace
//! period ends). `POST /ingest` ([`push`]) feeds the same path from servers
//! that push instead of writing files.

pub mod compact;
pub mod push;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use serde::Serialize;

use crate::ingest::{self, IngestError, IngestOptions, IngestReport};
use crate::lake::{Lake, LakeError};

/// Errors of the streaming loop.
#[derive(Debug, thiserror::Error)]
pub enum StreamError {
    #[error(transparent)]
    Lake(#[from] LakeError),
    #[error(transparent)]
    Ingest(#[from] IngestError),
    #[error(transparent)]
    Replay(#[from] crate::replay::run::ReplayError),
    #[error(transparent)]
    Detect(#[from] crate::detect::DetectError),
    #[error("compaction: {0}")]
    Compact(String),
    #[error("the replay and detection thread stopped")]
    DeriveStopped,
    #[error("cannot follow {path}: {source}")]
    Follow {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl StreamError {
    /// Whether another writer's commit (a compaction, a push, another process) came first: the
    /// stage or files this pass read moved, whichever stage met it (a replay's conflict comes
    /// wrapped in the replay's error, and used to stop the stream).
    pub fn is_conflict(&self) -> bool {
        use crate::detect::DetectError;
        use crate::features::FeaturesError;
        use crate::replay::run::ReplayError;
        matches!(
            self,
            StreamError::Lake(LakeError::Conflict(_))
                | StreamError::Ingest(IngestError::Lake(LakeError::Conflict(_)))
                | StreamError::Replay(ReplayError::Lake(LakeError::Conflict(_)))
                | StreamError::Detect(DetectError::Lake(LakeError::Conflict(_)))
                | StreamError::Detect(DetectError::Features(FeaturesError::Lake(
                    LakeError::Conflict(_)
                )))
        )
    }
}

/// Options of `vigie stream`.
#[derive(Debug, Clone)]
pub struct StreamOptions {
    /// The directory the servers write.
    pub follow: PathBuf,
    /// Time between two looks at the directory (and so between commits).
    pub commit_interval: Duration,
    /// The detection rules.
    pub rules: crate::detect::rules::RuleSource,
    /// Least time between the starts of two detection runs.
    pub detect_interval: Duration,
    /// Compact a partition once it has this many small files.
    pub compact_min_files: usize,
    /// Catch up, then exit.
    pub once: bool,
    /// Replay worker threads.
    pub threads: usize,
    /// Files removed longer ago than this are deleted by the vacuum (at least hourly, and on exit).
    pub vacuum_retain: Duration,
    /// The same for the tables every detection pass rewrites whole ([`rewritten_each_pass`]),
    /// vacuumed every fifth of it: at a pass a second, a week of their removed files would fill
    /// a disk (about 5 MB a pass on a month of 20,000 accounts).
    pub rewrites_retain: Duration,
    /// The commits and checkpoints of Vigie's log and of the tables' Delta logs older than this
    /// are deleted after each vacuum, down to a checkpoint ([`crate::lake::Writer::clean_logs`]):
    /// at a commit a second each log would otherwise gain 86,400 files a day.
    pub log_retain: Duration,
    /// Engine analysis in the background while following (never with `once`).
    pub analysis: Option<StreamAnalysis>,
}

/// The engine analysis that runs beside the stream: rounds of a few games on one thread, each
/// followed by a rest that keeps the analysis to `share` of one core over time.
#[derive(Debug, Clone)]
pub struct StreamAnalysis {
    /// Share of one core the analysis may take over time, in (0, 1].
    pub share: f64,
    /// The analysis of a round (`threads` 1 and `max_games` a few: a round is a few seconds).
    pub options: crate::analysis::AnalyseOptions,
    /// Rest when a round found nothing to analyse.
    pub idle: Duration,
}

impl StreamAnalysis {
    /// One thread, four games a round, at `share` of a core with `nodes` per position and a
    /// `sample` of the games of unflagged accounts; paused while a pass runs.
    pub fn new(share: f64, nodes: u64, sample: f64) -> StreamAnalysis {
        StreamAnalysis {
            share: share.clamp(0.01, 1.0),
            options: crate::analysis::AnalyseOptions {
                nodes,
                sample,
                threads: 1,
                max_games: Some(4),
                pause: Some(Default::default()),
                ..Default::default()
            },
            idle: Duration::from_secs(10),
        }
    }

    /// The rest after a round that used `cpu` of processor time over `wall`: what makes the
    /// round and its rest last `cpu / share` (none when the round alone lasted that long: its
    /// thread, at the lowest priority, got less than its share), at least `idle` when the round
    /// had nothing to do. Over time the analysis then uses at most `share` of one core.
    pub fn rest(&self, cpu: Duration, wall: Duration, had_work: bool) -> Duration {
        let rest = cpu.div_f64(self.share).saturating_sub(wall);
        if had_work { rest } else { rest.max(self.idle) }
    }
}

impl StreamOptions {
    pub fn new(follow: PathBuf, rules: crate::detect::rules::RuleSource) -> StreamOptions {
        StreamOptions {
            follow,
            commit_interval: Duration::from_secs(1),
            rules,
            detect_interval: Duration::ZERO,
            compact_min_files: 32,
            once: false,
            threads: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(2),
            vacuum_retain: Duration::from_millis(crate::lake::DEFAULT_RETENTION_MS as u64),
            rewrites_retain: REWRITES_RETAIN,
            log_retain: Duration::from_millis(
                crate::lake::cleanup::DEFAULT_LOG_RETENTION_MS as u64,
            ),
            analysis: None,
        }
    }
}

/// What a streaming run did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct StreamReport {
    pub batches: u64,
    pub commits: u64,
    pub lines_valid: u64,
    pub lines_quarantined: u64,
    pub replays: u64,
    pub detections: u64,
    pub compactions: u64,
    pub files_compacted: u64,
    /// Files deleted by vacuum (removed longer ago than the retention).
    pub files_vacuumed: u64,
    /// Commits and checkpoints of the logs deleted (older than the log retention).
    pub log_files_cleaned: u64,
    /// Batches abandoned because a file changed while being read (retried at the next look).
    pub retries: u64,
    /// Detection runs that failed (flags left as they were; tried again after the interval).
    pub detect_errors: u64,
    /// Background analysis rounds, the games they judged, and the rounds that failed.
    pub analysis_rounds: u64,
    pub games_analysed: u64,
    pub analysis_errors: u64,
    pub last_version: Option<u64>,
    pub elapsed_ms: u64,
}

impl StreamReport {
    pub fn summary_line(&self) -> String {
        format!(
            "stream: {} batches, {} commits, {} lines = {} valid + {} quarantined; {} replays, {} detection runs ({} failed), {} compactions ({} files), {} files vacuumed, {} log files cleaned; {} games analysed in {} rounds ({} failed); {} retried; last lake version {}; {:.1} s",
            self.batches,
            self.commits,
            self.lines_valid + self.lines_quarantined,
            self.lines_valid,
            self.lines_quarantined,
            self.replays,
            self.detections,
            self.detect_errors,
            self.compactions,
            self.files_compacted,
            self.files_vacuumed,
            self.log_files_cleaned,
            self.games_analysed,
            self.analysis_rounds,
            self.analysis_errors,
            self.retries,
            self.last_version
                .map(|v| v.to_string())
                .unwrap_or_else(|| "-".into()),
            self.elapsed_ms as f64 / 1000.0
        )
    }
}

/// What a file looked like when it was last read to its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seen {
    len: u64,
    mtime: Option<SystemTime>,
    ino: u64,
}

fn seen(path: &Path) -> Option<Seen> {
    let m = std::fs::metadata(path).ok()?;
    #[cfg(unix)]
    let ino = std::os::unix::fs::MetadataExt::ino(&m);
    #[cfg(not(unix))]
    let ino = 0;
    Some(Seen {
        len: m.len(),
        mtime: m.modified().ok(),
        ino,
    })
}

/// The follower: which files changed since they were last read.
#[derive(Debug, Default)]
pub struct Follower {
    seen: HashMap<PathBuf, Seen>,
}

impl Follower {
    /// Log files of `dir` that are new or changed since the last [`Follower::mark`].
    pub fn changed(&self, dir: &Path) -> Result<Vec<(PathBuf, Option<Seen>)>, StreamError> {
        let found = ingest::source::discover(&[dir.to_path_buf()]).map_err(|source| {
            StreamError::Follow {
                path: dir.to_path_buf(),
                source,
            }
        })?;
        for (d, e) in &found.unreadable {
            tracing::warn!(path = %d.display(), error = %e, "unreadable directory skipped");
        }
        Ok(found
            .files
            .into_iter()
            .filter_map(|p| {
                let now = seen(&p);
                (now.is_none() || self.seen.get(&p) != now.as_ref()).then_some((p, now))
            })
            .collect())
    }

    /// Remembers files as read to their end (as they were before the read).
    fn mark(&mut self, files: Vec<(PathBuf, Option<Seen>)>) {
        for (p, s) in files {
            if let Some(s) = s {
                self.seen.insert(p, s);
            }
        }
        self.seen.retain(|p, _| p.exists());
    }
}

/// One micro-batch: ingests `files` and commits. Returns the ingest report (version set when committed).
pub fn commit_batch(lake: &Lake, files: &[PathBuf]) -> Result<IngestReport, StreamError> {
    commit_files(lake, files, false)
}

/// [`commit_batch`] of files that are complete (a pushed body): a last line without newline is a
/// line, and an archive cut short is quarantined as corrupt instead of waited for.
pub fn commit_final(lake: &Lake, files: &[PathBuf]) -> Result<IngestReport, StreamError> {
    commit_files(lake, files, true)
}

fn commit_files(
    lake: &Lake,
    files: &[PathBuf],
    final_files: bool,
) -> Result<IngestReport, StreamError> {
    let opts = IngestOptions {
        progress: false,
        final_files,
        ..IngestOptions::default()
    };
    Ok(ingest::batch::commit_files(lake, files, &opts, "stream")?)
}

/// Slices of the accounts: each scoped detection run also refreshes one, so that
/// every account's features follow the moving window end within this many runs.
pub const ACCOUNT_SLICES: usize = 128;

/// The derived stages after a commit: replay always, detection when due.
///
/// The replay keeps its index and the lines of open games in memory
/// ([`crate::replay::run::Resident`]), so a pass reads only the new events
/// files. Detection recomputes the features of the accounts the replays
/// touched since the last run, plus one slice of all accounts in turn; the
/// last pass (`force`) recomputes everything, as a batch run would.
#[derive(Debug)]
pub struct Derive {
    rules: crate::detect::rules::RuleSource,
    detect_interval: Duration,
    threads: usize,
    last_detect: Option<Instant>,
    /// A replay committed since the last detection run.
    detect_due: bool,
    resident: crate::replay::run::Resident,
    /// Accounts touched since the last detection run.
    touched: std::collections::BTreeSet<String>,
    /// The next slice of accounts to refresh.
    slice: usize,
    /// The last detection run recomputed every account's features: a forced run after a scoped
    /// one (or a failed one) runs detection whole even when nothing new was replayed.
    exact: bool,
}

impl Derive {
    pub fn new(
        rules: crate::detect::rules::RuleSource,
        detect_interval: Duration,
        threads: usize,
    ) -> Derive {
        Derive {
            rules,
            detect_interval,
            threads,
            last_detect: None,
            detect_due: true,
            resident: Default::default(),
            touched: Default::default(),
            slice: 0,
            exact: false,
        }
    }

    /// How long until a detection run waiting for its interval is due (`None`: none waits).
    pub fn detection_wait(&self) -> Option<Duration> {
        self.detect_due.then(|| {
            self.last_detect
                .map(|t| self.detect_interval.saturating_sub(t.elapsed()))
                .unwrap_or_default()
        })
    }

    /// Whether the last detection run was whole: the features and flags are then those a batch
    /// run would make of the lake as it was (while nothing new is replayed).
    pub fn exact(&self) -> bool {
        self.exact
    }

    /// Replays what is new, then runs detection if due; `force` runs it now, and whole (every
    /// account's features) when anything was replayed or the last run was scoped. Counts go to
    /// `report`.
    pub fn run(
        &mut self,
        lake: &Lake,
        force: bool,
        report: &mut StreamReport,
    ) -> Result<(), StreamError> {
        let r = crate::replay::run::run_with(
            lake,
            &crate::replay::run::ReplayOptions {
                threads: self.threads,
                progress: false,
            },
            Some(&mut self.resident),
        )?;
        self.touched.extend(self.resident.take_accounts());
        if let Some(v) = r.version {
            report.replays += 1;
            report.last_version = Some(v);
            self.detect_due = true;
            tracing::debug!(
                version = v,
                games = r.games,
                events = r.events,
                open_games = self.resident.open_games(),
                indexed_games = self.resident.indexed_games(),
                rss_mib = resident_mib(),
                ms = r.elapsed_ms,
                "stream replay"
            );
        }
        let due = self
            .last_detect
            .is_none_or(|t| t.elapsed() >= self.detect_interval);
        if (self.detect_due && due) || (force && (self.detect_due || !self.exact)) {
            let started = Instant::now();
            // The first run and the last are whole: the features table starts and ends exact.
            let scope = (!force && self.last_detect.is_some()).then(|| {
                let mut scope = self.touched.clone();
                scope.extend(
                    self.resident
                        .account_slice(self.slice, ACCOUNT_SLICES)
                        .cloned(),
                );
                scope
            });
            let d = match crate::detect::run_scoped(
                lake,
                &self.rules,
                &Default::default(),
                scope.as_ref(),
                false,
            ) {
                Ok(d) => d,
                // A failing rule (a query over its memory limit, a broken rule file) must not stop
                // ingest and replay: the flags stay as they were, the error is logged and counted,
                // and the run is tried again after the interval with the same accounts. The last
                // pass (`force`) reports it as the stream's error.
                Err(e) if !force => {
                    tracing::error!(error = %e, "detection failed; flags unchanged, tried again after the interval");
                    report.detect_errors += 1;
                    self.last_detect = Some(started);
                    // Its features may have been committed before a rule failed.
                    self.exact = false;
                    return Ok(());
                }
                Err(e) => {
                    self.exact = false;
                    return Err(e.into());
                }
            };
            self.exact = scope.is_none();
            self.slice = (self.slice + 1) % ACCOUNT_SLICES;
            self.touched.clear();
            self.last_detect = Some(started);
            self.detect_due = false;
            if let Some(v) = d.version {
                report.detections += 1;
                report.last_version = Some(v);
                tracing::debug!(
                    version = v,
                    flags = d.flags,
                    scoped = scope.as_ref().map(|s| s.len()),
                    rss_mib = resident_mib(),
                    ms = d.elapsed_ms,
                    "stream detection"
                );
            }
        }
        Ok(())
    }
}

/// The process's resident memory in MiB (Linux; `None` elsewhere), for the debug log.
fn resident_mib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024)
}

/// Follows `opts.follow` until `stop` is set (or, with `once`, until caught up).
///
/// Three threads (four with the background analysis): this one looks and commits every interval (or at once when
/// the second pulls); a second one replays and detects whenever commits are
/// waiting, so a slow detection run never delays the next commit; a third
/// compacts when the second asks (not with `once`, whose passes compact).
pub fn run(
    lake: &Lake,
    opts: &StreamOptions,
    stop: &AtomicBool,
) -> Result<StreamReport, StreamError> {
    let started = Instant::now();
    if !opts.follow.is_dir() {
        return Err(StreamError::Follow {
            path: opts.follow.clone(),
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "not a directory"),
        });
    }
    let (tx, rx) = std::sync::mpsc::channel::<Wake>();
    let followed = AtomicBool::new(false);
    let pull = AtomicU64::new(0);
    // Compaction while following runs on a thread of its own (never between two passes), one
    // call at a time with the last pass's (`compacting`).
    let compacting = std::sync::Mutex::new(());
    let (compact_tx, compact_rx) = std::sync::mpsc::channel::<()>();
    let (ingested, derived, analysed, compacted) = std::thread::scope(|scope| {
        let compactor = (!opts.once).then(|| {
            let compacting = &compacting;
            scope.spawn(move || compact_loop(lake, opts, compact_rx, compacting))
        });
        let compact_tx = compactor.as_ref().map(|_| compact_tx);
        let compacting = &compacting;
        let pull = &pull;
        let pause = opts
            .analysis
            .as_ref()
            .filter(|_| !opts.once)
            .and_then(|a| a.options.pause.as_deref());
        let worker =
            scope.spawn(move || derive_loop(lake, opts, rx, pull, compact_tx, compacting, pause));
        let analyser = opts.analysis.as_ref().filter(|_| !opts.once).map(|a| {
            let tx = tx.clone();
            let followed = &followed;
            scope.spawn(move || analysis_loop(lake, a, followed, &tx))
        });
        let ingested = ingest_loop(lake, opts, stop, &tx, pull);
        // The analysis ends its round (its last commit is seen by the last pass).
        followed.store(true, Ordering::Relaxed);
        let analysed = analyser
            .map(|a| {
                a.join().unwrap_or_else(|_| {
                    // A bug, never input: said and counted, and the stream's own work stands.
                    tracing::error!("the analysis thread panicked");
                    StreamReport {
                        analysis_errors: 1,
                        ..Default::default()
                    }
                })
            })
            .unwrap_or_default();
        // Finish: one last forced pass (detection even if not due), then the worker ends.
        let _ = tx.send(Wake::Finish);
        drop(tx);
        let derived = worker.join().unwrap_or(Err(StreamError::DeriveStopped));
        // The replay thread's end dropped the compaction requests: the compactor ends too.
        let compacted = compactor
            .map(|c| {
                c.join().unwrap_or_else(|_| {
                    tracing::error!("the compaction thread panicked");
                    StreamReport::default()
                })
            })
            .unwrap_or_default();
        (ingested, derived, analysed, compacted)
    });
    let (mut report, derived) = match (ingested, derived) {
        (Ok(r), Ok(d)) => (r, d),
        // The replay thread's own error explains why the ingest loop stopped.
        (_, Err(e)) | (Err(e), Ok(_)) => return Err(e),
    };
    report.replays = derived.replays;
    report.detections = derived.detections;
    report.detect_errors = derived.detect_errors;
    report.compactions = derived.compactions + compacted.compactions;
    report.files_compacted = derived.files_compacted + compacted.files_compacted;
    report.files_vacuumed = derived.files_vacuumed + compacted.files_vacuumed;
    report.log_files_cleaned = derived.log_files_cleaned + compacted.log_files_cleaned;
    report.analysis_rounds = analysed.analysis_rounds;
    report.games_analysed = analysed.games_analysed;
    report.analysis_errors = analysed.analysis_errors;
    report.last_version = report
        .last_version
        .max(derived.last_version)
        .max(compacted.last_version);
    report.elapsed_ms = started.elapsed().as_millis() as u64;
    Ok(report)
}

/// Messages to the replay thread.
enum Wake {
    /// A commit landed, at that instant.
    Committed(Instant),
    /// The commit thread looked (and committed what it found) after the replay thread's pull
    /// request of this number.
    Looked(u64),
    /// The background analysis committed: detection is due again.
    Analysed,
    /// No more commits: run a last forced pass and stop.
    Finish,
}

/// The messages a pass of the replay thread takes.
#[derive(Default)]
struct Taken {
    commits: u64,
    /// When the newest of those commits landed.
    newest: Option<Instant>,
    analysed: bool,
    finish: bool,
}

impl Taken {
    fn take(&mut self, m: Wake) {
        match m {
            Wake::Committed(at) => {
                self.commits += 1;
                self.newest = self.newest.max(Some(at));
            }
            Wake::Looked(_) => {}
            Wake::Analysed => self.analysed = true,
            Wake::Finish => self.finish = true,
        }
    }
}

/// A pass pulls a fresh commit when the newest commit it takes is older than this (a commit
/// that woke an idle replay thread is fresh: no pull, no second tiny commit).
const PULL_AGE: Duration = Duration::from_millis(100);

/// Whether a pass that took these messages pulls a fresh commit before it starts: when the
/// newest commit it takes waited (at least [`PULL_AGE`]), or when only the analysis woke it.
fn pulls(taken: &Taken) -> bool {
    match taken.newest {
        Some(t) => t.elapsed() >= PULL_AGE,
        None => taken.analysed,
    }
}

/// The commit thread: a look at the directory and a commit of what changed, every
/// `commit_interval`, or at once when the replay thread pulls (`pull`, the number of its latest
/// request; each look answers the requests made before it began with [`Wake::Looked`]).
fn ingest_loop(
    lake: &Lake,
    opts: &StreamOptions,
    stop: &AtomicBool,
    tx: &std::sync::mpsc::Sender<Wake>,
    pull: &AtomicU64,
) -> Result<StreamReport, StreamError> {
    let mut report = StreamReport::default();
    let mut follower = Follower::default();
    let mut served = 0u64;
    loop {
        let tick = Instant::now();
        let requested = pull.load(Ordering::Acquire);
        let changed = follower.changed(&opts.follow)?;
        let mut committed = false;
        if !changed.is_empty() {
            let paths: Vec<PathBuf> = changed.iter().map(|(p, _)| p.clone()).collect();
            report.batches += 1;
            let batch_started = Instant::now();
            match commit_batch(lake, &paths) {
                Ok(r) => {
                    report.lines_valid += r.lines_valid;
                    report.lines_quarantined += r.lines_quarantined;
                    if let Some(v) = r.version {
                        report.commits += 1;
                        report.last_version = Some(v);
                        committed = true;
                        tracing::debug!(
                            version = v,
                            lines = r.lines_read,
                            ms = batch_started.elapsed().as_millis() as u64,
                            "stream commit"
                        );
                        if tx.send(Wake::Committed(Instant::now())).is_err() {
                            return Err(StreamError::DeriveStopped);
                        }
                    }
                    // Unreadable files and archives that may still grow are not marked:
                    // they are looked at again next time.
                    follower.mark(
                        changed
                            .into_iter()
                            .filter(|(p, _)| !r.retry.contains(p))
                            .collect(),
                    );
                }
                Err(StreamError::Ingest(IngestError::SourceChanged(p))) => {
                    tracing::warn!(file = %p.display(), "file changed while read; batch retried");
                    report.retries += 1;
                }
                Err(e) if e.is_conflict() => {
                    tracing::warn!(conflict = %e, "concurrent commit; batch retried");
                    report.retries += 1;
                }
                Err(e) => return Err(e),
            }
        }
        if requested > served {
            served = requested;
            if tx.send(Wake::Looked(served)).is_err() {
                return Err(StreamError::DeriveStopped);
            }
        }
        if (opts.once && !committed) || stop.load(Ordering::Relaxed) {
            return Ok(report);
        }
        // Sleep out the interval (from this commit, or from this look when it found nothing),
        // waking for a stop request or a pull.
        let since = if committed { Instant::now() } else { tick };
        while since.elapsed() < opts.commit_interval
            && !stop.load(Ordering::Relaxed)
            && pull.load(Ordering::Acquire) <= served
        {
            std::thread::sleep(
                opts.commit_interval
                    .saturating_sub(since.elapsed())
                    .min(Duration::from_millis(10)),
            );
        }
        if stop.load(Ordering::Relaxed) {
            return Ok(report);
        }
    }
}

/// The background analysis paused while this lives (a pass): on a 2-core machine the passes that
/// shared the cores with an analysis round (at the same priority) took half as long again.
/// The analysis waits before its next read, position or commit (a position is a few
/// milliseconds of search), and takes the
/// time between passes (the pull of their commit: about a tenth of a core at 10,000 lines a
/// second over a month of history) and all of its share when lines stop coming.
struct Paused<'a>(&'a AtomicBool);

impl<'a> Paused<'a> {
    fn new(flag: &'a AtomicBool) -> Paused<'a> {
        flag.store(true, Ordering::Release);
        Paused(flag)
    }
}

impl Drop for Paused<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

/// One compaction call, counted in `report` and timed in the debug log.
fn compact_once(
    lake: &Lake,
    opts: &StreamOptions,
    budget: Option<u64>,
    report: &mut StreamReport,
) -> Result<(), StreamError> {
    let started = Instant::now();
    let c = compact::compact(lake, opts.compact_min_files, budget)?;
    if c.files_removed > 0 {
        tracing::debug!(
            files = c.files_removed,
            rows = c.rows,
            ms = started.elapsed().as_millis() as u64,
            "stream compaction"
        );
        report.compactions += 1;
        report.files_compacted += c.files_removed;
        report.last_version = c.version.or(report.last_version);
    }
    Ok(())
}

/// The compaction thread: a bounded compaction (`compact::PASS_BYTES`) each time the replay
/// thread asks (requests made meanwhile count once), until it stops asking. Its commits remove
/// only closed files that no pass is writing, so a pass goes on meanwhile instead of waiting
/// (a compaction of 32 MiB takes about a second on a small machine, and used to be added to
/// the flag latency of everything that arrived during it). A conflict with a concurrent commit
/// or a failed call is logged and tried again at the next request: compaction never stops the
/// stream, and the last pass compacts what is left.
fn compact_loop(
    lake: &Lake,
    opts: &StreamOptions,
    rx: std::sync::mpsc::Receiver<()>,
    compacting: &std::sync::Mutex<()>,
) -> StreamReport {
    let mut report = StreamReport::default();
    lower_priority();
    // Vacuum here too, off the passes' thread (deleting a few minutes of the rewritten tables'
    // files, about a thousand and a gigabyte on a month of 20,000 accounts, held up a pass), when
    // due, whether or not a compaction was asked for (passes woken by the analysis rewrite those
    // tables with no new lines) or succeeded.
    let every = VACUUM_EVERY
        .min(opts.rewrites_retain / 5)
        .max(Duration::from_secs(1));
    let mut last_vacuum: Option<Instant> = None;
    let mut last_sweep: Option<Instant> = None;
    loop {
        let wait = last_vacuum.map_or(Duration::ZERO, |t| every.saturating_sub(t.elapsed()));
        let asked = match rx.recv_timeout(wait) {
            Ok(()) => true,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => false,
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
        };
        while rx.try_recv().is_ok() {}
        let _one = compacting.lock().unwrap_or_else(|p| p.into_inner());
        if asked {
            let done = compact_once(lake, opts, Some(compact::PASS_BYTES), &mut report);
            log_background("compaction", done);
        }
        if last_vacuum.is_none_or(|t| t.elapsed() >= every) {
            last_vacuum = Some(Instant::now());
            log_background("vacuum", vacuum_once(lake, opts, &mut report));
        }
        if last_sweep.is_none_or(|t| t.elapsed() >= SWEEP_EVERY) {
            last_sweep = Some(Instant::now());
            sweep_file_caches(lake);
        }
    }
    report
}

/// How often, at most, the compaction thread drops the shared file caches' entries of removed files
/// (it does when it wakes: a compaction asked for, or the vacuum's timer).
const SWEEP_EVERY: Duration = Duration::from_secs(5);

/// Drops the shared caches' statistics and footers of the files the lake no longer has
/// ([`crate::lake::sql::forget_removed_files`]): the stream writes, rewrites and compacts files
/// every second, and those entries would otherwise stay until the caches' bounds.
fn sweep_file_caches(lake: &Lake) {
    let swept = lake
        .snapshot()
        .map_err(|e| e.to_string())
        .and_then(|s| crate::lake::sql::forget_removed_files(&s).map_err(|e| e.to_string()));
    match swept {
        Ok(s) => tracing::debug!(
            dropped = s.dropped,
            statistics = s.statistics,
            statistics_kib = s.statistics_bytes / 1024,
            footers = s.footers,
            footers_kib = s.footers_bytes / 1024,
            "file caches swept"
        ),
        Err(e) => tracing::debug!(error = %e, "file caches not swept; tried again later"),
    }
}

/// A background step's failure, said; the step is tried again later.
fn log_background(step: &str, done: Result<(), StreamError>) {
    match done {
        Ok(()) => {}
        Err(e) if e.is_conflict() => {
            tracing::debug!(conflict = %e, "{step} met a concurrent commit; tried again later");
        }
        Err(e) => tracing::warn!(error = %e, "{step} failed; tried again later"),
    }
}

/// Deletes the files removed longer ago than the retention ([`StreamOptions::vacuum_retain`], and
/// [`StreamOptions::rewrites_retain`] for [`rewritten_each_pass`]).
fn vacuum_once(
    lake: &Lake,
    opts: &StreamOptions,
    report: &mut StreamReport,
) -> Result<(), StreamError> {
    let ms = |d: Duration| i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
    let shorter: BTreeMap<&str, i64> = rewritten_each_pass()
        .into_iter()
        .map(|t| (t, ms(opts.rewrites_retain)))
        .collect();
    let mut w = lake.writer()?;
    let v = w.vacuum_with(ms(opts.vacuum_retain), &shorter)?;
    report.files_vacuumed += v.files;
    report.last_version = v.version.or(report.last_version);
    let c = w.clean_logs(ms(opts.log_retain))?;
    report.log_files_cleaned += c.vigie_files + c.delta_files;
    Ok(())
}

/// Lowers the calling thread's scheduling priority to the nicest (Linux: `setpriority` on the
/// thread id, which the threads it starts inherit; elsewhere nothing): the compaction and analysis
/// threads then run on what the passes leave idle. Such a thread must not be the first to use a
/// pool of threads that others share (detection's runtime, polars' pool): its threads would
/// inherit the priority (`detect::flagged_accounts` builds a runtime of its own for this).
fn lower_priority() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: plain system calls on the calling thread's own id, with no pointer arguments.
        let done = unsafe {
            let tid = libc::gettid();
            libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, 19)
        };
        if done != 0 {
            tracing::debug!("a background thread keeps its priority (setpriority failed)");
        }
    }
}

/// How often the stream vacuums while following (every fifth of
/// [`StreamOptions::rewrites_retain`] when that is shorter, at most once a second), on the
/// compaction thread.
pub const VACUUM_EVERY: Duration = Duration::from_secs(3600);

/// How long the stream keeps the removed files of [`rewritten_each_pass`] by default.
pub const REWRITES_RETAIN: Duration = Duration::from_secs(300);

/// The tables a detection pass replaces whole: the features of every account and pair, and the
/// flags.
pub fn rewritten_each_pass() -> [&'static str; 3] {
    [
        crate::features::account_table().name,
        crate::features::pair_table().name,
        crate::detect::FlagRow::def().name,
    ]
}

/// The analysis thread: rounds of `vigie analyse` (flagged accounts' games first) until the stream
/// stops, each followed by a rest that keeps it to its share of a core (counted in the processor
/// time its rounds used). It waits while a pass runs ([`Paused`]: before a round, and before a
/// chunk's reads, each position and the commit of a round), and runs at the lowest priority, like
/// compaction, so that it takes the time between passes and seldom the cores a pass could use (a
/// round's choice of games, a few tens of milliseconds, does not wait). A game it could not follow
/// is never taken again (a round of four would otherwise take it every time). A failed round (a
/// concurrent commit, a read error) is logged and counted, and tried again after the rest: the
/// analysis never stops the stream. Its commits touch only `move_analysis` and its own stage, so
/// they never conflict with the stream's.
fn analysis_loop(
    lake: &Lake,
    a: &StreamAnalysis,
    followed: &AtomicBool,
    tx: &std::sync::mpsc::Sender<Wake>,
) -> StreamReport {
    let mut report = StreamReport::default();
    lower_priority();
    // The games a round could not follow, never selected again.
    let mut options = a.options.clone();
    while !followed.load(Ordering::Relaxed) {
        options.wait_while_paused();
        let started = Instant::now();
        let focus_started = crate::analysis::thread_cpu_time();
        let focus = crate::detect::flagged_accounts(lake).map_err(|e| e.to_string());
        let focus_cpu = focus_started
            .zip(crate::analysis::thread_cpu_time())
            .map(|(a, b)| b.saturating_sub(a));
        let round = focus.and_then(|focus| {
            crate::analysis::run(lake, &options, &focus, &|_, _| {}).map_err(|e| e.to_string())
        });
        report.analysis_rounds += 1;
        // A failed round, or a clock that cannot tell, counts its whole time as busy.
        let mut cpu = started.elapsed();
        let had_work = match round {
            Ok(r) => {
                if let Some(focus_cpu) = focus_cpu {
                    cpu = focus_cpu + Duration::from_millis(r.cpu_ms);
                }
                options.exclude.extend(r.skipped.iter().cloned());
                report.games_analysed += r.games_analysed;
                if r.version.is_some() {
                    tracing::debug!(
                        games = r.games_analysed,
                        positions = r.positions,
                        cpu_ms = r.cpu_ms,
                        ms = r.elapsed_ms,
                        "stream analysis"
                    );
                    let _ = tx.send(Wake::Analysed);
                }
                r.games_analysed + r.games_skipped > 0
            }
            Err(e) => {
                tracing::warn!(error = %e, "analysis round failed; tried again later");
                report.analysis_errors += 1;
                false
            }
        };
        let rest = a.rest(cpu, started.elapsed(), had_work);
        let resting = Instant::now();
        while resting.elapsed() < rest && !followed.load(Ordering::Relaxed) {
            std::thread::sleep(
                rest.saturating_sub(resting.elapsed())
                    .min(Duration::from_millis(50)),
            );
        }
    }
    report
}

/// The replay thread: replay, detection when due, compaction asked for now and then (done here
/// on the last pass and with `--once`), and the last vacuum (the compaction thread vacuums while
/// following).
/// A pass that takes commits which waited while the last pass ran first pulls (`pull`): the
/// commit thread looks and commits at once, so the pass starts with everything written until
/// it began instead of what the last interval's commit held. So does a pass woken by the
/// analysis' commit alone: it replays what was written meanwhile too, instead of a detection of
/// its own that the next commit then waits for (with the analysis on, one pass in five was such
/// a pass, and it made the tail of the flag latency).
fn derive_loop(
    lake: &Lake,
    opts: &StreamOptions,
    rx: std::sync::mpsc::Receiver<Wake>,
    pull: &AtomicU64,
    compactor: Option<std::sync::mpsc::Sender<()>>,
    compacting: &std::sync::Mutex<()>,
    pause: Option<&AtomicBool>,
) -> Result<StreamReport, StreamError> {
    let mut report = StreamReport::default();
    let mut derive = Derive::new(opts.rules.clone(), opts.detect_interval, opts.threads);
    let mut since_compaction = 0u64;
    let mut finish = false;
    // Whether the last pass took commits: while lines keep coming, the next pass pulls at once
    // instead of waiting for the commit thread's interval (which a pull restarts, so the wait
    // was most of an interval less a pass: about a quarter of a second of every cycle).
    let mut flowing = false;
    while !finish {
        // Wait for a commit (or for a waiting detection run to be due), then take every message
        // waiting; while lines keep coming, only what is waiting.
        let wait = derive
            .detection_wait()
            .unwrap_or(Duration::from_secs(1))
            .max(Duration::from_millis(20));
        let first = if flowing {
            None
        } else {
            match rx.recv_timeout(wait) {
                Ok(m) => Some(m),
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => None,
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => Some(Wake::Finish),
            }
        };
        let mut taken = Taken::default();
        for m in first.into_iter().chain(rx.try_iter()) {
            taken.take(m);
        }
        // Commits that waited while the last pass ran, or lines still coming: pull what was
        // written since, and wait (at most a commit interval) for the commit thread's look.
        if !taken.finish && (flowing || pulls(&taken)) {
            let request = pull.fetch_add(1, Ordering::AcqRel) + 1;
            let deadline = Instant::now() + opts.commit_interval;
            while !taken.finish {
                match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                    Ok(Wake::Looked(n)) if n >= request => break,
                    Ok(m) => taken.take(m),
                    Err(std::sync::mpsc::RecvTimeoutError::Timeout) => break,
                    Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => taken.finish = true,
                }
            }
        }
        let commits = taken.commits;
        finish = taken.finish;
        flowing = commits > 0;
        derive.detect_due |= taken.analysed;
        since_compaction += commits;
        // The last pass waits for the compaction thread's call under way and keeps it out, so
        // that none of its commits races the last replay's (with `--once` there is no such thread).
        let _last = finish.then(|| compacting.lock().unwrap_or_else(|p| p.into_inner()));
        let pass = {
            let _paused = pause.map(Paused::new);
            derive.run(lake, finish, &mut report)
        };
        let pass = pass.and_then(|()| {
            if since_compaction >= (opts.compact_min_files as u64 / 2).max(1) || finish {
                since_compaction = 0;
                match (&compactor, finish) {
                    // While following: a bounded slice, on the compaction thread.
                    (Some(c), false) => {
                        let _ = c.send(());
                    }
                    // The last pass (and `--once`): everything left, here.
                    _ => {
                        let budget = (!finish).then_some(compact::PASS_BYTES);
                        compact_once(lake, opts, budget, &mut report)?;
                    }
                }
            }
            // Vacuum on the way out (while following, the compaction thread vacuums; with
            // `--once` there is no such thread and this is the only pass).
            if finish {
                vacuum_once(lake, opts, &mut report)?;
            }
            Ok(())
        });
        match pass {
            Ok(()) => {}
            // Another writer moved the same stage or files: the next pass starts again from the lake.
            Err(e) if e.is_conflict() && !finish => {
                tracing::warn!(conflict = %e, "concurrent commit; replay retried");
            }
            Err(e) => return Err(e),
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_conflict_met_by_any_stage_is_retried_not_fatal() {
        let conflict = || LakeError::Conflict("commit 67 (compact) removed a file".into());
        for e in [
            StreamError::Lake(conflict()),
            StreamError::Ingest(IngestError::Lake(conflict())),
            StreamError::Replay(crate::replay::run::ReplayError::Lake(conflict())),
            StreamError::Detect(crate::detect::DetectError::Lake(conflict())),
        ] {
            assert!(e.is_conflict(), "{e}");
        }
        assert!(!StreamError::Replay(crate::replay::run::ReplayError::Worker).is_conflict());
        assert!(!StreamError::DeriveStopped.is_conflict());
    }

    #[test]
    fn the_background_analysis_rests_to_keep_its_share_of_a_core() {
        let a = StreamAnalysis::new(0.25, 50_000, 0.05);
        assert_eq!(a.options.threads, 1);
        let s = Duration::from_secs;
        // 2 s of processor time in 2 s at a quarter of a core: 6 s of rest, 2 s of work in every 8.
        assert_eq!(a.rest(s(2), s(2), true), s(6));
        // The same work stretched over 5 s by busier threads: 3 s of rest, still 2 s in 8.
        assert_eq!(a.rest(s(2), s(5), true), s(3));
        // Stretched beyond its whole cycle: no rest, and still no more than a quarter.
        assert_eq!(a.rest(s(2), s(9), true), Duration::ZERO);
        // Nothing to do: at least the idle wait.
        assert_eq!(
            a.rest(
                Duration::from_millis(100),
                Duration::from_millis(100),
                false
            ),
            a.idle
        );
        let whole = StreamAnalysis::new(1.0, 50_000, 0.05);
        assert_eq!(whole.rest(s(2), s(2), true), Duration::ZERO);
        // A share of 0 or less is clamped, never a division by zero.
        assert!(StreamAnalysis::new(0.0, 50_000, 0.05).share > 0.0);
    }

    #[test]
    fn a_pass_pulls_after_a_commit_that_waited_or_when_only_the_analysis_woke_it() {
        let mut taken = Taken::default();
        // Woken by its own timer: nothing to pull for.
        assert!(!pulls(&taken));
        taken.take(Wake::Analysed);
        assert!(pulls(&taken));
        // With a commit that just landed, the pass starts at once.
        taken.take(Wake::Committed(Instant::now()));
        assert!(!pulls(&taken));
        let mut waited = Taken::default();
        let then = Instant::now().checked_sub(PULL_AGE * 2).unwrap();
        waited.take(Wake::Committed(then));
        assert!(pulls(&waited));
    }

    /// The committed sample log (40 clean games), as text.
    pub(super) fn sample_text() -> String {
        std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/server-logs/sample.jsonl"
        ))
        .unwrap()
    }

    #[test]
    fn a_pull_commits_what_is_written_without_waiting_for_the_interval() {
        let dir = tempfile::tempdir().unwrap();
        let follow = dir.path().join("logs");
        std::fs::create_dir_all(&follow).unwrap();
        let sample = sample_text();
        let lines: Vec<&str> = sample.lines().collect();
        let (first, rest) = lines.split_at(lines.len() / 2);
        let log = follow.join("srv-01.jsonl");
        std::fs::write(&log, first.join("\n") + "\n").unwrap();
        let lake = Lake::open(dir.path().join("lake")).unwrap();
        // An hour between two commits: only a pull commits the second half in this test.
        let mut opts = StreamOptions::new(follow, crate::detect::rules::RuleSource::Builtin);
        opts.commit_interval = Duration::from_secs(3600);
        let (stop, pull) = (AtomicBool::new(false), AtomicU64::new(0));
        let (tx, rx) = std::sync::mpsc::channel();
        let wait = Duration::from_secs(120);
        let report = std::thread::scope(|s| {
            let ingest = s.spawn(|| ingest_loop(&lake, &opts, &stop, &tx, &pull));
            // The first look commits the first half.
            assert!(matches!(rx.recv_timeout(wait), Ok(Wake::Committed(_))));
            let mut file = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
            std::io::Write::write_all(&mut file, (rest.join("\n") + "\n").as_bytes()).unwrap();
            drop(file);
            pull.fetch_add(1, Ordering::AcqRel);
            // The look that answers the request commits the rest before it says so.
            let mut committed = 0;
            loop {
                match rx.recv_timeout(wait).unwrap() {
                    Wake::Committed(_) => committed += 1,
                    Wake::Looked(n) => {
                        assert_eq!(n, 1);
                        break;
                    }
                    Wake::Analysed | Wake::Finish => panic!("not sent by the commit thread"),
                }
            }
            assert_eq!(committed, 1);
            stop.store(true, Ordering::Relaxed);
            ingest.join().unwrap().unwrap()
        });
        assert_eq!(report.commits, 2);
        assert_eq!(
            report.lines_valid + report.lines_quarantined,
            lines.len() as u64
        );
    }

    #[test]
    fn a_failing_rule_leaves_the_flags_and_is_retried_until_the_last_pass() {
        let dir = tempfile::tempdir().unwrap();
        let sample = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/server-logs/sample.jsonl"
        );
        let lake = Lake::open(dir.path().join("lake")).unwrap();
        commit_batch(&lake, &[PathBuf::from(sample)]).unwrap();
        // A rule that fails when run (its table does not exist).
        let rules = dir.path().join("rules");
        std::fs::create_dir_all(&rules).unwrap();
        std::fs::write(
            rules.join("broken.sql"),
            "-- id: broken\n-- title: Broken\n-- catches: nothing\n-- why: a test\n-- severity: low\n-- action: review\nSELECT account, '30d' AS \"window\", 1.0 AS score FROM no_such_table\n",
        )
        .unwrap();
        let mut derive = Derive::new(rules.into(), Duration::ZERO, 1);
        let mut report = StreamReport::default();
        derive.run(&lake, false, &mut report).unwrap();
        assert_eq!((report.replays, report.detect_errors), (1, 1));
        assert_eq!(lake.state().unwrap().table_files("flags").count(), 0);
        // Still due: the next pass tries again, and the last one reports the error.
        assert_eq!(derive.detection_wait(), Some(Duration::ZERO));
        derive.run(&lake, false, &mut report).unwrap();
        assert_eq!(report.detect_errors, 2);
        assert!(derive.run(&lake, true, &mut report).is_err());
    }
}
