//! The module map of `docs/architecture.md` is true to the code: every `crate::` path in a room of `src/` names a room of a lower layer.

use std::collections::BTreeMap;
use std::path::Path;

/// The layers the document declares: room -> layer (1 is the bottom).
fn declared() -> BTreeMap<String, u32> {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/architecture.md"))
            .expect("docs/architecture.md");
    let mut out = BTreeMap::new();
    for line in doc.lines() {
        let mut words = line.split_whitespace();
        if words.next() != Some("layer") {
            continue;
        }
        let n: u32 = words
            .next()
            .and_then(|w| w.parse().ok())
            .expect("a layer number");
        for room in words {
            assert!(
                out.insert(room.to_owned(), n).is_none(),
                "{room} is in two layers"
            );
        }
    }
    assert!(out.len() >= 10, "the layer block was not found: {out:?}");
    out
}

/// Every `.rs` file under `dir`.
fn sources(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).expect("read_dir") {
        let p = e.expect("entry").path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn no_room_uses_a_room_above_it_or_beside_it() {
    let layers = declared();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    // Every room of src/ is declared (the binary's `cli` and `main.rs` are above the map).
    for e in std::fs::read_dir(&src).expect("src") {
        let name = e.expect("entry").file_name().to_string_lossy().into_owned();
        let room = name.trim_end_matches(".rs");
        if matches!(room, "lib" | "main" | "cli") {
            continue;
        }
        assert!(
            layers.contains_key(room),
            "src/{name} is not in the layer map of docs/architecture.md"
        );
    }
    let mut violations = Vec::new();
    let mut checked = 0;
    for (room, &layer) in &layers {
        let mut files = Vec::new();
        let dir = src.join(room);
        if dir.is_dir() {
            sources(&dir, &mut files);
        } else {
            files.push(src.join(format!("{room}.rs")));
        }
        for f in files {
            let text = std::fs::read_to_string(&f).expect("source");
            for (i, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                for (at, _) in code.match_indices("crate::") {
                    let target: String = code[at + 7..]
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect();
                    let Some(&t) = layers.get(&target) else {
                        continue;
                    };
                    checked += 1;
                    if target != *room && t >= layer {
                        violations.push(format!(
                            "{}:{}: {room} (layer {layer}) uses {target} (layer {t})",
                            f.strip_prefix(&src).unwrap_or(&f).display(),
                            i + 1
                        ));
                    }
                }
            }
        }
    }
    assert!(checked > 100, "only {checked} paths checked");
    assert!(violations.is_empty(), "{}", violations.join("\n"));
}
