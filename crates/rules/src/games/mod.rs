//! Rules engines: pure state machines with no I/O (draughts, Ludo, Belote).
pub mod belote;
pub mod draughts;
pub mod ludo;
