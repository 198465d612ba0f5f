//! Seed format check and SHA-256 commitments.

use sha2::{Digest, Sha256};

/// Why a logged seed is not 64 lowercase hex characters.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SeedError {
    /// The seed does not have 64 characters (counted as bytes).
    #[error("seed has {0} characters, expected 64")]
    Length(usize),
    /// An upper-case hex digit (`A`-`F`) at this byte offset.
    #[error("seed has an upper-case hex digit {ch:?} at offset {offset}")]
    Uppercase {
        /// Byte offset in the seed.
        offset: usize,
        /// The offending character.
        ch: char,
    },
    /// A character that is not a hex digit at this byte offset.
    #[error("seed has a non-hex character {ch:?} at offset {offset}")]
    NonHex {
        /// Byte offset in the seed.
        offset: usize,
        /// The offending character.
        ch: char,
    },
}

/// Checks that `seed` is exactly 64 lowercase hex characters.
///
/// The character checks come first (so `"ABC"` is reported as upper case, the
/// most telling problem), then the length.
pub fn check_seed(seed: &str) -> Result<(), SeedError> {
    for (offset, ch) in seed.char_indices() {
        match ch {
            '0'..='9' | 'a'..='f' => {}
            'A'..='F' => return Err(SeedError::Uppercase { offset, ch }),
            _ => return Err(SeedError::NonHex { offset, ch }),
        }
    }
    if seed.len() != 64 {
        return Err(SeedError::Length(seed.len()));
    }
    Ok(())
}

/// The commitment to a seed: lowercase hex of SHA-256 over the seed's ASCII
/// bytes, exactly as written (no validation: see [`check_seed`]).
pub fn commitment(seed_hex: &str) -> String {
    hex(&Sha256::digest(seed_hex.as_bytes()))
}

/// Whether `commitment_hex` is the commitment of `seed_hex`. The comparison is
/// exact: an upper-case commitment does not match.
pub fn verify_commitment(seed_hex: &str, commitment_hex: &str) -> bool {
    commitment(seed_hex) == commitment_hex
}

/// Lowercase hex of bytes.
pub(crate) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0x0f)]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEED: &str = "9f2c4e7a1b3d5f60718293a4b5c6d7e8f9012a3b4c5d6e7f8091a2b3c4d5e6f7";

    #[test]
    fn well_formed_seed_passes() {
        assert_eq!(check_seed(SEED), Ok(()));
    }

    #[test]
    fn uppercase_seed_is_named() {
        let upper = SEED.to_uppercase();
        assert_eq!(
            check_seed(&upper),
            Err(SeedError::Uppercase { offset: 1, ch: 'F' })
        );
    }

    #[test]
    fn short_and_long_seeds_are_named() {
        assert_eq!(check_seed(&SEED[..63]), Err(SeedError::Length(63)));
        assert_eq!(check_seed(&format!("{SEED}0")), Err(SeedError::Length(65)));
        assert_eq!(check_seed(""), Err(SeedError::Length(0)));
    }

    #[test]
    fn non_hex_seed_is_named() {
        let bad = format!("{}g", &SEED[..63]);
        assert_eq!(
            check_seed(&bad),
            Err(SeedError::NonHex {
                offset: 63,
                ch: 'g'
            })
        );
        assert!(matches!(
            check_seed("é"),
            Err(SeedError::NonHex { offset: 0, .. })
        ));
    }

    #[test]
    fn commitment_of_empty_string_is_sha256_of_nothing() {
        assert_eq!(
            commitment(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn verify_commitment_is_exact() {
        let c = commitment(SEED);
        assert!(verify_commitment(SEED, &c));
        assert!(!verify_commitment(SEED, &c.to_uppercase()));
    }
}
