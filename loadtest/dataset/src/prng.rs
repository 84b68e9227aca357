//! The seeder's own pseudo-random numbers: SplitMix64 (Steele, Lea and Flood), a tiny generator
//! with good statistical quality, and `stream`, which gives every (seed, domain, key) triple an
//! independent sequence. An order is generated from `stream(seed, ORDER, id)` alone, so any order
//! can be rebuilt on its own, in any order, on any machine, without a `rand` dependency whose
//! algorithms could change between versions and silently change the data.

/// The golden-ratio increment of SplitMix64.
const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// A SplitMix64 generator.
#[derive(Debug, Clone)]
pub struct SplitMix64 {
    state: u64,
}

/// SplitMix64's output function: a bijective 64-bit mixer.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl SplitMix64 {
    pub fn new(state: u64) -> Self {
        Self { state }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GAMMA);
        mix(self.state)
    }

    /// A number in `0..n` (`n > 0`), by multiply-shift; the bias (n / 2^64) is far below anything
    /// a benchmark could notice.
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// A number in `low..=high`.
    pub fn between(&mut self, low: u64, high: u64) -> u64 {
        low + self.below(high - low + 1)
    }

    /// One element of a non-empty slice.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

/// Which kind of thing a stream generates, so the streams of customer 7 and order 7 differ.
#[derive(Debug, Clone, Copy)]
pub enum Domain {
    Order = 1,
    Customer = 2,
    Product = 3,
}

/// The sequence for one order, customer or product of the data set seeded with `seed`.
pub fn stream(seed: u64, domain: Domain, key: u64) -> SplitMix64 {
    let per_domain = mix(seed ^ mix(domain as u64));
    SplitMix64::new(mix(per_domain ^ key.wrapping_mul(GAMMA)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_reference_splitmix64_sequence() {
        // First outputs of the reference implementation (Vigna's splitmix64.c) seeded with 0.
        let mut rng = SplitMix64::new(0);
        assert_eq!(rng.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(rng.next_u64(), 0x6E78_9E6A_A1B9_65F4);
        assert_eq!(rng.next_u64(), 0x06C4_5D18_8009_454F);
    }

    #[test]
    fn below_and_between_stay_in_range_and_cover_it() {
        let mut rng = SplitMix64::new(42);
        let mut seen = [false; 7];
        for _ in 0..10_000 {
            let value = rng.between(3, 9);
            assert!((3..=9).contains(&value));
            seen[(value - 3) as usize] = true;
        }
        assert!(seen.iter().all(|s| *s));
        assert_eq!(SplitMix64::new(1).below(1), 0);
    }

    #[test]
    fn streams_differ_by_seed_domain_and_key() {
        let first = |seed, domain, key| stream(seed, domain, key).next_u64();
        assert_eq!(first(1, Domain::Order, 7), first(1, Domain::Order, 7));
        assert_ne!(first(1, Domain::Order, 7), first(2, Domain::Order, 7));
        assert_ne!(first(1, Domain::Order, 7), first(1, Domain::Customer, 7));
        assert_ne!(first(1, Domain::Order, 7), first(1, Domain::Order, 8));
    }
}
