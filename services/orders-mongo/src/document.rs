//! The BSON shape of an order in the `orders` collection, written and read by hand so nothing is
//! dropped or coerced silently: `_id` is the order id, every integer is an Int64, `created_at` and
//! `updated_at` are BSON dates (milliseconds, like `Timestamp`), and `note` is absent when there is
//! none. Reading is strict: a missing, unknown or wrongly typed field is an error naming its path,
//! and every value goes through the same checked constructors as a request body.

use mongodb::bson::raw::{RawArrayBuf, RawDocumentBuf};
use mongodb::bson::{Bson, DateTime, Document};
use orders_core::values::{Bounded, Code, Email, Note, Text};
use orders_core::{Customer, CustomerId, Item, Order, OrderId, ProductId, Shipping, Status, Timestamp};

/// The field that holds a keyed insert's `Idempotency-Key`: stored beside the order's fields,
/// never read into the order (so never returned by the API).
pub const IDEMPOTENCY_KEY: &str = "idempotency_key";
/// The fingerprint of the request that stored the key (see `orders_core::idempotency`).
pub const IDEMPOTENCY_FINGERPRINT: &str = "idempotency_fingerprint";

/// A document that is not an order of this service, or an order BSON cannot hold.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("order document field `{field}`: {reason}")]
pub struct DocumentError {
    pub field: String,
    pub reason: String,
}

/// The document stored for `order`, as BSON bytes: written field by field in the order of
/// `raw_json`'s table, with no `Document` (a map of owned keys and values) in between, so an insert
/// hands the driver bytes it copies as they are.
pub fn to_raw_document(order: &Order) -> Result<RawDocumentBuf, DocumentError> {
    let mut customer = RawDocumentBuf::new();
    customer.append("id", order.customer.id.as_i64());
    customer.append_ref("name", order.customer.name.as_str());
    customer.append_ref("email", order.customer.email.as_str());
    let mut items = RawArrayBuf::new();
    for (index, item) in order.items.iter().enumerate() {
        let mut stored = RawDocumentBuf::new();
        stored.append("product_id", item.product_id.as_i64());
        stored.append_ref("sku", item.sku.as_str());
        stored.append_ref("name", item.name.as_str());
        stored.append("quantity", int64(item.quantity.get(), || format!("items[{index}].quantity"))?);
        stored.append(
            "unit_price_cents",
            int64(item.unit_price_cents.get(), || format!("items[{index}].unit_price_cents"))?,
        );
        items.push(stored);
    }
    let mut shipping = RawDocumentBuf::new();
    shipping.append_ref("street", order.shipping.street.as_str());
    shipping.append_ref("city", order.shipping.city.as_str());
    shipping.append_ref("postal_code", order.shipping.postal_code.as_str());
    shipping.append_ref("country", order.shipping.country.as_str());

    let mut document = RawDocumentBuf::new();
    document.append("_id", order.id.as_i64());
    document.append("customer", customer);
    document.append_ref("status", order.status.as_str());
    document.append("items", items);
    document.append("total_cents", int64(order.total_cents, || "total_cents".into())?);
    document.append_ref("currency", order.currency.as_str());
    document.append("shipping", shipping);
    if let Some(note) = &order.note {
        document.append_ref("note", note.as_str());
    }
    document.append("created_at", date(order.created_at));
    document.append("updated_at", date(order.updated_at));
    Ok(document)
}

/// The same document as a `Document`, for code that reads or changes one field by name.
pub fn to_document(order: &Order) -> Result<Document, DocumentError> {
    to_raw_document(order)?
        .to_document()
        .map_err(|error| DocumentError { field: String::new(), reason: format!("is not valid BSON: {error}") })
}

/// The order a stored document holds.
pub fn from_document(document: &Document) -> Result<Order, DocumentError> {
    let mut root = Fields::new(document, "");
    let customer = {
        let mut fields = Fields::new(root.document("customer")?, "customer");
        let customer = Customer {
            id: fields.int("id", CustomerId::new)?,
            name: fields.string("name", Text::new)?,
            email: fields.string("email", Email::new)?,
        };
        fields.finish()?;
        customer
    };
    let items = root
        .array("items")?
        .iter()
        .enumerate()
        .map(|(index, value)| {
            let path = format!("items[{index}]");
            let Bson::Document(item) = value else {
                return Err(DocumentError { field: path, reason: "must be a document".into() });
            };
            let mut fields = Fields::new(item, &path);
            let item = Item {
                product_id: fields.int("product_id", ProductId::new)?,
                sku: fields.string("sku", Text::new)?,
                name: fields.string("name", Text::new)?,
                quantity: fields.int("quantity", Bounded::new)?,
                unit_price_cents: fields.int("unit_price_cents", Bounded::new)?,
            };
            fields.finish()?;
            Ok(item)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let shipping = {
        let mut fields = Fields::new(root.document("shipping")?, "shipping");
        let shipping = Shipping {
            street: fields.string("street", Text::new)?,
            city: fields.string("city", Text::new)?,
            postal_code: fields.string("postal_code", Text::new)?,
            country: fields.string("country", Code::new)?,
        };
        fields.finish()?;
        shipping
    };
    let order = Order {
        id: root.int("_id", OrderId::new)?,
        customer,
        status: root.string("status", Status::parse)?,
        items,
        total_cents: root.int("total_cents", Ok::<u64, String>)?,
        currency: root.string("currency", Code::new)?,
        shipping,
        note: root.optional_string("note", Note::new)?,
        created_at: root.date("created_at")?,
        updated_at: root.date("updated_at")?,
    };
    root.read.extend([IDEMPOTENCY_KEY, IDEMPOTENCY_FINGERPRINT]);
    root.finish()?;
    Ok(order)
}

/// The status field alone, as read by the second look of a conditional status change.
pub fn status_of(document: &Document) -> Result<Status, DocumentError> {
    Fields::new(document, "").string("status", Status::parse)
}

/// A `Timestamp` as a BSON date (both are milliseconds since the Unix epoch).
pub fn date(timestamp: Timestamp) -> DateTime {
    DateTime::from_millis(timestamp.millis())
}

/// `value` as an Int64; the error names `field` (spelled out only then).
fn int64(value: u64, field: impl FnOnce() -> String) -> Result<i64, DocumentError> {
    i64::try_from(value)
        .map_err(|_| DocumentError { field: field(), reason: format!("{value} does not fit in an Int64") })
}

/// The fields of one (sub)document, read by name; `finish` fails if any field was left unread.
struct Fields<'a> {
    document: &'a Document,
    path: String,
    read: Vec<&'static str>,
}

impl<'a> Fields<'a> {
    fn new(document: &'a Document, path: &str) -> Self {
        Self { document, path: path.to_owned(), read: Vec::new() }
    }

    fn error(&self, key: &str, reason: impl Into<String>) -> DocumentError {
        let field = if self.path.is_empty() { key.to_owned() } else { format!("{}.{key}", self.path) };
        DocumentError { field, reason: reason.into() }
    }

    fn get(&mut self, key: &'static str) -> Result<&'a Bson, DocumentError> {
        self.read.push(key);
        let document = self.document;
        document.get(key).ok_or_else(|| self.error(key, "is missing"))
    }

    fn int<T>(&mut self, key: &'static str, parse: impl Fn(u64) -> Result<T, String>) -> Result<T, DocumentError> {
        let value = match self.get(key)? {
            Bson::Int64(value) => *value,
            // Written by another tool; numerically the same, and MongoDB's queries treat it so.
            Bson::Int32(value) => i64::from(*value),
            other => return Err(self.error(key, format!("must be an Int64, not {:?}", other.element_type()))),
        };
        let unsigned = u64::try_from(value).map_err(|_| self.error(key, format!("{value} is negative")))?;
        parse(unsigned).map_err(|reason| self.error(key, reason))
    }

    fn string<T>(
        &mut self,
        key: &'static str,
        parse: impl Fn(&'a str) -> Result<T, String>,
    ) -> Result<T, DocumentError> {
        match self.get(key)? {
            Bson::String(text) => parse(text).map_err(|reason| self.error(key, reason)),
            other => Err(self.error(key, format!("must be a string, not {:?}", other.element_type()))),
        }
    }

    fn optional_string<T>(
        &mut self,
        key: &'static str,
        parse: impl Fn(&'a str) -> Result<T, String>,
    ) -> Result<Option<T>, DocumentError> {
        if self.document.contains_key(key) { self.string(key, parse).map(Some) } else { Ok(None) }
    }

    fn date(&mut self, key: &'static str) -> Result<Timestamp, DocumentError> {
        match self.get(key)? {
            Bson::DateTime(date) => Ok(Timestamp::from_millis(date.timestamp_millis())),
            other => Err(self.error(key, format!("must be a date, not {:?}", other.element_type()))),
        }
    }

    fn document(&mut self, key: &'static str) -> Result<&'a Document, DocumentError> {
        match self.get(key)? {
            Bson::Document(document) => Ok(document),
            other => Err(self.error(key, format!("must be a document, not {:?}", other.element_type()))),
        }
    }

    fn array(&mut self, key: &'static str) -> Result<&'a Vec<Bson>, DocumentError> {
        match self.get(key)? {
            Bson::Array(array) => Ok(array),
            other => Err(self.error(key, format!("must be an array, not {:?}", other.element_type()))),
        }
    }

    /// Fails on the first field no reader asked for, so a field this code does not know is never
    /// dropped on the way to the client.
    fn finish(self) -> Result<(), DocumentError> {
        match self.document.keys().find(|key| !self.read.contains(&key.as_str())) {
            Some(key) => Err(self.error(key, "is not a field of an order")),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mongodb::bson::doc;
    use orders_core::sample::stored_order;

    #[test]
    fn an_order_round_trips_with_and_without_a_note() {
        for order in [stored_order(None), stored_order(Some("ünïcödé ✓")), stored_order(Some(""))] {
            let document = to_document(&order).expect("to bson");
            assert_eq!(from_document(&document), Ok(order));
        }
    }

    #[test]
    fn the_stored_bytes_are_what_encoding_the_same_fields_as_a_document_gives() {
        for order in [stored_order(None), stored_order(Some("ünï"))] {
            let item = |index: usize| {
                let item = &order.items[index];
                doc! {
                    "product_id": item.product_id.as_i64(), "sku": item.sku.as_str(), "name": item.name.as_str(),
                    "quantity": item.quantity.get() as i64, "unit_price_cents": item.unit_price_cents.get() as i64,
                }
            };
            let mut expected = doc! {
                "_id": 4242_i64,
                "customer": {"id": 1234_i64, "name": order.customer.name.as_str(), "email": order.customer.email.as_str()},
                "status": "shipped",
                "items": [item(0), item(1), item(2)],
                "total_cents": order.total_cents as i64,
                "currency": order.currency.as_str(),
                "shipping": {
                    "street": order.shipping.street.as_str(), "city": order.shipping.city.as_str(),
                    "postal_code": order.shipping.postal_code.as_str(), "country": order.shipping.country.as_str(),
                },
            };
            if let Some(note) = &order.note {
                expected.insert("note", note.as_str());
            }
            expected.insert("created_at", DateTime::from_millis(1_795_946_400_123));
            expected.insert("updated_at", DateTime::from_millis(1_795_946_500_456));
            let raw = to_raw_document(&order).expect("raw");
            assert_eq!(raw.as_bytes(), RawDocumentBuf::from_document(&expected).expect("encode").as_bytes());
        }
    }

    #[test]
    fn a_round_trip_through_bytes_keeps_the_order() {
        let order = stored_order(Some("note"));
        let bytes = mongodb::bson::to_vec(&to_document(&order).expect("to bson")).expect("encode");
        let document = Document::from_reader(bytes.as_slice()).expect("decode");
        assert_eq!(from_document(&document), Ok(order));
    }

    #[test]
    fn ids_integers_and_dates_have_their_bson_types() {
        let document = to_document(&stored_order(None)).expect("to bson");
        assert_eq!(document.get("_id"), Some(&Bson::Int64(4242)));
        assert_eq!(document.get_document("customer").expect("customer").get("id"), Some(&Bson::Int64(1234)));
        let item = document.get_array("items").expect("items")[0].as_document().cloned().expect("item");
        for key in ["product_id", "quantity", "unit_price_cents"] {
            assert!(matches!(item.get(key), Some(Bson::Int64(_))), "{key}");
        }
        assert!(matches!(document.get("total_cents"), Some(Bson::Int64(_))));
        assert_eq!(document.get("created_at"), Some(&Bson::DateTime(DateTime::from_millis(1_795_946_400_123))));
        assert_eq!(document.get("updated_at"), Some(&Bson::DateTime(DateTime::from_millis(1_795_946_500_456))));
        assert!(!document.contains_key("note"), "no note, no field");
        assert!(!document.contains_key("id"), "the id is `_id` only");
    }

    #[test]
    fn unknown_missing_and_mistyped_fields_are_errors_naming_the_field() {
        let good = to_document(&stored_order(None)).expect("to bson");
        let field_of = |document: &Document| from_document(document).expect_err("invalid").field;

        let mut extra = good.clone();
        extra.insert("discount", 5_i64);
        assert_eq!(field_of(&extra), "discount");

        let mut missing = good.clone();
        missing.remove("currency");
        assert_eq!(field_of(&missing), "currency");

        let mut nested = good.clone();
        nested.get_document_mut("shipping").expect("shipping").insert("city", 12_i64);
        assert_eq!(field_of(&nested), "shipping.city");

        let mut item = good.clone();
        let items = item.get_array_mut("items").expect("items");
        items[1].as_document_mut().expect("item").insert("colour", "red");
        assert_eq!(field_of(&item), "items[1].colour");

        let mut negative = good.clone();
        negative.insert("total_cents", -1_i64);
        assert_eq!(field_of(&negative), "total_cents");

        let mut string_date = good.clone();
        string_date.insert("created_at", "2026-11-30T10:00:00.000Z");
        assert_eq!(field_of(&string_date), "created_at");

        let mut bad_status = good;
        bad_status.insert("status", "lost");
        assert_eq!(field_of(&bad_status), "status");
    }

    #[test]
    fn int32_values_from_other_writers_read_as_the_same_numbers() {
        let order = stored_order(None);
        let mut document = to_document(&order).expect("to bson");
        document.insert("_id", 4242_i32);
        assert_eq!(from_document(&document), Ok(order));
    }

    #[test]
    fn a_total_beyond_int64_cannot_be_written() {
        let mut order = stored_order(None);
        order.total_cents = u64::MAX;
        assert_eq!(to_document(&order).expect_err("too big").field, "total_cents");
    }
}
