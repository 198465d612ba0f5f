//! Ludo dice: roll `n` of a game from `block("GAME:die:n")`.

use super::stream::{keyed, keyed_block};

/// The face (1-6) of roll number `n` (0 for the game's first roll, counting
/// every roll of every player, third sixes included) of game `game`.
///
/// The first byte `b < 252` of `block("GAME:die:n")` gives `b mod 6 + 1`; if
/// all 32 bytes are `>= 252` the search continues in `block("GAME:die:n:1")`,
/// then `:2`, and so on.
pub fn die(seed_hex: &str, game: &str, n: u64) -> u8 {
    die_keyed(&keyed(seed_hex), game, n)
}

fn die_keyed(mac: &hmac::Hmac<sha2::Sha256>, game: &str, n: u64) -> u8 {
    let mut k: u64 = 0;
    loop {
        let msg = if k == 0 {
            format!("{game}:die:{n}")
        } else {
            format!("{game}:die:{n}:{k}")
        };
        if let Some(face) = face_of(&keyed_block(mac, &msg)) {
            return face;
        }
        k += 1;
    }
}

/// The face given by a block, if any of its bytes is below 252.
pub(crate) fn face_of(block: &[u8; 32]) -> Option<u8> {
    block.iter().find(|&&b| b < 252).map(|&b| b % 6 + 1)
}

/// The dice of one game, roll 0 first: an endless iterator of faces 1-6.
#[derive(Clone)]
pub struct Dice {
    mac: hmac::Hmac<sha2::Sha256>,
    game: String,
    n: u64,
}

impl std::fmt::Debug for Dice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dice")
            .field("game", &self.game)
            .field("n", &self.n)
            .finish_non_exhaustive()
    }
}

impl Dice {
    /// The dice of `game` under `seed_hex`, starting at roll 0.
    pub fn new(seed_hex: &str, game: &str) -> Self {
        Self::starting_at(seed_hex, game, 0)
    }

    /// The dice of `game`, starting at roll number `n`.
    pub fn starting_at(seed_hex: &str, game: &str, n: u64) -> Self {
        Dice {
            mac: keyed(seed_hex),
            game: game.to_owned(),
            n,
        }
    }

    /// The number of the roll that `next()` will return.
    pub fn roll_number(&self) -> u64 {
        self.n
    }
}

impl Iterator for Dice {
    type Item = u8;

    fn next(&mut self) -> Option<u8> {
        let face = die_keyed(&self.mac, &self.game, self.n);
        self.n += 1;
        Some(face)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (usize::MAX, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn face_skips_bytes_252_and_above() {
        let mut b = [255u8; 32];
        assert_eq!(face_of(&b), None);
        b[5] = 251;
        assert_eq!(face_of(&b), Some(251 % 6 + 1));
        b[3] = 252;
        assert_eq!(face_of(&b), Some(251 % 6 + 1));
        b[0] = 0;
        assert_eq!(face_of(&b), Some(1));
    }

    #[test]
    fn dice_iterator_matches_die() {
        let seed = "00".repeat(32);
        let dice: Vec<u8> = Dice::new(&seed, "g").take(20).collect();
        let direct: Vec<u8> = (0..20).map(|n| die(&seed, "g", n)).collect();
        assert_eq!(dice, direct);
        let mut later = Dice::starting_at(&seed, "g", 7);
        assert_eq!(later.roll_number(), 7);
        assert_eq!(later.next(), Some(direct[7]));
    }
}
