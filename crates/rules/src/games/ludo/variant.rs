//! Ludo variant settings, presets and seats.

use super::error::VariantError;

/// Squares on the shared track, numbered 0-51 in playing direction.
pub const TRACK_LEN: u8 = 52;
/// Last progress value on the shared track (p = 0..=50).
pub const LAST_TRACK: u8 = 50;
/// First progress value in the home column (p = 51..=55).
pub const HOME_START: u8 = 51;
/// Progress of a finished token.
pub const FINISHED: u8 = 56;
/// Safe squares (absolute track numbers) when `safe_squares` is on.
pub const SAFE_SQUARES: [u8; 8] = [0, 8, 13, 21, 26, 34, 39, 47];

/// Most tokens per player a variant may have (a sanity bound, not a rule).
pub const MAX_TOKENS: u8 = 16;

/// A seat, in playing order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Seat {
    /// Start square 0.
    Red,
    /// Start square 13.
    Green,
    /// Start square 26.
    Yellow,
    /// Start square 39.
    Blue,
}

impl Seat {
    /// The four seats in playing order.
    pub const ALL: [Seat; 4] = [Seat::Red, Seat::Green, Seat::Yellow, Seat::Blue];

    /// The seat's start square (where p = 0 is).
    pub fn start(self) -> u8 {
        match self {
            Seat::Red => 0,
            Seat::Green => 13,
            Seat::Yellow => 26,
            Seat::Blue => 39,
        }
    }

    /// The name used in logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Seat::Red => "red",
            Seat::Green => "green",
            Seat::Yellow => "yellow",
            Seat::Blue => "blue",
        }
    }

    /// The next seat in playing order (blue is followed by red).
    pub fn next(self) -> Seat {
        match self {
            Seat::Red => Seat::Green,
            Seat::Green => Seat::Yellow,
            Seat::Yellow => Seat::Blue,
            Seat::Blue => Seat::Red,
        }
    }

    /// The absolute track square of progress `p` (0..=50) for this seat.
    pub fn square(self, p: u8) -> u8 {
        ((u16::from(self.start()) + u16::from(p)) % u16::from(TRACK_LEN)) as u8
    }
}

impl std::fmt::Display for Seat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Seat {
    type Err = VariantError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "red" => Ok(Seat::Red),
            "green" => Ok(Seat::Green),
            "yellow" => Ok(Seat::Yellow),
            "blue" => Ok(Seat::Blue),
            other => Err(VariantError::UnknownSeat(other.to_owned())),
        }
    }
}

/// The settings of a Ludo variant, as carried by `game_started.variant`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Variant {
    /// Variant name (`classic`, `duel`, `quick`, or a custom one).
    pub name: String,
    /// 2 or 4.
    pub players: u8,
    /// Tokens per player.
    pub tokens: u8,
    /// Die values that let a token leave the yard (onto p = 0).
    pub exit_on: Vec<u8>,
    /// Whether squares 0, 8, 13, 21, 26, 34, 39, 47 protect from capture.
    pub safe_squares: bool,
    /// A 6 gives another roll, even when nothing could move.
    pub bonus_on_six: bool,
    /// A third 6 in a row is not played and the turn passes.
    pub three_sixes: bool,
    /// A capture gives another roll.
    pub bonus_on_capture: bool,
    /// Finishing a token gives another roll.
    pub bonus_on_finish: bool,
    /// Seconds per action (roll or move); informative for the engine.
    pub turn_s: u32,
    /// Consecutive timeouts that forfeit a player.
    pub max_timeouts: u32,
}

impl Variant {
    /// The default variant `classic`.
    pub fn classic() -> Self {
        Variant {
            name: "classic".to_owned(),
            players: 4,
            tokens: 4,
            exit_on: vec![6],
            safe_squares: true,
            bonus_on_six: true,
            three_sixes: true,
            bonus_on_capture: false,
            bonus_on_finish: false,
            turn_s: 15,
            max_timeouts: 3,
        }
    }

    /// `duel`: 2 players, otherwise classic.
    pub fn duel() -> Self {
        Variant {
            name: "duel".to_owned(),
            players: 2,
            ..Self::classic()
        }
    }

    /// `quick`: 2 players, 2 tokens, exit on 1 or 6, 10 s per action.
    pub fn quick() -> Self {
        Variant {
            name: "quick".to_owned(),
            players: 2,
            tokens: 2,
            exit_on: vec![1, 6],
            turn_s: 10,
            ..Self::classic()
        }
    }

    /// The preset with this name, if any.
    pub fn preset(name: &str) -> Option<Self> {
        match name {
            "classic" => Some(Self::classic()),
            "duel" => Some(Self::duel()),
            "quick" => Some(Self::quick()),
            _ => None,
        }
    }

    /// Checks the settings: 2 or 4 players, 1 to 16 tokens, a non-empty
    /// `exit_on` of die values 1-6, at least one timeout before forfeit.
    pub fn validate(&self) -> Result<(), VariantError> {
        if self.players != 2 && self.players != 4 {
            return Err(VariantError::Players(self.players));
        }
        if self.tokens == 0 || self.tokens > MAX_TOKENS {
            return Err(VariantError::Tokens(self.tokens));
        }
        if self.exit_on.is_empty() {
            return Err(VariantError::EmptyExitOn);
        }
        if let Some(&v) = self.exit_on.iter().find(|v| !(1..=6).contains(*v)) {
            return Err(VariantError::ExitValue(v));
        }
        if self.max_timeouts == 0 {
            return Err(VariantError::MaxTimeouts);
        }
        Ok(())
    }

    /// Whether a die value lets a token leave the yard.
    pub fn exits_on(&self, value: u8) -> bool {
        self.exit_on.contains(&value)
    }

    /// Whether an absolute square protects its tokens.
    pub fn is_safe(&self, square: u8) -> bool {
        self.safe_squares && SAFE_SQUARES.contains(&square)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_are_exactly_rules_md() {
        let c = Variant::classic();
        assert_eq!(
            (c.players, c.tokens, c.exit_on.as_slice(), c.safe_squares),
            (4, 4, &[6u8][..], true)
        );
        assert!(c.bonus_on_six && c.three_sixes && !c.bonus_on_capture && !c.bonus_on_finish);
        assert_eq!((c.turn_s, c.max_timeouts), (15, 3));
        let d = Variant::duel();
        assert_eq!(
            d,
            Variant {
                name: "duel".into(),
                players: 2,
                ..Variant::classic()
            }
        );
        let q = Variant::quick();
        assert_eq!(
            (q.players, q.tokens, q.exit_on.as_slice(), q.turn_s),
            (2, 2, &[1u8, 6][..], 10)
        );
        assert_eq!(
            q,
            Variant {
                name: "quick".into(),
                players: 2,
                tokens: 2,
                exit_on: vec![1, 6],
                turn_s: 10,
                ..Variant::classic()
            }
        );
        for v in [c, d, q] {
            assert_eq!(v.validate(), Ok(()));
            assert_eq!(Variant::preset(&v.name), Some(v));
        }
        assert_eq!(Variant::preset("turbo"), None);
    }

    #[test]
    fn validation_names_the_problem() {
        let mut v = Variant::classic();
        v.players = 3;
        assert_eq!(v.validate(), Err(VariantError::Players(3)));
        let mut v = Variant::classic();
        v.tokens = 0;
        assert_eq!(v.validate(), Err(VariantError::Tokens(0)));
        let mut v = Variant::classic();
        v.exit_on = vec![];
        assert_eq!(v.validate(), Err(VariantError::EmptyExitOn));
        v.exit_on = vec![7];
        assert_eq!(v.validate(), Err(VariantError::ExitValue(7)));
        let mut v = Variant::classic();
        v.max_timeouts = 0;
        assert_eq!(v.validate(), Err(VariantError::MaxTimeouts));
    }

    #[test]
    fn seats_start_squares_and_order() {
        assert_eq!(Seat::ALL.map(Seat::start), [0, 13, 26, 39]);
        assert_eq!(Seat::Blue.next(), Seat::Red);
        assert_eq!(Seat::Yellow.square(30), 4);
        assert_eq!(Seat::Red.square(50), 50);
        for s in Seat::ALL {
            assert_eq!(s.as_str().parse::<Seat>(), Ok(s));
        }
    }

    #[test]
    fn safe_squares_only_when_enabled() {
        let mut v = Variant::classic();
        assert!(v.is_safe(8) && !v.is_safe(9));
        v.safe_squares = false;
        assert!(!v.is_safe(8));
    }
}
