//! Medieval duels: duel `m` succeeds when the first byte of `block("GAME:duel:m")` is < 128.

use super::stream::block;

/// Whether duel number `m` (0 for the game's first duel) of `game` succeeds.
pub fn duel(seed_hex: &str, game: &str, m: u64) -> bool {
    block(seed_hex, &format!("{game}:duel:{m}"))[0] < 128
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duel_reads_the_first_byte() {
        let seed = "cd".repeat(32);
        for m in 0..16 {
            let b = block(&seed, &format!("x:duel:{m}"));
            assert_eq!(duel(&seed, "x", m), b[0] < 128);
        }
    }
}
