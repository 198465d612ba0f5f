//! Shared helpers: cached simulation runs, reading the files back (gzip or plain), grouping lines by game.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use vigie::log::{Event, parse_line};
use vigie::sim::{SimOptions, simulate};

/// A line of a file: where it is and its bytes.
pub struct RawLine {
    pub file: String,
    pub line: u64,
    pub bytes: Vec<u8>,
}

/// A finished run, read back.
pub struct Run {
    pub lines: Vec<RawLine>,
    pub labels: serde_json::Value,
}

/// One game's lines in file order (which is `seq` order), parsed.
pub struct GameLog {
    pub id: String,
    pub lines: Vec<(String, Event)>,
}

impl Run {
    /// Games by id, every line parsed (panics on a malformed line that is not labelled).
    pub fn games(&self) -> BTreeMap<String, GameLog> {
        let malformed: std::collections::BTreeSet<(String, u64)> = self.labels["malformed"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|m| {
                        (
                            m["file"].as_str().unwrap_or("").to_string(),
                            m["line"].as_u64().unwrap_or(0),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        let mut games: BTreeMap<String, GameLog> = BTreeMap::new();
        for l in &self.lines {
            if malformed.contains(&(l.file.clone(), l.line)) {
                continue;
            }
            let e = match parse_line(&l.bytes) {
                Ok(e) => e,
                Err(r) => panic!(
                    "{}:{} does not parse: {r}: {}",
                    l.file,
                    l.line,
                    String::from_utf8_lossy(&l.bytes)
                ),
            };
            let text = String::from_utf8(l.bytes.clone()).unwrap_or_default();
            games
                .entry(e.game.clone())
                .or_insert_with(|| GameLog {
                    id: e.game.clone(),
                    lines: Vec::new(),
                })
                .lines
                .push((text, e));
        }
        games
    }

    /// Fault labels per game: (seq, code).
    pub fn faults(&self) -> BTreeMap<String, Vec<(i64, String)>> {
        let mut out: BTreeMap<String, Vec<(i64, String)>> = BTreeMap::new();
        for f in self.labels["faults"].as_array().into_iter().flatten() {
            let game = f["game"].as_str().unwrap_or("").to_string();
            let seq = f["seq"].as_i64().unwrap_or(-1);
            let code = f["code"].as_str().unwrap_or("").to_string();
            out.entry(game).or_default().push((seq, code));
        }
        for v in out.values_mut() {
            v.sort();
        }
        out
    }

    /// Behaviour of each account.
    pub fn behaviours(&self) -> BTreeMap<String, String> {
        self.labels["accounts"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|a| {
                (
                    a["account"].as_str().unwrap_or("").to_string(),
                    a["behaviour"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect()
    }
}

/// Every file under `dir` except the labels, sorted, as (relative path, decompressed bytes).
pub fn read_files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            let rel = p
                .strip_prefix(dir)
                .map(|r| r.to_string_lossy().to_string())
                .unwrap_or_default();
            if !rel.contains("srv-") {
                continue;
            }
            let raw = std::fs::read(&p).unwrap_or_default();
            let bytes = if rel.ends_with(".gz") {
                let mut d = flate2::read::GzDecoder::new(&raw[..]);
                let mut v = Vec::new();
                d.read_to_end(&mut v)
                    .unwrap_or_else(|e| panic!("{rel}: {e}"));
                v
            } else {
                raw
            };
            out.push((rel, bytes));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// Runs the simulator into `dir` (emptied first) and reads everything back.
pub fn run_into(opts: &SimOptions, dir: &Path) -> Run {
    let _ = std::fs::remove_dir_all(dir);
    if let Err(e) = simulate(opts, dir, &|_| {}) {
        panic!("simulate failed: {e}");
    }
    let mut lines = Vec::new();
    for (file, bytes) in read_files(dir) {
        assert!(
            bytes.is_empty() || bytes.ends_with(b"\n"),
            "{file} does not end with a newline"
        );
        for (i, l) in bytes.split(|&b| b == b'\n').enumerate() {
            if l.is_empty() && i > 0 {
                continue;
            }
            lines.push(RawLine {
                file: file.clone(),
                line: i as u64 + 1,
                bytes: l.to_vec(),
            });
        }
    }
    let text = std::fs::read_to_string(dir.join("labels.json")).unwrap_or_default();
    let labels: serde_json::Value = serde_json::from_str(&text).unwrap_or(serde_json::Value::Null);
    Run { lines, labels }
}

fn scratch(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("sim-it")
        .join(name)
}

/// The sample preset, run once per test binary.
pub fn sample() -> &'static Run {
    static RUN: OnceLock<Run> = OnceLock::new();
    RUN.get_or_init(|| run_into(&SimOptions::sample(), &scratch("sample")))
}

/// A run at the subtle setting with honest look-alikes.
pub fn subtle() -> &'static Run {
    static RUN: OnceLock<Run> = OnceLock::new();
    RUN.get_or_init(|| {
        let opts = SimOptions {
            seed: 78,
            days: 4,
            games_per_day: 600,
            accounts: 300,
            behaviour_rate: 0.02,
            subtlety: 1.0,
            lookalikes: 0.2,
            ..SimOptions::default()
        };
        run_into(&opts, &scratch("subtle"))
    })
}

/// A larger run with many faults of every code and some malformed lines.
pub fn faulty() -> &'static Run {
    static RUN: OnceLock<Run> = OnceLock::new();
    RUN.get_or_init(|| {
        let opts = SimOptions {
            seed: 77,
            days: 2,
            games_per_day: 700,
            accounts: 300,
            servers: 3,
            malformed: 40,
            fault_rate: 0.35,
            behaviour_rate: 0.02,
            ..SimOptions::default()
        };
        run_into(&opts, &scratch("faulty"))
    })
}

/// A clean run (no fault, no malformed line) with ordinary rates.
pub fn clean() -> &'static Run {
    static RUN: OnceLock<Run> = OnceLock::new();
    RUN.get_or_init(|| {
        let opts = SimOptions {
            seed: 5,
            days: 2,
            games_per_day: 500,
            accounts: 250,
            fault_rate: 0.0,
            ..SimOptions::default()
        };
        run_into(&opts, &scratch("clean"))
    })
}
