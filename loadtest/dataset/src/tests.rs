//! Unit tests of the generator: determinism, validity by the API's own rules, the shape of the
//! data (ranges, distinct products, time order) and the document sizes of the profiles.

use super::*;
use std::collections::HashSet;

fn s1(seed: u64) -> Profile {
    Profile { seed, orders: 1_000_000, customers: 100_000, products: 100_000, items: 3, note_bytes: 0 }
}

fn json(order: &Order) -> String {
    serde_json::to_string(order).expect("order serialises")
}

#[test]
fn the_same_seed_and_id_give_the_same_order_in_any_order_of_generation() {
    let profile = s1(42);
    let forward: Vec<String> = (1..=200).map(|id| json(&profile.order(id).expect("order"))).collect();
    let backward: Vec<String> = (1..=200).rev().map(|id| json(&profile.order(id).expect("order"))).collect();
    assert_eq!(forward, backward.into_iter().rev().collect::<Vec<_>>());
    assert_eq!(json(&s1(42).order(777).expect("order")), json(&profile.order(777).expect("order")));
}

#[test]
fn another_seed_gives_other_orders_with_the_same_ids() {
    let (a, b) = (s1(1).order(5).expect("order"), s1(2).order(5).expect("order"));
    assert_eq!(a.id, b.id);
    assert_ne!(json(&a), json(&b));
}

#[test]
fn the_generator_output_is_pinned() {
    // A fingerprint of the first orders of seed 42: if this changes, every seeded data set
    // changes, so bump `manifest::FORMAT` together with it.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for id in 1..=100 {
        for byte in json(&s1(42).order(id).expect("order")).bytes() {
            hash = (hash ^ u64::from(byte)).wrapping_mul(0x100_0000_01b3);
        }
    }
    assert_eq!(hash, PINNED_FINGERPRINT, "generator output changed: {hash:#x}");
}

const PINNED_FINGERPRINT: u64 = 0xcc5f_5eb1_a295_2dd0;

#[test]
fn every_order_is_valid_by_the_api_rules_and_within_the_ranges() {
    let profile = Profile { seed: 9, orders: 5_000, customers: 500, products: 800, items: 3, note_bytes: 20 };
    for id in 1..=profile.orders {
        let order = profile.order(id).expect("order");
        // Deserialising goes through the same checked constructors as a request body.
        let again: Order = serde_json::from_str(&json(&order)).expect("valid by the API's rules");
        assert_eq!(again, order);
        assert_eq!(order.id.get(), id);
        assert!((1..=profile.customers).contains(&order.customer.id.get()));
        let products: HashSet<u64> = order.items.iter().map(|item| item.product_id.get()).collect();
        assert_eq!(products.len(), 3, "an order's products differ");
        assert!(products.iter().all(|p| (1..=profile.products).contains(p)));
        assert_eq!(order.total_cents, order.items.iter().map(Item::line_total_cents).sum::<u64>());
        assert!(order.updated_at >= order.created_at);
        assert_eq!(order.note.as_ref().map(|n| n.as_str().len()), Some(20));
    }
}

#[test]
fn customers_and_products_look_the_same_in_every_order() {
    let profile = Profile { seed: 3, orders: 3_000, customers: 50, products: 60, items: 3, note_bytes: 0 };
    let mut customers = std::collections::HashMap::new();
    let mut products = std::collections::HashMap::new();
    for id in 1..=profile.orders {
        let order = profile.order(id).expect("order");
        let seen =
            customers.entry(order.customer.id).or_insert_with(|| (order.customer.clone(), order.shipping.clone()));
        assert_eq!(seen, &(order.customer.clone(), order.shipping.clone()));
        for item in order.items {
            let seen = products
                .entry(item.product_id)
                .or_insert_with(|| (item.sku.clone(), item.name.clone(), item.unit_price_cents));
            assert_eq!(seen, &(item.sku, item.name, item.unit_price_cents));
        }
    }
    assert_eq!(customers.len(), 50, "3,000 orders reach all 50 customers");
    assert_eq!(products.len(), 60);
}

#[test]
fn created_at_follows_the_id() {
    let profile = s1(5);
    let created: Vec<i64> = (1..=1000).map(|id| profile.order(id).expect("order").created_at.millis()).collect();
    assert!(created.windows(2).all(|w| w[0] <= w[1] + SPACING_MS as i64));
    assert_eq!(profile.order(1).expect("order").created_at.to_string()[..10], *"2025-01-01");
}

#[test]
fn the_default_profile_is_about_600_bytes_like_study_s1() {
    let bytes = s1(42).approx_doc_bytes().expect("size");
    assert!((560..=660).contains(&bytes), "default order is {bytes} bytes");
}

#[test]
fn forty_items_make_big_orders_and_notes_add_their_bytes() {
    let small = s1(42).approx_doc_bytes().expect("size");
    let big = Profile { items: 40, ..s1(42) }.approx_doc_bytes().expect("size");
    assert!((3_400..=4_400).contains(&big), "40 items: {big} bytes");
    for note in [1_000, 10_000, 100_000] {
        let padded = Profile { note_bytes: note, ..s1(42) }.approx_doc_bytes().expect("size");
        let overhead = r#","note":"""#.len() as u64;
        assert!(padded.abs_diff(small + u64::from(note) + overhead) <= 4, "note {note}: {padded} bytes");
    }
}

#[test]
fn few_products_still_give_distinct_items() {
    let profile = Profile { seed: 1, orders: 50, customers: 1, products: 5, items: 5, note_bytes: 0 };
    for id in 1..=50 {
        let mut products: Vec<u64> =
            profile.order(id).expect("order").items.iter().map(|i| i.product_id.get()).collect();
        products.sort_unstable();
        assert_eq!(products, [1, 2, 3, 4, 5]);
    }
}

#[test]
fn check_names_the_flag_of_an_impossible_profile() {
    let bad = |profile: Profile, flag: &str| {
        let message = profile.check().expect_err("refused").to_string();
        assert!(message.contains(flag), "{message}");
    };
    assert!(s1(1).check().is_ok());
    bad(Profile { orders: 0, ..s1(1) }, "--orders");
    bad(Profile { customers: 0, ..s1(1) }, "--customers");
    bad(Profile { products: 2, ..s1(1) }, "--items");
    bad(Profile { items: 1001, ..s1(1) }, "--items");
    bad(Profile { note_bytes: 300_000, ..s1(1) }, "--note-bytes");
}
