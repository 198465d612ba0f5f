//! Static evaluation of a draughts position, in hundredths of a man: material, kings, advancement
//! and tempo, centre and back-rank control, runaway men, locked men and mobility, and the known
//! drawn endings of kings against a lone king.

use super::super::geometry::{Bits, Braz, Geo, Intl, bit_of, fill, shift};
use super::super::types::pdn_row_col;

/// A man.
pub const MAN: i32 = 100;
/// A king (flying kings on both boards).
pub const KING: i32 = 300;

/// Per-board tables, indexed by bit of the ghost-square layout.
pub(crate) struct Tables {
    /// Rows a white man on this bit has advanced from White's back row (0-9 or 0-7).
    white_adv: [u8; 64],
    /// Rows a black man on this bit has advanced from Black's back row.
    black_adv: [u8; 64],
    /// Squares a white man on this bit could reach by moving forward, up to its promotion row.
    white_cone: [u64; 64],
    /// The same for a black man.
    black_cone: [u64; 64],
    /// The central squares (middle rows, middle columns).
    centre: u64,
    rows: u8,
}

const fn build(n: u32) -> Tables {
    let rows = 2 * n;
    let mut t = Tables {
        white_adv: [0; 64],
        black_adv: [0; 64],
        white_cone: [0; 64],
        black_cone: [0; 64],
        centre: 0,
        rows: rows as u8,
    };
    let mut sq = 1;
    while sq <= 2 * n * n {
        let (row, col) = pdn_row_col(n, sq);
        let b = bit_of(n, sq) as usize;
        t.white_adv[b] = (rows - 1 - row) as u8;
        t.black_adv[b] = row as u8;
        if row + 2 >= n && row <= n + 1 && col + 3 >= n && col <= n + 2 {
            t.centre |= 1u64 << b;
        }
        // Cones: every square of a later row within the diagonals' spread.
        let mut other = 1;
        while other <= 2 * n * n {
            let (orow, ocol) = pdn_row_col(n, other);
            let dc = ocol.abs_diff(col);
            let ob = 1u64 << bit_of(n, other);
            if orow < row && dc <= row - orow {
                t.white_cone[b] |= ob;
            }
            if orow > row && dc <= orow - row {
                t.black_cone[b] |= ob;
            }
            other += 1;
        }
        sq += 1;
    }
    t
}

static INTL: Tables = build(5);
static BRAZ: Tables = build(4);

#[inline(always)]
pub(crate) fn tables<G: Geo>() -> &'static Tables {
    if G::N == 5 { &INTL } else { &BRAZ }
}

/// Quiet moves available to `men` (moving in directions `fwd`) and `kings`, by population counts.
#[inline(always)]
fn mobility<G: Geo>(men: u64, kings: u64, empty: u64, fwd: [usize; 2]) -> i32 {
    let mut n = (shift::<G>(men, fwd[0]) & empty).count_ones()
        + (shift::<G>(men, fwd[1]) & empty).count_ones();
    if kings != 0 {
        for d in 0..4 {
            n += (fill::<G>(kings, empty, d) & !kings).count_ones();
        }
    }
    n as i32
}

/// Men of one side both of whose forward squares hold enemy men: they cannot move until freed.
#[inline(always)]
fn locked<G: Geo>(men: u64, enemy_men: u64, fwd: [usize; 2]) -> i32 {
    // A man is locked when both forward neighbours are enemy men (or off the board on one side and
    // an enemy man on the other).
    let open0 = shift::<G>(men, fwd[0]) & !enemy_men & G::MASK;
    let open1 = shift::<G>(men, fwd[1]) & !enemy_men & G::MASK;
    let free = shift::<G>(open0, 3 - fwd[0]) | shift::<G>(open1, 3 - fwd[1]);
    // Men on an edge with one enemy in front count as locked too: they have a single neighbour.
    let touching = shift::<G>(shift::<G>(men, fwd[0]) & enemy_men, 3 - fwd[0])
        | shift::<G>(shift::<G>(men, fwd[1]) & enemy_men, 3 - fwd[1]);
    (men & !free & touching).count_ones() as i32
}

/// The score for White of a position given by absolute bitboards (positive: White is better).
#[inline]
pub(crate) fn white_score<G: Geo>(white: u64, black: u64, kings: u64) -> i32 {
    let t = tables::<G>();
    let wm = white & !kings;
    let wk = white & kings;
    let bm = black & !kings;
    let bk = black & kings;
    let (nwm, nwk, nbm, nbk) = (
        wm.count_ones() as i32,
        wk.count_ones() as i32,
        bm.count_ones() as i32,
        bk.count_ones() as i32,
    );
    let material = MAN * (nwm - nbm) + KING * (nwk - nbk);
    // Kings only, at most 3 (10x10) or 2 (8x8) against a lone king: a draw with correct play.
    if nwm == 0 && nbm == 0 {
        let small = if G::N == 5 { 3 } else { 2 };
        if nwk.min(nbk) >= 1 && nwk.max(nbk) <= small {
            return material / 16;
        }
    }
    let start = 4 * G::N as i32; // pieces per side at the start
    let total = nwm + nwk + nbm + nbk;
    // 256 in the opening, 0 with an empty board.
    let phase = (total * 256 / (2 * start)).min(256);
    let end = 256 - phase;
    let mut s = material;
    // Trading down when ahead.
    s += material * end / 1024;
    // A first king is worth more than the next ones: it controls the long diagonals alone.
    if nwk > 0 && nbk == 0 {
        s += 50;
    } else if nbk > 0 && nwk == 0 {
        s -= 50;
    }
    // Advancement (tempo): small in the opening, large in the endgame.
    let mut adv_w = 0i32;
    for b in Bits(wm) {
        adv_w += i32::from(t.white_adv[b as usize]);
    }
    let mut adv_b = 0i32;
    for b in Bits(bm) {
        adv_b += i32::from(t.black_adv[b as usize]);
    }
    s += (adv_w - adv_b) * (256 + 5 * end) / 256;
    // Centre control by men, worth most in the middlegame.
    s += 6 * ((wm & t.centre).count_ones() as i32 - (bm & t.centre).count_ones() as i32) * phase
        / 256;
    // Back-rank men stop the other side's men from crowning.
    if nbk == 0 {
        s += 8 * (wm & G::BOTTOM_ROW).count_ones() as i32 * phase / 256;
    }
    if nwk == 0 {
        s -= 8 * (bm & G::TOP_ROW).count_ones() as i32 * phase / 256;
    }
    // Runaway men: nothing of the other side in front of them, no enemy king to chase them.
    let rows = i32::from(t.rows);
    if nbk == 0 {
        for b in Bits(wm) {
            let dist = rows - 1 - i32::from(t.white_adv[b as usize]);
            if dist <= 4 && t.white_cone[b as usize] & black == 0 {
                s += 30 * (5 - dist);
            }
        }
    }
    if nwk == 0 {
        for b in Bits(bm) {
            let dist = rows - 1 - i32::from(t.black_adv[b as usize]);
            if dist <= 4 && t.black_cone[b as usize] & white == 0 {
                s -= 30 * (5 - dist);
            }
        }
    }
    // Mobility and locked men.
    let empty = G::MASK & !(white | black);
    s += 3 * (mobility::<G>(wm, wk, empty, [0, 1]) - mobility::<G>(bm, bk, empty, [2, 3]));
    s -= 5 * (locked::<G>(wm, bm, [0, 1]) - locked::<G>(bm, wm, [2, 3]));
    s
}

/// Evaluation from the point of view of the side to move.
#[inline(always)]
pub(crate) fn relative<G: Geo>(white: u64, black: u64, kings: u64, white_to_move: bool) -> i32 {
    let s = white_score::<G>(white, black, kings);
    if white_to_move { s } else { -s }
}

/// Dispatch on the board size for callers outside the generic search.
pub(crate) fn white_score_of(international: bool, white: u64, black: u64, kings: u64) -> i32 {
    if international {
        white_score::<Intl>(white, black, kings)
    } else {
        white_score::<Braz>(white, black, kings)
    }
}

#[cfg(test)]
mod tests {
    use super::super::super::movegen::tests::bb;
    use super::*;

    #[test]
    fn the_start_positions_are_level() {
        let w = bb::<Intl>(&(31..=50).collect::<Vec<_>>());
        let b = bb::<Intl>(&(1..=20).collect::<Vec<_>>());
        assert_eq!(white_score::<Intl>(w, b, 0), 0);
        let w = bb::<Braz>(&(21..=32).collect::<Vec<_>>());
        let b = bb::<Braz>(&(1..=12).collect::<Vec<_>>());
        assert_eq!(white_score::<Braz>(w, b, 0), 0);
    }

    #[test]
    fn colour_mirror_negates_the_score() {
        // Square s mirrors to squares + 1 - s (a half-turn of the board swaps the sides).
        let white = [28u8, 33, 34, 39, 45, 46];
        let black = [3u8, 12, 17, 19, 23];
        let kings = [46u8, 3];
        let mirror = |v: &[u8]| v.iter().map(|s| 51 - s).collect::<Vec<_>>();
        let s1 = white_score::<Intl>(bb::<Intl>(&white), bb::<Intl>(&black), bb::<Intl>(&kings));
        let s2 = white_score::<Intl>(
            bb::<Intl>(&mirror(&black)),
            bb::<Intl>(&mirror(&white)),
            bb::<Intl>(&mirror(&kings)),
        );
        assert_eq!(s1, -s2);
        assert!(s1 > 0, "a man up with a king each: {s1}");
    }

    #[test]
    fn a_runaway_man_is_worth_more_than_a_blocked_one() {
        // White's man on 11 with an open path (Black's men on 16 and 4, behind or aside), then
        // with Black's man on 6 in front of it.
        let free = white_score::<Intl>(bb::<Intl>(&[11, 46]), bb::<Intl>(&[16, 4]), 0);
        let blocked = white_score::<Intl>(bb::<Intl>(&[11, 46]), bb::<Intl>(&[6, 4]), 0);
        assert!(free > blocked + 50, "free {free}, blocked {blocked}");
    }

    #[test]
    fn few_kings_against_a_lone_king_are_nearly_level() {
        let s = white_score::<Intl>(
            bb::<Intl>(&[1, 2, 3]),
            bb::<Intl>(&[50]),
            bb::<Intl>(&[1, 2, 3, 50]),
        );
        assert!(s.abs() < 50, "{s}");
        let s = white_score::<Intl>(
            bb::<Intl>(&[1, 2, 3, 4]),
            bb::<Intl>(&[50]),
            bb::<Intl>(&[1, 2, 3, 4, 50]),
        );
        assert!(s > 500, "{s}");
    }
}
