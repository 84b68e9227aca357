//! The request bodies of the hostile-client suite, each just under `BODY_BYTES` (the default
//! `MAX_BODY_BYTES` is 1 MiB): `ordinary_order`, a valid order of that size (the yardstick: what
//! a body of that size should cost), and `hostile_bodies`, shapes built to make rejecting them as
//! expensive as possible: keys repeated or unknown by the ten thousand (the quadratic duplicate
//! check of issue 28), errors in every item, nesting to the parser's limit, strings made only of
//! escapes, and hundreds of thousands of tiny values.

/// The size every body is built to stay under: the default `MAX_BODY_BYTES`.
pub const BODY_BYTES: usize = 1_048_576;

/// A hostile body and what it is.
#[derive(Debug, Clone)]
pub struct Shape {
    pub name: &'static str,
    pub body: Vec<u8>,
}

/// Fills `out` with `piece(i)` for i = 0, 1, ... while `closing` still fits under `BODY_BYTES`,
/// joined by commas; returns how many pieces went in.
fn fill(out: &mut String, closing: &str, mut piece: impl FnMut(usize) -> String) -> usize {
    let mut count = 0;
    loop {
        let next = piece(count);
        let comma = usize::from(count > 0);
        if out.len() + comma + next.len() + closing.len() > BODY_BYTES - 16 {
            break;
        }
        if count > 0 {
            out.push(',');
        }
        out.push_str(&next);
        count += 1;
    }
    out.push_str(closing);
    count
}

/// `count` characters of product-name text in Japanese (three bytes a character in UTF-8).
fn text(count: usize, seed: usize) -> String {
    const WORDS: [&str; 8] = ["ステンレス製", "水筒", "🍵", "軽量", "保温保冷", "大容量", "食洗機対応", "🎁"];
    let mut text = String::new();
    let mut word = seed;
    while text.chars().count() < count {
        text.push_str(WORDS[word % WORDS.len()]);
        text.push(' ');
        word += 1;
    }
    text.chars().take(count).collect()
}

/// A valid order of nearly `BODY_BYTES`: 1,000 items with names of 200 characters (the most
/// allowed) in Japanese, a note of 262,144 bytes (the most allowed), text without escapes,
/// indented as some clients send JSON. The
/// service assigns its id, so the same body can be sent again and again.
pub fn ordinary_order(customer: u64) -> Vec<u8> {
    let items: Vec<serde_json::Value> = (0..1000)
        .map(|i| {
            serde_json::json!({
                "product_id": 1 + i % 50,
                "sku": format!("SKU-{i:06}-{}", "X".repeat(53)),
                "name": text(200, i),
                "quantity": 1 + i % 3,
                "unit_price_cents": 1999 + i,
            })
        })
        .collect();
    let body = serde_json::json!({
        "customer": {"id": customer, "name": "Ada Lovelace", "email": "ada@example.com"},
        "items": items,
        "currency": "EUR",
        "shipping": {"street": "Example Street 1", "city": "Berlin", "postal_code": "10115", "country": "DE"},
        "note": "n".repeat(262_144),
    });
    serde_json::to_vec_pretty(&body).expect("JSON")
}

/// The bodies built to cost the most to reject (see the module notes). Every one is well-formed
/// JSON under `BODY_BYTES` that a service must answer 422.
pub fn hostile_bodies() -> Vec<Shape> {
    vec![
        Shape { name: "50k unknown keys, then one known key repeated", body: unknown_then_repeated() },
        Shape { name: "one known key repeated", body: one_key_repeated() },
        Shape { name: "unknown keys in every item", body: unknown_keys_in_items() },
        Shape { name: "every item field too long", body: items_too_long() },
        Shape { name: "arrays nested to the parser's limit", body: deep_nesting() },
        Shape { name: "a note of escaped surrogate pairs", body: escaped_note() },
        Shape { name: "keys made of escapes", body: escaped_keys() },
        Shape { name: "half a million zeros", body: tiny_values() },
        Shape { name: "long floats", body: long_floats() },
    ]
}

/// Issue 28's body: 50,000 unknown keys, then copies of `note` until the body is full.
fn unknown_then_repeated() -> Vec<u8> {
    let mut body = String::from("{");
    fill(&mut body, "}", |i| if i < 50_000 { format!(r#""u{i:05}":0"#) } else { r#""note":null"#.to_owned() });
    body.into_bytes()
}

fn one_key_repeated() -> Vec<u8> {
    let mut body = String::from("{");
    fill(&mut body, "}", |_| r#""note":null"#.to_owned());
    body.into_bytes()
}

/// 1,000 items, each holding nothing but unknown keys.
fn unknown_keys_in_items() -> Vec<u8> {
    let per_item = BODY_BYTES / 1000 / 8;
    let item: String =
        format!("{{{}}}", (0..per_item).map(|k| format!(r#""k{k:02}":0"#)).collect::<Vec<_>>().join(","));
    let mut body = String::from(r#"{"items":["#);
    fill(&mut body, "]}", |_| item.clone());
    body.into_bytes()
}

/// 1,000 items whose every text field is too long and every number out of range.
fn items_too_long() -> Vec<u8> {
    let long = "ü".repeat(300);
    let item =
        format!(r#"{{"product_id":0,"sku":"{long}","name":"{long}","quantity":0,"unit_price_cents":-1,"{long}":0}}"#);
    let mut body = String::from(r#"{"items":["#);
    fill(&mut body, "]}", |_| item.clone());
    body.into_bytes()
}

/// Arrays nested 120 deep (serde_json refuses beyond 128), side by side until the body is full.
fn deep_nesting() -> Vec<u8> {
    let nested = format!("{}{}", "[".repeat(120), "]".repeat(120));
    let mut body = String::from(r#"{"x":["#);
    fill(&mut body, "]}", |_| nested.clone());
    body.into_bytes()
}

/// A note made only of escaped surrogate pairs (each six plus six bytes for one character), far
/// over the note's limit once decoded.
fn escaped_note() -> Vec<u8> {
    let mut body = String::from(r#"{"note":""#);
    let mut count = 0;
    while body.len() + 12 + 2 < BODY_BYTES - 16 {
        body.push_str(r"\ud83d\ude00");
        count += 1;
    }
    assert!(count > 80_000);
    body.push_str(r#""}"#);
    body.into_bytes()
}

/// Keys spelled only with escapes (each key copied out of the body to be decoded), all unknown.
fn escaped_keys() -> Vec<u8> {
    let mut body = String::from("{");
    fill(&mut body, "}", |i| {
        let key: String = format!("{i:06}").bytes().map(|b| format!(r"\u00{b:02x}")).collect();
        format!(r#""{key}":0"#)
    });
    body.into_bytes()
}

fn tiny_values() -> Vec<u8> {
    let mut body = String::from(r#"{"x":["#);
    fill(&mut body, "]}", |_| "0".to_owned());
    body.into_bytes()
}

fn long_floats() -> Vec<u8> {
    let mut body = String::from(r#"{"x":["#);
    fill(&mut body, "]}", |i| format!("1.{:016}e-{}", i * 7919 % 10_000_000_000_000_000, 300 - i % 300));
    body.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use orders_core::validate::BodyError;
    use orders_core::{FieldErrors, NewOrder};

    #[test]
    fn the_ordinary_order_is_valid_and_nearly_a_mebibyte() {
        let body = ordinary_order(7);
        assert!(body.len() > BODY_BYTES * 9 / 10 && body.len() <= BODY_BYTES, "{} bytes", body.len());
        let order = NewOrder::parse(&body).expect("valid");
        let order = order.into_order(orders_core::OrderId::new(1).expect("id"), orders_core::Timestamp::from_millis(0));
        assert_eq!(order.items.len(), 1000);
    }

    #[test]
    fn every_hostile_body_is_well_formed_full_sized_and_invalid() {
        for shape in hostile_bodies() {
            let size = shape.body.len();
            assert!(size > BODY_BYTES * 9 / 10 && size <= BODY_BYTES, "{}: {size} bytes", shape.name);
            match NewOrder::parse(&shape.body) {
                Err(BodyError::Invalid(errors)) => {
                    assert!(!errors.listed().is_empty(), "{}", shape.name);
                    assert!(errors.listed().len() <= FieldErrors::MAX_LISTED, "{}", shape.name);
                }
                other => panic!("{}: expected 422 errors, got {other:?}", shape.name),
            }
        }
    }
}
