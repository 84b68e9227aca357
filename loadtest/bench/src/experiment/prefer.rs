//! Whether both services honour `Prefer: return=minimal` (RFC 7240; docs/api.md): a create
//! answered `201` with `Location`, no body and `Preference-Applied: return=minimal`, and a status
//! change of that order answered `204` likewise. Where an experiment measures the write alone it
//! sends the header only when both do (one side returning 100 KB documents and the other nothing
//! would not compare the writes); otherwise it says so. The probe writes one order into each
//! database, so it runs before a reload.

use super::services::Urls;
use crate::experiment::engine::Target;
use anyhow::{Context, Result};
use reqwest::header::{CONTENT_TYPE, LOCATION};
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Support {
    pub pg: bool,
    pub mongo: bool,
}

impl Support {
    pub fn both(&self) -> bool {
        self.pg && self.mongo
    }

    /// Why the header is not sent, when it is not.
    pub fn note(&self) -> Option<String> {
        let missing: Vec<&str> = [(Target::Pg.service(), self.pg), (Target::Mongo.service(), self.mongo)]
            .iter()
            .filter(|(_, ok)| !ok)
            .map(|(name, _)| *name)
            .collect();
        (!missing.is_empty()).then(|| {
            format!(
                "{} do(es) not honour `Prefer: return=minimal` yet, so the writes were sent without it: every insert and \
                 status update also returned the whole order, and at large sizes the rounds measure that transfer as \
                 much as the write",
                missing.join(" and ")
            )
        })
    }
}

fn applied(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get_all("preference-applied")
        .iter()
        .any(|v| v.to_str().is_ok_and(|v| v.split(',').any(|p| p.trim() == "return=minimal")))
}

async fn honours(http: &reqwest::Client, base: &str, body: &str) -> Result<bool> {
    let created = http
        .post(format!("{base}/orders"))
        .header(CONTENT_TYPE, "application/json")
        .header("Prefer", "return=minimal")
        .body(body.to_owned())
        .send()
        .await
        .with_context(|| format!("POST {base}/orders"))?;
    let location = created.headers().get(LOCATION).and_then(|l| l.to_str().ok()).map(str::to_owned);
    let create_ok = created.status().as_u16() == 201 && applied(&created);
    let create_empty = created.bytes().await.is_ok_and(|b| b.is_empty());
    let Some(location) = location.filter(|_| create_ok && create_empty) else { return Ok(false) };
    let updated = http
        .patch(format!("{base}{location}/status"))
        .header(CONTENT_TYPE, "application/json")
        .header("Prefer", "return=minimal")
        .body(r#"{"status":"paid"}"#)
        .send()
        .await
        .with_context(|| format!("PATCH {base}{location}/status"))?;
    let update_ok = updated.status().as_u16() == 204 && applied(&updated);
    Ok(update_ok && updated.bytes().await.is_ok_and(|b| b.is_empty()))
}

/// Probes both services with the create body `body`.
pub async fn probe(urls: &Urls, body: &str) -> Result<Support> {
    let http = reqwest::Client::builder().timeout(Duration::from_secs(10)).build().context("HTTP client")?;
    let (pg, mongo) = tokio::join!(honours(&http, &urls.pg, body), honours(&http, &urls.mongo, body));
    Ok(Support { pg: pg?, mongo: mongo? })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_note_names_the_service_that_ignores_the_header() {
        assert_eq!(Support { pg: true, mongo: true }.note(), None);
        let note = Support { pg: true, mongo: false }.note().expect("a note");
        assert!(note.starts_with("orders-mongo do(es) not"), "{note}");
    }
}
