//! After the failover, what was written: every order the client saw acknowledged is read back by
//! id through the service (which writes to and reads from the new primary) — a 404 is an
//! acknowledged write lost; every order all of whose attempts were answered "nothing written" is
//! read back too — a 200 is a false "not written"; and the database itself counts the run's orders
//! per idempotency key and per id (more rows than keys or ids: a duplicate).

use super::client::Request;
use anyhow::{Context, Result};
use mongodb::bson::doc;
use serde::Serialize;
use std::time::Duration;

#[derive(Debug, Clone, Default, Serialize)]
pub struct Written {
    /// Acknowledged orders read back: found, and missing (lost).
    pub acknowledged_found: u64,
    pub acknowledged_lost: u64,
    pub lost_ids: Vec<u64>,
    /// Orders every attempt of which was answered "nothing written", found afterwards.
    pub not_written_found: u64,
    /// Given-up orders (outcome unknown to the client) that exist afterwards.
    pub given_up_found: u64,
    /// Reads that got no 200 or 404 after their retries (neither found nor missing).
    pub unreadable: u64,
    /// The database's own count of the run's orders: rows, distinct keys, distinct ids.
    pub rows: u64,
    pub distinct_keys: u64,
    pub distinct_ids: u64,
    pub duplicates: u64,
}

enum Found {
    Yes,
    No,
    Unreadable,
}

async fn exists(http: &reqwest::Client, url: &str, id: u64) -> Found {
    for attempt in 0..10 {
        if attempt > 0 {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        match http.get(format!("{url}/orders/{id}")).send().await.map(|r| r.status().as_u16()) {
            Ok(200) => return Found::Yes,
            Ok(404) => return Found::No,
            _ => continue,
        }
    }
    Found::Unreadable
}

/// Reads the run's orders back through the service at `url`.
pub async fn read_back(url: &str, records: &[Request]) -> Result<Written> {
    let http = reqwest::Client::builder().timeout(Duration::from_secs(5)).build()?;
    let mut w = Written::default();
    for r in records {
        if r.attempts.is_empty() {
            continue;
        }
        let (acked, never) = (r.acked_at().is_some(), r.never_written());
        match (exists(&http, url, r.id).await, acked, never) {
            (Found::Unreadable, ..) => w.unreadable += 1,
            (Found::Yes, true, _) => w.acknowledged_found += 1,
            (Found::No, true, _) => {
                w.acknowledged_lost += 1;
                w.lost_ids.push(r.id);
            }
            (Found::Yes, false, true) => w.not_written_found += 1,
            (Found::Yes, false, false) => w.given_up_found += 1,
            (Found::No, false, _) => {}
        }
    }
    Ok(w)
}

/// The run's orders (ids `first..=last`) in PostgreSQL, on the primary `url` leads to.
pub async fn pg_counts(url: &str, first: u64, last: u64, w: &mut Written) -> Result<()> {
    let (client, _) = orders_bench_engines::postgres::seed::connect(url).await?;
    let row = client
        .query_one(
            "SELECT count(*), count(DISTINCT idempotency_key), count(DISTINCT id) FROM orders \
             WHERE id BETWEEN $1 AND $2",
            &[&(first as i64), &(last as i64)],
        )
        .await
        .context("counting the run's orders")?;
    let n = |i: usize| row.get::<_, i64>(i).max(0) as u64;
    (w.rows, w.distinct_keys, w.distinct_ids) = (n(0), n(1), n(2));
    w.duplicates = w.rows - w.distinct_keys.min(w.distinct_ids).min(w.rows);
    Ok(())
}

/// The same in MongoDB (majority read concern: what the set will keep).
pub async fn mongo_counts(uri: &str, db: &str, first: u64, last: u64, w: &mut Written) -> Result<()> {
    let client = mongodb::Client::with_uri_str(uri).await.context("MongoDB client")?;
    let orders = client.database(db).collection::<mongodb::bson::Document>("orders");
    let range = doc! {"_id": {"$gte": first as i64, "$lte": last as i64}};
    let pipeline = vec![
        doc! {"$match": range},
        doc! {"$group": {"_id": null, "rows": {"$sum": 1}, "keys": {"$addToSet": "$idempotency_key"}, "ids": {"$addToSet": "$_id"}}},
        doc! {"$project": {"rows": 1, "keys": {"$size": "$keys"}, "ids": {"$size": "$ids"}}},
    ];
    let mut cursor = orders
        .aggregate(pipeline)
        .read_concern(mongodb::options::ReadConcern::majority())
        .await
        .context("counting the run's orders")?;
    if cursor.advance().await? {
        let d = cursor.deserialize_current()?;
        let n = |k: &str| d.get_i32(k).map(i64::from).or_else(|_| d.get_i64(k)).unwrap_or(0).max(0) as u64;
        (w.rows, w.distinct_keys, w.distinct_ids) = (n("rows"), n("keys"), n("ids"));
    }
    w.duplicates = w.rows - w.distinct_keys.min(w.distinct_ids).min(w.rows);
    Ok(())
}
