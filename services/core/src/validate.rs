//! Turns a request body into `NewOrder` or `StatusChange`, collecting one `FieldError` per bad
//! field (missing, unknown, duplicate, wrongly typed or out of range) instead of stopping at the
//! first. A body that is not well-formed JSON is a different failure (`BodyError::Malformed`,
//! HTTP 400) from a well-formed body with bad fields (`BodyError::Invalid`, HTTP 422).
//!
//! Reading is linear in the size of the body whatever it holds: each object is read in one pass
//! that looks every key up among the few its place allows and remembers which it has seen, so a
//! key repeated thirty thousand times costs thirty thousand look-ups, not half a billion
//! comparisons; past the first `FieldErrors::MAX_LISTED` bad fields, errors are only counted; and
//! of the body only what validation can look at is stored (`KEEP`).

use crate::ids::{CustomerId, MAX_SAFE_INTEGER, OrderId, ProductId};
use crate::json_tree::{Json, Keep};
use crate::order::{Customer, Item, NewOrder, Shipping, Status, StatusChange};
use crate::values::{Bounded, Code, Email, Note, Text};
use std::fmt;

pub use crate::field_errors::{FieldError, FieldErrors};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BodyError {
    #[error("request body is not well-formed JSON: {0}")]
    Malformed(String),
    #[error("request body failed validation")]
    Invalid(FieldErrors),
}

pub const MAX_ITEMS: usize = 1000;

/// What of a body validation can look at: a field of an item (body, `items`, an item, its field)
/// is the deepest value it reads, and only its kind if it is an array or an object; an array
/// longer than `MAX_ITEMS` is refused without looking at its elements.
const KEEP: Keep = Keep { depth: 3, elements: MAX_ITEMS + 1 };

impl NewOrder {
    pub fn parse(body: &[u8]) -> Result<Self, BodyError> {
        let json = Json::parse_keeping(body, KEEP).map_err(|e| BodyError::Malformed(e.to_string()))?;
        let mut errors = FieldErrors::new();
        let order = new_order(&json, &mut errors);
        match order {
            Some(order) if errors.is_empty() => Ok(order),
            _ => Err(BodyError::Invalid(errors)),
        }
    }
}

impl StatusChange {
    pub fn parse(body: &[u8]) -> Result<Self, BodyError> {
        let json = Json::parse_keeping(body, KEEP).map_err(|e| BodyError::Malformed(e.to_string()))?;
        let mut errors = FieldErrors::new();
        let change = (|| {
            let mut obj = Object::read(&json, Path::Body, &["status", "from"], &mut errors)?;
            let status = obj.required("status", leaf(parse_status));
            let from = obj.optional("from", leaf(parse_status));
            Some(StatusChange { status: status?, from: from? })
        })();
        match change {
            Some(change) if errors.is_empty() => Ok(change),
            _ => Err(BodyError::Invalid(errors)),
        }
    }
}

fn new_order(json: &Json, errors: &mut FieldErrors) -> Option<NewOrder> {
    const FIELDS: &[&str] = &["id", "customer", "status", "items", "currency", "shipping", "note"];
    let mut obj = Object::read(json, Path::Body, FIELDS, errors)?;
    let id = obj.optional("id", leaf(|v| OrderId::new(unsigned(v)?)));
    let customer = obj.required("customer", customer);
    let status = obj.optional("status", leaf(parse_status));
    let items = obj.required("items", items);
    let currency = obj.required("currency", leaf(|v| Code::new(string(v)?)));
    let shipping = obj.required("shipping", shipping);
    let note = obj.optional("note", leaf(|v| Note::new(string(v)?)));
    let items = items?;
    let total: u128 = items.iter().map(|item| u128::from(item.line_total_cents())).sum();
    if total > u128::from(MAX_SAFE_INTEGER) {
        obj.errors.push("total_cents", format!("the computed total must be at most {MAX_SAFE_INTEGER}"));
        return None;
    }
    Some(NewOrder {
        id: id?,
        customer: customer?,
        status: status?.unwrap_or(Status::Pending),
        items,
        total_cents: total as u64,
        currency: currency?,
        shipping: shipping?,
        note: note?,
    })
}

fn customer(json: &Json, path: Path<'_>, errors: &mut FieldErrors) -> Option<Customer> {
    let mut obj = Object::read(json, path, &["id", "name", "email"], errors)?;
    let id = obj.required("id", leaf(|v| CustomerId::new(unsigned(v)?)));
    let name = obj.required("name", leaf(|v| Text::new(string(v)?)));
    let email = obj.required("email", leaf(|v| Email::new(string(v)?)));
    Some(Customer { id: id?, name: name?, email: email? })
}

fn items(json: &Json, path: Path<'_>, errors: &mut FieldErrors) -> Option<Vec<Item>> {
    let Json::Array(elements) = json else {
        errors.push(path, format!("must be an array, not {}", json.kind()));
        return None;
    };
    if elements.is_empty() || elements.len() > MAX_ITEMS {
        errors.push(path, format!("must hold 1 to {MAX_ITEMS} items"));
        return None;
    }
    let parsed: Vec<Option<Item>> =
        elements.iter().enumerate().map(|(i, element)| item(element, Path::Item(&path, i), errors)).collect();
    parsed.into_iter().collect()
}

fn item(json: &Json, path: Path<'_>, errors: &mut FieldErrors) -> Option<Item> {
    const FIELDS: &[&str] = &["product_id", "sku", "name", "quantity", "unit_price_cents"];
    let mut obj = Object::read(json, path, FIELDS, errors)?;
    let product_id = obj.required("product_id", leaf(|v| ProductId::new(unsigned(v)?)));
    let sku = obj.required("sku", leaf(|v| Text::new(string(v)?)));
    let name = obj.required("name", leaf(|v| Text::new(string(v)?)));
    let quantity = obj.required("quantity", leaf(|v| Bounded::new(unsigned(v)?)));
    let unit_price_cents = obj.required("unit_price_cents", leaf(|v| Bounded::new(unsigned(v)?)));
    Some(Item {
        product_id: product_id?,
        sku: sku?,
        name: name?,
        quantity: quantity?,
        unit_price_cents: unit_price_cents?,
    })
}

fn shipping(json: &Json, path: Path<'_>, errors: &mut FieldErrors) -> Option<Shipping> {
    let mut obj = Object::read(json, path, &["street", "city", "postal_code", "country"], errors)?;
    let street = obj.required("street", leaf(|v| Text::new(string(v)?)));
    let city = obj.required("city", leaf(|v| Text::new(string(v)?)));
    let postal_code = obj.required("postal_code", leaf(|v| Text::new(string(v)?)));
    let country = obj.required("country", leaf(|v| Code::new(string(v)?)));
    Some(Shipping { street: street?, city: city?, postal_code: postal_code?, country: country? })
}

fn parse_status(json: &Json) -> Result<Status, String> {
    Status::parse(string(json)?)
}

fn unsigned(json: &Json) -> Result<u64, String> {
    match json {
        Json::Unsigned(n) => Ok(*n),
        Json::Negative(_) => Err("must not be negative".into()),
        Json::Float(_) => Err("must be an integer within range".into()),
        other => Err(format!("must be an integer, not {}", other.kind())),
    }
}

fn string<'a>(json: &'a Json<'_>) -> Result<&'a str, String> {
    match json {
        Json::String(s) => Ok(s),
        other => Err(format!("must be a string, not {}", other.kind())),
    }
}

/// Where a value sits in the body, spelled out (`items[0].quantity`) only when an error names
/// it: a valid body is read without building a single path.
#[derive(Debug, Clone, Copy)]
enum Path<'p> {
    Body,
    Field(&'p Path<'p>, &'p str),
    Item(&'p Path<'p>, usize),
}

impl fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Path::Body => Ok(()),
            Path::Field(Path::Body, key) => f.write_str(key),
            Path::Field(parent, key) => write!(f, "{parent}.{key}"),
            Path::Item(parent, index) => write!(f, "{parent}[{index}]"),
        }
    }
}

/// Lifts a scalar rule (`value -> Result<T, reason>`) into a field parser: given the value and
/// the field's path, it records its own error and returns `None` when the value was bad.
fn leaf<T>(rule: impl Fn(&Json) -> Result<T, String>) -> impl Fn(&Json, Path<'_>, &mut FieldErrors) -> Option<T> {
    move |json, path, errors| match rule(json) {
        Ok(value) => Some(value),
        Err(message) => {
            errors.push(path, message);
            None
        }
    }
}

/// The most fields an object of the API may have (an order has seven).
const MAX_FIELDS: usize = 8;

/// The fields of one JSON object, read once each; unknown and duplicate keys are reported when it
/// is first read.
struct Object<'a, 'e, 'p> {
    path: Path<'p>,
    known: &'static [&'static str],
    /// The value of each known field (first occurrence), in the order of `known`.
    values: [Option<&'a Json<'a>>; MAX_FIELDS],
    errors: &'e mut FieldErrors,
}

impl<'a, 'e, 'p> Object<'a, 'e, 'p> {
    /// One pass over the entries: each key is looked up among `known` (a handful), and a known key
    /// met a second time is a duplicate.
    fn read(
        json: &'a Json<'a>,
        path: Path<'p>,
        known: &'static [&'static str],
        errors: &'e mut FieldErrors,
    ) -> Option<Self> {
        debug_assert!(known.len() <= MAX_FIELDS);
        let Json::Object(entries) = json else {
            let message = format!("must be an object, not {}", json.kind());
            match path {
                Path::Body => errors.push("body", message),
                _ => errors.push(path, message),
            }
            return None;
        };
        let mut values = [None; MAX_FIELDS];
        for (key, value) in entries {
            let message = match known.iter().position(|name| *name == key.as_ref()) {
                None => "unknown field",
                Some(index) if values[index].is_some() => "duplicate field",
                Some(index) => {
                    values[index] = Some(value);
                    continue;
                }
            };
            errors.push(Path::Field(&path, key), message);
        }
        // A flawed object is still read, so every other bad field is reported too.
        Some(Self { path, known, values, errors })
    }

    fn find(&self, name: &str) -> Option<&'a Json<'a>> {
        let index = self.known.iter().position(|known| *known == name)?;
        self.values[index]
    }

    /// `Some(value)` when present and valid; `None` (with an error recorded) otherwise.
    fn required<T>(&mut self, name: &str, parse: impl Fn(&Json, Path<'_>, &mut FieldErrors) -> Option<T>) -> Option<T> {
        let field = Path::Field(&self.path, name);
        match self.find(name) {
            Some(value) => parse(value, field, self.errors),
            None => {
                self.errors.push(field, "is required");
                None
            }
        }
    }

    /// `Some(None)` when absent or null, `Some(Some(value))` when valid, `None` when invalid.
    fn optional<T>(
        &mut self,
        name: &str,
        parse: impl Fn(&Json, Path<'_>, &mut FieldErrors) -> Option<T>,
    ) -> Option<Option<T>> {
        match self.find(name) {
            None | Some(Json::Null) => Some(None),
            Some(value) => parse(value, Path::Field(&self.path, name), self.errors).map(Some),
        }
    }
}

#[cfg(test)]
#[path = "validate_tests.rs"]
mod tests;
