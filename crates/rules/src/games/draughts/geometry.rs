//! Board geometry: the ghost-square bitboard layout of both boards, PDN square
//! numbering, diagonal shifts and precomputed king rays.
//!
//! Layout. A board has `N` dark squares per row (5 on 10x10, 4 on 8x8). PDN
//! square `n` (1-based, `s = n - 1`) lives on bit `s + s / (2N)`: every pair of
//! rows takes `2N` bits followed by one unused "ghost" bit. With this padding the
//! four diagonal steps are plain shifts by `N` and `N + 1` bits, and a step off
//! the left or right edge lands on a ghost bit (or outside the board), which is
//! never part of the board mask. Square 1 is bit 0 (Black's side, top row as
//! White sees the board); White's men move towards lower bits.
//!
//! Direction indices: 0 = up-left (`-(N+1)`), 1 = up-right (`-N`),
//! 2 = down-left (`+N`), 3 = down-right (`+(N+1)`), "up" being towards square 1.
//! The reverse of direction `d` is `3 - d`.

/// Static description of one board, implemented by [`Intl`] and [`Braz`].
pub(crate) trait Geo: Copy + 'static {
    /// Dark squares per row.
    const N: u32;
    /// Bits of the playable squares.
    const MASK: u64;
    /// The row of squares `1..=N`: White's promotion row.
    const TOP_ROW: u64;
    /// The last row: Black's promotion row.
    const BOTTOM_ROW: u64;
    /// `RAYS[d][bit]`: the squares strictly beyond `bit` in direction `d`, up to the edge.
    const RAYS: &'static [[u64; 64]; 4];
}

/// International draughts, 10x10, squares 1-50.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Intl;
/// Brazilian draughts, 8x8, squares 1-32.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Braz;

/// The bit of PDN square `square` on a board of `n` dark squares per row.
pub(crate) const fn bit_of(n: u32, square: u32) -> u32 {
    let s = square - 1;
    s + s / (2 * n)
}

const fn mask_of(n: u32) -> u64 {
    let squares = 2 * n * n;
    let mut m = 0u64;
    let mut sq = 1;
    while sq <= squares {
        m |= 1u64 << bit_of(n, sq);
        sq += 1;
    }
    m
}

const fn row_mask(n: u32, row: u32) -> u64 {
    let mut m = 0u64;
    let mut p = 0;
    while p < n {
        m |= 1u64 << bit_of(n, row * n + p + 1);
        p += 1;
    }
    m
}

const fn step_of(n: u32, dir: usize) -> i32 {
    match dir {
        0 => -(n as i32 + 1),
        1 => -(n as i32),
        2 => n as i32,
        _ => n as i32 + 1,
    }
}

const fn on_board(n: u32, bit: i32) -> bool {
    bit >= 0 && bit < 64 && (mask_of(n) >> bit) & 1 == 1
}

const fn rays_of(n: u32) -> [[u64; 64]; 4] {
    let mut rays = [[0u64; 64]; 4];
    let mut d = 0;
    while d < 4 {
        let mut b = 0i32;
        while b < 64 {
            if on_board(n, b) {
                let mut r = 0u64;
                let mut t = b + step_of(n, d);
                while on_board(n, t) {
                    r |= 1u64 << t;
                    t += step_of(n, d);
                }
                rays[d][b as usize] = r;
            }
            b += 1;
        }
        d += 1;
    }
    rays
}

static INTL_RAYS: [[u64; 64]; 4] = rays_of(5);
static BRAZ_RAYS: [[u64; 64]; 4] = rays_of(4);

impl Geo for Intl {
    const N: u32 = 5;
    const MASK: u64 = mask_of(5);
    const TOP_ROW: u64 = row_mask(5, 0);
    const BOTTOM_ROW: u64 = row_mask(5, 9);
    const RAYS: &'static [[u64; 64]; 4] = &INTL_RAYS;
}

impl Geo for Braz {
    const N: u32 = 4;
    const MASK: u64 = mask_of(4);
    const TOP_ROW: u64 = row_mask(4, 0);
    const BOTTOM_ROW: u64 = row_mask(4, 7);
    const RAYS: &'static [[u64; 64]; 4] = &BRAZ_RAYS;
}

/// Shifts every bit of `b` one step in direction `dir` (bits may leave the
/// board: callers intersect with a subset of the mask).
#[inline(always)]
pub(crate) fn shift<G: Geo>(b: u64, dir: usize) -> u64 {
    match dir {
        0 => b >> (G::N + 1),
        1 => b >> G::N,
        2 => b << G::N,
        _ => b << (G::N + 1),
    }
}

/// The nearest set bit of `blockers` seen from a square looking in direction
/// `dir` (`blockers` must be a non-empty subset of a ray in that direction).
#[inline(always)]
pub(crate) fn nearest(blockers: u64, dir: usize) -> u32 {
    if dir >= 2 {
        blockers.trailing_zeros()
    } else {
        63 - blockers.leading_zeros()
    }
}

/// The squares a slider on `from` reaches in direction `dir` before the first
/// occupied square (exclusive).
#[inline(always)]
pub(crate) fn ray_until<G: Geo>(from: u32, dir: usize, occupied: u64) -> u64 {
    let ray = G::RAYS[dir][from as usize];
    let blk = ray & occupied;
    if blk == 0 {
        ray
    } else {
        let first = nearest(blk, dir);
        ray ^ (G::RAYS[dir][first as usize] | (1u64 << first))
    }
}

/// Occluded fill: `seed` together with every square reachable from it in
/// direction `dir` through squares of `pro` (Kogge-Stone; rays are at most 9
/// long, so four doublings suffice).
#[inline(always)]
pub(crate) fn fill<G: Geo>(mut seed: u64, mut pro: u64, dir: usize) -> u64 {
    seed |= pro & shift_n::<G>(seed, dir, 1);
    pro &= shift_n::<G>(pro, dir, 1);
    seed |= pro & shift_n::<G>(seed, dir, 2);
    pro &= shift_n::<G>(pro, dir, 2);
    seed |= pro & shift_n::<G>(seed, dir, 4);
    pro &= shift_n::<G>(pro, dir, 4);
    seed | (pro & shift_n::<G>(seed, dir, 8))
}

/// Shifts `b` by `k` steps in direction `dir`.
#[inline(always)]
pub(crate) fn shift_n<G: Geo>(b: u64, dir: usize, k: u32) -> u64 {
    match dir {
        0 => b >> (k * (G::N + 1)),
        1 => b >> (k * G::N),
        2 => b << (k * G::N),
        _ => b << (k * (G::N + 1)),
    }
}

/// PDN square number (1-based) to bit index.
#[inline(always)]
pub(crate) fn sq_to_bit<G: Geo>(square: u8) -> u32 {
    bit_of(G::N, square as u32)
}

/// Bit index to PDN square number (the bit must be a playable square).
#[inline(always)]
pub(crate) fn bit_to_sq<G: Geo>(bit: u32) -> u8 {
    let stride = 2 * G::N + 1;
    let s = bit - bit / stride;
    (s + 1) as u8
}

/// Iterator over the set bits of a bitboard, lowest first.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Bits(pub u64);

impl Iterator for Bits {
    type Item = u32;
    #[inline(always)]
    fn next(&mut self) -> Option<u32> {
        if self.0 == 0 {
            None
        } else {
            let b = self.0.trailing_zeros();
            self.0 &= self.0 - 1;
            Some(b)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn interior_of(n: u32) -> u64 {
        // A square is interior when it has a neighbour in all four directions.
        let mask = mask_of(n);
        let mut m = 0u64;
        let mut b = 0;
        while b < 64 {
            if (mask >> b) & 1 == 1 {
                let mut all = true;
                let mut d = 0;
                while d < 4 {
                    if !on_board(n, b + step_of(n, d)) {
                        all = false;
                    }
                    d += 1;
                }
                if all {
                    m |= 1u64 << b;
                }
            }
            b += 1;
        }
        m
    }

    #[test]
    fn numbering_round_trips() {
        for sq in 1..=50u8 {
            assert_eq!(bit_to_sq::<Intl>(sq_to_bit::<Intl>(sq)), sq);
            assert!(Intl::MASK >> sq_to_bit::<Intl>(sq) & 1 == 1);
        }
        for sq in 1..=32u8 {
            assert_eq!(bit_to_sq::<Braz>(sq_to_bit::<Braz>(sq)), sq);
        }
        assert_eq!(Intl::MASK.count_ones(), 50);
        assert_eq!(Braz::MASK.count_ones(), 32);
        // Only interior squares can be jumped: at most 32 (10x10) or 18 (8x8)
        // captures in one sequence, which bounds the capture trail.
        assert_eq!(interior_of(5).count_ones(), 32);
        assert_eq!(interior_of(4).count_ones(), 18);
    }

    fn neighbours<G: Geo>(sq: u8) -> Vec<u8> {
        let b = 1u64 << sq_to_bit::<G>(sq);
        let mut v: Vec<u8> = (0..4)
            .filter_map(|d| {
                let t = shift::<G>(b, d) & G::MASK;
                (t != 0).then(|| bit_to_sq::<G>(t.trailing_zeros()))
            })
            .collect();
        v.sort();
        v
    }

    #[test]
    fn pdn_neighbours() {
        // 10x10: square 1 is on the top row, second file; 46 is the bottom-left corner.
        assert_eq!(neighbours::<Intl>(1), vec![6, 7]);
        assert_eq!(neighbours::<Intl>(5), vec![10]);
        assert_eq!(neighbours::<Intl>(6), vec![1, 11]);
        assert_eq!(neighbours::<Intl>(28), vec![22, 23, 32, 33]);
        assert_eq!(neighbours::<Intl>(46), vec![41]);
        assert_eq!(neighbours::<Intl>(45), vec![40, 50]);
        // 8x8: 29 is the bottom-left corner, 4 the top-right one.
        assert_eq!(neighbours::<Braz>(1), vec![5, 6]);
        assert_eq!(neighbours::<Braz>(4), vec![8]);
        assert_eq!(neighbours::<Braz>(18), vec![14, 15, 22, 23]);
        assert_eq!(neighbours::<Braz>(29), vec![25]);
        assert_eq!(neighbours::<Braz>(12), vec![8, 16]);
    }

    #[test]
    fn rows_and_rays() {
        let top: Vec<u8> = Bits(Intl::TOP_ROW).map(bit_to_sq::<Intl>).collect();
        assert_eq!(top, vec![1, 2, 3, 4, 5]);
        let bottom: Vec<u8> = Bits(Braz::BOTTOM_ROW).map(bit_to_sq::<Braz>).collect();
        assert_eq!(bottom, vec![29, 30, 31, 32]);
        // The long diagonal 46-5 from 46 going up-right.
        let ray: Vec<u8> = Bits(Intl::RAYS[1][sq_to_bit::<Intl>(46) as usize])
            .map(bit_to_sq::<Intl>)
            .collect();
        assert_eq!(ray, vec![5, 10, 14, 19, 23, 28, 32, 37, 41]);
        // Fill agrees with the ray when nothing blocks.
        let k = 1u64 << sq_to_bit::<Intl>(46);
        assert_eq!(
            fill::<Intl>(k, Intl::MASK & !k, 1) & !k,
            Intl::RAYS[1][sq_to_bit::<Intl>(46) as usize]
        );
    }
}
