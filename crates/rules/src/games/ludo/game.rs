//! The Ludo turn state machine.
//!
//! ## Turn structure
//! The expected action is always one of: a roll by the current player, a move
//! (or, when nothing can move, a pass) by the current player with the last
//! roll, or nothing (game over). Every accepted roll is followed by exactly one
//! accepted move or pass of the same player, except a third six in a row when
//! `three_sixes` is on: that roll is not played and the turn passes.
//!
//! ## Bonus rolls
//! After the move (or pass) the same player rolls again when at least one of:
//! `bonus_on_six` and the value was 6 (even after a pass), `bonus_on_capture`
//! and the move captured, `bonus_on_finish` and the token finished. Several at
//! once give one extra roll. Otherwise the turn passes to the next player still
//! in the game, in seat order. Sixes in a row are counted within one turn
//! (consecutive rolls of the same player); any other value resets the count,
//! and so does the turn passing.
//!
//! ## Timeouts (`max_timeouts` consecutive timeouts forfeit)
//! Each player has a counter of consecutive timeouts. A timeout increments it;
//! when it reaches `max_timeouts` that timeout forfeits the player (nothing is
//! played for them, their tokens leave the board). Otherwise the server acts:
//! on a roll it rolls (the engine then expects that roll, [`Game::roll`]), on a
//! move it moves the lowest-numbered movable token, with no legal move it
//! passes ([`Game::timeout`] applies those). The counter is reset to 0 only by
//! an action the player takes themselves: a roll that does not follow a
//! timeout, or an accepted move that is not the server's automatic one. Passes
//! are recorded by the server (not the player's action) and rejected attempts
//! are not accepted actions: neither resets the counter. So "consecutive"
//! means: with no action of the player's own in between, across turns.
//!
//! ## Progress facts
//! [`Game::progress`] sums p over a player's tokens with a token in the yard
//! counting -1 (one step before p = 0) and a finished token 56; removed
//! tokens (forfeit, departure) count -1 too.

use super::error::{LudoError, SeatsError};
pub use super::player::Player;
use super::variant::{FINISHED, LAST_TRACK, Seat, Variant};

/// Where a token is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TokenPos {
    /// Not yet in play (or sent back by a capture).
    Yard,
    /// Progress p: 0-50 on the track, 51-55 in the home column, 56 finished.
    At(u8),
    /// Off the board with its player (forfeit or departure).
    Removed,
}

impl TokenPos {
    /// Progress for the analytics: yard and removed count -1.
    pub fn progress(self) -> i32 {
        match self {
            TokenPos::At(p) => i32::from(p),
            TokenPos::Yard | TokenPos::Removed => -1,
        }
    }
}

/// Whether a player is still in the game.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PlayerStatus {
    /// Still playing.
    Playing,
    /// Forfeited by `max_timeouts` consecutive timeouts.
    Forfeited,
    /// Left the game.
    Left,
}

/// How the game was won.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EndReason {
    /// The winner finished all their tokens.
    Finished,
    /// Every other player forfeited or left.
    LastPlayerStanding,
}

/// What the game expects next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Expected {
    /// A roll by this player.
    Roll(Player),
    /// A token move by this player with this die value.
    Move {
        /// The player.
        player: Player,
        /// The die value to play.
        value: u8,
    },
    /// No token can move: a pass is expected.
    Pass {
        /// The player.
        player: Player,
        /// The die value that cannot be played.
        value: u8,
    },
    /// The game is over.
    Nothing,
}

/// A token sent back to its yard.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Capture {
    /// Owner of the captured token.
    pub player: Player,
    /// Its index.
    pub token: u8,
    /// The absolute square where it was captured.
    pub square: u8,
}

/// What an accepted roll leads to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RollOutcome {
    /// The player must move one of these tokens.
    Move {
        /// Movable tokens, ascending.
        legal: Vec<u8>,
    },
    /// Nothing can move: a pass is expected.
    Pass,
    /// A third six in a row: not played, the turn passed to `next`.
    ThirdSix {
        /// The next player to roll.
        next: Player,
    },
}

/// An accepted move.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MoveOutcome {
    /// Who moved.
    pub player: Player,
    /// Which token.
    pub token: u8,
    /// The die value.
    pub value: u8,
    /// Where the token was.
    pub from: TokenPos,
    /// Its new progress.
    pub to: u8,
    /// Opponent tokens sent back to their yard.
    pub captures: Vec<Capture>,
    /// Whether the token finished (p = 56).
    pub finished: bool,
    /// Whether the player rolls again.
    pub extra_roll: bool,
    /// Whether the server played it after a timeout.
    pub auto: bool,
    /// The winner, if this move won the game.
    pub winner: Option<Player>,
    /// Who rolls next (`None` when the game is over).
    pub next: Option<Player>,
}

/// An accepted pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PassOutcome {
    /// Who passed.
    pub player: Player,
    /// The unplayable die value.
    pub value: u8,
    /// Whether the player rolls again (a 6 with `bonus_on_six`).
    pub extra_roll: bool,
    /// Who rolls next.
    pub next: Player,
}

/// What a timeout leads to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TimeoutOutcome {
    /// The server rolls for the player: [`Game::roll`] must follow (for the
    /// same player); that roll does not reset the timeout counter.
    AutoRoll,
    /// The server moved the lowest-numbered movable token (already applied).
    AutoMove(MoveOutcome),
    /// The server passed (already applied).
    AutoPass(PassOutcome),
    /// The player reached `max_timeouts` consecutive timeouts and forfeits.
    Forfeit {
        /// The winner if only one player remains.
        winner: Option<Player>,
        /// Who rolls next (`None` when the game is over).
        next: Option<Player>,
    },
}

/// A departure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaveOutcome {
    /// The winner if only one player remains.
    pub winner: Option<Player>,
    /// Who is expected to roll next (`None` when the game is over).
    pub next: Option<Player>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Roll,
    Move(u8),
    Over,
}

/// A Ludo game in progress.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Game {
    variant: Variant,
    seats: Vec<Seat>,
    tokens: Vec<Vec<TokenPos>>,
    status: Vec<PlayerStatus>,
    timeouts: Vec<u32>,
    current: Player,
    phase: Phase,
    sixes: u8,
    auto_roll_pending: bool,
    rolls: u64,
    winner: Option<(Player, EndReason)>,
}

impl Game {
    /// A new game. `seats` lists the players' seats in the order of the
    /// `players` list: the first listed plays first, then seat order. There
    /// must be `variant.players` distinct seats; two-player games use red and
    /// yellow.
    pub fn new(variant: Variant, seats: &[Seat]) -> Result<Game, LudoError> {
        variant.validate()?;
        if seats.len() != usize::from(variant.players) {
            return Err(SeatsError::Count {
                expected: variant.players,
                got: seats.len(),
            }
            .into());
        }
        for (i, s) in seats.iter().enumerate() {
            if seats[..i].contains(s) {
                return Err(SeatsError::Duplicate(*s).into());
            }
            if variant.players == 2 && !matches!(s, Seat::Red | Seat::Yellow) {
                return Err(SeatsError::TwoPlayerSeat(*s).into());
            }
        }
        let n = seats.len();
        let tokens = vec![vec![TokenPos::Yard; usize::from(variant.tokens)]; n];
        Ok(Game {
            variant,
            seats: seats.to_vec(),
            tokens,
            status: vec![PlayerStatus::Playing; n],
            timeouts: vec![0; n],
            current: 0,
            phase: Phase::Roll,
            sixes: 0,
            auto_roll_pending: false,
            rolls: 0,
            winner: None,
        })
    }

    /// A game with the usual seating: red then yellow for two players, red,
    /// green, yellow, blue for four.
    pub fn with_default_seats(variant: Variant) -> Result<Game, LudoError> {
        let seats: &[Seat] = if variant.players == 2 {
            &[Seat::Red, Seat::Yellow]
        } else {
            &Seat::ALL
        };
        Game::new(variant, seats)
    }

    // ----- read access -----

    /// The variant.
    pub fn variant(&self) -> &Variant {
        &self.variant
    }

    /// Number of players.
    pub fn players(&self) -> usize {
        self.seats.len()
    }

    /// A player's seat.
    pub fn seat(&self, player: Player) -> Option<Seat> {
        self.seats.get(player).copied()
    }

    /// A player's tokens.
    pub fn tokens(&self, player: Player) -> Option<&[TokenPos]> {
        self.tokens.get(player).map(Vec::as_slice)
    }

    /// A player's status.
    pub fn status(&self, player: Player) -> Option<PlayerStatus> {
        self.status.get(player).copied()
    }

    /// A player's count of consecutive timeouts.
    pub fn timeouts(&self, player: Player) -> Option<u32> {
        self.timeouts.get(player).copied()
    }

    /// The player whose turn it is (the last one, once the game is over).
    pub fn current(&self) -> Player {
        self.current
    }

    /// Sixes rolled in a row in the current turn (at most 255: without the
    /// three-sixes rule the count stops there).
    pub fn sixes_in_row(&self) -> u8 {
        self.sixes
    }

    /// Rolls accepted so far (the number `n` of the next roll).
    pub fn rolls(&self) -> u64 {
        self.rolls
    }

    /// The winner and how, once the game is over.
    pub fn winner(&self) -> Option<(Player, EndReason)> {
        self.winner
    }

    /// Whether the game is over.
    pub fn is_over(&self) -> bool {
        self.phase == Phase::Over
    }

    /// What the game expects next.
    pub fn expected(&self) -> Expected {
        match self.phase {
            Phase::Over => Expected::Nothing,
            Phase::Roll => Expected::Roll(self.current),
            Phase::Move(value) => {
                if self.legal_tokens_for(self.current, value).is_empty() {
                    Expected::Pass {
                        player: self.current,
                        value,
                    }
                } else {
                    Expected::Move {
                        player: self.current,
                        value,
                    }
                }
            }
        }
    }

    /// The tokens the current player may move with `value`, ascending.
    pub fn legal_tokens(&self, value: u8) -> Vec<u8> {
        self.legal_tokens_for(self.current, value)
    }

    /// The tokens `player` could move with `value`, ascending (empty for an
    /// unknown player or one no longer in the game).
    pub fn legal_tokens_for(&self, player: Player, value: u8) -> Vec<u8> {
        if self.status.get(player) != Some(&PlayerStatus::Playing) {
            return Vec::new();
        }
        (0..self.variant.tokens)
            .filter(|&t| self.destination(player, t, value).is_ok())
            .collect()
    }

    /// The token the server moves on a timeout in the move phase: the
    /// lowest-numbered movable one (`None` outside the move phase or when
    /// nothing can move).
    pub fn auto_move_choice(&self) -> Option<u8> {
        match self.phase {
            Phase::Move(value) => self.legal_tokens(value).first().copied(),
            _ => None,
        }
    }

    /// Sum of the progress of a player's tokens (yard and removed: -1 each,
    /// finished: 56).
    pub fn progress(&self, player: Player) -> Option<i32> {
        self.tokens
            .get(player)
            .map(|ts| ts.iter().map(|t| t.progress()).sum())
    }

    /// `progress(player)` minus the best progress among the other players
    /// still in the game (`None` if there is none, or for an unknown player).
    pub fn progress_balance(&self, player: Player) -> Option<i32> {
        let own = self.progress(player)?;
        let best = (0..self.players())
            .filter(|&p| p != player && self.status[p] == PlayerStatus::Playing)
            .filter_map(|p| self.progress(p))
            .max()?;
        Some(own - best)
    }

    /// Tokens of a player that have finished.
    pub fn finished_tokens(&self, player: Player) -> usize {
        self.tokens.get(player).map_or(0, |ts| {
            ts.iter().filter(|t| **t == TokenPos::At(FINISHED)).count()
        })
    }

    // ----- classifier -----

    fn check_actor(&self, player: Player) -> Result<(), LudoError> {
        if self.phase == Phase::Over {
            return Err(LudoError::GameOver);
        }
        match self.status.get(player) {
            None => return Err(LudoError::UnknownPlayer(player)),
            Some(PlayerStatus::Playing) => {}
            Some(_) => return Err(LudoError::PlayerOut(player)),
        }
        if player != self.current {
            return Err(LudoError::NotYourTurn {
                player,
                expected: self.current,
            });
        }
        Ok(())
    }

    /// The progress a token reaches with `value`, or why it cannot move.
    fn destination(&self, player: Player, token: u8, value: u8) -> Result<u8, LudoError> {
        if !(1..=6).contains(&value) {
            return Err(LudoError::InvalidDieValue(value));
        }
        let tokens = self.variant.tokens;
        let pos = self
            .tokens
            .get(player)
            .and_then(|ts| ts.get(usize::from(token)))
            .ok_or(LudoError::NoSuchToken { token, tokens })?;
        match *pos {
            TokenPos::Removed => Err(LudoError::PlayerOut(player)),
            TokenPos::Yard => {
                if self.variant.exits_on(value) {
                    Ok(0)
                } else {
                    Err(LudoError::NotAllowedOutOfYard { token, value })
                }
            }
            TokenPos::At(p) if p >= FINISHED => Err(LudoError::TokenFinished(token)),
            TokenPos::At(p) => {
                let to = p + value;
                if to > FINISHED {
                    Err(LudoError::WrongDistance {
                        token,
                        from: p,
                        value,
                    })
                } else {
                    Ok(to)
                }
            }
        }
    }

    /// Classifies a roll attempt: `Ok` if [`Game::roll`] would accept it.
    pub fn classify_roll(&self, player: Player, value: u8) -> Result<(), LudoError> {
        self.check_actor(player)?;
        if !(1..=6).contains(&value) {
            return Err(LudoError::InvalidDieValue(value));
        }
        match self.phase {
            Phase::Roll => Ok(()),
            _ => Err(LudoError::ExpectedMove(player)),
        }
    }

    /// Classifies a move attempt: `Ok(new progress)` if [`Game::move_token`]
    /// would accept it, else the cause (game over, unknown or departed player,
    /// not their turn, a roll expected, then for the token: `NoSuchToken` for
    /// an index out of range, `TokenFinished` for a finished token,
    /// `NotAllowedOutOfYard`, `WrongDistance`).
    pub fn classify_move(&self, player: Player, token: u8) -> Result<u8, LudoError> {
        self.check_actor(player)?;
        let Phase::Move(value) = self.phase else {
            return Err(LudoError::ExpectedRoll(player));
        };
        self.destination(player, token, value)
    }

    /// Classifies a pass: `Ok` if [`Game::pass`] would accept it
    /// (`PassWhileMovable` when a token can move).
    pub fn classify_pass(&self, player: Player) -> Result<(), LudoError> {
        self.check_actor(player)?;
        let Phase::Move(value) = self.phase else {
            return Err(LudoError::ExpectedRoll(player));
        };
        let legal = self.legal_tokens(value);
        if legal.is_empty() {
            Ok(())
        } else {
            Err(LudoError::PassWhileMovable { legal })
        }
    }

    // ----- actions -----

    /// A roll by `player` (the value comes from the fairness derivation).
    pub fn roll(&mut self, player: Player, value: u8) -> Result<RollOutcome, LudoError> {
        self.classify_roll(player, value)?;
        if self.auto_roll_pending {
            self.auto_roll_pending = false;
        } else {
            self.timeouts[player] = 0;
        }
        self.rolls += 1;
        if value == 6 {
            // Without the three-sixes rule a log can hold any number of sixes in a row.
            self.sixes = self.sixes.saturating_add(1);
        } else {
            self.sixes = 0;
        }
        if value == 6 && self.variant.three_sixes && self.sixes >= 3 {
            let next = self.pass_turn();
            return Ok(RollOutcome::ThirdSix { next });
        }
        self.phase = Phase::Move(value);
        let legal = self.legal_tokens(value);
        Ok(if legal.is_empty() {
            RollOutcome::Pass
        } else {
            RollOutcome::Move { legal }
        })
    }

    /// A token move by `player` with the last roll.
    pub fn move_token(&mut self, player: Player, token: u8) -> Result<MoveOutcome, LudoError> {
        let to = self.classify_move(player, token)?;
        Ok(self.apply_move(player, token, to, false))
    }

    /// A pass by `player` (only when nothing can move).
    pub fn pass(&mut self, player: Player) -> Result<PassOutcome, LudoError> {
        self.classify_pass(player)?;
        Ok(self.apply_pass(player))
    }

    /// A timeout of `player`, who was expected to act. See the module
    /// documentation for the counter.
    pub fn timeout(&mut self, player: Player) -> Result<TimeoutOutcome, LudoError> {
        self.check_actor(player)?;
        self.timeouts[player] += 1;
        if self.timeouts[player] >= self.variant.max_timeouts {
            let (winner, next) = self.remove_player(player, PlayerStatus::Forfeited);
            return Ok(TimeoutOutcome::Forfeit { winner, next });
        }
        match self.phase {
            Phase::Roll => {
                self.auto_roll_pending = true;
                Ok(TimeoutOutcome::AutoRoll)
            }
            Phase::Move(value) => match self.legal_tokens(value).first() {
                Some(&token) => {
                    let to = self.destination(player, token, value)?;
                    Ok(TimeoutOutcome::AutoMove(
                        self.apply_move(player, token, to, true),
                    ))
                }
                None => Ok(TimeoutOutcome::AutoPass(self.apply_pass(player))),
            },
            Phase::Over => Err(LudoError::GameOver),
        }
    }

    /// `player` leaves the game (at any time, whoever's turn it is): they
    /// forfeit and their tokens leave the board.
    pub fn leave(&mut self, player: Player) -> Result<LeaveOutcome, LudoError> {
        if self.phase == Phase::Over {
            return Err(LudoError::GameOver);
        }
        match self.status.get(player) {
            None => return Err(LudoError::UnknownPlayer(player)),
            Some(PlayerStatus::Playing) => {}
            Some(_) => return Err(LudoError::PlayerOut(player)),
        }
        let (winner, next) = self.remove_player(player, PlayerStatus::Left);
        Ok(LeaveOutcome { winner, next })
    }

    // ----- internals -----

    fn apply_move(&mut self, player: Player, token: u8, to: u8, auto: bool) -> MoveOutcome {
        let value = match self.phase {
            Phase::Move(v) => v,
            _ => 0,
        };
        if !auto {
            self.timeouts[player] = 0;
        }
        let t = usize::from(token);
        let from = self.tokens[player][t];
        self.tokens[player][t] = TokenPos::At(to);
        let mut captures = Vec::new();
        if to <= LAST_TRACK {
            let square = self.seats[player].square(to);
            if !self.variant.is_safe(square) {
                for other in 0..self.players() {
                    if other == player || self.status[other] != PlayerStatus::Playing {
                        continue;
                    }
                    let seat = self.seats[other];
                    for (ot, pos) in self.tokens[other].iter_mut().enumerate() {
                        if let TokenPos::At(op) = *pos
                            && op <= LAST_TRACK
                            && seat.square(op) == square
                        {
                            *pos = TokenPos::Yard;
                            captures.push(Capture {
                                player: other,
                                token: ot as u8,
                                square,
                            });
                        }
                    }
                }
            }
        }
        let finished = to == FINISHED;
        if finished
            && self.tokens[player]
                .iter()
                .all(|p| *p == TokenPos::At(FINISHED))
        {
            self.end(player, EndReason::Finished);
            return MoveOutcome {
                player,
                token,
                value,
                from,
                to,
                captures,
                finished,
                extra_roll: false,
                auto,
                winner: Some(player),
                next: None,
            };
        }
        let extra_roll = (self.variant.bonus_on_six && value == 6)
            || (self.variant.bonus_on_capture && !captures.is_empty())
            || (self.variant.bonus_on_finish && finished);
        let next = if extra_roll {
            self.phase = Phase::Roll;
            player
        } else {
            self.pass_turn()
        };
        MoveOutcome {
            player,
            token,
            value,
            from,
            to,
            captures,
            finished,
            extra_roll,
            auto,
            winner: None,
            next: Some(next),
        }
    }

    fn apply_pass(&mut self, player: Player) -> PassOutcome {
        let value = match self.phase {
            Phase::Move(v) => v,
            _ => 0,
        };
        let extra_roll = self.variant.bonus_on_six && value == 6;
        let next = if extra_roll {
            self.phase = Phase::Roll;
            player
        } else {
            self.pass_turn()
        };
        PassOutcome {
            player,
            value,
            extra_roll,
            next,
        }
    }

    /// The next player still in the game after `player`, in seat order.
    fn next_after(&self, player: Player) -> Player {
        let mut seat = self.seats[player];
        for _ in 0..4 {
            seat = seat.next();
            if let Some(p) = self.seats.iter().position(|s| *s == seat)
                && self.status[p] == PlayerStatus::Playing
            {
                return p;
            }
        }
        player
    }

    /// Ends the current turn: the next player rolls.
    fn pass_turn(&mut self) -> Player {
        self.current = self.next_after(self.current);
        self.phase = Phase::Roll;
        self.sixes = 0;
        self.auto_roll_pending = false;
        self.current
    }

    fn end(&mut self, winner: Player, reason: EndReason) {
        self.winner = Some((winner, reason));
        self.phase = Phase::Over;
    }

    /// Removes a player (forfeit or departure); returns (winner, next roller).
    fn remove_player(
        &mut self,
        player: Player,
        status: PlayerStatus,
    ) -> (Option<Player>, Option<Player>) {
        self.status[player] = status;
        for t in &mut self.tokens[player] {
            *t = TokenPos::Removed;
        }
        let remaining: Vec<Player> = (0..self.players())
            .filter(|&p| self.status[p] == PlayerStatus::Playing)
            .collect();
        if let [last] = remaining.as_slice() {
            let last = *last;
            self.current = last;
            self.end(last, EndReason::LastPlayerStanding);
            return (Some(last), None);
        }
        if player == self.current {
            self.pass_turn();
        }
        (None, Some(self.current))
    }
}

#[cfg(test)]
impl Game {
    /// Test setup: places a player's tokens.
    pub(crate) fn set_tokens(&mut self, player: Player, positions: &[TokenPos]) {
        self.tokens[player] = positions.to_vec();
    }
}
