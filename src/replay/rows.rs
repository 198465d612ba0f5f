//! The tables replay writes: `findings`, `games`, `game_players`, `moves`, `departures`.

use crate::lake::functions::balance_edge;
use crate::lake::record::Ts;
use crate::row_table;

/// A move faster than this is "instant" (ms).
pub const INSTANT_MS: i64 = 250;
/// A "not your turn" this soon after the turn changed is a race, not tampering (ms).
pub const RACE_MS: i64 = 1000;
/// Attempt causes that only a client sending forged or impossible actions produces.
pub const TAMPER_CAUSES: [&str; 16] = [
    "not_own_piece",
    "wrong_direction",
    "skipped_capture",
    "not_majority",
    "no_such_path",
    "ambiguous_move",
    "no_such_token",
    "token_finished",
    "wrong_distance",
    "not_out_of_yard",
    "pass_while_movable",
    "did_not_follow_suit",
    "did_not_trump",
    "did_not_beat_trump",
    "card_not_in_hand",
    "invalid_bid",
];

row_table! {
    /// One row per finding of replay (player attempts, server integrity, fairness), partitioned by the UTC date the game started. Codes are listed in docs/findings.md.
    pub struct FindingRow in "findings" (partition Some("date"), sort ["game", "seq"], bloom ["game"]) {
        /// Game id (for Belote, the match id).
        game: String,
        /// Seq of the event the finding is about.
        seq: i64,
        /// Timestamp of that event (of the line before it for a seq no line has: a gap).
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
    pub struct GameRow in "games" (partition Some("date"), sort ["game"], bloom ["game", "commitment", "seed"]) {
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
        /// Accepted moves in the whole game, every player's (a quick loss has fewer than 12).
        game_moves: i64,
        /// Attempts by this player, accepted or rejected (rows of `moves`).
        attempts: i64,
        /// Rejected attempts whose cause only a tampered client produces ([`TAMPER_CAUSES`], or out of turn more than 1 s after the turn changed).
        tamper_attempts: i64,
        /// Their causes, as a bit set: bit k for [`TAMPER_CAUSES`]`[k]`, bit 16 for out of turn.
        tamper_mask: i64,
        /// The tamper attempts as `game:seq`, in seq order: the evidence the `manipulation_attempts` rule shows.
        tamper_refs: Vec<String>,
        /// Timestamp of the first tamper attempt.
        tamper_first: Option<Ts>,
        /// Timestamp of the last tamper attempt.
        tamper_last: Option<Ts>,
        /// Out-of-turn attempts within 1 s of a turn change, and rejected copies of the player's own last accepted action whenever they come (double submits and resends, not tampering).
        races: i64,
        /// Attempts the server rejected as malformed.
        malformed: i64,
        /// Attempts after the game was decided.
        late_attempts: i64,
        /// Timed moves: accepted, played by the player (not the server), not a pass.
        timed_moves: i64,
        /// Their think times summed (ms).
        think_sum_ms: f64,
        /// Their think times squared and summed (ms squared).
        think_sq_sum: f64,
        /// Timed moves under 250 ms.
        instant_moves: i64,
        /// Timed moves with a single legal move.
        forced_moves: i64,
        /// Think time of those forced moves, summed (ms).
        forced_think_ms: f64,
        /// Timed moves made while losing (balance below 0).
        losing_moves: i64,
        /// Of those, slow ones (at least 80 % of the clock limit).
        slow_losing_moves: i64,
        /// Timed moves made while not losing (balance 0 or more, or unknown).
        other_moves: i64,
        /// Of those, slow ones.
        slow_other_moves: i64,
        /// Of the timed moves made while not losing, those made before the player's first slow move while losing in this game (a player who keeps stalling once the game is level again does not raise its own baseline); null in rows an older Vigie wrote.
        other_moves_prestall: Option<i64>,
        /// Of those, slow ones (null in rows an older Vigie wrote).
        slow_other_moves_prestall: Option<i64>,
        /// The slow moves while losing as `game:seq`, in seq order: the evidence the `stalling` rule shows (null in rows an older Vigie wrote).
        slow_losing_refs: Option<Vec<String>>,
        /// Timestamp of the first slow move while losing.
        slow_losing_first: Option<Ts>,
        /// Timestamp of the last slow move while losing.
        slow_losing_last: Option<Ts>,
        /// The longest run of consecutive slow timed moves of this game at least one of which was made while losing (0 without any; null in rows an older Vigie wrote): a staller stalls move after move, an honest player's slow moves come one or two at a time.
        slow_run_losing: Option<i64>,
        /// The longest run of consecutive slow timed moves none of which was made while losing (0 without any; null in rows an older Vigie wrote).
        slow_run_other: Option<i64>,
        /// Coefficient of variation of the think times of this game (null under 2 timed moves).
        think_cv: Option<f64>,
        /// Median, over the windows of 14 consecutive timed moves of this game, of their coefficient of variation (null under 14).
        think_cv14: Option<f64>,
        /// Median think time of the timed moves (ms; null without any): a pause or two does not move it.
        think_median_ms: Option<f64>,
        /// Median absolute deviation of those think times from their median (ms; null without any).
        think_mad_ms: Option<f64>,
        /// The player's balance (see moves.balance) when they gave the game up, by leaving or by a timeout that ended their part; null when they did not, or when it is unknown.
        quit_balance: Option<f64>,
        /// How far behind the timed moves made while losing were: the edges of the balance grid (see the SQL function `balance_edge`) they fell on, ascending (null in rows an older Vigie wrote).
        losing_edges: Option<Vec<f64>>,
        /// Timed moves made while losing at each of those edges (null in rows an older Vigie wrote).
        losing_edge_moves: Option<Vec<i64>>,
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

/// A player's attempts in one game, summed: what the account features need of `moves`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MoveFacts {
    pub attempts: i64,
    pub tamper_attempts: i64,
    pub tamper_mask: i64,
    /// The tamper attempts as `game:seq`, in seq order.
    pub tamper_refs: Vec<String>,
    pub tamper_first: Option<Ts>,
    pub tamper_last: Option<Ts>,
    pub races: i64,
    pub malformed: i64,
    pub late_attempts: i64,
    pub timed_moves: i64,
    pub think_sum_ms: f64,
    pub think_sq_sum: f64,
    pub instant_moves: i64,
    pub forced_moves: i64,
    pub forced_think_ms: f64,
    pub losing_moves: i64,
    pub slow_losing_moves: i64,
    /// The timed moves made while losing per edge of the balance grid ([`balance_edge`]), ascending.
    pub losing_edges: Vec<(f64, i64)>,
    pub other_moves: i64,
    pub slow_other_moves: i64,
    pub other_moves_prestall: i64,
    pub slow_other_moves_prestall: i64,
    /// The slow moves while losing as `game:seq`, in seq order.
    pub slow_losing_refs: Vec<String>,
    pub slow_losing_first: Option<Ts>,
    pub slow_losing_last: Option<Ts>,
    /// The longest run of consecutive slow timed moves with at least one while losing.
    pub slow_run_losing: i64,
    /// The longest run of consecutive slow timed moves with none while losing.
    pub slow_run_other: i64,
    pub think_cv: Option<f64>,
    pub think_cv14: Option<f64>,
    pub think_median_ms: Option<f64>,
    pub think_mad_ms: Option<f64>,
}

/// Standard deviation (n - 1) over mean; `None` under two values or a zero mean.
fn cv(xs: &[f64]) -> Option<f64> {
    let n = xs.len() as f64;
    if xs.len() < 2 {
        return None;
    }
    let mean = xs.iter().sum::<f64>() / n;
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean != 0.0).then(|| var.sqrt() / mean)
}

/// The median of `xs` (mean of the middle two for an even count).
fn median(mut xs: Vec<f64>) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    xs.sort_by(f64::total_cmp);
    let m = xs.len() / 2;
    Some(if xs.len() % 2 == 1 {
        xs[m]
    } else {
        (xs[m - 1] + xs[m]) / 2.0
    })
}

impl MoveFacts {
    /// Counts a run of consecutive slow timed moves that ended: (its length, whether one of them
    /// was made while losing).
    fn close_run(&mut self, (len, losing): (i64, bool)) {
        let longest = if losing {
            &mut self.slow_run_losing
        } else {
            &mut self.slow_run_other
        };
        *longest = (*longest).max(len);
    }

    /// The facts of `account`'s attempts among `moves` (one game's, in seq order).
    pub fn of(moves: &[MoveRow], account: &str) -> MoveFacts {
        let mut f = MoveFacts::default();
        let mut think = Vec::new();
        // Whether the player has made a slow move while losing in this game yet.
        let mut stalled = false;
        // The current run of consecutive slow timed moves: its length, whether one was while losing.
        let mut run = (0i64, false);
        // The player's last accepted action: a rejected copy of it is a resend (a client that did
        // not see its action acknowledged sends it again, late or after the opponent's reply, and
        // the copy is then out of turn or no longer fits the board), not a forged action.
        let mut last_accepted: Option<&str> = None;
        for m in moves.iter().filter(|m| m.player == account) {
            f.attempts += 1;
            let cause = m.cause.as_deref();
            let since = m.since_turn_ms.unwrap_or(i64::MAX);
            let resent = !m.accepted && cause.is_some() && last_accepted == Some(m.text.as_str());
            if m.accepted {
                last_accepted = Some(m.text.as_str());
            }
            let kind = match cause {
                _ if resent => None,
                Some("out_of_turn") if since > RACE_MS => Some(16),
                Some(c) => TAMPER_CAUSES.iter().position(|t| *t == c),
                None => None,
            };
            if let (false, Some(k)) = (m.accepted, kind) {
                f.tamper_attempts += 1;
                f.tamper_mask |= 1 << k;
                f.tamper_refs.push(format!("{}:{}", m.game, m.seq));
                f.tamper_first = f.tamper_first.or(Some(m.ts));
                f.tamper_last = Some(m.ts);
            }
            f.races += i64::from(resent || (cause == Some("out_of_turn") && since <= RACE_MS));
            f.malformed += i64::from(m.server_reason.as_deref() == Some("malformed"));
            f.late_attempts += i64::from(cause == Some("after_end"));
            if !m.accepted || m.auto || m.action == "pass" {
                continue;
            }
            let t = m.think_ms as f64;
            think.push(t);
            f.timed_moves += 1;
            f.think_sum_ms += t;
            f.think_sq_sum += t * t;
            f.instant_moves += i64::from(m.think_ms < INSTANT_MS);
            if m.forced == Some(true) {
                f.forced_moves += 1;
                f.forced_think_ms += t;
            }
            let slow = m.limit_ms.is_some_and(|l| t >= l as f64 * 0.8);
            if slow {
                run = (run.0 + 1, run.1 || m.balance.is_some_and(|b| b < 0.0));
            } else {
                f.close_run(run);
                run = (0, false);
            }
            if let Some(b) = m.balance.filter(|b| *b < 0.0) {
                let edge = balance_edge(b);
                match f.losing_edges.binary_search_by(|(e, _)| e.total_cmp(&edge)) {
                    Ok(i) => f.losing_edges[i].1 += 1,
                    Err(i) => f.losing_edges.insert(i, (edge, 1)),
                }
                f.losing_moves += 1;
                f.slow_losing_moves += i64::from(slow);
                if slow {
                    f.slow_losing_refs.push(format!("{}:{}", m.game, m.seq));
                    f.slow_losing_first = f.slow_losing_first.or(Some(m.ts));
                    f.slow_losing_last = Some(m.ts);
                }
                stalled |= slow;
            } else {
                f.other_moves += 1;
                f.slow_other_moves += i64::from(slow);
                if !stalled {
                    f.other_moves_prestall += 1;
                    f.slow_other_moves_prestall += i64::from(slow);
                }
            }
        }
        f.close_run(run);
        f.think_cv = cv(&think);
        f.think_cv14 = median(think.windows(14).filter_map(cv).collect());
        f.think_median_ms = median(think.clone());
        f.think_mad_ms = f
            .think_median_ms
            .and_then(|m| median(think.iter().map(|t| (t - m).abs()).collect()));
        f
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lake::record::Ts;

    fn attempt(seq: i64, player: &str, think_ms: i64) -> MoveRow {
        MoveRow {
            game: "g".into(),
            seq,
            ts: Ts(seq * 1000),
            kind: "draughts10".into(),
            mode: "standard".into(),
            ply: seq,
            player: player.into(),
            action: "move".into(),
            text: "32-28".into(),
            accepted: true,
            server_reason: None,
            legal: true,
            cause: None,
            auto: false,
            think_ms,
            limit_ms: Some(10_000),
            turn_ms: None,
            on_turn: true,
            since_turn_ms: None,
            legal_count: Some(3),
            forced: Some(false),
            capture: None,
            captured: None,
            balance: Some(0.0),
            die: None,
            deal: None,
        }
    }

    #[test]
    fn move_facts_sum_a_players_attempts() {
        let mut moves: Vec<MoveRow> = (0..16).map(|i| attempt(i, "a", 1000 + 100 * i)).collect();
        moves.push(attempt(16, "b", 5));
        // A forged attempt, a race, a late one, a malformed one, an instant forced move while losing
        // and a slow one.
        let mut forged = attempt(17, "a", 800);
        (forged.accepted, forged.cause, forged.text) =
            (false, Some("not_own_piece".into()), "21-17".into());
        let mut race = attempt(18, "a", 800);
        (race.accepted, race.cause, race.since_turn_ms, race.text) =
            (false, Some("out_of_turn".into()), Some(300), "31-27".into());
        let mut late_turn = attempt(19, "a", 800);
        (
            late_turn.accepted,
            late_turn.cause,
            late_turn.since_turn_ms,
            late_turn.text,
        ) = (
            false,
            Some("out_of_turn".into()),
            Some(5000),
            "33-29".into(),
        );
        let mut malformed = attempt(20, "a", 800);
        (malformed.accepted, malformed.server_reason, malformed.text) =
            (false, Some("malformed".into()), "x".into());
        let mut instant = attempt(21, "a", 100);
        (instant.forced, instant.balance) = (Some(true), Some(-2.0));
        let mut slow = attempt(22, "a", 9000);
        slow.balance = Some(-1.0);
        moves.extend([forged, race, late_turn, malformed, instant, slow]);
        let f = MoveFacts::of(&moves, "a");
        assert_eq!(f.attempts, 22);
        assert_eq!((f.tamper_attempts, f.races, f.malformed), (2, 1, 1));
        // not_own_piece is TAMPER_CAUSES[0]; out of turn is bit 16.
        assert_eq!(f.tamper_mask, 1 | 1 << 16);
        assert_eq!(f.tamper_refs, ["g:17", "g:19"]);
        assert_eq!(
            (f.tamper_first, f.tamper_last),
            (Some(Ts(17_000)), Some(Ts(19_000)))
        );
        assert_eq!(f.timed_moves, 18);
        assert_eq!(
            (f.instant_moves, f.forced_moves, f.forced_think_ms),
            (1, 1, 100.0)
        );
        assert_eq!((f.losing_moves, f.slow_losing_moves), (2, 1));
        // The slow move while losing is the stalling rule's evidence; the instant one is not.
        assert_eq!(f.slow_losing_refs, ["g:22"]);
        assert_eq!(
            (f.slow_losing_first, f.slow_losing_last),
            (Some(Ts(22_000)), Some(Ts(22_000)))
        );
        assert_eq!((f.other_moves, f.slow_other_moves), (16, 0));
        let think: Vec<f64> = (0..16)
            .map(|i| 1000.0 + 100.0 * i as f64)
            .chain([100.0, 9000.0])
            .collect();
        assert_eq!(f.think_sum_ms, think.iter().sum::<f64>());
        assert!((f.think_cv.unwrap() - cv(&think).unwrap()).abs() < 1e-12);
        // Five windows of 14: their median is the third.
        let mut w: Vec<f64> = think.windows(14).filter_map(cv).collect();
        w.sort_by(f64::total_cmp);
        assert_eq!(f.think_cv14, Some(w[2]));
        // Median 1750 (between 1700 and 1800); deviations' median 450, whatever the 100 and the 9000.
        assert_eq!(
            (f.think_median_ms, f.think_mad_ms),
            (Some(1750.0), Some(450.0))
        );
        // Another player's rows are not counted; under 14 moves there is no cv14.
        let b = MoveFacts::of(&moves, "b");
        assert_eq!(
            (b.attempts, b.timed_moves, b.think_cv14, b.think_cv),
            (1, 1, None, None)
        );
        // Copies of the player's last accepted move ("32-28"), rejected late and after the
        // opponent's reply (no longer its piece): resends, not tampering.
        let mut resends = moves.clone();
        for (seq, cause) in [(23, "out_of_turn"), (24, "not_own_piece")] {
            let mut copy = attempt(seq, "a", 800);
            (copy.accepted, copy.cause, copy.since_turn_ms) =
                (false, Some(cause.into()), Some(1500));
            resends.push(copy);
        }
        let r = MoveFacts::of(&resends, "a");
        assert_eq!((r.tamper_attempts, r.races), (2, 3));
    }

    #[test]
    fn runs_of_slow_moves_are_told_apart_by_whether_one_was_while_losing() {
        // Two slow moves level, a quick one; then slow while losing, an automatic move (the
        // server's, not timed: the run goes on), slow level twice (one run of three with a move
        // while losing), a quick one, and a last slow move level (a run of one, closed at the end).
        let plan = [
            (9000, 0.0, false),
            (9000, 0.0, false),
            (1000, 0.0, false),
            (9000, -1.0, false),
            (1000, -1.0, true),
            (9000, 0.0, false),
            (8000, 1.0, false),
            (1000, 0.0, false),
            (9500, 2.0, false),
        ];
        let moves: Vec<MoveRow> = plan
            .iter()
            .zip(0..)
            .map(|(&(think, balance, auto), seq)| {
                let mut m = attempt(seq, "a", think);
                (m.balance, m.auto) = (Some(balance), auto);
                m
            })
            .collect();
        let f = MoveFacts::of(&moves, "a");
        assert_eq!((f.slow_run_losing, f.slow_run_other), (3, 2));
        // No slow move while losing: no such run; the longest without is the first two.
        let level = MoveFacts::of(&moves[..3], "a");
        assert_eq!((level.slow_run_losing, level.slow_run_other), (0, 2));
        // A game that ends in a slow run counts it: level, then one with a move while losing.
        assert_eq!(MoveFacts::of(&moves[..2], "a").slow_run_other, 2);
        assert_eq!(MoveFacts::of(&moves[3..7], "a").slow_run_losing, 3);
        // 7,999 ms of a 10 s clock is under 80 %: it ends the run.
        let mut short = moves.clone();
        short[6].think_ms = 7_999;
        let f = MoveFacts::of(&short, "a");
        assert_eq!((f.slow_run_losing, f.slow_run_other), (2, 2));
    }

    #[test]
    fn moves_after_a_slow_move_while_losing_leave_the_prestall_counts() {
        // Level and slow, level, losing and quick, losing and slow (the stall begins), then level
        // again: slow, quick, and losing and slow once more.
        let plan = [
            (9000, 0.0),
            (1000, 0.0),
            (1000, -1.0),
            (9000, -1.0),
            (9000, 0.0),
            (1000, 1.0),
            (9000, -2.0),
        ];
        let moves: Vec<MoveRow> = plan
            .iter()
            .zip(0..)
            .map(|(&(think, balance), seq)| {
                let mut m = attempt(seq, "a", think);
                m.balance = Some(balance);
                m
            })
            .collect();
        let f = MoveFacts::of(&moves, "a");
        assert_eq!((f.losing_moves, f.slow_losing_moves), (3, 2));
        assert_eq!((f.other_moves, f.slow_other_moves), (4, 2));
        assert_eq!(
            (f.other_moves_prestall, f.slow_other_moves_prestall),
            (2, 1)
        );
        // Without a slow move while losing, every move not losing counts.
        let calm = MoveFacts::of(&moves[..3], "a");
        assert_eq!(
            (calm.other_moves_prestall, calm.slow_other_moves_prestall),
            (calm.other_moves, calm.slow_other_moves)
        );
    }

    #[test]
    fn moves_while_losing_are_counted_per_edge_of_the_balance_grid() {
        // Behind by 1, 5, 7, 1, 3 and 40 (Ludo's scale), level, ahead; a rejected attempt and an
        // automatic move far behind do not count.
        let plan = [-1.0, -5.0, -7.0, -1.0, -3.0, -40.0, 0.0, 2.0, -9.0, -9.0];
        let mut moves: Vec<MoveRow> = plan
            .iter()
            .zip(0..)
            .map(|(&balance, seq)| {
                let mut m = attempt(seq, "a", 1000);
                m.balance = Some(balance);
                m
            })
            .collect();
        moves[8].accepted = false;
        moves[8].cause = Some("not_own_piece".into());
        moves[9].auto = true;
        let f = MoveFacts::of(&moves, "a");
        assert_eq!(f.losing_moves, 6);
        assert_eq!(
            f.losing_edges,
            [(-32.0, 1), (-6.0, 1), (-4.0, 1), (-3.0, 1), (-1.0, 2)]
        );
        assert_eq!(
            f.losing_edges.iter().map(|(_, n)| n).sum::<i64>(),
            f.losing_moves
        );
    }

    #[test]
    fn median_and_cv() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(vec![]), None);
        assert_eq!(cv(&[5.0]), None);
        assert!((cv(&[1.0, 3.0]).unwrap() - 2f64.sqrt() / 2.0).abs() < 1e-12);
    }
}
