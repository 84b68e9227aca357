//! JSON written by hand where serde_json's generic path costs more than the work: an `Order`
//! (`write_order`, behind `OrderJson::from_order`: the body of every created order and the jsonb
//! parameter of every PostgreSQL insert) and a JSON string (`write_str`; `write_utf8` for
//! orders-mongo's BSON-to-JSON writer, which checks its bytes on the way). The bytes are exactly
//! those `serde_json::to_vec` writes for the same value (tests compare them), so the API does not
//! change with the writer.
//!
//! Why: serde_json writes every key and string through a generic writer, three calls each, and an
//! insert through orders-pg serialised its order twice that way, a quarter of the insert's
//! user-space instructions (docs/service-cost.md). The writers are spelled out field by field on
//! purpose: a table-driven version (one loop over key and value pairs) cost 1,500 instructions
//! more per insert, about 2%.

use crate::order::{Customer, Item, Order, Shipping};
use crate::time::Timestamp;

/// `order` as serde_json writes it: fields in declaration order, `note` only when present.
pub fn write_order(out: &mut Vec<u8>, order: &Order) {
    out.extend_from_slice(br#"{"id":"#);
    write_number(out, order.id.get());
    out.extend_from_slice(br#","customer":"#);
    write_customer(out, &order.customer);
    out.extend_from_slice(br#","status":"#);
    write_str(out, order.status.as_str());
    out.extend_from_slice(br#","items":["#);
    for (index, item) in order.items.iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        write_item(out, item);
    }
    out.extend_from_slice(br#"],"total_cents":"#);
    write_number(out, order.total_cents);
    out.extend_from_slice(br#","currency":"#);
    write_str(out, order.currency.as_str());
    out.extend_from_slice(br#","shipping":"#);
    write_shipping(out, &order.shipping);
    if let Some(note) = &order.note {
        out.extend_from_slice(br#","note":"#);
        write_str(out, note.as_str());
    }
    out.extend_from_slice(br#","created_at":"#);
    write_timestamp(out, order.created_at);
    out.extend_from_slice(br#","updated_at":"#);
    write_timestamp(out, order.updated_at);
    out.push(b'}');
}

fn write_customer(out: &mut Vec<u8>, customer: &Customer) {
    out.extend_from_slice(br#"{"id":"#);
    write_number(out, customer.id.get());
    out.extend_from_slice(br#","name":"#);
    write_str(out, customer.name.as_str());
    out.extend_from_slice(br#","email":"#);
    write_str(out, customer.email.as_str());
    out.push(b'}');
}

fn write_item(out: &mut Vec<u8>, item: &Item) {
    out.extend_from_slice(br#"{"product_id":"#);
    write_number(out, item.product_id.get());
    out.extend_from_slice(br#","sku":"#);
    write_str(out, item.sku.as_str());
    out.extend_from_slice(br#","name":"#);
    write_str(out, item.name.as_str());
    out.extend_from_slice(br#","quantity":"#);
    write_number(out, item.quantity.get());
    out.extend_from_slice(br#","unit_price_cents":"#);
    write_number(out, item.unit_price_cents.get());
    out.push(b'}');
}

fn write_shipping(out: &mut Vec<u8>, shipping: &Shipping) {
    out.extend_from_slice(br#"{"street":"#);
    write_str(out, shipping.street.as_str());
    out.extend_from_slice(br#","city":"#);
    write_str(out, shipping.city.as_str());
    out.extend_from_slice(br#","postal_code":"#);
    write_str(out, shipping.postal_code.as_str());
    out.extend_from_slice(br#","country":"#);
    write_str(out, shipping.country.as_str());
    out.push(b'}');
}

fn write_number(out: &mut Vec<u8>, number: u64) {
    out.extend_from_slice(itoa::Buffer::new().format(number).as_bytes());
}

/// A timestamp as the JSON string its `Serialize` writes (RFC 3339 with milliseconds).
pub fn write_timestamp(out: &mut Vec<u8>, timestamp: Timestamp) {
    out.push(b'"');
    match timestamp.rfc3339_bytes() {
        Some(bytes) => out.extend_from_slice(&bytes),
        None => out.extend_from_slice(timestamp.to_string().as_bytes()),
    }
    out.push(b'"');
}

/// A JSON string, escaped exactly as serde_json escapes: `"` and `\` with a backslash, the
/// control characters `\b \t \n \f \r` short and the others as `\u00XX`; everything else,
/// U+007F and all non-ASCII included, as it is.
pub fn write_str(out: &mut Vec<u8>, text: &str) {
    write_escaped(out, text.as_bytes());
}

/// The same for bytes that ought to be UTF-8 (a BSON string's): checked only when they are not
/// ASCII, which the escaping pass tells on the way. On an error `out` holds a partial string.
pub fn write_utf8(out: &mut Vec<u8>, text: &[u8]) -> Result<(), std::str::Utf8Error> {
    if write_escaped(out, text) >= 0x80 {
        std::str::from_utf8(text)?;
    }
    Ok(())
}

/// Writes `text` as a JSON string and returns all its bytes or-ed together (>= 0x80: not ASCII).
fn write_escaped(out: &mut Vec<u8>, text: &[u8]) -> u8 {
    out.reserve(text.len() + 2);
    out.push(b'"');
    let mut unwritten = 0;
    let mut all_bits = 0_u8;
    for (at, &byte) in text.iter().enumerate() {
        all_bits |= byte;
        let escape = ESCAPE[usize::from(byte)];
        if escape == 0 {
            continue;
        }
        out.extend_from_slice(&text[unwritten..at]);
        if escape == b'u' {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.extend_from_slice(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(byte >> 4)],
                HEX[usize::from(byte & 0xf)],
            ]);
        } else {
            out.extend_from_slice(&[b'\\', escape]);
        }
        unwritten = at + 1;
    }
    out.extend_from_slice(&text[unwritten..]);
    out.push(b'"');
    all_bits
}

/// Per byte: 0 when it stands for itself in a JSON string, else the letter after the backslash
/// (`u` for `\u00XX`).
const ESCAPE: [u8; 256] = {
    let mut table = [0_u8; 256];
    let mut byte = 0;
    while byte < 0x20 {
        table[byte] = b'u';
        byte += 1;
    }
    table[0x08] = b'b';
    table[0x09] = b't';
    table[0x0a] = b'n';
    table[0x0c] = b'f';
    table[0x0d] = b'r';
    table[b'"' as usize] = b'"';
    table[b'\\' as usize] = b'\\';
    table
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::stored_order;
    use crate::values::Name;

    fn order(note: Option<&str>, name: &str) -> Order {
        let mut order = stored_order(note);
        order.customer.name = Name::new(name).expect("a valid name");
        // Year 10000: past what `rfc3339_bytes` writes, so the `Display` path.
        order.updated_at = Timestamp::from_millis(253_402_300_800_123);
        order
    }

    #[test]
    fn an_order_is_written_byte_for_byte_as_serde_json_writes_it() {
        let tricky = "ünïcödé ✓ \"quoted\" \\ back\tslash\n\u{1}\u{7f} </script> 😀";
        for order in [order(None, "Ada"), order(Some(tricky), tricky), order(Some(""), "x\u{1f}y")] {
            let mut ours = Vec::new();
            write_order(&mut ours, &order);
            assert_eq!(String::from_utf8_lossy(&ours), serde_json::to_string(&order).expect("serialise"));
            assert!(String::from_utf8_lossy(&ours).contains(r#""updated_at":"10000-01-01T00:00:00.123Z""#));
        }
    }

    #[test]
    fn strings_are_escaped_byte_for_byte_as_serde_json_escapes_them() {
        let mut text: String = (0_u8..=0x7f).map(char::from).collect();
        text.push_str("ü✓😀\u{2028}\u{fffd}");
        for piece in [text.as_str(), "", "plain", "\"", "\\", "a\u{0}b"] {
            let mut ours = Vec::new();
            write_str(&mut ours, piece);
            assert_eq!(String::from_utf8(ours).expect("utf-8"), serde_json::to_string(piece).expect("json"));
            let mut checked = Vec::new();
            write_utf8(&mut checked, piece.as_bytes()).expect("UTF-8");
            assert_eq!(String::from_utf8(checked).expect("utf-8"), serde_json::to_string(piece).expect("json"));
        }
    }

    #[test]
    fn bytes_that_are_not_utf8_are_refused() {
        for bad in [&b"\xff"[..], b"ok \xc3", b"\xed\xa0\x80", b"\"\x80\""] {
            assert!(write_utf8(&mut Vec::new(), bad).is_err(), "{bad:?}");
        }
        assert!(write_utf8(&mut Vec::new(), "ü".as_bytes()).is_ok());
    }
}
