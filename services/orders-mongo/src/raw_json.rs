//! A stored order's raw BSON written straight out as the API's JSON, with no `Document` and no
//! `Order` in between: `_id` becomes `id`, Int64 (or Int32 from other writers) a JSON number,
//! BSON dates RFC 3339 strings with milliseconds, strings escaped as serde_json escapes them; keys
//! come out in stored order, which for documents of `document::to_document` is the order
//! `Order` serialises in, so the bytes equal those of the `Order` path.
//!
//! Values are not validated again (the service wrote only validated orders), but the shape is
//! checked on the way, at the cost of a few comparisons: a field this code does not know, a
//! missing or repeated one, a wrongly typed or negative value is an error naming its path, so
//! nothing is dropped or coerced silently.

use crate::document::{DocumentError, IDEMPOTENCY_FINGERPRINT, IDEMPOTENCY_KEY};
use mongodb::bson::RawDocument;
use mongodb::bson::raw::{RawBsonRef, RawDocumentBuf};
use orders_core::{OrderListJson, Timestamp};

#[derive(Clone, Copy)]
enum Kind {
    /// Int64 or Int32, not negative.
    Integer,
    String,
    Date,
    Document(&'static [Field]),
    /// An array of documents with these fields.
    Documents(&'static [Field]),
    /// Stored with the order but never part of the API's JSON (the `Idempotency-Key` fields).
    Hidden,
}

#[derive(Clone, Copy)]
struct Field {
    bson: &'static str,
    json: &'static str,
    kind: Kind,
    required: bool,
}

const fn field(name: &'static str, kind: Kind) -> Field {
    Field { bson: name, json: name, kind, required: true }
}

const CUSTOMER: &[Field] = &[field("id", Kind::Integer), field("name", Kind::String), field("email", Kind::String)];

const ITEM: &[Field] = &[
    field("product_id", Kind::Integer),
    field("sku", Kind::String),
    field("name", Kind::String),
    field("quantity", Kind::Integer),
    field("unit_price_cents", Kind::Integer),
];

const SHIPPING: &[Field] = &[
    field("street", Kind::String),
    field("city", Kind::String),
    field("postal_code", Kind::String),
    field("country", Kind::String),
];

const ORDER: &[Field] = &[
    Field { bson: "_id", json: "id", kind: Kind::Integer, required: true },
    field("customer", Kind::Document(CUSTOMER)),
    field("status", Kind::String),
    field("items", Kind::Documents(ITEM)),
    field("total_cents", Kind::Integer),
    field("currency", Kind::String),
    field("shipping", Kind::Document(SHIPPING)),
    Field { bson: "note", json: "note", kind: Kind::String, required: false },
    field("created_at", Kind::Date),
    field("updated_at", Kind::Date),
    Field { bson: IDEMPOTENCY_KEY, json: "", kind: Kind::Hidden, required: false },
    Field { bson: IDEMPOTENCY_FINGERPRINT, json: "", kind: Kind::Hidden, required: false },
];

/// The JSON of one stored order.
pub fn order_json(document: &RawDocumentBuf) -> Result<Vec<u8>, DocumentError> {
    let mut out = Vec::with_capacity(document.as_bytes().len() + 64);
    write_document(&mut out, document, ORDER)?;
    Ok(out)
}

/// Appends one stored order to a list body.
pub fn push_order(list: &mut OrderListJson, document: &RawDocument) -> Result<(), DocumentError> {
    list.push_with(|out| write_document(out, document, ORDER))
}

fn write_document(out: &mut Vec<u8>, document: &RawDocument, fields: &[Field]) -> Result<(), DocumentError> {
    let mut seen = 0_u32;
    out.push(b'{');
    for element in document {
        let (key, value) = element.map_err(|e| error("", format!("is not valid BSON: {e}")))?;
        let Some(index) = fields.iter().position(|field| field.bson == key) else {
            return Err(error(key, "is not a field of an order"));
        };
        if seen & (1 << index) != 0 {
            return Err(error(key, "appears twice"));
        }
        seen |= 1 << index;
        let field = fields[index];
        if matches!(field.kind, Kind::Hidden) {
            continue;
        }
        if out.last() != Some(&b'{') {
            out.push(b',');
        }
        write_str(out, field.json);
        out.push(b':');
        write_value(out, value, field.kind).map_err(|e| e.within(key))?;
    }
    out.push(b'}');
    match fields.iter().enumerate().find(|(index, field)| field.required && seen & (1 << index) == 0) {
        Some((_, missing)) => Err(error(missing.bson, "is missing")),
        None => Ok(()),
    }
}

/// Writes `value` if it is of `kind`; errors name the field relative to the value (`""` for the
/// value itself), and the caller puts its own key in front.
fn write_value(out: &mut Vec<u8>, value: RawBsonRef<'_>, kind: Kind) -> Result<(), DocumentError> {
    match (kind, value) {
        (Kind::Integer, RawBsonRef::Int64(number)) => write_unsigned(out, number),
        (Kind::Integer, RawBsonRef::Int32(number)) => write_unsigned(out, i64::from(number)),
        (Kind::String, RawBsonRef::String(text)) => {
            write_str(out, text);
            Ok(())
        }
        (Kind::Date, RawBsonRef::DateTime(date)) => {
            write_timestamp(out, Timestamp::from_millis(date.timestamp_millis()));
            Ok(())
        }
        (Kind::Document(fields), RawBsonRef::Document(document)) => write_document(out, document, fields),
        (Kind::Documents(fields), RawBsonRef::Array(array)) => {
            out.push(b'[');
            for (index, element) in array.into_iter().enumerate() {
                if index > 0 {
                    out.push(b',');
                }
                let at = |e: DocumentError| e.within(&format!("[{index}]"));
                match element.map_err(|e| at(error("", format!("is not valid BSON: {e}"))))? {
                    RawBsonRef::Document(document) => write_document(out, document, fields).map_err(at)?,
                    other => return Err(at(error("", format!("must be a document, not {:?}", other.element_type())))),
                }
            }
            out.push(b']');
            Ok(())
        }
        (kind, other) => Err(error("", format!("must be {}, not {:?}", kind.name(), other.element_type()))),
    }
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Integer => "an Int64",
            Kind::String => "a string",
            Kind::Date => "a date",
            Kind::Document(_) => "a document",
            Kind::Documents(_) => "an array",
            Kind::Hidden => "anything",
        }
    }
}

fn write_unsigned(out: &mut Vec<u8>, number: i64) -> Result<(), DocumentError> {
    let unsigned = u64::try_from(number).map_err(|_| error("", format!("{number} is negative")))?;
    let mut digits = [0_u8; 20];
    let mut start = digits.len();
    let mut rest = unsigned;
    loop {
        start -= 1;
        digits[start] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[start..]);
    Ok(())
}

fn write_str(out: &mut Vec<u8>, text: &str) {
    // Writing a `str` into a `Vec` cannot fail; serde_json's escaping keeps the bytes identical
    // to the `Order` path.
    let _ = serde_json::to_writer(&mut *out, text);
}

fn write_timestamp(out: &mut Vec<u8>, timestamp: Timestamp) {
    out.push(b'"');
    match timestamp.rfc3339_bytes() {
        Some(bytes) => out.extend_from_slice(&bytes),
        None => out.extend_from_slice(timestamp.to_string().as_bytes()),
    }
    out.push(b'"');
}

fn error(field: &str, reason: impl Into<String>) -> DocumentError {
    DocumentError { field: field.to_owned(), reason: reason.into() }
}

impl DocumentError {
    /// The same error seen from the enclosing value: `key` in front of the path.
    fn within(mut self, key: &str) -> Self {
        self.field = match (self.field.is_empty(), key.starts_with('[')) {
            (true, _) => key.to_owned(),
            (false, true) => format!("{key}.{}", self.field),
            (false, false) if self.field.starts_with('[') => format!("{key}{}", self.field),
            (false, false) => format!("{key}.{}", self.field),
        };
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::to_document;
    use mongodb::bson::Document;
    use orders_core::sample::order_body;
    use orders_core::{NewOrder, Order, OrderId};
    use serde_json::json;

    fn sample(note: Option<&str>) -> Order {
        let mut body = order_body(1234, [17, 18, 9_007_199_254_740_991]);
        body["status"] = json!("shipped");
        if let Some(note) = note {
            body["note"] = json!(note);
        }
        let new = NewOrder::parse(body.to_string().as_bytes()).expect("valid sample");
        let mut order = new.into_order(OrderId::new(4242).expect("id"), Timestamp::from_millis(1_795_946_400_123));
        order.updated_at = Timestamp::from_millis(1_795_946_500_456);
        order
    }

    fn raw(document: &Document) -> RawDocumentBuf {
        RawDocumentBuf::from_document(document).expect("raw")
    }

    fn json_of(document: &Document) -> Result<Vec<u8>, DocumentError> {
        order_json(&raw(document))
    }

    #[test]
    fn the_json_is_byte_for_byte_what_serialising_the_order_gives() {
        let tricky = "ünïcödé ✓ \"quoted\" \\ back\tslash\n\u{1}\u{7f} </script>";
        for order in [sample(None), sample(Some(tricky)), sample(Some(""))] {
            let json = json_of(&to_document(&order).expect("to bson")).expect("json");
            assert_eq!(String::from_utf8_lossy(&json), serde_json::to_string(&order).expect("serialise"));
        }
    }

    #[test]
    fn lists_hold_each_order_in_turn() {
        let documents = [to_document(&sample(None)).expect("bson"), to_document(&sample(Some("n"))).expect("bson")];
        let mut list = OrderListJson::default();
        for document in &documents {
            push_order(&mut list, &raw(document)).expect("push");
        }
        assert_eq!(list.to_orders().expect("parse"), [sample(None), sample(Some("n"))]);
    }

    #[test]
    fn the_idempotency_key_fields_are_stored_but_never_shown() {
        let mut document = to_document(&sample(None)).expect("to bson");
        document.insert(IDEMPOTENCY_KEY, "k-1");
        document.insert(IDEMPOTENCY_FINGERPRINT, -42_i64);
        let json = json_of(&document).expect("json");
        assert_eq!(json, serde_json::to_vec(&sample(None)).expect("serialise"));
    }

    #[test]
    fn int32_values_from_other_writers_are_the_same_numbers() {
        let mut document = to_document(&sample(None)).expect("to bson");
        document.insert("_id", 4242_i32);
        let json = json_of(&document).expect("json");
        assert_eq!(json, serde_json::to_vec(&sample(None)).expect("serialise"));
    }

    #[test]
    fn unknown_missing_repeated_and_mistyped_fields_are_errors_naming_the_field() {
        let good = to_document(&sample(None)).expect("to bson");
        let field_of = |document: &Document| json_of(document).expect_err("invalid").field;

        let mut extra = good.clone();
        extra.insert("discount", 5_i64);
        assert_eq!(field_of(&extra), "discount");

        let mut missing = good.clone();
        missing.remove("currency");
        assert_eq!(field_of(&missing), "currency");

        let mut nested = good.clone();
        nested.get_document_mut("shipping").expect("shipping").insert("city", 12_i64);
        assert_eq!(field_of(&nested), "shipping.city");

        let mut nested_missing = good.clone();
        nested_missing.get_document_mut("customer").expect("customer").remove("email");
        assert_eq!(field_of(&nested_missing), "customer.email");

        let mut item = good.clone();
        item.get_array_mut("items").expect("items")[1].as_document_mut().expect("item").insert("colour", "red");
        assert_eq!(field_of(&item), "items[1].colour");

        let mut not_a_document = good.clone();
        not_a_document.get_array_mut("items").expect("items")[2] = "item".into();
        assert_eq!(field_of(&not_a_document), "items[2]");

        let mut negative = good.clone();
        negative.insert("total_cents", -1_i64);
        assert_eq!(field_of(&negative), "total_cents");

        let mut double = good.clone();
        double.insert("total_cents", 1.5);
        assert_eq!(field_of(&double), "total_cents");

        let mut string_date = good.clone();
        string_date.insert("created_at", "2026-11-30T10:00:00.000Z");
        assert_eq!(field_of(&string_date), "created_at");

        let twice = RawDocumentBuf::from_bytes(twice_id_document()).expect("raw bytes");
        assert_eq!(order_json(&twice).expect_err("invalid").field, "_id");
    }

    /// `{"_id": 1, "_id": 2}` as BSON bytes (a `Document` cannot hold a key twice).
    fn twice_id_document() -> Vec<u8> {
        let element = |value: u8| [&[0x12_u8][..], b"_id\0", &[value, 0, 0, 0, 0, 0, 0, 0]].concat();
        let body = [element(1), element(2)].concat();
        let length = u32::try_from(4 + body.len() + 1).expect("small");
        [&length.to_le_bytes()[..], &body, &[0]].concat()
    }
}
