//! Reading source files: discovery, decompression, fingerprints, resuming at a checkpoint, and splitting lines.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest, Sha256};

use crate::lake::{SourceState, hex};

/// Bytes hashed at the start and before the checkpoint to recognise a file's content.
pub const WINDOW: u64 = 64 * 1024;
/// Longest line kept whole (in quarantine); longer lines keep their first `LINE_CAP` bytes, hash and length.
pub const LINE_CAP: usize = 64 << 20;
const CHUNK: usize = 1 << 20;

/// Compression of a source file, from its first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    None,
    Gzip,
    Zstd,
}

impl Compression {
    /// Sniffs the magic number (gzip `1f 8b`, zstd `28 b5 2f fd`, or a zstd skippable frame
    /// `5? 2a 4d 18`, which `pzstd` and other writers put first).
    pub fn sniff(path: &Path) -> io::Result<Compression> {
        let mut magic = [0u8; 4];
        let mut f = File::open(path)?;
        let mut n = 0;
        while n < 4 {
            let k = f.read(&mut magic[n..])?;
            if k == 0 {
                break;
            }
            n += k;
        }
        Ok(if n >= 2 && magic[..2] == [0x1f, 0x8b] {
            Compression::Gzip
        } else if n >= 4
            && (magic == [0x28, 0xb5, 0x2f, 0xfd]
                || (magic[0] & 0xf0 == 0x50 && magic[1..] == [0x2a, 0x4d, 0x18]))
        {
            Compression::Zstd
        } else {
            Compression::None
        })
    }
}

/// Time an archive that ends mid-stream must stay unchanged before it counts as truncated for
/// good (and is quarantined) rather than still being written.
pub const ARCHIVE_SETTLE: std::time::Duration = std::time::Duration::from_secs(300);

/// The compression a file's name says (`.gz`, `.zst`), if any.
fn named_compression(path: &Path) -> Option<Compression> {
    let name = path.file_name()?.to_string_lossy();
    if name.ends_with(".gz") {
        Some(Compression::Gzip)
    } else if name.ends_with(".zst") {
        Some(Compression::Zstd)
    } else {
        None
    }
}

/// Whether a file's name says it is compressed (`.gz`, `.zst`).
pub fn named_archive(path: &Path) -> bool {
    named_compression(path).is_some()
}

/// Why a file's name and content disagree: a `.gz` that is not gzip, a `.zst` that is not zstd.
pub fn container_mismatch(path: &Path) -> io::Result<Option<String>> {
    let Some(expected) = named_compression(path) else {
        return Ok(None);
    };
    let found = Compression::sniff(path)?;
    if found == expected || std::fs::metadata(path)?.len() == 0 {
        return Ok(None);
    }
    Ok(Some(format!(
        "the name says {} but the content does not start with its magic number",
        if expected == Compression::Gzip {
            "gzip"
        } else {
            "zstd"
        }
    )))
}

/// Whether a file has not been modified for [`ARCHIVE_SETTLE`].
pub fn settled(path: &Path) -> bool {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .is_some_and(|age| age >= ARCHIVE_SETTLE)
}

/// The first bytes (at most `cap`), length and SHA-256 of a whole file, read in bounded memory.
pub fn head_and_hash(path: &Path, cap: usize) -> io::Result<(Vec<u8>, u64, [u8; 32])> {
    let mut f = File::open(path)?;
    let mut head = Vec::new();
    let mut h = Sha256::new();
    let mut buf = vec![0u8; CHUNK];
    let mut len = 0u64;
    loop {
        let n = match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        h.update(&buf[..n]);
        if head.len() < cap {
            let take = n.min(cap - head.len());
            head.extend_from_slice(&buf[..take]);
        }
        len += n as u64;
    }
    Ok((head, len, h.finalize().into()))
}

/// Whether a file name is a log the ingest picks up in a directory.
pub fn is_log_name(path: &Path) -> bool {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    !name.starts_with('.')
        && (name.ends_with(".jsonl") || name.ends_with(".jsonl.gz") || name.ends_with(".jsonl.zst"))
}

/// The log files found under the inputs, and the directories that could not be read.
#[derive(Debug, Default)]
pub struct Discovered {
    /// Log files to read, sorted, without duplicates.
    pub files: Vec<PathBuf>,
    /// Directories (or entries) below an input that could not be read, with why: skipped.
    pub unreadable: Vec<(PathBuf, io::Error)>,
}

/// Expands files and directories into the log files to read. An input that does not exist is an
/// error; a directory below an input that cannot be read is skipped and listed.
pub fn discover(inputs: &[PathBuf]) -> io::Result<Discovered> {
    let mut out = Discovered::default();
    for input in inputs {
        let meta = std::fs::metadata(input)?;
        if !meta.is_dir() {
            out.files.push(input.clone());
            continue;
        }
        // Directories by their real path: a link back up the tree is followed once, never round.
        let mut seen: std::collections::HashSet<PathBuf> = std::collections::HashSet::new();
        seen.extend(std::fs::canonicalize(input).ok());
        let mut stack = vec![input.clone()];
        while let Some(d) = stack.pop() {
            let entries = match std::fs::read_dir(&d) {
                Ok(e) => e,
                Err(e) if d == *input => return Err(e),
                Err(e) => {
                    out.unreadable.push((d, e));
                    continue;
                }
            };
            for entry in entries {
                let entry = match entry {
                    Ok(e) => e,
                    Err(e) => {
                        out.unreadable.push((d.clone(), e));
                        continue;
                    }
                };
                let p = entry.path();
                match entry.file_type() {
                    Ok(ft) if ft.is_dir() => {
                        if std::fs::canonicalize(&p).map_or(true, |real| seen.insert(real)) {
                            stack.push(p);
                        }
                    }
                    Ok(ft) if ft.is_file() && is_log_name(&p) => out.files.push(p),
                    // A symbolic link is followed (it was skipped without a word): to a log file,
                    // as that file (a copy of a source is recognised as such); to a directory,
                    // once; a link to nothing is reported.
                    Ok(ft) if ft.is_symlink() => match std::fs::metadata(&p) {
                        Ok(m) if m.is_dir() => {
                            if std::fs::canonicalize(&p).is_ok_and(|real| seen.insert(real)) {
                                stack.push(p);
                            }
                        }
                        Ok(m) if m.is_file() && is_log_name(&p) => out.files.push(p),
                        Ok(_) => {}
                        Err(e) => out.unreadable.push((p, e)),
                    },
                    Ok(_) => {}
                    Err(e) => out.unreadable.push((p, e)),
                }
            }
        }
    }
    out.files.sort();
    out.files.dedup();
    Ok(out)
}

/// Counts compressed bytes read (for progress).
struct Counting<R> {
    inner: R,
    counter: Arc<AtomicU64>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.counter.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// Opens the decompressed content of a file, counting raw bytes read into `counter`.
pub fn open_content(
    path: &Path,
    counter: Arc<AtomicU64>,
) -> io::Result<(Compression, Box<dyn Read + Send>)> {
    let c = Compression::sniff(path)?;
    let file = Counting {
        inner: File::open(path)?,
        counter,
    };
    let r: Box<dyn Read + Send> = match c {
        Compression::None => Box::new(file),
        Compression::Gzip => Box::new(flate2::read::MultiGzDecoder::new(BufReader::with_capacity(
            CHUNK, file,
        ))),
        Compression::Zstd => Box::new(zstd::stream::read::Decoder::new(file)?),
    };
    Ok((c, r))
}

/// One item read from a source.
#[derive(Debug)]
pub enum Item<'a> {
    /// A complete line (without its `\n`) at a decompressed byte offset. `newline` is false only for
    /// the last line of an archive that ends without one.
    Line {
        offset: u64,
        bytes: &'a [u8],
        newline: bool,
    },
    /// A line longer than [`LINE_CAP`]: its first bytes, full length and SHA-256; `newline` is
    /// false for the last line of final content (an archive, a file declared final).
    Overlong {
        offset: u64,
        head: Vec<u8>,
        len: u64,
        sha256: [u8; 32],
        newline: bool,
    },
}

/// How reading a source ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum End {
    /// End of the content; `partial` bytes after the last newline were left for a later run.
    Eof { partial: u64, sealed: bool },
    /// An archive that ends mid-stream: still being written, or truncated for good
    /// (the caller decides, see [`settled`]); `partial` bytes after the last newline.
    Truncated { partial: u64 },
    /// The decompressor failed at this decompressed offset (corrupt archive).
    Corrupt { offset: u64, error: String },
}

/// Splits decompressed content into lines, with offsets, in bounded memory.
pub struct LineReader {
    inner: Box<dyn Read + Send>,
    buf: Vec<u8>,
    start: usize,
    /// Decompressed offset of `buf[0]`.
    base: u64,
    eof: bool,
    error: Option<io::Error>,
    /// Whether the content is an archive (final once read to a clean end).
    compressed: bool,
    /// Whether a last line without newline is complete (archives, or plain files declared final).
    last_line_complete: bool,
}

impl LineReader {
    pub fn new(inner: Box<dyn Read + Send>, base: u64, compressed: bool) -> LineReader {
        LineReader {
            inner,
            buf: Vec::with_capacity(CHUNK),
            start: 0,
            base,
            eof: false,
            error: None,
            compressed,
            last_line_complete: compressed,
        }
    }

    /// Declares the content final: a last line without newline is complete.
    pub fn final_content(mut self, yes: bool) -> LineReader {
        self.last_line_complete |= yes;
        self
    }

    /// Decompressed offset of the next unread byte.
    pub fn offset(&self) -> u64 {
        self.base + self.start as u64
    }

    fn fill(&mut self) -> bool {
        if self.eof || self.error.is_some() {
            return false;
        }
        if self.start > 0 && self.start * 2 >= self.buf.len() {
            self.buf.drain(..self.start);
            self.base += self.start as u64;
            self.start = 0;
        }
        let old = self.buf.len();
        self.buf.resize(old + CHUNK, 0);
        loop {
            match self.inner.read(&mut self.buf[old..]) {
                Ok(0) => {
                    self.buf.truncate(old);
                    self.eof = true;
                    return false;
                }
                Ok(n) => {
                    self.buf.truncate(old + n);
                    return true;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.buf.truncate(old);
                    self.error = Some(e);
                    return false;
                }
            }
        }
    }

    /// The next complete line, or `None` at the end (then see [`LineReader::end`]).
    pub fn next_item(&mut self) -> Option<Item<'_>> {
        // Bytes after `start` already searched (stays valid when `fill` moves the buffer).
        let mut scanned = 0;
        loop {
            let from = self.start + scanned;
            if let Some(i) = memchr::memchr(b'\n', &self.buf[from..]) {
                let nl = from + i;
                if nl - self.start > LINE_CAP {
                    // The newline came in the same read as the bytes past the cap.
                    return self.overlong();
                }
                let offset = self.offset();
                let line_start = self.start;
                self.start = nl + 1;
                return Some(Item::Line {
                    offset,
                    bytes: &self.buf[line_start..nl],
                    newline: true,
                });
            }
            scanned = self.buf.len() - self.start;
            if scanned > LINE_CAP {
                return self.overlong();
            }
            if !self.fill() {
                // A compressed archive that ended cleanly is final: its last line is complete.
                if self.ended_final() && self.start < self.buf.len() {
                    let offset = self.offset();
                    let line_start = self.start;
                    self.start = self.buf.len();
                    return Some(Item::Line {
                        offset,
                        bytes: &self.buf[line_start..],
                        newline: false,
                    });
                }
                return None;
            }
        }
    }

    /// Whether reading reached the end of final content, whose last line is complete even
    /// without a newline (an archive read to a clean end, or a file declared final).
    fn ended_final(&self) -> bool {
        self.eof && self.last_line_complete
    }

    /// Reads past a line longer than the cap, keeping its head, length and hash.
    fn overlong(&mut self) -> Option<Item<'_>> {
        let offset = self.offset();
        let head = self.buf[self.start..self.start + LINE_CAP].to_vec();
        let mut hasher = Sha256::new();
        let mut len = 0u64;
        let newline = loop {
            let pending = &self.buf[self.start..];
            if let Some(i) = memchr::memchr(b'\n', pending) {
                hasher.update(&pending[..i]);
                len += i as u64;
                self.start += i + 1;
                break true;
            }
            hasher.update(pending);
            len += pending.len() as u64;
            self.base += self.buf.len() as u64;
            self.buf.clear();
            self.start = 0;
            if !self.fill() {
                if self.ended_final() {
                    // Its last line is complete (as in `next_item`): quarantined like any
                    // overlong line, never dropped.
                    break false;
                }
                // The line never ended: leave it whole for a later run.
                self.base = offset;
                self.eof = true;
                return None;
            }
        };
        Some(Item::Overlong {
            offset,
            head,
            len,
            sha256: hasher.finalize().into(),
            newline,
        })
    }

    /// How reading ended (call after `next_item` returned `None`).
    pub fn end(&mut self) -> End {
        if let Some(e) = self.error.take() {
            if self.compressed && e.kind() == io::ErrorKind::UnexpectedEof {
                return End::Truncated {
                    partial: (self.buf.len() - self.start) as u64,
                };
            }
            return End::Corrupt {
                offset: self.offset(),
                error: e.to_string(),
            };
        }
        let partial = if self.last_line_complete {
            0
        } else {
            (self.buf.len() - self.start) as u64
        };
        End::Eof {
            partial,
            sealed: self.compressed && self.eof,
        }
    }
}

/// Where to start reading a file, decided from what the lake already holds.
#[derive(Debug, Clone)]
pub struct Resume {
    /// The source record this file continues (fresh for a new file).
    pub state: SourceState,
    /// Whether the file is already known to the lake.
    pub known: bool,
    /// Whether the file holds content after the known source's offset (a sealed archive whose
    /// content a longer file continues must still be read).
    pub more: bool,
    /// Whether the file holds exactly what a source held before this run read past it: nothing new,
    /// and its checkpoint must not move back.
    pub superseded: bool,
}

impl Resume {
    /// Resuming `source`, now seen at `path`.
    fn known(path: &Path, source: &SourceState, more: bool, superseded: bool) -> Resume {
        let mut state = source.clone();
        state.path = path.to_string_lossy().into_owned();
        Resume {
            state,
            known: true,
            more,
            superseded,
        }
    }
}

/// The window hashes of one file at the offsets its candidate sources stopped at, each computed
/// once: an archive's at all the offsets in one pass over its decompressed content (a source
/// continued by longer copies may have a dozen sealed offsets to try), a plain file's by seeking.
struct Windows<'p> {
    path: &'p Path,
    /// An archive's windows per offset, once computed.
    archive: Option<BTreeMap<u64, WindowAt>>,
    offsets: Vec<u64>,
}

impl<'p> Windows<'p> {
    fn new(path: &'p Path, offsets: Vec<u64>) -> Windows<'p> {
        Windows {
            path,
            archive: None,
            offsets,
        }
    }

    /// Whether the content up to `offset` (one of the offsets given to [`Windows::new`]) has the
    /// window hashes `head` and `tail`: then `Some(whether it goes on past offset)`.
    fn continues(&mut self, offset: u64, head: &str, tail: &str) -> io::Result<Option<bool>> {
        let found = if Compression::sniff(self.path)? == Compression::None {
            windows_and_more(self.path, offset)?
        } else {
            if self.archive.is_none() {
                self.archive = Some(archive_windows(self.path, &self.offsets)?);
            }
            match self.archive.as_ref().and_then(|all| all.get(&offset)) {
                Some(Ok(w)) => w.clone(),
                // An error of the system keeps its code (a disk error is not a corrupt archive).
                Some(Err((_, _, Some(code)))) => return Err(io::Error::from_raw_os_error(*code)),
                Some(Err((kind, message, None))) => {
                    return Err(io::Error::new(*kind, message.clone()));
                }
                None => windows_and_more(self.path, offset)?,
            }
        };
        Ok(match found {
            Some((h, t, more)) if h == head && t == tail => Some(more),
            _ => None,
        })
    }
}

/// What [`windows_and_more`] gives at one offset: (head, tail, more) or `None` when the content is
/// shorter; an error keeps its kind, message and system error code.
type WindowAt = Result<Option<(String, String, bool)>, (io::ErrorKind, String, Option<i32>)>;

/// [`windows_and_more`] of an archive at each of `offsets`, in one pass over its content: what
/// reading up to each offset, then one byte more, would give (the end right at it is "no more").
/// An archive that fails to decompress is read once per offset instead.
fn archive_windows(path: &Path, offsets: &[u64]) -> io::Result<BTreeMap<u64, WindowAt>> {
    let mut at: BTreeMap<u64, (Sha256, Sha256)> = offsets
        .iter()
        .map(|&o| (o, (Sha256::new(), Sha256::new())))
        .collect();
    let Some(&last) = at.keys().next_back() else {
        return Ok(BTreeMap::new());
    };
    let (_, mut r) = open_content(path, Arc::new(AtomicU64::new(0)))?;
    let mut buf = vec![0u8; 256 * 1024];
    let mut pos = 0u64;
    let mut failed = false;
    // One byte past the last offset tells whether content goes on after it.
    while pos <= last {
        let want = (last + 1 - pos).min(buf.len() as u64) as usize;
        let n = match r.read(&mut buf[..want]) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => {
                failed = true;
                break;
            }
        };
        for (&o, (head, tail)) in at.range_mut(pos..) {
            feed_windows(o, pos, &buf[..n], head, tail);
        }
        pos += n as u64;
    }
    if failed {
        // A decoder that fails drops what it decoded in that read, so where a damaged archive
        // fails depends on the sizes of the reads: such an archive is read once per offset, as
        // before, so that each offset gives exactly what reading up to it gives.
        return Ok(offsets
            .iter()
            .map(|&o| {
                let w = windows_and_more(path, o)
                    .map_err(|e| (e.kind(), e.to_string(), e.raw_os_error()));
                (o, w)
            })
            .collect());
    }
    // `pos` bytes were read; reading stopped at the end or one byte past `last`.
    Ok(at
        .into_iter()
        .map(|(o, (head, tail))| {
            let w = (o <= pos).then(|| (hex(&head.finalize()), hex(&tail.finalize()), pos > o));
            (o, Ok(w))
        })
        .collect())
}

/// Hashes what `chunk`, read at content position `at`, holds of the two windows that identify
/// content up to `offset`: the head (its first [`WINDOW`] bytes) and the tail (the [`WINDOW`]
/// bytes before `offset`).
fn feed_windows(offset: u64, at: u64, chunk: &[u8], head: &mut Sha256, tail: &mut Sha256) {
    let end = at + chunk.len() as u64;
    let head_len = offset.min(WINDOW);
    let tail_start = offset - offset.min(WINDOW);
    if at < head_len {
        head.update(&chunk[..(end.min(head_len) - at) as usize]);
    }
    if end > tail_start && at < offset {
        tail.update(&chunk[(at.max(tail_start) - at) as usize..(end.min(offset) - at) as usize]);
    }
}

/// SHA-256 of a byte range of the decompressed content.
fn hash_range(content: &mut dyn Read, skip: u64, len: u64) -> io::Result<Option<String>> {
    io::copy(&mut (&mut *content).take(skip), &mut io::sink())?;
    let mut h = Sha256::new();
    let n = io::copy(&mut (&mut *content).take(len), &mut HashWriter(&mut h))?;
    Ok((n == len).then(|| hex(&h.finalize())))
}

struct HashWriter<'a>(&'a mut Sha256);

impl io::Write for HashWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Hashes of the windows that identify content up to `offset`: (head, tail), or `None` when the
/// content is shorter than `offset`.
pub fn window_hashes(path: &Path, offset: u64) -> io::Result<Option<(String, String)>> {
    Ok(windows_and_more(path, offset)?.map(|(head, tail, _)| (head, tail)))
}

/// [`window_hashes`], and whether readable content goes on after `offset` (a read error right past
/// it, such as the end of a truncated archive, is no more: that archive was quarantined when its
/// source was sealed).
fn windows_and_more(path: &Path, offset: u64) -> io::Result<Option<(String, String, bool)>> {
    let head_len = offset.min(WINDOW);
    let tail_start = offset - offset.min(WINDOW);
    if Compression::sniff(path)? == Compression::None {
        let mut f = File::open(path)?;
        let len = f.metadata()?.len();
        if len < offset {
            return Ok(None);
        }
        let head = hash_range(&mut f, 0, head_len)?;
        f.seek(SeekFrom::Start(tail_start))?;
        let tail = hash_range(&mut f, 0, offset - tail_start)?;
        return Ok(head.zip(tail).map(|(h, t)| (h, t, len > offset)));
    }
    // Archives: one pass over the decompressed content.
    let (_, mut r) = open_content(path, Arc::new(AtomicU64::new(0)))?;
    let (mut head, mut tail) = (Sha256::new(), Sha256::new());
    let mut buf = vec![0u8; 256 * 1024];
    let mut pos = 0u64;
    while pos < offset {
        let want = (offset - pos).min(buf.len() as u64) as usize;
        let n = match r.read(&mut buf[..want]) {
            Ok(0) => return Ok(None),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        feed_windows(offset, pos, &buf[..n], &mut head, &mut tail);
        pos += n as u64;
    }
    let more = loop {
        match r.read(&mut buf[..1]) {
            Ok(n) => break n > 0,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => break false,
        }
    };
    Ok(Some((hex(&head.finalize()), hex(&tail.finalize()), more)))
}

/// What the start of a file tells: its fingerprint, or why it has none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fingerprint {
    /// SHA-256 of the first line (newline included).
    Ready(String),
    /// No complete first line yet.
    Waiting,
    /// An archive that ends before its first line is complete.
    Truncated,
    /// An archive whose decompression fails before its first line is complete.
    Corrupt(String),
}

/// The fingerprint of a file: SHA-256 of its first line (newline included). For an archive read to
/// its end, a last line without newline counts.
pub fn fingerprint(path: &Path) -> io::Result<Fingerprint> {
    let counter = Arc::new(AtomicU64::new(0));
    let (c, r) = open_content(path, counter)?;
    let mut lr = LineReader::new(r, 0, c != Compression::None);
    let mut h = Sha256::new();
    match lr.next_item() {
        Some(Item::Line { bytes, newline, .. }) => {
            h.update(bytes);
            if newline {
                h.update(b"\n");
            }
        }
        Some(Item::Overlong { .. }) => {
            // Hash the first window instead: an overlong first line is still a stable identity.
            return Ok(match window_hashes(path, WINDOW)? {
                Some((head, _)) => Fingerprint::Ready(head),
                None => Fingerprint::Waiting,
            });
        }
        None => {
            return Ok(match lr.end() {
                End::Eof { .. } => Fingerprint::Waiting,
                End::Truncated { .. } => Fingerprint::Truncated,
                End::Corrupt { error, .. } => Fingerprint::Corrupt(error),
            });
        }
    }
    Ok(Fingerprint::Ready(hex(&h.finalize())))
}

/// Decides where to resume a file: after the known source whose content it continues, or from 0.
/// `sources` are the lake's sources by id, with those an ingest run under way has already moved;
/// `earlier` the same sources as the run found them: a file that holds exactly the content of a
/// source before this run moved it (an archive of what a longer copy continued) is known and
/// holds nothing new.
pub fn resume_point(
    path: &Path,
    fingerprint: &str,
    sources: &BTreeMap<String, SourceState>,
    earlier: &BTreeMap<String, SourceState>,
) -> io::Result<Resume> {
    let candidates: Vec<&SourceState> = sources
        .values()
        .filter(|s| s.fingerprint == fingerprint)
        .collect();
    let moved: Vec<&SourceState> = earlier
        .values()
        .filter(|s| s.fingerprint == fingerprint && sources.get(&s.id).is_some_and(|now| now != *s))
        .collect();
    let offsets = candidates
        .iter()
        .flat_map(|s| std::iter::once(s.offset).chain(s.sealed_before.iter().map(|w| w.offset)))
        .chain(moved.iter().map(|s| s.offset))
        .collect();
    let mut windows = Windows::new(path, offsets);
    for s in &candidates {
        if let Some(more) = windows.continues(s.offset, &s.head, &s.tail)? {
            return Ok(Resume::known(path, s, more, false));
        }
    }
    for s in &candidates {
        for w in &s.sealed_before {
            if windows.continues(w.offset, &w.head, &w.tail)? == Some(false) {
                return Ok(Resume::known(path, s, false, true));
            }
        }
    }
    for s in &moved {
        if windows.continues(s.offset, &s.head, &s.tail)? == Some(false) {
            return Ok(Resume::known(path, s, false, true));
        }
    }
    // A shorter copy of what a source was read past (a snapshot of a file being written, an
    // earlier rotated copy, read after the longer one): nothing in it is new, as long as the file
    // that source was read from still holds that content to compare with.
    for s in candidates.iter().chain(&moved) {
        if Path::new(&s.path) != path && copy_of_read_content(path, s) {
            return Ok(Resume::known(path, s, false, true));
        }
    }
    let base_id = &fingerprint[..32.min(fingerprint.len())];
    let id = if candidates.is_empty() && !sources.contains_key(base_id) {
        base_id.to_string()
    } else {
        let mut k = candidates.len();
        loop {
            let id = format!("{base_id}.{k}");
            if !sources.contains_key(&id) {
                break id;
            }
            k += 1;
        }
    };
    Ok(Resume {
        state: SourceState {
            id,
            fingerprint: fingerprint.to_string(),
            path: path.to_string_lossy().into_owned(),
            offset: 0,
            lines: 0,
            head: String::new(),
            tail: String::new(),
            sealed: false,
            sealed_before: Vec::new(),
        },
        known: false,
        more: true,
        superseded: false,
    })
}

/// Whether the whole decompressed content of `copy` is the beginning of what `source` was read to:
/// the file at the source's path still has the source's window hashes at its offset, and `copy`'s
/// bytes, a partial last line included, are its first bytes, no more than the offset. Any read
/// error is a no (the copy is then read as a file of its own, as before this test).
fn copy_of_read_content(copy: &Path, source: &SourceState) -> bool {
    let of = Path::new(&source.path);
    if Compression::sniff(copy).ok() == Some(Compression::None)
        && std::fs::metadata(copy).is_ok_and(|m| m.len() > source.offset)
    {
        return false;
    }
    match windows_and_more(of, source.offset) {
        Ok(Some((head, tail, _))) if head == source.head && tail == source.tail => {}
        _ => return false,
    }
    let open = |p: &Path| open_content(p, Arc::new(AtomicU64::new(0))).map(|(_, r)| r);
    let (Ok(mut a), Ok(mut b)) = (open(copy), open(of)) else {
        return false;
    };
    let (mut abuf, mut bbuf) = (vec![0u8; 64 * 1024], vec![0u8; 64 * 1024]);
    let mut pos = 0u64;
    loop {
        let n = match read_full(&mut a, &mut abuf) {
            Ok(0) => return pos > 0,
            Ok(n) => n,
            Err(_) => return false,
        };
        pos += n as u64;
        if pos > source.offset {
            return false;
        }
        match read_full(&mut b, &mut bbuf[..n]) {
            Ok(m) if m == n && abuf[..n] == bbuf[..n] => {}
            _ => return false,
        }
    }
}

/// Reads until `buf` is full or the content ends: the bytes read.
fn read_full(r: &mut dyn Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// The first complete compressed member (gzip) or frame (zstd) of an archive that fails its checks
/// (a bad CRC, bad compressed data, bytes that are not a member): the decompressed offset where it
/// starts, and the error. `None` for a plain file, or when every complete member checks; an
/// archive that ends inside a member is left to the reader (which waits for the rest).
///
/// A member's checksum is checked only at its end, after its content was decompressed: none of a
/// failing member's lines can be trusted, even those that read as valid events.
pub fn first_bad_member(path: &Path) -> io::Result<Option<(u64, String)>> {
    let c = Compression::sniff(path)?;
    if c == Compression::None {
        return Ok(None);
    }
    let mut input = BufReader::with_capacity(CHUNK, File::open(path)?);
    let mut pos = 0u64;
    loop {
        if input.fill_buf()?.is_empty() {
            return Ok(None);
        }
        let start = pos;
        let copied = match c {
            Compression::Gzip => {
                let mut dec = flate2::bufread::GzDecoder::new(input);
                let n = io::copy(&mut dec, &mut io::sink());
                input = dec.into_inner();
                n
            }
            Compression::Zstd => {
                let mut dec = zstd::stream::read::Decoder::with_buffer(input)?.single_frame();
                let n = io::copy(&mut dec, &mut io::sink());
                input = dec.finish();
                n
            }
            Compression::None => return Ok(None),
        };
        match copied {
            Ok(n) => pos += n,
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
            Err(e) => return Ok(Some((start, e.to_string()))),
        }
    }
}

/// Opens a file positioned at `offset` of its decompressed content; with a `limit`, the content
/// ends there and a line it cuts is left unread.
pub fn open_at(
    path: &Path,
    offset: u64,
    limit: Option<u64>,
    counter: Arc<AtomicU64>,
) -> io::Result<LineReader> {
    let c = Compression::sniff(path)?;
    if c == Compression::None {
        let mut f = File::open(path)?;
        f.seek(SeekFrom::Start(offset))?;
        counter.fetch_add(offset, Ordering::Relaxed);
        let r = Counting { inner: f, counter };
        return Ok(LineReader::new(Box::new(r), offset, false));
    }
    let (_, mut r) = open_content(path, counter)?;
    let skipped = io::copy(&mut (&mut r).take(offset), &mut io::sink())?;
    if skipped < offset {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "archive shorter than its checkpoint",
        ));
    }
    if let Some(limit) = limit {
        let cut: Box<dyn Read + Send> = Box::new(r.take(limit.saturating_sub(offset)));
        return Ok(LineReader::new(cut, offset, false));
    }
    Ok(LineReader::new(r, offset, true))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lake::State;
    use std::io::Write;

    fn lines(path: &Path) -> (Vec<(u64, Vec<u8>)>, End) {
        let mut r = open_at(path, 0, None, Arc::new(AtomicU64::new(0))).unwrap();
        let mut out = Vec::new();
        while let Some(item) = r.next_item() {
            match item {
                Item::Line { offset, bytes, .. } => out.push((offset, bytes.to_vec())),
                Item::Overlong { offset, len, .. } => {
                    out.push((offset, format!("overlong {len}").into_bytes()))
                }
            }
        }
        (out, r.end())
    }

    /// Every item of `path` as (offset, length, overlong); an overlong line's head and hash are
    /// checked against `data`, the file's (decompressed) content.
    fn items_checked(path: &Path, data: &[u8]) -> (Vec<(u64, usize, bool)>, End) {
        let mut r = open_at(path, 0, None, Arc::new(AtomicU64::new(0))).unwrap();
        let mut seen = Vec::new();
        while let Some(item) = r.next_item() {
            seen.push(match item {
                Item::Line { offset, bytes, .. } => (offset, bytes.len(), false),
                Item::Overlong {
                    offset,
                    head,
                    len,
                    sha256,
                    ..
                } => {
                    let line = &data[offset as usize..offset as usize + len as usize];
                    assert_eq!(head, &line[..LINE_CAP]);
                    assert_eq!(sha256, <[u8; 32]>::from(Sha256::digest(line)));
                    (offset, len as usize, true)
                }
            });
        }
        (seen, r.end())
    }

    #[test]
    fn a_line_is_kept_whole_up_to_the_cap_and_not_a_byte_past_it() {
        let dir = tempfile::tempdir().unwrap();
        // Exactly the cap, its newline in the read after the one that filled the cap.
        let p = dir.path().join("exact.jsonl");
        let mut data = vec![b'y'; LINE_CAP];
        data.extend_from_slice(b"\nb\n");
        std::fs::write(&p, &data).unwrap();
        let (seen, _) = items_checked(&p, &data);
        assert_eq!(
            seen,
            vec![(0, LINE_CAP, false), (LINE_CAP as u64 + 1, 1, false)]
        );
        // Past the cap by less than one read: its newline arrives with the bytes past the cap.
        let p = dir.path().join("past.jsonl");
        let mut data = b"a\n".to_vec();
        data.extend(std::iter::repeat_n(b'x', LINE_CAP + 1000));
        data.extend_from_slice(b"\nb\n");
        std::fs::write(&p, &data).unwrap();
        let (seen, _) = items_checked(&p, &data);
        assert_eq!(
            seen,
            vec![
                (0, 1, false),
                (2, LINE_CAP + 1000, true),
                (LINE_CAP as u64 + 1003, 1, false),
            ]
        );
    }

    #[test]
    fn an_overlong_last_line_of_an_archive_is_not_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.jsonl.gz");
        let mut data = b"a\n".to_vec();
        data.extend(std::iter::repeat_n(b'x', LINE_CAP + 10));
        let mut gz = flate2::write::GzEncoder::new(
            std::fs::File::create(&p).unwrap(),
            flate2::Compression::fast(),
        );
        gz.write_all(&data).unwrap();
        gz.finish().unwrap();
        let (seen, end) = items_checked(&p, &data);
        assert_eq!(seen, vec![(0, 1, false), (2, LINE_CAP + 10, true)]);
        assert_eq!(
            end,
            End::Eof {
                partial: 0,
                sealed: true
            }
        );
        // A plain file still being written keeps its long last line for a later run.
        let p = dir.path().join("b.jsonl");
        std::fs::write(&p, &data).unwrap();
        let (seen, _) = items_checked(&p, &data);
        assert_eq!(seen, vec![(0, 1, false)]);
    }

    #[test]
    fn plain_partial_last_line_is_left() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.jsonl");
        std::fs::write(&p, b"one\ntwo\nthr").unwrap();
        let (l, end) = lines(&p);
        assert_eq!(l, vec![(0, b"one".to_vec()), (4, b"two".to_vec())]);
        assert_eq!(
            end,
            End::Eof {
                partial: 3,
                sealed: false
            }
        );
    }

    #[test]
    fn gzip_archive_last_line_counts_and_seals() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.jsonl.gz");
        let mut e =
            flate2::write::GzEncoder::new(File::create(&p).unwrap(), flate2::Compression::fast());
        e.write_all(b"one\ntwo").unwrap();
        e.finish().unwrap();
        let (l, end) = lines(&p);
        assert_eq!(l, vec![(0, b"one".to_vec()), (4, b"two".to_vec())]);
        assert_eq!(
            end,
            End::Eof {
                partial: 0,
                sealed: true
            }
        );
    }

    #[test]
    fn zstd_archive_reads() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.jsonl.zst");
        std::fs::write(&p, zstd::encode_all(&b"one\ntwo\n"[..], 1).unwrap()).unwrap();
        assert_eq!(Compression::sniff(&p).unwrap(), Compression::Zstd);
        let (l, _) = lines(&p);
        assert_eq!(l.len(), 2);
    }

    #[test]
    fn corrupt_gzip_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.jsonl.gz");
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(&b"line\n".repeat(10000)).unwrap();
        let mut bytes = e.finish().unwrap();
        let mid = bytes.len() / 2;
        for b in &mut bytes[mid..mid + 16] {
            *b ^= 0x5a;
        }
        std::fs::write(&p, bytes).unwrap();
        let (_, end) = lines(&p);
        assert!(matches!(end, End::Corrupt { .. }), "{end:?}");
    }

    #[test]
    fn fingerprint_and_resume() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.jsonl");
        std::fs::write(&p, b"first\nsecond\n").unwrap();
        let Fingerprint::Ready(fp) = fingerprint(&p).unwrap() else {
            panic!("no fingerprint")
        };
        let mut state = State::default();
        let r = resume_point(&p, &fp, &state.sources, &state.sources).unwrap();
        assert!(!r.known);
        let (head, tail) = window_hashes(&p, 13).unwrap().unwrap();
        let mut s = r.state.clone();
        s.offset = 13;
        s.lines = 2;
        s.head = head;
        s.tail = tail;
        state.sources.insert(s.id.clone(), s);
        // Grown: resumes.
        std::fs::OpenOptions::new()
            .append(true)
            .open(&p)
            .unwrap()
            .write_all(b"third\n")
            .unwrap();
        let r = resume_point(&p, &fp, &state.sources, &state.sources).unwrap();
        assert!(r.known);
        assert_eq!(r.state.offset, 13);
        // Same first line, different content: a new source.
        let q = dir.path().join("b.jsonl");
        std::fs::write(&q, b"first\nsecund\n").unwrap();
        let r = resume_point(&q, &fp, &state.sources, &state.sources).unwrap();
        assert!(!r.known);
        assert_ne!(r.state.id, state.sources.keys().next().unwrap().clone());
        // Not yet a complete first line: no fingerprint.
        let z = dir.path().join("c.jsonl");
        std::fs::write(&z, b"no newline").unwrap();
        assert_eq!(fingerprint(&z).unwrap(), Fingerprint::Waiting);
    }

    #[test]
    fn an_archive_s_windows_at_all_its_offsets_in_one_pass_equal_one_read_per_offset() {
        let dir = tempfile::tempdir().unwrap();
        let content: Vec<u8> = (0..9000)
            .flat_map(|i| {
                format!("{{\"line\":{i},\"pad\":\"{}\"}}\n", "x".repeat(i % 40)).into_bytes()
            })
            .collect();
        let len = content.len() as u64;
        assert!(len > 3 * WINDOW);
        // Two gzip members, a zstd frame, and the gzip cut short in its second member.
        let gz = dir.path().join("a.jsonl.gz");
        let mut bytes = Vec::new();
        for part in [&content[..200_000], &content[200_000..]] {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(part).unwrap();
            bytes.extend(e.finish().unwrap());
        }
        std::fs::write(&gz, &bytes).unwrap();
        let zst = dir.path().join("b.jsonl.zst");
        std::fs::write(&zst, zstd::encode_all(&content[..], 1).unwrap()).unwrap();
        let cut = dir.path().join("c.jsonl.gz");
        std::fs::write(&cut, &bytes[..bytes.len() - 2000]).unwrap();
        // Damaged deflate data in the middle of the first member.
        let damaged = dir.path().join("d.jsonl.gz");
        let mut bad = bytes.clone();
        for b in &mut bad[5000..5040] {
            *b ^= 0x5a;
        }
        std::fs::write(&damaged, &bad).unwrap();
        let offsets = vec![
            0,
            1,
            100,
            WINDOW - 1,
            WINDOW,
            WINDOW + 1,
            150_000,
            200_000,
            len - 5000,
            len - 1,
            len,
            len + 1,
            2 * len,
        ];
        for path in [&gz, &zst, &cut, &damaged] {
            let all = archive_windows(path, &offsets).unwrap();
            assert_eq!(all.len(), offsets.len());
            let mut found = 0;
            for &o in &offsets {
                let one = windows_and_more(path, o);
                match (&all[&o], &one) {
                    (Ok(a), Ok(b)) => {
                        assert_eq!(a, b, "{} at {o}", path.display());
                        found += usize::from(a.is_some());
                    }
                    (Err(_), Err(_)) => {}
                    (a, b) => panic!("{} at {o}: {a:?} against {b:?}", path.display()),
                }
                // And through the cache that resume_point uses.
                if let Ok(Some((head, tail, more))) = one {
                    let mut w = Windows::new(path, offsets.clone());
                    assert_eq!(w.continues(o, &head, &tail).unwrap(), Some(more));
                    assert_eq!(w.continues(o, &head, &"0".repeat(64)).unwrap(), None);
                }
            }
            if path != &damaged {
                assert!(found >= 8, "{}: {found}", path.display());
            }
        }
        // The whole content is known at every offset up to its length, and ends there.
        let all = archive_windows(&gz, &offsets).unwrap();
        assert!(matches!(&all[&len], Ok(Some((_, _, false)))));
        assert!(matches!(&all[&(len - 1)], Ok(Some((_, _, true)))));
        assert!(matches!(&all[&(len + 1)], Ok(None)));
    }
}
