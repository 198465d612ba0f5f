//! How the Ludo engine names a player: its place in the `players` list of `game_started`.

/// A player: their index in the `players` list (0 plays first).
pub type Player = usize;
