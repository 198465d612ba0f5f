//! Batch ingest: completeness, quarantine, idempotence, resumption, crash safety, external readability.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use vigie::ingest::{IngestOptions, ingest_paths};
use vigie::lake::Lake;

use crate::common::*;

fn quiet() -> IngestOptions {
    IngestOptions {
        progress: false,
        ..IngestOptions::default()
    }
}

fn ingest(lake: &Path, inputs: &[PathBuf]) -> vigie::ingest::IngestReport {
    let lake = Lake::open(lake).expect("open");
    ingest_paths(&lake, inputs, &quiet()).expect("ingest")
}

/// A scratch directory and an empty `logs` directory in it.
fn scratch_logs() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    fs::create_dir(&logs).unwrap();
    (dir, logs)
}

fn sample_lines() -> Vec<Vec<u8>> {
    let bytes = fs::read(shared_sample()).expect("sample");
    bytes
        .split_inclusive(|&b| b == b'\n')
        .map(<[u8]>::to_vec)
        .collect()
}

#[test]
fn shared_sample_ingests_whole_and_sorted() {
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake");
    let r = ingest(&lake, &[shared_sample()]);
    assert_eq!(r.lines_read, 5010);
    assert_eq!(r.lines_valid, 5010);
    assert_eq!(r.lines_quarantined, 0);
    assert_eq!(r.partial_bytes, 0);
    assert_eq!(r.version, Some(1));
    let rows = event_rows(&lake);
    assert_eq!(rows.len(), 5010);
    // Every line is stored exactly as written.
    let mut expected: Vec<String> = sample_lines()
        .iter()
        .map(|l| String::from_utf8(l.strip_suffix(b"\n").unwrap().to_vec()).unwrap())
        .collect();
    expected.sort();
    let mut got: Vec<String> = rows.iter().map(|r| r.2.clone()).collect();
    got.sort();
    assert_eq!(got, expected);
    // Files are Hive-partitioned by date and sorted by (game, seq).
    for b in read_table(&lake, "events") {
        let g = strings(&b, "game");
        let s = ints(&b, "seq");
        let keys: Vec<(Option<String>, Option<i64>)> = g.into_iter().zip(s).collect();
        assert!(
            keys.windows(2).all(|w| w[0] <= w[1]),
            "rows not sorted by game, seq"
        );
    }
    for f in data_files(&lake) {
        let parent = f
            .parent()
            .unwrap()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        assert!(parent.starts_with("date=2026-11-"), "{}", f.display());
        assert!(
            f.extension().is_some_and(|e| e == "parquet"),
            "{}",
            f.display()
        );
    }
}

/// A file of malformed lines of many kinds, each with the reason code it must get.
fn malformed_lines() -> Vec<(Vec<u8>, &'static str)> {
    let good = r#"{"v":1,"game":"g-1","seq":1,"ts":"2026-11-29T20:15:04.210Z","type":"move","player":"acc-1","move":"32-28","status":"accepted","think_ms":4210}"#;
    let mut lines: Vec<(Vec<u8>, &'static str)> = vec![
        (b"this is not json".to_vec(), "invalid_json"),
        (b"[1,2,3]".to_vec(), "not_an_object"),
        (b"\"a string\"".to_vec(), "not_an_object"),
        (b"{\"v\":1,\"game\":".to_vec(), "invalid_json"),
        (good.replace("\"v\":1,", "").into_bytes(), "missing_field"),
        (
            good.replace("\"game\":\"g-1\",", "").into_bytes(),
            "missing_field",
        ),
        (
            good.replace("\"v\":1", "\"v\":\"1\"").into_bytes(),
            "wrong_type",
        ),
        (
            good.replace("\"seq\":1", "\"seq\":\"1\"").into_bytes(),
            "wrong_type",
        ),
        (
            good.replace("\"seq\":1", "\"seq\":-3").into_bytes(),
            "invalid_value",
        ),
        (
            good.replace("\"v\":1", "\"v\":2").into_bytes(),
            "unsupported_version",
        ),
        (
            good.replace("\"move\",", "\"teleport\",").into_bytes(),
            "unknown_type",
        ),
        (
            good.replace("20:15:04.210Z", "20:15:04Z").into_bytes(),
            "bad_timestamp",
        ),
        (
            good.replace("2026-11-29T", "2026-02-30T").into_bytes(),
            "bad_timestamp",
        ),
        (
            good.replace(
                "\"ts\":\"2026-11-29T20:15:04.210Z\"",
                "\"ts\":1764447304210",
            )
            .into_bytes(),
            "wrong_type",
        ),
        (
            good.replace("\"think_ms\":4210", "\"think_ms\":4210,\"think_ms\":1")
                .into_bytes(),
            "duplicate_field",
        ),
        (
            good.replace("\"status\":\"accepted\"", "\"status\":\"rejected\"")
                .into_bytes(),
            "missing_field",
        ),
        (
            good.replace("\"32-28\"", "\"32-99\"").into_bytes(),
            "invalid_value",
        ),
        (Vec::new(), "empty_line"),
    ];
    let mut bad_utf8 = good.as_bytes().to_vec();
    bad_utf8[40] = 0xff;
    lines.push((bad_utf8, "not_utf8"));
    let mut huge = good.replace("\"think_ms\":4210", "\"pad\":\"").into_bytes();
    huge.extend(std::iter::repeat_n(b'x', 2 << 20));
    huge.extend_from_slice(b"\",\"think_ms\":1}");
    lines.push((huge, "line_too_long"));
    lines
}

#[test]
fn malformed_lines_land_in_quarantine_with_specific_reasons() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("bad.jsonl");
    let cases = malformed_lines();
    let mut f = fs::File::create(&input).unwrap();
    for (line, _) in &cases {
        f.write_all(line).unwrap();
        f.write_all(b"\n").unwrap();
    }
    drop(f);
    let lake = dir.path().join("lake");
    let out = vigie(&[
        "ingest",
        "--quiet",
        "--lake",
        lake.to_str().unwrap(),
        input.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let n = cases.len();
    assert!(
        stdout.contains(&format!("{n} lines read = 0 valid + {n} quarantined")),
        "summary missing counts: {stdout}"
    );
    let rows = quarantine_rows(&lake);
    assert_eq!(rows.len(), n);
    // Match rows to input lines by offset: reason and bytes must be exact.
    let mut offset = 0i64;
    for (line, reason) in &cases {
        let row = rows
            .iter()
            .find(|r| r.1 == offset)
            .unwrap_or_else(|| panic!("no row at offset {offset}"));
        assert_eq!(
            row.2,
            *reason,
            "line at {offset}: {}",
            String::from_utf8_lossy(&line[..line.len().min(80)])
        );
        assert_eq!(&row.3, line, "raw bytes differ at {offset}");
        offset += line.len() as i64 + 1;
    }
    assert!(event_rows(&lake).is_empty());
}

/// Rejected lines are kept whole up to 64 MiB each: they are written as soon as the quarantined
/// rows pass their bound, not after the next 4,096 lines (a file of six 70 MB lines took 968 MB).
#[test]
fn long_rejected_lines_are_written_as_they_pile_up() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("long.jsonl");
    let lines: Vec<Vec<u8>> = (0..5u8).map(|i| vec![b'a' + i; 2 << 20]).collect();
    fs::write(&input, lines.join(&b'\n')).unwrap();
    let path = dir.path().join("lake");
    let lake = Lake::open(&path).unwrap();
    let opts = IngestOptions {
        flush_bytes: 3 << 20,
        final_files: true,
        ..quiet()
    };
    let r = ingest_paths(&lake, &[input], &opts).unwrap();
    assert_eq!((r.lines_read, r.lines_quarantined), (5, 5));
    // Two lines pass the bound: written in pairs, then the last one at the end of the run.
    let files = lake
        .snapshot()
        .unwrap()
        .state
        .table_files("quarantine")
        .count();
    assert_eq!(files, 3);
    let mut rows = quarantine_rows(&path);
    rows.sort_by_key(|r| r.1);
    let reasons: Vec<&str> = rows.iter().map(|r| r.2.as_str()).collect();
    assert_eq!(reasons, ["line_too_long"; 5]);
    let kept: Vec<&Vec<u8>> = rows.iter().map(|r| &r.3).collect();
    assert_eq!(kept, lines.iter().collect::<Vec<_>>());
}

/// Valid lines can be up to 1 MiB each (unknown fields are kept): the buffers are checked by the
/// bytes read as well as every 4,096 lines (2,000 lines of 900 KB took 10.6 GB before).
#[test]
fn long_valid_lines_are_written_as_they_pile_up() {
    let dir = tempfile::tempdir().unwrap();
    // The sample's first line (a game start), as the start of twenty games with a long unknown field.
    let first = String::from_utf8(sample_lines().remove(0)).unwrap();
    let body = first.trim_end().strip_suffix('}').unwrap();
    let id = body
        .split("\"game\":\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap();
    let pad = "x".repeat(900_000);
    let lines: Vec<String> = (0..20)
        .map(|i| {
            let line = body.replacen(id, &format!("big-{i}"), 1);
            format!("{line},\"pad\":\"{pad}\"}}")
        })
        .collect();
    let input = dir.path().join("big.jsonl");
    fs::write(&input, lines.join("\n") + "\n").unwrap();
    let path = dir.path().join("lake");
    let lake = Lake::open(&path).unwrap();
    let opts = IngestOptions {
        flush_bytes: 4 << 20,
        ..quiet()
    };
    let r = ingest_paths(&lake, &[input], &opts).unwrap();
    assert_eq!((r.lines_read, r.lines_valid), (20, 20));
    let files = lake.snapshot().unwrap().state.table_files("events").count();
    assert!(files >= 3, "{files} events files for 20 lines of 900 KB");
    let rows = event_rows(&path);
    assert_eq!(rows.len(), 20);
    assert!(rows.iter().all(|r| r.2.len() > 900_000));
}

#[test]
fn ingesting_twice_adds_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake");
    let first = ingest(&lake, &[shared_sample()]);
    assert_eq!(first.version, Some(1));
    let second = ingest(&lake, &[shared_sample()]);
    assert_eq!(second.version, None);
    assert_eq!(second.lines_read, 0);
    assert_eq!(second.files_unchanged, 1);
    assert_eq!(event_rows(&lake).len(), 5010);
}

#[test]
fn grown_file_resumes_and_partial_line_waits() {
    let dir = tempfile::tempdir().unwrap();
    let lines = sample_lines();
    let path = dir.path().join("server-a.jsonl");
    // 1000 complete lines and half of the next one.
    let mut content: Vec<u8> = lines[..1000].concat();
    let half = lines[1000].len() / 2;
    content.extend_from_slice(&lines[1000][..half]);
    fs::write(&path, &content).unwrap();
    let lake = dir.path().join("lake");
    let r1 = ingest(&lake, std::slice::from_ref(&path));
    assert_eq!((r1.lines_valid, r1.lines_quarantined), (1000, 0));
    assert_eq!(r1.partial_bytes, half as u64);
    // The rest arrives.
    let mut f = fs::OpenOptions::new().append(true).open(&path).unwrap();
    f.write_all(&lines[1000][half..]).unwrap();
    f.write_all(&lines[1001..].concat()).unwrap();
    drop(f);
    let r2 = ingest(&lake, std::slice::from_ref(&path));
    assert_eq!(r2.files_grown, 1);
    assert_eq!(r2.lines_valid, 5010 - 1000);
    assert_eq!(r2.lines_quarantined, 0);
    // Same lake content as one run over the whole file.
    let whole = dir.path().join("whole");
    ingest(&whole, &[shared_sample()]);
    assert_eq!(event_rows(&lake), event_rows(&whole));
    let lake_state = Lake::open(&lake).unwrap().state().unwrap();
    let src = lake_state.sources.values().next().unwrap();
    assert_eq!(
        (src.offset, src.lines),
        (fs::metadata(&path).unwrap().len(), 5010)
    );
}

#[test]
fn renamed_and_compressed_copies_add_nothing() {
    let (dir, logs) = scratch_logs();
    let plain = logs.join("server-a-2026-11-20.jsonl");
    fs::copy(shared_sample(), &plain).unwrap();
    let lake = dir.path().join("lake");
    ingest(&lake, std::slice::from_ref(&logs));
    // Rotation: renamed, then archived in both formats.
    let rotated = logs.join("server-a-2026-11-20.1.jsonl");
    fs::rename(&plain, &rotated).unwrap();
    let bytes = fs::read(&rotated).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&bytes).unwrap();
    fs::write(
        logs.join("server-a-2026-11-20.jsonl.gz"),
        gz.finish().unwrap(),
    )
    .unwrap();
    fs::write(
        logs.join("server-a-2026-11-20.jsonl.zst"),
        zstd::encode_all(&bytes[..], 3).unwrap(),
    )
    .unwrap();
    let r = ingest(&lake, std::slice::from_ref(&logs));
    assert_eq!(r.lines_valid, 0, "{r:?}");
    assert_eq!(r.files_seen, 3);
    assert_eq!(event_rows(&lake).len(), 5010);
}

#[test]
fn a_different_file_with_the_same_first_line_is_not_mistaken() {
    let dir = tempfile::tempdir().unwrap();
    let lines = sample_lines();
    let a = dir.path().join("a.jsonl");
    let b = dir.path().join("b.jsonl");
    fs::write(&a, [lines[0].clone(), lines[1].clone()].concat()).unwrap();
    fs::write(&b, [lines[0].clone(), lines[2].clone()].concat()).unwrap();
    let lake = dir.path().join("lake");
    ingest(&lake, std::slice::from_ref(&a));
    let r = ingest(&lake, std::slice::from_ref(&b));
    assert_eq!(r.files_new, 1);
    assert_eq!(r.lines_valid, 2);
}

/// Asserts that `lake` holds the events one file of `content` ingested alone gives.
fn assert_same_as_one_file(lake: &Path, dir: &Path, content: &[u8]) {
    let alone = dir.join("alone.jsonl");
    fs::write(&alone, content).unwrap();
    let whole = dir.join("whole");
    ingest(&whole, std::slice::from_ref(&alone));
    assert_eq!(event_rows(lake), event_rows(&whole));
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(bytes).unwrap();
    gz.finish().unwrap()
}

#[test]
fn copies_of_a_file_in_one_run_are_read_once() {
    let (dir, logs) = scratch_logs();
    let lines = sample_lines();
    // A file, a copy of it, and an archive of it, all in one run.
    fs::write(logs.join("a.jsonl"), lines[..1500].concat()).unwrap();
    fs::write(logs.join("b.jsonl"), lines[..1500].concat()).unwrap();
    fs::write(logs.join("c.jsonl.gz"), gzip(&lines[..1500].concat())).unwrap();
    // Two different files that share their first line, in the same run: two sources.
    fs::write(
        logs.join("d.jsonl"),
        [lines[2000].clone(), lines[2001].clone()].concat(),
    )
    .unwrap();
    fs::write(
        logs.join("e.jsonl"),
        [lines[2000].clone(), lines[2002].clone()].concat(),
    )
    .unwrap();
    let lake = dir.path().join("lake");
    let r = ingest(&lake, std::slice::from_ref(&logs));
    assert_eq!(r.lines_valid, 1500 + 4, "{r:?}");
    let alone = [
        lines[..1500].concat(),
        lines[2000..2003].concat(),
        lines[2000].clone(),
    ]
    .concat();
    assert_same_as_one_file(&lake, dir.path(), &alone);
    let state = Lake::open(&lake).unwrap().state().unwrap();
    assert_eq!(state.sources.len(), 3, "{:?}", state.sources.keys());
    // Again: nothing new.
    let again = ingest(&lake, std::slice::from_ref(&logs));
    assert_eq!((again.lines_read, again.version), (0, None), "{again:?}");
}

#[test]
fn a_shorter_copy_read_after_the_longer_file_adds_nothing() {
    let (dir, logs) = scratch_logs();
    let lines = sample_lines();
    // In one run: the file, then (by name) an archive of an earlier state of it and a plain
    // snapshot cut in the middle of a line.
    fs::write(logs.join("srv.jsonl"), lines[..300].concat()).unwrap();
    fs::write(logs.join("srv.jsonl.gz"), gzip(&lines[..120].concat())).unwrap();
    let cut = [lines[..200].concat(), lines[200][..40].to_vec()].concat();
    fs::write(logs.join("srv.snapshot.jsonl"), &cut).unwrap();
    let lake = dir.path().join("lake");
    let r = ingest(&lake, std::slice::from_ref(&logs));
    assert_eq!((r.lines_valid, r.files_unchanged), (300, 2), "{r:?}");
    // The file grows; then, in a later run, a copy of the state the first run read turns up.
    fs::write(logs.join("srv.jsonl"), lines[..400].concat()).unwrap();
    let r = ingest(&lake, std::slice::from_ref(&logs));
    assert_eq!((r.lines_valid, r.files_grown), (100, 1), "{r:?}");
    fs::write(logs.join("srv.then.jsonl"), lines[..300].concat()).unwrap();
    let r = ingest(&lake, std::slice::from_ref(&logs));
    assert_eq!((r.lines_read, r.files_unchanged), (0, 4), "{r:?}");
    assert_same_as_one_file(&lake, dir.path(), &lines[..400].concat());
    // A shorter file that differs from the longer one is a file of its own.
    let mut other = lines[..50].concat();
    other.extend_from_slice(&lines[1000]);
    fs::write(logs.join("srv.other.jsonl"), other).unwrap();
    let r = ingest(&lake, std::slice::from_ref(&logs));
    assert_eq!((r.files_new, r.lines_valid), (1, 51), "{r:?}");
}

#[test]
fn symbolic_links_are_followed_once_and_a_dangling_one_is_reported() {
    let (dir, logs) = scratch_logs();
    let lines = sample_lines();
    let elsewhere = dir.path().join("elsewhere");
    fs::create_dir_all(elsewhere.join("srv-09")).unwrap();
    fs::write(elsewhere.join("a.jsonl"), lines[..100].concat()).unwrap();
    fs::write(elsewhere.join("srv-09/b.jsonl"), lines[100..150].concat()).unwrap();
    let link = |to: &Path, at: &str| std::os::unix::fs::symlink(to, logs.join(at)).unwrap();
    // A link to a file, to a directory, a second link to that file (a copy, read once), a link
    // back up the tree (no loop) and a link to nothing.
    link(&elsewhere.join("a.jsonl"), "a.jsonl");
    link(&elsewhere.join("srv-09"), "srv-09");
    link(&elsewhere.join("a.jsonl"), "current.jsonl");
    link(&logs, "up");
    link(&dir.path().join("gone.jsonl"), "gone.jsonl");
    let lake = dir.path().join("lake");
    let r = ingest(&lake, std::slice::from_ref(&logs));
    assert_eq!((r.lines_valid, r.files_unreadable), (150, 1), "{r:?}");
    assert_same_as_one_file(&lake, dir.path(), &lines[..150].concat());
}

#[test]
fn a_sealed_archive_continued_by_a_longer_file_is_read_to_the_end() {
    let (dir, logs) = scratch_logs();
    let lines = sample_lines();
    let snap = logs.join("snap.jsonl.gz");
    fs::write(&snap, gzip(&lines[..100].concat())).unwrap();
    let lake = dir.path().join("lake");
    assert_eq!(ingest(&lake, std::slice::from_ref(&logs)).lines_valid, 100);
    // The archive is made again with more lines.
    fs::write(&snap, gzip(&lines[..150].concat())).unwrap();
    let r = ingest(&lake, std::slice::from_ref(&logs));
    assert_eq!((r.files_grown, r.lines_valid), (1, 50), "{r:?}");
    // A plain file holding the same lines and more.
    fs::write(logs.join("day.jsonl"), lines[..200].concat()).unwrap();
    let r = ingest(&lake, std::slice::from_ref(&logs));
    assert_eq!((r.files_grown, r.lines_valid), (1, 50), "{r:?}");
    let unchanged = ingest(&lake, std::slice::from_ref(&logs));
    assert_eq!(unchanged.lines_read, 0, "{unchanged:?}");
    assert_same_as_one_file(&lake, dir.path(), &lines[..200].concat());
}

/// A gzip member of `bytes` stored without compression (level 0), so that a byte of content can be
/// changed in the archive without a deflate error: only the member's CRC tells.
fn stored_gzip_with_a_changed_digit(bytes: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::none());
    gz.write_all(bytes).unwrap();
    let mut out = gz.finish().unwrap();
    let at = out
        .windows(12)
        .position(|w| w == b"\"think_ms\":2")
        .expect("a think time in the content");
    out[at + 11] = b'9';
    out
}

#[test]
fn no_line_of_a_gzip_member_that_fails_its_check_is_taken() {
    let (dir, logs) = scratch_logs();
    let lines = sample_lines();
    // One member, its content changed under its CRC: nothing taken, the file quarantined.
    let one = logs.join("one.jsonl.gz");
    fs::write(
        &one,
        stored_gzip_with_a_changed_digit(&lines[..300].concat()),
    )
    .unwrap();
    let lake = dir.path().join("lake");
    let r = ingest(&lake, std::slice::from_ref(&one));
    assert_eq!((r.lines_valid, r.files_corrupt), (0, 1), "{r:?}");
    assert!(event_rows(&lake).is_empty());
    let q = read_table(&lake, "quarantine");
    let reasons: Vec<Option<String>> = q.iter().flat_map(|b| strings(b, "reason")).collect();
    assert_eq!(reasons, vec![Some("corrupt_archive".to_string())]);
    // Seen again: counted and quarantined once.
    let again = ingest(&lake, std::slice::from_ref(&one));
    assert_eq!((again.files_corrupt, again.version), (0, None), "{again:?}");
    // Two members, the second failing: the first one's lines are taken, nothing after.
    let two = logs.join("two.jsonl.gz");
    let mut bytes = gzip(&lines[1000..1100].concat());
    bytes.extend(stored_gzip_with_a_changed_digit(
        &lines[1100..1300].concat(),
    ));
    fs::write(&two, bytes).unwrap();
    let r = ingest(&lake, std::slice::from_ref(&two));
    assert_eq!((r.lines_valid, r.files_corrupt), (100, 1), "{r:?}");
    // The sound archive delivered again under the same name: the rest of it is read, once.
    let mut sound = gzip(&lines[1000..1100].concat());
    sound.extend(gzip(&lines[1100..1300].concat()));
    fs::write(&two, sound).unwrap();
    let r = ingest(&lake, std::slice::from_ref(&two));
    assert_eq!((r.lines_valid, r.files_grown), (200, 1), "{r:?}");
    assert_same_as_one_file(&lake, dir.path(), &lines[1000..1300].concat());
}

#[test]
fn a_truncated_archive_with_lines_is_quarantined_once() {
    let (dir, logs) = scratch_logs();
    let lines = sample_lines();
    let whole = gzip(&lines[..2000].concat());
    let cut = logs.join("cut.jsonl.gz");
    fs::write(&cut, &whole[..whole.len() * 2 / 3]).unwrap();
    // Unchanged for an hour: truncated for good.
    settle(&cut);
    let lake = dir.path().join("lake");
    let first = ingest(&lake, std::slice::from_ref(&logs));
    assert!(first.lines_valid > 100, "{first:?}");
    assert_eq!(first.files_corrupt, 1, "{first:?}");
    let again = ingest(&lake, std::slice::from_ref(&logs));
    assert_eq!(
        (again.files_corrupt, again.files_unchanged, again.version),
        (0, 1, None),
        "{again:?}"
    );
}

#[test]
fn a_zstd_archive_opening_with_a_skippable_frame_is_read_and_an_empty_archive_settles_as_corrupt() {
    let (dir, logs) = scratch_logs();
    let lines = sample_lines();
    // A skippable frame (magic 0x184D2A5?, little endian, then its length and content), as
    // pzstd writes first, then the content.
    let mut zst = vec![0x53, 0x2a, 0x4d, 0x18, 4, 0, 0, 0, 1, 2, 3, 4];
    zst.extend(zstd::encode_all(&lines[..300].concat()[..], 3).unwrap());
    fs::write(logs.join("a.jsonl.zst"), zst).unwrap();
    let empty = logs.join("b.jsonl.gz");
    fs::write(&empty, b"").unwrap();
    let lake = dir.path().join("lake");
    let r = ingest(&lake, std::slice::from_ref(&logs));
    assert_eq!(
        (r.lines_valid, r.files_corrupt, r.files_waiting),
        (300, 0, 1),
        "{r:?}"
    );
    // Empty for an hour: no compressor is writing it.
    settle(&empty);
    let r = ingest(&lake, std::slice::from_ref(&logs));
    assert_eq!((r.files_corrupt, r.files_waiting), (1, 0), "{r:?}");
    let again = ingest(&lake, std::slice::from_ref(&logs));
    assert_eq!((again.files_corrupt, again.version), (0, None), "{again:?}");
    assert_same_as_one_file(&lake, dir.path(), &lines[..300].concat());
}

/// Dates a file's last change an hour back: a file nobody writes any more.
fn settle(path: &Path) {
    fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(std::time::SystemTime::now() - Duration::from_secs(3600))
        .unwrap();
}

/// A copy of an archive already read, cut short before where that one was read to (a rotated
/// file whose compression stopped): waited for while it may still be written; settled, it is
/// kept whole in quarantine once, not "unreadable" at every run.
#[test]
fn a_cut_copy_of_an_archive_already_read_is_quarantined_once_settled() {
    let (dir, logs) = scratch_logs();
    let lines = sample_lines();
    let whole = gzip(&lines[..2000].concat());
    fs::write(logs.join("a.jsonl.gz"), &whole).unwrap();
    let lake = dir.path().join("lake");
    let first = ingest(&lake, std::slice::from_ref(&logs));
    assert_eq!(first.lines_valid, 2000, "{first:?}");
    let cut = logs.join("a-rotated.jsonl.gz");
    fs::write(&cut, &whole[..whole.len() / 2]).unwrap();
    let fresh = ingest(&lake, std::slice::from_ref(&logs));
    assert_eq!(
        (fresh.files_unreadable, fresh.files_corrupt, fresh.version),
        (1, 0, None),
        "a copy still being written is waited for: {fresh:?}"
    );
    settle(&cut);
    let settled = ingest(&lake, std::slice::from_ref(&logs));
    assert_eq!(
        (
            settled.files_unreadable,
            settled.files_corrupt,
            settled.lines_valid
        ),
        (0, 1, 0),
        "{settled:?}"
    );
    assert!(settled.version.is_some());
    let reasons: Vec<String> = quarantine_rows(&lake).into_iter().map(|r| r.2).collect();
    assert_eq!(reasons, ["corrupt_archive"]);
    let again = ingest(&lake, std::slice::from_ref(&logs));
    assert_eq!(
        (again.files_unreadable, again.files_corrupt, again.version),
        (0, 0, None),
        "{again:?}"
    );
    assert_eq!(event_rows(&lake).len(), 2000, "nothing read twice");
}

/// A few MB of distinct, valid input: the sample with its game ids renamed per copy.
fn big_input(dir: &Path, copies: usize) -> PathBuf {
    let logs = dir.join("logs");
    fs::create_dir_all(&logs).unwrap();
    let text = fs::read_to_string(shared_sample()).unwrap();
    for k in 0..copies {
        let renamed = text.replace("\"game\":\"", &format!("\"game\":\"c{k}-"));
        let mut content = renamed.into_bytes();
        // Malformed lines are part of the contract too.
        content.extend_from_slice(b"garbage line\n");
        fs::write(logs.join(format!("server-{k:02}.jsonl")), content).unwrap();
    }
    logs
}

fn assert_same_lake(a: &Path, b: &Path) {
    assert_eq!(event_rows(a), event_rows(b), "events differ");
    assert_eq!(quarantine_rows(a), quarantine_rows(b), "quarantine differs");
    assert_eq!(checkpoints(a), checkpoints(b), "checkpoints differ");
    // No leftovers: every data file is a committed, final one.
    let snap = Lake::open(a).unwrap().snapshot().unwrap();
    let mut committed: Vec<PathBuf> = ["events", "quarantine"]
        .iter()
        .flat_map(|t| snap.table_paths(t))
        .collect();
    committed.sort();
    assert_eq!(
        data_files(a),
        committed,
        "files on disk differ from the committed ones"
    );
    // Every table's Delta log describes exactly the committed files, and none is behind.
    for c in vigie::catalog::open(a).unwrap().check_delta().unwrap() {
        assert!(c.problems.is_empty() && c.behind == 0, "{c:?}");
    }
}

#[test]
fn killed_at_each_commit_step_then_rerun_matches_an_uninterrupted_run() {
    let dir = tempfile::tempdir().unwrap();
    let logs = big_input(dir.path(), 3);
    let reference = dir.path().join("reference");
    let out = vigie(&[
        "ingest",
        "--quiet",
        "--lake",
        reference.to_str().unwrap(),
        logs.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    for point in [
        "before_commit",
        "after_commit",
        "delta_partial",
        "after_delta",
    ] {
        let lake = dir.path().join(point);
        let status = Command::new(crate::common::vigie_bin())
            .args([
                "ingest",
                "--quiet",
                "--lake",
                lake.to_str().unwrap(),
                logs.to_str().unwrap(),
            ])
            .env("VIGIE_FAILPOINT", point)
            .env("VIGIE_LOG", "off")
            .status()
            .unwrap();
        assert!(!status.success(), "{point}: the failpoint did not fire");
        let out = vigie(&[
            "ingest",
            "--quiet",
            "--lake",
            lake.to_str().unwrap(),
            logs.to_str().unwrap(),
        ]);
        assert!(
            out.status.success(),
            "{point}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_same_lake(&lake, &reference);
        assert_commit_files_dated(&lake);
    }
}

/// Every Delta version file of the lake is dated (modification time) by the commit it describes,
/// also when it was rolled forward after a crash: what Delta readers without in-commit timestamps
/// use for time travel by timestamp.
fn assert_commit_files_dated(lake: &Path) {
    let mut checked = 0;
    for table in fs::read_dir(lake).unwrap().flatten() {
        let log = table.path().join("_delta_log");
        let Ok(files) = fs::read_dir(&log) else {
            continue;
        };
        for f in files.flatten() {
            let name = f.file_name().to_string_lossy().into_owned();
            if name.len() != 25 || !name.ends_with(".json") {
                continue;
            }
            let text = fs::read_to_string(f.path()).unwrap();
            let Some(ms) = text.lines().find_map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).ok()?;
                v.get("commitInfo")?.get("timestamp")?.as_u64()
            }) else {
                continue;
            };
            if ms == 0 {
                continue;
            }
            let modified = f.metadata().unwrap().modified().unwrap();
            let at = modified
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_millis() as u64;
            assert_eq!(at, ms, "{}", f.path().display());
            checked += 1;
        }
    }
    assert!(checked > 0, "no Delta version dated");
}

#[test]
fn sigkill_at_random_moments_then_rerun_matches_an_uninterrupted_run() {
    let dir = tempfile::tempdir().unwrap();
    let logs = big_input(dir.path(), 12);
    let reference = dir.path().join("reference");
    let started = std::time::Instant::now();
    let out = vigie(&[
        "ingest",
        "--quiet",
        "--lake",
        reference.to_str().unwrap(),
        logs.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    let full = started.elapsed().as_millis() as u64;
    let lake = dir.path().join("killed");
    // Deterministic pseudo-random kill times across the run.
    let mut x: u64 = 0x9e3779b97f4a7c15;
    let mut kills = 0;
    for _ in 0..8 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        // Somewhere in the first 60 % of an uninterrupted run: before its one commit.
        let at = full / 20 + x % (full * 11 / 20).max(1);
        let mut child = Command::new(crate::common::vigie_bin())
            .args([
                "ingest",
                "--quiet",
                "--lake",
                lake.to_str().unwrap(),
                logs.to_str().unwrap(),
            ])
            .env("VIGIE_LOG", "off")
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(at));
        if child.try_wait().unwrap().is_none() {
            kills += 1;
        }
        let _ = child.kill();
        let _ = child.wait();
    }
    assert!(kills > 0, "no run was killed mid-way");
    let out = vigie(&[
        "ingest",
        "--quiet",
        "--lake",
        lake.to_str().unwrap(),
        logs.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_same_lake(&lake, &reference);
}

#[test]
fn other_engines_read_the_lake_as_hive_partitioned_parquet() {
    ensure_python(&["duckdb", "pyarrow"]);
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake");
    ingest(&lake, &[shared_sample()]);
    let script = format!(
        r#"
import duckdb, pyarrow.dataset as ds
root = {root:?}
t = ds.dataset(root + "/events", format="parquet", partitioning="hive").to_table()
assert t.num_rows == 5010, t.num_rows
assert "date" in t.column_names
n = duckdb.sql(f"select count(*), count(distinct game), min(date) from read_parquet('{{root}}/events/*/*.parquet', hive_partitioning=true)").fetchall()[0]
assert n[0] == 5010 and n[1] == 40, n
print("ok", n)
"#,
        root = lake.to_str().unwrap()
    );
    let out = Command::new("python3")
        .arg("-c")
        .arg(script)
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A server on Windows may write its files "UTF-8 with BOM" and end lines with CRLF: every line is
/// taken (RFC 8259 lets a parser ignore the mark), and the games replay clean (the chain hashes
/// the lines without either).
#[test]
fn a_file_with_a_byte_order_mark_and_crlf_is_taken_whole() {
    let (dir, logs) = scratch_logs();
    let lines = sample_lines();
    let mut bytes = "\u{feff}".as_bytes().to_vec();
    for l in &lines {
        bytes.extend_from_slice(l.strip_suffix(b"\n").unwrap_or(l));
        bytes.extend_from_slice(b"\r\n");
    }
    fs::write(logs.join("windows.jsonl"), &bytes).unwrap();
    let lake = dir.path().join("lake");
    let report = ingest(&lake, &[logs]);
    assert_eq!(
        (report.lines_valid, report.lines_quarantined),
        (lines.len() as u64, 0)
    );
    let replay = quiet_replay(&lake);
    assert_eq!(replay.findings, 0, "{replay:?}");
}
