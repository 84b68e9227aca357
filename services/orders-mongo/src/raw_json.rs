//! A stored order's raw BSON written straight out as the API's JSON, with no `Document` and no
//! `Order` in between: `_id` becomes `id`, Int64 (or Int32 from other writers) a JSON number,
//! BSON dates RFC 3339 strings with milliseconds, strings escaped as serde_json escapes them
//! (`orders_core::json_write`); keys come out in stored order, which for documents of
//! `document::to_raw_document` is the order `Order` serialises in, so the bytes equal those of
//! the `Order` path.
//!
//! Values are not validated again (the service wrote only validated orders), but the shape is
//! checked on the way, at the cost of a few comparisons: a field this code does not know, a
//! missing or repeated one, a wrongly typed or negative value, a string that is not UTF-8 or bytes
//! that are not BSON are an error naming its path, so nothing is dropped or coerced silently. The
//! elements come from `bson_bytes`, which reads them straight from the bytes.

use crate::bson_bytes::{self, Element, Elements, Malformed};
use crate::document::{DocumentError, IDEMPOTENCY_FINGERPRINT, IDEMPOTENCY_KEY};
use mongodb::bson::RawDocument;
use mongodb::bson::raw::RawDocumentBuf;
use mongodb::bson::spec::ElementType;
use orders_core::json_write::{write_timestamp, write_utf8};
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
    /// What goes before the value in the JSON: `,"name":` (the comma is left out for a first field).
    json_key: &'static str,
    kind: Kind,
    required: bool,
}

/// A field named `$bson` in BSON (and `$json` in JSON, if it differs), of `$kind`.
macro_rules! field {
    ($bson:expr, $kind:expr) => {
        field!($bson, $bson, $kind, true)
    };
    ($bson:expr, $json:expr, $kind:expr, $required:expr) => {
        Field { bson: $bson, json_key: concat!(",\"", $json, "\":"), kind: $kind, required: $required }
    };
}

const CUSTOMER: &[Field] = &[field!("id", Kind::Integer), field!("name", Kind::String), field!("email", Kind::String)];

const ITEM: &[Field] = &[
    field!("product_id", Kind::Integer),
    field!("sku", Kind::String),
    field!("name", Kind::String),
    field!("quantity", Kind::Integer),
    field!("unit_price_cents", Kind::Integer),
];

const SHIPPING: &[Field] = &[
    field!("street", Kind::String),
    field!("city", Kind::String),
    field!("postal_code", Kind::String),
    field!("country", Kind::String),
];

const ORDER: &[Field] = &[
    field!("_id", "id", Kind::Integer, true),
    field!("customer", Kind::Document(CUSTOMER)),
    field!("status", Kind::String),
    field!("items", Kind::Documents(ITEM)),
    field!("total_cents", Kind::Integer),
    field!("currency", Kind::String),
    field!("shipping", Kind::Document(SHIPPING)),
    field!("note", "note", Kind::String, false),
    field!("created_at", Kind::Date),
    field!("updated_at", Kind::Date),
    Field { bson: IDEMPOTENCY_KEY, json_key: "", kind: Kind::Hidden, required: false },
    Field { bson: IDEMPOTENCY_FINGERPRINT, json_key: "", kind: Kind::Hidden, required: false },
];

/// The JSON of one stored order.
pub fn order_json(document: &RawDocumentBuf) -> Result<Vec<u8>, DocumentError> {
    let mut out = Vec::with_capacity(document.as_bytes().len() + 64);
    write_document(&mut out, document.as_bytes(), ORDER)?;
    Ok(out)
}

/// Appends one stored order to a list body; `Ok(false)` when it does not fit the list's bound
/// (`OrderListJson::push_with`: the list is then cut).
pub fn push_order(list: &mut OrderListJson, document: &RawDocument) -> Result<bool, DocumentError> {
    list.push_with(|out| write_document(out, document.as_bytes(), ORDER))
}

fn write_document(out: &mut Vec<u8>, document: &[u8], fields: &[Field]) -> Result<(), DocumentError> {
    let mut seen = 0_u32;
    // Stored documents hold their fields in `fields`' order, so the field after the last one found
    // is tried first.
    let mut expected = 0;
    out.push(b'{');
    for element in Elements::new(document).map_err(malformed)? {
        let Element { element_type, key, value } = element.map_err(malformed)?;
        let index = match fields.get(expected) {
            Some(field) if field.bson.as_bytes() == key => expected,
            _ => fields
                .iter()
                .position(|field| field.bson.as_bytes() == key)
                .ok_or_else(|| error(&String::from_utf8_lossy(key), "is not a field of an order"))?,
        };
        let field = fields[index];
        if seen & (1 << index) != 0 {
            return Err(error(field.bson, "appears twice"));
        }
        seen |= 1 << index;
        expected = index + 1;
        if matches!(field.kind, Kind::Hidden) {
            continue;
        }
        let key = field.json_key.as_bytes();
        out.extend_from_slice(if out.last() == Some(&b'{') { &key[1..] } else { key });
        write_value(out, element_type, value, field.kind).map_err(|e| e.within(field.bson))?;
    }
    out.push(b'}');
    match fields.iter().enumerate().find(|(index, field)| field.required && seen & (1 << index) == 0) {
        Some((_, missing)) => Err(error(missing.bson, "is missing")),
        None => Ok(()),
    }
}

/// Writes `value` (of BSON type `element_type`) if it is of `kind`; errors name the field relative
/// to the value (`""` for the value itself), and the caller puts its own key in front.
fn write_value(out: &mut Vec<u8>, element_type: u8, value: &[u8], kind: Kind) -> Result<(), DocumentError> {
    const INT32: u8 = ElementType::Int32 as u8;
    const INT64: u8 = ElementType::Int64 as u8;
    const STRING: u8 = ElementType::String as u8;
    const DATE_TIME: u8 = ElementType::DateTime as u8;
    const DOCUMENT: u8 = ElementType::EmbeddedDocument as u8;
    const ARRAY: u8 = ElementType::Array as u8;
    match (kind, element_type) {
        (Kind::Integer, INT64) => write_unsigned(out, bson_bytes::int64(value)),
        (Kind::Integer, INT32) => write_unsigned(out, i64::from(bson_bytes::int32(value))),
        (Kind::String, STRING) => bson_bytes::string(value)
            .and_then(|text| write_utf8(out, text).map_err(|_| Malformed("a string that is not UTF-8")))
            .map_err(malformed),
        (Kind::Date, DATE_TIME) => {
            write_timestamp(out, Timestamp::from_millis(bson_bytes::int64(value)));
            Ok(())
        }
        (Kind::Document(fields), DOCUMENT) => write_document(out, value, fields),
        (Kind::Documents(fields), ARRAY) => {
            out.push(b'[');
            for (index, element) in Elements::new(value).map_err(malformed)?.enumerate() {
                if index > 0 {
                    out.push(b',');
                }
                let at = |e: DocumentError| e.within(&format!("[{index}]"));
                let element = element.map_err(|e| at(malformed(e)))?;
                if element.element_type != DOCUMENT {
                    return Err(at(error("", format!("must be a document, not {}", type_name(element.element_type)))));
                }
                write_document(out, element.value, fields).map_err(at)?;
            }
            out.push(b']');
            Ok(())
        }
        (kind, other) => Err(error("", format!("must be {}, not {}", kind.name(), type_name(other)))),
    }
}

/// The name of a BSON type for an error message (`Double`, `String`, ...).
fn type_name(element_type: u8) -> String {
    match ElementType::from(element_type) {
        Some(known) => format!("{known:?}"),
        None => format!("type {element_type:#04x}"),
    }
}

fn malformed(Malformed(what): Malformed) -> DocumentError {
    error("", format!("is not valid BSON: {what}"))
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
    out.extend_from_slice(itoa::Buffer::new().format(unsigned).as_bytes());
    Ok(())
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
    use orders_core::sample::stored_order;

    fn raw(document: &Document) -> RawDocumentBuf {
        RawDocumentBuf::from_document(document).expect("raw")
    }

    fn json_of(document: &Document) -> Result<Vec<u8>, DocumentError> {
        order_json(&raw(document))
    }

    #[test]
    fn the_json_is_byte_for_byte_what_serialising_the_order_gives() {
        let tricky = "ünïcödé ✓ \"quoted\" \\ back\tslash\n\u{1}\u{7f} </script>";
        for order in [stored_order(None), stored_order(Some(tricky)), stored_order(Some(""))] {
            let json = json_of(&to_document(&order).expect("to bson")).expect("json");
            assert_eq!(String::from_utf8_lossy(&json), serde_json::to_string(&order).expect("serialise"));
        }
    }

    #[test]
    fn lists_hold_each_order_in_turn() {
        let documents =
            [to_document(&stored_order(None)).expect("bson"), to_document(&stored_order(Some("n"))).expect("bson")];
        let mut list = OrderListJson::default();
        for document in &documents {
            assert!(push_order(&mut list, &raw(document)).expect("push"));
        }
        assert_eq!(list.to_orders().expect("parse"), [stored_order(None), stored_order(Some("n"))]);
    }

    #[test]
    fn the_idempotency_key_fields_are_stored_but_never_shown() {
        let mut document = to_document(&stored_order(None)).expect("to bson");
        document.insert(IDEMPOTENCY_KEY, "k-1");
        document.insert(IDEMPOTENCY_FINGERPRINT, -42_i64);
        let json = json_of(&document).expect("json");
        assert_eq!(json, serde_json::to_vec(&stored_order(None)).expect("serialise"));
    }

    #[test]
    fn int32_values_from_other_writers_are_the_same_numbers() {
        let mut document = to_document(&stored_order(None)).expect("to bson");
        document.insert("_id", 4242_i32);
        let json = json_of(&document).expect("json");
        assert_eq!(json, serde_json::to_vec(&stored_order(None)).expect("serialise"));
    }

    #[test]
    fn unknown_missing_repeated_and_mistyped_fields_are_errors_naming_the_field() {
        let good = to_document(&stored_order(None)).expect("to bson");
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

    #[test]
    fn bytes_that_are_not_bson_are_an_error_not_a_panic() {
        let bytes = raw(&to_document(&stored_order(Some("a note"))).expect("bson")).into_bytes();
        // Cut anywhere, with the length prefix and the closing NUL made to fit the cut: the framing
        // is right, what is inside is not a whole order.
        for end in 5..bytes.len() {
            let mut cut = bytes[..end].to_vec();
            cut[..4].copy_from_slice(&u32::try_from(end).expect("small").to_le_bytes());
            cut[end - 1] = 0;
            let failure = write_document(&mut Vec::new(), &cut, ORDER).expect_err("a cut document");
            assert!(failure.reason.contains("not valid BSON") || failure.reason.contains("missing"), "{failure}");
        }
        let mut bytes = raw(&to_document(&stored_order(None)).expect("bson")).into_bytes();
        let at = bytes.windows(3).position(|w| w == b"EUR").expect("the currency's bytes");
        bytes[at] = 0xff;
        let failure = push_order(&mut OrderListJson::default(), RawDocument::from_bytes(&bytes).expect("framing"))
            .expect_err("not UTF-8");
        assert_eq!(
            (failure.field.as_str(), failure.reason.as_str()),
            ("currency", "is not valid BSON: a string that is not UTF-8")
        );
    }

    /// `{"_id": 1, "_id": 2}` as BSON bytes (a `Document` cannot hold a key twice).
    fn twice_id_document() -> Vec<u8> {
        let element = |value: u8| [&[0x12_u8][..], b"_id\0", &[value, 0, 0, 0, 0, 0, 0, 0]].concat();
        let body = [element(1), element(2)].concat();
        let length = u32::try_from(4 + body.len() + 1).expect("small");
        [&length.to_le_bytes()[..], &body, &[0]].concat()
    }
}
