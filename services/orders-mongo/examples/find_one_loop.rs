//! The baseline for `orders-mongo`'s GET by id: the same `find_one({_id})` the service runs, read
//! as raw BSON as the service reads it (decoding a `Document` would give the loop work the service
//! does not do, and flatter the service's ratio: 19 against 15 µs of CPU per find, measured),
//! straight from the driver with no HTTP in between, from `CONCURRENCY` tasks sharing one client
//! whose pool has `POOL` connections, for `SECONDS`, on the runtime `WORKER_THREADS` chooses
//! (`auto` or 1..1024, built by the service's own `orders_http::runtime::build`; default `auto`,
//! the service's default), so that the loop and the service it is compared with run on the same
//! kind of runtime. Prints finds per second. With `--drop` it drops database `DB` instead, and with
//! `--trim MAX_ID` it deletes the orders whose id is above `MAX_ID` (the ones a benchmark inserted
//! into seeded ids 1..=MAX_ID); `scripts/service-bench.sh` cleans up and puts the data back with
//! them (the local stack has no mongo shell).
//!
//! `cargo run --release -p orders-mongo --example find_one_loop -- URI DB POOL CONCURRENCY SECONDS MAX_ID [WORKER_THREADS]`
//! `cargo run --release -p orders-mongo --example find_one_loop -- URI DB --drop`
//! `cargo run --release -p orders-mongo --example find_one_loop -- URI DB --trim MAX_ID`

#![forbid(unsafe_code)]

use mongodb::Client;
use mongodb::bson::{Document, RawDocumentBuf, doc};
use mongodb::options::ClientOptions;
use orders_http::WorkerThreads;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The service's allocator: with glibc's, malloc was about 9% of the loop's CPU (perf), work the
/// service does not do, which would flatter the service's ratio.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const USAGE: &str = "usage: find_one_loop URI DB POOL CONCURRENCY SECONDS MAX_ID [WORKER_THREADS] \
                     | find_one_loop URI DB --drop | find_one_loop URI DB --trim MAX_ID";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [uri, db, drop] = args.as_slice()
        && drop == "--drop"
    {
        let runtime = orders_http::runtime::build(WorkerThreads::Exactly(1))?;
        return runtime.block_on(async { Ok(Client::with_uri_str(uri).await?.database(db).drop().await?) });
    }
    if let [uri, db, trim, max_id] = args.as_slice()
        && trim == "--trim"
    {
        let max_id: i64 = max_id.parse()?;
        let runtime = orders_http::runtime::build(WorkerThreads::Exactly(1))?;
        return runtime.block_on(async {
            let orders = Client::with_uri_str(uri).await?.database(db).collection::<Document>("orders");
            orders.delete_many(doc! {"_id": {"$gt": max_id}}).await?;
            Ok(())
        });
    }
    let (uri, db, pool, concurrency, seconds, max_id, threads) = match args.as_slice() {
        [uri, db, pool, concurrency, seconds, max_id] => (uri, db, pool, concurrency, seconds, max_id, "auto"),
        [uri, db, pool, concurrency, seconds, max_id, threads] => {
            (uri, db, pool, concurrency, seconds, max_id, threads.as_str())
        }
        _ => return Err(USAGE.into()),
    };
    let threads: WorkerThreads = threads.parse().map_err(|error| format!("WORKER_THREADS {error}"))?;
    let (pool, concurrency, seconds, max_id): (u32, u64, u64, u64) =
        (pool.parse()?, concurrency.parse()?, seconds.parse()?, max_id.parse()?);
    orders_http::runtime::build(threads)?.block_on(find_loop(uri, db, pool, concurrency, seconds, max_id))
}

/// `concurrency` tasks finding random ids for `seconds`; prints finds per second.
async fn find_loop(
    uri: &str,
    db: &str,
    pool: u32,
    concurrency: u64,
    seconds: u64,
    max_id: u64,
) -> Result<(), Box<dyn std::error::Error>> {
    let mut options = ClientOptions::parse(uri).await?;
    options.max_pool_size = Some(pool);
    let orders = Client::with_options(options)?.database(db).collection::<RawDocumentBuf>("orders");

    let done = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let tasks: Vec<_> = (0..concurrency)
        .map(|task| {
            let (orders, done) = (orders.clone(), done.clone());
            tokio::spawn(async move {
                // A per-task xorshift: random ids without a shared lock or a rand crate.
                let mut state = 0x9E37_79B9_7F4A_7C15_u64 ^ (task + 1);
                while Instant::now() < deadline {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    let id = (state % max_id + 1) as i64;
                    if orders.find_one(doc! {"_id": id}).await.is_ok_and(|found| found.is_some()) {
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    for task in tasks {
        task.await?;
    }
    println!("{:.0}", done.load(Ordering::Relaxed) as f64 / seconds as f64);
    Ok(())
}
