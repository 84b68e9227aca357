//! `Json`: a parsed request body that, unlike `serde_json::Value`, keeps every object entry in
//! order, duplicates included, so validation can report a duplicate field instead of silently
//! keeping the last one. Keys and strings borrow from the body where they hold no escape (most
//! do), so reading an order allocates little beyond the order itself. Parsing itself is
//! serde_json's (strict UTF-8, lone surrogates rejected, nesting limited to 128 levels).
//!
//! `Keep` says how much of the body to build: what validation can never look at (the contents of
//! containers nested deeper than any valid body goes, the elements of an array past the most a
//! valid one holds) is parsed just as strictly, so the same bodies are malformed, but not stored.
//! Half a million `[0,0,...]` or nested `[[[]]]` then cost the parse, not half a million values
//! of 32 bytes each, allocated and freed one by one.

use serde::de::{Deserialize, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
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

/// How much of a body `Json::parse_keeping` stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Keep {
    /// Arrays and objects this deep or deeper (the body itself is at depth 0) are stored empty.
    pub depth: usize,
    /// An array stores at most this many elements.
    pub elements: usize,
}

impl Keep {
    pub const ALL: Keep = Keep { depth: usize::MAX, elements: usize::MAX };
}

impl<'a> Json<'a> {
    /// Parses a whole body and stores all of it; trailing characters after the value are an error.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, serde_json::Error> {
        Self::parse_keeping(bytes, Keep::ALL)
    }

    /// Parses a whole body like `parse` (the same bodies are errors), storing only what `keep`
    /// says.
    pub fn parse_keeping(bytes: &'a [u8], keep: Keep) -> Result<Self, serde_json::Error> {
        let mut deserializer = serde_json::Deserializer::from_slice(bytes);
        let json = JsonSeed { keep, depth: 0 }.deserialize(&mut deserializer)?;
        deserializer.end()?;
        Ok(json)
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

/// Reads one value at `depth`, storing what `keep` allows.
#[derive(Clone, Copy)]
struct JsonSeed {
    keep: Keep,
    depth: usize,
}

impl<'de> DeserializeSeed<'de> for JsonSeed {
    type Value = Json<'de>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Json<'de>, D::Error> {
        deserializer.deserialize_any(JsonVisitor { keep: self.keep, depth: self.depth })
    }
}

/// A value parsed (strings decoded, numbers converted, so it fails where storing it would) and
/// dropped.
struct Skip;

impl<'de> Deserialize<'de> for Skip {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(SkipVisitor)
    }
}

struct SkipVisitor;

impl<'de> Visitor<'de> for SkipVisitor {
    type Value = Skip;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_unit<E>(self) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_str<E>(self, _: &str) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Skip, A::Error> {
        while seq.next_element::<Skip>()?.is_some() {}
        Ok(Skip)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Skip, A::Error> {
        while map.next_entry::<Skip, Skip>()?.is_some() {}
        Ok(Skip)
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

struct JsonVisitor {
    keep: Keep,
    depth: usize,
}

impl JsonVisitor {
    /// Whether this container's contents are stored.
    fn stores_contents(&self) -> bool {
        self.depth < self.keep.depth
    }

    fn child(&self) -> JsonSeed {
        JsonSeed { keep: self.keep, depth: self.depth + 1 }
    }
}

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
        let mut items = Vec::new();
        if self.stores_contents() {
            while items.len() < self.keep.elements {
                match seq.next_element_seed(self.child())? {
                    Some(item) => items.push(item),
                    None => return Ok(Json::Array(items)),
                }
            }
        }
        while seq.next_element::<Skip>()?.is_some() {}
        Ok(Json::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json<'de>, A::Error> {
        let mut entries = Vec::new();
        if !self.stores_contents() {
            while map.next_entry::<Skip, Skip>()?.is_some() {}
            return Ok(Json::Object(entries));
        }
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            entries.push((key, map.next_value_seed(self.child())?));
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
    fn keep_stores_containers_down_to_its_depth_and_arrays_up_to_its_length() {
        let keep = Keep { depth: 2, elements: 3 };
        let parsed = Json::parse_keeping(br#"{"a":[1,2,3,4,5],"b":{"c":[9],"d":{"e":1}},"f":[[1],{"g":2}]}"#, keep);
        let one = Json::Unsigned;
        assert_eq!(
            parsed.expect("well-formed"),
            Json::Object(vec![
                ("a".into(), Json::Array(vec![one(1), one(2), one(3)])),
                ("b".into(), Json::Object(vec![("c".into(), Json::Array(vec![])), ("d".into(), Json::Object(vec![]))])),
                ("f".into(), Json::Array(vec![Json::Array(vec![]), Json::Object(vec![])])),
            ])
        );
    }

    #[test]
    fn what_keep_leaves_out_is_still_parsed_strictly() {
        let keep = Keep { depth: 1, elements: 1 };
        for bad in [
            &br#"{"a":[[["\ud800"]]]}"#[..],
            br#"{"a":{"b":"\udc00"}}"#,
            br#"{"a":[0,1e999]}"#,
            br#"{"a":[0,"\u00"]}"#,
            b"{\"a\":[0,\"\xff\"]}",
            br#"{"a":[0,[1,]]}"#,
            br#"{"a":[0,{"b"}]}"#,
        ] {
            assert!(Json::parse(bad).is_err(), "{}", String::from_utf8_lossy(bad));
            assert!(Json::parse_keeping(bad, keep).is_err(), "{}", String::from_utf8_lossy(bad));
        }
        let deep = format!(r#"{{"a":[0,{}{}]}}"#, "[".repeat(200), "]".repeat(200));
        assert!(Json::parse_keeping(deep.as_bytes(), keep).is_err(), "the nesting limit still applies");
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_stack_overflow() {
        let deep = "[".repeat(100_000);
        assert!(Json::parse(deep.as_bytes()).is_err());
    }
}
