//! Writing the fleet's log files: games merged by time into one file per server per UTC day (older days gzip-compressed, the last day plain), with malformed lines spliced in and labelled.
//!
//! Each finished game hands over its lines with their write times (the `ts`
//! of the line, never decreasing within a game). Games arrive in start
//! order, so every line written before the next game's start time is final:
//! a heap keyed by (write time, game index) merges the games in flight, and
//! memory holds only those games. A line goes to the file of the UTC day of
//! its write time, so a game running past midnight continues in the next
//! day's file.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use flate2::Compression;
use flate2::write::GzEncoder;
use serde::Serialize;

use super::SimError;
use super::plan::DAY_MS;
use super::record::GameOutput;
use super::rng::Rng;
use vigie_log::{parse_line, syntax};

/// The kinds of malformed line spliced into the files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MalformedKind {
    /// A stray text line (not JSON).
    NotJson,
    /// A line cut short (invalid JSON).
    Truncated,
    /// A real line without its `ts`.
    MissingField,
    /// A timestamp without milliseconds or `T`.
    BadTimestamp,
    /// A byte sequence that is not UTF-8.
    InvalidUtf8,
    /// `seq` written as a string.
    WrongType,
    /// An event type the format does not know.
    UnknownType,
    /// Format version 2.
    UnsupportedVersion,
    /// A JSON array instead of an object.
    NotAnObject,
}

impl MalformedKind {
    const ALL: [MalformedKind; 9] = [
        MalformedKind::NotJson,
        MalformedKind::Truncated,
        MalformedKind::MissingField,
        MalformedKind::BadTimestamp,
        MalformedKind::InvalidUtf8,
        MalformedKind::WrongType,
        MalformedKind::UnknownType,
        MalformedKind::UnsupportedVersion,
        MalformedKind::NotAnObject,
    ];
}

/// A malformed line as labelled.
#[derive(Debug, Clone, Serialize)]
pub struct MalformedLabel {
    /// File, relative to the output directory.
    pub file: String,
    /// 1-based line number in the (decompressed) file.
    pub line: u64,
    /// Byte offset of the line's start in the decompressed file.
    pub offset: u64,
    pub kind: MalformedKind,
    /// The reject code `log::parse_line` gives it.
    pub reject: String,
}

/// A file written.
#[derive(Debug, Clone, Serialize)]
pub struct FileRecord {
    /// Relative path.
    pub path: String,
    /// Lines in it (malformed ones included).
    pub lines: u64,
    /// Decompressed size in bytes.
    pub bytes: u64,
}

enum Sink {
    Plain(BufWriter<File>),
    Gz(Box<GzEncoder<BufWriter<File>>>),
}

impl Sink {
    fn write_all(&mut self, b: &[u8]) -> std::io::Result<()> {
        match self {
            Sink::Plain(w) => w.write_all(b),
            Sink::Gz(w) => w.write_all(b),
        }
    }

    fn finish(self) -> std::io::Result<()> {
        match self {
            Sink::Plain(mut w) => w.flush(),
            Sink::Gz(w) => w.finish()?.flush(),
        }
    }
}

struct ServerFile {
    name: String,
    day: Option<i64>,
    sink: Option<Sink>,
    rel: String,
    lines: u64,
    bytes: u64,
    last_line: String,
}

struct Active {
    server: usize,
    text: String,
    lines: Vec<(i64, u32, u32)>,
    next: usize,
}

/// The writer of a whole run.
pub struct Output {
    root: PathBuf,
    window_start: i64,
    days: i64,
    level: u32,
    servers: Vec<ServerFile>,
    heap: BinaryHeap<Reverse<(i64, u64)>>,
    active: BTreeMap<u64, Active>,
    malformed: Vec<VecDeque<(i64, MalformedKind)>>,
    rng: Rng,
    /// Malformed lines written.
    pub malformed_labels: Vec<MalformedLabel>,
    /// Files closed so far.
    pub files: Vec<FileRecord>,
    /// Event lines written.
    pub events: u64,
}

fn io_err(path: &Path) -> impl Fn(std::io::Error) -> SimError + '_ {
    move |source| SimError::Io {
        path: path.to_path_buf(),
        source,
    }
}

impl Output {
    /// A writer into `root` for `servers` servers; `malformed` lines are spread over the window.
    pub fn new(
        root: &Path,
        window_start: i64,
        days: u32,
        servers: u32,
        level: u32,
        malformed: u32,
        mut rng: Rng,
    ) -> Result<Output, SimError> {
        let mut files = Vec::new();
        for s in 0..servers {
            let name = format!("srv-{:02}", s + 1);
            let dir = root.join(&name);
            std::fs::create_dir_all(&dir).map_err(io_err(&dir))?;
            files.push(ServerFile {
                name,
                day: None,
                sink: None,
                rel: String::new(),
                lines: 0,
                bytes: 0,
                last_line: String::new(),
            });
        }
        let mut queues: Vec<VecDeque<(i64, MalformedKind)>> =
            vec![VecDeque::new(); servers as usize];
        let mut planned: Vec<(usize, i64, MalformedKind)> = (0..malformed)
            .map(|i| {
                let s = rng.index(servers as usize);
                let t = window_start + rng.range(0, i64::from(days) * DAY_MS - 1);
                let kind = MalformedKind::ALL[i as usize % MalformedKind::ALL.len()];
                (s, t, kind)
            })
            .collect();
        planned.sort_by_key(|p| (p.1, p.0));
        for (s, t, k) in planned {
            queues[s].push_back((t, k));
        }
        Ok(Output {
            root: root.to_path_buf(),
            window_start,
            days: i64::from(days),
            level,
            servers: files,
            heap: BinaryHeap::new(),
            active: BTreeMap::new(),
            malformed: queues,
            rng,
            malformed_labels: Vec::new(),
            files: Vec::new(),
            events: 0,
        })
    }

    /// Takes over a finished game's lines.
    pub fn push_game(&mut self, game: GameOutput) {
        if let Some(&(wt, _, _)) = game.lines.first() {
            self.heap.push(Reverse((wt, game.index)));
            self.active.insert(
                game.index,
                Active {
                    server: game.server as usize,
                    text: game.text,
                    lines: game.lines,
                    next: 0,
                },
            );
        }
    }

    /// Writes every line with a write time up to `t`.
    pub fn flush_until(&mut self, t: i64) -> Result<(), SimError> {
        while let Some(&Reverse((wt, index))) = self.heap.peek() {
            if wt > t {
                break;
            }
            self.heap.pop();
            let Some(game) = self.active.get_mut(&index) else {
                continue;
            };
            let Some(&(wt, a, b)) = game.lines.get(game.next) else {
                continue;
            };
            game.next += 1;
            let server = game.server;
            let next = game.lines.get(game.next).map(|l| l.0);
            let text = std::mem::take(&mut game.text);
            let written =
                self.write_event(server, wt, text.get(a as usize..b as usize).unwrap_or(""));
            match next {
                Some(next) => {
                    if let Some(game) = self.active.get_mut(&index) {
                        game.text = text;
                    }
                    self.heap.push(Reverse((next, index)));
                }
                None => {
                    self.active.remove(&index);
                }
            }
            written?;
        }
        Ok(())
    }

    fn open(&mut self, server: usize, day: i64) -> Result<(), SimError> {
        self.close(server)?;
        let date = syntax::date_of(self.window_start + day * DAY_MS);
        let last = day >= self.days - 1;
        let file = &mut self.servers[server];
        let rel = format!(
            "{}/{}.jsonl{}",
            file.name,
            date,
            if last { "" } else { ".gz" }
        );
        let path = self.root.join(&rel);
        let f = File::create(&path).map_err(io_err(&path))?;
        let w = BufWriter::with_capacity(1 << 18, f);
        file.sink = Some(if last {
            Sink::Plain(w)
        } else {
            Sink::Gz(Box::new(GzEncoder::new(w, Compression::new(self.level))))
        });
        file.day = Some(day);
        file.rel = rel;
        file.lines = 0;
        file.bytes = 0;
        Ok(())
    }

    fn close(&mut self, server: usize) -> Result<(), SimError> {
        let file = &mut self.servers[server];
        if let Some(sink) = file.sink.take() {
            let path = self.root.join(&file.rel);
            sink.finish().map_err(io_err(&path))?;
            self.files.push(FileRecord {
                path: file.rel.clone(),
                lines: file.lines,
                bytes: file.bytes,
            });
        }
        Ok(())
    }

    fn raw_write(&mut self, server: usize, bytes: &[u8]) -> Result<(), SimError> {
        let file = &mut self.servers[server];
        let Some(sink) = file.sink.as_mut() else {
            return Err(SimError::Internal(format!(
                "no open file for {}",
                file.name
            )));
        };
        let written = sink.write_all(bytes).and_then(|()| sink.write_all(b"\n"));
        if let Err(source) = written {
            return Err(SimError::Io {
                path: self.root.join(&file.rel),
                source,
            });
        }
        file.lines += 1;
        file.bytes += bytes.len() as u64 + 1;
        Ok(())
    }

    fn write_event(&mut self, server: usize, wt: i64, line: &str) -> Result<(), SimError> {
        let day = ((wt - self.window_start).div_euclid(DAY_MS)).clamp(0, self.days - 1);
        if self.servers[server].day != Some(day) {
            self.open(server, day)?;
        }
        while self.malformed[server]
            .front()
            .is_some_and(|(t, _)| *t <= wt)
        {
            if let Some((_, kind)) = self.malformed[server].pop_front() {
                self.write_malformed(server, kind, line)?;
            }
        }
        self.raw_write(server, line.as_bytes())?;
        if !self.malformed[server].is_empty() {
            // Kept only while malformed lines remain to be placed (a template for the leftovers).
            let last = &mut self.servers[server].last_line;
            last.clear();
            last.push_str(line);
        }
        self.events += 1;
        Ok(())
    }

    fn write_malformed(
        &mut self,
        server: usize,
        kind: MalformedKind,
        template: &str,
    ) -> Result<(), SimError> {
        let (mut kind, mut bytes) = (kind, malformed_line(kind, template, &mut self.rng));
        let reject = match parse_line(&bytes) {
            Err(r) => r.code().to_string(),
            Ok(_) => {
                kind = MalformedKind::NotJson;
                bytes = malformed_line(kind, template, &mut self.rng);
                parse_line(&bytes)
                    .err()
                    .map_or_else(|| "unknown".to_string(), |r| r.code().to_string())
            }
        };
        let file = &self.servers[server];
        let label = MalformedLabel {
            file: file.rel.clone(),
            line: file.lines + 1,
            offset: file.bytes,
            kind,
            reject,
        };
        self.raw_write(server, &bytes)?;
        self.malformed_labels.push(label);
        Ok(())
    }

    /// Writes what is left, splices any malformed line not yet placed, and closes every file.
    pub fn finish(&mut self) -> Result<(), SimError> {
        self.flush_until(i64::MAX)?;
        for s in 0..self.servers.len() {
            while let Some((_, kind)) = self.malformed[s].pop_front() {
                // A server that wrote nothing lends its leftover to the first one that did.
                let target = if self.servers[s].sink.is_some() {
                    Some(s)
                } else {
                    (0..self.servers.len()).find(|&o| self.servers[o].sink.is_some())
                };
                let Some(t) = target else {
                    let day = self.days - 1;
                    self.open(s, day)?;
                    self.write_malformed(s, kind, "{}")?;
                    continue;
                };
                let template = match self.servers[t].last_line.as_str() {
                    "" => "{}".to_string(),
                    l => l.to_string(),
                };
                self.write_malformed(t, kind, &template)?;
            }
        }
        for s in 0..self.servers.len() {
            self.close(s)?;
        }
        self.files.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(())
    }
}

/// A malformed variant of `template` (a real line) of the given kind.
fn malformed_line(kind: MalformedKind, template: &str, rng: &mut Rng) -> Vec<u8> {
    let replace_once = |from: &str, to: &str| -> Vec<u8> {
        if template.contains(from) {
            template.replacen(from, to, 1).into_bytes()
        } else {
            b"#corrupted".to_vec()
        }
    };
    match kind {
        MalformedKind::NotJson => {
            let texts = [
                "--- server restarted ---",
                "WARN log rotation delayed",
                "panicked at 'connection reset by peer'",
                "#",
            ];
            rng.pick(&texts).copied().unwrap_or("#").as_bytes().to_vec()
        }
        MalformedKind::Truncated => {
            let b = template.as_bytes();
            let cut = if b.len() > 8 {
                rng.range(1, b.len() as i64 - 2) as usize
            } else {
                1
            };
            let mut v = b[..cut.min(b.len())].to_vec();
            if v.last() == Some(&b'}') {
                v.pop();
            }
            v
        }
        MalformedKind::MissingField => {
            match (template.find(",\"ts\":\""), template.find("Z\",\"type\"")) {
                (Some(a), Some(b)) if b > a => {
                    let mut s = template[..a].to_string();
                    s.push_str(&template[b + 2..]);
                    s.into_bytes()
                }
                _ => b"{\"v\":1}".to_vec(),
            }
        }
        MalformedKind::BadTimestamp => match template.find("\"ts\":\"") {
            Some(a) if template.len() >= a + 6 + 24 => {
                let ts = &template[a + 6..a + 6 + 24];
                let bad = format!("{} {}", &ts[..10], &ts[11..19]);
                template.replacen(ts, &bad, 1).into_bytes()
            }
            _ => b"{\"v\":1,\"ts\":\"yesterday\"}".to_vec(),
        },
        MalformedKind::InvalidUtf8 => {
            let mut v = template.as_bytes().to_vec();
            let at = v.iter().position(|&c| c == b'"').map_or(0, |p| p + 1);
            v.splice(at..at, [0xff, 0xfe, 0xc3]);
            v
        }
        MalformedKind::WrongType => match template.find("\"seq\":") {
            Some(a) => {
                let rest = &template[a + 6..];
                let end = rest.find(',').unwrap_or(rest.len());
                let num = &rest[..end];
                let mut s = template[..a + 6].to_string();
                s.push('"');
                s.push_str(num);
                s.push('"');
                s.push_str(&rest[end..]);
                s.into_bytes()
            }
            None => b"{\"v\":\"1\"}".to_vec(),
        },
        MalformedKind::UnknownType => match template.find("\"type\":\"") {
            Some(a) => {
                let rest = &template[a + 8..];
                let end = rest.find('"').unwrap_or(0);
                let mut s = template[..a + 8].to_string();
                s.push_str("chat_message");
                s.push_str(&rest[end..]);
                s.into_bytes()
            }
            None => b"{\"type\":\"chat_message\"}".to_vec(),
        },
        MalformedKind::UnsupportedVersion => replace_once("{\"v\":1,", "{\"v\":2,"),
        MalformedKind::NotAnObject => b"[\"heartbeat\",1]".to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINE: &str = r#"{"v":1,"game":"d10-7f3a","seq":3,"ts":"2026-11-29T20:15:05.950Z","type":"move","player":"acc-1","move":"34-30","status":"rejected","reason":"illegal","think_ms":948,"prev":"0000000000000000000000000000000000000000000000000000000000000000"}"#;

    #[test]
    fn every_malformed_kind_is_rejected() {
        assert!(parse_line(LINE.as_bytes()).is_ok());
        let mut rng = Rng::new(4);
        for kind in MalformedKind::ALL {
            for _ in 0..20 {
                let b = malformed_line(kind, LINE, &mut rng);
                assert!(
                    parse_line(&b).is_err(),
                    "{kind:?}: {}",
                    String::from_utf8_lossy(&b)
                );
                assert!(!b.contains(&b'\n'));
            }
        }
    }
}
