//! Ansible's `random` filter: `60 | random`, `list | random`, `start`,
//! `step`, and `seed`. With a seed the draw is Python's own: a Mersenne
//! Twister seeded as `random.Random(seed)` seeds it (a string through its
//! SHA-512), then `randrange` / `choice`, so `59 | random(seed=
//! inventory_hostname)` gives each host the number Ansible gives it.
//! Without one, the operating system's randomness, as Ansible's
//! `SystemRandom`.

use minijinja::value::{Kwargs, ValueKind};
use minijinja::{Error, ErrorKind, Value};

use crate::modules::kit::files::{digest_hex, Digest};

pub(super) fn random(
    end: &Value,
    start: Option<Value>,
    step: Option<Value>,
    kwargs: Kwargs,
) -> Result<Value, Error> {
    let start = start.or(kwargs.get("start")?);
    let step = step.or(kwargs.get("step")?);
    let seed: Option<Value> = kwargs.get("seed")?;
    kwargs.assert_all_used()?;
    let mut bits: Box<dyn Bits> = match seed.filter(|s| !s.is_none()) {
        Some(seed) => Box::new(Twister::seeded(&seed)?),
        None => Box::new(OsBits),
    };
    // Python: `if not start: start = 0`, `if not step: step = 1`.
    let int = |v: Option<Value>, default: i64| -> Result<i64, Error> {
        match v.filter(|v| v.is_true()) {
            None => Ok(default),
            Some(v) => v
                .as_i64()
                .ok_or_else(|| invalid("random: start and step must be integers")),
        }
    };
    if end.kind() == ValueKind::Number && end.is_integer() {
        let stop = end
            .as_i64()
            .ok_or_else(|| invalid("random: the end is too large"))?;
        let (start, step) = (int(start, 0)?, int(step, 1)?);
        return randrange(bits.as_mut(), start, stop, step).map(Value::from);
    }
    if start.is_some_and(|s| s.is_true()) || step.is_some_and(|s| s.is_true()) {
        return Err(invalid(
            "random: start and step can only be used with integer values",
        ));
    }
    let items: Vec<Value> = match end.kind() {
        ValueKind::Seq | ValueKind::String | ValueKind::Iterable => end.try_iter()?.collect(),
        _ => return Err(invalid("random can only be used on sequences and integers")),
    };
    if items.is_empty() {
        return Err(invalid("random: cannot choose from an empty sequence"));
    }
    let i = below(bits.as_mut(), items.len() as u64);
    Ok(items[i as usize].clone())
}

fn invalid(msg: &'static str) -> Error {
    Error::new(ErrorKind::InvalidOperation, msg)
}

/// Python's `Random.randrange(start, stop, step)`.
fn randrange(bits: &mut dyn Bits, start: i64, stop: i64, step: i64) -> Result<i64, Error> {
    let width = i128::from(stop) - i128::from(start);
    let n = match step {
        1 => width,
        s if s > 0 => (width + i128::from(s) - 1) / i128::from(s),
        // Only a positive count is kept, where truncating is flooring.
        s => (width + i128::from(s) + 1) / i128::from(s),
    };
    let n = u64::try_from(n)
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(|| invalid("random: empty range"))?;
    Ok((i128::from(start) + i128::from(step) * i128::from(below(bits, n))) as i64)
}

/// Python's `_randbelow_with_getrandbits`: as many bits as `n` has, drawn
/// again until below it.
fn below(bits: &mut dyn Bits, n: u64) -> u64 {
    let k = 64 - n.leading_zeros();
    loop {
        let r = getrandbits(bits, k);
        if r < n {
            return r;
        }
    }
}

/// Python's `getrandbits(k)` for `k` up to 64: whole words from the low
/// end, the last one cut to what is left.
fn getrandbits(bits: &mut dyn Bits, k: u32) -> u64 {
    if k <= 32 {
        return u64::from(bits.next_u32() >> (32 - k));
    }
    let low = u64::from(bits.next_u32());
    let high = u64::from(bits.next_u32() >> (64 - k));
    low | high << 32
}

trait Bits {
    fn next_u32(&mut self) -> u32;
}

struct OsBits;

impl Bits for OsBits {
    fn next_u32(&mut self) -> u32 {
        let mut word = [0u8; 4];
        // SAFETY: `word` is valid for its 4 bytes; getrandom(2) fills at
        // most that many.
        let n = unsafe { libc::getrandom(word.as_mut_ptr().cast(), word.len(), 0) };
        assert_eq!(n, 4, "getrandom(2) failed");
        u32::from_ne_bytes(word)
    }
}

const N: usize = 624;

/// MT19937, as CPython's `_random` module runs it.
struct Twister {
    mt: [u32; N],
    index: usize,
}

impl Twister {
    /// `random.Random(seed)`: an integer's absolute value, or a string's
    /// UTF-8 followed by its SHA-512 read as one big-endian integer, cut
    /// into 32-bit words from the low end.
    fn seeded(seed: &Value) -> Result<Twister, Error> {
        let bytes: Vec<u8> = if let Some(s) = seed.as_str() {
            let hex = digest_hex(Digest::Sha512, s.as_bytes());
            let digest = (0..hex.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex from the digest"));
            s.bytes().chain(digest).collect()
        } else if seed.kind() == ValueKind::Bool {
            vec![u8::from(seed.is_true())]
        } else if let Some(n) = seed.as_i64().filter(|_| seed.is_integer()) {
            n.unsigned_abs().to_be_bytes().to_vec()
        } else {
            return Err(invalid("random: the seed must be a string or an integer"));
        };
        let mut key: Vec<u32> = bytes
            .rchunks(4)
            .map(|c| c.iter().fold(0u32, |w, &b| w << 8 | u32::from(b)))
            .collect();
        while key.len() > 1 && key.last() == Some(&0) {
            key.pop();
        }
        if key.is_empty() {
            key.push(0);
        }
        Ok(Twister::by_array(&key))
    }

    fn by_genrand(s: u32) -> Twister {
        let mut mt = [0u32; N];
        mt[0] = s;
        for i in 1..N {
            mt[i] = 1_812_433_253u32
                .wrapping_mul(mt[i - 1] ^ (mt[i - 1] >> 30))
                .wrapping_add(i as u32);
        }
        Twister { mt, index: N }
    }

    fn by_array(key: &[u32]) -> Twister {
        let mut t = Twister::by_genrand(19_650_218);
        let mt = &mut t.mt;
        let (mut i, mut j) = (1usize, 0usize);
        for _ in 0..N.max(key.len()) {
            let prev = mt[i - 1] ^ (mt[i - 1] >> 30);
            mt[i] = (mt[i] ^ prev.wrapping_mul(1_664_525))
                .wrapping_add(key[j])
                .wrapping_add(j as u32);
            i += 1;
            j += 1;
            if i >= N {
                mt[0] = mt[N - 1];
                i = 1;
            }
            if j >= key.len() {
                j = 0;
            }
        }
        for _ in 0..N - 1 {
            let prev = mt[i - 1] ^ (mt[i - 1] >> 30);
            mt[i] = (mt[i] ^ prev.wrapping_mul(1_566_083_941)).wrapping_sub(i as u32);
            i += 1;
            if i >= N {
                mt[0] = mt[N - 1];
                i = 1;
            }
        }
        mt[0] = 0x8000_0000;
        t
    }

    fn twist(&mut self) {
        for i in 0..N {
            let y = (self.mt[i] & 0x8000_0000) | (self.mt[(i + 1) % N] & 0x7fff_ffff);
            let mag = if y & 1 == 1 { 0x9908_b0df } else { 0 };
            self.mt[i] = self.mt[(i + 397) % N] ^ (y >> 1) ^ mag;
        }
        self.index = 0;
    }
}

impl Bits for Twister {
    fn next_u32(&mut self) -> u32 {
        if self.index >= N {
            self.twist();
        }
        let mut y = self.mt[self.index];
        self.index += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }
}
