//! `experiment failover` (issue 43): the minute a primary dies, measured. On the stack's replicas
//! (a MongoDB set of three; a PostgreSQL primary and two standbys under Patroni), orders-pg over
//! the multi-host URL (`target_session_attrs=read-write`) and orders-mongo over the replica-set
//! URI take constant-rate open-loop inserts at the same moment (`client`); at a set offset each
//! engine's primary is killed with SIGKILL at the same moment (`members`: the Patroni-managed
//! postmaster, Patroni itself staying up; the primary `mongod`). The client's own records give
//! the gap and the retries (`figures`); the orders read back afterwards give the acknowledged
//! writes lost, the false "not written" answers and the duplicates (`check`); the servers say who
//! became primary, whether the old one rejoined, and the settings that decide the gap
//! (`servers`); every member is read once caught up (`every`); the old primaries' files say how
//! they rejoined (`rejoin`); `chart` draws the buckets; `restore` puts back what the run changed,
//! interrupted or not. The services are the same processes throughout: their PIDs are compared.

mod chart;
mod check;
mod client;
mod every;
mod figures;
mod members;
mod reads;
mod rejoin;
mod report;
pub mod restore;
mod servers;

use super::Ctx;
use super::engine::Target;
use super::output::Outcome;
use super::replication::cluster::{self, Replicas};
use anyhow::{Context, Result, bail};
use client::{Load, Orders, Request};
use members::{Members, Victim};
use serde::Serialize;
use serde_json::Value;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What the run is asked to do (flags; `--quick` shortens it).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Plan {
    pub rate: u32,
    #[serde(with = "orders_bench_model::seconds")]
    pub run: Duration,
    #[serde(with = "orders_bench_model::seconds")]
    pub kill_after: Duration,
    pub retries: u32,
    /// Patroni's `primary_start_timeout` for the run: 0 makes Patroni fail over at once when the
    /// primary's postgres dies (its default, 300 s, restarts it in place first).
    pub primary_start_timeout: u32,
    /// Patroni's keys set for the run (`ttl`, `loop_wait`, `retry_timeout`), when asked.
    pub patroni: [(&'static str, Option<u32>); 3],
    /// MongoDB's `electionTimeoutMillis` for the run, when asked.
    pub election_timeout_ms: Option<u32>,
    /// Both engines acknowledge before the write reaches a second member (`--weak-durability`).
    pub weak_durability: bool,
    /// `rate` split by the shop mix's weights: inserts, orders by id and product searches
    /// (`--failover-mix shop`); otherwise every request an insert.
    pub shop: bool,
}

/// The shop mix's weights of inserts, orders by id and product searches (loadtest/mixes.json).
fn shop_weights() -> Result<[u32; 3]> {
    let definitions = orders_loadgen::mixes::Definitions::embedded().map_err(|e| anyhow::anyhow!("{e}"))?;
    let mix = definitions.mix("shop").map_err(|e| anyhow::anyhow!("{e}"))?;
    let weight = |name: &str| mix.weights.get(name).copied().unwrap_or(0);
    Ok([weight("insert"), weight("read"), weight("product")])
}

impl Plan {
    /// Requests a second of inserts, orders by id and product searches.
    pub fn rates(&self) -> Result<[u32; 3]> {
        if !self.shop {
            return Ok([self.rate, 0, 0]);
        }
        let weights = shop_weights()?;
        let total: u32 = weights.iter().sum::<u32>().max(1);
        Ok(weights.map(|w| ((f64::from(self.rate) * f64::from(w) / f64::from(total)).round() as u32).max(1)))
    }

    /// The readers of one kind at `rate` a second for the run.
    pub fn readers(&self, rate: u32) -> reads::Readers {
        reads::Readers {
            rate,
            requests: (self.run.as_secs_f64() * f64::from(rate)).round() as u64,
            timeout: Duration::from_secs(5),
            in_flight: 256,
        }
    }

    pub fn load(&self) -> Load {
        let rate = self.rates().map_or(self.rate, |r| r[0]);
        Load {
            rate,
            requests: (self.run.as_secs_f64() * f64::from(rate)).round() as u64,
            retries: self.retries,
            first_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(1),
            timeout: Duration::from_secs(5),
            in_flight: 256,
        }
    }
}

/// One engine's failover, as measured.
#[derive(Debug, Clone, Serialize)]
pub struct Engine {
    pub engine: &'static str,
    pub service_pid_before: Option<u32>,
    pub service_pid_after: Option<u32>,
    /// The same service process answered before the kill and read every order back after it.
    pub same_service_process: bool,
    pub killed: Option<Victim>,
    /// Milliseconds from the run's start to the kill.
    pub kill_ms: Option<f64>,
    pub old_primary: String,
    pub new_primary: Option<String>,
    /// From the kill until the client saw the servers name a new primary (polled every 200 ms).
    pub new_primary_after_ms: Option<f64>,
    /// From the kill until the promotion by the servers' own clock: Patroni's `/history` (the
    /// newest timeline's timestamp), MongoDB's `electionCandidateMetrics.lastElectionDate`.
    pub promoted_after_ms: Option<f64>,
    /// The old primary's state at the end, as the servers say (`replica`/`streaming`, `SECONDARY`).
    pub old_primary_rejoined: Option<String>,
    pub old_primary_rejoined_after_ms: Option<f64>,
    pub figures: figures::Figures,
    pub written: check::Written,
    /// The acknowledged orders read back from every member once they caught up.
    pub members: Vec<every::Member>,
    /// How the old primary came back: `pg_rewind` in Patroni's log; MongoDB's rollback files.
    pub rejoin: rejoin::Rejoin,
    /// The settings that decide the gap, read back from the servers and the service.
    pub settings: Value,
    /// The servers' own account: Patroni's `/history`; MongoDB's `replSetGetStatus`.
    pub servers_say: Value,
    /// With the shop mix: what the readers saw.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reads: Option<reads::Figures>,
}

pub async fn run(ctx: &mut Ctx, plan: Plan, budget: &[String]) -> Result<Outcome> {
    if ctx.measures(Target::Pgh) {
        bail!("experiment failover measures pg and mongo only (the hybrid layout has no replicated stack)");
    }
    let Some(stack) = ctx.local.clone() else {
        bail!("experiment failover runs on the local stack only (its replicas: root, network namespaces)")
    };
    let replicas = Replicas::ensure(&stack, budget).await?;
    let outcome = measure(ctx, &replicas, plan).await;
    ctx.services.stop().await;
    replicas.stop().await;
    outcome
}

async fn measure(ctx: &mut Ctx, replicas: &Replicas, plan: Plan) -> Result<Outcome> {
    let db = ctx.databases.mongodb_db.clone();
    let databases = replicas.databases(&db)?;
    for backend in orders_bench_engines::all(&databases) {
        backend.create_database().await.context("creating the database on the replicas")?;
    }
    let services = cluster::services_over(&ctx.services, &databases, &ctx.out.join("logs").join("replicated"))?;
    ctx.services.stop().await;
    ctx.services = services;
    ctx.databases = databases;
    let mut variant = if plan.weak_durability {
        weak()
    } else {
        super::replication::durable("replicated", "replicated: 3 members per engine")
    };
    // Every 503's cause in the services' logs (`logs/replicated/`): what the client's records
    // cannot say (which host refused, which error the driver saw).
    let causes = ("RUST_LOG", "warn,orders_http::error=debug");
    variant.pg_env.push(causes);
    variant.mongo_env.push(causes);
    let Some(urls) = ctx.use_variant(&variant).await? else { bail!("the services cannot run the replicated variant") };
    let patroni = servers::Patroni::new(replicas.get("REPLICA_PATRONI_URLS")?)?;
    let mongo = mongodb::Client::with_uri_str(&ctx.databases.mongodb_uri).await.context("MongoDB client")?;
    let patroni_config = std::path::Path::new(replicas.get("REPLICA_PATRONI_CONFIG")?);
    let members = Members {
        prefix: replicas.get("REPLICA_NS_PREFIX")?.to_owned(),
        count: replicas.get("REPLICA_COUNT")?.parse().context("REPLICA_COUNT")?,
        dir: patroni_config.parent().and_then(std::path::Path::parent).map(std::path::Path::to_path_buf),
    };
    // Kept in the context from before the first change: an interrupted run puts it back too.
    let undo = ctx.undo.insert(restore::Undo::new(replicas.get("REPLICA_PATRONI_URLS")?));
    undo.set(&patroni, "primary_start_timeout", plan.primary_start_timeout.into()).await?;
    for (key, value) in plan.patroni.iter().filter_map(|(k, v)| Some((*k, (*v)?))) {
        undo.set(&patroni, key, value.into()).await?;
    }
    if let Some(ms) = plan.election_timeout_ms {
        undo.set_election_timeout(&ctx.databases.mongodb_uri, ms).await?;
    }
    let measured = failover(ctx, &urls, &patroni, &mongo, &members, plan).await;
    if let Some(mut undo) = ctx.undo.take()
        && let Err(error) = undo.restore().await
    {
        eprintln!("experiment: {error:#}");
        ctx.undo = Some(undo);
    }
    let (pg, mongo) = measured?;
    Ok(report::outcome(plan, &pg, &mongo))
}

/// Durability weakened on purpose on both engines, read back like the durable one: a commit that
/// does not wait for the synchronous standby, a write acknowledged by the primary alone.
fn weak() -> super::variant::Variant {
    use super::variant::{mongo, pg};
    super::variant::Variant {
        name: "weak",
        label: "WEAKENED on purpose: synchronous_commit=local, w:1",
        pg_env: vec![("PG_SYNCHRONOUS_COMMIT", "local")],
        mongo_env: vec![("MONGO_WRITE_CONCERN", "1"), ("MONGO_JOURNAL", "true")],
        expect: vec![pg("synchronous_commit", "local"), mongo("w", "1"), mongo("j", "true")],
        fair: true,
    }
}

/// Where each service's settings and the service process stand before the kill.
async fn before(urls: &super::services::Urls) -> Result<(Value, Value)> {
    let snapshot = crate::diagnostics::Client::for_services(urls.services())?.snapshot(0.0).await?;
    Ok((snapshot.get("pg").clone(), snapshot.get("mongo").clone()))
}

async fn failover(
    ctx: &mut Ctx,
    urls: &super::services::Urls,
    patroni: &servers::Patroni,
    mongo: &mongodb::Client,
    members: &Members,
    plan: Plan,
) -> Result<(Engine, Engine)> {
    let pids_before = ctx.services.pids();
    let (pg_diag, mongo_diag) = before(urls).await?;
    let patroni_config = patroni.get("/config").await?;
    let mut pg_settings = servers::patroni_settings(&patroni_config);
    pg_settings["service"] = report::service_settings(&pg_diag);
    let mut mongo_settings = servers::mongo_settings(mongo).await?;
    mongo_settings["service"] = report::service_settings(&mongo_diag);
    let (pg_leader, pg_host) = patroni.leader().await?.context("Patroni names no leader")?;
    let mongo_host = servers::mongo_primary(mongo).await?.context("the replica set has no primary")?;
    let mongo_member = members.by_address("mongo", mongo_host.split(':').next().unwrap_or_default()).await?;
    let pg_victim = members.victim(&pg_leader, "postgres").await?;
    let mongo_victim = members.victim(&mongo_member, "mongod").await?;
    let [inserts, by_id, searches] = plan.rates()?;
    eprintln!(
        "experiment: primaries {pg_leader} ({pg_host}, postmaster pid {}) and {mongo_member} ({mongo_host}, mongod pid \
         {}); per service {inserts} inserts/s{} for {} s, both killed at {} s",
        pg_victim.pid,
        mongo_victim.pid,
        if plan.shop { format!(", {by_id} orders by id/s and {searches} product searches/s") } else { String::new() },
        plan.run.as_secs_f64(),
        plan.kill_after.as_secs_f64()
    );
    let stamp = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let first_id = 1_000_000_000_000_000 + (stamp % 10_000_000) * 100_000;
    let load = plan.load();
    let orders =
        |engine: &str| Orders { first_id, key_prefix: format!("failover-{stamp}-{engine}"), bodies: Arc::new(body) };
    let (pg_orders, mongo_orders) = (orders("pg"), orders("mongo"));
    let url = |t: Target| urls.get(t).map(str::to_owned).context("no service URL");
    let (pg_url, mongo_url) = (url(Target::Pg)?, url(Target::Mongo)?);
    let start = Instant::now() + Duration::from_millis(200);
    let undo = ctx.undo.get_or_insert_default();
    let killer = kill_and_follow(start, plan, (patroni, mongo), members, (&pg_victim, &mongo_victim), undo);
    let readers = |url: &str| {
        // Orders by id among those inserted about two seconds before (a 404 before they exist),
        // product searches over the products the inserts draw from.
        let by_id_path = move |i: u64| {
            let behind = (i * u64::from(inserts) / u64::from(by_id.max(1))).saturating_sub(2 * u64::from(inserts));
            format!("/orders/{}", first_id + behind)
        };
        let search_path = |i: u64| format!("/products/{}/orders?limit=10", i % 1_000 + 1);
        let url = url.to_owned();
        async move {
            if !plan.shop {
                return Ok(Vec::new());
            }
            let (id_readers, search_readers) = (plan.readers(by_id), plan.readers(searches));
            let (a, b) = tokio::join!(
                reads::run(&url, &id_readers, by_id_path, start),
                reads::run(&url, &search_readers, search_path, start)
            );
            Ok::<_, anyhow::Error>([a?, b?].concat())
        }
    };
    let (pg_records, mongo_records, pg_reads, mongo_reads, followed) = tokio::join!(
        client::run(&pg_url, load, &pg_orders, start),
        client::run(&mongo_url, load, &mongo_orders, start),
        readers(&pg_url),
        readers(&mongo_url),
        killer
    );
    let followed = followed?;
    let (pg_records, mongo_records) = (pg_records?, mongo_records?);
    let (pg_reads, mongo_reads) = (pg_reads?, mongo_reads?);
    let last_id = first_id + load.requests.saturating_sub(1);
    eprintln!("experiment: reading every order back through the services");
    let mut pg_written = check::read_back(&pg_url, &pg_records).await?;
    check::pg_counts(&ctx.databases.database_url, first_id, last_id, &mut pg_written).await?;
    let mut mongo_written = check::read_back(&mongo_url, &mongo_records).await?;
    check::mongo_counts(&ctx.databases.mongodb_uri, &ctx.databases.mongodb_db, first_id, last_id, &mut mongo_written)
        .await?;
    eprintln!("experiment: reading the acknowledged orders back from every member (after at most 60 s to catch up)");
    let acked = |records: &[Request]| -> Vec<i64> {
        records.iter().filter(|r| r.acked_at().is_some()).filter_map(|r| i64::try_from(r.id).ok()).collect()
    };
    let pg_members = every::pg(patroni, &ctx.databases.database_url, &acked(&pg_records)).await;
    let mongo_members = every::mongo(mongo, &ctx.databases.mongodb_db, &acked(&mongo_records)).await;
    let or_none = |m: Result<Vec<every::Member>>| {
        m.unwrap_or_else(|e| {
            eprintln!("experiment: the members not read: {e:#}");
            Vec::new()
        })
    };
    let (pg_members, mongo_members) = (or_none(pg_members), or_none(mongo_members));
    let since = std::time::UNIX_EPOCH + Duration::from_millis(u64::try_from(followed.kill_epoch_ms).unwrap_or(0));
    let pg_rejoin = members.dir.as_ref().map_or_else(rejoin::Rejoin::default, |dir| {
        rejoin::pg_rewind(&dir.join(&pg_victim.member).join("patroni.log"))
    });
    let mongo_acked = acked(&mongo_records).into_iter().collect();
    let mongo_rejoin = rejoin::dbpath(&mongo_victim.cmdline)
        .map_or_else(rejoin::Rejoin::default, |dbpath| rejoin::mongo_rollback(&dbpath, since, &mongo_acked));
    let pids_after = ctx.services.pids();
    let pid = |pids: &[(Target, Option<u32>)], t: Target| pids.iter().find(|(x, _)| *x == t).and_then(|(_, p)| *p);
    let same = |t: Target| {
        let (a, b) = (pid(&pids_before, t), pid(&pids_after, t));
        a.is_some() && a == b && b.is_some_and(members::alive)
    };
    let history = patroni.get("/history").await.unwrap_or_else(|e| Value::String(format!("unread: {e:#}")));
    let status = servers::mongo_status(mongo).await.unwrap_or_else(|e| Value::String(format!("unread: {e:#}")));
    let engine = |name: &'static str, t: Target, records: &[Request], victim: &Victim| Engine {
        engine: name,
        service_pid_before: pid(&pids_before, t),
        service_pid_after: pid(&pids_after, t),
        same_service_process: same(t),
        killed: Some(victim.clone()),
        kill_ms: Some(followed.kill_ms),
        old_primary: victim.member.clone(),
        new_primary: None,
        new_primary_after_ms: None,
        promoted_after_ms: None,
        old_primary_rejoined: None,
        old_primary_rejoined_after_ms: None,
        figures: figures::of(records, followed.kill_ms),
        written: check::Written::default(),
        members: Vec::new(),
        rejoin: rejoin::Rejoin::default(),
        settings: Value::Null,
        servers_say: Value::Null,
        reads: None,
    };
    let mut pg = engine("postgres", Target::Pg, &pg_records, &pg_victim);
    (pg.new_primary, pg.new_primary_after_ms) = followed.pg.clone().unzip();
    (pg.old_primary_rejoined, pg.old_primary_rejoined_after_ms) = followed.pg_back.clone().unzip();
    (pg.members, pg.rejoin) = (pg_members, pg_rejoin);
    (pg.written, pg.settings, pg.servers_say) =
        (pg_written, pg_settings, serde_json::json!({"patroni_history": history}));
    pg.promoted_after_ms = servers::patroni_promoted_ms(&history).map(|at| (at - followed.kill_epoch_ms) as f64);
    let mut mg = engine("mongodb", Target::Mongo, &mongo_records, &mongo_victim);
    (mg.new_primary, mg.new_primary_after_ms) = followed.mongo.clone().unzip();
    (mg.old_primary_rejoined, mg.old_primary_rejoined_after_ms) = followed.mongo_back.clone().unzip();
    (mg.members, mg.rejoin) = (mongo_members, mongo_rejoin);
    (mg.written, mg.settings, mg.servers_say) = (mongo_written, mongo_settings, serde_json::json!({"replset": status}));
    mg.promoted_after_ms = status["last_election_ms"].as_i64().map(|at| (at - followed.kill_epoch_ms) as f64);
    if plan.shop {
        pg.reads = Some(reads::figures(&pg_reads, followed.kill_ms));
        mg.reads = Some(reads::figures(&mongo_reads, followed.kill_ms));
    }
    let records =
        serde_json::json!({"pg": pg_records, "mongo": mongo_records, "reads": {"pg": pg_reads, "mongo": mongo_reads}});
    std::fs::write(ctx.out.join("requests.json"), records.to_string()).context("writing requests.json")?;
    Ok((pg, mg))
}

/// The insert of order `id`: a generated three-item order with its id set.
fn body(id: u64) -> Result<String> {
    let profile =
        orders_dataset::Profile { seed: 43, orders: 1, customers: 1_000, products: 1_000, items: 3, note_bytes: 0 };
    // The profile's order number stays small (its timestamps are computed from it); the id is set.
    let mut order: Value = serde_json::from_str(&super::closed_loop::new_order_body(&profile, id % 1_000_000 + 1)?)?;
    order["id"] = id.into();
    Ok(order.to_string())
}

/// What happened from the kill on: when, and each engine's new primary (member, ms after the kill).
struct Followed {
    kill_ms: f64,
    /// The kill by the wall clock (milliseconds since 1970), to set the servers' own times against.
    kill_epoch_ms: i64,
    pg: Option<(String, f64)>,
    mongo: Option<(String, f64)>,
    /// The old primaries back as standbys: their state and ms after the kill.
    pg_back: Option<(String, f64)>,
    mongo_back: Option<(String, f64)>,
}

/// Kills both primaries at `start + kill_after`, then follows each engine on its own (polling every
/// 200 ms, up to 150 s, so one engine's slow answer does not delay the other's): its new primary
/// and the old one back as a standby; once MongoDB has a new primary, the killed `mongod` is
/// started again (Patroni restarts its postgres by itself).
async fn kill_and_follow(
    start: Instant,
    plan: Plan,
    (patroni, mongo): (&servers::Patroni, &mongodb::Client),
    members: &Members,
    (pg, mg): (&Victim, &Victim),
    undo: &mut restore::Undo,
) -> Result<Followed> {
    tokio::time::sleep_until((start + plan.kill_after).into()).await;
    undo.killed_mongod = Some(mg.clone());
    members::kill(&[pg.pid, mg.pid]).await?;
    let killed = Instant::now();
    let kill_epoch_ms = orders_core::Timestamp::now().millis();
    let kill_ms = killed.duration_since(start).as_secs_f64() * 1000.0;
    eprintln!(
        "experiment: killed postmaster {} ({}) and mongod {} ({}) at {kill_ms:.0} ms",
        pg.pid, pg.member, mg.pid, mg.member
    );
    let limit = killed + Duration::from_secs(150);
    let ((pg_new, pg_back), (mongo_new, mongo_back)) =
        tokio::join!(follow_pg(patroni, pg, killed, limit), follow_mongo(mongo, members, mg, killed, limit, undo));
    Ok(Followed { kill_ms, kill_epoch_ms, pg: pg_new, mongo: mongo_new, pg_back, mongo_back })
}

type Seen = Option<(String, f64)>;

fn since(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1000.0
}

async fn follow_pg(patroni: &servers::Patroni, pg: &Victim, killed: Instant, limit: Instant) -> (Seen, Seen) {
    let (mut new, mut back) = (None, None);
    while Instant::now() < limit && (new.is_none() || back.is_none()) {
        if let Ok(cluster) = patroni.get("/cluster").await {
            let all = cluster["members"].as_array().cloned().unwrap_or_default();
            if new.is_none()
                && let Some(leader) = all.iter().find(|m| m["role"] == "leader" && m["name"] != pg.member.as_str())
            {
                let name = leader["name"].as_str().unwrap_or("?").to_owned();
                eprintln!("experiment: Patroni's new leader: {name}, seen {:.0} ms after the kill", since(killed));
                new = Some((name, since(killed)));
            }
            if new.is_some()
                && let Some(m) = all.iter().find(|m| m["name"] == pg.member.as_str() && m["state"] == "streaming")
            {
                let state = format!("{} {}", m["role"].as_str().unwrap_or("?"), m["state"].as_str().unwrap_or("?"));
                eprintln!("experiment: {} is back as {state}, seen {:.0} ms after the kill", pg.member, since(killed));
                back = Some((state, since(killed)));
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    (new, back)
}

async fn follow_mongo(
    mongo: &mongodb::Client,
    members: &Members,
    mg: &Victim,
    killed: Instant,
    limit: Instant,
    undo: &mut restore::Undo,
) -> (Seen, Seen) {
    let (mut new, mut back) = (None, None);
    let name = format!("{}:27017", mg.address);
    while Instant::now() < limit && (new.is_none() || back.is_none()) {
        if new.is_none()
            && let Ok(Some(host)) = servers::mongo_primary(mongo).await
            && let Ok(member) = members.by_address("mongo", host.split(':').next().unwrap_or_default()).await
            && member != mg.member
        {
            eprintln!(
                "experiment: MongoDB's new primary: {member}, seen {:.0} ms after the kill; starting {} again",
                since(killed),
                mg.member
            );
            new = Some((member, since(killed)));
            match members::restart(mg).await {
                Ok(()) => undo.killed_mongod = None,
                Err(error) => eprintln!("experiment: {error:#}"),
            }
        }
        if new.is_some()
            && let Ok(status) = servers::mongo_status(mongo).await
            && status["members"][&name] == "SECONDARY"
        {
            eprintln!("experiment: {} is back as SECONDARY, seen {:.0} ms after the kill", mg.member, since(killed));
            back = Some(("SECONDARY".to_owned(), since(killed)));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    (new, back)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shop_mix_splits_the_rate_by_its_weights_and_insert_sends_inserts_only() {
        let mut plan = Plan {
            rate: 100,
            run: Duration::from_secs(40),
            kill_after: Duration::from_secs(10),
            retries: 40,
            primary_start_timeout: 0,
            patroni: [("ttl", None), ("loop_wait", None), ("retry_timeout", None)],
            election_timeout_ms: None,
            weak_durability: false,
            shop: false,
        };
        assert_eq!(plan.rates().expect("rates"), [100, 0, 0]);
        plan.shop = true;
        assert_eq!(plan.rates().expect("rates"), [10, 60, 30], "loadtest/mixes.json's shop: 10 / 60 / 30");
        assert_eq!((plan.load().rate, plan.load().requests), (10, 400));
        assert_eq!(plan.readers(60).requests, 2_400);
    }

    #[test]
    fn a_body_carries_its_own_large_id() {
        let id = 1_000_000_000_000_000 + 123 * 100_000 + 7;
        let body: serde_json::Value = serde_json::from_str(&super::body(id).expect("a body")).expect("JSON");
        assert_eq!(body["id"], id);
        assert_eq!(body["items"].as_array().map(Vec::len), Some(3));
    }
}
