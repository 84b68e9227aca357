//! Seeding MongoDB: drop the `orders` collection (it is empty, or `--reset` was given), insert the
//! orders as the service stores them (`orders_mongo::document::to_raw_document`, BSON bytes written
//! on the generator thread) with unordered `insert_many` batches, a few in flight, then build the
//! indexes of `migrations/mongo` with `orders_mongo::indexes`. Writes use the service's default
//! durability (`w: majority, j: true`).

use crate::mongo::admin;
use crate::{Loaded, Seeder, feed, refusal_message};
use anyhow::{Context, Result, bail};
use async_trait::async_trait;
use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use indicatif::ProgressBar;
use mongodb::bson::{Bson, Document, RawDocumentBuf};
use mongodb::options::{Acknowledgment, ClientOptions, WriteConcern};
use mongodb::{Client, Collection, Database};
use orders_dataset::Profile;
use orders_mongo::document::to_raw_document;
use orders_mongo::indexes::{self, COLLECTION};
use std::time::{Duration, Instant};

/// Documents per `insert_many` (the driver splits them further into 48 MB messages).
const BATCH: u64 = 10_000;
/// `insert_many` calls in flight at once, so the server works while the next batch travels.
const IN_FLIGHT: usize = 3;
/// MongoDB's code for "namespace not found" (dropping a collection that does not exist).
const NAMESPACE_NOT_FOUND: i32 = 26;

pub struct MongoTarget {
    db: Database,
    orders: Collection<Document>,
    database: String,
}

impl MongoTarget {
    /// Connects and checks that the server answers.
    pub async fn connect(uri: &str, db: &str) -> Result<Self> {
        let mut options =
            ClientOptions::parse(uri).await.context("--mongodb-uri (MONGODB_URI) is not a MongoDB URI")?;
        options.app_name = Some("orders-bench".into());
        options.server_selection_timeout.get_or_insert(Duration::from_secs(10));
        options.write_concern = Some(WriteConcern::builder().w(Acknowledgment::Majority).journal(true).build());
        let hosts: Vec<String> = options.hosts.iter().map(ToString::to_string).collect();
        let database = format!("mongodb://{}/{db}", hosts.join(","));
        let client = Client::with_options(options).context("MongoDB client")?;
        let db = client.database(db);
        admin::ping(&db).await.with_context(|| format!("connecting to MongoDB at {database}"))?;
        let orders = db.collection::<Document>(COLLECTION);
        Ok(Self { db, orders, database })
    }
}

#[async_trait]
impl Seeder for MongoTarget {
    async fn refusal(&self) -> Result<Option<String>> {
        let holds = admin::holds_orders(&self.orders).await?;
        Ok(holds.then(|| refusal_message("MongoDB collection `orders`", &self.database)))
    }

    async fn load(self: Box<Self>, profile: Profile, reset: bool, bar: ProgressBar) -> Result<Loaded> {
        let started = Instant::now();
        let mut phases = Vec::new();
        if !reset && admin::holds_orders(&self.orders).await? {
            bail!(refusal_message("MongoDB collection `orders`", &self.database));
        }
        // Empty (or to be emptied): dropping it also drops its indexes, so they are built after.
        if let Err(error) = self.orders.drop().await {
            let missing =
                matches!(error.kind.as_ref(), mongodb::error::ErrorKind::Command(c) if c.code == NAMESPACE_NOT_FOUND);
            if !missing {
                return Err(error).context("dropping the orders collection");
            }
        }
        phases.push(("drop", started.elapsed()));

        bar.set_message("insert_many");
        let inserting = Instant::now();
        let inserted = self.insert_all(profile, &bar).await?;
        phases.push(("insert", inserting.elapsed()));

        bar.set_message("building indexes");
        let indexing = Instant::now();
        indexes::apply(&self.orders).await.context("building the indexes of migrations/mongo")?;
        phases.push(("indexes", indexing.elapsed()));
        let seconds = started.elapsed();

        bar.set_message("checkpoint for the size");
        let (bytes_on_disk, size_source) = self.size_on_disk().await?;
        bar.finish_with_message("done");
        Ok(Loaded { database: self.database, orders: inserted, seconds, phases, bytes_on_disk, size_source })
    }
}

impl MongoTarget {
    async fn insert_all(&self, profile: Profile, bar: &ProgressBar) -> Result<u64> {
        // Encoded bytes, not `Document`s: a tenth of the memory in flight, and the driver only
        // copies them into its message.
        let mut batches = feed::batches(profile, BATCH, |order| Ok(to_raw_document(&order)?));
        let raw_orders = self.db.collection::<RawDocumentBuf>(COLLECTION);
        let mut in_flight = FuturesUnordered::new();
        let mut inserted = 0;
        while let Some(batch) = batches.recv().await {
            if in_flight.len() >= IN_FLIGHT
                && let Some(done) = in_flight.next().await
            {
                inserted += count(done, bar)?;
            }
            let orders = raw_orders.clone();
            let batch = batch?;
            in_flight.push(async move {
                let wanted = batch.len();
                let result = orders.insert_many(batch).ordered(false).await;
                result.map(|r| (r.inserted_ids.len(), wanted))
            });
        }
        while let Some(done) = in_flight.next().await {
            inserted += count(done, bar)?;
        }
        if inserted != profile.orders {
            bail!("insert_many inserted {inserted} documents, expected {}", profile.orders);
        }
        Ok(inserted)
    }

    /// `storageSize + totalIndexSize` of `$collStats`, after an `fsync` that makes WiredTiger
    /// write a checkpoint (before one, the files do not yet hold the data just inserted).
    async fn size_on_disk(&self) -> Result<(u64, String)> {
        let checkpoint = admin::checkpoint(&self.db).await.is_ok();
        let Some(storage) = admin::coll_stats(&self.orders).await? else {
            bail!("$collStats returned nothing with storageStats")
        };
        let (data, index) = (number(storage.get("storageSize")), number(storage.get("totalIndexSize")));
        let source = format!(
            "$collStats storageSize {:.1} MiB + totalIndexSize {:.1} MiB{}",
            data as f64 / 1_048_576.0,
            index as f64 / 1_048_576.0,
            if checkpoint { "" } else { ", no fsync allowed: may lag" }
        );
        Ok((data + index, source))
    }
}

/// Counts a finished `insert_many` into the progress bar; a partial insert is an error.
fn count(done: mongodb::error::Result<(usize, usize)>, bar: &ProgressBar) -> Result<u64> {
    let (inserted, wanted) = done.context("insert_many")?;
    if inserted != wanted {
        bail!("insert_many inserted {inserted} of {wanted} documents");
    }
    bar.inc(inserted as u64);
    Ok(inserted as u64)
}

/// A size field, whichever numeric BSON type the server chose for it.
fn number(value: Option<&Bson>) -> u64 {
    match value {
        Some(Bson::Int32(n)) => u64::try_from(*n).unwrap_or(0),
        Some(Bson::Int64(n)) => u64::try_from(*n).unwrap_or(0),
        Some(Bson::Double(n)) if *n >= 0.0 => *n as u64,
        _ => 0,
    }
}
