//! The contract fixtures committed in `tests/fixtures/` are byte-for-byte the platform's (`../shared/fixtures/`), whenever that directory is beside the repository.

use std::path::Path;

/// Every copied fixture, relative to `fixtures/`.
const COPIES: [&str; 5] = [
    "draughts-perft.json",
    "draughts-rules.json",
    "fairness-vectors.json",
    "server-logs/sample.jsonl",
    "server-logs/README.md",
];

#[test]
fn committed_fixtures_equal_the_shared_contracts() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for name in COPIES {
        let ours = root.join("tests/fixtures").join(name);
        let bytes = std::fs::read(&ours).unwrap_or_else(|e| panic!("{}: {e}", ours.display()));
        assert!(!bytes.is_empty(), "{name} is empty");
        let readme = std::fs::read_to_string(root.join("tests/fixtures/README.md")).unwrap();
        let digest = {
            use sha2::Digest;
            sha2::Sha256::digest(&bytes)
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        };
        assert!(
            readme.contains(&digest),
            "{name}: its sha256 {digest} is not the one tests/fixtures/README.md records"
        );
    }
    let shared = root.join("../shared/fixtures");
    if !shared.is_dir() {
        println!(
            "the comparison with ../shared was skipped: {} does not exist (a clone has only the copies)",
            shared.display()
        );
        return;
    }
    for name in COPIES {
        let ours = std::fs::read(root.join("tests/fixtures").join(name)).unwrap();
        let theirs = std::fs::read(shared.join(name))
            .unwrap_or_else(|e| panic!("../shared/fixtures/{name}: {e}"));
        assert!(
            ours == theirs,
            "tests/fixtures/{name} differs from ../shared/fixtures/{name}: copy it again"
        );
    }
}
