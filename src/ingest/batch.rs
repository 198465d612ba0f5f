//! One ingest transaction: read sources from their checkpoints, validate every line, write Parquet, commit once.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::Instant;

use arrow::array::RecordBatch;
use serde::Serialize;
use sha2::{Digest, Sha256};

use super::IngestError;
use super::sink::{Partitions, Provenance, QuarantineBuffer, Rejected};
use super::source::{self, End, Item, WINDOW};
use crate::lake::{self, Lake, NewFile, SourceState, State, Txn, hex, tables};
use crate::log::{self, syntax};

/// Flush a partition's buffer to a file past this many bytes, and bound all buffers together by it.
pub const FLUSH_BYTES: usize = 64 << 20;

/// Quarantined rows buffered at most before they are written (fewer when `flush_bytes` is lower).
/// Rejected lines are rare but can be long: each is written with the ones before it as soon as
/// they pass this.
pub const QUARANTINE_FLUSH_BYTES: usize = 16 << 20;

/// Bytes of lines read between two checks of the buffers' size (besides every 4,096 lines).
const CHECK_BYTES: usize = 4 << 20;

/// Options of an ingest run.
#[derive(Debug, Clone)]
pub struct IngestOptions {
    /// Show a progress bar (on a terminal).
    pub progress: bool,
    /// Buffer bound (bytes) before a partition is flushed to a file.
    pub flush_bytes: usize,
    /// Treat a last line without newline in a plain file as complete (the file is final).
    pub final_files: bool,
}

impl Default for IngestOptions {
    fn default() -> Self {
        IngestOptions {
            progress: true,
            flush_bytes: FLUSH_BYTES,
            final_files: false,
        }
    }
}

/// What an ingest run did.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct IngestReport {
    /// Lake version committed (`None` when there was nothing new).
    pub version: Option<u64>,
    pub files_seen: u64,
    /// Files read from their start.
    pub files_new: u64,
    /// Known files read from their checkpoint.
    pub files_grown: u64,
    /// Known files with nothing new.
    pub files_unchanged: u64,
    /// Files without one complete line yet (left for a later run).
    pub files_waiting: u64,
    /// Files and directories that could not be read (left for a later run; see the log).
    pub files_unreadable: u64,
    /// Corrupt archives (quarantined from the point of failure, or whole when nothing could be read):
    /// bad compressed data, a `.gz` or `.zst` whose content is not that format, an archive
    /// truncated and unchanged for [`source::ARCHIVE_SETTLE`].
    pub files_corrupt: u64,
    /// Complete lines read in this run.
    pub lines_read: u64,
    pub lines_valid: u64,
    pub lines_quarantined: u64,
    /// Bytes after the last newline of growing files, left for a later run.
    pub partial_bytes: u64,
    /// Decompressed bytes read.
    pub bytes_read: u64,
    pub files_written: u64,
    pub elapsed_ms: u64,
    /// Files to look at again even if they do not change: unreadable ones, and archives that
    /// end mid-stream but may still be being written (a follower must not forget them).
    #[serde(skip)]
    pub retry: Vec<PathBuf>,
}

impl IngestReport {
    /// The one-line summary printed at the end of a run.
    pub fn summary_line(&self) -> String {
        let secs = (self.elapsed_ms as f64 / 1000.0).max(1e-3);
        format!(
            "ingest: {} files ({} new, {} grown, {} unchanged, {} waiting, {} unreadable, {} corrupt); {} lines read = {} valid + {} quarantined; {} partial bytes left; {} Parquet files; {}; {:.1} s, {:.1} MB/s, {:.0} events/s",
            self.files_seen,
            self.files_new,
            self.files_grown,
            self.files_unchanged,
            self.files_waiting,
            self.files_unreadable,
            self.files_corrupt,
            self.lines_read,
            self.lines_valid,
            self.lines_quarantined,
            self.partial_bytes,
            self.files_written,
            match self.version {
                Some(v) => format!("committed lake version {v}"),
                None => "nothing to commit".to_string(),
            },
            secs,
            self.bytes_read as f64 / 1e6 / secs,
            self.lines_valid as f64 / secs,
        )
    }
}

/// A batch ready to be written by the writer thread.
struct Job {
    file: NewFile,
    batch: RecordBatch,
    table: tables::TableDef,
}

type Written = (NewFile, lake::FileMeta);

/// A file and its first compressed member that fails its check, if any.
type Checked = (PathBuf, std::io::Result<Option<(u64, String)>>);

/// Ingests files and directories into the lake in one transaction.
pub fn ingest_paths(
    lake: &Lake,
    inputs: &[PathBuf],
    opts: &IngestOptions,
) -> Result<IngestReport, IngestError> {
    let found = source::discover(inputs).map_err(|e| IngestError::Input {
        path: inputs_label(inputs),
        source: e,
    })?;
    for (dir, e) in &found.unreadable {
        tracing::warn!(path = %dir.display(), error = %e, "unreadable directory skipped");
    }
    let mut report = commit_files(lake, &found.files, opts, "ingest")?;
    report.files_unreadable += found.unreadable.len() as u64;
    Ok(report)
}

/// Ingests `files` in one transaction and commits it (nothing to commit: no new version).
/// `op` names the commit in the log (`ingest`, `stream`).
pub fn commit_files(
    lake: &Lake,
    files: &[PathBuf],
    opts: &IngestOptions,
    op: &str,
) -> Result<IngestReport, IngestError> {
    let mut writer = lake.writer()?;
    let mut txn = writer.begin(op)?;
    let state = lake.state()?;
    let mut report = ingest_files(&mut txn, &state, files, opts)?;
    if txn.is_empty() {
        txn.abort();
        return Ok(report);
    }
    let summary = serde_json::to_value(&report).unwrap_or_default();
    report.version = Some(txn.commit(summary)?);
    Ok(report)
}

fn inputs_label(inputs: &[PathBuf]) -> PathBuf {
    inputs.first().cloned().unwrap_or_default()
}

/// Reads `files` into the transaction (data files written as pending, source checkpoints moved).
pub fn ingest_files(
    txn: &mut Txn<'_, '_>,
    state: &State,
    files: &[PathBuf],
    opts: &IngestOptions,
) -> Result<IngestReport, IngestError> {
    let started = Instant::now();
    let ingested_at = lake::now_ms();
    let total: u64 = files
        .iter()
        .filter_map(|f| std::fs::metadata(f).ok())
        .map(|m| m.len())
        .sum();
    let counter = Arc::new(AtomicU64::new(0));
    let bar = progress_bar(opts.progress, total);
    let mut report = IngestReport {
        files_seen: files.len() as u64,
        ..IngestReport::default()
    };
    let events_def = tables::events();
    let events_schema = events_def.schema();
    let quarantine_def = tables::quarantine();
    let quarantine_schema = quarantine_def.schema();

    let written: Vec<Written> = std::thread::scope(|scope| -> Result<Vec<Written>, IngestError> {
        // Archives are checked member by member ahead of the reading, on a thread of their own
        // (the check decompresses the whole archive once more; a plain file needs none). It never
        // waits for the reading: the results of the files the reading skips are passed over.
        let (checked_tx, checked) = mpsc::channel::<Checked>();
        scope.spawn(move || {
            for path in files {
                let bad = source::first_bad_member(path);
                if checked_tx.send((path.clone(), bad)).is_err() {
                    return;
                }
            }
        });
        let (tx, rx) = mpsc::sync_channel::<Job>(1);
        let handle = scope.spawn(move || -> Result<Vec<Written>, IngestError> {
            let mut out = Vec::new();
            for job in rx {
                let sorted = lake::parquet::sort_batch(&job.batch, job.table.sort_by)?;
                drop(job.batch);
                let mut meta = lake::parquet::batch_meta(&job.table, &sorted);
                meta.bytes = lake::parquet::write_file(
                    &job.file.pending,
                    &job.table,
                    sorted.schema(),
                    &[sorted],
                )?;
                out.push((job.file, meta));
            }
            Ok(out)
        });
        let mut ctx = Ctx {
            txn,
            tx: &tx,
            parts: Partitions::default(),
            quarantine: QuarantineBuffer::new(ingested_at),
            quarantine_partition: format!("date={}", syntax::date_of(ingested_at)),
            events_schema: &events_schema,
            events_def: &events_def,
            quarantine_schema: &quarantine_schema,
            quarantine_def: &quarantine_def,
            flush_bytes: opts.flush_bytes,
            report: &mut report,
            counter: &counter,
            sources: state.sources.clone(),
            earlier: &state.sources,
            checked,
        };
        let mut result = Ok(());
        for path in files {
            if let Err(e) = ctx.file(path, opts) {
                result = Err(e);
                break;
            }
            bar.set_position(counter.load(Ordering::Relaxed));
        }
        if result.is_ok() {
            result = ctx.flush_all();
        }
        drop(ctx);
        drop(tx);
        let written = handle.join().map_err(|_| IngestError::WriterPanicked)??;
        if result.is_err() {
            for (f, _) in &written {
                let _ = std::fs::remove_file(&f.pending);
            }
        }
        result.map(|()| written)
    })?;
    bar.finish_and_clear();
    report.files_written = written.len() as u64;
    for (file, meta) in written {
        txn.add_file_meta(file, meta);
    }
    report.elapsed_ms = started.elapsed().as_millis() as u64;
    Ok(report)
}

fn progress_bar(enabled: bool, total: u64) -> indicatif::ProgressBar {
    if !enabled {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(total);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} ingest [{bar:40}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    bar
}

struct Ctx<'c, 'w, 'a> {
    txn: &'c mut Txn<'w, 'a>,
    tx: &'c mpsc::SyncSender<Job>,
    parts: Partitions,
    quarantine: QuarantineBuffer,
    quarantine_partition: String,
    events_schema: &'c arrow::datatypes::SchemaRef,
    events_def: &'c tables::TableDef,
    quarantine_schema: &'c arrow::datatypes::SchemaRef,
    quarantine_def: &'c tables::TableDef,
    flush_bytes: usize,
    report: &'c mut IngestReport,
    counter: &'c Arc<AtomicU64>,
    /// The lake's sources, with those this run has moved: a second copy of a file in the same run
    /// resumes where the first one stopped.
    sources: BTreeMap<String, SourceState>,
    /// The lake's sources as the run found them.
    earlier: &'c BTreeMap<String, SourceState>,
    /// The archives' checks, in the order of the run's files.
    checked: mpsc::Receiver<Checked>,
}

impl Ctx<'_, '_, '_> {
    fn send(
        &mut self,
        table: &tables::TableDef,
        partition: &str,
        batch: RecordBatch,
    ) -> Result<(), IngestError> {
        let file = self.txn.new_file(table.name, Some(partition))?;
        self.tx
            .send(Job {
                file,
                batch,
                table: table.clone(),
            })
            .map_err(|_| IngestError::WriterPanicked)
    }

    fn flush_partition(&mut self, key: &str) -> Result<(), IngestError> {
        let Some(buf) = self.parts.buffers.get_mut(key) else {
            return Ok(());
        };
        if buf.rows() == 0 {
            return Ok(());
        }
        let batch = buf.finish(self.events_schema)?;
        self.parts.buffers.remove(key);
        let def = self.events_def.clone();
        self.send(&def, key, batch)
    }

    fn flush_quarantine(&mut self) -> Result<(), IngestError> {
        if self.quarantine.rows() == 0 {
            return Ok(());
        }
        let batch = self.quarantine.finish(self.quarantine_schema)?;
        let part = self.quarantine_partition.clone();
        let def = self.quarantine_def.clone();
        self.send(&def, &part, batch)
    }

    fn flush_all(&mut self) -> Result<(), IngestError> {
        let keys: Vec<String> = self.parts.buffers.keys().cloned().collect();
        for k in keys {
            self.flush_partition(&k)?;
        }
        self.flush_quarantine()
    }

    fn maybe_flush(&mut self) -> Result<(), IngestError> {
        while self.parts.bytes() > self.flush_bytes {
            let Some(k) = self.parts.largest() else { break };
            self.flush_partition(&k)?;
        }
        self.bound_quarantine()
    }

    /// Writes the quarantined rows once they pass [`QUARANTINE_FLUSH_BYTES`]: called after every
    /// row, since one rejected line can be kept whole up to 64 MiB (a file of a few such lines
    /// took 968 MB when they waited for the next 4,096 lines).
    fn bound_quarantine(&mut self) -> Result<(), IngestError> {
        if self.quarantine.bytes() > QUARANTINE_FLUSH_BYTES.min(self.flush_bytes) {
            self.flush_quarantine()?;
        }
        Ok(())
    }

    fn file(&mut self, path: &Path, opts: &IngestOptions) -> Result<(), IngestError> {
        let path_text = path.to_string_lossy().into_owned();
        match source::container_mismatch(path) {
            Ok(Some(why)) => return self.corrupt_file(path, &why),
            Ok(None) => {}
            Err(e) => return self.unreadable(path, &e),
        }
        let fp = match source::fingerprint(path) {
            Ok(source::Fingerprint::Ready(fp)) => fp,
            // An empty file named as an archive: no compressor leaves one for five minutes.
            Ok(source::Fingerprint::Waiting)
                if source::named_archive(path)
                    && std::fs::metadata(path).is_ok_and(|m| m.len() == 0)
                    && (opts.final_files || source::settled(path)) =>
            {
                return self.corrupt_file(path, "an empty file named as an archive");
            }
            Ok(source::Fingerprint::Waiting) => {
                self.report.files_waiting += 1;
                if opts.final_files {
                    tracing::warn!(file = %path_text, "no complete line: nothing to ingest");
                }
                return Ok(());
            }
            Ok(source::Fingerprint::Truncated) => {
                if opts.final_files || source::settled(path) {
                    return self.corrupt_file(path, "the archive ends before its first line");
                }
                self.report.files_waiting += 1;
                self.report.retry.push(path.to_path_buf());
                return Ok(());
            }
            Ok(source::Fingerprint::Corrupt(error)) => {
                return self.corrupt_file(path, &error);
            }
            Err(e) => return self.unreadable(path, &e),
        };
        let resume = match source::resume_point(path, &fp, &self.sources, self.earlier) {
            Ok(r) => r,
            // An archive that does not decompress up to where an earlier copy of it was read:
            // waited for while it may still be written (a rotated file being compressed);
            // complete (a pushed body, `--final`) or settled, it is corrupt, kept whole in
            // quarantine once, instead of "unreadable" at every run.
            Err(e) if e.raw_os_error().is_none() && (opts.final_files || source::settled(path)) => {
                return self.corrupt_file(
                    path,
                    &format!(
                        "the archive does not read up to where an earlier copy of it was: {e}"
                    ),
                );
            }
            Err(e) => return self.unreadable(path, &e),
        };
        // A sealed archive is read again only when this file holds more than it did (a longer copy
        // continues it); a copy of what this run has already read past holds nothing new.
        if resume.superseded || (resume.known && resume.state.sealed && !resume.more) {
            self.report.files_unchanged += 1;
            return Ok(());
        }
        let start = resume.state.offset;
        let bad = match self.first_bad_member(path) {
            Ok(bad) => bad,
            Err(e) => return self.unreadable(path, &e),
        };
        let limit = bad.as_ref().map(|(at, _)| (*at).max(start));
        let mut reader = match source::open_at(path, start, limit, Arc::clone(self.counter)) {
            Ok(r) => r.final_content(opts.final_files),
            Err(e) => return self.unreadable(path, &e),
        };
        let source_id = resume.state.id.clone();
        let mut line_no = resume.state.lines;
        let mut tail = TailWindow::default();
        let mut head = (start == 0).then(Sha256::new);
        let mut lines_here = 0u64;
        let (mut key_day, mut key) = (None, String::new());
        // Bytes of lines read since the buffers' size was last checked: valid lines can be up to
        // 1 MiB each, so a count of lines alone does not bound them (2,000 lines of 900 KB took
        // 10.6 GB when checked every 4,096 lines).
        let mut unchecked = 0usize;
        while let Some(item) = reader.next_item() {
            line_no += 1;
            lines_here += 1;
            match item {
                Item::Line {
                    offset,
                    bytes,
                    newline,
                } => {
                    unchecked += bytes.len();
                    self.report.bytes_read += bytes.len() as u64 + u64::from(newline);
                    if let Some(h) = head.as_mut() {
                        feed_head(h, offset, bytes, newline);
                    }
                    tail.push(bytes, newline);
                    let prov = Provenance {
                        file: &path_text,
                        source_id: &source_id,
                        line: line_no,
                        offset,
                    };
                    // The text is checked once: a line that is not UTF-8 goes to the parser of
                    // bytes, which words its reject as for any line.
                    let text = std::str::from_utf8(bytes);
                    let parsed = match text {
                        Ok(text) => log::parse_str_detail(text),
                        Err(_) => log::parse_line_detail(bytes),
                    };
                    match parsed {
                        Ok(parsed) => {
                            let raw = text.unwrap_or_default();
                            // Lines of a file mostly share their day: its key is made once.
                            let day = syntax::epoch_day(parsed.event.ts);
                            if key_day != Some(day) {
                                key = format!("date={}", syntax::date_of(parsed.event.ts));
                                key_day = Some(day);
                            }
                            self.parts.push(&key, &parsed, raw, prov);
                            self.report.lines_valid += 1;
                        }
                        Err(reject) => {
                            self.quarantine.push(&Rejected {
                                file: &path_text,
                                source_id: &source_id,
                                line: Some(line_no),
                                offset,
                                raw: bytes,
                                raw_len: bytes.len() as u64,
                                raw_sha256: hex(&Sha256::digest(bytes)),
                                reason: reject.code(),
                                message: reject.to_string(),
                                field: reject.field(),
                            });
                            self.report.lines_quarantined += 1;
                            self.bound_quarantine()?;
                        }
                    }
                }
                Item::Overlong {
                    offset,
                    head: first,
                    len,
                    sha256,
                    newline,
                } => {
                    self.report.bytes_read += len + u64::from(newline);
                    tail.reset_unknown();
                    if let Some(h) = head.as_mut() {
                        feed_head(h, offset, &first, false);
                    }
                    self.quarantine.push(&Rejected {
                        file: &path_text,
                        source_id: &source_id,
                        line: Some(line_no),
                        offset,
                        raw: &first,
                        raw_len: len,
                        raw_sha256: hex(&sha256),
                        reason: "line_too_long",
                        message: format!(
                            "line of {len} bytes exceeds the {}-byte limit",
                            log::MAX_LINE_BYTES
                        ),
                        field: None,
                    });
                    self.report.lines_quarantined += 1;
                    self.bound_quarantine()?;
                }
            }
            if lines_here.is_multiple_of(4096) || unchecked > CHECK_BYTES {
                self.maybe_flush()?;
                unchecked = 0;
            }
        }
        self.report.lines_read += lines_here;
        let end = reader.end();
        let mut new_offset = reader.offset();
        if resume.known && resume.state.sealed && lines_here == 0 {
            // A sealed source read again without a line (a truncated end, or its failing member
            // right at the checkpoint): what ends it was quarantined when it was sealed.
            self.report.files_unchanged += 1;
            return Ok(());
        }
        let sealed = if let Some((at, error)) = &bad {
            // Nothing from the failing member on is taken: the lines before it are read, the
            // rest of the file is quarantined from the first line it holds.
            self.quarantine_corrupt(
                path,
                &path_text,
                &source_id,
                new_offset,
                &format!("its compressed member from byte {at} fails its check: {error}"),
            )?;
            true
        } else {
            match &end {
                End::Eof { partial, sealed } => {
                    self.report.partial_bytes += partial;
                    *sealed
                }
                End::Truncated { partial } if !opts.final_files && !source::settled(path) => {
                    // Perhaps still being written: what it holds so far is read, the rest waits.
                    self.report.partial_bytes += partial;
                    self.report.retry.push(path.to_path_buf());
                    false
                }
                End::Truncated { .. } => {
                    self.quarantine_corrupt(
                        path,
                        &path_text,
                        &source_id,
                        new_offset,
                        "the archive ends mid-stream and has not changed since",
                    )?;
                    true
                }
                End::Corrupt { offset, error } => {
                    new_offset = *offset;
                    self.quarantine_corrupt(path, &path_text, &source_id, *offset, error)?;
                    true
                }
            }
        };
        let newly_sealed = sealed && !resume.state.sealed;
        if lines_here == 0 && new_offset == start && !newly_sealed {
            self.report.files_unchanged += 1;
            return Ok(());
        }
        if resume.known {
            self.report.files_grown += 1;
        } else {
            self.report.files_new += 1;
        }
        let head_hash = match head {
            Some(h) => Some(hex(&h.finalize())),
            None if start >= WINDOW => Some(resume.state.head.clone()),
            None => None,
        };
        let tail_hash = if new_offset - start >= WINDOW {
            tail.hash(new_offset)
        } else {
            None
        };
        let (head_hash, tail_hash) = match (head_hash, tail_hash) {
            (Some(h), Some(t)) => (h, t),
            _ => match source::window_hashes(path, new_offset) {
                Ok(Some(ht)) => ht,
                _ => {
                    tracing::warn!(file = %path_text, "file changed while being read; its checkpoint is not moved");
                    return Err(IngestError::SourceChanged(path.to_path_buf()));
                }
            },
        };
        let mut sealed_before = resume.state.sealed_before.clone();
        if resume.state.sealed {
            // A longer copy continues a sealed archive: the archive stays known.
            sealed_before.push(lake::SealedAt {
                offset: start,
                head: resume.state.head.clone(),
                tail: resume.state.tail.clone(),
            });
            let excess = sealed_before.len().saturating_sub(lake::SEALED_KEPT);
            sealed_before.drain(..excess);
        }
        self.set_source(SourceState {
            id: source_id,
            fingerprint: fp,
            path: path_text,
            offset: new_offset,
            lines: line_no,
            head: head_hash,
            tail: tail_hash,
            sealed,
            sealed_before,
        });
        self.maybe_flush()
    }

    /// [`source::first_bad_member`] of `path`, from the checking thread.
    fn first_bad_member(&mut self, path: &Path) -> std::io::Result<Option<(u64, String)>> {
        // The thread checks the files in the run's order: earlier ones this run skipped are
        // passed over.
        while let Ok((checked, bad)) = self.checked.recv() {
            if checked == path {
                return bad;
            }
        }
        source::first_bad_member(path)
    }

    /// Leaves a file that cannot be read for a later run (counted, logged, retried).
    fn unreadable(&mut self, path: &Path, e: &std::io::Error) -> Result<(), IngestError> {
        tracing::warn!(file = %path.display(), error = %e, "unreadable file, left for a later run");
        self.report.files_unreadable += 1;
        self.report.retry.push(path.to_path_buf());
        Ok(())
    }

    /// Moves a source's checkpoint in the transaction, and in this run's view of the sources.
    fn set_source(&mut self, source: SourceState) {
        self.sources.insert(source.id.clone(), source.clone());
        self.txn.set_source(source);
    }

    /// Quarantines the rest of a corrupt archive from `offset` of its content, and counts it.
    fn quarantine_corrupt(
        &mut self,
        path: &Path,
        path_text: &str,
        source_id: &str,
        offset: u64,
        error: &str,
    ) -> Result<(), IngestError> {
        self.report.files_corrupt += 1;
        let (head, len, sha, unread) = match source::head_and_hash(path, source::LINE_CAP) {
            Ok((head, len, sha)) => (head, len, sha, String::new()),
            Err(e) => (
                Vec::new(),
                0,
                Sha256::digest(b"").into(),
                format!("; the file could not be read again to keep it ({e})"),
            ),
        };
        self.quarantine.push(&Rejected {
            file: path_text,
            source_id,
            line: None,
            offset,
            raw: &head,
            raw_len: len,
            raw_sha256: hex(&sha),
            reason: "corrupt_archive",
            message: format!(
                "the archive could not be decompressed past byte {offset} of its content ({error}); `raw` holds the start of the compressed file, `raw_len` and `raw_sha256` the whole of it{unread}"
            ),
            field: None,
        });
        self.bound_quarantine()
    }

    /// Quarantines a file of which nothing can be read (path, size, hash, reason) and records it
    /// as a sealed source keyed by its bytes, so that it is counted once, not on every run.
    fn corrupt_file(&mut self, path: &Path, why: &str) -> Result<(), IngestError> {
        let path_text = path.to_string_lossy().into_owned();
        let (_, _, sha) = match source::head_and_hash(path, 0) {
            Ok(h) => h,
            Err(e) => return self.unreadable(path, &e),
        };
        let fingerprint = format!("file:{}", hex(&sha));
        if self
            .sources
            .values()
            .any(|s| s.fingerprint == fingerprint && s.sealed)
        {
            self.report.files_unchanged += 1;
            return Ok(());
        }
        let id = format!("file-{}", &hex(&sha)[..27]);
        tracing::warn!(file = %path_text, reason = why, "corrupt archive quarantined");
        self.quarantine_corrupt(path, &path_text, &id, 0, why)?;
        let empty = hex(&Sha256::digest(b""));
        self.set_source(SourceState {
            id,
            fingerprint,
            path: path_text,
            offset: 0,
            lines: 0,
            head: empty.clone(),
            tail: empty,
            sealed: true,
            sealed_before: Vec::new(),
        });
        self.maybe_flush()
    }
}

/// Feeds the part of a consumed line that falls in the head window `[0, WINDOW)`.
fn feed_head(h: &mut Sha256, offset: u64, bytes: &[u8], newline: bool) {
    if offset >= WINDOW {
        return;
    }
    let room = (WINDOW - offset) as usize;
    if bytes.len() >= room {
        h.update(&bytes[..room]);
    } else {
        h.update(bytes);
        if newline {
            h.update(b"\n");
        }
    }
}

/// The last [`WINDOW`] bytes consumed (lines with their newlines).
#[derive(Default)]
struct TailWindow {
    buf: Vec<u8>,
    /// False after an overlong line whose bytes were not all kept.
    unknown: bool,
}

impl TailWindow {
    fn push(&mut self, line: &[u8], newline: bool) {
        self.buf.extend_from_slice(line);
        if newline {
            self.buf.push(b'\n');
        }
        if self.buf.len() > 2 * WINDOW as usize {
            let cut = self.buf.len() - WINDOW as usize;
            self.buf.drain(..cut);
            self.unknown = false;
        }
    }

    fn reset_unknown(&mut self) {
        self.buf.clear();
        self.unknown = true;
    }

    /// SHA-256 of the window before `offset`, when the whole window was seen.
    fn hash(&self, offset: u64) -> Option<String> {
        let want = offset.min(WINDOW) as usize;
        if self.unknown || self.buf.len() < want {
            return None;
        }
        Some(hex(&Sha256::digest(&self.buf[self.buf.len() - want..])))
    }
}

/// Partition counts of a run, for tests and docs.
pub fn partition_rows(state: &State, table: &str) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for f in state.table_files(table) {
        *out.entry(f.partition.clone().unwrap_or_default())
            .or_insert(0) += f.rows;
    }
    out
}
