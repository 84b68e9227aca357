use super::*;
use crate::sample::{order_body, order_body_total};
use serde_json::{Value, json};

fn parse(body: &Value) -> Result<NewOrder, BodyError> {
    NewOrder::parse(body.to_string().as_bytes())
}

fn field_errors(body: &Value) -> Vec<(String, String)> {
    match parse(body) {
        Err(BodyError::Invalid(errors)) => {
            errors.listed().iter().map(|e| (e.field.clone(), e.message.clone())).collect()
        }
        other => panic!("expected validation errors, got {other:?}"),
    }
}

fn fields(body: &Value) -> Vec<String> {
    field_errors(body).into_iter().map(|(field, _)| field).collect()
}

#[test]
fn a_valid_body_parses_with_defaults_and_a_computed_total() {
    let body = order_body(7, [1, 2, 3]);
    let order = parse(&body).expect("valid");
    assert_eq!(order.requested_id(), None);
    assert_eq!(order.status, Status::Pending);
    assert_eq!(order.total_cents, order_body_total(&body));
    assert_eq!(order.total_cents, 1999 + 2 * 2099 + 3 * 2199);
}

#[test]
fn null_optional_fields_count_as_absent() {
    let mut body = order_body(7, [1, 2, 3]);
    body["id"] = Value::Null;
    body["note"] = Value::Null;
    body["status"] = Value::Null;
    assert!(parse(&body).is_ok());
}

#[test]
fn every_bad_field_is_reported_with_its_path() {
    let mut body = order_body(7, [1, 2, 3]);
    body["customer"]["id"] = json!({"$gt": 0});
    body["items"][0]["quantity"] = json!(0);
    body["items"][2]["sku"] = json!("");
    body["shipping"]["country"] = json!("de");
    body["currency"] = json!(978);
    body["extra"] = json!(true);
    assert_eq!(
        fields(&body),
        ["extra", "customer.id", "items[0].quantity", "items[2].sku", "currency", "shipping.country"]
    );
}

#[test]
fn missing_fields_are_required() {
    let body = json!({"customer": {"id": 1}});
    assert_eq!(
        field_errors(&body),
        [
            ("customer.name".into(), "is required".into()),
            ("customer.email".into(), "is required".into()),
            ("items".into(), "is required".into()),
            ("currency".into(), "is required".into()),
            ("shipping".into(), "is required".into()),
        ]
    );
}

#[test]
fn duplicate_keys_are_reported_not_silently_merged() {
    let mut text = order_body(7, [1, 2, 3]).to_string();
    text.insert_str(1, r#""currency":"USD","#);
    match NewOrder::parse(text.as_bytes()) {
        Err(BodyError::Invalid(errors)) => {
            assert_eq!(errors.listed(), [FieldError { field: "currency".into(), message: "duplicate field".into() }])
        }
        other => panic!("expected a duplicate field error, got {other:?}"),
    }
}

#[test]
fn ids_must_be_positive_safe_integers() {
    for (value, ok) in [
        (json!(1), true),
        (json!(9_007_199_254_740_991_u64), true),
        (json!(9_007_199_254_740_992_u64), false),
        (json!(0), false),
        (json!(-1), false),
        (json!(1.5), false),
        (json!(1.0), false),
        (json!("1"), false),
    ] {
        let mut body = order_body(7, [1, 2, 3]);
        body["id"] = value.clone();
        assert_eq!(parse(&body).is_ok(), ok, "id {value}");
        let mut body = order_body(7, [1, 2, 3]);
        body["items"][1]["product_id"] = value.clone();
        assert_eq!(parse(&body).is_ok(), ok, "product_id {value}");
    }
}

#[test]
fn item_count_is_one_to_a_thousand() {
    let template = order_body(7, [1, 2, 3])["items"][0].clone();
    for (count, ok) in [(0, false), (1, true), (1000, true), (1001, false)] {
        let mut body = order_body(7, [1, 2, 3]);
        body["items"] = Value::Array(vec![template.clone(); count]);
        assert_eq!(parse(&body).is_ok(), ok, "{count} items");
    }
}

#[test]
fn a_total_beyond_max_safe_integer_is_refused() {
    let mut body = order_body(7, [1, 2, 3]);
    for i in 0..3 {
        body["items"][i]["quantity"] = json!(1_000_000);
        body["items"][i]["unit_price_cents"] = json!(1_000_000_000_000_u64);
    }
    assert_eq!(fields(&body), ["total_cents"]);
}

#[test]
fn nul_characters_are_refused_anywhere() {
    let mut body = order_body(7, [1, 2, 3]);
    body["shipping"]["city"] = json!("Ber\u{0}lin");
    body["note"] = json!("\u{0}");
    assert_eq!(fields(&body), ["shipping.city", "note"]);
}

#[test]
fn a_body_that_is_not_an_object_is_invalid_and_broken_json_is_malformed() {
    assert_eq!(fields(&json!([1, 2])), ["body"]);
    assert!(matches!(NewOrder::parse(b"{\"customer\":"), Err(BodyError::Malformed(_))));
    assert!(matches!(NewOrder::parse(br#"{"note":"\udc00"}"#), Err(BodyError::Malformed(_))));
}

#[test]
fn status_change_requires_a_known_status_and_an_optional_from() {
    assert_eq!(
        StatusChange::parse(br#"{"status":"shipped","from":"paid"}"#),
        Ok(StatusChange { status: Status::Shipped, from: Some(Status::Paid) })
    );
    assert_eq!(StatusChange::parse(br#"{"status":"paid"}"#), Ok(StatusChange { status: Status::Paid, from: None }));
    for bad in [&br#"{}"#[..], br#"{"status":"lost"}"#, br#"{"status":"paid","from":1}"#, br#"{"status":"paid","x":1}"#]
    {
        assert!(matches!(StatusChange::parse(bad), Err(BodyError::Invalid(_))), "{}", String::from_utf8_lossy(bad));
    }
}

#[test]
fn thousands_of_bad_fields_list_the_first_hundred_and_count_the_rest() {
    let mut text = String::from("{");
    for i in 0..5_000 {
        text.push_str(&format!(r#""x{i}":1,"#));
    }
    for _ in 0..3_000 {
        text.push_str(r#""currency":"EUR","#);
    }
    text.push_str(r#""note":null}"#);
    let Err(BodyError::Invalid(errors)) = NewOrder::parse(text.as_bytes()) else { panic!("a validation error") };
    // 5000 unknown, 2999 duplicates, then customer, items and shipping missing.
    assert_eq!(errors.len(), 5_000 + 2_999 + 3);
    assert_eq!(errors.listed().len(), FieldErrors::MAX_LISTED);
    assert_eq!(errors.listed()[0], FieldError { field: "x0".into(), message: "unknown field".into() });
    assert_eq!(errors.listed()[99].field, "x99");
}

#[test]
fn a_repeated_field_is_a_duplicate_every_time_after_the_first() {
    let body = order_body(7, [1, 2, 3]).to_string();
    let text =
        format!(r#"{{"status":"paid",{},"status":"lost","status":"paid","status":1}}"#, &body[1..body.len() - 1]);
    let Err(BodyError::Invalid(errors)) = NewOrder::parse(text.as_bytes()) else { panic!("a validation error") };
    let duplicate = FieldError { field: "status".into(), message: "duplicate field".into() };
    assert_eq!(errors.listed(), [duplicate.clone(), duplicate.clone(), duplicate]);
}

#[test]
fn an_item_with_unknown_keys_names_them_with_the_item_index() {
    let mut body = order_body(7, [1, 2, 3]);
    body["items"][1]["colour"] = json!("red");
    assert_eq!(field_errors(&body), [("items[1].colour".into(), "unknown field".into())]);
}
