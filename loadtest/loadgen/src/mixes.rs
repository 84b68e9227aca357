//! The request mixes, from `loadtest/mixes.json`: the one definition both load generators use
//! (`loadtest/k6/orders.js` reads the same file with `open()`; this module embeds it at build time).
//! An endpoint is one request: method, path template, the status that counts as success and the
//! kind of body; a mix gives endpoints whole-number weights. A mix argument is a named mix
//! (`shop`) or weights such as `read:50,product:30,insert:20`, read exactly as the k6 script reads
//! it, so both generators resolve every argument to the same endpoints and weights.

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The file itself (also read by the k6 script).
pub const FILE: &str = include_str!("../../mixes.json");

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Method {
    #[serde(rename = "GET")]
    Get,
    #[serde(rename = "POST")]
    Post,
    #[serde(rename = "PATCH")]
    Patch,
}

impl Method {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Get => "GET",
            Self::Post => "POST",
            Self::Patch => "PATCH",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BodyKind {
    None,
    /// An order shaped like the seeded ones, without an id.
    NewOrder,
    /// `{"status": <one of the five>}`.
    Status,
}

/// An id drawn uniformly from one of the manifest's ranges: `{order_id}`, `{customer_id}`,
/// `{product_id}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdOf {
    Order,
    Customer,
    Product,
}

/// A piece of a path template: text as it is, or an id to draw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    Text(String),
    Id(IdOf),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Endpoint {
    pub method: Method,
    /// `/orders/{order_id}`; a query string is part of it.
    pub path: String,
    /// The status that counts as success.
    pub expect: u16,
    pub body: BodyKind,
}

impl Endpoint {
    /// The path template in pieces.
    pub fn segments(&self) -> Result<Vec<Segment>> {
        let mut segments = Vec::new();
        let mut rest = self.path.as_str();
        while let Some(open) = rest.find('{') {
            if open > 0 {
                segments.push(Segment::Text(rest[..open].to_owned()));
            }
            let close = rest[open..].find('}').with_context(|| format!("{}: unclosed {{", self.path))? + open;
            let param = match &rest[open + 1..close] {
                "order_id" => IdOf::Order,
                "customer_id" => IdOf::Customer,
                "product_id" => IdOf::Product,
                other => bail!("{}: unknown id {{{other}}} (order_id, customer_id, product_id)", self.path),
            };
            segments.push(Segment::Id(param));
            rest = &rest[close + 1..];
        }
        if !rest.is_empty() {
            segments.push(Segment::Text(rest.to_owned()));
        }
        Ok(segments)
    }
}

/// The whole file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Definitions {
    #[serde(default, skip_serializing)]
    pub about: String,
    pub endpoints: BTreeMap<String, Endpoint>,
    pub mixes: BTreeMap<String, BTreeMap<String, u32>>,
}

/// A resolved mix: its name (`custom` for weights given inline) and the weight of each endpoint,
/// zero weights left out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mix {
    pub name: String,
    pub weights: BTreeMap<String, u32>,
}

impl Definitions {
    /// The embedded `loadtest/mixes.json`, checked.
    pub fn embedded() -> Result<Self> {
        Self::parse(FILE)
    }

    pub fn parse(text: &str) -> Result<Self> {
        let definitions: Self = serde_json::from_str(text).context("loadtest/mixes.json")?;
        for (name, endpoint) in &definitions.endpoints {
            endpoint.segments().with_context(|| format!("endpoint {name}"))?;
        }
        for (name, weights) in &definitions.mixes {
            if let Some(unknown) = weights.keys().find(|e| !definitions.endpoints.contains_key(*e)) {
                bail!("mix {name}: unknown endpoint {unknown}");
            }
            if weights.values().all(|w| *w == 0) {
                bail!("mix {name}: the weights add up to 0");
            }
        }
        Ok(definitions)
    }

    /// A named mix, or weights such as `read:50,product:30,insert:20`.
    pub fn mix(&self, text: &str) -> Result<Mix> {
        if let Some(weights) = self.mixes.get(text) {
            let weights = weights.iter().filter(|(_, w)| **w > 0).map(|(e, w)| (e.clone(), *w)).collect();
            return Ok(Mix { name: text.to_owned(), weights });
        }
        let mut weights: BTreeMap<String, u32> = BTreeMap::new();
        for part in text.split(',') {
            let (endpoint, weight) = part.split_once(':').map_or((part.trim(), ""), |(e, w)| (e.trim(), w.trim()));
            let weight: Option<u32> =
                weight.parse().ok().filter(|_| !weight.is_empty() && weight.chars().all(|c| c.is_ascii_digit()));
            let (true, Some(weight)) = (self.endpoints.contains_key(endpoint), weight) else {
                bail!(
                    "mix: \"{part}\" is not endpoint:weight (endpoints {}; or a named mix: {})",
                    self.endpoints.keys().cloned().collect::<Vec<_>>().join(", "),
                    self.mixes.keys().cloned().collect::<Vec<_>>().join(", ")
                );
            };
            let sum = weights.entry(endpoint.to_owned()).or_default();
            *sum = sum
                .checked_add(weight)
                .with_context(|| format!("mix: the weights of {endpoint} add up to too much"))?;
        }
        weights.retain(|_, w| *w > 0);
        if weights.is_empty() {
            bail!("mix: the weights add up to 0");
        }
        Ok(Mix { name: "custom".into(), weights })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shared_file_defines_every_endpoint_and_the_shop_mix() {
        let definitions = Definitions::embedded().expect("loadtest/mixes.json");
        assert_eq!(
            definitions.endpoints.keys().collect::<Vec<_>>(),
            ["customer", "insert", "product", "read", "status"]
        );
        let shop = definitions.mix("shop").expect("shop");
        assert_eq!(shop.weights, BTreeMap::from([("read".into(), 60), ("product".into(), 30), ("insert".into(), 10)]));
        let insert = &definitions.endpoints["insert"];
        assert_eq!((insert.method, insert.expect, insert.body), (Method::Post, 201, BodyKind::NewOrder));
    }

    #[test]
    fn path_templates_split_into_text_and_ids() {
        let definitions = Definitions::embedded().expect("mixes");
        assert_eq!(
            definitions.endpoints["customer"].segments().expect("segments"),
            [
                Segment::Text("/customers/".into()),
                Segment::Id(IdOf::Customer),
                Segment::Text("/orders?limit=20".into())
            ]
        );
        let bad = Endpoint { method: Method::Get, path: "/x/{user_id}".into(), expect: 200, body: BodyKind::None };
        assert!(bad.segments().is_err());
    }

    #[test]
    fn inline_weights_read_like_the_k6_script_reads_them() {
        let definitions = Definitions::embedded().expect("mixes");
        let mix = definitions.mix("read:50, product:30,read:10,insert:0").expect("custom");
        assert_eq!(mix.name, "custom");
        assert_eq!(mix.weights, BTreeMap::from([("read".into(), 60), ("product".into(), 30)]));
        for bad in ["reads:10", "read:x", "reads", "read:-1", "read:0", "", "read:4294967295,read:1"] {
            assert!(definitions.mix(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_mix_naming_an_unknown_endpoint_is_refused() {
        let text = FILE.replace(r#""shop": { "read": 60"#, r#""shop": { "reed": 60"#);
        assert!(Definitions::parse(&text).is_err());
    }
}
