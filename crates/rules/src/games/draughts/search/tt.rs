//! Zobrist keys of positions and the transposition table of the search.

use super::super::geometry::Bits;
use super::super::movegen::CMove;

/// SplitMix64, for the key tables (fixed seed: keys are the same in every run).
const fn splitmix(state: u64) -> (u64, u64) {
    let s = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = s;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (s, z ^ (z >> 31))
}

/// `[colour (0 white, 1 black)][role (0 man, 1 king)][bit]`.
type Keys = [[[u64; 64]; 2]; 2];

const fn make_keys() -> Keys {
    let mut keys = [[[0u64; 64]; 2]; 2];
    let mut state = 0x5649_4749_4544_5241; // "VIGIEDRA"
    let mut c = 0;
    while c < 2 {
        let mut r = 0;
        while r < 2 {
            let mut b = 0;
            while b < 64 {
                let (s, z) = splitmix(state);
                state = s;
                keys[c][r][b] = z;
                b += 1;
            }
            r += 1;
        }
        c += 1;
    }
    keys
}

static KEYS: Keys = make_keys();
/// Xored in when Black is to move.
pub(crate) const BLACK_TO_MOVE: u64 = 0xA5C3_96E1_D27B_4F08;

/// The Zobrist key of a position given by absolute bitboards.
pub(crate) fn key_of(white: u64, black: u64, kings: u64, white_to_move: bool) -> u64 {
    let mut k = if white_to_move { 0 } else { BLACK_TO_MOVE };
    for b in Bits(white) {
        k ^= KEYS[0][usize::from(kings >> b & 1 == 1)][b as usize];
    }
    for b in Bits(black) {
        k ^= KEYS[1][usize::from(kings >> b & 1 == 1)][b as usize];
    }
    k
}

/// The key after the side to move (`white` or not) plays `m` from a board whose
/// kings are `kings`; `promotes` says whether the moving man is crowned.
#[inline]
pub(crate) fn key_after(key: u64, white: bool, kings: u64, m: &CMove, promotes: bool) -> u64 {
    let (us, them) = if white { (0, 1) } else { (1, 0) };
    let from_king = kings >> m.from & 1 == 1;
    let mut k = key ^ BLACK_TO_MOVE;
    k ^= KEYS[us][usize::from(from_king)][m.from as usize];
    k ^= KEYS[us][usize::from(from_king || promotes)][m.to as usize];
    for x in Bits(m.captured) {
        k ^= KEYS[them][usize::from(kings >> x & 1 == 1)][x as usize];
    }
    k
}

/// What a stored score says about the true one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Bound {
    Exact,
    /// The true score is at least this (the search failed high).
    Lower,
    /// The true score is at most this (every move failed low).
    Upper,
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Entry {
    pub key: u64,
    pub captured: u64,
    pub score: i16,
    pub from: u8,
    pub to: u8,
    pub depth: i8,
    pub bound: Bound,
    pub age: u8,
    /// Whether `from`, `to`, `captured` hold a move.
    pub has_move: bool,
}

impl Entry {
    pub(crate) fn best(&self) -> Option<CMove> {
        self.has_move.then_some(CMove {
            from: self.from,
            to: self.to,
            captured: self.captured,
        })
    }
}

const EMPTY: Entry = Entry {
    key: 0,
    captured: 0,
    score: 0,
    from: 0,
    to: 0,
    depth: -1,
    bound: Bound::Upper,
    age: 0,
    has_move: false,
};

/// A fixed-size table of entries indexed by the low bits of the key; an entry is
/// replaced by a search at least as deep, or by any search of a newer `age`.
pub(crate) struct Table {
    entries: Vec<Entry>,
    mask: usize,
    pub age: u8,
}

impl Table {
    /// A table of at most `mib` MiB (rounded down to a power of two of entries, at least 1,024).
    pub(crate) fn new(mib: usize) -> Table {
        let want = (mib.max(1) << 20) / std::mem::size_of::<Entry>();
        let mut n = 1024usize;
        while n * 2 <= want {
            n *= 2;
        }
        Table {
            entries: vec![EMPTY; n],
            mask: n - 1,
            age: 0,
        }
    }

    pub(crate) fn clear(&mut self) {
        self.entries.fill(EMPTY);
        self.age = 0;
    }

    #[inline]
    pub(crate) fn probe(&self, key: u64) -> Option<Entry> {
        let e = self.entries[key as usize & self.mask];
        (e.key == key && e.depth >= 0).then_some(e)
    }

    #[inline]
    pub(crate) fn store(
        &mut self,
        key: u64,
        depth: i32,
        score: i32,
        bound: Bound,
        best: Option<CMove>,
    ) {
        let slot = &mut self.entries[key as usize & self.mask];
        let depth = depth.clamp(0, i32::from(i8::MAX)) as i8;
        if slot.key == key || slot.age != self.age || depth >= slot.depth {
            // Keep the move of a shallower search of the same position when this one has none.
            let (mv, has_move) = match best {
                Some(m) => (m, true),
                None if slot.key == key => (
                    CMove {
                        from: slot.from,
                        to: slot.to,
                        captured: slot.captured,
                    },
                    slot.has_move,
                ),
                None => (
                    CMove {
                        from: 0,
                        to: 0,
                        captured: 0,
                    },
                    false,
                ),
            };
            *slot = Entry {
                key,
                captured: mv.captured,
                score: score.clamp(i32::from(i16::MIN), i32::from(i16::MAX)) as i16,
                from: mv.from,
                to: mv.to,
                depth,
                bound,
                age: self.age,
                has_move,
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn incremental_keys_match_keys_from_scratch() {
        // White man on bit 40 takes black man on bit 35 and king on bit 24, landing on bit 30... the
        // geometry does not matter to the keys: any bits do.
        let white = 1u64 << 40 | 1 << 7;
        let black = 1u64 << 35 | 1 << 24;
        let kings = 1u64 << 24 | 1 << 7;
        let k0 = key_of(white, black, kings, true);
        let m = CMove {
            from: 40,
            to: 30,
            captured: 1 << 35 | 1 << 24,
        };
        let k1 = key_after(k0, true, kings, &m, false);
        assert_eq!(k1, key_of(1 << 30 | 1 << 7, 0, 1 << 7, false));
        let crowned = key_after(k0, true, kings, &m, true);
        assert_eq!(
            crowned,
            key_of(1 << 30 | 1 << 7, 0, 1 << 30 | 1 << 7, false)
        );
        assert_ne!(k1, crowned);
    }

    #[test]
    fn a_deeper_search_replaces_and_a_shallower_one_of_the_same_age_does_not() {
        let mut t = Table::new(1);
        let m = CMove {
            from: 1,
            to: 2,
            captured: 0,
        };
        t.store(42, 5, 10, Bound::Exact, Some(m));
        let other = 42 + (t.mask as u64 + 1); // same slot, other position
        t.store(other, 3, 20, Bound::Lower, None);
        assert_eq!(t.probe(42).map(|e| e.score), Some(10));
        assert!(t.probe(other).is_none());
        t.age = 1;
        t.store(other, 3, 20, Bound::Lower, None);
        assert_eq!(t.probe(other).map(|e| e.score), Some(20));
        assert!(t.probe(42).is_none());
    }
}
