//! Input files as attacks: corrupt and mislabelled archives, an unreadable directory, and a compliance bundle whose manifest points outside itself.

use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, SystemTime};

use sha2::{Digest, Sha256};

use super::{scratch, stderr};
use crate::common::{read_table, strings, vigie};

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `vigie ingest --json` of a directory into a lake: the report.
fn ingest(lake: &Path, input: &Path) -> serde_json::Value {
    let out = vigie(&[
        "ingest",
        "--quiet",
        "--report-json",
        "--lake",
        lake.to_str().unwrap(),
        input.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.starts_with('{'))
        .expect("json report");
    serde_json::from_str(line).expect("report")
}

#[test]
fn corrupt_archives_are_quarantined_as_files_and_never_wait_forever() {
    let dir = scratch("archives");
    let logs = dir.join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let line = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("data/sample/srv-01/2026-11-21.jsonl"),
    )
    .unwrap();
    let first = line.lines().next().unwrap().to_owned() + "\n";
    let good = gzip(first.repeat(50).as_bytes());
    // Bad method byte (gzip's third byte must be 8, deflate).
    let mut bad_method = good.clone();
    bad_method[2] = 7;
    // A deflate stream broken from its first block.
    let mut bad_deflate = good.clone();
    for b in &mut bad_deflate[10..40] {
        *b = 0xff;
    }
    // zstd magic, then garbage.
    let mut bad_zstd = vec![0x28, 0xb5, 0x2f, 0xfd];
    bad_zstd.extend_from_slice(&[0xee; 64]);
    let files: Vec<(&str, Vec<u8>)> = vec![
        ("bad-method.jsonl.gz", bad_method),
        ("bad-deflate.jsonl.gz", bad_deflate),
        ("bad.jsonl.zst", bad_zstd),
        ("not-gzip.jsonl.gz", first.clone().into_bytes()),
        ("truncated.jsonl.gz", good[..good.len() / 3].to_vec()),
        ("fresh-truncated.jsonl.gz", good[..12].to_vec()),
    ];
    for (name, bytes) in &files {
        std::fs::write(logs.join(name), bytes).unwrap();
    }
    // The truncated archive has not changed for an hour: truncated for good.
    let old = SystemTime::now() - Duration::from_secs(3600);
    std::fs::File::options()
        .write(true)
        .open(logs.join("truncated.jsonl.gz"))
        .unwrap()
        .set_modified(old)
        .unwrap();
    let lake = dir.join("lake");
    let report = ingest(&lake, &logs);
    assert_eq!(report["files_corrupt"], 5, "{report}");
    assert_eq!(
        report["files_waiting"], 1,
        "the fresh truncated archive waits: {report}"
    );
    // Each corrupt file is in quarantine with its path, size and hash.
    let mut quarantined = Vec::new();
    for b in read_table(&lake, "quarantine") {
        let (file, reason, sha) = (
            strings(&b, "src_file"),
            strings(&b, "reason"),
            strings(&b, "raw_sha256"),
        );
        for i in 0..b.num_rows() {
            if reason[i].as_deref() == Some("corrupt_archive") {
                quarantined.push((file[i].clone().unwrap_or_default(), sha[i].clone()));
            }
        }
    }
    for (name, bytes) in &files[..5] {
        let path = logs.join(name).to_string_lossy().into_owned();
        let row = quarantined.iter().find(|(f, _)| *f == path);
        let (_, sha) = row.unwrap_or_else(|| panic!("{name} not quarantined: {quarantined:?}"));
        assert_eq!(
            sha.as_deref(),
            Some(hex(&Sha256::digest(bytes)).as_str()),
            "{name}"
        );
    }
    // Counted once: a second run finds them unchanged and quarantines nothing more.
    let again = ingest(&lake, &logs);
    assert_eq!(again["files_corrupt"], 0, "{again}");
    assert_eq!(again["lines_quarantined"], 0, "{again}");
    let rows: usize = read_table(&lake, "quarantine")
        .iter()
        .map(|b| b.num_rows())
        .sum();
    assert_eq!(rows, quarantined.len());
}

#[test]
fn an_unreadable_directory_is_skipped_and_counted() {
    // Root reads any directory: run the ingest as `nobody` when the tests run as root, in a
    // directory `nobody` can reach.
    let dir = std::env::temp_dir().join(format!("vigie-unreadable-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let logs = dir.join("logs");
    let locked = logs.join("locked");
    std::fs::create_dir_all(&locked).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("data/sample/srv-01/2026-11-21.jsonl"),
        logs.join("a.jsonl"),
    )
    .unwrap();
    std::fs::write(locked.join("b.jsonl"), b"{}\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    for d in [&dir, &logs] {
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    std::fs::set_permissions(logs.join("a.jsonl"), std::fs::Permissions::from_mode(0o644)).unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();
    let root = std::fs::read_dir(&locked).is_ok();
    let lake = dir.join("lake");
    let mut cmd = if root {
        let ok = Command::new("setpriv")
            .arg("--help")
            .output()
            .is_ok_and(|o| o.status.success());
        if !ok {
            println!(
                "skipped an_unreadable_directory_is_skipped_and_counted: running as root without setpriv"
            );
            return;
        }
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(crate::common::vigie_bin());
        c
    } else {
        Command::new(crate::common::vigie_bin())
    };
    let out = cmd
        .args(["ingest", "--quiet", "--report-json", "--lake"])
        .arg(&lake)
        .arg(&logs)
        .env("VIGIE_LOG", "warn")
        .output()
        .expect("run vigie");
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o755)).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    let report: serde_json::Value =
        serde_json::from_str(text.lines().find(|l| l.starts_with('{')).expect("report")).unwrap();
    assert_eq!(report["files_unreadable"], 1, "{report}");
    assert!(report["lines_valid"].as_u64().unwrap_or(0) > 0, "{report}");
    assert!(
        stderr(&out).contains("unreadable directory skipped"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn report_verify_stays_inside_its_bundle_and_reports_every_extra_entry() {
    let dir = scratch("bundle");
    let bundle = dir.join("bundle");
    let lake = crate::common::sample_lake().to_string_lossy().into_owned();
    let out = vigie(&[
        "report",
        "--lake",
        &lake,
        "--from",
        "2026-11-20",
        "--to",
        "2026-11-21",
        "--out",
        bundle.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let verify = |b: &Path| {
        let out = vigie(&["report", "verify", b.to_str().unwrap()]);
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    assert_eq!(verify(&bundle).0, Some(0));
    // A manifest naming files outside the bundle, with their right hashes, is refused.
    let outside = dir.join("secret.txt");
    std::fs::write(&outside, b"not part of the bundle").unwrap();
    let hash = hex(&Sha256::digest(b"not part of the bundle"));
    let manifest_path = bundle.join("MANIFEST.sha256");
    let manifest = std::fs::read_to_string(&manifest_path).unwrap();
    let forged = format!(
        "{manifest}{hash}  ../secret.txt\n{hash}  {}\n",
        outside.display()
    );
    std::fs::write(&manifest_path, &forged).unwrap();
    let digest = hex(&Sha256::digest(forged.as_bytes()));
    std::fs::write(bundle.join("DIGEST"), format!("{digest}\n")).unwrap();
    let (code, text) = verify(&bundle);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("refused: \"../secret.txt\""), "{text}");
    assert!(
        text.contains(&format!("refused: {:?}", outside.display().to_string())),
        "{text}"
    );
    std::fs::write(&manifest_path, &manifest).unwrap();
    std::fs::write(
        bundle.join("DIGEST"),
        format!("{}\n", hex(&Sha256::digest(manifest.as_bytes()))),
    )
    .unwrap();
    assert_eq!(verify(&bundle).0, Some(0));
    // A symbolic link and a FIFO added under evidence/ are reported; the FIFO is never opened.
    let evidence = bundle.join("evidence");
    std::fs::create_dir_all(&evidence).unwrap();
    std::os::unix::fs::symlink(&outside, evidence.join("link.txt")).unwrap();
    let fifo = Command::new("mkfifo").arg(evidence.join("pipe")).status();
    let (code, text) = verify(&bundle);
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.contains("extra: evidence/link.txt (symbolic link)"),
        "{text}"
    );
    if fifo.is_ok_and(|s| s.success()) {
        assert!(
            text.contains("extra: evidence/pipe (special file)"),
            "{text}"
        );
    } else {
        println!("mkfifo unavailable: the FIFO case was not checked");
    }
    // A listed file replaced by a link to its own content is refused, not followed.
    let listed = manifest
        .lines()
        .find_map(|l| l.split_once("  ").map(|(_, f)| f.to_owned()))
        .expect("a listed file");
    let target = dir.join("copy");
    std::fs::copy(bundle.join(&listed), &target).unwrap();
    std::fs::remove_file(bundle.join(&listed)).unwrap();
    std::os::unix::fs::symlink(&target, bundle.join(&listed)).unwrap();
    let (_, text) = verify(&bundle);
    assert!(
        text.contains(&format!("refused: {listed}: not a regular file")),
        "{text}"
    );
}
