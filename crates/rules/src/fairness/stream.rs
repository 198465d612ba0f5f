//! HMAC-SHA256 blocks and the `PREFIX:0 || PREFIX:1 || ...` integer streams.

use hmac::{Hmac, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// An HMAC-SHA256 instance keyed with the ASCII bytes of the seed, ready to be
/// cloned for each block.
pub(crate) fn keyed(seed_hex: &str) -> HmacSha256 {
    match HmacSha256::new_from_slice(seed_hex.as_bytes()) {
        Ok(mac) => mac,
        // RFC 2104 HMAC takes keys of any length (longer ones are hashed), and
        // the `hmac` crate never returns `InvalidLength` for `Hmac<D>`.
        Err(_) => unreachable!("HMAC-SHA256 accepts keys of any length"),
    }
}

/// One block from an already keyed HMAC.
pub(crate) fn keyed_block(mac: &HmacSha256, msg: &str) -> [u8; 32] {
    let mut m = mac.clone();
    m.update(msg.as_bytes());
    m.finalize().into_bytes().into()
}

/// `block(msg) = HMAC-SHA256(key = ASCII bytes of the hex seed, message = UTF-8 msg)`.
pub fn block(seed_hex: &str, msg: &str) -> [u8; 32] {
    keyed_block(&keyed(seed_hex), msg)
}

/// The stream named `PREFIX`: `block("PREFIX:0") || block("PREFIX:1") || ...`
/// read as consecutive 4-byte big-endian unsigned integers. It keeps its own
/// position across draws.
#[derive(Clone)]
pub struct Stream {
    mac: HmacSha256,
    prefix: String,
    /// Number of the next block to compute.
    next_block: u64,
    buf: [u8; 32],
    /// Byte offset of the next unread byte in `buf` (32: exhausted).
    offset: usize,
    /// 32-bit words read so far.
    words: u64,
}

impl std::fmt::Debug for Stream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key (the seed) is deliberately not printed.
        f.debug_struct("Stream")
            .field("prefix", &self.prefix)
            .field("words", &self.words)
            .finish_non_exhaustive()
    }
}

impl Stream {
    /// The stream `prefix` under `seed_hex`, at its start.
    pub fn new(seed_hex: &str, prefix: impl Into<String>) -> Self {
        Stream {
            mac: keyed(seed_hex),
            prefix: prefix.into(),
            next_block: 0,
            buf: [0; 32],
            offset: 32,
            words: 0,
        }
    }

    /// The stream's name (`PREFIX`).
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// How many 32-bit words have been read so far (the stream's position).
    pub fn position(&self) -> u64 {
        self.words
    }

    /// How many blocks have been computed so far.
    pub fn blocks_used(&self) -> u64 {
        self.next_block
    }

    /// The next 4-byte big-endian unsigned integer.
    pub fn next_u32(&mut self) -> u32 {
        if self.offset >= 32 {
            let msg = format!("{}:{}", self.prefix, self.next_block);
            self.buf = keyed_block(&self.mac, &msg);
            self.next_block += 1;
            self.offset = 0;
        }
        let o = self.offset;
        let v = u32::from_be_bytes([
            self.buf[o],
            self.buf[o + 1],
            self.buf[o + 2],
            self.buf[o + 3],
        ]);
        self.offset += 4;
        self.words += 1;
        v
    }

    /// A uniform integer in `0..n` by rejection sampling: draws `v` until
    /// `v < floor(2^32 / n) * n` and returns `v mod n`. `None` (and nothing
    /// drawn) when `n == 0`, an empty range.
    pub fn below(&mut self, n: u32) -> Option<u32> {
        if n == 0 {
            return None;
        }
        let n64 = u64::from(n);
        let limit = (1u64 << 32) / n64 * n64;
        loop {
            let v = self.next_u32();
            if u64::from(v) < limit {
                return Some(v % n);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc4231_case_2() {
        // RFC 4231 test case 2: key "Jefe".
        let b = block("Jefe", "what do ya want for nothing?");
        assert_eq!(
            crate::fairness::seed::hex(&b),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn stream_reads_blocks_in_order_big_endian() {
        let mut s = Stream::new("k", "P");
        let b0 = block("k", "P:0");
        let b1 = block("k", "P:1");
        for i in 0..8 {
            let w = u32::from_be_bytes([b0[4 * i], b0[4 * i + 1], b0[4 * i + 2], b0[4 * i + 3]]);
            assert_eq!(s.next_u32(), w);
        }
        assert_eq!(s.position(), 8);
        assert_eq!(
            s.next_u32(),
            u32::from_be_bytes([b1[0], b1[1], b1[2], b1[3]])
        );
        assert_eq!(s.blocks_used(), 2);
    }

    #[test]
    fn below_zero_is_none_and_draws_nothing() {
        let mut s = Stream::new("k", "P");
        assert_eq!(s.below(0), None);
        assert_eq!(s.position(), 0);
        assert_eq!(s.below(1), Some(0));
        assert_eq!(s.position(), 1);
    }

    #[test]
    fn below_is_in_range() {
        let mut s = Stream::new("k", "P");
        for n in 1..200 {
            let v = s.below(n);
            assert!(matches!(v, Some(x) if x < n));
        }
    }

    #[test]
    fn below_rejects_values_in_the_biased_tail() {
        // With n = 3 * 2^30 + 1 the accepted range is [0, n) only, so about
        // a quarter of the words are rejected; every accepted value is < n.
        let n = 3 * (1u32 << 30) + 1;
        let mut s = Stream::new("seed", "tail");
        let mut draws = 0;
        for _ in 0..64 {
            let v = s.below(n);
            assert!(matches!(v, Some(x) if x < n));
            draws += 1;
        }
        assert!(s.position() > draws, "some words must have been rejected");
    }
}
