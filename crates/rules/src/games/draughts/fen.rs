//! FEN for draughts positions: `W:W31-50:B1-20`.
//!
//! Grammar: `side ":" section ":" section`, the side to move being `W` or `B`
//! and each section a colour letter (`W` or `B`, each exactly once, in either
//! order) followed by a comma-separated list, possibly empty. An item is a
//! square (`32`), a king (`K32`) or a range (`31-35`, `K31-35`, `K31-K35`).
//! Extension for the Medieval mode (Brazilian board only): an `M` prefix marks a
//! medieval piece (`M27`, `MK3`; `K` and `M` may come in either order).
//!
//! Printing is canonical: side, White's section, Black's section; squares
//! ascending; runs of three or more consecutive plain men compressed as
//! ranges; kings and medieval pieces listed one by one.

use std::fmt::Write as _;

use super::position::Position;
use super::types::{Color, Piece, Role, Square, Variant};

/// Why FEN text was rejected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FenError {
    #[error("empty FEN")]
    Empty,
    #[error("FEN needs three ':'-separated fields (side, white, black), found {found}")]
    FieldCount { found: usize },
    #[error("side to move must be 'W' or 'B', found {found:?}")]
    BadSide { found: String },
    #[error("a piece list must start with 'W' or 'B', found {found:?}")]
    BadColor { found: String },
    #[error("the {color} piece list is given twice")]
    DuplicateColor { color: Color },
    #[error("empty item in a piece list (stray comma)")]
    EmptyItem,
    #[error("bad piece item {item:?}")]
    BadItem { item: String },
    #[error("square {number} is not on this board (1-{max})")]
    OutOfRange { number: u64, max: u8 },
    #[error("range {from}-{to} is not ascending")]
    BadRange { from: u64, to: u64 },
    #[error("square {square} is given twice")]
    SquareTwice { square: Square },
    #[error("medieval pieces ('M') exist only on the Brazilian board")]
    MedievalNotAllowed,
}

#[derive(Clone, Copy, Default, PartialEq, Eq)]
struct Prefix {
    king: bool,
    medieval: bool,
}

/// Splits `K`/`M` prefixes off an item part and parses the number.
fn parse_part(part: &str, item: &str) -> Result<(Prefix, u64), FenError> {
    let bad = || FenError::BadItem {
        item: item.to_string(),
    };
    let mut prefix = Prefix::default();
    let mut rest = part;
    loop {
        if let Some(r) = rest.strip_prefix('K') {
            if prefix.king {
                return Err(bad());
            }
            prefix.king = true;
            rest = r;
        } else if let Some(r) = rest.strip_prefix('M') {
            if prefix.medieval {
                return Err(bad());
            }
            prefix.medieval = true;
            rest = r;
        } else {
            break;
        }
    }
    if rest.is_empty()
        || !rest.bytes().all(|b| b.is_ascii_digit())
        || (rest.len() > 1 && rest.starts_with('0'))
    {
        return Err(bad());
    }
    let number = rest
        .bytes()
        .try_fold(0u64, |acc, b| {
            acc.checked_mul(10)
                .and_then(|v| v.checked_add(u64::from(b - b'0')))
        })
        .unwrap_or(u64::MAX);
    Ok((prefix, number))
}

fn square_of(variant: Variant, number: u64) -> Result<Square, FenError> {
    u32::try_from(number)
        .ok()
        .and_then(|n| variant.square(n))
        .ok_or(FenError::OutOfRange {
            number,
            max: variant.squares(),
        })
}

impl Position {
    /// Parses FEN for a board. See the module documentation for the grammar.
    pub fn from_fen(variant: Variant, fen: &str) -> Result<Position, FenError> {
        if fen.is_empty() {
            return Err(FenError::Empty);
        }
        let fields: Vec<&str> = fen.split(':').collect();
        if fields.len() != 3 {
            return Err(FenError::FieldCount {
                found: fields.len(),
            });
        }
        let turn = match fields[0] {
            "W" => Color::White,
            "B" => Color::Black,
            other => {
                return Err(FenError::BadSide {
                    found: other.to_string(),
                });
            }
        };
        let mut pos = Position::empty(variant, turn);
        let mut seen_colors = [false; 2];
        for field in &fields[1..] {
            let color = match field.chars().next() {
                Some('W') => Color::White,
                Some('B') => Color::Black,
                _ => {
                    return Err(FenError::BadColor {
                        found: (*field).to_string(),
                    });
                }
            };
            let idx = color as usize;
            if seen_colors[idx] {
                return Err(FenError::DuplicateColor { color });
            }
            seen_colors[idx] = true;
            let list = &field[1..];
            if list.is_empty() {
                continue;
            }
            for item in list.split(',') {
                if item.is_empty() {
                    return Err(FenError::EmptyItem);
                }
                let (prefix, first, last) = match item.split_once('-') {
                    None => {
                        let (p, n) = parse_part(item, item)?;
                        (p, n, n)
                    }
                    Some((a, b)) => {
                        let (pa, na) = parse_part(a, item)?;
                        let (pb, nb) = parse_part(b, item)?;
                        if pb != Prefix::default() && pb != pa {
                            return Err(FenError::BadItem {
                                item: item.to_string(),
                            });
                        }
                        (pa, na, nb)
                    }
                };
                if prefix.medieval && variant != Variant::Brazilian {
                    return Err(FenError::MedievalNotAllowed);
                }
                let first_sq = square_of(variant, first)?;
                let last_sq = square_of(variant, last)?;
                if first > last {
                    return Err(FenError::BadRange {
                        from: first,
                        to: last,
                    });
                }
                for n in first_sq.0..=last_sq.0 {
                    let sq = Square(n);
                    if pos.piece_at(sq).is_some() {
                        return Err(FenError::SquareTwice { square: sq });
                    }
                    let role = if prefix.king { Role::King } else { Role::Man };
                    pos.set_piece(
                        sq,
                        Some(Piece {
                            color,
                            role,
                            medieval: prefix.medieval,
                        }),
                    );
                }
            }
        }
        Ok(pos)
    }

    /// Canonical FEN of the position (see the module documentation).
    #[must_use]
    pub fn to_fen(&self) -> String {
        let mut out = String::new();
        out.push(self.turn.fen_char());
        for color in [Color::White, Color::Black] {
            out.push(':');
            out.push(color.fen_char());
            let pieces: Vec<(Square, Piece)> = self
                .pieces()
                .into_iter()
                .filter(|(_, p)| p.color == color)
                .collect();
            let mut items: Vec<String> = Vec::new();
            let mut i = 0;
            while i < pieces.len() {
                let (sq, p) = pieces[i];
                let plain = p.role == Role::Man && !p.medieval;
                let mut j = i;
                if plain {
                    while j + 1 < pieces.len() {
                        let (nsq, np) = pieces[j + 1];
                        if nsq.0 == pieces[j].0.0 + 1 && np.role == Role::Man && !np.medieval {
                            j += 1;
                        } else {
                            break;
                        }
                    }
                }
                if j >= i + 2 {
                    items.push(format!("{}-{}", sq, pieces[j].0));
                    i = j + 1;
                } else {
                    let mut s = String::new();
                    if p.medieval {
                        s.push('M');
                    }
                    if p.role == Role::King {
                        s.push('K');
                    }
                    let _ = write!(s, "{sq}");
                    items.push(s);
                    i += 1;
                }
            }
            out.push_str(&items.join(","));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_positions() {
        let p = Position::from_fen(Variant::International, "W:W31-50:B1-20").unwrap();
        assert_eq!(p, Position::new(Variant::International));
        assert_eq!(p.to_fen(), "W:W31-50:B1-20");
        let p = Position::from_fen(Variant::Brazilian, "W:W21-32:B1-12").unwrap();
        assert_eq!(p, Position::new(Variant::Brazilian));
    }

    #[test]
    fn fixture_forms() {
        let p = Position::from_fen(Variant::International, "B:W27,28,38,39,42:BK25").unwrap();
        assert_eq!(p.turn(), Color::Black);
        assert_eq!(p.to_fen(), "B:W27,28,38,39,42:BK25");
        let p = Position::from_fen(Variant::International, "W:B12,13,14:W25,27").unwrap();
        assert_eq!(p.to_fen(), "W:W25,27:B12-14");
        let p = Position::from_fen(Variant::International, "W:WK31-33,K40:B").unwrap();
        assert_eq!(p.to_fen(), "W:WK31,K32,K33,K40:B");
        let p = Position::from_fen(Variant::Brazilian, "W:WMK21,KM22,M23:B1").unwrap();
        assert_eq!(p.to_fen(), "W:WMK21,MK22,M23:B1");
    }

    #[test]
    fn errors() {
        let v = Variant::International;
        assert_eq!(Position::from_fen(v, ""), Err(FenError::Empty));
        assert_eq!(
            Position::from_fen(v, "W:W31"),
            Err(FenError::FieldCount { found: 2 })
        );
        assert!(matches!(
            Position::from_fen(v, "X:W31:B1"),
            Err(FenError::BadSide { .. })
        ));
        assert!(matches!(
            Position::from_fen(v, "W:X31:B1"),
            Err(FenError::BadColor { .. })
        ));
        assert_eq!(
            Position::from_fen(v, "W:W31:W1"),
            Err(FenError::DuplicateColor {
                color: Color::White
            })
        );
        assert_eq!(
            Position::from_fen(v, "W:W31,,32:B1"),
            Err(FenError::EmptyItem)
        );
        assert!(matches!(
            Position::from_fen(v, "W:W3a:B1"),
            Err(FenError::BadItem { .. })
        ));
        assert_eq!(
            Position::from_fen(v, "W:W51:B1"),
            Err(FenError::OutOfRange {
                number: 51,
                max: 50
            })
        );
        assert_eq!(
            Position::from_fen(v, "W:W35-31:B1"),
            Err(FenError::BadRange { from: 35, to: 31 })
        );
        assert_eq!(
            Position::from_fen(v, "W:W31:B31"),
            Err(FenError::SquareTwice { square: Square(31) })
        );
        assert_eq!(
            Position::from_fen(v, "W:WM31:B1"),
            Err(FenError::MedievalNotAllowed)
        );
        assert!(matches!(
            Position::from_fen(v, "W:WK31-M33:B1"),
            Err(FenError::BadItem { .. })
        ));
        assert!(matches!(
            Position::from_fen(v, "W:WKK31:B1"),
            Err(FenError::BadItem { .. })
        ));
    }
}
