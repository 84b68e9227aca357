//! Whether every service honours `Prefer: return=minimal` (RFC 7240; docs/api.md): a create
//! answered `201` with `Location`, no body and `Preference-Applied: return=minimal`, and a status
//! change of that order answered `204` likewise. Where an experiment measures the write alone it
//! sends the header only when all do (one side returning 100 KB documents and the other nothing
//! would not compare the writes); otherwise it says so. The probe writes one order into each
//! database, so it runs before a reload.

use super::services::Urls;
use crate::experiment::engine::Target;
use anyhow::{Context, Result};
use reqwest::header::{CONTENT_TYPE, LOCATION};
use std::time::Duration;

/// Per target, whether its service honours the header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Support(pub Vec<(Target, bool)>);

impl Support {
    pub fn all(&self) -> bool {
        self.0.iter().all(|(_, ok)| *ok)
    }

    /// Why the header is not sent, when it is not.
    pub fn note(&self) -> Option<String> {
        let missing: Vec<&str> = self.0.iter().filter(|(_, ok)| !ok).map(|(target, _)| target.service()).collect();
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

/// Probes every service with the create body `body`.
pub async fn probe(urls: &Urls, body: &str) -> Result<Support> {
    let http = reqwest::Client::builder().timeout(Duration::from_secs(10)).build().context("HTTP client")?;
    let answers = futures_util::future::join_all(urls.0.iter().map(|(_, url)| honours(&http, url, body))).await;
    let targets = urls.0.iter().map(|(target, _)| *target);
    Ok(Support(targets.zip(answers).map(|(target, ok)| Ok((target, ok?))).collect::<Result<_>>()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_note_names_the_service_that_ignores_the_header() {
        assert_eq!(Support(vec![(Target::Pg, true), (Target::Mongo, true)]).note(), None);
        let note =
            Support(vec![(Target::Pg, true), (Target::Mongo, false), (Target::Pgh, true)]).note().expect("a note");
        assert!(note.starts_with("orders-mongo do(es) not"), "{note}");
    }
}
