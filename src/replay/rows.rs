//! The tables replay writes: `findings`, `games`, `game_players`, `moves`, `departures`.

use crate::lake::record::Ts;
use crate::row_table;

row_table! {
    /// One row per finding of replay (player attempts, server integrity, fairness), partitioned by the UTC date the game started. Codes are listed in docs/findings.md.
    pub struct FindingRow in "findings" (partition Some("date"), sort ["game", "seq"], bloom ["game"]) {
        /// Game id (for Belote, the match id).
        game: String,
        /// Seq of the event the finding is about.
        seq: i64,
        /// Timestamp of that event.
        ts: Option<Ts>,
        /// Game kind.
        kind: Option<String>,
        /// Game mode.
        mode: Option<String>,
        /// The account involved, when one is.
        account: Option<String>,
        /// Stable code (docs/findings.md).
        code: String,
        /// attempt, integrity or fairness.
        category: String,
        /// info, low, medium, high or critical.
        severity: String,
        /// What the rules or the derivation give.
        expected: Option<String>,
        /// What the log says.
        logged: Option<String>,
        /// A sentence for reviewers.
        message: String,
        /// Facts behind the finding (JSON object), e.g. `since_turn_ms` for out-of-turn attempts.
        facts: Option<String>,
    }
}

row_table! {
    /// One row per game (Belote: per match) as logged and as replayed, partitioned by the UTC date it started.
    pub struct GameRow in "games" (partition Some("date"), sort ["game"], bloom ["game"]) {
        /// Game id.
        game: String,
        /// draughts10, draughts8, ludo or belote.
        kind: String,
        /// standard or medieval.
        mode: String,
        /// Ludo variant name; Belote `target=N`; null for draughts.
        variant: Option<String>,
        /// Rated game.
        rated: bool,
        /// Stake per player.
        stake: i64,
        /// Currency.
        currency: String,
        /// Accounts in the order of `players`.
        players: Vec<String>,
        /// Number of players.
        n_players: i64,
        /// Sum of stakes.
        pot: i64,
        /// Start (game_started ts).
        started_at: Ts,
        /// End (game_ended ts), null while running.
        ended_at: Option<Ts>,
        /// Last event ts.
        last_ts: Ts,
        /// ended_at (or last_ts) minus started_at.
        duration_ms: i64,
        /// Events in the game.
        events: i64,
        /// Accepted moves, bids and plays.
        moves: i64,
        /// Rejected attempts.
        rejected: i64,
        /// Timeouts.
        timeouts: i64,
        /// Departures (left).
        departures: i64,
        /// Whether game_ended was logged.
        finished: bool,
        /// Whether the game is over for replay: ended (and its seed revealed where one is due), or abandoned.
        closed: bool,
        /// Result as logged (white, black, draw or an account).
        result_logged: Option<String>,
        /// End reason as logged.
        reason_logged: Option<String>,
        /// Result as replayed.
        result_replayed: Option<String>,
        /// End reason as replayed.
        reason_replayed: Option<String>,
        /// Winning account as replayed (null on a draw or while running).
        winner: Option<String>,
        /// Rake as logged.
        rake: Option<i64>,
        /// Payouts as logged (JSON object).
        payouts: Option<String>,
        /// Seed commitment (Ludo, Belote, Medieval).
        commitment: Option<String>,
        /// Revealed seed.
        seed: Option<String>,
        /// Seq of seed_revealed.
        reveal_seq: Option<i64>,
        /// pass, fail, pending (seed not revealed yet) or n/a (no randomness).
        fairness: String,
        /// Fairness findings.
        fairness_findings: i64,
        /// Integrity findings.
        integrity_findings: i64,
        /// Attempt findings (rejected attempts classified).
        attempt_findings: i64,
        /// True when replay lost track of the position after a server fault and stopped judging moves.
        desynced: bool,
    }
}

row_table! {
    /// One row per (game, player): seat, hashes, outcome and stake flow, partitioned by the UTC date the game started.
    pub struct PlayerRow in "game_players" (partition Some("date"), sort ["game", "account"], bloom ["game", "account"]) {
        /// Game id.
        game: String,
        /// Account.
        account: String,
        /// Seat (white/black, red/green/yellow/blue, p1/p2).
        seat: String,
        /// Position in `players` (0 first).
        position: i64,
        /// IP hash.
        ip: String,
        /// Device hash.
        device: String,
        /// Game kind.
        kind: String,
        /// Game mode.
        mode: String,
        /// Rated game.
        rated: bool,
        /// Game start.
        started_at: Ts,
        /// Game duration so far.
        duration_ms: i64,
        /// win, loss, draw, or null while running (as replayed, else as logged).
        outcome: Option<String>,
        /// Stake paid.
        stake: i64,
        /// Payout received (as logged), null while running.
        payout: Option<i64>,
        /// payout - stake.
        net: Option<i64>,
        /// The opponent in two-player games; null with four players.
        opponent: Option<String>,
        /// Accepted moves, bids and plays by this player.
        moves: i64,
        /// Rejected attempts by this player.
        rejected: i64,
        /// Timeouts of this player.
        timeouts: i64,
        /// Whether this player left the game.
        left: bool,
        /// How the game ended for this player: finished, left, timeout, or the logged end reason.
        end_reason: Option<String>,
    }
}

row_table! {
    /// One row per attempt (draughts move, Ludo move or pass, Belote bid or play) with our engine's verdict and the position facts behaviour detection needs.
    pub struct MoveRow in "moves" (partition Some("date"), sort ["game", "seq"], bloom ["game"]) {
        /// Game id.
        game: String,
        /// Seq of the attempt.
        seq: i64,
        /// Timestamp.
        ts: Ts,
        /// Game kind.
        kind: String,
        /// Game mode.
        mode: String,
        /// Accepted moves before this attempt.
        ply: i64,
        /// Account.
        player: String,
        /// move, pass, bid or play.
        action: String,
        /// The move, token, bid or card as sent.
        text: String,
        /// Server verdict.
        accepted: bool,
        /// Server rejection reason.
        server_reason: Option<String>,
        /// Our verdict: whether the attempt was legal.
        legal: bool,
        /// Why it was not (finding code), null when legal.
        cause: Option<String>,
        /// Played by the server after a timeout.
        auto: bool,
        /// Think time as logged.
        think_ms: i64,
        /// Clock limit for this action.
        limit_ms: Option<i64>,
        /// ts minus the start of the player's turn.
        turn_ms: Option<i64>,
        /// Whether it was this player's turn.
        on_turn: bool,
        /// ms since the turn last changed hands.
        since_turn_ms: Option<i64>,
        /// Number of legal moves (draughts moves, movable Ludo tokens, legal Belote cards) in the position.
        legal_count: Option<i64>,
        /// Only one legal move.
        forced: Option<bool>,
        /// The move captures (draughts, Ludo).
        capture: Option<bool>,
        /// Pieces or tokens captured.
        captured: Option<i64>,
        /// Before the move, from the mover's point of view: draughts material (men 1, kings 3) difference; Ludo progress minus the best opponent's; Belote match totals difference.
        balance: Option<f64>,
        /// Ludo die value.
        die: Option<i64>,
        /// Belote deal number.
        deal: Option<i64>,
    }
}

row_table! {
    /// One row per departure (left) or timeout, with the game state at that moment.
    pub struct DepartureRow in "departures" (partition Some("date"), sort ["game", "seq"], bloom ["game"]) {
        /// Game id.
        game: String,
        /// Seq of the left or timeout event.
        seq: i64,
        /// Timestamp.
        ts: Ts,
        /// Game kind.
        kind: String,
        /// Game mode.
        mode: String,
        /// Account.
        player: String,
        /// left or timeout.
        event: String,
        /// Left reason (page_closed, disconnected, resigned) or timeout outcome (loss, auto, forfeit).
        reason: String,
        /// Accepted moves before it.
        ply: i64,
        /// The player's balance (see moves.balance) at that moment.
        balance: Option<f64>,
        /// Whether the player was losing (balance < 0).
        losing: Option<bool>,
        /// Whether it was the player's turn.
        on_turn: bool,
        /// Timeout: elapsed_ms as logged; left: ms since the player's turn began (null when not their turn).
        elapsed_ms: Option<i64>,
        /// Clock limit.
        limit_ms: Option<i64>,
        /// Consecutive timeouts of this player, this one included.
        consecutive: Option<i64>,
        /// Whether this event ended the game (or the player's part in it).
        decisive: bool,
        /// The winner it gave (account), when decisive.
        beneficiary: Option<String>,
    }
}
