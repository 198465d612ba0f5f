//! `--malformed N`: N labelled lines that fail `log::parse_line` with the labelled code, nothing else broken.

use std::collections::BTreeSet;

use vigie::log::parse_line;

use crate::sim::common::faulty;

#[test]
fn malformed_lines_are_where_the_labels_say() {
    let run = faulty();
    let labels = run.labels["malformed"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        labels.len() as u64,
        run.labels["options"]["malformed"].as_u64().unwrap_or(0)
    );
    assert_eq!(labels.len(), 40);
    let mut places = BTreeSet::new();
    let mut kinds = BTreeSet::new();
    for m in &labels {
        let file = m["file"].as_str().unwrap_or("");
        let line = m["line"].as_u64().unwrap_or(0);
        places.insert((file.to_string(), line));
        kinds.insert(m["kind"].as_str().unwrap_or("").to_string());
        let Some(l) = run.lines.iter().find(|l| l.file == file && l.line == line) else {
            panic!("no line {file}:{line}")
        };
        let r = parse_line(&l.bytes);
        assert_eq!(
            r.err().map(|e| e.code().to_string()).as_deref(),
            m["reject"].as_str(),
            "{file}:{line}"
        );
        // The byte offset is the start of the line in the decompressed file.
        let offset: u64 = run
            .lines
            .iter()
            .filter(|x| x.file == file && x.line < line)
            .map(|x| x.bytes.len() as u64 + 1)
            .sum();
        assert_eq!(Some(offset), m["offset"].as_u64(), "{file}:{line}");
    }
    assert!(kinds.len() >= 8, "{kinds:?}");
    let files: BTreeSet<&str> = labels.iter().filter_map(|m| m["file"].as_str()).collect();
    assert!(
        files.len() >= 3,
        "malformed lines are not spread: {files:?}"
    );
    for l in &run.lines {
        if !places.contains(&(l.file.clone(), l.line)) {
            assert!(
                parse_line(&l.bytes).is_ok(),
                "{}:{} is broken but not labelled",
                l.file,
                l.line
            );
        }
    }
}
