//! Writing events as log lines in the canonical field order of format v1 (used by the simulator and tests).

use std::fmt::Write as _;

use super::event::*;
use super::syntax;

/// A JSON object written field by field.
struct Obj {
    out: String,
    first: bool,
}

impl Obj {
    fn new() -> Obj {
        let mut out = String::with_capacity(256);
        out.push('{');
        Obj { out, first: true }
    }

    fn key(&mut self, k: &str) {
        if !self.first {
            self.out.push(',');
        }
        self.first = false;
        push_str(&mut self.out, k);
        self.out.push(':');
    }

    fn str(&mut self, k: &str, v: &str) -> &mut Self {
        self.key(k);
        push_str(&mut self.out, v);
        self
    }

    fn int(&mut self, k: &str, v: i64) -> &mut Self {
        self.key(k);
        let _ = write!(self.out, "{v}");
        self
    }

    fn bool(&mut self, k: &str, v: bool) -> &mut Self {
        self.key(k);
        self.out.push_str(if v { "true" } else { "false" });
        self
    }

    fn raw(&mut self, k: &str, json: &str) -> &mut Self {
        self.key(k);
        self.out.push_str(json);
        self
    }

    fn finish(mut self) -> String {
        self.out.push('}');
        self.out
    }
}

/// Appends a JSON string literal.
fn push_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn str_list<S: AsRef<str>>(items: &[S]) -> String {
    let mut out = String::from("[");
    for (i, s) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_str(&mut out, s.as_ref());
    }
    out.push(']');
    out
}

fn int_list<I: Copy + Into<i64>>(items: &[I]) -> String {
    let parts: Vec<String> = items.iter().map(|&v| v.into().to_string()).collect();
    format!("[{}]", parts.join(","))
}

fn by_account<T>(map: &[(String, T)], value: impl Fn(&T) -> String) -> String {
    let mut out = String::from("{");
    for (i, (k, v)) in map.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_str(&mut out, k);
        out.push(':');
        out.push_str(&value(v));
    }
    out.push('}');
    out
}

fn attempt(o: &mut Obj, a: &Attempt) {
    o.str("status", a.status.as_str());
    if let Some(r) = a.reason {
        o.str("reason", r.as_str());
    }
    o.int("think_ms", a.think_ms);
    if let Some(auto) = a.auto {
        o.bool("auto", auto);
    }
}

/// Writes an event as one log line (without the newline).
pub fn to_line(e: &Event) -> String {
    let mut o = Obj::new();
    o.int("v", e.v)
        .str("game", &e.game)
        .int("seq", e.seq)
        .str("ts", &syntax::format_ts(e.ts));
    o.str("type", e.event_type().as_str());
    match &e.body {
        Body::GameStarted(g) => {
            o.str("kind", g.kind.as_str()).str("mode", g.mode.as_str());
            match &g.variant {
                Some(Variant::Ludo(v)) => {
                    let mut vo = Obj::new();
                    vo.str("name", &v.name)
                        .int("players", v.players.into())
                        .int("tokens", v.tokens.into())
                        .raw("exit_on", &int_list(&v.exit_on))
                        .bool("safe_squares", v.safe_squares)
                        .bool("bonus_on_six", v.bonus_on_six)
                        .bool("three_sixes", v.three_sixes)
                        .bool("bonus_on_capture", v.bonus_on_capture)
                        .bool("bonus_on_finish", v.bonus_on_finish)
                        .int("turn_s", v.turn_s.into())
                        .int("max_timeouts", v.max_timeouts.into());
                    o.raw("variant", &vo.finish());
                }
                Some(Variant::Belote { target }) => {
                    o.raw("variant", &format!("{{\"target\":{target}}}"));
                }
                None => {}
            }
            o.bool("rated", g.rated);
            let players: Vec<String> = g
                .players
                .iter()
                .map(|p| {
                    let mut po = Obj::new();
                    po.str("account", &p.account)
                        .str("seat", p.seat.as_str())
                        .str("ip", &p.ip)
                        .str("device", &p.device);
                    po.finish()
                })
                .collect();
            o.raw("players", &format!("[{}]", players.join(",")));
            o.int("stake", g.stake).str("currency", &g.currency);
            let mut co = Obj::new();
            if let Some(v) = g.clock.move_s {
                co.int("move_s", v.into());
            }
            if let Some(v) = g.clock.turn_s {
                co.int("turn_s", v.into());
            }
            if let Some(v) = g.clock.max_timeouts {
                co.int("max_timeouts", v.into());
            }
            if let Some(v) = g.clock.select_s {
                co.int("select_s", v.into());
            }
            o.raw("clock", &co.finish());
            if let Some(c) = &g.commitment {
                o.str("commitment", c);
            }
        }
        Body::Selection(s) => {
            o.str("player", &s.player)
                .raw("squares", &int_list(&s.squares))
                .raw("auto", &int_list(&s.auto));
        }
        Body::Move(m) => {
            o.str("player", &m.player);
            match &m.action {
                MoveAction::Draughts(t) => {
                    o.str("move", t);
                }
                MoveAction::Token(t) => {
                    o.int("token", *t);
                }
                MoveAction::Pass => {
                    o.bool("pass", true);
                }
            }
            attempt(&mut o, &m.attempt);
            if let Some(duels) = &m.duels {
                let parts: Vec<String> = duels
                    .iter()
                    .map(|d| format!("{{\"victim\":{},\"won\":{}}}", d.victim, d.won))
                    .collect();
                o.raw("duels", &format!("[{}]", parts.join(",")));
            }
        }
        Body::Roll(r) => {
            o.str("player", &r.player)
                .int("n", r.n)
                .int("value", r.value.into());
        }
        Body::Deal(d) => {
            o.int("deal", d.deal).str("dealer", &d.dealer);
            o.raw("hands", &by_account(&d.hands, |h| str_list(h)))
                .str("turned", &d.turned);
        }
        Body::Bid(b) => {
            o.str("player", &b.player)
                .int("deal", b.deal)
                .int("round", b.round.into())
                .str("bid", &b.bid);
            attempt(&mut o, &b.attempt);
        }
        Body::HandsCompleted(h) => {
            o.int("deal", h.deal)
                .str("trump", &h.trump)
                .str("taker", &h.taker);
            o.raw("hands", &by_account(&h.hands, |h| str_list(h)));
        }
        Body::Play(p) => {
            o.str("player", &p.player)
                .int("deal", p.deal)
                .str("card", &p.card);
            if let Some(a) = p.announce {
                o.str("announce", a.as_str());
            }
            attempt(&mut o, &p.attempt);
        }
        Body::DealEnded(d) => {
            o.int("deal", d.deal);
            o.raw("points", &by_account(&d.points, |v| v.to_string()));
            o.raw("totals", &by_account(&d.totals, |v| v.to_string()));
            o.str("outcome", d.outcome.as_str());
        }
        Body::Timeout(t) => {
            o.str("player", &t.player)
                .int("elapsed_ms", t.elapsed_ms)
                .str("outcome", t.outcome.as_str());
        }
        Body::DrawOffer(d) => {
            o.str("player", &d.player);
        }
        Body::DrawAnswer(d) => {
            o.str("player", &d.player).bool("accept", d.accept);
        }
        Body::Left(l) => {
            o.str("player", &l.player).str("reason", l.reason.as_str());
        }
        Body::GameEnded(g) => {
            o.str("result", &g.result).str("reason", g.reason.as_str());
            o.raw("payouts", &by_account(&g.payouts, |v| v.to_string()))
                .int("rake", g.rake);
        }
        Body::SeedRevealed(s) => {
            o.str("seed", &s.seed);
        }
    }
    for (k, v) in &e.extra {
        o.raw(k, v);
    }
    if let Some(p) = &e.prev {
        o.str("prev", p);
    }
    o.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_line;

    #[test]
    fn the_shared_sample_round_trips_byte_for_byte() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/server-logs/sample.jsonl"
        );
        let text = std::fs::read_to_string(path).unwrap();
        for line in text.lines() {
            let e = parse_line(line.as_bytes()).unwrap();
            assert_eq!(to_line(&e), line);
        }
    }

    #[test]
    fn strings_are_escaped() {
        let mut out = String::new();
        push_str(&mut out, "a\"b\\c\n\u{1}é");
        assert_eq!(out, "\"a\\\"b\\\\c\\n\\u0001é\"");
        assert_eq!(
            serde_json::from_str::<String>(&out).unwrap(),
            "a\"b\\c\n\u{1}é"
        );
    }
}
