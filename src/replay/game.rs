//! Replay of one game: the checks every kind shares (sequence, chain, end, payouts) around a kind's rules replayer.

use std::collections::BTreeMap;

use sha2::{Digest, Sha256};

use super::finding::{Code, Finding};
use super::rows::{GameRow, MoveFacts, PlayerRow};
use super::{belote, draughts, fairness, ludo};
use crate::lake::hex;
use crate::lake::record::Ts;
use crate::log::{Body, Event, Kind, RejectReason, Status, syntax};

pub use super::context::{
    Context, Cx, Decision, Draw, DrawCounts, GameReplay, Logged, NEVER_ENDED_AFTER_MS, PlayerStats,
    Rules,
};

/// Replays one game from its lines (any order; duplicates and gaps are findings).
pub fn replay_game(game: &str, mut lines: Vec<Logged>, ctx: &Context) -> GameReplay {
    lines.sort_by_key(Logged::seq);
    let mut findings = Vec::new();
    let lines = sequence_checks(game, lines, &mut findings);
    let mut r = replay_lines(game, &lines, findings, ctx);
    r.times = times_of(&lines, &r);
    r
}

/// The logged times the replay's findings need: of the first line, of the seed reveal and of the
/// event each finding is about (a seq no line has, a gap, takes the time of the line before it).
fn times_of(lines: &[Logged], r: &GameReplay) -> BTreeMap<i64, i64> {
    let at = |seq: i64| {
        let i = lines.partition_point(|l| l.seq() <= seq);
        lines.get(i.saturating_sub(1)).map(|l| (seq, l.ts()))
    };
    let first = lines.first().map(Logged::seq);
    let reveal = r.game.as_ref().and_then(|g| g.reveal_seq);
    first
        .into_iter()
        .chain(reveal)
        .chain(r.findings.iter().map(|f| f.seq))
        .filter_map(at)
        .collect()
}

/// [`replay_game`] after the sequence checks: `lines` in seq order, one per seq.
fn replay_lines(
    game: &str,
    lines: &[Logged],
    mut findings: Vec<Finding>,
    ctx: &Context,
) -> GameReplay {
    let Some(first) = lines.first() else {
        return GameReplay {
            findings,
            ..GameReplay::default()
        };
    };
    let date = syntax::date_of(first.ts());
    let Body::GameStarted(start) = &first.event.body else {
        let mut f = Finding::new(
            game,
            first.seq(),
            Code::MissingStart,
            "the game's events have no game_started (seq 0)",
        );
        f.expected("game_started at seq 0").logged(format!(
            "{} at seq {}",
            first.event.event_type(),
            first.seq()
        ));
        findings.push(f);
        return GameReplay {
            findings,
            date,
            ..GameReplay::default()
        };
    };
    let mut cx = Cx {
        game,
        start,
        findings,
        moves: Vec::new(),
        departures: Vec::new(),
        draws: Vec::new(),
        decision: None,
        desynced: false,
        stats: BTreeMap::new(),
        ended: false,
        start_ts: first.ts(),
    };
    let mut rules: Box<dyn Rules> = match start.kind {
        Kind::Draughts10 | Kind::Draughts8 => Box::new(draughts::DraughtsRules::new(&cx)),
        Kind::Ludo => Box::new(ludo::LudoRules::new(&cx)),
        Kind::Belote => Box::new(belote::BeloteRules::new(&cx)),
    };
    let mut ended: Option<&Logged> = None;
    let mut revealed: Option<&Logged> = None;
    for line in &lines[1..] {
        match &line.event.body {
            Body::GameStarted(_) => {
                cx.find(
                    line.seq(),
                    Code::EventAfterEnd,
                    "a second game_started in the same game",
                );
            }
            Body::GameEnded(_) => {
                if ended.is_some() {
                    cx.find(
                        line.seq(),
                        Code::EventAfterEnd,
                        "a second game_ended in the same game",
                    );
                    continue;
                }
                rules.at_end(line, &mut cx);
                end_checks(line, &mut cx);
                cx.ended = true;
                ended = Some(line);
            }
            Body::SeedRevealed(_) => {
                if revealed.is_some() {
                    cx.find(
                        line.seq(),
                        Code::EventAfterEnd,
                        "a second seed_revealed in the same game",
                    );
                    continue;
                }
                revealed = Some(line);
            }
            _ => {
                if cx.ended && !late_attempt(&line.event) {
                    let f = cx.find(
                        line.seq(),
                        Code::EventAfterEnd,
                        format!("{} logged after game_ended", line.event.event_type()),
                    );
                    f.logged = Some(line.event.event_type().to_string());
                    if let Some(p) = line.event.player() {
                        f.account = Some(p.to_string());
                    }
                    continue;
                }
                rules.event(line, &mut cx);
            }
        }
    }
    let last = lines
        .last()
        .map(|l| (l.seq(), l.ts()))
        .unwrap_or((0, first.ts()));
    if ended.is_none() && ctx.horizon_ms - last.1 > NEVER_ENDED_AFTER_MS {
        cx.find(
            last.0,
            Code::NeverEnded,
            "the game has been silent for over an hour without game_ended",
        )
        .expected("game_ended")
        .logged(format!(
            "last event seq {} at {}",
            last.0,
            syntax::format_ts(last.1)
        ));
    }
    let verdict = fairness::check_game(lines, ended, revealed, ctx.horizon_ms, &mut cx);
    build(
        game,
        lines,
        ended,
        revealed,
        verdict,
        cx,
        date,
        ctx.horizon_ms,
    )
}

/// An attempt the server may still log after the end: rejected with reason game_over.
fn late_attempt(e: &Event) -> bool {
    e.attempt()
        .is_some_and(|a| a.status == Status::Rejected && a.reason == Some(RejectReason::GameOver))
}

/// A raw line without what its file's encoding added: a byte order mark before it, the `\r` of a
/// CRLF after it.
fn bare_line(raw: &str) -> &str {
    let line = raw.strip_prefix('\u{feff}').unwrap_or(raw);
    line.strip_suffix('\r').unwrap_or(line)
}

/// Duplicates, gaps and the hash chain. Returns the lines to replay (first of each seq).
fn sequence_checks(game: &str, lines: Vec<Logged>, findings: &mut Vec<Finding>) -> Vec<Logged> {
    let mut out: Vec<Logged> = Vec::with_capacity(lines.len());
    let mut expected_seq = 0i64;
    for line in lines {
        if let Some(prev) = out.last()
            && prev.seq() == line.seq()
        {
            // The same line again (a log shipper that sent it twice, a file copied over a rotated
            // one) is a transport duplicate, not the server logging one seq twice.
            let mut f = if bare_line(&prev.raw) == bare_line(&line.raw) {
                Finding::new(
                    game,
                    line.seq(),
                    Code::SeqRedelivered,
                    format!(
                        "seq {} delivered again, identical: a copy of the line, not a server fault",
                        line.seq()
                    ),
                )
            } else {
                Finding::new(
                    game,
                    line.seq(),
                    Code::SeqDuplicate,
                    format!("seq {} logged twice", line.seq()),
                )
            };
            f.logged(line.raw.chars().take(200).collect::<String>());
            findings.push(f);
            continue;
        }
        if line.seq() != expected_seq && !(out.is_empty() && line.seq() != 0) {
            let mut f = Finding::new(
                game,
                line.seq(),
                Code::SeqGap,
                format!("seq jumps from {} to {}", expected_seq - 1, line.seq()),
            );
            f.expected(expected_seq.to_string())
                .logged(line.seq().to_string());
            findings.push(f);
        }
        if let (Some(prev), Some(logged)) = (out.last(), line.event.prev.as_deref()) {
            let actual = hex(&Sha256::digest(prev.raw.as_bytes()));
            // A server that ends its lines with CRLF hashes them without it: the `\r` left at the
            // end of `raw` is part of its newline, not of the line; so is a byte order mark at its
            // start part of the file's encoding.
            let bare = || {
                let line = bare_line(&prev.raw);
                line.len() != prev.raw.len() && hex(&Sha256::digest(line.as_bytes())) == logged
            };
            if actual != logged && !bare() {
                let mut f = Finding::new(
                    game,
                    line.seq(),
                    Code::ChainBroken,
                    format!("prev does not hash the previous line (seq {})", prev.seq()),
                );
                f.expected(actual).logged(logged.to_string());
                findings.push(f);
            }
        }
        expected_seq = line.seq() + 1;
        out.push(line);
    }
    out
}

/// Result, reason and payouts at `game_ended`.
fn end_checks(line: &Logged, cx: &mut Cx<'_>) {
    let Body::GameEnded(end) = &line.event.body else {
        return;
    };
    let seq = line.seq();
    let pot = cx.start.stake * cx.start.players.len() as i64;
    // Result and reason against the replay.
    match cx.decision.clone() {
        Some(d) => {
            if d.result != end.result {
                cx.find(
                    seq,
                    Code::WrongResult,
                    format!(
                        "the replay gives {} ({}), the server logged {}",
                        d.result, d.reason, end.result
                    ),
                )
                .expected(d.result.clone())
                .logged(end.result.clone());
            } else if d.reason != end.reason && d.also != Some(end.reason) {
                cx.find(
                    seq,
                    Code::WrongEndReason,
                    format!(
                        "the game ended by {}, the server logged {}",
                        d.reason, end.reason
                    ),
                )
                .expected(d.reason.to_string())
                .logged(end.reason.to_string());
            }
        }
        None if !cx.desynced => {
            cx.find(
                seq,
                Code::WrongResult,
                "the server ended a game that the replay finds undecided",
            )
            .expected("game continues")
            .logged(format!("{} ({})", end.result, end.reason));
        }
        None => {}
    }
    // Conservation of the pot.
    let paid: i64 = end.payouts.iter().map(|(_, v)| *v).sum();
    if paid + end.rake != pot {
        cx.find(
            seq,
            Code::PotNotConserved,
            format!(
                "payouts {paid} + rake {} differ from the pot {pot}",
                end.rake
            ),
        )
        .expected(pot.to_string())
        .logged((paid + end.rake).to_string());
    }
    // Who gets what: against the replayed result when there is one, else the logged one.
    let result = cx
        .decision
        .as_ref()
        .map(|d| d.result.clone())
        .unwrap_or_else(|| end.result.clone());
    // Only draughts draws; a Ludo or Belote result names the winning account, which may be
    // spelt "draw" like any other.
    let draw = cx.start.kind.is_draughts() && result == "draw";
    let winner_account: Option<String> = match cx.start.kind {
        Kind::Draughts10 | Kind::Draughts8 => cx
            .start
            .players
            .iter()
            .find(|p| p.seat.as_str() == result)
            .map(|p| p.account.clone()),
        Kind::Ludo | Kind::Belote => (!draw).then(|| result.clone()),
    };
    let mut expected: Vec<(String, i64)> = Vec::new();
    for p in &cx.start.players {
        let v = if draw {
            cx.start.stake
        } else if Some(&p.account) == winner_account.as_ref() {
            pot - end.rake
        } else {
            0
        };
        expected.push((p.account.clone(), v));
    }
    let logged: BTreeMap<&str, i64> = end.payouts.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    let expected_map: BTreeMap<&str, i64> =
        expected.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    let rake_ok = !draw || end.rake == 0;
    if logged != expected_map || !rake_ok {
        let fmt = |m: &BTreeMap<&str, i64>| {
            m.iter()
                .map(|(k, v)| format!("{k}: {v}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        cx.find(
            seq,
            Code::WrongPayout,
            if draw {
                "on a draw each player gets the stake back and the rake is 0".to_string()
            } else {
                format!(
                    "the winner ({}) gets the pot less the rake, the others nothing",
                    winner_account.clone().unwrap_or_default()
                )
            },
        )
        .expected(format!(
            "{}; rake {}",
            fmt(&expected_map),
            if draw { 0 } else { end.rake }
        ))
        .logged(format!("{}; rake {}", fmt(&logged), end.rake));
    }
}

#[allow(clippy::too_many_arguments)]
fn build(
    game: &str,
    lines: &[Logged],
    ended: Option<&Logged>,
    revealed: Option<&Logged>,
    verdict: fairness::Verdict,
    cx: Cx<'_>,
    date: String,
    horizon_ms: i64,
) -> GameReplay {
    let start = cx.start;
    let first_ts = lines[0].ts();
    let last_ts = lines.last().map(Logged::ts).unwrap_or(first_ts);
    let end = ended.and_then(|l| match &l.event.body {
        Body::GameEnded(e) => Some((l.ts(), e)),
        _ => None,
    });
    let seed = revealed.and_then(|l| match &l.event.body {
        Body::SeedRevealed(s) => Some(s.seed.clone()),
        _ => None,
    });
    let count =
        |c: super::finding::Category| cx.findings.iter().filter(|f| f.category == c).count() as i64;
    let pot = start.stake * start.players.len() as i64;
    let total = |f: fn(&PlayerStats) -> i64| cx.stats.values().map(f).sum::<i64>();
    let ended_at = end.map(|(ts, _)| ts);
    let duration_ms = ended_at.unwrap_or(last_ts) - first_ts;
    let variant = match &start.variant {
        Some(crate::log::Variant::Ludo(v)) => Some(v.name.clone()),
        Some(crate::log::Variant::Belote { target }) => Some(format!("target={target}")),
        None => None,
    };
    let game_row = GameRow {
        game: game.to_string(),
        kind: start.kind.as_str().to_string(),
        mode: start.mode.as_str().to_string(),
        variant,
        rated: start.rated,
        stake: start.stake,
        currency: start.currency.clone(),
        players: cx.accounts(),
        n_players: start.players.len() as i64,
        pot,
        started_at: Ts(first_ts),
        ended_at: ended_at.map(Ts),
        last_ts: Ts(last_ts),
        duration_ms,
        events: lines.len() as i64,
        moves: total(|s| s.moves),
        rejected: total(|s| s.rejected),
        timeouts: total(|s| s.timeouts),
        departures: cx.stats.values().filter(|s| s.left).count() as i64,
        finished: end.is_some(),
        // Over for good: ended with its seed revealed (where one is due), or silent past the horizon.
        closed: (end.is_some() && (revealed.is_some() || !start.kind.uses_seed(start.mode)))
            || horizon_ms - last_ts > NEVER_ENDED_AFTER_MS,
        result_logged: end.map(|(_, e)| e.result.clone()),
        reason_logged: end.map(|(_, e)| e.reason.to_string()),
        result_replayed: cx.decision.as_ref().map(|d| d.result.clone()),
        reason_replayed: cx.decision.as_ref().map(|d| d.reason.to_string()),
        winner: cx.decision.as_ref().and_then(|d| d.winner.clone()),
        rake: end.map(|(_, e)| e.rake),
        payouts: end.map(|(_, e)| {
            let m: serde_json::Map<String, serde_json::Value> = e
                .payouts
                .iter()
                .map(|(k, v)| (k.clone(), serde_json::Value::from(*v)))
                .collect();
            serde_json::Value::Object(m).to_string()
        }),
        commitment: start.commitment.clone(),
        seed,
        reveal_seq: revealed.map(Logged::seq),
        fairness: verdict.as_str().to_string(),
        fairness_findings: count(super::finding::Category::Fairness),
        integrity_findings: count(super::finding::Category::Integrity),
        attempt_findings: count(super::finding::Category::Attempt),
        desynced: cx.desynced,
    };
    let two = start.players.len() == 2;
    let game_moves = cx.moves.iter().filter(|m| m.accepted).count() as i64;
    let players = start
        .players
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let st = cx.stats.get(&p.account).cloned().unwrap_or_default();
            let f = MoveFacts::of(&cx.moves, &p.account);
            let payout = end.and_then(|(_, e)| {
                e.payouts
                    .iter()
                    .find(|(k, _)| *k == p.account)
                    .map(|(_, v)| *v)
            });
            let result = cx
                .decision
                .as_ref()
                .map(|d| d.result.as_str())
                .or(end.map(|(_, e)| e.result.as_str()));
            let outcome = result.map(|r| {
                if r == "draw" && start.kind.is_draughts() {
                    "draw"
                } else if r == p.account || r == p.seat.as_str() {
                    "win"
                } else {
                    "loss"
                }
            });
            let end_reason = if st.left {
                Some("left".to_string())
            } else {
                end.map(|(_, e)| e.reason.to_string())
            };
            PlayerRow {
                game: game.to_string(),
                account: p.account.clone(),
                seat: p.seat.as_str().to_string(),
                position: i as i64,
                ip: p.ip.clone(),
                device: p.device.clone(),
                kind: start.kind.as_str().to_string(),
                mode: start.mode.as_str().to_string(),
                rated: start.rated,
                started_at: Ts(first_ts),
                duration_ms,
                outcome: outcome.map(str::to_string),
                stake: start.stake,
                payout,
                net: payout.map(|v| v - start.stake),
                opponent: two.then(|| start.players[1 - i].account.clone()),
                moves: st.moves,
                rejected: st.rejected,
                timeouts: st.timeouts,
                left: st.left,
                end_reason,
                game_moves,
                attempts: f.attempts,
                tamper_attempts: f.tamper_attempts,
                tamper_mask: f.tamper_mask,
                tamper_refs: f.tamper_refs,
                tamper_first: f.tamper_first,
                tamper_last: f.tamper_last,
                races: f.races,
                malformed: f.malformed,
                late_attempts: f.late_attempts,
                timed_moves: f.timed_moves,
                think_sum_ms: f.think_sum_ms,
                think_sq_sum: f.think_sq_sum,
                instant_moves: f.instant_moves,
                forced_moves: f.forced_moves,
                forced_think_ms: f.forced_think_ms,
                losing_moves: f.losing_moves,
                slow_losing_moves: f.slow_losing_moves,
                other_moves: f.other_moves,
                slow_other_moves: f.slow_other_moves,
                other_moves_prestall: Some(f.other_moves_prestall),
                slow_other_moves_prestall: Some(f.slow_other_moves_prestall),
                slow_losing_refs: Some(f.slow_losing_refs),
                slow_losing_first: f.slow_losing_first,
                slow_losing_last: f.slow_losing_last,
                slow_run_losing: Some(f.slow_run_losing),
                slow_run_other: Some(f.slow_run_other),
                losing_edges: Some(f.losing_edges.iter().map(|(e, _)| *e).collect()),
                losing_edge_moves: Some(f.losing_edges.iter().map(|(_, n)| *n).collect()),
                think_cv: f.think_cv,
                think_cv14: f.think_cv14,
                think_median_ms: f.think_median_ms,
                think_mad_ms: f.think_mad_ms,
                quit_balance: cx
                    .departures
                    .iter()
                    .find(|d| d.player == p.account && d.decisive)
                    .and_then(|d| d.balance),
            }
        })
        .collect();
    let mut draws = DrawCounts::default();
    for d in &cx.draws {
        match d {
            Draw::Die { .. } => draws.dice += 1,
            Draw::Deal { .. } => draws.deals += 1,
            Draw::Duel { .. } => draws.duels += 1,
            Draw::Selection { auto, .. } if !auto.is_empty() => draws.selections += 1,
            _ => {}
        }
    }
    let mut findings = cx.findings;
    findings.sort_by_key(|f| (f.seq, f.code));
    GameReplay {
        draws,
        draw_list: cx.draws,
        game: Some(game_row),
        players,
        moves: cx.moves,
        departures: cx.departures,
        findings,
        date,
        // Filled by [`replay_game`] once the findings are known.
        times: BTreeMap::new(),
    }
}
