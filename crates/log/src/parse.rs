//! Strict parsing of one log line into an [`Event`], or a [`Reject`] saying exactly what is wrong.

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, MapAccess, Visitor};
use serde_json::value::RawValue;

use super::event::*;
use super::{scan, syntax};

/// Lines longer than this are rejected (and kept whole in quarantine).
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// Most tokens per player a Ludo variant may have. The contract sets no bound ("the engine must
/// honour every setting"); this is the rules engine's sanity bound (`vigie_rules` `MAX_TOKENS`),
/// so that every variant the engine can play is accepted.
pub const MAX_LUDO_TOKENS: i64 = 16;

/// What a rejected account is told it must be ([`syntax::is_account`]).
const ACCOUNT_SHAPE: &str = "must be 1-128 characters, none of them a control character";

/// Why a line was rejected. Each variant has a stable [`Reject::code`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Reject {
    #[error("line is not valid UTF-8 (invalid byte at offset {valid_up_to} of the line)")]
    NotUtf8 { valid_up_to: usize },
    #[error("empty line")]
    EmptyLine,
    #[error("line of {len} bytes exceeds the {max}-byte limit")]
    TooLong { len: usize, max: usize },
    #[error("not valid JSON: {0}")]
    InvalidJson(String),
    #[error("not a JSON object but {0}")]
    NotAnObject(&'static str),
    #[error("field `{0}` appears more than once")]
    DuplicateField(String),
    #[error("missing required field `{0}`")]
    MissingField(String),
    #[error("field `{field}` must be {expected}")]
    WrongType {
        field: String,
        expected: &'static str,
    },
    #[error("field `{field}`: {why}")]
    InvalidValue { field: String, why: String },
    #[error("unsupported format version {0} (only 1 is accepted)")]
    UnsupportedVersion(String),
    #[error("unknown event type `{0}`")]
    UnknownType(String),
    #[error("field `ts` is not an RFC 3339 UTC timestamp with milliseconds: {0}")]
    BadTimestamp(String),
    #[error("field `{field}` is not allowed here: {why}")]
    NotAllowed { field: String, why: &'static str },
}

impl Reject {
    /// A stable machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            Reject::NotUtf8 { .. } => "not_utf8",
            Reject::EmptyLine => "empty_line",
            Reject::TooLong { .. } => "line_too_long",
            Reject::InvalidJson(_) => "invalid_json",
            Reject::NotAnObject(_) => "not_an_object",
            Reject::DuplicateField(_) => "duplicate_field",
            Reject::MissingField(_) => "missing_field",
            Reject::WrongType { .. } => "wrong_type",
            Reject::InvalidValue { .. } => "invalid_value",
            Reject::UnsupportedVersion(_) => "unsupported_version",
            Reject::UnknownType(_) => "unknown_type",
            Reject::BadTimestamp(_) => "bad_timestamp",
            Reject::NotAllowed { .. } => "field_not_allowed",
        }
    }

    /// The field at stake, when there is one.
    pub fn field(&self) -> Option<&str> {
        match self {
            Reject::DuplicateField(f) | Reject::MissingField(f) => Some(f),
            Reject::WrongType { field, .. }
            | Reject::InvalidValue { field, .. }
            | Reject::NotAllowed { field, .. } => Some(field),
            Reject::UnsupportedVersion(_) => Some("v"),
            Reject::UnknownType(_) => Some("type"),
            Reject::BadTimestamp(_) => Some("ts"),
            _ => None,
        }
    }
}

fn invalid(field: impl Into<String>, why: impl Into<String>) -> Reject {
    Reject::InvalidValue {
        field: field.into(),
        why: why.into(),
    }
}

fn wrong(field: impl Into<String>, expected: &'static str) -> Reject {
    Reject::WrongType {
        field: field.into(),
        expected,
    }
}

/// A parsed line: the event and its type-specific fields exactly as written.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    pub event: Event,
    /// JSON object of every field but the envelope, as written (unknown fields included).
    pub detail: String,
    /// JSON object of the unknown fields only, or `None` when there are none.
    pub extra: Option<String>,
}

/// Parses and validates one line (without its newline).
pub fn parse_line(line: &[u8]) -> Result<Event, Reject> {
    parse_line_detail(line).map(|p| p.event)
}

/// Parses and validates one line (without its newline), keeping the detail text.
pub fn parse_line_detail(line: &[u8]) -> Result<Parsed, Reject> {
    too_long(line)?;
    let text = std::str::from_utf8(line).map_err(|e| Reject::NotUtf8 {
        valid_up_to: e.valid_up_to(),
    })?;
    parse_valid_utf8(text)
}

/// [`parse_line_detail`] of a line the caller has already checked to be UTF-8 (the ingest keeps
/// the text of every valid line): the same result, without checking its bytes a second time.
pub fn parse_str_detail(line: &str) -> Result<Parsed, Reject> {
    too_long(line.as_bytes())?;
    parse_valid_utf8(line)
}

/// Refuses a line whose content is over [`MAX_LINE_BYTES`] (checked before its encoding).
fn too_long(line: &[u8]) -> Result<(), Reject> {
    // The limit is on the content: a byte order mark and the CR of a CRLF line end do not count.
    let content = line.strip_prefix(b"\xef\xbb\xbf").unwrap_or(line);
    let content = content.strip_suffix(b"\r").unwrap_or(content);
    if content.len() > MAX_LINE_BYTES {
        return Err(Reject::TooLong {
            len: content.len(),
            max: MAX_LINE_BYTES,
        });
    }
    Ok(())
}

fn parse_valid_utf8(text: &str) -> Result<Parsed, Reject> {
    // A byte order mark (a file written as "UTF-8 with BOM") is ignored, as RFC 8259 allows.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let trimmed = text.trim_matches(|c: char| c == ' ' || c == '\t' || c == '\r' || c == '\n');
    let Some(first) = trimmed.bytes().next() else {
        return Err(Reject::EmptyLine);
    };
    if first != b'{' {
        return Err(match serde_json::from_str::<de::IgnoredAny>(trimmed) {
            Err(e) => Reject::InvalidJson(e.to_string()),
            Ok(_) => Reject::NotAnObject(match first {
                b'[' => "an array",
                b'"' => "a string",
                b't' | b'f' => "a boolean",
                b'n' => "null",
                _ => "a number",
            }),
        });
    }
    // The fast scanner takes the lines it is sure of (no escape, shallow nesting, valid JSON);
    // serde_json takes every other line and words every syntax error.
    let items = match scan::object(trimmed) {
        Some(items) => items,
        None => {
            serde_json::from_str::<TopLevel<'_>>(trimmed)
                .map_err(|e| Reject::InvalidJson(e.to_string()))?
                .0
        }
    };
    let mut f = Fields::new(items)?;
    let event = parse_fields(&mut f)?;
    let (detail, extra) = f.detail_and_extra();
    let mut event = event;
    event.extra = f.unknown();
    Ok(Parsed {
        event,
        detail,
        extra,
    })
}

/// Checks for the fuzz targets (`fuzz/`, built by `cargo fuzz` with `--cfg fuzzing`): each panics
/// when a property of the parser does not hold for a line.
#[cfg(fuzzing)]
pub mod fuzzing {
    use super::{TopLevel, scan};

    /// The fast scanner against serde_json: a line the scanner takes is one serde_json reads, into
    /// the same (key, raw value) pairs. (A line the scanner leaves goes to serde_json alone.)
    pub fn scanner_agrees_with_serde(line: &[u8]) {
        let Ok(text) = std::str::from_utf8(line) else {
            return;
        };
        if let Some(items) = scan::object(text) {
            match serde_json::from_str::<TopLevel<'_>>(text) {
                Ok(top) => assert_eq!(items, top.0, "scanner and serde_json read different pairs"),
                Err(e) => panic!("the scanner took a line serde_json refuses ({e}): {text:?}"),
            }
        }
    }
}

/// The top-level object as (key, raw value) pairs in order.
pub(crate) struct TopLevel<'a>(pub(crate) Vec<(Cow<'a, str>, &'a str)>);

impl<'de> Deserialize<'de> for TopLevel<'de> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = TopLevel<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut items = Vec::with_capacity(12);
                while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                    let value: &'de RawValue = map.next_value()?;
                    items.push((key, value.get()));
                }
                Ok(TopLevel(items))
            }
        }
        d.deserialize_map(V)
    }
}

const ENVELOPE: [&str; 6] = ["v", "game", "seq", "ts", "type", "prev"];

/// The fields of a line with a record of which ones the type used.
struct Fields<'a> {
    items: Vec<(Cow<'a, str>, &'a str)>,
    used: Vec<bool>,
}

impl<'a> Fields<'a> {
    fn new(items: Vec<(Cow<'a, str>, &'a str)>) -> Result<Self, Reject> {
        if let Some(k) = first_duplicate(items.iter().map(|(k, _)| k.as_ref())) {
            return Err(Reject::DuplicateField(k.to_string()));
        }
        let used = vec![false; items.len()];
        Ok(Fields { items, used })
    }

    fn take(&mut self, name: &str) -> Option<&'a str> {
        let i = self.items.iter().position(|(k, _)| k == name)?;
        self.used[i] = true;
        Some(self.items[i].1)
    }

    fn has(&self, name: &str) -> bool {
        self.items.iter().any(|(k, _)| k == name)
    }

    fn req(&mut self, name: &str) -> Result<&'a str, Reject> {
        self.take(name)
            .ok_or_else(|| Reject::MissingField(name.to_string()))
    }

    fn int(&mut self, name: &str) -> Result<i64, Reject> {
        let raw = self.req(name)?;
        raw_int(raw, name)
    }

    fn nonneg(&mut self, name: &str) -> Result<i64, Reject> {
        let v = self.int(name)?;
        if v < 0 {
            return Err(invalid(name, format!("must be >= 0, got {v}")));
        }
        Ok(v)
    }

    fn boolean(&mut self, name: &str) -> Result<bool, Reject> {
        let raw = self.req(name)?;
        raw_bool(raw, name)
    }

    fn opt_bool(&mut self, name: &str) -> Result<Option<bool>, Reject> {
        self.take(name).map(|r| raw_bool(r, name)).transpose()
    }

    fn string(&mut self, name: &str) -> Result<String, Reject> {
        self.text(name).map(Cow::into_owned)
    }

    /// A string field borrowed from the line when it has no escape (one only inspected).
    fn text(&mut self, name: &str) -> Result<Cow<'a, str>, Reject> {
        let raw = self.req(name)?;
        raw_string(raw, name)
    }

    fn opt_string(&mut self, name: &str) -> Result<Option<String>, Reject> {
        self.take(name)
            .map(|r| raw_string(r, name).map(Cow::into_owned))
            .transpose()
    }

    fn account(&mut self, name: &str) -> Result<String, Reject> {
        let s = self.string(name)?;
        if !syntax::is_account(&s) {
            return Err(invalid(name, ACCOUNT_SHAPE));
        }
        Ok(s)
    }

    fn enumeration<E>(
        &mut self,
        name: &str,
        parse: fn(&str) -> Option<E>,
        all: &[&str],
    ) -> Result<E, Reject> {
        let s = self.text(name)?;
        parse(&s).ok_or_else(|| invalid(name, format!("`{s}` is not one of {}", all.join(", "))))
    }

    fn opt_enumeration<E>(
        &mut self,
        name: &str,
        parse: fn(&str) -> Option<E>,
        all: &[&str],
    ) -> Result<Option<E>, Reject> {
        if !self.has(name) {
            return Ok(None);
        }
        self.enumeration(name, parse, all).map(Some)
    }

    fn typed<T: Deserialize<'a>>(
        &mut self,
        name: &str,
        expected: &'static str,
    ) -> Result<T, Reject> {
        let raw = self.req(name)?;
        serde_json::from_str(raw).map_err(|e| typed_error(name, expected, &e))
    }

    fn unknown(&self) -> Vec<(String, String)> {
        self.items
            .iter()
            .zip(&self.used)
            .filter(|((k, _), used)| !**used && !ENVELOPE.contains(&k.as_ref()))
            .map(|((k, v), _)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn detail_and_extra(&self) -> (String, Option<String>) {
        let mut detail = String::with_capacity(128);
        let mut extra = String::new();
        detail.push('{');
        for ((k, v), used) in self.items.iter().zip(&self.used) {
            if ENVELOPE.contains(&k.as_ref()) {
                continue;
            }
            push_pair(&mut detail, k, v);
            if !used {
                if extra.is_empty() {
                    extra.push('{');
                }
                push_pair(&mut extra, k, v);
            }
        }
        detail.push('}');
        if !extra.is_empty() {
            extra.push('}');
        }
        (detail, if extra.is_empty() { None } else { Some(extra) })
    }
}

fn push_pair(out: &mut String, key: &str, raw: &str) {
    if out.len() > 1 {
        out.push(',');
    }
    // Keys are re-escaped as serde_json writes them; a key without a quote, a backslash or a
    // control character is written as it is (every key of the contract), without an allocation.
    if key.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        out.push('"');
        out.push_str(key);
        out.push('"');
    } else {
        out.push_str(&serde_json::to_string(key).unwrap_or_default());
    }
    out.push(':');
    out.push_str(raw);
}

fn typed_error(field: &str, expected: &'static str, e: &serde_json::Error) -> Reject {
    let msg = e.to_string();
    if msg.starts_with("invalid type") {
        wrong(field, expected)
    } else if let Some(key) = msg
        .strip_prefix("duplicate field `")
        .and_then(|rest| rest.split('`').next())
    {
        // A key twice in a nested object (a player, the clock, a deal's points): the same
        // reason as at the top.
        Reject::DuplicateField(format!("{field}.{key}"))
    } else if let Some(key) = msg
        .strip_prefix("missing field `")
        .and_then(|rest| rest.split('`').next())
    {
        // A required key missing from a nested object (a player's device, the variant's tokens).
        Reject::MissingField(format!("{field}.{key}"))
    } else {
        invalid(field, msg)
    }
}

fn raw_int(s: &str, name: &str) -> Result<i64, Reject> {
    let digits = s.strip_prefix('-').unwrap_or(s);
    // `-0` is what serde_json, which reads the nested numbers, takes for a float: the same here.
    if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) || s == "-0" {
        return Err(wrong(name, "an integer"));
    }
    s.parse::<i64>()
        .map_err(|_| invalid(name, "integer out of range"))
}

fn raw_bool(raw: &str, name: &str) -> Result<bool, Reject> {
    match raw {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(wrong(name, "a boolean")),
    }
}

fn raw_string<'a>(s: &'a str, name: &str) -> Result<Cow<'a, str>, Reject> {
    if !s.starts_with('"') {
        return Err(wrong(name, "a string"));
    }
    if !s.contains('\\') && s.len() >= 2 {
        return Ok(Cow::Borrowed(&s[1..s.len() - 1]));
    }
    // A string token (the line parsed as JSON) whose escapes do not decode: a lone surrogate.
    serde_json::from_str::<String>(s)
        .map(Cow::Owned)
        .map_err(|e| invalid(name, e.to_string()))
}

fn names<E: Copy>(all: &[E], f: fn(E) -> &'static str) -> Vec<&'static str> {
    all.iter().map(|e| f(*e)).collect()
}

fn parse_fields(f: &mut Fields<'_>) -> Result<Event, Reject> {
    // Envelope, in a fixed order so that the reason names the first problem.
    let v_raw = f.req("v")?;
    let v = match raw_int(v_raw, "v") {
        // An integer too large for 64 bits is still an integer other than 1.
        Err(Reject::InvalidValue { .. }) => {
            return Err(Reject::UnsupportedVersion(v_raw.to_string()));
        }
        v => v?,
    };
    if v != 1 {
        return Err(Reject::UnsupportedVersion(v.to_string()));
    }
    let game = f.string("game")?;
    if !syntax::is_game_id(&game) {
        return Err(invalid("game", "must be 1-64 characters of [A-Za-z0-9._-]"));
    }
    let seq = f.int("seq")?;
    if seq < 0 {
        return Err(invalid("seq", format!("must be >= 0, got {seq}")));
    }
    let ts_text = f.text("ts")?;
    let ts = syntax::parse_ts(&ts_text)
        .map_err(|why| Reject::BadTimestamp(format!("`{ts_text}`: {why}")))?;
    let type_text = f.text("type")?;
    let ty = EventType::parse(&type_text)
        .ok_or_else(|| Reject::UnknownType(type_text.clone().into_owned()))?;
    let prev = f.opt_string("prev")?;
    if let Some(p) = &prev {
        if seq == 0 {
            return Err(Reject::NotAllowed {
                field: "prev".into(),
                why: "seq 0 has no previous line",
            });
        }
        if !syntax::is_hex64(p) {
            return Err(invalid("prev", "must be 64 lowercase hex characters"));
        }
    }
    if (ty == EventType::GameStarted) != (seq == 0) {
        return Err(invalid(
            "seq",
            if seq == 0 {
                "seq 0 is reserved for game_started"
            } else {
                "game_started must have seq 0"
            },
        ));
    }
    let body = match ty {
        EventType::GameStarted => Body::GameStarted(game_started(f)?),
        EventType::Selection => Body::Selection(selection(f)?),
        EventType::Move => Body::Move(mv(f)?),
        EventType::Roll => {
            let player = f.account("player")?;
            let n = f.nonneg("n")?;
            let value = f.int("value")?;
            if !(1..=6).contains(&value) {
                return Err(invalid("value", format!("a die shows 1-6, got {value}")));
            }
            Body::Roll(Roll {
                player,
                n,
                value: value as u8,
            })
        }
        EventType::Deal => {
            let deal = f.nonneg("deal")?;
            let dealer = f.account("dealer")?;
            let hands = hands(f, 6)?;
            let turned = f.string("turned")?;
            if !syntax::is_card(&turned) {
                return Err(invalid("turned", format!("`{turned}` is not a card")));
            }
            Body::Deal(Deal {
                deal,
                dealer,
                hands,
                turned,
            })
        }
        EventType::Bid => {
            let player = f.account("player")?;
            let deal = f.nonneg("deal")?;
            let round = f.int("round")?;
            if round != 1 && round != 2 {
                return Err(invalid("round", format!("must be 1 or 2, got {round}")));
            }
            let bid = f.string("bid")?;
            let attempt = attempt(f)?;
            if attempt.accepted() {
                let ok = bid == "take" || bid == "pass" || (round == 2 && syntax::is_suit(&bid));
                if !ok {
                    return Err(invalid(
                        "bid",
                        format!("`{bid}` is not a bid of round {round}"),
                    ));
                }
            }
            Body::Bid(Bid {
                player,
                deal,
                round: round as u8,
                bid,
                attempt,
            })
        }
        EventType::HandsCompleted => {
            let deal = f.nonneg("deal")?;
            let trump = f.string("trump")?;
            if !syntax::is_suit(&trump) {
                return Err(invalid(
                    "trump",
                    format!("`{trump}` is not a suit letter S, H, D or C"),
                ));
            }
            let taker = f.account("taker")?;
            let hands = hands(f, 16)?;
            Body::HandsCompleted(HandsCompleted {
                deal,
                trump,
                taker,
                hands,
            })
        }
        EventType::Play => {
            let player = f.account("player")?;
            let deal = f.nonneg("deal")?;
            let card = f.string("card")?;
            let announce = f.opt_enumeration(
                "announce",
                Announce::parse,
                &names(Announce::ALL, Announce::as_str),
            )?;
            let attempt = attempt(f)?;
            if attempt.accepted() && !syntax::is_card(&card) {
                return Err(invalid("card", format!("`{card}` is not a card")));
            }
            Body::Play(Play {
                player,
                deal,
                card,
                announce,
                attempt,
            })
        }
        EventType::DealEnded => {
            let deal = f.nonneg("deal")?;
            let points = by_account_ints(f, "points", false)?;
            let totals = by_account_ints(f, "totals", false)?;
            let outcome = f.enumeration(
                "outcome",
                DealOutcome::parse,
                &names(DealOutcome::ALL, DealOutcome::as_str),
            )?;
            Body::DealEnded(DealEnded {
                deal,
                points,
                totals,
                outcome,
            })
        }
        EventType::Timeout => {
            let player = f.account("player")?;
            let elapsed_ms = f.nonneg("elapsed_ms")?;
            let outcome = f.enumeration(
                "outcome",
                TimeoutOutcome::parse,
                &names(TimeoutOutcome::ALL, TimeoutOutcome::as_str),
            )?;
            Body::Timeout(Timeout {
                player,
                elapsed_ms,
                outcome,
            })
        }
        EventType::DrawOffer => Body::DrawOffer(DrawOffer {
            player: f.account("player")?,
        }),
        EventType::DrawAnswer => {
            let player = f.account("player")?;
            let accept = f.boolean("accept")?;
            Body::DrawAnswer(DrawAnswer { player, accept })
        }
        EventType::Left => {
            let player = f.account("player")?;
            let reason = f.enumeration(
                "reason",
                LeftReason::parse,
                &names(LeftReason::ALL, LeftReason::as_str),
            )?;
            Body::Left(Left { player, reason })
        }
        EventType::GameEnded => {
            let result = f.string("result")?;
            if !(syntax::is_account(&result)) {
                return Err(invalid(
                    "result",
                    "must be white, black, draw or an account",
                ));
            }
            let reason = f.enumeration(
                "reason",
                EndReason::parse,
                &names(EndReason::ALL, EndReason::as_str),
            )?;
            let payouts = by_account_ints(f, "payouts", true)?;
            let rake = f.nonneg("rake")?;
            Body::GameEnded(GameEnded {
                result,
                reason,
                payouts,
                rake,
            })
        }
        EventType::SeedRevealed => Body::SeedRevealed(SeedRevealed {
            seed: f.string("seed")?,
        }),
    };
    Ok(Event {
        v,
        game,
        seq,
        ts,
        prev,
        body,
        extra: Vec::new(),
    })
}

fn attempt(f: &mut Fields<'_>) -> Result<Attempt, Reject> {
    let status = f.enumeration("status", Status::parse, &names(Status::ALL, Status::as_str))?;
    let reason = f.opt_enumeration(
        "reason",
        RejectReason::parse,
        &names(RejectReason::ALL, RejectReason::as_str),
    )?;
    match (status, reason) {
        (Status::Rejected, None) => return Err(Reject::MissingField("reason".into())),
        (Status::Accepted, Some(_)) => {
            return Err(Reject::NotAllowed {
                field: "reason".into(),
                why: "only rejected attempts carry a reason",
            });
        }
        _ => {}
    }
    let think_ms = f.nonneg("think_ms")?;
    let auto = f.opt_bool("auto")?;
    Ok(Attempt {
        status,
        reason,
        think_ms,
        auto,
    })
}

fn mv(f: &mut Fields<'_>) -> Result<Move, Reject> {
    let player = f.account("player")?;
    let has_move = f.has("move");
    let has_token = f.has("token");
    let has_pass = f.has("pass");
    let action = match (has_move, has_token, has_pass) {
        (true, false, false) => MoveAction::Draughts(f.string("move")?),
        (false, true, false) => MoveAction::Token(f.int("token")?),
        (false, false, true) => {
            if !f.boolean("pass")? {
                return Err(invalid("pass", "must be true when present"));
            }
            MoveAction::Pass
        }
        (false, false, false) => return Err(Reject::MissingField("move".into())),
        _ => {
            return Err(Reject::NotAllowed {
                field: if has_move {
                    "move".into()
                } else {
                    "token".into()
                },
                why: "a move carries exactly one of `move`, `token` or `pass`",
            });
        }
    };
    let attempt = attempt(f)?;
    if let MoveAction::Draughts(text) = &action
        && attempt.accepted()
        && !syntax::is_pdn_move(text)
    {
        return Err(invalid("move", format!("`{text}` is not a PDN move")));
    }
    if let MoveAction::Token(t) = action
        && attempt.accepted()
        && !(0..MAX_LUDO_TOKENS).contains(&t)
    {
        return Err(invalid(
            "token",
            format!(
                "an accepted move names token 0-{}, got {t}",
                MAX_LUDO_TOKENS - 1
            ),
        ));
    }
    // The server records a pass when nothing can move, at once (log-format.md: "a pass has 0").
    if action == MoveAction::Pass && attempt.accepted() && attempt.think_ms != 0 {
        return Err(invalid(
            "think_ms",
            format!("a pass has 0, got {}", attempt.think_ms),
        ));
    }
    let duels = if f.has("duels") {
        if !matches!(action, MoveAction::Draughts(_)) {
            return Err(Reject::NotAllowed {
                field: "duels".into(),
                why: "only draughts captures carry duels",
            });
        }
        let list: Vec<DuelIn> =
            f.typed("duels", "an array of {\"victim\": square, \"won\": bool}")?;
        let mut out = Vec::with_capacity(list.len());
        for (i, d) in list.iter().enumerate() {
            if !(1..=50).contains(&d.victim) {
                return Err(invalid(
                    format!("duels[{i}].victim"),
                    format!("square {} out of range", d.victim),
                ));
            }
            out.push(Duel {
                victim: d.victim as u8,
                won: d.won,
            });
        }
        Some(out)
    } else {
        None
    };
    Ok(Move {
        player,
        action,
        attempt,
        duels,
    })
}

#[derive(Deserialize)]
struct DuelIn {
    victim: i64,
    won: bool,
}

fn selection(f: &mut Fields<'_>) -> Result<Selection, Reject> {
    let player = f.account("player")?;
    let squares: Vec<i64> = f.typed("squares", "an array of square numbers")?;
    let auto: Vec<i64> = f.typed("auto", "an array of square numbers")?;
    if squares.len() != 3 {
        return Err(invalid(
            "squares",
            format!("a selection names 3 men, got {}", squares.len()),
        ));
    }
    let in_range = |s: &i64| (1..=32).contains(s);
    if !squares.iter().all(in_range) {
        return Err(invalid("squares", "squares of the 8x8 board are 1-32"));
    }
    if squares[0] == squares[1] || squares[0] == squares[2] || squares[1] == squares[2] {
        return Err(invalid("squares", "the 3 squares must differ"));
    }
    if !auto.iter().all(|a| squares.contains(a)) {
        return Err(invalid("auto", "automatic picks must be among `squares`"));
    }
    if auto.iter().enumerate().any(|(i, a)| auto[..i].contains(a)) {
        return Err(invalid("auto", "a square appears twice"));
    }
    Ok(Selection {
        player,
        squares: squares.iter().map(|&s| s as u8).collect(),
        auto: auto.iter().map(|&s| s as u8).collect(),
    })
}

/// Keys compared two by two up to this many; past it, through a hash set (a line of 87,000 keys
/// took 12 s two by two).
const FEW_KEYS: usize = 32;

/// The first key that was already seen.
fn first_duplicate<'k>(keys: impl Iterator<Item = &'k str>) -> Option<&'k str> {
    // The few on the stack: every line's keys pass here, and a vector grown key by key was three
    // allocations a line (2.8 % of an ingest's CPU in perf).
    let mut few: [&str; FEW_KEYS] = [""; FEW_KEYS];
    let mut seen_few = 0;
    let mut many: Option<HashSet<&str>> = None;
    for k in keys {
        match many.as_mut() {
            Some(seen) => {
                if !seen.insert(k) {
                    return Some(k);
                }
            }
            None => {
                if few[..seen_few].contains(&k) {
                    return Some(k);
                }
                if seen_few < FEW_KEYS {
                    few[seen_few] = k;
                    seen_few += 1;
                } else {
                    let mut seen: HashSet<&str> = few.iter().copied().collect();
                    seen.insert(k);
                    many = Some(seen);
                }
            }
        }
    }
    None
}

/// An object keyed by account, order kept, duplicate keys refused.
struct OrderedMap<T>(Vec<(String, T)>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for OrderedMap<T> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = OrderedMap<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object keyed by account")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out: Vec<(String, T)> = Vec::new();
                let mut many: Option<HashSet<String>> = None;
                while let Some(k) = map.next_key::<String>()? {
                    let twice = match many.as_mut() {
                        Some(seen) => !seen.insert(k.clone()),
                        None => out.iter().any(|(o, _)| *o == k),
                    };
                    if twice {
                        return Err(de::Error::custom(format_args!("duplicate field `{k}`")));
                    }
                    out.push((k, map.next_value()?));
                    if many.is_none() && out.len() > FEW_KEYS {
                        many = Some(out.iter().map(|(o, _)| o.clone()).collect());
                    }
                }
                Ok(OrderedMap(out))
            }
        }
        d.deserialize_map(V(std::marker::PhantomData))
    }
}

fn check_accounts<T>(map: &[(String, T)], field: &str) -> Result<(), Reject> {
    for (k, _) in map {
        if !syntax::is_account(k) {
            return Err(invalid(field, format!("`{k}` is not an account")));
        }
    }
    Ok(())
}

fn hands(f: &mut Fields<'_>, size: usize) -> Result<ByAccount<Vec<String>>, Reject> {
    let OrderedMap(hands) =
        f.typed::<OrderedMap<Vec<String>>>("hands", "an object of account to card list")?;
    check_accounts(&hands, "hands")?;
    if hands.len() != 2 {
        return Err(invalid(
            "hands",
            format!("two-player Belote has 2 hands, got {}", hands.len()),
        ));
    }
    for (acc, cards) in &hands {
        if cards.len() != size {
            return Err(invalid(
                format!("hands.{acc}"),
                format!("expected {size} cards, got {}", cards.len()),
            ));
        }
        if let Some(bad) = cards.iter().find(|c| !syntax::is_card(c)) {
            return Err(invalid(
                format!("hands.{acc}"),
                format!("`{bad}` is not a card"),
            ));
        }
    }
    Ok(hands)
}

fn by_account_ints(
    f: &mut Fields<'_>,
    field: &str,
    nonneg: bool,
) -> Result<ByAccount<i64>, Reject> {
    let OrderedMap(map) = f.typed::<OrderedMap<i64>>(field, "an object of account to integer")?;
    check_accounts(&map, field)?;
    if nonneg && let Some((acc, v)) = map.iter().find(|(_, v)| *v < 0) {
        return Err(invalid(
            format!("{field}.{acc}"),
            format!("must be >= 0, got {v}"),
        ));
    }
    Ok(map)
}

#[derive(Deserialize)]
struct PlayerIn {
    account: String,
    seat: String,
    ip: String,
    device: String,
}

#[derive(Deserialize)]
struct ClockIn {
    move_s: Option<i64>,
    turn_s: Option<i64>,
    select_s: Option<i64>,
    max_timeouts: Option<i64>,
}

#[derive(Deserialize)]
struct LudoVariantIn {
    name: String,
    players: i64,
    tokens: i64,
    exit_on: Vec<i64>,
    safe_squares: bool,
    bonus_on_six: bool,
    three_sixes: bool,
    bonus_on_capture: bool,
    bonus_on_finish: bool,
    turn_s: i64,
    max_timeouts: i64,
}

#[derive(Deserialize)]
struct BeloteVariantIn {
    target: i64,
}

fn positive(v: i64, field: &str) -> Result<u32, Reject> {
    if v <= 0 || v > i64::from(u32::MAX) {
        return Err(invalid(
            field,
            format!("must be a positive integer, got {v}"),
        ));
    }
    Ok(v as u32)
}

fn game_started(f: &mut Fields<'_>) -> Result<GameStarted, Reject> {
    let kind = f.enumeration("kind", Kind::parse, &names(Kind::ALL, Kind::as_str))?;
    let mode = f.enumeration("mode", Mode::parse, &names(Mode::ALL, Mode::as_str))?;
    if mode == Mode::Medieval && kind != Kind::Draughts8 {
        return Err(invalid("mode", "medieval mode exists only with draughts8"));
    }
    let variant = match kind {
        Kind::Ludo => {
            let v: LudoVariantIn = f.typed("variant", "a Ludo variant object")?;
            if v.players != 2 && v.players != 4 {
                return Err(invalid(
                    "variant.players",
                    format!("2 or 4, got {}", v.players),
                ));
            }
            if !(1..=MAX_LUDO_TOKENS).contains(&v.tokens) {
                return Err(invalid(
                    "variant.tokens",
                    format!("1-{MAX_LUDO_TOKENS}, got {}", v.tokens),
                ));
            }
            if v.exit_on.is_empty() || !v.exit_on.iter().all(|d| (1..=6).contains(d)) {
                return Err(invalid(
                    "variant.exit_on",
                    "a non-empty list of die values 1-6",
                ));
            }
            if v.name.is_empty() {
                return Err(invalid("variant.name", "must not be empty"));
            }
            Some(Variant::Ludo(LudoVariant {
                name: v.name,
                players: v.players as u8,
                tokens: v.tokens as u8,
                exit_on: v.exit_on.iter().map(|&d| d as u8).collect(),
                safe_squares: v.safe_squares,
                bonus_on_six: v.bonus_on_six,
                three_sixes: v.three_sixes,
                bonus_on_capture: v.bonus_on_capture,
                bonus_on_finish: v.bonus_on_finish,
                turn_s: positive(v.turn_s, "variant.turn_s")?,
                max_timeouts: positive(v.max_timeouts, "variant.max_timeouts")?,
            }))
        }
        Kind::Belote => {
            let v: BeloteVariantIn = f.typed("variant", "an object {\"target\": points}")?;
            Some(Variant::Belote {
                target: positive(v.target, "variant.target")?,
            })
        }
        Kind::Draughts10 | Kind::Draughts8 => {
            if f.has("variant") {
                return Err(Reject::NotAllowed {
                    field: "variant".into(),
                    why: "draughts games carry no variant",
                });
            }
            None
        }
    };
    let rated = f.boolean("rated")?;
    let players_in: Vec<PlayerIn> =
        f.typed("players", "an array of {account, seat, ip, device}")?;
    let mut players = Vec::with_capacity(players_in.len());
    for (i, p) in players_in.into_iter().enumerate() {
        let seat = Seat::parse(&p.seat)
            .filter(|s| kind.seats().contains(s))
            .ok_or_else(|| {
                invalid(
                    format!("players[{i}].seat"),
                    format!("`{}` is not a seat of {kind}", p.seat),
                )
            })?;
        if !syntax::is_account(&p.account) {
            return Err(invalid(format!("players[{i}].account"), ACCOUNT_SHAPE));
        }
        for (name, value) in [("ip", &p.ip), ("device", &p.device)] {
            if !syntax::is_hash_text(value) {
                return Err(invalid(
                    format!("players[{i}].{name}"),
                    format!(
                        "an opaque hash: 1-{} characters, no control character",
                        syntax::MAX_HASH_CHARS
                    ),
                ));
            }
            if syntax::is_raw_address(value) {
                return Err(invalid(
                    format!("players[{i}].{name}"),
                    "an opaque hash made by the server, never a raw address",
                ));
            }
        }
        if players.iter().any(|q: &Player| q.seat == seat) {
            return Err(invalid(
                format!("players[{i}].seat"),
                format!("seat `{seat}` taken twice"),
            ));
        }
        if players.iter().any(|q: &Player| q.account == p.account) {
            return Err(invalid(
                format!("players[{i}].account"),
                format!("`{}` listed twice", p.account),
            ));
        }
        players.push(Player {
            account: p.account,
            seat,
            ip: p.ip,
            device: p.device,
        });
    }
    let expected_players = match &variant {
        Some(Variant::Ludo(v)) => usize::from(v.players),
        _ => 2,
    };
    if players.len() != expected_players {
        return Err(invalid(
            "players",
            format!("expected {expected_players} players, got {}", players.len()),
        ));
    }
    // The list's order is rules.md's (log-format.md): white then black, p1 then p2; for Ludo, the
    // first player then the others in seat order (red, green, yellow, blue, around the board).
    let rank: Vec<usize> = players
        .iter()
        .filter_map(|p| kind.seats().iter().position(|s| *s == p.seat))
        .collect();
    let descents = rank.windows(2).filter(|w| w[1] < w[0]).count();
    let in_order = if kind == Kind::Ludo {
        // A rotation of seat order: exactly one step down around the circle (the wrap included).
        let wrap = usize::from(rank.first() < rank.last());
        descents + wrap == 1
    } else {
        descents == 0
    };
    if !in_order {
        let listed: Vec<&str> = players.iter().map(|p| p.seat.as_str()).collect();
        return Err(invalid(
            "players",
            format!(
                "listed {}, not in seat order ({})",
                listed.join(", "),
                if kind == Kind::Ludo {
                    "the first player, then red, green, yellow, blue around the board"
                } else {
                    "as rules.md lists the seats"
                }
            ),
        ));
    }
    if kind == Kind::Ludo
        && expected_players == 2
        && players
            .iter()
            .any(|p| !matches!(p.seat, Seat::Red | Seat::Yellow))
    {
        return Err(invalid("players", "two-player Ludo uses red and yellow"));
    }
    let stake = f.nonneg("stake")?;
    let currency = f.string("currency")?;
    if currency.is_empty() {
        return Err(invalid("currency", "must not be empty"));
    }
    let c: ClockIn = f.typed("clock", "a clock object")?;
    // The clock is the platform's for the kind (log-format.md, rules.md), the variant's for Ludo:
    // a game logged with another was not played under the platform's rules, and the replay,
    // which times every turn by it, would judge its timeouts by the wrong limit.
    let ludo = match &variant {
        Some(Variant::Ludo(v)) => Some((v.turn_s, v.max_timeouts)),
        _ => None,
    };
    let get = |v: Option<i64>, name: &'static str, rule: u32| -> Result<u32, Reject> {
        let field = format!("clock.{name}");
        let v = match v {
            Some(v) => positive(v, &field)?,
            None => return Err(Reject::MissingField(field)),
        };
        if v != rule {
            let whose = if ludo.is_some() {
                "the variant's".to_string()
            } else {
                format!("the platform's for {kind}")
            };
            return Err(invalid(field, format!("must be {rule}, {whose}, got {v}")));
        }
        Ok(v)
    };
    let clock = match kind {
        Kind::Draughts10 => Clock {
            move_s: Some(get(c.move_s, "move_s", 30)?),
            ..Clock::default()
        },
        Kind::Draughts8 => Clock {
            move_s: Some(get(c.move_s, "move_s", 60)?),
            max_timeouts: Some(get(c.max_timeouts, "max_timeouts", 3)?),
            select_s: if mode == Mode::Medieval {
                Some(get(c.select_s, "select_s", 20)?)
            } else {
                None
            },
            turn_s: None,
        },
        Kind::Ludo => {
            // A Ludo game always has its variant (checked above).
            let (turn_s, max_timeouts) = ludo.unwrap_or_default();
            Clock {
                turn_s: Some(get(c.turn_s, "turn_s", turn_s)?),
                max_timeouts: Some(get(c.max_timeouts, "max_timeouts", max_timeouts)?),
                ..Clock::default()
            }
        }
        Kind::Belote => Clock {
            move_s: Some(get(c.move_s, "move_s", 30)?),
            max_timeouts: Some(get(c.max_timeouts, "max_timeouts", 3)?),
            ..Clock::default()
        },
    };
    let commitment = f.opt_string("commitment")?;
    match (kind.uses_seed(mode), &commitment) {
        (true, None) => return Err(Reject::MissingField("commitment".into())),
        (false, Some(_)) => {
            return Err(Reject::NotAllowed {
                field: "commitment".into(),
                why: "only Ludo, Belote and Medieval games commit to a seed",
            });
        }
        _ => {}
    }
    Ok(GameStarted {
        kind,
        mode,
        variant,
        rated,
        players,
        stake,
        currency,
        clock,
        commitment,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(s: &str) -> Result<Event, Reject> {
        parse_line(s.as_bytes())
    }

    const START: &str = r#"{"v":1,"game":"d10-7f3a","seq":0,"ts":"2026-11-29T20:15:00.000Z","type":"game_started","kind":"draughts10","mode":"standard","rated":true,"players":[{"account":"acc-1","seat":"white","ip":"ip-9c2e","device":"dv-51a0"},{"account":"acc-2","seat":"black","ip":"ip-1b7d","device":"dv-e33f"}],"stake":100,"currency":"coin","clock":{"move_s":30}}"#;

    #[test]
    fn detail_keys_are_escaped_as_serde_json_escapes_them() {
        for key in [
            "kind",
            "a b",
            "é",
            "\u{7f}",
            "q\"uote",
            "back\\slash",
            "tab\t",
            "nul\0",
            "\u{1f}x",
            "",
        ] {
            let mut fast = String::from("{");
            push_pair(&mut fast, key, "1");
            let expected = format!("{{{}:1", serde_json::to_string(key).unwrap());
            assert_eq!(fast, expected, "{key:?}");
        }
    }

    #[test]
    fn a_line_checked_as_text_first_parses_as_its_bytes_do() {
        let text = include_str!("../../../tests/fixtures/server-logs/sample.jsonl");
        let mut compared = 0;
        for l in text.lines().step_by(23) {
            assert_eq!(parse_str_detail(l), parse_line_detail(l.as_bytes()));
            assert!(parse_str_detail(l).is_ok(), "{l}");
            // With a byte order mark, with the CR of a CRLF line end.
            for framed in [format!("\u{feff}{l}"), format!("{l}\r")] {
                assert_eq!(
                    parse_str_detail(&framed),
                    parse_line_detail(framed.as_bytes())
                );
                assert_eq!(parse_str_detail(&framed), parse_str_detail(l));
            }
            // Each byte replaced, and the line cut: valid or rejected, the same result.
            let bytes = l.as_bytes();
            for at in (0..bytes.len()).step_by(3) {
                for r in [b'"', b'}', b' ', b'x', b'\r'] {
                    let mut b = bytes.to_vec();
                    b[at] = r;
                    if let Ok(s) = std::str::from_utf8(&b) {
                        assert_eq!(parse_str_detail(s), parse_line_detail(&b), "{s:?}");
                        compared += 1;
                    }
                }
                if let Some(cut) = l.get(..at) {
                    assert_eq!(parse_str_detail(cut), parse_line_detail(&bytes[..at]));
                }
            }
        }
        assert!(compared > 10_000, "{compared}");
        // Too long (counted without a byte order mark or a CR) before anything else.
        let long = format!("\u{feff}{}\r", "x".repeat(MAX_LINE_BYTES + 1));
        assert!(matches!(
            parse_str_detail(&long),
            Err(Reject::TooLong { .. })
        ));
        assert_eq!(parse_str_detail(&long), parse_line_detail(long.as_bytes()));
        let fits = format!("\u{feff}{}\r", "x".repeat(MAX_LINE_BYTES));
        assert_eq!(parse_str_detail(&fits), parse_line_detail(fits.as_bytes()));
        assert!(!matches!(
            parse_str_detail(&fits),
            Err(Reject::TooLong { .. })
        ));
    }

    #[test]
    fn a_key_twice_is_found_among_few_keys_and_among_many() {
        assert_eq!(first_duplicate(["", "a", ""].into_iter()), Some(""));
        assert_eq!(first_duplicate(["", "a"].into_iter()), None);
        assert_eq!(first_duplicate(["a", "", "b"].into_iter()), None);
        // The key that comes when the stack is full goes into the set with the others: seen again,
        // it is found.
        let keys: Vec<String> = (0..=FEW_KEYS).map(|i| format!("k{i}")).collect();
        let mut again: Vec<&str> = keys.iter().map(String::as_str).collect();
        again.push(&keys[FEW_KEYS]);
        assert_eq!(
            first_duplicate(again.into_iter()),
            Some(keys[FEW_KEYS].as_str())
        );
        for n in [2usize, FEW_KEYS, FEW_KEYS + 1, 5000] {
            let keys: Vec<String> = (0..n).map(|i| format!("k{i}")).collect();
            assert_eq!(
                first_duplicate(keys.iter().map(String::as_str)),
                None,
                "{n}"
            );
            for (at, of) in [(n - 1, 0), (n - 1, n - 2), (n / 2, n / 2 - 1)] {
                let mut with = keys.clone();
                with.insert(at, keys[of].clone());
                let found = first_duplicate(with.iter().map(String::as_str));
                assert_eq!(found, Some(keys[of].as_str()), "{n} {at} {of}");
            }
        }
        // A line of many unknown fields, one of them twice.
        let fields: String = (0..3000).map(|i| format!(",\"x{i}\":{i}")).collect();
        let open = &START[..START.len() - 1];
        let ok = format!("{open}{fields}}}");
        assert_eq!(line(&ok).map(|e| e.extra.len()), Ok(3000));
        let twice = format!("{open}{fields},\"x1234\":0}}");
        assert_eq!(
            line(&twice).unwrap_err(),
            Reject::DuplicateField("x1234".into())
        );
    }

    #[test]
    fn game_started_parses() {
        let e = line(START).unwrap();
        assert_eq!(e.game, "d10-7f3a");
        let Body::GameStarted(g) = &e.body else {
            panic!("not a start")
        };
        assert_eq!(g.kind, Kind::Draughts10);
        assert_eq!(g.players[1].seat, Seat::Black);
        assert_eq!(g.clock.move_s, Some(30));
        assert!(e.extra.is_empty());
    }

    #[test]
    fn unknown_fields_are_kept() {
        let text = START.replace("\"rated\":true", "\"rated\":true,\"region\":{\"eu\":1}");
        let p = parse_line_detail(text.as_bytes()).unwrap();
        assert_eq!(p.event.extra.len(), 1);
        assert_eq!(p.event.extra[0].0, "region");
        assert_eq!(p.event.extra[0].1, "{\"eu\":1}");
        assert_eq!(p.extra.as_deref(), Some("{\"region\":{\"eu\":1}}"));
        assert!(p.detail.contains("\"region\":{\"eu\":1}"));
        assert!(p.detail.starts_with("{\"kind\":\"draughts10\""));
    }

    const LUDO_START: &str = r#"{"v":1,"game":"lu-1","seq":0,"ts":"2026-11-20T00:25:15.122Z","type":"game_started","kind":"ludo","mode":"standard","variant":{"name":"quick","players":2,"tokens":2,"exit_on":[1,6],"safe_squares":true,"bonus_on_six":true,"three_sixes":true,"bonus_on_capture":false,"bonus_on_finish":false,"turn_s":10,"max_timeouts":3},"rated":false,"players":[{"account":"acc-1","seat":"red","ip":"ip-8f0f","device":"dv-cae1"},{"account":"acc-2","seat":"yellow","ip":"ip-b19f","device":"dv-d210"}],"stake":10,"currency":"coin","clock":{"turn_s":10,"max_timeouts":3},"commitment":"d7957a839593550d564b0f7c1cd0c45b53b88a4abb3a50de7c8a120c16f2b5e1"}"#;

    const LUDO_MOVE: &str = r#"{"v":1,"game":"lu-1","seq":2,"ts":"2026-11-20T00:25:18.678Z","type":"move","player":"acc-1","token":1,"status":"accepted","think_ms":2609}"#;

    #[test]
    fn ip_and_device_are_opaque_hashes_in_any_encoding() {
        let b64 = START.replace("\"ip\":\"ip-9c2e\"", "\"ip\":\"aGVsbG8+/w==\"");
        let Body::GameStarted(g) = line(&b64).unwrap().body else {
            panic!("not a start")
        };
        assert_eq!(g.players[0].ip, "aGVsbG8+/w==");
        let long = START.replace("dv-51a0", &"é".repeat(256));
        assert_eq!(code(&long), "ok");
        let too_long = START.replace("dv-51a0", &"é".repeat(257));
        assert_eq!(code(&too_long), "invalid_value");
        assert_eq!(code(&START.replace("dv-51a0", "")), "invalid_value");
        assert_eq!(
            code(&START.replace("dv-51a0", "a\\u0007b")),
            "invalid_value"
        );
    }

    #[test]
    fn ip_and_device_are_never_raw_addresses() {
        for raw in [
            "203.0.113.7",
            "203.0.113.7:443",
            "2001:db8::1",
            "[2001:db8::1]:443",
            "::ffff:10.0.0.1",
            "00:1a:2b:3c:4d:5e",
            "00-1A-2B-3C-4D-5E",
        ] {
            assert_eq!(
                code(&START.replace("ip-9c2e", raw)),
                "invalid_value",
                "{raw}"
            );
            assert_eq!(
                code(&START.replace("dv-e33f", raw)),
                "invalid_value",
                "{raw}"
            );
        }
        // Hashes, whatever their encoding, even with the separators of an address.
        for hash in [
            "9c2e51a0",
            "ip-9c2e",
            "a.b.c.d",
            "1.2.3",
            "sha256:9f86d081884c7d659a2feaa0c55ad015",
            "00:1a:2b:3c:4d",
            "00:1a-2b:3c:4d:5e",
        ] {
            assert_eq!(code(&START.replace("ip-9c2e", hash)), "ok", "{hash}");
        }
    }

    #[test]
    fn the_clock_is_the_platforms_for_the_kind_and_the_variants_for_ludo() {
        assert_eq!(code(START), "ok");
        assert_eq!(
            code(&START.replace("{\"move_s\":30}", "{\"move_s\":3600}")),
            "invalid_value"
        );
        assert_eq!(code(LUDO_START), "ok");
        for clock in [
            "{\"turn_s\":15,\"max_timeouts\":3}",
            "{\"turn_s\":10,\"max_timeouts\":5}",
        ] {
            let text = LUDO_START.replace("{\"turn_s\":10,\"max_timeouts\":3}", clock);
            assert_eq!(code(&text), "invalid_value", "{clock}");
        }
        // A variant with other settings carries them in its clock.
        let slow = LUDO_START.replace("\"turn_s\":10", "\"turn_s\":20");
        assert_eq!(code(&slow), "ok");
        let Body::GameStarted(g) = line(&slow).unwrap().body else {
            panic!("not a start")
        };
        assert_eq!(g.clock.turn_s, Some(20));
        let brazilian = START
            .replace("draughts10", "draughts8")
            .replace("{\"move_s\":30}", "{\"move_s\":60,\"max_timeouts\":3}");
        assert_eq!(code(&brazilian), "ok");
        assert_eq!(
            code(&brazilian.replace("\"max_timeouts\":3", "\"max_timeouts\":4")),
            "invalid_value"
        );
    }

    #[test]
    fn players_are_listed_in_seat_order() {
        let swapped = START
            .replace("\"seat\":\"white\"", "\"seat\":\"w\"")
            .replace("\"seat\":\"black\"", "\"seat\":\"white\"")
            .replace("\"seat\":\"w\"", "\"seat\":\"black\"");
        assert_eq!(code(&swapped), "invalid_value");
        // Ludo: the first player, then around the board.
        let yellow_first = LUDO_START
            .replace("\"seat\":\"red\"", "\"seat\":\"r\"")
            .replace("\"seat\":\"yellow\"", "\"seat\":\"red\"")
            .replace("\"seat\":\"r\"", "\"seat\":\"yellow\"");
        assert_eq!(code(&yellow_first), "ok");
        let four = |seats: [&str; 4]| {
            let players: Vec<String> = seats
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    format!(
                        "{{\"account\":\"acc-{i}\",\"seat\":\"{s}\",\"ip\":\"ip-{i}\",\"device\":\"dv-{i}\"}}"
                    )
                })
                .collect();
            let start = LUDO_START
                .replace("\"players\":2", "\"players\":4")
                .replace("\"tokens\":2", "\"tokens\":4");
            let from = start.find("\"players\":[").unwrap();
            let to = from + start[from..].find(']').unwrap() + 1;
            code(&format!(
                "{}\"players\":[{}]{}",
                &start[..from],
                players.join(","),
                &start[to..]
            ))
        };
        assert_eq!(four(["red", "green", "yellow", "blue"]), "ok");
        assert_eq!(four(["yellow", "blue", "red", "green"]), "ok");
        assert_eq!(four(["blue", "red", "green", "yellow"]), "ok");
        assert_eq!(four(["red", "yellow", "green", "blue"]), "invalid_value");
        assert_eq!(four(["green", "red", "yellow", "blue"]), "invalid_value");
    }

    #[test]
    fn an_accepted_pass_has_no_think_time() {
        let pass = LUDO_MOVE.replace("\"token\":1", "\"pass\":true");
        assert_eq!(code(&pass), "invalid_value");
        assert_eq!(code(&pass.replace("2609", "0")), "ok");
        // A rejected attempt to pass is timed as any attempt.
        let rejected = pass.replace(
            "\"status\":\"accepted\"",
            "\"status\":\"rejected\",\"reason\":\"illegal\"",
        );
        assert_eq!(code(&rejected), "ok");
    }

    #[test]
    fn accounts_are_any_text_without_control_characters() {
        // The contract says only "strings such as `acc-10482`".
        for name in ["acc/1", "ac c", "o'brien", "accé", "a\\\"b", "用户:7"] {
            let json = serde_json::to_string(name).unwrap();
            let text = START.replace("\"acc-1\"", &json);
            let Body::GameStarted(g) = line(&text).unwrap().body else {
                panic!("not a start")
            };
            assert_eq!(g.players[0].account, name);
            let mv = LUDO_MOVE.replace("\"acc-1\"", &json);
            assert_eq!(code(&mv), "ok", "{name}");
        }
        for bad in ["", "a\\u0007b", "a\\nb", &"x".repeat(129)] {
            let text = START.replace("acc-1", bad);
            assert_eq!(code(&text), "invalid_value", "{bad:?}");
            assert_eq!(
                code(&LUDO_MOVE.replace("acc-1", bad)),
                "invalid_value",
                "{bad:?}"
            );
        }
        assert!(ACCOUNT_SHAPE.contains(&syntax::MAX_ACCOUNT_CHARS.to_string()));
    }

    #[test]
    fn ludo_variants_may_have_more_than_four_tokens() {
        // The contract bounds neither a variant's tokens nor the index of an accepted move; the
        // parser takes whatever the rules engine can play.
        let six = LUDO_START.replace("\"tokens\":2", "\"tokens\":6");
        let Body::GameStarted(g) = line(&six).unwrap().body else {
            panic!("not a start")
        };
        let Some(Variant::Ludo(v)) = g.variant else {
            panic!("not a Ludo variant")
        };
        assert_eq!(v.tokens, 6);
        for (tokens, expected) in [(16, "ok"), (17, "invalid_value"), (0, "invalid_value")] {
            let text = LUDO_START.replace("\"tokens\":2", &format!("\"tokens\":{tokens}"));
            assert_eq!(code(&text), expected, "tokens {tokens}");
        }
        for (token, expected) in [
            (5, "ok"),
            (15, "ok"),
            (16, "invalid_value"),
            (-1, "invalid_value"),
        ] {
            let text = LUDO_MOVE.replace("\"token\":1", &format!("\"token\":{token}"));
            assert_eq!(code(&text), expected, "token {token}");
        }
    }

    #[test]
    fn rejected_move_may_be_any_text() {
        let e = line(r#"{"v":1,"game":"g","seq":3,"ts":"2026-11-29T20:15:05.950Z","type":"move","player":"acc-1","move":"hello","status":"rejected","reason":"malformed","think_ms":948}"#)
            .unwrap();
        let Body::Move(m) = e.body else { panic!() };
        assert_eq!(m.action, MoveAction::Draughts("hello".into()));
        assert_eq!(m.attempt.reason, Some(RejectReason::Malformed));
    }

    fn code(s: &str) -> &'static str {
        match line(s) {
            Ok(_) => "ok",
            Err(r) => r.code(),
        }
    }

    #[test]
    fn malformed_lines_get_specific_codes() {
        assert_eq!(code(""), "empty_line");
        assert_eq!(code("\u{feff}"), "empty_line");
        assert_eq!(code(&format!("\u{feff}{START}")), "ok");
        assert_eq!(code(&format!("\u{feff}\u{feff}{START}")), "invalid_json");
        assert_eq!(code("not json"), "invalid_json");
        assert_eq!(code("[1,2]"), "not_an_object");
        assert_eq!(code("{\"v\":1,"), "invalid_json");
        assert_eq!(code(&START.replace("\"v\":1,", "")), "missing_field");
        assert_eq!(
            code(&START.replace("\"v\":1", "\"v\":2")),
            "unsupported_version"
        );
        assert_eq!(code(&START.replace("\"v\":1", "\"v\":\"1\"")), "wrong_type");
        assert_eq!(
            code(&START.replace("\"seq\":0", "\"seq\":-1")),
            "invalid_value"
        );
        assert_eq!(
            code(&START.replace("\"seq\":0", "\"seq\":\"0\"")),
            "wrong_type"
        );
        assert_eq!(
            code(&START.replace("\"seq\":0", "\"seq\":0.5")),
            "wrong_type"
        );
        assert_eq!(code(&START.replace(".000Z", "Z")), "bad_timestamp");
        assert_eq!(
            code(&START.replace("game_started", "game_paused")),
            "unknown_type"
        );
        assert_eq!(
            code(&START.replace("\"d10-7f3a\"", "\"bad id!\"")),
            "invalid_value"
        );
        assert_eq!(
            code(&START.replace("\"rated\":true", "\"rated\":true,\"rated\":false")),
            "duplicate_field"
        );
        assert_eq!(
            code(&START.replace("\"white\"", "\"red\"")),
            "invalid_value"
        );
        let twice = START.replace("{\"move_s\":30}", "{\"move_s\":30,\"move_s\":20}");
        assert_eq!(code(&twice), "duplicate_field");
        assert_eq!(
            parse_line_detail(twice.as_bytes())
                .err()
                .and_then(|r| r.field().map(str::to_owned)),
            Some("clock.move_s".to_string())
        );
        assert_eq!(
            code(&START.replace(
                "\"account\":\"acc-1\"",
                "\"account\":\"acc-1\",\"account\":\"acc-3\""
            )),
            "duplicate_field"
        );
        assert_eq!(
            code(&START.replace(",\"clock\":{\"move_s\":30}", "")),
            "missing_field"
        );
        assert_eq!(
            code(&START.replace("\"stake\":100", "\"stake\":100,\"commitment\":\"00\"")),
            "field_not_allowed"
        );
    }

    #[test]
    fn attempt_rules() {
        let base = r#"{"v":1,"game":"g","seq":4,"ts":"2026-11-29T20:15:07.311Z","type":"move","player":"acc-1","move":"28x19","status":"accepted","think_ms":2309,"prev":"PREV"}"#;
        let prev = "ab".repeat(32);
        let ok = base.replace("PREV", &prev);
        assert_eq!(code(&ok), "ok");
        assert_eq!(code(&base.replace("PREV", "AB")), "invalid_value");
        assert_eq!(
            code(&ok.replace("\"accepted\"", "\"rejected\"")),
            "missing_field"
        );
        assert_eq!(
            code(&ok.replace(
                "\"think_ms\":2309",
                "\"think_ms\":2309,\"reason\":\"illegal\""
            )),
            "field_not_allowed"
        );
        assert_eq!(code(&ok.replace("28x19", "28x")), "invalid_value");
        assert_eq!(
            code(&ok.replace("\"move\":\"28x19\"", "\"token\":1,\"move\":\"28x19\"")),
            "field_not_allowed"
        );
    }

    #[test]
    fn roll_and_cards() {
        let roll = r#"{"v":1,"game":"lu","seq":1,"ts":"2026-11-20T00:25:16.069Z","type":"roll","player":"acc-7","n":0,"value":1}"#;
        assert_eq!(code(roll), "ok");
        assert_eq!(
            code(&roll.replace("\"value\":1", "\"value\":7")),
            "invalid_value"
        );
        let play = r#"{"v":1,"game":"be","seq":7,"ts":"2026-11-20T00:25:16.069Z","type":"play","player":"acc-3","deal":0,"card":"AS","status":"accepted","think_ms":2503}"#;
        assert_eq!(code(play), "ok");
        assert_eq!(code(&play.replace("\"AS\"", "\"1S\"")), "invalid_value");
        assert_eq!(
            code(&play.replace("\"think_ms\"", "\"announce\":\"belote\",\"think_ms\"")),
            "ok"
        );
        assert_eq!(
            code(&play.replace("\"think_ms\"", "\"announce\":\"tierce\",\"think_ms\"")),
            "invalid_value"
        );
    }

    #[test]
    fn not_utf8_and_too_long() {
        assert_eq!(
            parse_line(b"{\"v\":1,\"game\":\"\xff\"}")
                .unwrap_err()
                .code(),
            "not_utf8"
        );
        let long = vec![b' '; MAX_LINE_BYTES + 1];
        assert_eq!(parse_line(&long).unwrap_err().code(), "line_too_long");
        // A line of exactly the limit, padded by an unknown field, with a BOM and a CRLF's CR:
        // they do not count; one byte more does.
        let pad = MAX_LINE_BYTES - START.len() - ",\"pad\":\"\"".len();
        let full = format!(
            "{},\"pad\":\"{}\"}}",
            &START[..START.len() - 1],
            "x".repeat(pad)
        );
        assert_eq!(full.len(), MAX_LINE_BYTES);
        let framed = format!("\u{feff}{full}\r");
        assert!(parse_line(framed.as_bytes()).is_ok());
        let over = framed.replacen("\"x", "\"xx", 1);
        assert_eq!(
            parse_line(over.as_bytes()).unwrap_err(),
            Reject::TooLong {
                len: MAX_LINE_BYTES + 1,
                max: MAX_LINE_BYTES
            }
        );
    }

    #[test]
    fn nested_keys_missing_or_twice_are_named_with_their_object() {
        let no_device = START.replacen(",\"device\":\"dv-51a0\"", "", 1);
        assert_eq!(
            line(&no_device).unwrap_err(),
            Reject::MissingField("players.device".into())
        );
        let end = r#"{"v":1,"game":"b-1","seq":9,"ts":"2026-11-29T20:15:00.000Z","type":"deal_ended","deal":0,"points":{"a":10,"a":20},"totals":{"a":10,"b":152},"outcome":"made","prev":"PREV"}"#
            .replace("PREV", &"0".repeat(64));
        assert_eq!(
            line(&end).unwrap_err(),
            Reject::DuplicateField("points.a".into())
        );
        // Minus zero is a float to serde_json, at the top as nested; a huge version is a version.
        let minus_zero = START.replacen("\"stake\":100", "\"stake\":-0", 1);
        assert_eq!(line(&minus_zero).unwrap_err().code(), "wrong_type");
        let nested = START.replacen("\"move_s\":30", "\"move_s\":-0", 1);
        assert_eq!(line(&nested).unwrap_err().code(), "wrong_type");
        let huge = START.replacen("\"v\":1", "\"v\":99999999999999999999", 1);
        assert_eq!(line(&huge).unwrap_err().code(), "unsupported_version");
        // A lone surrogate in a known string is a string that does not decode: not a wrong type.
        let lone = START.replacen("acc-1", "acc-\\ud800", 1);
        assert_eq!(line(&lone).unwrap_err().code(), "invalid_value");
    }
}
