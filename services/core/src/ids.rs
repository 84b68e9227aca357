//! Identifier newtypes and the service-side id generator. Every id is a positive integer no larger
//! than 2^53-1 so that JavaScript clients (k6 among them) read it exactly.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// The largest integer a JavaScript number holds exactly (2^53-1).
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

macro_rules! safe_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
        #[serde(try_from = "u64", into = "u64")]
        pub struct $name(u64);

        impl $name {
            /// Accepts 1..=2^53-1.
            pub fn new(value: u64) -> Result<Self, String> {
                if (1..=MAX_SAFE_INTEGER).contains(&value) {
                    Ok(Self(value))
                } else {
                    Err(format!("must be an integer from 1 to {MAX_SAFE_INTEGER}"))
                }
            }

            pub fn get(self) -> u64 {
                self.0
            }

            /// The value as the signed 64-bit integer both databases store (always fits).
            pub fn as_i64(self) -> i64 {
                self.0 as i64
            }
        }

        impl TryFrom<u64> for $name {
            type Error = String;
            fn try_from(value: u64) -> Result<Self, String> {
                Self::new(value)
            }
        }

        impl From<$name> for u64 {
            fn from(id: $name) -> u64 {
                id.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt(f)
            }
        }
    };
}

safe_id!(
    /// An order's id (its primary key in both databases).
    OrderId
);
safe_id!(
    /// A customer's id (indexed for the customer listing).
    CustomerId
);
safe_id!(
    /// A product's id (indexed for the product search).
    ProductId
);

/// Hands out unique, time-ordered order ids: microseconds since the Unix epoch, bumped past the
/// last id handed out so two calls in the same microsecond still differ. Ids stay below 2^53-1
/// until the year 2255. A client may already have used a generated id; callers then ask again.
#[derive(Debug)]
pub struct IdGenerator {
    last: AtomicU64,
    clock: fn() -> u64,
}

impl Default for IdGenerator {
    fn default() -> Self {
        Self::with_clock(micros_since_epoch)
    }
}

fn micros_since_epoch() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_micros() as u64).unwrap_or(0)
}

impl IdGenerator {
    pub fn new() -> Self {
        Self::default()
    }

    /// A generator on another clock (microseconds); tests use a frozen one to force collisions.
    pub fn with_clock(clock: fn() -> u64) -> Self {
        Self { last: AtomicU64::new(0), clock }
    }

    pub fn next_id(&self) -> OrderId {
        let now = (self.clock)();
        let mut last = self.last.load(Ordering::Relaxed);
        loop {
            let candidate = now.max(last + 1).min(MAX_SAFE_INTEGER);
            match self.last.compare_exchange_weak(last, candidate, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return OrderId(candidate.max(1)),
                Err(actual) => last = actual,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn ids_accept_one_to_max_safe_integer_only() {
        assert!(OrderId::new(0).is_err());
        assert_eq!(OrderId::new(1).map(OrderId::get), Ok(1));
        assert_eq!(OrderId::new(MAX_SAFE_INTEGER).map(OrderId::get), Ok(MAX_SAFE_INTEGER));
        assert!(OrderId::new(MAX_SAFE_INTEGER + 1).is_err());
        assert!(ProductId::new(u64::MAX).is_err());
    }

    #[test]
    fn generated_ids_are_unique_and_increasing_across_threads() {
        let generator = std::sync::Arc::new(IdGenerator::new());
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let generator = generator.clone();
                std::thread::spawn(move || {
                    let ids: Vec<u64> = (0..10_000).map(|_| generator.next_id().get()).collect();
                    assert!(ids.windows(2).all(|w| w[0] < w[1]), "ids of one thread increase");
                    ids
                })
            })
            .collect();
        let mut all = HashSet::new();
        for handle in handles {
            for id in handle.join().expect("thread") {
                assert!(all.insert(id), "duplicate id {id}");
            }
        }
        assert_eq!(all.len(), 40_000);
    }

    #[test]
    fn generated_ids_follow_the_clock_and_stay_safe_for_javascript() {
        let id = IdGenerator::new().next_id().get();
        let now_micros = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_micros() as u64;
        assert!(id <= now_micros && now_micros - id < 10_000_000, "id {id} is close to now");
        assert!(id <= MAX_SAFE_INTEGER);
    }
}
