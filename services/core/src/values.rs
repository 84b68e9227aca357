//! Small validated value types: bounded text, e-mail, note, currency and country codes, bounded
//! integers. Each has one constructor that checks the rules of docs/api.md, and serde goes through
//! it too, so a value read back from a database is checked exactly like one from a request.
//! Serialising writes the text as it is (no copy into a `String` on the way out).

use std::fmt;

/// Why a value was refused, phrased for an API client.
pub type Reason = String;

fn check_no_nul(text: &str) -> Result<(), Reason> {
    if text.contains('\0') { Err("must not contain U+0000".into()) } else { Ok(()) }
}

/// Text of `MIN..=MAX` Unicode scalar values without U+0000.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Deserialize)]
#[serde(try_from = "String")]
pub struct Text<const MIN: usize, const MAX: usize>(String);

impl<const MIN: usize, const MAX: usize> Text<MIN, MAX> {
    pub fn new(text: impl Into<String>) -> Result<Self, Reason> {
        let text = text.into();
        check_no_nul(&text)?;
        let chars = text.chars().count();
        if (MIN..=MAX).contains(&chars) {
            Ok(Self(text))
        } else {
            Err(format!("must be {MIN} to {MAX} characters long"))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Names and address lines: 1..200 characters.
pub type Name = Text<1, 200>;
/// Stock keeping unit: 1..64 characters.
pub type Sku = Text<1, 64>;

/// An e-mail address: 3..254 characters with exactly one `@`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Deserialize)]
#[serde(try_from = "String")]
pub struct Email(String);

impl Email {
    pub fn new(text: impl Into<String>) -> Result<Self, Reason> {
        let text = text.into();
        check_no_nul(&text)?;
        let chars = text.chars().count();
        if !(3..=254).contains(&chars) {
            return Err("must be 3 to 254 characters long".into());
        }
        if text.matches('@').count() != 1 {
            return Err("must contain exactly one @".into());
        }
        Ok(Self(text))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Free text of at most 256 KiB of UTF-8; used to make documents large.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Deserialize)]
#[serde(try_from = "String")]
pub struct Note(String);

impl Note {
    pub const MAX_BYTES: usize = 262_144;

    pub fn new(text: impl Into<String>) -> Result<Self, Reason> {
        let text = text.into();
        check_no_nul(&text)?;
        if text.len() > Self::MAX_BYTES {
            return Err(format!("must be at most {} bytes of UTF-8", Self::MAX_BYTES));
        }
        Ok(Self(text))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Exactly `N` ASCII capital letters (ISO 4217 currency: 3, ISO 3166 country: 2).
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Deserialize)]
#[serde(try_from = "String")]
pub struct Code<const N: usize>(String);

impl<const N: usize> Code<N> {
    pub fn new(text: impl Into<String>) -> Result<Self, Reason> {
        let text = text.into();
        if text.len() == N && text.bytes().all(|b| b.is_ascii_uppercase()) {
            Ok(Self(text))
        } else {
            Err(format!("must be {N} ASCII capital letters"))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

pub type Currency = Code<3>;
pub type Country = Code<2>;

/// An integer in `MIN..=MAX`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "u64", into = "u64")]
pub struct Bounded<const MIN: u64, const MAX: u64>(u64);

impl<const MIN: u64, const MAX: u64> Bounded<MIN, MAX> {
    pub fn new(value: u64) -> Result<Self, Reason> {
        if (MIN..=MAX).contains(&value) {
            Ok(Self(value))
        } else {
            Err(format!("must be an integer from {MIN} to {MAX}"))
        }
    }

    pub fn get(self) -> u64 {
        self.0
    }
}

pub type Quantity = Bounded<1, 1_000_000>;
pub type Cents = Bounded<0, 1_000_000_000_000>;

macro_rules! string_conversions {
    ($($ty:ty),*) => {$(
        impl TryFrom<String> for $ty {
            type Error = Reason;
            fn try_from(text: String) -> Result<Self, Reason> {
                Self::new(text)
            }
        }
        impl From<$ty> for String {
            fn from(value: $ty) -> String {
                value.0
            }
        }
        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
        impl serde::Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(&self.0)
            }
        }
    )*};
}

string_conversions!(Email, Note);

impl<const MIN: usize, const MAX: usize> TryFrom<String> for Text<MIN, MAX> {
    type Error = Reason;
    fn try_from(text: String) -> Result<Self, Reason> {
        Self::new(text)
    }
}

impl<const MIN: usize, const MAX: usize> From<Text<MIN, MAX>> for String {
    fn from(value: Text<MIN, MAX>) -> String {
        value.0
    }
}

impl<const MIN: usize, const MAX: usize> serde::Serialize for Text<MIN, MAX> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<const N: usize> TryFrom<String> for Code<N> {
    type Error = Reason;
    fn try_from(text: String) -> Result<Self, Reason> {
        Self::new(text)
    }
}

impl<const N: usize> From<Code<N>> for String {
    fn from(value: Code<N>) -> String {
        value.0
    }
}

impl<const N: usize> serde::Serialize for Code<N> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<const MIN: u64, const MAX: u64> TryFrom<u64> for Bounded<MIN, MAX> {
    type Error = Reason;
    fn try_from(value: u64) -> Result<Self, Reason> {
        Self::new(value)
    }
}

impl<const MIN: u64, const MAX: u64> From<Bounded<MIN, MAX>> for u64 {
    fn from(value: Bounded<MIN, MAX>) -> u64 {
        value.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_counts_unicode_scalar_values_not_bytes() {
        assert!(Name::new("").is_err());
        assert!(Name::new("é".repeat(200)).is_ok(), "200 two-byte characters fit");
        assert!(Name::new("é".repeat(201)).is_err());
        assert!(Sku::new("x".repeat(64)).is_ok());
        assert!(Sku::new("x".repeat(65)).is_err());
    }

    #[test]
    fn no_string_may_hold_nul() {
        assert!(Name::new("a\0b").is_err());
        assert!(Email::new("a\0@b").is_err());
        assert!(Note::new("\0").is_err());
    }

    #[test]
    fn email_needs_exactly_one_at_and_3_to_254_characters() {
        assert!(Email::new("a@b").is_ok());
        assert!(Email::new("@b").is_err());
        assert!(Email::new("abc").is_err());
        assert!(Email::new("a@@b").is_err());
        assert!(Email::new(format!("{}@b", "a".repeat(252))).is_ok());
        assert!(Email::new(format!("{}@b", "a".repeat(253))).is_err());
    }

    #[test]
    fn note_is_limited_in_utf8_bytes() {
        assert!(Note::new("").is_ok());
        assert!(Note::new("x".repeat(Note::MAX_BYTES)).is_ok());
        assert!(Note::new("x".repeat(Note::MAX_BYTES + 1)).is_err());
        assert!(Note::new("é".repeat(Note::MAX_BYTES / 2 + 1)).is_err(), "counts bytes");
    }

    #[test]
    fn codes_are_ascii_capitals_of_exact_length() {
        assert!(Currency::new("EUR").is_ok());
        assert!(Currency::new("eur").is_err());
        assert!(Currency::new("EURO").is_err());
        assert!(Country::new("DE").is_ok());
        assert!(Country::new("DÉ").is_err());
        assert!(Country::new("D").is_err());
    }

    #[test]
    fn bounded_integers_include_both_ends() {
        assert!(Quantity::new(0).is_err());
        assert!(Quantity::new(1).is_ok());
        assert!(Quantity::new(1_000_000).is_ok());
        assert!(Quantity::new(1_000_001).is_err());
        assert!(Cents::new(0).is_ok());
        assert!(Cents::new(1_000_000_000_000).is_ok());
        assert!(Cents::new(1_000_000_000_001).is_err());
    }
}
