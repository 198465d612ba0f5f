//! Medieval automatic selection from the stream `GAME:select:COLOR`.

use super::stream::Stream;

/// The side whose selection the server completes (`white` or `black` in the
/// stream name).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SelectColor {
    /// White: stream `GAME:select:white`.
    White,
    /// Black: stream `GAME:select:black`.
    Black,
}

/// A colour name other than `white` or `black`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown colour {0:?}: expected \"white\" or \"black\"")]
pub struct SelectColorError(pub String);

impl SelectColor {
    /// The name used in the stream: `white` or `black`.
    pub fn as_str(self) -> &'static str {
        match self {
            SelectColor::White => "white",
            SelectColor::Black => "black",
        }
    }
}

impl std::fmt::Display for SelectColor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for SelectColor {
    type Err = SelectColorError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "white" => Ok(SelectColor::White),
            "black" => Ok(SelectColor::Black),
            other => Err(SelectColorError(other.to_owned())),
        }
    }
}

/// Number of medieval pieces each player has.
pub const MEDIEVAL_PIECES: usize = 3;

/// The squares the server picks to complete a selection, in the order picked.
///
/// `chosen` are the squares the player chose (fewer than 3, else nothing is
/// picked); `eligible` the player's men (chosen ones may be included: they are
/// removed). The remaining eligible squares are listed in ascending order
/// without duplicates and, while fewer than 3 are chosen, `below(len)` from
/// the stream `GAME:select:COLOR` indexes the list and the picked square is
/// removed from it. Stops early if the list runs out.
pub fn auto_select(
    seed_hex: &str,
    game: &str,
    color: SelectColor,
    chosen: &[u8],
    eligible: &[u8],
) -> Vec<u8> {
    let mut remaining = remaining(chosen, eligible);
    auto_select_draws(seed_hex, game, color, chosen.len(), remaining.len())
        .into_iter()
        .map(|(_, idx)| remaining.remove(idx as usize))
        .collect()
}

/// The eligible squares not chosen, ascending, without duplicates.
fn remaining(chosen: &[u8], eligible: &[u8]) -> Vec<u8> {
    let mut remaining: Vec<u8> = eligible
        .iter()
        .copied()
        .filter(|sq| !chosen.contains(sq))
        .collect();
    remaining.sort_unstable();
    remaining.dedup();
    remaining
}

/// The draws of an automatic selection as `(list length, index drawn)`, in order: what
/// [`auto_select`] does with a player who chose `chosen` pieces out of a list of
/// `remaining` squares (the randomness tests count these).
pub fn auto_select_draws(
    seed_hex: &str,
    game: &str,
    color: SelectColor,
    chosen: usize,
    remaining: usize,
) -> Vec<(u32, u32)> {
    let mut draws = Vec::new();
    let mut stream = Stream::new(seed_hex, format!("{game}:select:{color}"));
    let mut len = remaining as u32;
    for _ in chosen..MEDIEVAL_PIECES {
        let Some(idx) = stream.below(len) else { break };
        draws.push((len, idx));
        len -= 1;
    }
    draws
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_round_trip() {
        for c in [SelectColor::White, SelectColor::Black] {
            assert_eq!(c.as_str().parse::<SelectColor>(), Ok(c));
        }
        assert!("White".parse::<SelectColor>().is_err());
    }

    #[test]
    fn full_choice_picks_nothing() {
        assert!(auto_select("s", "g", SelectColor::White, &[1, 2, 3], &[1, 2, 3, 4]).is_empty());
    }

    #[test]
    fn picks_distinct_remaining_squares() {
        let eligible: Vec<u8> = (21..=32).collect();
        let picked = auto_select("s", "g", SelectColor::Black, &[], &eligible);
        assert_eq!(picked.len(), 3);
        for (i, sq) in picked.iter().enumerate() {
            assert!(eligible.contains(sq));
            assert!(!picked[..i].contains(sq));
        }
    }

    #[test]
    fn short_list_stops_early() {
        assert_eq!(
            auto_select("s", "g", SelectColor::White, &[], &[5]),
            vec![5]
        );
        assert!(auto_select("s", "g", SelectColor::White, &[], &[]).is_empty());
    }
}
