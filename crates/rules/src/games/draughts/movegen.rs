//! Move generation on side-relative bitboards: quiet moves, capture sequences
//! (men and flying kings, captured pieces staying on the board as obstacles
//! until the end), the majority rule, FMJD deduplication and bulk counting.
//!
//! Everything here is generic over the board ([`Geo`]) and the side to move
//! ([`Side`]) so that the hot loops compile to constant shifts.

use super::geometry::{Bits, Geo, fill, nearest, ray_until, shift};

/// The side to move, at the type level.
pub(crate) trait Side: 'static {
    const WHITE: bool;
    type Opp: Side;
}

/// White to move (men go towards square 1).
pub(crate) struct White;
/// Black to move.
pub(crate) struct Black;

impl Side for White {
    const WHITE: bool = true;
    type Opp = Black;
}

impl Side for Black {
    const WHITE: bool = false;
    type Opp = White;
}

/// The two forward directions of the side's men.
#[inline(always)]
pub(crate) fn forward<S: Side>() -> [usize; 2] {
    if S::WHITE { [0, 1] } else { [2, 3] }
}

/// The row where the side's men promote.
#[inline(always)]
pub(crate) fn promo_row<G: Geo, S: Side>() -> u64 {
    if S::WHITE { G::TOP_ROW } else { G::BOTTOM_ROW }
}

/// Pieces seen from the side to move.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Board {
    pub us: u64,
    pub them: u64,
    pub kings: u64,
}

/// A compact move for the hot path: bit indices and the captured set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CMove {
    pub from: u8,
    pub to: u8,
    pub captured: u64,
}

/// Stops and captures of the capture sequence being explored (bit indices).
/// At most 32 pieces can ever be jumped (only interior squares can be), so
/// the arrays never overflow.
pub(crate) struct Trail {
    pub stops: [u8; 66],
    pub caps: [u8; 65],
}

impl Trail {
    pub(crate) fn new() -> Self {
        Trail {
            stops: [0; 66],
            caps: [0; 65],
        }
    }
}

/// Receives the capture sequences found by the search.
pub(crate) trait Sink {
    /// Whether the search must record stops and captures in [`Trail`].
    const PATHS: bool;
    /// Whether [`Sink::partial`] wants every intermediate landing.
    const PARTIALS: bool;
    /// A sequence that cannot be continued: `n` pieces captured, ending on `to`.
    fn complete(&mut self, from: u32, to: u32, captured: u64, n: u32, trail: &Trail);
    /// Any landing (continuable or not), `n >= 1` pieces captured so far.
    fn partial(&mut self, _from: u32, _to: u32, _captured: u64, _n: u32, _trail: &Trail) {}
}

/// Keeps the maximal sequences only, deduplicated by (from, to, captured set).
pub(crate) struct MaxSink<'a> {
    pub list: &'a mut Vec<CMove>,
    pub best: u32,
}

impl Sink for MaxSink<'_> {
    const PATHS: bool = false;
    const PARTIALS: bool = false;

    #[inline(always)]
    fn complete(&mut self, from: u32, to: u32, captured: u64, n: u32, _trail: &Trail) {
        if n < self.best {
            return;
        }
        if n > self.best {
            self.best = n;
            self.list.clear();
        }
        let m = CMove {
            from: from as u8,
            to: to as u8,
            captured,
        };
        // A single capture is unique for its (from, to); longer ones may be
        // reached along several paths.
        if n > 1 && self.list.contains(&m) {
            return;
        }
        self.list.push(m);
    }
}

/// Searches every capture sequence of the pieces of `b.us` in `movers`.
#[inline(always)]
pub(crate) fn captures<G: Geo, K: Sink>(b: &Board, movers: u64, sink: &mut K) {
    let occ = b.us | b.them;
    let empty = G::MASK & !occ;
    let men = b.us & !b.kings & movers;
    let mut trail = Trail::new();
    let mut cand = 0u64;
    for d in 0..4 {
        let back = 3 - d;
        cand |= shift::<G>(shift::<G>(empty, back) & b.them, back);
    }
    for m in Bits(cand & men) {
        trail.stops[0] = m as u8;
        let empty_m = empty | (1u64 << m);
        man_dfs::<G, K>(b.them, empty_m, m, m, 0, 0, &mut trail, sink);
    }
    for k in Bits(b.us & b.kings & movers) {
        trail.stops[0] = k as u8;
        let occ_k = occ & !(1u64 << k);
        king_dfs::<G, K>(b.them, occ_k, k, k, 0, 0, 4, &mut trail, sink);
    }
}

#[allow(clippy::too_many_arguments)]
#[inline]
fn man_dfs<G: Geo, K: Sink>(
    them: u64,
    empty: u64,
    from: u32,
    at: u32,
    captured: u64,
    n: u32,
    trail: &mut Trail,
    sink: &mut K,
) {
    let here = 1u64 << at;
    let mut found = false;
    for d in 0..4 {
        let x = shift::<G>(here, d) & them & !captured;
        if x == 0 {
            continue;
        }
        let l = shift::<G>(x, d) & empty;
        if l == 0 {
            continue;
        }
        found = true;
        let li = l.trailing_zeros();
        if K::PATHS {
            trail.caps[n as usize] = x.trailing_zeros() as u8;
            trail.stops[n as usize + 1] = li as u8;
        }
        if K::PARTIALS {
            sink.partial(from, li, captured | x, n + 1, trail);
        }
        man_dfs::<G, K>(them, empty, from, li, captured | x, n + 1, trail, sink);
    }
    if !found && n > 0 {
        sink.complete(from, at, captured, n, trail);
    }
}

#[allow(clippy::too_many_arguments)]
#[inline]
fn king_dfs<G: Geo, K: Sink>(
    them: u64,
    occ: u64,
    from: u32,
    at: u32,
    captured: u64,
    n: u32,
    came: usize,
    trail: &mut Trail,
    sink: &mut K,
) {
    let mut found = false;
    for d in 0..4 {
        if d + came == 3 {
            // Going back would meet the piece just captured.
            continue;
        }
        let ray = G::RAYS[d][at as usize];
        let blk = ray & occ;
        if blk == 0 {
            continue;
        }
        let xi = nearest(blk, d);
        let x = 1u64 << xi;
        if x & them & !captured == 0 {
            continue;
        }
        let lands = ray_until::<G>(xi, d, occ);
        if lands == 0 {
            continue;
        }
        found = true;
        if K::PATHS {
            trail.caps[n as usize] = xi as u8;
        }
        for li in Bits(lands) {
            if K::PATHS {
                trail.stops[n as usize + 1] = li as u8;
            }
            if K::PARTIALS {
                sink.partial(from, li, captured | x, n + 1, trail);
            }
            king_dfs::<G, K>(them, occ, from, li, captured | x, n + 1, d, trail, sink);
        }
    }
    if !found && n > 0 {
        sink.complete(from, at, captured, n, trail);
    }
}

/// Whether the side to move has a capture.
#[inline(always)]
pub(crate) fn has_capture<G: Geo>(b: &Board) -> bool {
    let empty = G::MASK & !(b.us | b.them);
    let men = b.us & !b.kings;
    let kings = b.us & b.kings;
    for d in 0..4 {
        let mut src = men;
        if kings != 0 {
            src |= fill::<G>(kings, empty, d);
        }
        if shift::<G>(shift::<G>(src, d) & b.them, d) & empty != 0 {
            return true;
        }
    }
    false
}

/// Pushes every quiet move (ignoring the capture obligation).
#[inline(always)]
pub(crate) fn quiet_moves<G: Geo, S: Side>(b: &Board, out: &mut Vec<CMove>) {
    let occ = b.us | b.them;
    let empty = G::MASK & !occ;
    let men = b.us & !b.kings;
    for d in forward::<S>() {
        for t in Bits(shift::<G>(men, d) & empty) {
            let f = shift::<G>(1u64 << t, 3 - d).trailing_zeros();
            out.push(CMove {
                from: f as u8,
                to: t as u8,
                captured: 0,
            });
        }
    }
    for k in Bits(b.us & b.kings) {
        for d in 0..4 {
            for t in Bits(ray_until::<G>(k, d, occ)) {
                out.push(CMove {
                    from: k as u8,
                    to: t as u8,
                    captured: 0,
                });
            }
        }
    }
}

/// Number of quiet moves, by population counts only.
#[inline(always)]
pub(crate) fn count_quiet<G: Geo, S: Side>(b: &Board) -> u64 {
    let empty = G::MASK & !(b.us | b.them);
    let men = b.us & !b.kings;
    let kings = b.us & b.kings;
    let [d0, d1] = forward::<S>();
    let mut n =
        (shift::<G>(men, d0) & empty).count_ones() + (shift::<G>(men, d1) & empty).count_ones();
    if kings != 0 {
        // Each empty square reached in a direction is reached by exactly one king.
        for d in 0..4 {
            n += (fill::<G>(kings, empty, d) & !kings).count_ones();
        }
    }
    u64::from(n)
}

/// The legal moves (deduplicated) into `out`, which is cleared first.
#[inline(always)]
pub(crate) fn legal<G: Geo, S: Side>(b: &Board, out: &mut Vec<CMove>) {
    out.clear();
    if has_capture::<G>(b) {
        let mut sink = MaxSink { list: out, best: 0 };
        captures::<G, _>(b, !0, &mut sink);
    } else {
        quiet_moves::<G, S>(b, out);
    }
}

/// The number of legal moves; `scratch` is used for capture deduplication.
#[inline(always)]
pub(crate) fn count_legal<G: Geo, S: Side>(b: &Board, scratch: &mut Vec<CMove>) -> u64 {
    if has_capture::<G>(b) {
        scratch.clear();
        let mut sink = MaxSink {
            list: scratch,
            best: 0,
        };
        captures::<G, _>(b, !0, &mut sink);
        scratch.len() as u64
    } else {
        count_quiet::<G, S>(b)
    }
}

/// Plays `m` and returns the board seen from the opponent.
#[inline(always)]
pub(crate) fn make<G: Geo, S: Side>(b: &Board, m: &CMove) -> Board {
    let from = 1u64 << m.from;
    let to = 1u64 << m.to;
    let us = (b.us & !from) | to;
    let them = b.them & !m.captured;
    let mut kings = b.kings & !m.captured;
    if kings & from != 0 {
        kings = (kings & !from) | to;
    } else if to & promo_row::<G, S>() != 0 {
        kings |= to;
    }
    Board {
        us: them,
        them: us,
        kings,
    }
}

/// Perft with bulk counting at the last ply. `bufs` holds one reusable move
/// buffer per remaining ply (plus one scratch buffer), so the search does not
/// allocate once the buffers have grown.
pub(crate) fn perft<G: Geo, S: Side>(b: &Board, depth: u32, bufs: &mut [Vec<CMove>]) -> u64 {
    match depth {
        0 => 1,
        1 => match bufs.first_mut() {
            Some(scratch) => count_legal::<G, S>(b, scratch),
            None => 0,
        },
        _ => {
            let Some((buf, rest)) = bufs.split_first_mut() else {
                return 0;
            };
            legal::<G, S>(b, buf);
            let mut total = 0;
            for m in buf.iter() {
                let next = make::<G, S>(b, m);
                total += perft::<G, S::Opp>(&next, depth - 1, rest);
            }
            total
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::super::geometry::{Braz, Intl, sq_to_bit};
    use super::*;

    /// The bitboard of PDN squares (shared by the tests of the search's evaluation).
    pub(crate) fn bb<G: Geo>(squares: &[u8]) -> u64 {
        squares
            .iter()
            .fold(0, |a, &s| a | (1u64 << sq_to_bit::<G>(s)))
    }

    #[test]
    fn start_positions_count() {
        let b = Board {
            us: bb::<Intl>(&(31..=50).collect::<Vec<_>>()),
            them: bb::<Intl>(&(1..=20).collect::<Vec<_>>()),
            kings: 0,
        };
        let mut v = Vec::new();
        assert_eq!(count_legal::<Intl, White>(&b, &mut v), 9);
        let b = Board {
            us: bb::<Braz>(&(21..=32).collect::<Vec<_>>()),
            them: bb::<Braz>(&(1..=12).collect::<Vec<_>>()),
            kings: 0,
        };
        assert_eq!(count_legal::<Braz, White>(&b, &mut v), 7);
    }

    #[test]
    fn king_counts_agree_with_generation() {
        // White kings 28 and 33 (same diagonal), black man 7.
        let b = Board {
            us: bb::<Intl>(&[28, 33, 46]),
            them: bb::<Intl>(&[3]),
            kings: bb::<Intl>(&[28, 33]),
        };
        let mut v = Vec::new();
        quiet_moves::<Intl, White>(&b, &mut v);
        assert_eq!(v.len() as u64, count_quiet::<Intl, White>(&b));
    }
}
