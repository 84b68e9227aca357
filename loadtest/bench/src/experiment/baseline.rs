//! The engines asked directly, without our services, for the budget experiment's table: pgbench
//! (PostgreSQL's own client, `-M prepared`) running orders-pg's statement for a find by id, and a
//! loop of the official MongoDB driver running orders-mongo's `find` by `_id`, each with the
//! services' pool of connections at the same offered rate, one engine at a time. Each database's
//! CPU per request is read as the rounds read it (its cgroup, or its process tree); beside the same
//! figure through the service it shows what the service's way of asking adds.

use crate::components::local_port;
use crate::procstat;
use anyhow::{Context, Result, bail};
use orders_bench_engines::databases::Databases;
use orders_dataset::manifest::Manifest;
use serde::Serialize;
use std::path::Path;
use std::time::{Duration, Instant};

/// orders-pg's find by id (`GET_ORDER` in services/orders-pg/src/sql.rs), as a pgbench script.
const PGBENCH_SCRIPT: &str = "\\set id random({min}, {max})\nSELECT doc FROM orders WHERE id = :id;\n";

/// One engine's reads without the service.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Direct {
    pub requests: u64,
    pub seconds: f64,
    pub cpu_us_per_request: Option<f64>,
}

/// CPU seconds of the server listening on `url`'s port so far, as the rounds read it: its cgroup's
/// usage when the cgroup holds the server alone, else its whole process tree's from `/proc`.
fn server_cpu(url: &str) -> Option<f64> {
    let pid = procstat::listening_pid(local_port(url)?)?;
    let own_cgroup = orders_budget::placement(pid).filter(|p| p.holds_only(&procstat::tree_pids(pid)));
    own_cgroup.and_then(|p| p.read().usage_seconds).or_else(|| procstat::tree_cpu_seconds(pid))
}

fn direct(requests: u64, seconds: f64, cpu: Option<f64>) -> Direct {
    let per = cpu.filter(|_| requests > 0).map(|c| c / requests as f64 * 1e6);
    Direct { requests, seconds, cpu_us_per_request: per }
}

/// "number of transactions actually processed: 2400" of pgbench's output.
pub fn pgbench_processed(output: &str) -> Option<u64> {
    output.lines().find_map(|l| {
        l.strip_prefix("number of transactions actually processed: ")?.split('/').next()?.trim().parse().ok()
    })
}

/// pgbench at `rate` for `length` with `clients` connections, prepared statements.
pub async fn postgres(
    pg_bin: &Path,
    url: &str,
    manifest: &Manifest,
    rate: u32,
    clients: u32,
    length: Duration,
) -> Result<Direct> {
    let script = std::env::temp_dir().join(format!("orders-bench-find-{}.sql", std::process::id()));
    let text = PGBENCH_SCRIPT
        .replace("{min}", &manifest.order_ids.min.to_string())
        .replace("{max}", &manifest.order_ids.max.to_string());
    std::fs::write(&script, text).with_context(|| format!("writing {}", script.display()))?;
    let before = (server_cpu(url), Instant::now());
    let output = tokio::process::Command::new(pg_bin.join("pgbench"))
        .args(["-n", "-M", "prepared", "-j", "1"])
        .args(["-c", &clients.to_string(), "-R", &rate.to_string(), "-T", &length.as_secs().max(1).to_string()])
        .arg("-f")
        .arg(&script)
        .arg(url)
        .output()
        .await
        .context("running pgbench")?;
    let (cpu_after, seconds) = (server_cpu(url), before.1.elapsed().as_secs_f64());
    let _ = std::fs::remove_file(&script);
    let said = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        bail!("pgbench failed: {}{}", said.trim(), String::from_utf8_lossy(&output.stderr).trim());
    }
    let requests = pgbench_processed(&said).context("pgbench printed no count of transactions")?;
    Ok(direct(requests, seconds, cpu_after.zip(before.0).map(|(a, b)| a - b)))
}

/// The driver's `find_one` by `_id` at `rate` for `length`, from `clients` tasks sharing one
/// client whose pool holds `clients` connections.
pub async fn mongo(
    databases: &Databases,
    manifest: &Manifest,
    rate: u32,
    clients: u32,
    length: Duration,
) -> Result<Direct> {
    let mut options = mongodb::options::ClientOptions::parse(&databases.mongodb_uri).await.context("MongoDB URI")?;
    options.max_pool_size = Some(clients);
    options.min_pool_size = Some(clients);
    let client = mongodb::Client::with_options(options).context("MongoDB client")?;
    let orders = client.database(&databases.mongodb_db).collection::<mongodb::bson::RawDocumentBuf>("orders");
    // Open the pool before the clock starts, as the services' warm-up does.
    orders.find_one(mongodb::bson::doc! {"_id": manifest.order_ids.min as i64}).await.context("a first find")?;
    let (min, span) = (manifest.order_ids.min, manifest.order_ids.max - manifest.order_ids.min + 1);
    let before = (server_cpu(&databases.mongodb_uri), Instant::now());
    let every = Duration::from_secs_f64(f64::from(clients) / f64::from(rate.max(1)));
    let tasks = (0..clients).map(|task| {
        let orders = orders.clone();
        async move {
            let mut tick = tokio::time::interval_at(
                tokio::time::Instant::now() + every.mul_f64(f64::from(task) / f64::from(clients)),
                every,
            );
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let (mut done, mut state) = (0u64, 0x9E37_79B9_7F4A_7C15u64 ^ u64::from(task));
            let end = Instant::now() + length;
            while Instant::now() < end {
                tick.tick().await;
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                let id = (min + state % span) as i64;
                if orders.find_one(mongodb::bson::doc! {"_id": id}).await.is_ok() {
                    done += 1;
                }
            }
            done
        }
    });
    let requests: u64 = futures_util::future::join_all(tasks).await.into_iter().sum();
    let (cpu_after, seconds) = (server_cpu(&databases.mongodb_uri), before.1.elapsed().as_secs_f64());
    Ok(direct(requests, seconds, cpu_after.zip(before.0).map(|(a, b)| a - b)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pgbench_says_how_many_transactions_ran() {
        let said = "pgbench (18.1)\nscaling factor: 1\nnumber of transactions actually processed: 2398\nlatency average = 0.4 ms\n";
        assert_eq!(pgbench_processed(said), Some(2398));
        assert_eq!(pgbench_processed("number of transactions actually processed: 10/10\n"), Some(10));
        assert_eq!(pgbench_processed("connection refused\n"), None);
    }

    #[test]
    fn no_requests_give_no_cost() {
        assert_eq!(direct(0, 8.0, Some(0.1)).cpu_us_per_request, None);
        assert_eq!(direct(2000, 8.0, Some(0.4)).cpu_us_per_request, Some(200.0));
    }
}
