//! The typed events of log format v1: the envelope, one body per event type, and the unknown fields kept aside.

use super::syntax::EpochMs;

/// One line of a server log, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// Format version (always 1 once validated).
    pub v: i64,
    /// Game id (for Belote, the match id).
    pub game: String,
    /// Position of the event in its game, from 0.
    pub seq: i64,
    /// Timestamp, epoch milliseconds UTC.
    pub ts: EpochMs,
    /// SHA-256 (hex) of the previous line of the same game, when given.
    pub prev: Option<String>,
    /// The type-specific part.
    pub body: Body,
    /// Fields the format does not define for this type: (name, JSON value exactly as written), in order.
    pub extra: Vec<(String, String)>,
}

impl Event {
    /// The event type.
    pub fn event_type(&self) -> EventType {
        self.body.event_type()
    }

    /// The account acting in this event, when there is one.
    pub fn player(&self) -> Option<&str> {
        match &self.body {
            Body::Selection(b) => Some(&b.player),
            Body::Move(b) => Some(&b.player),
            Body::Roll(b) => Some(&b.player),
            Body::Bid(b) => Some(&b.player),
            Body::Play(b) => Some(&b.player),
            Body::Timeout(b) => Some(&b.player),
            Body::DrawOffer(b) => Some(&b.player),
            Body::DrawAnswer(b) => Some(&b.player),
            Body::Left(b) => Some(&b.player),
            Body::GameStarted(_)
            | Body::Deal(_)
            | Body::HandsCompleted(_)
            | Body::DealEnded(_)
            | Body::GameEnded(_)
            | Body::SeedRevealed(_) => None,
        }
    }

    /// The attempt fields of moves, bids and plays.
    pub fn attempt(&self) -> Option<&Attempt> {
        match &self.body {
            Body::Move(b) => Some(&b.attempt),
            Body::Bid(b) => Some(&b.attempt),
            Body::Play(b) => Some(&b.attempt),
            _ => None,
        }
    }
}

/// A closed set of values written as fixed strings: `as_str`, `parse`, `ALL` and `Display`
/// (the log's enums; the review log reuses it for its actions and states).
#[macro_export]
macro_rules! string_enum {
    ($(#[$meta:meta])* $name:ident { $($variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name { $($variant),+ }

        impl $name {
            /// Every value, in the order of the format.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The text the log uses.
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }

            /// Parses the text the log uses.
            pub fn parse(s: &str) -> Option<Self> {
                match s { $($text => Some($name::$variant),)+ _ => None }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

string_enum!(
    /// The event types of format v1.
    EventType {
        GameStarted => "game_started",
        Selection => "selection",
        Move => "move",
        Roll => "roll",
        Deal => "deal",
        Bid => "bid",
        HandsCompleted => "hands_completed",
        Play => "play",
        DealEnded => "deal_ended",
        Timeout => "timeout",
        DrawOffer => "draw_offer",
        DrawAnswer => "draw_answer",
        Left => "left",
        GameEnded => "game_ended",
        SeedRevealed => "seed_revealed",
    }
);

string_enum!(
    /// Game kinds.
    Kind {
        Draughts10 => "draughts10",
        Draughts8 => "draughts8",
        Ludo => "ludo",
        Belote => "belote",
    }
);

string_enum!(
    /// Game modes (`medieval` only with `draughts8`).
    Mode {
        Standard => "standard",
        Medieval => "medieval",
    }
);

string_enum!(
    /// Whether the server accepted an attempt.
    Status {
        Accepted => "accepted",
        Rejected => "rejected",
    }
);

string_enum!(
    /// Why the server rejected an attempt.
    RejectReason {
        Illegal => "illegal",
        NotYourTurn => "not_your_turn",
        GameOver => "game_over",
        Malformed => "malformed",
    }
);

string_enum!(
    /// What a timeout led to.
    TimeoutOutcome {
        Loss => "loss",
        Auto => "auto",
        Forfeit => "forfeit",
    }
);

string_enum!(
    /// Why a player left.
    LeftReason {
        PageClosed => "page_closed",
        Disconnected => "disconnected",
        Resigned => "resigned",
    }
);

string_enum!(
    /// Why a game ended.
    EndReason {
        NoPieces => "no_pieces",
        NoMoves => "no_moves",
        Timeout => "timeout",
        Timeouts => "timeouts",
        Left => "left",
        DrawRule => "draw_rule",
        Repetition => "repetition",
        Agreement => "agreement",
        Finished => "finished",
        Target => "target",
    }
);

string_enum!(
    /// How a Belote deal ended.
    DealOutcome {
        Made => "made",
        Dedans => "dedans",
        Litige => "litige",
        Capot => "capot",
        Void => "void",
    }
);

string_enum!(
    /// Seats: draughts colours, Ludo colours, Belote places.
    Seat {
        White => "white",
        Black => "black",
        Red => "red",
        Green => "green",
        Yellow => "yellow",
        Blue => "blue",
        P1 => "p1",
        P2 => "p2",
    }
);

string_enum!(
    /// Belote announces.
    Announce {
        Belote => "belote",
        Rebelote => "rebelote",
    }
);

impl Kind {
    /// The seats a game of this kind may use.
    pub fn seats(self) -> &'static [Seat] {
        match self {
            Kind::Draughts10 | Kind::Draughts8 => &[Seat::White, Seat::Black],
            Kind::Ludo => &[Seat::Red, Seat::Green, Seat::Yellow, Seat::Blue],
            Kind::Belote => &[Seat::P1, Seat::P2],
        }
    }

    /// International or Brazilian draughts: the only kinds whose games can be drawn.
    pub fn is_draughts(self) -> bool {
        matches!(self, Kind::Draughts10 | Kind::Draughts8)
    }

    /// Whether the kind draws randomness from a committed seed (Ludo, Belote; draughts8 in medieval mode).
    pub fn uses_seed(self, mode: Mode) -> bool {
        matches!(self, Kind::Ludo | Kind::Belote)
            || (self == Kind::Draughts8 && mode == Mode::Medieval)
    }
}

/// The type-specific part of an event.
#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    GameStarted(GameStarted),
    Selection(Selection),
    Move(Move),
    Roll(Roll),
    Deal(Deal),
    Bid(Bid),
    HandsCompleted(HandsCompleted),
    Play(Play),
    DealEnded(DealEnded),
    Timeout(Timeout),
    DrawOffer(DrawOffer),
    DrawAnswer(DrawAnswer),
    Left(Left),
    GameEnded(GameEnded),
    SeedRevealed(SeedRevealed),
}

impl Body {
    /// The event type of this body.
    pub fn event_type(&self) -> EventType {
        match self {
            Body::GameStarted(_) => EventType::GameStarted,
            Body::Selection(_) => EventType::Selection,
            Body::Move(_) => EventType::Move,
            Body::Roll(_) => EventType::Roll,
            Body::Deal(_) => EventType::Deal,
            Body::Bid(_) => EventType::Bid,
            Body::HandsCompleted(_) => EventType::HandsCompleted,
            Body::Play(_) => EventType::Play,
            Body::DealEnded(_) => EventType::DealEnded,
            Body::Timeout(_) => EventType::Timeout,
            Body::DrawOffer(_) => EventType::DrawOffer,
            Body::DrawAnswer(_) => EventType::DrawAnswer,
            Body::Left(_) => EventType::Left,
            Body::GameEnded(_) => EventType::GameEnded,
            Body::SeedRevealed(_) => EventType::SeedRevealed,
        }
    }
}

/// A player as listed in `game_started`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Player {
    pub account: String,
    pub seat: Seat,
    pub ip: String,
    pub device: String,
}

/// A Ludo variant as carried by `game_started` (rules.md, Ludo).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LudoVariant {
    pub name: String,
    pub players: u8,
    pub tokens: u8,
    pub exit_on: Vec<u8>,
    pub safe_squares: bool,
    pub bonus_on_six: bool,
    pub three_sixes: bool,
    pub bonus_on_capture: bool,
    pub bonus_on_finish: bool,
    pub turn_s: u32,
    pub max_timeouts: u32,
}

/// The `variant` of `game_started`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Variant {
    Ludo(LudoVariant),
    Belote { target: u32 },
}

/// The `clock` of `game_started`; which fields are present depends on the kind.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Clock {
    pub move_s: Option<u32>,
    pub turn_s: Option<u32>,
    pub select_s: Option<u32>,
    pub max_timeouts: Option<u32>,
}

/// `game_started` (seq 0).
#[derive(Debug, Clone, PartialEq)]
pub struct GameStarted {
    pub kind: Kind,
    pub mode: Mode,
    pub variant: Option<Variant>,
    pub rated: bool,
    pub players: Vec<Player>,
    pub stake: i64,
    pub currency: String,
    pub clock: Clock,
    pub commitment: Option<String>,
}

/// `selection` (medieval).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    pub player: String,
    pub squares: Vec<u8>,
    pub auto: Vec<u8>,
}

/// The fields every attempt (move, bid, play) carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    pub status: Status,
    pub reason: Option<RejectReason>,
    pub think_ms: i64,
    /// `auto` as logged (absent, true or false).
    pub auto: Option<bool>,
}

impl Attempt {
    /// Whether the server accepted the attempt.
    pub fn accepted(&self) -> bool {
        self.status == Status::Accepted
    }

    /// Whether the server played it for the player after a timeout.
    pub fn is_auto(&self) -> bool {
        self.auto == Some(true)
    }
}

/// One Medieval duel as logged with a capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Duel {
    pub victim: u8,
    pub won: bool,
}

/// What a `move` asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MoveAction {
    /// A draughts move in PDN, as the client sent it (any text when rejected).
    Draughts(String),
    /// A Ludo token index (any integer when rejected).
    Token(i64),
    /// A Ludo pass.
    Pass,
}

/// `move` (draughts and Ludo).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Move {
    pub player: String,
    pub action: MoveAction,
    pub attempt: Attempt,
    pub duels: Option<Vec<Duel>>,
}

/// `roll` (Ludo).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Roll {
    pub player: String,
    pub n: i64,
    pub value: u8,
}

/// An object keyed by account, in the order written.
pub type ByAccount<T> = Vec<(String, T)>;

/// `deal` (Belote).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deal {
    pub deal: i64,
    pub dealer: String,
    pub hands: ByAccount<Vec<String>>,
    pub turned: String,
}

/// `bid` (Belote).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bid {
    pub player: String,
    pub deal: i64,
    pub round: u8,
    pub bid: String,
    pub attempt: Attempt,
}

/// `hands_completed` (Belote).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandsCompleted {
    pub deal: i64,
    pub trump: String,
    pub taker: String,
    pub hands: ByAccount<Vec<String>>,
}

/// `play` (Belote).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Play {
    pub player: String,
    pub deal: i64,
    pub card: String,
    pub announce: Option<Announce>,
    pub attempt: Attempt,
}

/// `deal_ended` (Belote).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DealEnded {
    pub deal: i64,
    pub points: ByAccount<i64>,
    pub totals: ByAccount<i64>,
    pub outcome: DealOutcome,
}

/// `timeout`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Timeout {
    pub player: String,
    pub elapsed_ms: i64,
    pub outcome: TimeoutOutcome,
}

/// `draw_offer` (draughts).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DrawOffer {
    pub player: String,
}

/// `draw_answer` (draughts).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DrawAnswer {
    pub player: String,
    pub accept: bool,
}

/// `left`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Left {
    pub player: String,
    pub reason: LeftReason,
}

/// `game_ended`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GameEnded {
    /// Draughts: `white`, `black` or `draw`; Ludo and Belote: the winning account.
    pub result: String,
    pub reason: EndReason,
    pub payouts: ByAccount<i64>,
    pub rake: i64,
}

/// `seed_revealed`. The seed is kept as written: its format is a fairness check, not a parse error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeedRevealed {
    pub seed: String,
}
