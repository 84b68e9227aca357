//! The hostile-client suite (issue 28, `orders_testkit::hostile`) on the real `orders-pg` binary
//! (and `orders-pg-hybrid`'s, whose tests include this file: `crate::SERVICE_BINARY`), each test on
//! a database of its own: bodies built to be expensive to reject, slow, silent and
//! idle connections, more connections and requests than the limits allow, odd requests. Each
//! test prints its figures. `ORDERS_HOSTILE_BINARY` runs them against another build (to measure
//! an older one).

use orders_testkit::faults::ServiceProcess;
use orders_testkit::hostile::Target;

fn binary() -> String {
    std::env::var("ORDERS_HOSTILE_BINARY").unwrap_or_else(|_| crate::SERVICE_BINARY.to_owned())
}

fn start(env: &[(&str, String)]) -> Target {
    let url = tokio::runtime::Handle::current().block_on(orders_pg::testing::fresh_database());
    let mut env = env.to_vec();
    env.push(("DATABASE_URL", url));
    Target::new(ServiceProcess::start(&binary(), &env))
}

orders_testkit::hostile_client_tests!(start);
