//! Reads spread over the members (issue 42): on the replicas, the `read` mix's maximum passing
//! rate with every read on the primary, then with the services reading from the other members
//! (orders-pg: `READ_DATABASE_URL`, the members with `target_session_attrs=read-only` and
//! `load_balance_hosts=random`; orders-mongo: `readPreference=secondaryPreferred`), and how long
//! after an acknowledged insert the same service's `GET` first finds the order: the replication
//! lag its readers see. Where the reads went is the servers' word (`/diagnostics`' `reads`).

use crate::experiment::Ctx;
use crate::experiment::closed_loop::{self, Work};
use crate::experiment::engine::Target;
use crate::experiment::figures::RoundFigures;
use crate::experiment::output::RoundRef;
use crate::experiment::rounds::{self, Data, RoundPlan};
use crate::experiment::services::{Local, Services, Urls};
use crate::experiment::variant::Variant;
use anyhow::{Context, Result, bail};
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// Inserts per service of the visibility probe, one after the other.
const PROBES: u32 = 50;
/// How long a probe's `GET`s try before the order counts as not seen.
const GIVE_UP: Duration = Duration::from_secs(2);

/// Where the reads went, and what they saw.
#[derive(Debug, Clone, Serialize)]
pub struct SpreadRow {
    /// `primary` or `spread`.
    pub reads: &'static str,
    /// Per target, the member that answered reads and its role, from `/diagnostics`.
    pub reads_from: BTreeMap<String, String>,
    pub visibility: BTreeMap<String, Visibility>,
    pub round: Option<RoundFigures>,
}

/// The visibility probe of one service: an insert, then `GET`s of it until one finds it.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Visibility {
    pub inserts: u32,
    /// Inserts whose first `GET` (sent right after the `201`) answered 404.
    pub first_read_missed: u32,
    /// Inserts no `GET` found within `GIVE_UP`.
    pub never_seen: u32,
    /// From the `201` to the first `GET` that found the order: median and largest, ms.
    pub p50_ms: f64,
    pub max_ms: f64,
}

/// The replicated deployment's services reading from the other members: orders-pg with
/// `READ_DATABASE_URL`, orders-mongo with `readPreference=secondaryPreferred`.
pub fn spread_services(replicated: &Services, logs: &std::path::Path) -> Result<Services> {
    let Services::Local(local) = replicated else { bail!("reads spread needs the local services") };
    std::fs::create_dir_all(logs).with_context(|| format!("creating {}", logs.display()))?;
    let envs = local
        .envs
        .iter()
        .map(|(target, env)| {
            let mut env = env.clone();
            if let Some(url) = value(&env, "DATABASE_URL") {
                env.push(("READ_DATABASE_URL".into(), read_only(&url)));
            }
            if let Some(uri) = value(&env, "MONGODB_URI") {
                env.retain(|(k, _)| k != "MONGODB_URI");
                env.push(("MONGODB_URI".into(), with_option(&uri, "readPreference=secondaryPreferred")));
            }
            (*target, env)
        })
        .collect();
    Ok(Services::Local(Local::new(local.bin_dir.clone(), logs.to_path_buf(), envs)))
}

fn value(env: &[(String, String)], key: &str) -> Option<String> {
    env.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone())
}

/// The multi-host URL with `target_session_attrs=read-only` (a standby; the writes' URL says
/// `read-write`) and the hosts tried in a random order, so connections spread over the standbys.
fn read_only(url: &str) -> String {
    let kept: Vec<&str> = url
        .split_once('?')
        .map(|(_, query)| query.split('&').filter(|p| !p.starts_with("target_session_attrs=")).collect())
        .unwrap_or_default();
    let base = url.split_once('?').map_or(url, |(base, _)| base);
    let mut params = kept;
    params.extend(["target_session_attrs=read-only", "load_balance_hosts=random"]);
    format!("{base}?{}", params.join("&"))
}

/// `uri` with one more query option.
fn with_option(uri: &str, option: &str) -> String {
    if uri.contains('?') { format!("{uri}&{option}") } else { format!("{}/?{option}", uri.trim_end_matches('/')) }
}

/// The two rows, measured in the replicated deployment (swapped into `ctx`): reads on the primary,
/// then spread with `spread` (from `spread_services`) swapped in for the second.
pub async fn measure(
    ctx: &mut Ctx,
    variant: &Variant,
    spread: &mut Services,
    data: Data,
    refs: &mut Vec<RoundRef>,
) -> Result<Vec<SpreadRow>> {
    let mut rows = Vec::new();
    for reads in ["primary", "spread"] {
        if reads == "spread" {
            ctx.services.stop().await;
            std::mem::swap(spread, &mut ctx.services);
        }
        let row = one(ctx, variant, reads, data, refs).await;
        if reads == "spread" {
            ctx.services.stop().await;
            std::mem::swap(spread, &mut ctx.services);
        }
        rows.push(row?);
    }
    Ok(rows)
}

async fn one(
    ctx: &mut Ctx,
    variant: &Variant,
    reads: &'static str,
    data: Data,
    refs: &mut Vec<RoundRef>,
) -> Result<SpreadRow> {
    let Some(urls) = ctx.use_variant(variant).await? else { bail!("the services cannot run {}", variant.name) };
    rounds::reload(ctx, data).await?;
    let diagnostics = crate::diagnostics::Client::for_services(urls.services())?.snapshot(0.0).await?;
    let reads_from = [Target::Pg, Target::Mongo]
        .into_iter()
        .map(|t| (t.name().to_owned(), answered_by(t, diagnostics.get(t.name()))))
        .collect();
    eprintln!("experiment: reads on {reads}: {reads_from:?}");
    let visibility = visibility(&urls).await?;
    let minimal = ctx.minimal();
    let runs = rounds::closed_loop(ctx, &urls, Work::Read, 1, ctx.scale.closed_seconds, minimal).await?;
    let run = runs.first().context("the read window ran no closed loop")?;
    let plan = RoundPlan {
        variant,
        name: format!(
            "read (replicated, reads on the {})",
            if reads == "primary" { "primary" } else { "other members" }
        ),
        dir: rounds::folder(&["replicated", "reads", reads]),
        mix: "read",
        data,
        staircase: ctx.scale.staircase(run.slower()),
        minimal,
        prefill: 0,
    };
    let measured = rounds::measure(ctx, &plan).await?;
    refs.push(RoundRef { name: plan.name.clone(), variant: variant.label.into(), dir: plan.dir.clone() });
    Ok(SpreadRow { reads, reads_from, visibility, round: measured.map(|m| m.figures) })
}

/// The member a service's reads reach and its role, as its `/diagnostics` says.
fn answered_by(target: Target, diagnostics: &Value) -> String {
    let reads = &diagnostics["reads"];
    let (member, role) = if target.is_postgres() {
        let server = if reads["pool"] == "READ_DATABASE_URL" { &reads["server"] } else { &diagnostics["replication"] };
        let standby = server["in_recovery"].as_bool().map(|r| if r { "standby" } else { "primary" });
        (server["server_addr"].as_str(), standby)
    } else {
        (reads["answered_by"].as_str(), reads["role"].as_str())
    };
    format!("{} ({})", member.unwrap_or("?"), role.unwrap_or("?"))
}

/// Both services at once: `PROBES` inserts each, each followed by `GET`s until one finds it.
async fn visibility(urls: &Urls) -> Result<BTreeMap<String, Visibility>> {
    let http = reqwest::Client::builder().timeout(Duration::from_secs(5)).build()?;
    let profile = orders_dataset::Profile { seed: 1, orders: 1, customers: 1, products: 3, items: 3, note_bytes: 0 };
    let body = closed_loop::new_order_body(&profile, 2)?;
    let probes = urls.0.iter().map(|(target, url)| {
        let (http, body) = (http.clone(), body.clone());
        async move { probe(&http, url, &body).await.map(|v| (target.name().to_owned(), v)) }
    });
    futures_util::future::try_join_all(probes).await.map(|all| all.into_iter().collect())
}

async fn probe(http: &reqwest::Client, url: &str, body: &str) -> Result<Visibility> {
    let mut seen = Visibility { inserts: PROBES, ..Visibility::default() };
    let mut delays = Vec::new();
    for _ in 0..PROBES {
        let created = http
            .post(format!("{url}/orders"))
            .header("content-type", "application/json")
            .body(body.to_owned())
            .send()
            .await?;
        if created.status() != reqwest::StatusCode::CREATED {
            bail!("{url}: POST /orders answered {}", created.status());
        }
        let id = created.json::<Value>().await?["id"].as_u64().context("the new order's id")?;
        let acknowledged = Instant::now();
        let mut first = true;
        loop {
            let found = http.get(format!("{url}/orders/{id}")).send().await?.status() == reqwest::StatusCode::OK;
            if found {
                delays.push(acknowledged.elapsed().as_secs_f64() * 1e3);
                break;
            }
            if first {
                seen.first_read_missed += 1;
                first = false;
            }
            if acknowledged.elapsed() > GIVE_UP {
                seen.never_seen += 1;
                break;
            }
        }
    }
    delays.sort_by(f64::total_cmp);
    seen.p50_ms = delays.get(delays.len() / 2).copied().unwrap_or(f64::NAN);
    seen.max_ms = delays.last().copied().unwrap_or(f64::NAN);
    Ok(seen)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reads_url_asks_for_a_standby_in_a_random_order_and_keeps_the_rest() {
        let url = "postgres://postgres@198.18.42.21:5432,198.18.42.22:5432/orders?target_session_attrs=read-write&sslmode=disable";
        assert_eq!(
            read_only(url),
            "postgres://postgres@198.18.42.21:5432,198.18.42.22:5432/orders?sslmode=disable&target_session_attrs=read-only&load_balance_hosts=random"
        );
        assert_eq!(
            read_only("postgres://h1,h2/db"),
            "postgres://h1,h2/db?target_session_attrs=read-only&load_balance_hosts=random"
        );
    }

    #[test]
    fn the_read_preference_is_one_more_option_of_the_uri() {
        let set = "mongodb://198.18.42.11:27017,198.18.42.12:27017/?replicaSet=rs0";
        assert_eq!(
            with_option(set, "readPreference=secondaryPreferred"),
            format!("{set}&readPreference=secondaryPreferred")
        );
        assert_eq!(with_option("mongodb://h:1", "a=b"), "mongodb://h:1/?a=b");
    }

    #[test]
    fn where_reads_went_is_each_services_own_word() {
        let pg = serde_json::json!({"reads": {"pool": "READ_DATABASE_URL", "server": {"server_addr": "198.18.42.22", "in_recovery": true}}});
        assert_eq!(answered_by(Target::Pg, &pg), "198.18.42.22 (standby)");
        let pg_one_pool = serde_json::json!({"reads": {"pool": "DATABASE_URL"}, "replication": {"server_addr": "198.18.42.21", "in_recovery": false}});
        assert_eq!(answered_by(Target::Pg, &pg_one_pool), "198.18.42.21 (primary)");
        let mongo = serde_json::json!({"reads": {"answered_by": "198.18.42.12:27017", "role": "secondary"}});
        assert_eq!(answered_by(Target::Mongo, &mongo), "198.18.42.12:27017 (secondary)");
    }
}
