//! Drawing frames: draughts boards (10x10 and 8x8, PDN numbering, kings and Medieval pieces) and the Ludo board as inline SVG, Belote tables as HTML.
//!
//! PDN numbering: square 1 is the top-left dark square as White sees the
//! board; numbers run left to right, row by row, towards White (at the
//! bottom). Styling is by CSS classes only (the CSP forbids inline styles).

use std::fmt::Write as _;

use crate::games::belote::{Card, Suit};
use crate::games::draughts::{Color, Role, Variant};
use crate::games::ludo::{PlayerStatus, Seat, TokenPos};

use super::frames::{BeloteTable, Board, DraughtsBoard, LudoBoard, suit_symbol};

/// Escapes text for HTML and SVG.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

const CELL: u32 = 48;

fn centre(variant: Variant, n: u8) -> Option<(u32, u32)> {
    variant
        .row_col(n)
        .map(|(r, c)| (c * CELL + CELL / 2, r * CELL + CELL / 2))
}

/// The SVG of a draughts position.
pub fn draughts_svg(b: &DraughtsBoard) -> String {
    draughts_svg_with(b, &[])
}

/// The SVG of a draughts position with more move lines drawn over it: (squares, CSS class, title).
pub fn draughts_svg_with(b: &DraughtsBoard, lines: &[(&[u8], &str, &str)]) -> String {
    let v = b.variant;
    let size = u32::from(v.size());
    let side = size * CELL;
    let mut s = String::with_capacity(16 * 1024);
    let _ = write!(
        s,
        "<svg class=\"board draughts\" viewBox=\"0 0 {side} {side}\" role=\"img\" aria-label=\"{} board\" xmlns=\"http://www.w3.org/2000/svg\">",
        if size == 10 { "10x10" } else { "8x8" }
    );
    for row in 0..size {
        for col in 0..size {
            let dark = (row + col) % 2 == 1;
            let _ = write!(
                s,
                "<rect class=\"{}\" x=\"{}\" y=\"{}\" width=\"{CELL}\" height=\"{CELL}\"/>",
                if dark { "sq-dark" } else { "sq-light" },
                col * CELL,
                row * CELL
            );
        }
    }
    let mark = |s: &mut String, n: u8, class: &str| {
        if let Some((r, c)) = v.row_col(n) {
            let _ = write!(
                s,
                "<rect class=\"{class}\" x=\"{}\" y=\"{}\" width=\"{CELL}\" height=\"{CELL}\"/>",
                c * CELL,
                r * CELL
            );
        }
    };
    for &n in &b.path {
        mark(&mut s, n, "sq-path");
    }
    for n in 1..=v.squares() {
        if let Some((r, c)) = v.row_col(n) {
            let _ = write!(
                s,
                "<text class=\"sq-num\" x=\"{}\" y=\"{}\">{n}</text>",
                c * CELL + 2,
                r * CELL + 9
            );
        }
    }
    let polyline = |s: &mut String, squares: &[u8], class: &str| {
        let pts: Vec<String> = squares
            .iter()
            .filter_map(|&n| centre(v, n))
            .map(|(x, y)| format!("{x},{y}"))
            .collect();
        if pts.len() >= 2 {
            let _ = write!(
                s,
                "<polyline class=\"{class}\" points=\"{}\"/>",
                pts.join(" ")
            );
        }
    };
    for (n, p) in &b.pieces {
        let Some((x, y)) = centre(v, *n) else {
            continue;
        };
        let color = if p.color == Color::White {
            "white"
        } else {
            "black"
        };
        let r = CELL * 9 / 25;
        let _ = write!(
            s,
            "<g class=\"piece {color}{}{}\"><title>{color} {} on {n}{}</title><circle cx=\"{x}\" cy=\"{y}\" r=\"{r}\"/><circle class=\"rim\" cx=\"{x}\" cy=\"{y}\" r=\"{}\"/>",
            if p.role == Role::King { " king" } else { "" },
            if p.medieval { " medieval" } else { "" },
            if p.role == Role::King { "king" } else { "man" },
            if p.medieval { " (medieval)" } else { "" },
            r * 3 / 4
        );
        if p.role == Role::King {
            // A crown: three points on a band.
            let (x, y) = (x as i64, y as i64);
            let _ = write!(
                s,
                "<path class=\"crown\" d=\"M{} {} L{} {} L{} {} L{} {} L{} {} L{} {} L{} {} Z\"/>",
                x - 10,
                y + 6,
                x - 11,
                y - 6,
                x - 4,
                y,
                x,
                y - 9,
                x + 4,
                y,
                x + 11,
                y - 6,
                x + 10,
                y + 6
            );
        }
        if p.medieval {
            let (x, y) = (x as i64, y as i64);
            let _ = write!(
                s,
                "<path class=\"shield\" d=\"M{} {} h14 v5 q0 9 -7 12 q-7 -3 -7 -12 z\"/>",
                x + 4,
                y - 20
            );
        }
        s.push_str("</g>");
    }
    for &n in &b.captured {
        if let Some((x, y)) = centre(v, n) {
            let _ = write!(
                s,
                "<g class=\"captured\"><title>captured on {n}</title><path d=\"M{} {} L{} {} M{} {} L{} {}\"/></g>",
                x - 12,
                y - 12,
                x + 12,
                y + 12,
                x + 12,
                y - 12,
                x - 12,
                y + 12
            );
        }
    }
    if let Some(n) = b.lost_attacker
        && let Some((x, y)) = centre(v, n)
    {
        let _ = write!(
            s,
            "<g class=\"lost-attacker\"><title>the attacker from {n} lost its duel and left the board</title><circle cx=\"{x}\" cy=\"{y}\" r=\"{}\"/></g>",
            CELL * 2 / 5
        );
    }
    polyline(&mut s, &b.path, "move-path");
    polyline(&mut s, &b.attempted, "attempt-path");
    for (squares, class, title) in lines {
        let _ = write!(s, "<g class=\"{class}\"><title>{}</title>", esc(title));
        polyline(&mut s, squares, "line");
        if let Some((x, y)) = squares.last().and_then(|&n| centre(v, n)) {
            let _ = write!(s, "<circle class=\"end\" cx=\"{x}\" cy=\"{y}\" r=\"7\"/>");
        }
        s.push_str("</g>");
    }
    for &(n, won) in &b.duels {
        if let Some((x, y)) = centre(v, n) {
            let _ = write!(
                s,
                "<g class=\"duel {}\"><title>duel on {n}: {}</title><circle cx=\"{}\" cy=\"{}\" r=\"9\"/><text x=\"{}\" y=\"{}\">{}</text></g>",
                if won { "won" } else { "lost" },
                if won {
                    "won by the attacker"
                } else {
                    "lost by the attacker"
                },
                x + 14,
                y + 14,
                x + 14,
                y + 18,
                if won { "W" } else { "L" }
            );
        }
    }
    s.push_str("</svg>");
    let m = &b.material;
    let _ = write!(
        s,
        "<div class=\"board-legend\"><span><b>White</b> {} {}: {} men, {} kings{}</span><span><b>Black</b> {} {}: {} men, {} kings{}</span><span>{} to move{}</span></div>",
        esc(&b.white),
        if b.turn == Color::White { "●" } else { "" },
        m.white.men,
        m.white.kings,
        if m.white.medieval > 0 {
            format!(", {} medieval", m.white.medieval)
        } else {
            String::new()
        },
        esc(&b.black),
        if b.turn == Color::Black { "●" } else { "" },
        m.black.men,
        m.black.kings,
        if m.black.medieval > 0 {
            format!(", {} medieval", m.black.medieval)
        } else {
            String::new()
        },
        if b.turn == Color::White {
            "White"
        } else {
            "Black"
        },
        if b.selecting {
            " (medieval selection pending)"
        } else {
            ""
        },
    );
    s.push_str("<p class=\"board-key\"><span class=\"k k-path\"></span>last move <span class=\"k k-cap\">✕</span>captured <span class=\"k k-att\"></span>rejected attempt <span class=\"k k-crown\">♛</span>king <span class=\"k k-shield\"></span>medieval <span class=\"k k-won\">W</span><span class=\"k k-lost\">L</span>duel won / lost</p>");
    s
}

// ----- Ludo -----

const LCELL: f64 = 32.0;

/// Red's track squares (col, row) on the 15x15 grid, absolute square 0 first, clockwise.
fn track() -> [(i32, i32); 52] {
    let mut t = [(0, 0); 52];
    let mut i = 0;
    let mut push = |c: i32, r: i32| {
        if i < 52 {
            t[i] = (c, r);
            i += 1;
        }
    };
    for c in 1..=5 {
        push(c, 6);
    }
    for r in (0..=5).rev() {
        push(6, r);
    }
    push(7, 0);
    for r in 0..=5 {
        push(8, r);
    }
    for c in 9..=14 {
        push(c, 6);
    }
    push(14, 7);
    for c in (9..=14).rev() {
        push(c, 8);
    }
    for r in 9..=14 {
        push(8, r);
    }
    push(7, 14);
    for r in (9..=14).rev() {
        push(6, r);
    }
    for c in (0..=5).rev() {
        push(c, 8);
    }
    push(0, 7);
    push(0, 6);
    t
}

fn seat_turns(seat: Seat) -> u32 {
    match seat {
        Seat::Red => 0,
        Seat::Green => 1,
        Seat::Yellow => 2,
        Seat::Blue => 3,
    }
}

/// Rotates a point of the 15x15 grid (cell units, may be fractional) a quarter turn clockwise `k` times.
fn rot(mut p: (f64, f64), k: u32) -> (f64, f64) {
    for _ in 0..k {
        p = (15.0 - p.1, p.0);
    }
    p
}

fn seat_class(seat: Seat) -> &'static str {
    seat.as_str()
}

/// Centre (cell units) of a token, before stacking offsets. Yard slots use the token index.
fn token_cell(seat: Seat, pos: TokenPos, token: usize) -> Option<(f64, f64)> {
    let k = seat_turns(seat);
    match pos {
        TokenPos::Removed => None,
        TokenPos::Yard => {
            let slots = [(2.0, 2.0), (4.0, 2.0), (2.0, 4.0), (4.0, 4.0)];
            let (x, y) = slots[token % 4];
            Some(rot((x, y), k))
        }
        TokenPos::At(p) if p <= 50 => {
            let sq = seat.square(p);
            let (c, r) = track()[usize::from(sq)];
            Some((f64::from(c) + 0.5, f64::from(r) + 0.5))
        }
        TokenPos::At(p) if p < 56 => {
            let step = f64::from(p - 50);
            Some(rot((step + 0.5, 7.5), k))
        }
        TokenPos::At(_) => Some(rot((6.6, 7.5), k)),
    }
}

fn die_svg(value: u8) -> String {
    let pips: &[(f64, f64)] = match value {
        1 => &[(0.5, 0.5)],
        2 => &[(0.25, 0.25), (0.75, 0.75)],
        3 => &[(0.25, 0.25), (0.5, 0.5), (0.75, 0.75)],
        4 => &[(0.25, 0.25), (0.75, 0.25), (0.25, 0.75), (0.75, 0.75)],
        5 => &[
            (0.25, 0.25),
            (0.75, 0.25),
            (0.5, 0.5),
            (0.25, 0.75),
            (0.75, 0.75),
        ],
        _ => &[
            (0.25, 0.2),
            (0.75, 0.2),
            (0.25, 0.5),
            (0.75, 0.5),
            (0.25, 0.8),
            (0.75, 0.8),
        ],
    };
    let mut s = format!(
        "<svg class=\"die\" viewBox=\"0 0 60 60\" role=\"img\" aria-label=\"die showing {value}\" xmlns=\"http://www.w3.org/2000/svg\"><rect x=\"2\" y=\"2\" width=\"56\" height=\"56\" rx=\"10\"/>"
    );
    for (x, y) in pips {
        let _ = write!(
            s,
            "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"5.5\"/>",
            4.0 + x * 52.0,
            4.0 + y * 52.0
        );
    }
    s.push_str("</svg>");
    s
}

/// The SVG of a Ludo board (and the die beside it, as HTML).
pub fn ludo_html(b: &LudoBoard) -> String {
    let side = 15.0 * LCELL;
    let mut s = String::with_capacity(24 * 1024);
    s.push_str("<div class=\"ludo-wrap\">");
    let _ = write!(
        s,
        "<svg class=\"board ludo\" viewBox=\"0 0 {side} {side}\" role=\"img\" aria-label=\"Ludo board\" xmlns=\"http://www.w3.org/2000/svg\"><rect class=\"ludo-bg\" width=\"{side}\" height=\"{side}\"/>"
    );
    let cell = |s: &mut String, c: f64, r: f64, class: &str| {
        let _ = write!(
            s,
            "<rect class=\"{class}\" x=\"{:.1}\" y=\"{:.1}\" width=\"{LCELL}\" height=\"{LCELL}\"/>",
            c * LCELL,
            r * LCELL
        );
    };
    for seat in Seat::ALL {
        let k = seat_turns(seat);
        let cls = seat_class(seat);
        // Yard: the 6x6 corner, rotated.
        let (x0, y0) = rot((0.0, 0.0), k);
        let (x1, y1) = rot((6.0, 6.0), k);
        let _ = write!(
            s,
            "<rect class=\"yard {cls}\" x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" rx=\"10\"/>",
            x0.min(x1) * LCELL,
            y0.min(y1) * LCELL,
            6.0 * LCELL,
            6.0 * LCELL
        );
        let (ix, iy) = rot((1.0, 1.0), k);
        let (jx, jy) = rot((5.0, 5.0), k);
        let _ = write!(
            s,
            "<rect class=\"yard-inner\" x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" rx=\"8\"/>",
            ix.min(jx) * LCELL,
            iy.min(jy) * LCELL,
            4.0 * LCELL,
            4.0 * LCELL
        );
        for slot in 0..4 {
            if let Some((x, y)) = token_cell(seat, TokenPos::Yard, slot) {
                let _ = write!(
                    s,
                    "<circle class=\"yard-slot\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"11\"/>",
                    x * LCELL,
                    y * LCELL
                );
            }
        }
        // Home column.
        for step in 1..=5 {
            let (c, r) = rot((f64::from(step) + 0.5, 7.5), k);
            cell(&mut s, c - 0.5, r - 0.5, &format!("home {cls}"));
        }
        // Centre triangle.
        let pts: Vec<String> = [(6.0, 6.0), (7.5, 7.5), (6.0, 9.0)]
            .iter()
            .map(|&p| {
                let (x, y) = rot(p, k);
                format!("{:.1},{:.1}", x * LCELL, y * LCELL)
            })
            .collect();
        let _ = write!(
            s,
            "<polygon class=\"goal {cls}\" points=\"{}\"/>",
            pts.join(" ")
        );
    }
    let t = track();
    for (i, &(c, r)) in t.iter().enumerate() {
        let start = Seat::ALL.iter().find(|st| usize::from(st.start()) == i);
        let class = match start {
            Some(st) => format!("track start {}", seat_class(*st)),
            None => "track".to_owned(),
        };
        cell(&mut s, f64::from(c), f64::from(r), &class);
        if crate::games::ludo::SAFE_SQUARES.contains(&(i as u8)) {
            let (x, y) = (
                f64::from(c) * LCELL + LCELL / 2.0,
                f64::from(r) * LCELL + LCELL / 2.0,
            );
            let mut pts = Vec::new();
            for j in 0..10 {
                let a = std::f64::consts::PI / 5.0 * f64::from(j) - std::f64::consts::FRAC_PI_2;
                let rad = if j % 2 == 0 { 11.0 } else { 4.5 };
                pts.push(format!("{:.1},{:.1}", x + rad * a.cos(), y + rad * a.sin()));
            }
            let _ = write!(
                s,
                "<polygon class=\"safe\" points=\"{}\"><title>safe square {i}</title></polygon>",
                pts.join(" ")
            );
        }
    }
    // Tokens, stacked when they share a spot.
    let mut spots: Vec<((i64, i64), usize)> = Vec::new();
    for (p, toks) in b.tokens.iter().enumerate() {
        let Some(&(seat, ref account)) = b.seats.get(p) else {
            continue;
        };
        for (ti, pos) in toks.iter().enumerate() {
            let Some((cx, cy)) = token_cell(seat, *pos, ti) else {
                continue;
            };
            let key = ((cx * 10.0) as i64, (cy * 10.0) as i64);
            let n = spots.iter().filter(|(k, _)| *k == key).count();
            spots.push((key, p));
            let (dx, dy) = if matches!(pos, TokenPos::Yard) {
                (0.0, 0.0)
            } else {
                [
                    (0.0, 0.0),
                    (7.0, -7.0),
                    (-7.0, 7.0),
                    (7.0, 7.0),
                    (-7.0, -7.0),
                ][n % 5]
            };
            let (x, y) = (cx * LCELL + dx, cy * LCELL + dy);
            let moved = b.moved == Some((p, ti as u8));
            let where_ = match pos {
                TokenPos::Yard => "in the yard".to_owned(),
                TokenPos::At(56) => "finished".to_owned(),
                TokenPos::At(q) if *q > 50 => format!("home column step {}", q - 50),
                TokenPos::At(q) => format!("progress {q}, square {}", seat.square(*q)),
                TokenPos::Removed => "removed".to_owned(),
            };
            let _ = write!(
                s,
                "<g class=\"token {}{}\"><title>{} token {ti}: {where_}</title><circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"10\"/><text x=\"{x:.1}\" y=\"{:.1}\">{ti}</text></g>",
                seat_class(seat),
                if moved { " moved" } else { "" },
                esc(account),
                y + 4.0
            );
        }
    }
    s.push_str("</svg><div class=\"ludo-side\">");
    match b.die {
        Some(v) => {
            s.push_str(&die_svg(v));
        }
        None => s.push_str("<p class=\"muted\">No roll yet</p>"),
    }
    s.push_str("<ul class=\"ludo-players\">");
    for (p, (seat, account)) in b.seats.iter().enumerate() {
        let finished = b
            .tokens
            .get(p)
            .map_or(0, |t| t.iter().filter(|x| **x == TokenPos::At(56)).count());
        let total = b.tokens.get(p).map_or(0, Vec::len);
        let status = match b.status.get(p) {
            Some(PlayerStatus::Forfeited) => " — forfeited",
            Some(PlayerStatus::Left) => " — left",
            _ => "",
        };
        let _ = write!(
            s,
            "<li class=\"{}{}\"><span class=\"swatch {}\"></span>{} <span class=\"muted\">{}</span> {finished}/{total} home{status}</li>",
            if p == b.current { "current" } else { "" },
            if status.is_empty() { "" } else { " out" },
            seat_class(*seat),
            esc(account),
            seat.as_str()
        );
    }
    s.push_str("</ul>");
    if !b.captured.is_empty() {
        let names: Vec<String> = b
            .captured
            .iter()
            .map(|(p, t)| {
                format!(
                    "{} token {t}",
                    b.seats.get(*p).map_or(String::new(), |x| esc(&x.1))
                )
            })
            .collect();
        let _ = write!(s, "<p class=\"note\">Sent home: {}</p>", names.join(", "));
    }
    s.push_str("</div></div>");
    s
}

// ----- Belote -----

fn card_html(c: Card, extra: &str) -> String {
    let red = matches!(c.suit, Suit::Hearts | Suit::Diamonds);
    let rank = match c.rank.letter() {
        'T' => "10".to_owned(),
        r => r.to_string(),
    };
    format!(
        "<span class=\"pcard{}{extra}\" title=\"{c}\">{rank}<span class=\"suit\">{}</span></span>",
        if red { " red" } else { "" },
        suit_symbol(c.suit)
    )
}

fn hand_html(cards: &[Card], trump: Option<Suit>) -> String {
    let mut sorted = cards.to_vec();
    sorted.sort_by_key(|c| (c.suit.index(), c.rank.index()));
    if sorted.is_empty() {
        return "<span class=\"muted\">no cards</span>".to_owned();
    }
    sorted
        .iter()
        .map(|c| card_html(*c, if Some(c.suit) == trump { " trump" } else { "" }))
        .collect()
}

/// The HTML of a Belote table.
pub fn belote_html(t: &BeloteTable) -> String {
    let mut s = String::with_capacity(8 * 1024);
    let name = |p: usize| esc(t.accounts.get(p).map_or("", String::as_str));
    let tag = |p: usize| {
        let mut tags = Vec::new();
        if t.dealer == Some(p) {
            tags.push("dealer");
        }
        if t.taker == Some(p) {
            tags.push("taker");
        }
        if t.to_act == Some(p) {
            tags.push("to act");
        }
        tags.iter()
            .map(|x| format!("<span class=\"tag\">{x}</span>"))
            .collect::<String>()
    };
    s.push_str("<div class=\"belote\">");
    for p in [1usize, 0] {
        let _ = write!(
            s,
            "<div class=\"seat-row\"><div class=\"seat-name\">p{} {} {}<span class=\"muted\"> · {} tricks · {} pts</span></div><div class=\"hand\">{}</div></div>",
            p + 1,
            name(p),
            tag(p),
            t.tricks_won[p],
            t.card_points[p],
            hand_html(&t.hands[p], t.trump)
        );
        if p == 1 {
            s.push_str("<div class=\"felt\">");
            s.push_str("<div class=\"felt-col\"><div class=\"label\">Turned</div>");
            match t.turned {
                Some(c) => s.push_str(&card_html(c, "")),
                None => s.push_str("<span class=\"muted\">—</span>"),
            }
            s.push_str("</div><div class=\"felt-col\"><div class=\"label\">Trump</div>");
            match t.trump {
                Some(tr) => {
                    let _ = write!(
                        s,
                        "<span class=\"trump-suit{}\">{}</span>",
                        if matches!(tr, Suit::Hearts | Suit::Diamonds) {
                            " red"
                        } else {
                            ""
                        },
                        suit_symbol(tr)
                    );
                }
                None => s.push_str("<span class=\"muted\">not yet</span>"),
            }
            s.push_str("</div><div class=\"felt-col wide\"><div class=\"label\">Trick</div>");
            if !t.trick.is_empty() {
                for (p, c) in &t.trick {
                    let _ = write!(
                        s,
                        "<span class=\"played\">{}<small>{}</small></span>",
                        card_html(*c, ""),
                        name(*p)
                    );
                }
            } else if let Some(lt) = &t.last_trick {
                for (p, c) in &lt.cards {
                    let _ = write!(
                        s,
                        "<span class=\"played done\">{}<small>{}</small></span>",
                        card_html(*c, ""),
                        name(*p)
                    );
                }
                let _ = write!(
                    s,
                    "<div class=\"note\">Trick {} to {} (+{})</div>",
                    lt.number,
                    name(lt.winner),
                    lt.points
                );
            } else {
                s.push_str("<span class=\"muted\">—</span>");
            }
            s.push_str("</div></div>");
        }
    }
    s.push_str("<dl class=\"belote-facts\">");
    if let Some(d) = t.deal {
        let _ = write!(s, "<dt>Deal</dt><dd>{d}</dd>");
    }
    if !t.bids.is_empty() {
        let bids: Vec<String> = t
            .bids
            .iter()
            .map(|(p, b)| format!("{} {}", name(*p), esc(b)))
            .collect();
        let _ = write!(s, "<dt>Bids</dt><dd>{}</dd>", bids.join(" · "));
    }
    let _ = write!(
        s,
        "<dt>Match</dt><dd>{} {} – {} {}</dd>",
        name(0),
        t.totals[0],
        t.totals[1],
        name(1)
    );
    if let Some(r) = &t.result {
        let _ = write!(
            s,
            "<dt>Deal result</dt><dd>{} · {} – {}</dd>",
            esc(&r.outcome),
            r.points[0],
            r.points[1]
        );
    }
    s.push_str("</dl></div>");
    s
}

/// The markup of any board.
pub fn board_html(b: &Board) -> String {
    match b {
        Board::Draughts(d) => draughts_svg(d),
        Board::Ludo(l) => ludo_html(l),
        Board::Belote(t) => belote_html(t),
        Board::Empty => {
            "<p class=\"muted\">Nothing to draw: the game has no start event.</p>".to_owned()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::games::draughts::Position;

    #[test]
    fn engine_moves_are_diagonal_steps_on_the_drawing() {
        for v in [Variant::International, Variant::Brazilian] {
            let pos = Position::new(v);
            for m in pos.legal_moves() {
                let (Some((r0, c0)), Some((r1, c1))) =
                    (v.row_col(m.from().number()), v.row_col(m.to().number()))
                else {
                    panic!("square off the board");
                };
                assert_eq!(r0.abs_diff(r1), 1, "{m}");
                assert_eq!(c0.abs_diff(c1), 1, "{m}");
                assert!(r1 < r0, "white moves up: {m}");
            }
        }
    }

    #[test]
    fn ludo_track_is_a_loop_of_neighbours() {
        let t = track();
        for i in 0..52 {
            let (a, b) = (t[i], t[(i + 1) % 52]);
            let d = (a.0 - b.0).abs() + (a.1 - b.1).abs();
            // Neighbours, or the diagonal step around a corner of the cross.
            assert!(
                d == 1 || ((a.0 - b.0).abs() == 1 && (a.1 - b.1).abs() == 1),
                "{i}: {a:?} {b:?}"
            );
        }
        // Start squares of the four seats are the rotations of red's.
        for seat in Seat::ALL {
            let (c, r) = t[usize::from(seat.start())];
            let (x, y) = rot((1.5, 6.5), seat_turns(seat));
            assert_eq!((f64::from(c) + 0.5, f64::from(r) + 0.5), (x, y), "{seat}");
        }
    }
}
