//! The requests themselves: which endpoint comes next (by the mix's weights), its path with ids
//! drawn uniformly from the manifest's ranges, and its body, made as the k6 script makes them: a
//! new order like the seeded ones (a customer, `items_per_order` distinct products, a note of the
//! seeded size from the seeder's word list) without an id, or a random status. Every request is
//! made once per moment of the schedule and sent to every target, so both get the same sequence.

use super::mixes::{BodyKind, Definitions, IdOf, Method, Mix, Segment};
use anyhow::{Context, Result};
use bytes::Bytes;
use orders_dataset::manifest::{IdRange, Manifest};
use orders_dataset::prng::SplitMix64;
use std::fmt::Write as _;

const STATUSES: [&str; 5] = ["pending", "paid", "shipped", "delivered", "cancelled"];

/// One endpoint of the mix, ready to fill in.
#[derive(Debug, Clone)]
pub struct EndpointPlan {
    pub name: String,
    pub method: Method,
    pub expect: u16,
    /// Header lines beyond the usual ones (`Prefer: return=minimal` on writes), each ending in CRLF.
    pub headers: &'static str,
    body: BodyKind,
    segments: Vec<Segment>,
    /// Cumulative weight up to and including this endpoint.
    until: u64,
}

/// A request to send to every target.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// Index into `RequestMaker::endpoints`.
    pub endpoint: usize,
    pub path: String,
    pub body: Option<Bytes>,
}

pub struct RequestMaker {
    pub endpoints: Vec<EndpointPlan>,
    total_weight: u64,
    rng: SplitMix64,
    order_ids: IdRange,
    customer_ids: IdRange,
    product_ids: IdRange,
    items_per_order: u64,
    /// The note of every new order, as a JSON string with its quotes (made once, as k6 does per VU).
    note: Option<String>,
    statuses: Vec<Bytes>,
}

impl RequestMaker {
    pub fn new(definitions: &Definitions, mix: &Mix, manifest: &Manifest, seed: u64) -> Result<Self> {
        let mut endpoints = Vec::new();
        let mut until = 0;
        for (name, weight) in &mix.weights {
            let endpoint = definitions.endpoints.get(name).with_context(|| format!("unknown endpoint {name}"))?;
            until += u64::from(*weight);
            endpoints.push(EndpointPlan {
                name: name.clone(),
                method: endpoint.method,
                expect: endpoint.expect,
                headers: "",
                body: endpoint.body,
                segments: endpoint.segments()?,
                until,
            });
        }
        let mut rng = SplitMix64::new(seed);
        let note = (manifest.note_bytes > 0)
            .then(|| serde_json::to_string(&orders_dataset::note_text(&mut rng, manifest.note_bytes as usize)))
            .transpose()
            .context("note")?;
        Ok(Self {
            endpoints,
            total_weight: until,
            rng,
            order_ids: manifest.order_ids,
            customer_ids: manifest.customer_ids,
            product_ids: manifest.product_ids,
            items_per_order: u64::from(manifest.items_per_order),
            note,
            statuses: STATUSES.iter().map(|s| Bytes::from(format!(r#"{{"status":"{s}"}}"#))).collect(),
        })
    }

    /// Writes (the endpoints with a body) ask for `Prefer: return=minimal` (RFC 7240): no body in
    /// the answer, so 200 becomes 204 (201 stays), as the k6 script does with `PREFER`.
    pub fn prefer_minimal(mut self) -> Self {
        for endpoint in self.endpoints.iter_mut().filter(|e| e.body != BodyKind::None) {
            endpoint.headers = "Prefer: return=minimal\r\n";
            if endpoint.expect == 200 {
                endpoint.expect = 204;
            }
        }
        self
    }

    fn id(&mut self, range: IdRange) -> u64 {
        self.rng.between(range.min, range.max)
    }

    fn pick_endpoint(&mut self) -> usize {
        let roll = self.rng.below(self.total_weight);
        self.endpoints.iter().position(|e| roll < e.until).unwrap_or(self.endpoints.len() - 1)
    }

    pub fn next(&mut self) -> Prepared {
        let endpoint = self.pick_endpoint();
        let mut path = String::with_capacity(48);
        for i in 0..self.endpoints[endpoint].segments.len() {
            let id = match &self.endpoints[endpoint].segments[i] {
                Segment::Text(text) => {
                    path.push_str(text);
                    continue;
                }
                Segment::Id(IdOf::Order) => self.id(self.order_ids),
                Segment::Id(IdOf::Customer) => self.id(self.customer_ids),
                Segment::Id(IdOf::Product) => self.id(self.product_ids),
            };
            let _ = write!(path, "{id}");
        }
        let body = match self.endpoints[endpoint].body {
            BodyKind::None => None,
            BodyKind::Status => Some(self.statuses[self.rng.below(STATUSES.len() as u64) as usize].clone()),
            BodyKind::NewOrder => Some(Bytes::from(self.new_order())),
        };
        Prepared { endpoint, path, body }
    }

    /// An order like the seeded ones, as the k6 script's `newOrder()` makes it.
    fn new_order(&mut self) -> String {
        let customer = self.id(self.customer_ids);
        let range = self.product_ids.max - self.product_ids.min + 1;
        let wanted = self.items_per_order.min(range) as usize;
        let mut products: Vec<u64> = Vec::with_capacity(wanted);
        while products.len() < wanted {
            let product = self.id(self.product_ids);
            if !products.contains(&product) {
                products.push(product);
            }
        }
        let mut body = String::with_capacity(256 + self.note.as_ref().map_or(0, String::len));
        let _ = write!(
            body,
            r#"{{"customer":{{"id":{customer},"name":"Load Test","email":"load.test.{customer}@example.com"}},"items":["#
        );
        for (i, product) in products.iter().enumerate() {
            let quantity = self.rng.between(1, 3);
            let price = self.rng.between(1, 200) * 100 - 1;
            let _ = write!(
                body,
                r#"{}{{"product_id":{product},"sku":"SKU-{product:06}","name":"Load Test Item","quantity":{quantity},"unit_price_cents":{price}}}"#,
                if i == 0 { "" } else { "," }
            );
        }
        body.push_str(
            r#"],"currency":"EUR","shipping":{"street":"Hauptstraße 1","city":"Berlin","postal_code":"10115","country":"DE"}"#,
        );
        if let Some(note) = &self.note {
            let _ = write!(body, r#","note":{note}"#);
        }
        body.push('}');
        body
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use orders_dataset::Profile;
    use serde_json::Value;

    fn manifest(orders: u64, note_bytes: u32) -> Manifest {
        let profile = Profile { seed: 1, orders, customers: orders / 10, products: orders / 10, items: 3, note_bytes };
        Manifest::new(&profile, 600)
    }

    fn maker(mix: &str, manifest: &Manifest) -> RequestMaker {
        let definitions = Definitions::embedded().expect("mixes");
        RequestMaker::new(&definitions, &definitions.mix(mix).expect("mix"), manifest, 7).expect("maker")
    }

    #[test]
    fn the_mix_weights_decide_how_often_each_endpoint_comes() {
        let manifest = manifest(1000, 0);
        let mut maker = maker("shop", &manifest);
        let mut counts = std::collections::BTreeMap::<String, u32>::new();
        for _ in 0..10_000 {
            let request = maker.next();
            *counts.entry(maker.endpoints[request.endpoint].name.clone()).or_default() += 1;
        }
        for (endpoint, share) in [("read", 6000), ("product", 3000), ("insert", 1000)] {
            assert!(counts[endpoint].abs_diff(share) < 200, "{counts:?}");
        }
    }

    #[test]
    fn minimal_writes_ask_for_no_body_and_expect_204_for_a_status_change() {
        let manifest = manifest(1000, 0);
        let maker = maker("read:1,insert:1,status:1", &manifest).prefer_minimal();
        let by_name = |name: &str| maker.endpoints.iter().find(|e| e.name == name).expect(name).clone();
        assert_eq!((by_name("read").expect, by_name("read").headers), (200, ""));
        assert_eq!((by_name("insert").expect, by_name("insert").headers), (201, "Prefer: return=minimal\r\n"));
        assert_eq!((by_name("status").expect, by_name("status").headers), (204, "Prefer: return=minimal\r\n"));
    }

    #[test]
    fn paths_carry_ids_from_the_manifest_ranges() {
        let manifest = manifest(1000, 0);
        let mut maker = maker("read:1,customer:1,product:1,status:1", &manifest);
        for _ in 0..500 {
            let request = maker.next();
            let name = maker.endpoints[request.endpoint].name.as_str();
            let id: u64 = request.path.split('/').nth(2).and_then(|s| s.parse().ok()).expect(&request.path);
            let max = match name {
                "read" | "status" => manifest.order_ids.max,
                "customer" => manifest.customer_ids.max,
                _ => manifest.product_ids.max,
            };
            assert!((1..=max).contains(&id), "{name} {}", request.path);
            assert_eq!(request.body.is_some(), name == "status");
        }
    }

    #[test]
    fn new_orders_are_valid_json_shaped_like_the_seeded_ones() {
        let manifest = manifest(1000, 120);
        let mut maker = maker("insert", &manifest);
        let body = maker.next().body.expect("body");
        let order: Value = serde_json::from_slice(&body).expect("JSON");
        assert!(order.get("id").is_none(), "the service assigns the id");
        let items = order["items"].as_array().expect("items");
        assert_eq!(items.len(), manifest.items_per_order as usize);
        let mut products: Vec<u64> = items.iter().map(|i| i["product_id"].as_u64().expect("id")).collect();
        products.sort_unstable();
        products.dedup();
        assert_eq!(products.len(), items.len(), "distinct products");
        assert_eq!(order["note"].as_str().map(str::len), Some(120));
        assert_eq!(order["shipping"]["street"], "Hauptstraße 1");
        let price = items[0]["unit_price_cents"].as_u64().expect("price");
        assert_eq!(price % 100, 99);
    }
}
