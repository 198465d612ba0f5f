//! One test per `Illegal` variant of `classify`, plus the precedence between them.

use vigie_rules::games::draughts::{Illegal, Position, SyntaxError, Variant, classify};

fn intl(fen: &str) -> Position {
    Position::from_fen(Variant::International, fen).expect("fen")
}

#[test]
fn legal_moves_classify_ok() {
    let start = Position::new(Variant::International);
    assert_eq!(
        classify(&start, "32-28").map(|m| m.to_full_string()),
        Ok("32-28".to_string())
    );
    // The log-format example: 32-28 19-23, then 34-30 is rejected and 28x19 accepted.
    let mut pos = start;
    for text in ["32-28", "19-23"] {
        let m = classify(&pos, text).expect("legal");
        let _ = pos.make(&m);
    }
    assert_eq!(
        classify(&pos, "34-30"),
        Err(Illegal::SkippedMandatoryCapture)
    );
    let m = classify(&pos, "28x19").expect("capture");
    assert_eq!(
        m.captures().iter().map(|s| s.number()).collect::<Vec<_>>(),
        vec![23]
    );
}

#[test]
fn unparseable() {
    let start = Position::new(Variant::International);
    for text in [
        "", "32", "32-", "-28", "32--28", "32-28x23", "32x28-23", "51-46", "0-5", "32-28-23",
        "a-b", " 32-28", "32-28 ", "32_28", "032-28",
    ] {
        assert!(
            matches!(classify(&start, text), Err(Illegal::Unparseable(_))),
            "{text:?}"
        );
    }
    assert_eq!(
        classify(&start, "32-28x23"),
        Err(Illegal::Unparseable(SyntaxError::MixedSeparators))
    );
    let braz = Position::new(Variant::Brazilian);
    assert!(matches!(
        classify(&braz, "33-29"),
        Err(Illegal::Unparseable(SyntaxError::OutOfRange {
            number: 33,
            max: 32
        }))
    ));
}

#[test]
fn not_own_piece() {
    let start = Position::new(Variant::International);
    // Empty square.
    assert_eq!(
        classify(&start, "28-23").map_err(|e| e.to_string()),
        Err("square 28 does not hold a piece of the side to move".into())
    );
    // Opponent's piece.
    assert!(
        matches!(classify(&start, "19-23"), Err(Illegal::NotOwnPiece { square }) if square.number() == 19)
    );
    // Capture form from an empty square.
    let pos = intl("W:W28,32:B23");
    assert!(matches!(
        classify(&pos, "27x18"),
        Err(Illegal::NotOwnPiece { .. })
    ));
}

#[test]
fn wrong_direction() {
    let pos = intl("W:W28:B1");
    assert_eq!(classify(&pos, "28-32"), Err(Illegal::WrongDirection));
    assert_eq!(classify(&pos, "28-33"), Err(Illegal::WrongDirection));
    // Even while a capture is available, a backward step is a direction error.
    let pos = intl("W:W28,32:B23");
    assert_eq!(classify(&pos, "32-37"), Err(Illegal::WrongDirection));
    // Black men go the other way.
    let pos = intl("B:W50:B23");
    assert_eq!(classify(&pos, "23-18"), Err(Illegal::WrongDirection));
    assert!(classify(&pos, "23-28").is_ok());
    // Onto an occupied square, or two squares back: not a direction error.
    let pos = intl("W:W28,33:B1");
    assert_eq!(classify(&pos, "28-33"), Err(Illegal::NoSuchPath));
    assert_eq!(classify(&pos, "28-39"), Err(Illegal::NoSuchPath));
}

#[test]
fn skipped_mandatory_capture() {
    let pos = intl("W:W28,32:B23");
    assert_eq!(
        classify(&pos, "32-27"),
        Err(Illegal::SkippedMandatoryCapture)
    );
    assert_eq!(
        classify(&pos, "28-22"),
        Err(Illegal::SkippedMandatoryCapture)
    );
    // A king's quiet move while a capture exists.
    let pos = intl("W:WK46,28:B23");
    assert_eq!(
        classify(&pos, "46-37"),
        Err(Illegal::SkippedMandatoryCapture)
    );
    assert!(classify(&pos, "28x19").is_ok());
}

#[test]
fn not_majority() {
    // 15x4x13 takes two; stopping after the first jump takes one.
    let pos = intl("W:W15,47:B9,10,42");
    assert_eq!(
        classify(&pos, "15x4"),
        Err(Illegal::NotMajority {
            captured: 1,
            required: 2
        })
    );
    // Another piece's smaller capture.
    assert_eq!(
        classify(&pos, "47x38"),
        Err(Illegal::NotMajority {
            captured: 1,
            required: 2
        })
    );
    assert!(classify(&pos, "15x4x13").is_ok());
    assert!(classify(&pos, "15x13").is_ok());
    // Majority by count, not by value: taking the two kings is not enough.
    let pos = intl("W:W48:B24,K31,34,K42,43");
    let legal = classify(&pos, "48x19").expect("the majority capture");
    assert_eq!(legal.to_full_string(), "48x39x30x19");
    assert_eq!(
        classify(&pos, "48x37x26"),
        Err(Illegal::NotMajority {
            captured: 2,
            required: 3
        })
    );
    assert_eq!(
        classify(&pos, "48x39x30"),
        Err(Illegal::NotMajority {
            captured: 2,
            required: 3
        })
    );
}

#[test]
fn no_such_path() {
    let start = Position::new(Variant::International);
    assert_eq!(classify(&start, "31-22"), Err(Illegal::NoSuchPath));
    assert_eq!(classify(&start, "46-41"), Err(Illegal::NoSuchPath));
    assert_eq!(classify(&start, "32x28"), Err(Illegal::NoSuchPath));
    // A capture written with '-'.
    let pos = intl("W:W28,32:B23");
    assert_eq!(classify(&pos, "28-19"), Err(Illegal::NoSuchPath));
    // A capture path through a wrong stop.
    assert_eq!(classify(&pos, "28x19x14"), Err(Illegal::NoSuchPath));
    // A king blocked by its own piece.
    let pos = intl("W:WK46,37:B1");
    assert_eq!(classify(&pos, "46-28"), Err(Illegal::NoSuchPath));
    // A king capture must land beyond the captured piece, on an empty square.
    let pos = intl("W:WK46:B23");
    assert_eq!(classify(&pos, "46x28"), Err(Illegal::NoSuchPath));
}

#[test]
fn ambiguous_short_form() {
    // The king can reach 17 taking {14, 3-side pieces} or {19, 8-side pieces}.
    let pos = intl("W:WK37:B6,9,12,13,28,36");
    assert_eq!(
        classify(&pos, "37x17"),
        Err(Illegal::Ambiguous { count: 2 })
    );
    let a = classify(&pos, "37x14x3x17").expect("first path");
    let b = classify(&pos, "37x19x8x17").expect("second path");
    assert!(!a.same_move(&b));
    assert_eq!(a.path().len(), 4);
    // to_pdn falls back to the full path when the short form is ambiguous.
    assert_eq!(pos.to_pdn(&a), "37x14x3x17");
}

#[test]
fn full_path_keeps_the_written_path() {
    // A man going round a square takes the same four pieces either way and
    // comes back to 43: one move (FMJD), two paths with different capture orders.
    let pos = intl("W:W43:B38,28,39,29");
    assert_eq!(pos.legal_moves().len(), 1);
    let paths = pos.legal_paths();
    assert_eq!(
        paths.iter().map(|m| m.to_full_string()).collect::<Vec<_>>(),
        vec!["43x32x23x34x43", "43x34x23x32x43"]
    );
    for p in &paths {
        let parsed = classify(&pos, &p.to_full_string()).expect("every path parses");
        assert_eq!(&parsed, p, "the path as written is kept");
    }
    let second = classify(&pos, "43x34x23x32x43").expect("legal");
    assert_eq!(
        second
            .captures()
            .iter()
            .map(|s| s.number())
            .collect::<Vec<_>>(),
        vec![39, 29, 28, 38]
    );
    // The short form names the one move, represented by its smallest path.
    let short = classify(&pos, "43x43").expect("short form");
    assert_eq!(short, paths[0]);
    assert!(short.same_move(&second));
    assert_eq!(pos.to_pdn(&second), "43x43");
}
