//! `Json`: a parsed request body that, unlike `serde_json::Value`, keeps every object entry in
//! order, duplicates included, so validation can report a duplicate field instead of silently
//! keeping the last one. Keys and strings borrow from the body where they hold no escape (most
//! do), so reading an order allocates little beyond the order itself. Parsing itself is
//! serde_json's (strict UTF-8, lone surrogates rejected, nesting limited to 128 levels).

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use std::borrow::Cow;
use std::fmt;

#[derive(Debug, Clone, PartialEq)]
pub enum Json<'a> {
    Null,
    Bool(bool),
    /// A non-negative integer that fits in u64.
    Unsigned(u64),
    /// A negative integer.
    Negative(i64),
    /// Any other number (fraction, exponent, or too large for u64).
    Float(f64),
    String(Cow<'a, str>),
    Array(Vec<Json<'a>>),
    Object(Vec<(Cow<'a, str>, Json<'a>)>),
}

impl<'a> Json<'a> {
    /// Parses a whole body; trailing characters after the value are an error.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, serde_json::Error> {
        serde_json::from_slice(bytes)
    }

    /// What kind of JSON value this is, for error messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Json::Null => "null",
            Json::Bool(_) => "a boolean",
            Json::Unsigned(_) | Json::Negative(_) | Json::Float(_) => "a number",
            Json::String(_) => "a string",
            Json::Array(_) => "an array",
            Json::Object(_) => "an object",
        }
    }
}

impl<'de> Deserialize<'de> for Json<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(JsonVisitor)
    }
}

/// An object key, borrowed from the body when it can be (serde's own `Cow` always copies).
struct Key<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(KeyVisitor)
    }
}

struct KeyVisitor;

impl<'de> Visitor<'de> for KeyVisitor {
    type Value = Key<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object key")
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Key<'de>, E> {
        Ok(Key(Cow::Borrowed(v)))
    }

    fn visit_str<E>(self, v: &str) -> Result<Key<'de>, E> {
        Ok(Key(Cow::Owned(v.to_owned())))
    }

    fn visit_string<E>(self, v: String) -> Result<Key<'de>, E> {
        Ok(Key(Cow::Owned(v)))
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_unit<E>(self) -> Result<Json<'de>, E> {
        Ok(Json::Null)
    }

    fn visit_bool<E>(self, v: bool) -> Result<Json<'de>, E> {
        Ok(Json::Bool(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Json<'de>, E> {
        Ok(Json::Unsigned(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Json<'de>, E> {
        Ok(if v >= 0 { Json::Unsigned(v as u64) } else { Json::Negative(v) })
    }

    fn visit_f64<E>(self, v: f64) -> Result<Json<'de>, E> {
        Ok(Json::Float(v))
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Json<'de>, E> {
        Ok(Json::String(Cow::Borrowed(v)))
    }

    fn visit_str<E>(self, v: &str) -> Result<Json<'de>, E> {
        Ok(Json::String(Cow::Owned(v.to_owned())))
    }

    fn visit_string<E>(self, v: String) -> Result<Json<'de>, E> {
        Ok(Json::String(Cow::Owned(v)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json<'de>, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1024));
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json<'de>, A::Error> {
        let mut entries = Vec::new();
        while let Some((Key(key), value)) = map.next_entry::<Key<'de>, Json<'de>>()? {
            entries.push((key, value));
        }
        Ok(Json::Object(entries))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_duplicate_keys_in_order() {
        let parsed = Json::parse(br#"{"a":1,"a":-2,"b":[1.5,null,true,"x"]}"#).unwrap();
        assert_eq!(
            parsed,
            Json::Object(vec![
                ("a".into(), Json::Unsigned(1)),
                ("a".into(), Json::Negative(-2)),
                (
                    "b".into(),
                    Json::Array(vec![Json::Float(1.5), Json::Null, Json::Bool(true), Json::String("x".into())])
                ),
            ])
        );
    }

    #[test]
    fn keys_and_strings_borrow_from_the_body_unless_they_hold_an_escape() {
        let parsed = Json::parse(br#"{"plain":"text","esc\u0061ped":"a\nb"}"#).unwrap();
        let Json::Object(entries) = parsed else { panic!("an object") };
        let borrowed = |text: &Cow<'_, str>| matches!(text, Cow::Borrowed(_));
        let Json::String(plain) = &entries[0].1 else { panic!("a string") };
        let Json::String(escaped) = &entries[1].1 else { panic!("a string") };
        assert_eq!((borrowed(&entries[0].0), borrowed(plain)), (true, true));
        assert_eq!((entries[1].0.as_ref(), escaped.as_ref()), ("escaped", "a\nb"));
        assert_eq!((borrowed(&entries[1].0), borrowed(escaped)), (false, false));
    }

    #[test]
    fn rejects_malformed_input_lone_surrogates_and_trailing_garbage() {
        for bad in [&br#"{"a":"#[..], br#"{"a":"\ud800"}"#, br#"{} {}"#, b"\xff", b""] {
            assert!(Json::parse(bad).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
        assert!(Json::parse(br#"{"a":"\ud83d\ude00"}"#).is_ok(), "a surrogate pair is fine");
    }

    #[test]
    fn numbers_beyond_u64_become_floats() {
        assert_eq!(Json::parse(b"18446744073709551616").unwrap().kind(), "a number");
        assert!(matches!(Json::parse(b"18446744073709551616").unwrap(), Json::Float(_)));
        assert!(matches!(Json::parse(b"1.0").unwrap(), Json::Float(_)));
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_stack_overflow() {
        let deep = "[".repeat(100_000);
        assert!(Json::parse(deep.as_bytes()).is_err());
    }
}
