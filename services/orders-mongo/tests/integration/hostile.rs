//! The hostile-client suite (issue 28, `orders_testkit::hostile`) on the real `orders-mongo`
//! binary, each test on a database of its own (dropped afterwards): bodies built to be expensive
//! to reject, slow, silent and idle connections, more connections and requests than the limits
//! allow, odd requests. Each test prints its figures. `ORDERS_HOSTILE_BINARY` runs them against
//! another build (to measure an older one).

use crate::common;

use common::{mongodb_uri, unique_db_name};
use orders_testkit::faults::ServiceProcess;
use orders_testkit::hostile::Target;

fn binary() -> String {
    std::env::var("ORDERS_HOSTILE_BINARY").unwrap_or_else(|_| env!("CARGO_BIN_EXE_orders-mongo").to_owned())
}

/// Drops the test's database, on a thread with a runtime of its own (called from `Drop`).
fn drop_database(name: String) {
    let dropped = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        runtime.block_on(async {
            let client = mongodb::Client::with_uri_str(mongodb_uri()).await?;
            client.database(&name).drop().await
        })
    });
    let _ = dropped.join();
}

fn start(env: &[(&str, String)]) -> Target {
    let name = unique_db_name("orders_hostile");
    let mut env = env.to_vec();
    env.extend([("MONGODB_URI", mongodb_uri()), ("MONGODB_DB", name.clone())]);
    Target::with_cleanup(ServiceProcess::start(&binary(), &env), move || drop_database(name))
}

orders_testkit::hostile_client_tests!(start);
