//! Criterion benchmarks of the draughts engine: perft and single-position
//! move generation on quiet, capture-heavy and king-heavy positions.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use vigie_rules::games::draughts::{Position, Variant, perft};

const INTL_START: &str = "W:W31-50:B1-20";
const WOLDOUBY: &str = "W:B12,13,14,16,18,19,21,23,24,26:W25,27,28,30,32,33,34,35,37,38";
const ALL_KINGS: &str = "W:WK31-50:BK1-20";
/// Men only: 10 four-piece captures (12 paths, some merging under FMJD).
const CAPTURE_HEAVY: &str =
    "W:W6,7,20,28,29,35,37,39,40,48:B1,2,5,10-12,15,17,21-24,30,32,33,42-44";
/// Kings and men: 15 seven-piece captures by flying kings.
const KING_CAPTURES: &str = "W:WK9,10,K12,K16,20,28,K31,36,K41,K45,K46,48:B5,6,11,15,K19,21,23,25,K27,K30,K33,K34,39,K42,43,44";
/// Kings with long quiet moves, no capture.
const KING_QUIET: &str = "W:WK1,K5,K23,K28,K46,K50:BK3,K12,K19,K33,K40,K44";

fn pos(fen: &str) -> Position {
    match Position::from_fen(Variant::International, fen) {
        Ok(p) => p,
        Err(e) => panic!("bad bench FEN {fen}: {e}"),
    }
}

fn bench_perft(c: &mut Criterion) {
    let mut g = c.benchmark_group("perft");
    g.sample_size(10);
    let start = pos(INTL_START);
    g.bench_function("international start d6", |b| {
        b.iter(|| perft(black_box(&start), 6))
    });
    let w = pos(WOLDOUBY);
    g.bench_function("woldouby d8", |b| b.iter(|| perft(black_box(&w), 8)));
    let k = pos(ALL_KINGS);
    g.bench_function("all kings d5", |b| b.iter(|| perft(black_box(&k), 5)));
    let c = pos(CAPTURE_HEAVY);
    g.bench_function("capture-heavy men d10", |b| {
        b.iter(|| perft(black_box(&c), 10))
    });
    let kc = pos(KING_CAPTURES);
    g.bench_function("king-heavy captures d8", |b| {
        b.iter(|| perft(black_box(&kc), 8))
    });
    let braz = Position::new(Variant::Brazilian);
    g.bench_function("brazilian start d7", |b| {
        b.iter(|| perft(black_box(&braz), 7))
    });
    g.finish();
}

fn bench_movegen(c: &mut Criterion) {
    let mut g = c.benchmark_group("legal_moves");
    for (name, fen) in [
        ("quiet start", INTL_START),
        ("capture-heavy men", CAPTURE_HEAVY),
        ("king-heavy captures", KING_CAPTURES),
        ("king-heavy quiet", KING_QUIET),
    ] {
        let p = pos(fen);
        g.bench_function(format!("{name} legal_moves"), |b| {
            b.iter(|| black_box(&p).legal_moves())
        });
        g.bench_function(format!("{name} count (perft 1)"), |b| {
            b.iter(|| perft(black_box(&p), 1))
        });
    }
    g.finish();
}

criterion_group!(benches, bench_perft, bench_movegen);
criterion_main!(benches);
