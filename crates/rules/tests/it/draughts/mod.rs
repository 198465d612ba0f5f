//! Draughts engine against the shared fixtures, sample server logs and properties.

mod fixtures;
mod game;
mod illegal;
mod perft;
mod props;
mod replay;
mod rules;
