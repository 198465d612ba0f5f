//! The Parquet lake: tables as Delta Lake tables (date-partitioned Parquet and a `_delta_log/` each), made visible atomically by Vigie's commit log.
//!
//! Layout of a lake directory:
//!
//! ```text
//! LAKE/events/date=2026-11-20/part-<writer>-<n>.parquet    data files (ordinary Parquet)
//! LAKE/events/_delta_log/00000000000000000007.json         the table's Delta log (see [`delta`])
//! LAKE/quarantine/date=2026-11-29/part-….parquet
//! LAKE/_vigie/log/00000000000000000042.json                 commit 42 (a delta over every table)
//! LAKE/_vigie/log/00000000000000000032.checkpoint.json      the whole state at 32
//! LAKE/_vigie/writers/<writer>.lock                         held (flock) while a writer lives (published locked)
//! ```
//!
//! Protocol. A writer writes each data file under its final name (no log
//! names it yet, so no reader sees it), fsyncs it, then commits by creating
//! the next commit file with an exclusive hard link: the commit exists whole
//! or not at all, and two writers can never both take a version. Then it rolls
//! the tables' Delta logs forward ([`delta::sync`]). Readers list files from
//! a committed state (Vigie's, or a table's Delta log), never from the
//! directory. A writer that dies leaves files that no commit names; the next
//! writer to open the lake deletes them (after checking, by its lock, that
//! their writer is dead) and writes the Delta commits a crash left unwritten.
//! Files removed by a commit stay on disk until [`Writer::vacuum`], so that
//! older versions stay readable; [`Writer::clean_logs`] deletes the logs' commits
//! and checkpoints older than the log retention. `docs/lake.md` has the protocol
//! and its crash cases.

pub mod bounded;
pub mod cleanup;
pub mod decoded;
pub mod delta;
pub mod functions;
pub mod manifest;
pub mod parquet;
pub mod record;
pub mod sql;
pub mod tables;

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

pub use manifest::{
    Commit, FileEntry, FileMeta, SEALED_KEPT, SealedAt, SourceState, Stage, StageError, State,
};

/// Make a checkpoint every this many commits.
pub const CHECKPOINT_EVERY: u64 = 32;
/// A tombstone whose file is gone (vacuumed by another tool) is forgotten by the next checkpoint
/// commit (every [`CHECKPOINT_EVERY`]) once it is this old.
pub const TOMBSTONE_GRACE_MS: i64 = 10 * 60 * 1000;
/// How long `vigie vacuum` keeps removed files by default: Delta's `deletedFileRetentionDuration`.
pub const DEFAULT_RETENTION_MS: i64 = 168 * 3_600_000;

/// Age past which an unpublished writer lock (`.<id>.lock.new`) is a dead writer's.
const STALE_NEW_LOCK: std::time::Duration = std::time::Duration::from_secs(60);

/// Errors of the lake layer.
#[derive(Debug, thiserror::Error)]
pub enum LakeError {
    #[error("I/O error on {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error("corrupt lake log file {path}: {msg}")]
    Corrupt { path: PathBuf, msg: String },
    #[error("commit conflict: {0}")]
    Conflict(String),
    #[error(
        "{what} is older than the lake's log keeps (the oldest version it can read is {oldest}; `vigie vacuum --log-retain HOURS` sets how long commits are kept)"
    )]
    Expired { what: String, oldest: u64 },
    #[error(transparent)]
    Stage(#[from] StageError),
    #[error(
        "{0} is not a Vigie lake (no _vigie/log): check --lake, or run a writing command such as `vigie ingest` to create one"
    )]
    NotALake(PathBuf),
    #[error("parquet: {0}")]
    Parquet(#[from] ::parquet::errors::ParquetError),
    #[error("arrow: {0}")]
    Arrow(#[from] arrow::error::ArrowError),
}

pub type Result<T, E = LakeError> = std::result::Result<T, E>;

pub(crate) trait IoContext<T> {
    fn at(self, path: &Path) -> Result<T>;
}

impl<T> IoContext<T> for io::Result<T> {
    fn at(self, path: &Path) -> Result<T> {
        self.map_err(|source| LakeError::Io {
            path: path.to_path_buf(),
            source,
        })
    }
}

/// Wall-clock epoch milliseconds.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// A lake directory opened by one process.
pub struct Lake {
    root: PathBuf,
    /// The latest state read, shared with the snapshots taken from it (see [`Lake::state`]).
    cache: Mutex<Option<Arc<State>>>,
    /// Tables declared for their Delta logs (schemas of tables that may still be empty).
    catalogue: std::collections::BTreeMap<String, delta::TableSchema>,
    /// One Delta roll-forward at a time in this process, and the heads it knows.
    delta_lock: Mutex<()>,
    delta_heads: Mutex<BTreeMap<String, delta::Head>>,
    /// The latest `metaData` of each table's Delta log it knows.
    delta_meta: Mutex<BTreeMap<String, delta::TableMeta>>,
    /// The newest Delta checkpoint of each table this process wrote or checked against Vigie's
    /// state (a checkpoint is written once and never changes): a writer checks only newer ones.
    checkpoints_verified: Mutex<BTreeMap<String, u64>>,
    /// The oldest version left in each log this process cleaned ([`Writer::clean_logs`]; the key
    /// `""` is Vigie's log, the others are tables): a cleaning deletes from there, by name, with no
    /// listing of a log that holds a commit a second for the whole retention.
    log_floors: Mutex<BTreeMap<String, u64>>,
}

/// A committed state of the lake, for readers.
#[derive(Debug, Clone)]
pub struct Snapshot {
    root: PathBuf,
    pub state: Arc<State>,
    /// Of an older version: its tables some of whose files were vacuumed since, each with one
    /// such file (a query of them fails and names it; the other tables read as they were).
    vacuumed: BTreeMap<String, String>,
}

impl Snapshot {
    /// A snapshot with no table file (for schemas and documentation).
    pub fn empty(root: &Path) -> Snapshot {
        Snapshot {
            root: root.to_path_buf(),
            state: Arc::new(State::default()),
            vacuumed: BTreeMap::new(),
        }
    }

    /// Why `table` of this (older) version can no longer be read, when a file of it was vacuumed.
    pub fn vacuumed(&self, table: &str) -> Option<String> {
        self.vacuumed.get(table).map(|path| {
            format!(
                "table {table} at version {} can no longer be read: {path} was vacuumed (keep versions longer with `vigie vacuum --retain HOURS`; the stream keeps the tables each pass rewrites for `--vacuum-retain-rewrites` minutes)",
                self.state.version
            )
        })
    }

    /// Lake version of this snapshot.
    pub fn version(&self) -> u64 {
        self.state.version
    }

    /// A stable id of the snapshot: its version and a digest of its files.
    pub fn id(&self) -> String {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        for f in self.state.files.values() {
            h.update(f.path.as_bytes());
            h.update(f.rows.to_le_bytes());
            h.update(f.bytes.to_le_bytes());
        }
        let d = h.finalize();
        format!("v{}-{}", self.state.version, hex(&d[..6]))
    }

    /// The absolute paths of a table's live files, resolving files whose final rename is still pending.
    pub fn table_paths(&self, table: &str) -> Vec<PathBuf> {
        self.state
            .table_files(table)
            .map(|f| resolve(&self.root, &f.path))
            .collect()
    }

    /// The live files of a table with their absolute paths.
    pub fn table_files(&self, table: &str) -> Vec<(PathBuf, &FileEntry)> {
        self.state
            .table_files(table)
            .map(|f| (resolve(&self.root, &f.path), f))
            .collect()
    }

    /// The lake root.
    pub fn root(&self) -> &Path {
        &self.root
    }
}

/// The absolute path of a live data file: its final name, or its pending name while the rename
/// that follows its commit has not happened yet.
pub fn resolve(root: &Path, rel: &str) -> PathBuf {
    let fin = root.join(rel);
    if fin.exists() {
        return fin;
    }
    let pending = pending_path(&fin);
    if pending.exists() { pending } else { fin }
}

/// The hidden name a data file has until its commit is durable.
pub fn pending_path(final_path: &Path) -> PathBuf {
    let name = final_path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    final_path.with_file_name(format!(".{name}.pending"))
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

fn random_id() -> String {
    use sha2::{Digest, Sha256};
    use std::hash::{BuildHasher, RandomState};
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let mut h = Sha256::new();
    h.update(nanos.to_le_bytes());
    h.update(std::process::id().to_le_bytes());
    h.update(RandomState::new().hash_one(nanos).to_le_bytes());
    hex(&h.finalize()[..8])
}

fn fsync_dir(dir: &Path) -> Result<()> {
    File::open(dir).and_then(|f| f.sync_all()).at(dir)
}

impl Lake {
    /// Opens (creating if needed) a lake directory for reading.
    pub fn open(root: impl Into<PathBuf>) -> Result<Lake> {
        let root = root.into();
        for d in ["_vigie/log", "_vigie/writers", "_vigie/tmp"] {
            let p = root.join(d);
            fs::create_dir_all(&p).at(&p)?;
        }
        // Absolute, so that file URLs (DataFusion's object store) work from any working directory.
        let root = fs::canonicalize(&root).at(&root)?;
        Ok(Lake {
            root,
            cache: Mutex::new(None),
            catalogue: BTreeMap::new(),
            delta_lock: Mutex::new(()),
            delta_heads: Mutex::new(BTreeMap::new()),
            delta_meta: Mutex::new(BTreeMap::new()),
            checkpoints_verified: Mutex::new(BTreeMap::new()),
            log_floors: Mutex::new(BTreeMap::new()),
        })
    }

    /// Declares the lake's tables, so that their Delta logs exist even while they are empty.
    pub fn with_catalogue(mut self, tables: &[tables::TableDef]) -> Lake {
        self.catalogue = tables
            .iter()
            .map(|t| {
                (
                    t.name.to_owned(),
                    delta::TableSchema {
                        schema: t.schema(),
                        partition: t.partition.map(str::to_owned),
                    },
                )
            })
            .collect();
        self
    }

    /// Checks every table's Delta log against Vigie's log (see [`delta::check`]).
    pub fn check_delta(&self) -> Result<Vec<delta::TableCheck>> {
        delta::check(self, &self.catalogue)
    }

    /// Rolls every table's Delta log forward to the latest Vigie commit (see [`delta::sync`]).
    pub fn sync_delta(&self) -> Result<delta::SyncReport> {
        delta::sync(self, &self.catalogue)
    }

    /// The committed state at an older `version` (time travel); its files may have been vacuumed.
    pub fn state_at(&self, version: u64) -> Result<State> {
        let (commits, checkpoints) = self.list_log()?;
        let latest = commits.last().copied().unwrap_or(0);
        if version > latest {
            return Err(LakeError::Conflict(format!(
                "version {version} is not committed (the latest is {latest})"
            )));
        }
        let start = checkpoints
            .iter()
            .rev()
            .find(|&&c| c <= version && (c + 1..=version).all(|v| commits.contains(&v)))
            .copied();
        let mut state = match start {
            Some(c) => Self::read_json::<State>(&self.checkpoint_path(c))?,
            None => {
                if let Some(missing) = (1..=version).find(|v| !commits.contains(v)) {
                    // The log was cleaned up to a checkpoint after this version.
                    if let Some(oldest) =
                        oldest_readable(&commits, &checkpoints, latest).filter(|&o| o > version)
                    {
                        return Err(LakeError::Expired {
                            what: format!("version {version}"),
                            oldest,
                        });
                    }
                    return Err(LakeError::Corrupt {
                        path: self.commit_path(missing),
                        msg: format!("commit {missing} is missing"),
                    });
                }
                State::default()
            }
        };
        for v in state.version + 1..=version {
            state.apply(&self.read_commit(v)?);
        }
        Ok(state)
    }

    /// The Vigie version that was the latest at `time_ms` (the newest commit made at or before it:
    /// a binary search, commits being made in time order). A time before the oldest commit the
    /// log keeps is an error once the log was cleaned ([`Writer::clean_logs`]).
    pub fn version_at(&self, time_ms: i64) -> Result<u64> {
        let (commits, checkpoints) = self.list_log()?;
        let commits: Vec<u64> = commits.into_iter().collect();
        let (mut lo, mut hi) = (0, commits.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.read_commit(commits[mid])?.time_ms <= time_ms {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        match lo.checked_sub(1) {
            Some(i) => Ok(commits[i]),
            None => match commits.first() {
                Some(&first) if first > 1 => {
                    let latest = commits.last().copied().unwrap_or(first);
                    let set: BTreeSet<u64> = commits.iter().copied().collect();
                    Err(LakeError::Expired {
                        what: format!("the time {}", crate::log::syntax::format_ts(time_ms)),
                        oldest: oldest_readable(&set, &checkpoints, latest).unwrap_or(first),
                    })
                }
                _ => Ok(0),
            },
        }
    }

    /// The version an `--as-of` argument names: a version number, or a time
    /// (`2026-11-20T10:00:00.000Z`, `2026-11-20T10:00:00Z` or a date, read as its last millisecond).
    pub fn version_of(&self, spec: &str) -> Result<u64> {
        let spec = spec.trim();
        if let Ok(v) = spec.parse::<u64>() {
            return Ok(v);
        }
        let candidates = [
            spec.to_owned(),
            spec.replacen('Z', ".000Z", 1),
            format!("{spec}T23:59:59.999Z"),
        ];
        let ms = candidates
            .iter()
            .find_map(|c| crate::log::syntax::parse_ts(c).ok())
            .ok_or_else(|| {
                LakeError::Conflict(format!(
                    "{spec:?} is neither a version nor a time like 2026-11-20T10:00:00.000Z"
                ))
            })?;
        self.version_at(ms)
    }

    /// A snapshot of an older version. The tables whose files were all kept read as they were;
    /// one with a file vacuumed since is named by [`Snapshot::vacuumed`], and a query of it fails.
    /// An error when no table can be read any more.
    pub fn snapshot_at(&self, version: u64) -> Result<Snapshot> {
        let state = self.state_at(version)?;
        let mut vacuumed = BTreeMap::new();
        for f in state.files.values() {
            if !vacuumed.contains_key(&f.table) && !resolve(&self.root, &f.path).exists() {
                vacuumed.insert(f.table.clone(), f.path.clone());
            }
        }
        let tables: BTreeSet<&str> = state.files.values().map(|f| f.table.as_str()).collect();
        if !tables.is_empty() && vacuumed.len() == tables.len() {
            let gone = vacuumed.values().next().cloned().unwrap_or_default();
            return Err(LakeError::Conflict(format!(
                "version {version} can no longer be read: {gone} was vacuumed (keep versions longer with `vigie vacuum --retain HOURS`)"
            )));
        }
        Ok(Snapshot {
            root: self.root.clone(),
            state: Arc::new(state),
            vacuumed,
        })
    }

    /// Opens a lake directory that must exist already (commands that only read never create one).
    pub fn open_existing(root: impl Into<PathBuf>) -> Result<Lake> {
        let root = root.into();
        if !root.join("_vigie/log").is_dir() {
            return Err(LakeError::NotALake(root));
        }
        Lake::open(root)
    }

    /// The lake root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn log_dir(&self) -> PathBuf {
        self.root.join("_vigie/log")
    }

    fn commit_path(&self, v: u64) -> PathBuf {
        self.log_dir().join(format!("{v:020}.json"))
    }

    fn checkpoint_path(&self, v: u64) -> PathBuf {
        self.log_dir().join(format!("{v:020}.checkpoint.json"))
    }

    /// The oldest commit in the log (1 unless [`Writer::clean_logs`] deleted older ones; 1 too for
    /// a log with none yet). Lists the log.
    pub(crate) fn first_commit(&self) -> Result<u64> {
        let (commits, _) = self.list_log()?;
        Ok(commits.first().copied().unwrap_or(1))
    }

    /// Versions of commits and checkpoints present in the log.
    fn list_log(&self) -> Result<(BTreeSet<u64>, BTreeSet<u64>)> {
        list_log_dir(&self.log_dir())
    }

    fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T> {
        let bytes = fs::read(path).at(path)?;
        serde_json::from_slice(&bytes).map_err(|e| LakeError::Corrupt {
            path: path.to_path_buf(),
            msg: e.to_string(),
        })
    }

    /// Reads commit `v`.
    pub fn read_commit(&self, v: u64) -> Result<Commit> {
        Self::read_json(&self.commit_path(v))
    }

    /// The latest committed state, shared: a call that finds no new commit returns the cached
    /// state itself, whatever the number of files and tombstones it holds.
    ///
    /// With a cached state at version `v`, the new commits are found by looking for `v + 1`,
    /// `v + 2`... (commits are published whole under their final name, and removed only by a log
    /// cleanup, oldest first and never the latest), so a call costs a `stat` or two when nothing
    /// changed, not a listing of the whole log. Without one (the first call), or when a cleanup
    /// deleted the cached version's commit, the newest checkpoint is read.
    pub fn state(&self) -> Result<Arc<State>> {
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        let (mut state, mut fresh) = match cache.take() {
            Some(s) => (s, false),
            None => (self.state_from_log()?, true),
        };
        loop {
            loop {
                let next = state.version + 1;
                let path = self.commit_path(next);
                if !path.exists() {
                    break;
                }
                let c = self.read_commit(next)?;
                // Copied only when a snapshot still holds this version.
                Arc::make_mut(&mut state).apply(&c);
            }
            // No commit follows. A state kept from an earlier call whose own commit is gone
            // (commit 1 for the empty state) was left behind by a log cleanup while this process
            // read nothing, or while this loop read ([`Writer::clean_logs`]): read again from the
            // log's checkpoint, never kept (a writer would take a deleted number). An empty lake
            // is listed at each call.
            if fresh || (state.version > 0 && self.commit_path(state.version).exists()) {
                break;
            }
            state = self.state_from_log()?;
            fresh = true;
        }
        *cache = Some(Arc::clone(&state));
        Ok(state)
    }

    /// The state at the log's newest checkpoint (empty without one); [`Lake::state`] applies the
    /// commits after it. A listing beside live writers may miss a commit being linked, so the
    /// commits are found by name after the checkpoint, not from the listing.
    fn state_from_log(&self) -> Result<Arc<State>> {
        let (commits, checkpoints) = self.list_log()?;
        Ok(Arc::new(match checkpoints.last() {
            Some(&c) => Self::read_json::<State>(&self.checkpoint_path(c))?,
            // Never an empty state for a log whose start is gone.
            None if !commits.is_empty() && !self.commit_path(1).exists() => {
                return Err(LakeError::Corrupt {
                    path: self.log_dir(),
                    msg: "no checkpoint, and commit 1 is missing".to_owned(),
                });
            }
            None => State::default(),
        }))
    }

    /// A snapshot of the latest committed state.
    pub fn snapshot(&self) -> Result<Snapshot> {
        Ok(Snapshot {
            root: self.root.clone(),
            state: self.state()?,
            vacuumed: BTreeMap::new(),
        })
    }

    /// Starts a writer: takes a writer lock and recovers what dead writers left behind.
    pub fn writer(&self) -> Result<Writer<'_>> {
        self.recovering_writer().map(|(w, _)| w)
    }

    /// [`Lake::writer`], with what its recovery wrote to the Delta logs (`vigie lake sync`).
    pub fn recovering_writer(&self) -> Result<(Writer<'_>, delta::SyncReport)> {
        let id = random_id();
        let lock_path = self.root.join(format!("_vigie/writers/{id}.lock"));
        // The lock file appears under its name already locked: created and locked under a
        // hidden name, then renamed. A lock file seen unlocked is therefore a dead writer's,
        // never one being born (another writer's recovery would take it for dead, remove
        // it, and later delete this writer's temporary commit files mid-commit).
        let new_path = self.root.join(format!("_vigie/writers/.{id}.lock.new"));
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&new_path)
            .at(&new_path)?;
        lock.lock().at(&new_path)?;
        fs::rename(&new_path, &lock_path).at(&lock_path)?;
        let w = Writer {
            lake: self,
            id,
            lock: Some(lock),
            lock_path,
            next_file: 0,
        };
        let synced = w.recover()?;
        Ok((w, synced))
    }
}

/// A live writer of the lake (one per process and purpose), holding its lock.
pub struct Writer<'a> {
    lake: &'a Lake,
    id: String,
    lock: Option<File>,
    lock_path: PathBuf,
    next_file: u64,
}

impl Drop for Writer<'_> {
    fn drop(&mut self) {
        if let Some(lock) = self.lock.take() {
            let _ = lock.unlock();
            drop(lock);
            let _ = fs::remove_file(&self.lock_path);
        }
    }
}

/// A reader's hold on one version of the lake, kept as long as the reader keeps it: no vacuum
/// deletes a file that version names (a SQL session over the wire or a `vigie sql` shell may read
/// one snapshot for hours, longer than the stream keeps the removed files of the tables each pass
/// rewrites). A file `_vigie/readers/ID.lease` holding the version, locked while held; a dead
/// reader's lease is unlocked, and the next vacuum removes it. Only that version's files are
/// kept, so a connection left open for days holds one version's files, not everything removed
/// since.
#[derive(Debug)]
pub struct Lease {
    lock: Option<File>,
    path: PathBuf,
}

impl Drop for Lease {
    fn drop(&mut self) {
        if let Some(lock) = self.lock.take() {
            let _ = fs::remove_file(&self.path);
            let _ = lock.unlock();
        }
    }
}

/// What the live readers' leases hold, for a vacuum.
enum Held {
    /// The files of the versions they hold.
    Files(BTreeSet<String>),
    /// A live lease could not be read: nothing may be deleted.
    Everything,
}

impl Lake {
    /// Holds `version` until the lease is dropped (see [`Lease`]). Take it before reading the
    /// version's files, so that no vacuum falls between the look and the hold.
    pub fn lease(&self, version: u64) -> Result<Lease> {
        let dir = self.root.join(READERS);
        fs::create_dir_all(&dir).at(&dir)?;
        let id = random_id();
        // Locked and written under a hidden name, then renamed: a lease seen under its name is
        // whole, and unlocked only once its reader is gone.
        let new_path = dir.join(format!(".{id}.lease.new"));
        let path = dir.join(format!("{id}.lease"));
        let mut lock = OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .open(&new_path)
            .at(&new_path)?;
        lock.lock().at(&new_path)?;
        lock.write_all(format!("{version}\n").as_bytes())
            .at(&new_path)?;
        fs::rename(&new_path, &path).at(&path)?;
        Ok(Lease {
            lock: Some(lock),
            path,
        })
    }

    /// [`Lake::lease`] for a reader that reads `version` long; none, with a warning, when the
    /// lake cannot take it (a lake directory the reader may not write).
    pub fn hold(&self, version: u64) -> Option<Lease> {
        self.lease(version)
            .map_err(|e| tracing::warn!(error = %e, "no lease on the snapshot: a vacuum may delete its files while it is read"))
            .ok()
    }

    /// The snapshot of `version` ([`Lake::snapshot_at`]), or the latest, for a reader that reads
    /// it long, held with a lease ([`Lake::hold`]). An older version is held before its files are
    /// looked at; the latest one's are live.
    pub fn held_snapshot(&self, version: Option<u64>) -> Result<(Snapshot, Option<Lease>)> {
        Ok(match version {
            Some(v) => {
                let lease = self.hold(v);
                (self.snapshot_at(v)?, lease)
            }
            None => {
                let snapshot = self.snapshot()?;
                let lease = self.hold(snapshot.version());
                (snapshot, lease)
            }
        })
    }

    /// The files of the versions live readers hold; the leases of dead readers (and the half-made
    /// ones they left) are removed on the way.
    fn held(&self) -> Result<Held> {
        let Some(versions) = self.leased_versions()? else {
            return Ok(Held::Everything);
        };
        let mut files = BTreeSet::new();
        for v in versions {
            // A version no longer in the log (or beyond it) holds nothing it could read.
            if let Ok(state) = self.state_at(v) {
                files.extend(state.files.into_keys());
            }
        }
        Ok(Held::Files(files))
    }

    /// The versions live readers hold (`None` when a live reader's lease cannot be read: it may
    /// hold any); the leases of dead readers (and the half-made ones they left) are removed on
    /// the way.
    fn leased_versions(&self) -> Result<Option<BTreeSet<u64>>> {
        let dir = self.root.join(READERS);
        let entries = match fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Ok(Some(BTreeSet::new()));
            }
            Err(e) => return Err(e).at(&dir),
        };
        let mut versions = BTreeSet::new();
        for entry in entries {
            let path = entry.at(&dir)?.path();
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let whole = name.ends_with(".lease");
            if !whole && !name.ends_with(".lease.new") {
                continue;
            }
            if lease_dead(&path) {
                let _ = fs::remove_file(&path);
                continue;
            }
            if !whole {
                // Being made: its reader takes its snapshot only once it is in place.
                continue;
            }
            match fs::read_to_string(&path)
                .ok()
                .and_then(|t| t.trim().parse::<u64>().ok())
            {
                Some(v) => {
                    versions.insert(v);
                }
                None => {
                    tracing::warn!(lease = %path.display(), "a live reader's lease cannot be read: the vacuum deletes nothing");
                    return Ok(None);
                }
            }
        }
        Ok(Some(versions))
    }
}

/// The oldest version whose state can be read from a log holding `commits` and `checkpoints`
/// (the latest being `latest`): 0 when it starts at commit 1, else its oldest checkpoint from which
/// every later commit is present (a log cleaned by [`Writer::clean_logs`]); `None` when there is
/// none.
fn oldest_readable(
    commits: &BTreeSet<u64>,
    checkpoints: &BTreeSet<u64>,
    latest: u64,
) -> Option<u64> {
    // The first of the commits that run unbroken to the latest.
    let mut run = latest + 1;
    for &v in commits.range(..=latest).rev() {
        if v + 1 != run {
            break;
        }
        run = v;
    }
    if run <= 1 {
        return Some(0);
    }
    checkpoints.range(run - 1..=latest).next().copied()
}

/// Versions of the commits and checkpoints in Vigie's log directory `dir`.
fn list_log_dir(dir: &Path) -> Result<(BTreeSet<u64>, BTreeSet<u64>)> {
    let mut commits = BTreeSet::new();
    let mut checkpoints = BTreeSet::new();
    for entry in fs::read_dir(dir).at(dir)? {
        let entry = entry.at(dir)?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if let Some(v) = name
            .strip_suffix(".checkpoint.json")
            .and_then(|s| s.parse().ok())
        {
            checkpoints.insert(v);
        } else if let Some(v) = name.strip_suffix(".json").and_then(|s| s.parse().ok()) {
            commits.insert(v);
        }
    }
    Ok((commits, checkpoints))
}

/// Where readers' leases live.
const READERS: &str = "_vigie/readers";

/// Whether the reader of the lease at `path` is gone: the file is gone or its lock can be taken.
/// Opened for reading (a lock needs no more), and any other error counts as alive: a lease of
/// another user that cannot be opened is never taken for dead.
fn lease_dead(path: &Path) -> bool {
    match File::open(path) {
        Err(e) => e.kind() == io::ErrorKind::NotFound,
        Ok(f) => match f.try_lock() {
            Ok(()) => {
                let _ = f.unlock();
                true
            }
            Err(_) => false,
        },
    }
}

/// Whether the writer holding `lock_path` is dead: the file is gone or its lock can be taken. As
/// for a lease ([`lease_dead`]), opened for reading (a lock needs no more), and any other error
/// counts as alive: the lock of another user's writer that cannot be opened is never taken for
/// dead, so its files are never deleted as leftovers.
fn writer_dead(lock_path: &Path) -> bool {
    lease_dead(lock_path)
}

impl<'a> Writer<'a> {
    /// This writer's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The lake.
    pub fn lake(&self) -> &'a Lake {
        self.lake
    }

    /// Finishes what dead writers left: renames committed pending files (lakes of older versions),
    /// deletes files no commit names, forgets dead writers, and writes the Delta commits that
    /// follow the latest Vigie commit (what they wrote is returned). A Delta log it cannot roll
    /// forward (a gap, a corrupt line, a version that describes another commit) is an error
    /// naming the table and version.
    pub fn recover(&self) -> Result<delta::SyncReport> {
        let state = self.lake.state()?;
        // 1. Roll forward renames of committed files.
        for f in state.files.values() {
            let fin = self.lake.root.join(&f.path);
            let pending = pending_path(&fin);
            if !fin.exists() && pending.exists() {
                // Another writer of this process may be recovering too: it may have won the race.
                match fs::rename(&pending, &fin) {
                    Err(e) if e.kind() == io::ErrorKind::NotFound && fin.exists() => {}
                    r => r.at(&fin)?,
                }
            }
        }
        // 2. Dead writers' leftovers: pending files no commit names.
        let writers_dir = self.lake.root.join("_vigie/writers");
        let mut dead = BTreeSet::new();
        for entry in fs::read_dir(&writers_dir).at(&writers_dir)? {
            let entry = entry.at(&writers_dir)?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if let Some(id) = name.strip_suffix(".lock")
                && id != self.id
                && writer_dead(&entry.path())
            {
                dead.insert(id.to_string());
            } else if name.ends_with(".lock.new")
                && entry
                    .metadata()
                    .ok()
                    .and_then(|m| m.modified().ok())
                    .and_then(|t| t.elapsed().ok())
                    .is_some_and(|age| age > STALE_NEW_LOCK)
            {
                // A writer killed between creating its lock and publishing it (a live one
                // publishes within microseconds).
                let _ = fs::remove_file(entry.path());
            }
        }
        let state = self.lake.state()?;
        // Only a dead writer's files are removed: with none, the lake's files (its whole history,
        // and the removed files vacuum has not deleted yet) are not even listed.
        let table_dirs = if dead.is_empty() {
            Vec::new()
        } else {
            self.table_dirs()?
        };
        for table_dir in table_dirs {
            for path in walk_files(&table_dir)? {
                let name = path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                // Data files are `part-<writer>-<n>.parquet` (older lakes: a hidden
                // `.part-….parquet.pending` until the rename that followed the commit).
                let inner = name
                    .strip_prefix(".")
                    .and_then(|n| n.strip_suffix(".pending"))
                    .unwrap_or(&name);
                let Some(writer) = inner
                    .strip_prefix("part-")
                    .filter(|_| inner.ends_with(".parquet"))
                    .and_then(|r| r.split('-').next())
                else {
                    continue;
                };
                let rel = self.rel(&path.with_file_name(inner));
                if dead.contains(writer)
                    && !state.files.contains_key(&rel)
                    && !state.tombstones.contains_key(&rel)
                {
                    remove_if_present(&path)?;
                }
            }
        }
        for id in dead {
            let p = writers_dir.join(format!("{id}.lock"));
            let _ = fs::remove_file(p);
        }
        // Stale temporary commit files of dead writers.
        let tmp = self.lake.root.join("_vigie/tmp");
        for entry in fs::read_dir(&tmp).at(&tmp)? {
            let entry = entry.at(&tmp)?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let writer = name.split('-').next().unwrap_or("");
            let lock = writers_dir.join(format!("{writer}.lock"));
            if writer != self.id && writer_dead(&lock) {
                let _ = fs::remove_file(entry.path());
            }
        }
        delta::verify_checkpoints(self.lake)?;
        self.lake.sync_delta()
    }

    /// Deletes the files that commits removed longer than `retain_ms` ago and forgets them, in one
    /// commit (op `vacuum`), but none of a version a live reader holds ([`Lake::lease`]); versions
    /// that named them can no longer be read. Returns the number of
    /// files and bytes deleted, and the commit's version (none when nothing was due).
    pub fn vacuum(&mut self, retain_ms: i64) -> Result<VacuumReport> {
        self.vacuum_with(retain_ms, &BTreeMap::new())
    }

    /// [`Writer::vacuum`], with a shorter retention for the tables of `shorter` (table name to
    /// milliseconds; a longer one than `retain_ms` counts as `retain_ms`): the streaming job's
    /// tables that every detection pass rewrites whole.
    pub fn vacuum_with(
        &mut self,
        retain_ms: i64,
        shorter: &BTreeMap<&str, i64>,
    ) -> Result<VacuumReport> {
        let state = self.lake.state()?;
        let now = now_ms();
        let cutoff = now - retain_ms.max(0);
        // The files of the versions readers hold are kept whatever their age.
        let held = match self.lake.held()? {
            Held::Files(f) => f,
            Held::Everything => return Ok(VacuumReport::default()),
        };
        let mut report = VacuumReport::default();
        let root = self.lake.root.clone();
        let mut txn = self.begin("vacuum")?;
        for (rel, &removed) in &state.tombstones {
            let cutoff = match shorter.get(delta::table_of(rel)) {
                Some(&ms) => cutoff.max(now - ms.max(0)),
                None => cutoff,
            };
            if removed > cutoff || held.contains(rel) {
                continue;
            }
            let path = root.join(rel);
            for p in [pending_path(&path), path] {
                if let Ok(m) = fs::metadata(&p) {
                    report.bytes += m.len();
                    report.files += 1;
                    remove_if_present(&p)?;
                }
            }
            txn.forget.push(rel.clone());
        }
        if txn.forget.is_empty() {
            return Ok(report);
        }
        let n = txn.forget.len();
        report.version = Some(txn.commit(serde_json::json!({ "vacuumed": n }))?);
        Ok(report)
    }

    fn table_dirs(&self) -> Result<Vec<PathBuf>> {
        let mut out = Vec::new();
        for entry in fs::read_dir(&self.lake.root).at(&self.lake.root)? {
            let entry = entry.at(&self.lake.root)?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if !name.starts_with('_') && !name.starts_with('.') && entry.path().is_dir() {
                out.push(entry.path());
            }
        }
        Ok(out)
    }

    fn rel(&self, path: &Path) -> String {
        path.strip_prefix(&self.lake.root)
            .map(|p| {
                p.components()
                    .map(|c| c.as_os_str().to_string_lossy())
                    .collect::<Vec<_>>()
                    .join("/")
            })
            .unwrap_or_default()
    }

    /// Starts a transaction based on the latest state.
    pub fn begin(&mut self, op: &str) -> Result<Txn<'_, 'a>> {
        let base = self.lake.state()?.version;
        self.begin_at(op, base)
    }

    /// Starts a transaction based on version `base` (the one its writer read what it decides
    /// from): its commit conflicts with whatever the commits after `base` did to the same
    /// sources, stages and files.
    pub fn begin_at(&mut self, op: &str, base: u64) -> Result<Txn<'_, 'a>> {
        Ok(Txn {
            writer: self,
            op: op.to_string(),
            base_version: base,
            add: Vec::new(),
            remove: Vec::new(),
            sources: Vec::new(),
            stages: BTreeMap::new(),
            forget: Vec::new(),
        })
    }

    /// A fresh final path for a new data file of `table` in `partition`, and its pending path.
    pub fn new_file_path(&mut self, table: &str, partition: Option<&str>) -> Result<NewFile> {
        self.next_file += 1;
        let name = format!("part-{}-{:06}.parquet", self.id, self.next_file);
        let rel = match partition {
            Some(p) => format!("{table}/{p}/{name}"),
            None => format!("{table}/{name}"),
        };
        let fin = self.lake.root.join(&rel);
        if let Some(dir) = fin.parent() {
            fs::create_dir_all(dir).at(dir)?;
        }
        // Written under its final name: no log names it before the commit, so no reader sees it.
        let pending = fin.clone();
        Ok(NewFile {
            table: table.to_string(),
            partition: partition.map(str::to_string),
            rel,
            pending,
            fin,
        })
    }
}

/// A data file being written for a transaction.
#[derive(Debug, Clone)]
pub struct NewFile {
    pub table: String,
    pub partition: Option<String>,
    /// Final path relative to the lake root.
    pub rel: String,
    /// Where to write it now (its final name: invisible until a commit names it).
    pub pending: PathBuf,
    /// Where it lives once committed.
    pub fin: PathBuf,
}

/// What [`Writer::vacuum`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VacuumReport {
    pub files: u64,
    pub bytes: u64,
    pub version: Option<u64>,
}

/// Changes that become visible together, or not at all.
pub struct Txn<'w, 'a> {
    writer: &'w mut Writer<'a>,
    op: String,
    base_version: u64,
    add: Vec<(NewFile, FileMeta)>,
    remove: Vec<String>,
    sources: Vec<SourceState>,
    stages: BTreeMap<String, serde_json::Value>,
    /// Tombstones to forget (their files were vacuumed).
    forget: Vec<String>,
}

/// Test hook: abort the process at a named point of the commit protocol (`VIGIE_FAILPOINT`).
pub fn failpoint(name: &str) {
    if std::env::var("VIGIE_FAILPOINT").is_ok_and(|v| v == name) {
        std::process::abort();
    }
}

impl<'w, 'a> Txn<'w, 'a> {
    /// The version this transaction started from.
    pub fn base_version(&self) -> u64 {
        self.base_version
    }

    /// A new data file path (write to `pending`, then [`Txn::add_file`]).
    pub fn new_file(&mut self, table: &str, partition: Option<&str>) -> Result<NewFile> {
        self.writer.new_file_path(table, partition)
    }

    /// Records a written pending file as part of this transaction.
    pub fn add_file(&mut self, file: NewFile, rows: u64, bytes: u64) {
        self.add.push((
            file,
            FileMeta {
                rows,
                bytes,
                ..FileMeta::default()
            },
        ));
    }

    /// Records a written pending file with what the writer knows of its content.
    pub fn add_file_meta(&mut self, file: NewFile, meta: FileMeta) {
        self.add.push((file, meta));
    }

    /// Removes a live file (by path relative to the root).
    pub fn remove_file(&mut self, rel: &str) {
        self.remove.push(rel.to_string());
    }

    /// Moves the checkpoint of a source.
    pub fn set_source(&mut self, s: SourceState) {
        self.sources.retain(|o| o.id != s.id);
        self.sources.push(s);
    }

    /// Moves the checkpoint of a derived stage.
    pub fn set_stage(&mut self, key: &str, value: serde_json::Value) {
        self.stages.insert(key.to_string(), value);
    }

    /// Moves the checkpoint of a derived stage, typed.
    pub fn put_stage<T: Stage>(&mut self, value: &T) -> Result<()> {
        let v = serde_json::to_value(value).map_err(|e| LakeError::Corrupt {
            path: PathBuf::from(T::KEY),
            msg: e.to_string(),
        })?;
        self.set_stage(T::KEY, v);
        Ok(())
    }

    /// Whether the transaction changes nothing.
    pub fn is_empty(&self) -> bool {
        self.add.is_empty()
            && self.remove.is_empty()
            && self.sources.is_empty()
            && self.stages.is_empty()
            && self.forget.is_empty()
    }

    /// Drops the transaction and deletes its pending files.
    pub fn abort(self) {
        for (f, _) in &self.add {
            let _ = fs::remove_file(&f.pending);
        }
    }

    /// Commits: all added files, removals, source and stage checkpoints become visible at once.
    /// Returns the new version.
    pub fn commit(self, summary: serde_json::Value) -> Result<u64> {
        let lake = self.writer.lake;
        let started = std::time::Instant::now();
        // Make the data durable before the commit names it.
        let mut dirs = BTreeSet::new();
        for (f, _) in &self.add {
            File::open(&f.pending)
                .and_then(|h| h.sync_all())
                .at(&f.pending)?;
            if let Some(d) = f.pending.parent() {
                dirs.insert(d.to_path_buf());
            }
        }
        for d in &dirs {
            fsync_dir(d)?;
        }
        failpoint("before_commit");
        let synced = started.elapsed();
        let mut base = self.base_version;
        let tmp = lake.root.join(format!(
            "_vigie/tmp/{}-{}.json",
            self.writer.id,
            random_id()
        ));
        let version = loop {
            let state = lake.state()?;
            // Conflicts with what others committed since our base.
            for v in base + 1..=state.version {
                let c = match lake.read_commit(v) {
                    Ok(c) => c,
                    // A transaction begun before a log cleanup that went past its base.
                    Err(LakeError::Io { source, .. })
                        if source.kind() == io::ErrorKind::NotFound =>
                    {
                        return Err(LakeError::Conflict(format!(
                            "commit {v}, after this transaction's base ({base}), was cleaned from the log: begin again"
                        )));
                    }
                    Err(e) => return Err(e),
                };
                for s in &c.sources {
                    if self.sources.iter().any(|o| o.id == s.id) {
                        return Err(LakeError::Conflict(format!(
                            "commit {v} ({}) moved source {} ({}) concurrently",
                            c.op, s.id, s.path
                        )));
                    }
                }
                for k in c.stages.keys() {
                    if self.stages.contains_key(k) {
                        return Err(LakeError::Conflict(format!(
                            "commit {v} ({}) moved stage {k} concurrently",
                            c.op
                        )));
                    }
                }
                for r in &c.remove {
                    if self.remove.contains(r) {
                        return Err(LakeError::Conflict(format!(
                            "commit {v} ({}) removed {r} concurrently",
                            c.op
                        )));
                    }
                }
            }
            for r in &self.remove {
                if !state.files.contains_key(r) {
                    return Err(LakeError::Conflict(format!("{r} is not a live file")));
                }
            }
            base = state.version;
            let version = state.version + 1;
            let now = now_ms();
            // Tombstones whose files are gone (vacuumed by another tool) are looked for on the
            // checkpoint commits only: a stream commits a few times a second and removes files
            // faster than that (open files rewritten, compactions), so checking every old
            // tombstone's file at every commit cost a number of stat calls that grew all along
            // the retention (2,289 of 10,178 tombstones, three commits a second, 17 minutes
            // into a run at 10,000 lines/s).
            let mut forget: BTreeSet<String> = if version % CHECKPOINT_EVERY == 0 {
                state
                    .tombstones
                    .iter()
                    .filter(|(p, t)| now - **t > TOMBSTONE_GRACE_MS && !lake.root.join(p).exists())
                    .map(|(p, _)| p.clone())
                    .collect()
            } else {
                BTreeSet::new()
            };
            forget.extend(
                self.forget
                    .iter()
                    .filter(|f| state.tombstones.contains_key(*f))
                    .cloned(),
            );
            let forget: Vec<String> = forget.into_iter().collect();
            let commit = Commit {
                version,
                writer: self.writer.id.clone(),
                op: self.op.clone(),
                time_ms: now,
                add: self
                    .add
                    .iter()
                    .map(|(f, m)| FileEntry {
                        table: f.table.clone(),
                        path: f.rel.clone(),
                        partition: f.partition.clone(),
                        rows: m.rows,
                        bytes: m.bytes,
                        added: version,
                        min_key: m.min_key.clone(),
                        max_key: m.max_key.clone(),
                        max_ts: m.max_ts,
                        ts_nulls: m.ts_nulls,
                        open: m.open,
                        data_added: m.data_added,
                    })
                    .collect(),
                remove: self.remove.clone(),
                sources: self.sources.clone(),
                stages: self.stages.clone(),
                forget,
                summary: summary.clone(),
            };
            let body = serde_json::to_vec_pretty(&commit).map_err(|e| LakeError::Corrupt {
                path: tmp.clone(),
                msg: e.to_string(),
            })?;
            {
                let mut f = File::create(&tmp).at(&tmp)?;
                f.write_all(&body).at(&tmp)?;
                f.sync_all().at(&tmp)?;
            }
            let target = lake.commit_path(version);
            match fs::hard_link(&tmp, &target) {
                Ok(()) => {
                    let _ = fs::remove_file(&tmp);
                    fsync_dir(&lake.log_dir())?;
                    break version;
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    let _ = fs::remove_file(&tmp);
                    continue;
                }
                Err(e) => {
                    let _ = fs::remove_file(&tmp);
                    return Err(LakeError::Io {
                        path: target,
                        source: e,
                    });
                }
            }
        };
        let _ = base;
        let logged = started.elapsed();
        failpoint("after_commit");
        // Files written under a hidden name (none today) are published under their final names.
        for (f, _) in &self.add {
            if f.pending == f.fin {
                continue;
            }
            match fs::rename(&f.pending, &f.fin) {
                // Another writer's recovery may have finished the rename for us.
                Err(e) if e.kind() == io::ErrorKind::NotFound && f.fin.exists() => {}
                other => other.at(&f.fin)?,
            }
            if let Some(d) = f.fin.parent() {
                fsync_dir(d)?;
            }
        }
        // The Delta logs follow. The Vigie commit is durable whatever happens here: a failure
        // leaves them behind, a state readers see as the previous version, and the next writer
        // (or this one's next commit) rolls them forward.
        if let Err(e) = lake.sync_delta() {
            tracing::warn!(version, error = %e, "the Delta logs could not follow the commit yet");
        }
        failpoint("after_delta");
        let projected = started.elapsed();
        if version % CHECKPOINT_EVERY == 0 {
            let state = lake.state()?;
            if state.version == version {
                let path = lake.checkpoint_path(version);
                let tmp = lake.root.join(format!(
                    "_vigie/tmp/{}-{}.checkpoint",
                    self.writer.id,
                    random_id()
                ));
                let body = serde_json::to_vec(&state).map_err(|e| LakeError::Corrupt {
                    path: tmp.clone(),
                    msg: e.to_string(),
                })?;
                fs::write(&tmp, body).at(&tmp)?;
                File::open(&tmp).and_then(|f| f.sync_all()).at(&tmp)?;
                fs::rename(&tmp, &path).at(&path)?;
            }
        }
        // Where a commit's time goes: making the data durable, the commit log (conflict check,
        // write, fsync, link), the Delta logs, Vigie's checkpoint (every CHECKPOINT_EVERY).
        tracing::debug!(
            version,
            op = %self.op,
            files = self.add.len(),
            removed = self.remove.len(),
            sync_ms = synced.as_millis() as u64,
            log_ms = (logged - synced).as_millis() as u64,
            delta_ms = (projected - logged).as_millis() as u64,
            ms = started.elapsed().as_millis() as u64,
            "lake commit"
        );
        Ok(version)
    }
}

/// Every regular file under `dir`, recursively.
pub fn walk_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in fs::read_dir(&d).at(&d)? {
            let entry = entry.at(&d)?;
            let ft = entry.file_type().at(&entry.path())?;
            if ft.is_dir() {
                stack.push(entry.path());
            } else if ft.is_file() {
                out.push(entry.path());
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Deletes a file; one already gone is fine (two writers of one process, the
/// stream's ingest and replay threads, recover concurrently and race to delete
/// the same expired tombstone).
fn remove_if_present(path: &Path) -> Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        r => r.at(path),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removing_a_file_already_gone_is_fine() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f.parquet");
        std::fs::write(&p, b"x").unwrap();
        remove_if_present(&p).unwrap();
        assert!(!p.exists());
        // The second of two racing recoveries finds it gone.
        remove_if_present(&p).unwrap();
        // Other errors still surface: a directory is not a file.
        assert!(remove_if_present(dir.path()).is_err());
    }

    #[test]
    fn commits_are_atomic_and_versioned() {
        let dir = tempfile::tempdir().unwrap();
        let lake = Lake::open(dir.path()).unwrap();
        assert_eq!(lake.state().unwrap().version, 0);
        let mut w = lake.writer().unwrap();
        let mut txn = w.begin("test").unwrap();
        let f = txn.new_file("t", Some("date=2026-01-01")).unwrap();
        fs::write(&f.pending, b"data").unwrap();
        // Not visible before commit: no state names it.
        assert!(lake.snapshot().unwrap().table_paths("t").is_empty());
        txn.add_file(f.clone(), 1, 4);
        let v = txn.commit(serde_json::json!({})).unwrap();
        assert_eq!(v, 1);
        assert!(f.fin.exists());
        let snap = lake.snapshot().unwrap();
        assert_eq!(snap.table_paths("t"), vec![f.fin.clone()]);
        assert!(snap.id().starts_with("v1-"));
    }

    #[test]
    fn the_state_is_shared_until_a_commit_and_sees_other_processes_commits() {
        let dir = tempfile::tempdir().unwrap();
        let lake = Lake::open(dir.path()).unwrap();
        let commit = |lake: &Lake, name: &str| {
            let mut w = lake.writer().unwrap();
            let mut txn = w.begin("test").unwrap();
            let f = txn.new_file("t", None).unwrap();
            fs::write(&f.pending, name.as_bytes()).unwrap();
            txn.add_file(f, 1, name.len() as u64);
            txn.commit(serde_json::json!({})).unwrap()
        };
        assert_eq!(commit(&lake, "a"), 1);
        let before = lake.state().unwrap();
        // Nothing new: the same state, not a copy.
        assert!(Arc::ptr_eq(&before, &lake.state().unwrap()));
        // Another process (another handle on the directory) commits twice.
        let other = Lake::open(dir.path()).unwrap();
        assert_eq!(commit(&other, "bb"), 2);
        assert_eq!(commit(&other, "ccc"), 3);
        let after = lake.state().unwrap();
        assert_eq!(after.version, 3);
        assert_eq!(after.table_files("t").count(), 3);
        // A snapshot taken before keeps its version.
        assert_eq!(before.version, 1);
        assert_eq!(before.table_files("t").count(), 1);
        // And the same state as a fresh handle reads from the log.
        let fresh = Lake::open(dir.path()).unwrap().state().unwrap();
        assert_eq!(*fresh, *after);
    }

    #[test]
    fn recovery_deletes_dead_writers_pending_files() {
        let dir = tempfile::tempdir().unwrap();
        let lake = Lake::open(dir.path()).unwrap();
        let pending;
        {
            let mut w = lake.writer().unwrap();
            let mut txn = w.begin("test").unwrap();
            let f = txn.new_file("t", None).unwrap();
            fs::write(&f.pending, b"data").unwrap();
            pending = f.pending.clone();
            // The writer "dies" without committing: keep its lock file but release the lock.
            std::mem::forget(txn);
            if let Some(lock) = w.lock.take() {
                lock.unlock().unwrap();
            }
        }
        assert!(pending.exists());
        let _w2 = lake.writer().unwrap();
        assert!(!pending.exists());
    }

    #[test]
    fn a_lock_file_is_published_held_and_unpublished_ones_go_when_stale() {
        let dir = tempfile::tempdir().unwrap();
        let lake = Lake::open(dir.path()).unwrap();
        let writers = dir.path().join("_vigie/writers");
        let fresh = writers.join(".aaaa.lock.new");
        let stale = writers.join(".bbbb.lock.new");
        fs::write(&fresh, b"").unwrap();
        fs::write(&stale, b"").unwrap();
        let old = SystemTime::now() - std::time::Duration::from_secs(120);
        File::options()
            .write(true)
            .open(&stale)
            .unwrap()
            .set_modified(old)
            .unwrap();
        let w = lake.writer().unwrap();
        assert!(fresh.exists(), "a writer may be publishing it");
        assert!(!stale.exists());
        // Its own lock is under its final name, held; nothing else of it is left.
        let own = writers.join(format!("{}.lock", w.id()));
        assert!(own.exists() && !writer_dead(&own));
        assert!(!writers.join(format!(".{}.lock.new", w.id())).exists());
        drop(w);
        assert!(!own.exists());
    }

    #[test]
    fn a_writer_whose_lock_cannot_be_opened_is_taken_for_alive() {
        let dir = tempfile::tempdir().unwrap();
        let lake = Lake::open(dir.path()).unwrap();
        let mut w = lake.writer().unwrap();
        let id = w.id().to_string();
        let mut txn = w.begin("test").unwrap();
        let f = txn.new_file("t", None).unwrap();
        fs::write(&f.pending, b"data").unwrap();
        let lock = dir.path().join(format!("_vigie/writers/{id}.lock"));
        let tmp = dir.path().join(format!("_vigie/tmp/{id}-commit.json"));
        fs::write(&tmp, b"{}").unwrap();
        // The lock made unopenable, as another user's would be (here a link to itself: ELOOP).
        std::mem::forget(txn);
        std::mem::forget(w);
        fs::remove_file(&lock).unwrap();
        std::os::unix::fs::symlink(lock.file_name().unwrap(), &lock).unwrap();
        assert!(File::open(&lock).is_err());
        assert!(!writer_dead(&lock));
        let lake2 = Lake::open(dir.path()).unwrap();
        let _w2 = lake2.writer().unwrap();
        assert!(f.pending.exists(), "another writer's file was deleted");
        assert!(tmp.exists(), "another writer's commit file was deleted");
        assert!(
            lock.symlink_metadata().is_ok(),
            "another writer's lock was removed"
        );
        // Gone for good, it is dead.
        fs::remove_file(&lock).unwrap();
        assert!(writer_dead(&lock));
    }

    #[test]
    fn live_writers_files_are_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let lake = Lake::open(dir.path()).unwrap();
        let mut w = lake.writer().unwrap();
        let mut txn = w.begin("test").unwrap();
        let f = txn.new_file("t", None).unwrap();
        fs::write(&f.pending, b"data").unwrap();
        let lake2 = Lake::open(dir.path()).unwrap();
        let _w2 = lake2.writer().unwrap();
        assert!(f.pending.exists());
        txn.add_file(f, 1, 4);
        assert_eq!(txn.commit(serde_json::json!({})).unwrap(), 1);
    }

    #[test]
    fn concurrent_source_updates_conflict() {
        let dir = tempfile::tempdir().unwrap();
        let lake = Lake::open(dir.path()).unwrap();
        let src = SourceState {
            id: "s".into(),
            fingerprint: "f".into(),
            path: "p".into(),
            offset: 1,
            lines: 1,
            head: String::new(),
            tail: String::new(),
            sealed: false,
            sealed_before: Vec::new(),
        };
        let mut w1 = lake.writer().unwrap();
        let lake2 = Lake::open(dir.path()).unwrap();
        let mut w2 = lake2.writer().unwrap();
        let mut t1 = w1.begin("a").unwrap();
        let mut t2 = w2.begin("b").unwrap();
        t1.set_source(src.clone());
        t2.set_source(src);
        t1.commit(serde_json::json!({})).unwrap();
        assert!(matches!(
            t2.commit(serde_json::json!({})),
            Err(LakeError::Conflict(_))
        ));
    }

    #[test]
    fn checkpoints_and_replayed_state_agree() {
        let dir = tempfile::tempdir().unwrap();
        let lake = Lake::open(dir.path()).unwrap();
        let mut w = lake.writer().unwrap();
        for i in 0..(CHECKPOINT_EVERY + 3) {
            let mut txn = w.begin("t").unwrap();
            txn.set_stage("s", serde_json::json!(i));
            txn.commit(serde_json::json!({})).unwrap();
        }
        let fresh = Lake::open(dir.path()).unwrap();
        let s = fresh.state().unwrap();
        assert_eq!(s.version, CHECKPOINT_EVERY + 3);
        assert_eq!(s.stages["s"], serde_json::json!(CHECKPOINT_EVERY + 2));
        assert!(lake.checkpoint_path(CHECKPOINT_EVERY).exists());
    }
}
