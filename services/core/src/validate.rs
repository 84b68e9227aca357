//! Turns a request body into `NewOrder` or `StatusChange`, collecting one `FieldError` per bad
//! field (missing, unknown, duplicate, wrongly typed or out of range) instead of stopping at the
//! first. A body that is not well-formed JSON is a different failure (`BodyError::Malformed`,
//! HTTP 400) from a well-formed body with bad fields (`BodyError::Invalid`, HTTP 422).

use crate::ids::{CustomerId, MAX_SAFE_INTEGER, OrderId, ProductId};
use crate::json_tree::Json;
use crate::order::{Customer, Item, NewOrder, Shipping, Status, StatusChange};
use crate::values::{Bounded, Code, Email, Note, Text};

/// One bad field: `field` is a path such as `items[0].quantity`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FieldError {
    pub field: String,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BodyError {
    #[error("request body is not well-formed JSON: {0}")]
    Malformed(String),
    #[error("request body failed validation")]
    Invalid(Vec<FieldError>),
}

pub const MAX_ITEMS: usize = 1000;

impl NewOrder {
    pub fn parse(body: &[u8]) -> Result<Self, BodyError> {
        let json = Json::parse(body).map_err(|e| BodyError::Malformed(e.to_string()))?;
        let mut errors = Vec::new();
        let order = new_order(&json, &mut errors);
        match order {
            Some(order) if errors.is_empty() => Ok(order),
            _ => Err(BodyError::Invalid(errors)),
        }
    }
}

impl StatusChange {
    pub fn parse(body: &[u8]) -> Result<Self, BodyError> {
        let json = Json::parse(body).map_err(|e| BodyError::Malformed(e.to_string()))?;
        let mut errors = Vec::new();
        let change = (|| {
            let mut obj = Object::read(&json, "", &["status", "from"], &mut errors)?;
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

fn new_order(json: &Json, errors: &mut Vec<FieldError>) -> Option<NewOrder> {
    const FIELDS: &[&str] = &["id", "customer", "status", "items", "currency", "shipping", "note"];
    let mut obj = Object::read(json, "", FIELDS, errors)?;
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
        obj.errors.push(FieldError {
            field: "total_cents".into(),
            message: format!("the computed total must be at most {MAX_SAFE_INTEGER}"),
        });
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

fn customer(json: &Json, path: &str, errors: &mut Vec<FieldError>) -> Option<Customer> {
    let mut obj = Object::read(json, path, &["id", "name", "email"], errors)?;
    let id = obj.required("id", leaf(|v| CustomerId::new(unsigned(v)?)));
    let name = obj.required("name", leaf(|v| Text::new(string(v)?)));
    let email = obj.required("email", leaf(|v| Email::new(string(v)?)));
    Some(Customer { id: id?, name: name?, email: email? })
}

fn items(json: &Json, path: &str, errors: &mut Vec<FieldError>) -> Option<Vec<Item>> {
    let Json::Array(elements) = json else {
        errors.push(FieldError { field: path.into(), message: format!("must be an array, not {}", json.kind()) });
        return None;
    };
    if elements.is_empty() || elements.len() > MAX_ITEMS {
        errors.push(FieldError { field: path.into(), message: format!("must hold 1 to {MAX_ITEMS} items") });
        return None;
    }
    let parsed: Vec<Option<Item>> =
        elements.iter().enumerate().map(|(i, element)| item(element, &format!("{path}[{i}]"), errors)).collect();
    parsed.into_iter().collect()
}

fn item(json: &Json, path: &str, errors: &mut Vec<FieldError>) -> Option<Item> {
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

fn shipping(json: &Json, path: &str, errors: &mut Vec<FieldError>) -> Option<Shipping> {
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

fn string(json: &Json) -> Result<&str, String> {
    match json {
        Json::String(s) => Ok(s),
        other => Err(format!("must be a string, not {}", other.kind())),
    }
}

/// Lifts a scalar rule (`value -> Result<T, reason>`) into a field parser: given the value and
/// the field's path, it records its own error and returns `None` when the value was bad.
fn leaf<T>(rule: impl Fn(&Json) -> Result<T, String>) -> impl Fn(&Json, &str, &mut Vec<FieldError>) -> Option<T> {
    move |json, path, errors| match rule(json) {
        Ok(value) => Some(value),
        Err(message) => {
            errors.push(FieldError { field: path.into(), message });
            None
        }
    }
}

/// The fields of one JSON object, read once each; unknown and duplicate keys are reported when it
/// is first read.
struct Object<'a, 'e> {
    path: String,
    entries: &'a [(String, Json)],
    errors: &'e mut Vec<FieldError>,
}

impl<'a, 'e> Object<'a, 'e> {
    fn read(json: &'a Json, path: &str, known: &[&str], errors: &'e mut Vec<FieldError>) -> Option<Self> {
        let Json::Object(entries) = json else {
            let field = if path.is_empty() { "body" } else { path };
            errors.push(FieldError { field: field.into(), message: format!("must be an object, not {}", json.kind()) });
            return None;
        };
        for (index, (key, _)) in entries.iter().enumerate() {
            let field = join(path, key);
            if !known.contains(&key.as_str()) {
                errors.push(FieldError { field, message: "unknown field".into() });
            } else if entries[..index].iter().any(|(earlier, _)| earlier == key) {
                errors.push(FieldError { field, message: "duplicate field".into() });
            }
        }
        // A flawed object is still read, so every other bad field is reported too.
        Some(Self { path: path.to_owned(), entries, errors })
    }

    fn find(&self, name: &str) -> Option<&'a Json> {
        self.entries.iter().find(|(key, _)| key == name).map(|(_, value)| value)
    }

    /// `Some(value)` when present and valid; `None` (with an error recorded) otherwise.
    fn required<T>(&mut self, name: &str, parse: impl Fn(&Json, &str, &mut Vec<FieldError>) -> Option<T>) -> Option<T> {
        let field = join(&self.path, name);
        match self.find(name) {
            Some(value) => parse(value, &field, self.errors),
            None => {
                self.errors.push(FieldError { field, message: "is required".into() });
                None
            }
        }
    }

    /// `Some(None)` when absent or null, `Some(Some(value))` when valid, `None` when invalid.
    fn optional<T>(
        &mut self,
        name: &str,
        parse: impl Fn(&Json, &str, &mut Vec<FieldError>) -> Option<T>,
    ) -> Option<Option<T>> {
        let field = join(&self.path, name);
        match self.find(name) {
            None | Some(Json::Null) => Some(None),
            Some(value) => parse(value, &field, self.errors).map(Some),
        }
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() { key.to_owned() } else { format!("{path}.{key}") }
}

#[cfg(test)]
#[path = "validate_tests.rs"]
mod tests;
