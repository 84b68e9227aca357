//! The acknowledged orders read back from every member, not just the new primary (issue 43,
//! point 2): once the members have caught up with the primary (PostgreSQL: each standby's replay
//! LSN at the primary's current LSN; MongoDB: each member's optime at the primary's; waited for at
//! most `CATCH_UP`), each member is asked directly — PostgreSQL over its own address and port from
//! Patroni's `/cluster`, MongoDB with a direct connection reading from a secondary — how many of the
//! acknowledged ids it holds. A member that has not caught up is still read, and says so.

use super::servers::Patroni;
use anyhow::{Context, Result};
use mongodb::bson::{Bson, Document, doc};
use serde::Serialize;
use std::time::{Duration, Instant};

/// How long the members get to catch up after the round.
pub const CATCH_UP: Duration = Duration::from_secs(60);

/// One member's read-back.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Member {
    pub member: String,
    /// At the primary's position when read (within `CATCH_UP`).
    pub caught_up: bool,
    pub found: u64,
    pub lost: u64,
    /// Why the member could not be read (then `found` and `lost` are 0).
    pub error: Option<String>,
}

fn counted(member: String, caught_up: bool, acked: usize, found: Result<u64>) -> Member {
    match found {
        Ok(found) => Member { member, caught_up, found, lost: (acked as u64).saturating_sub(found), error: None },
        Err(e) => Member { member, caught_up, error: Some(format!("{e:#}")), ..Member::default() },
    }
}

async fn pg_connect(url: &str, host: &str, port: u16) -> Result<tokio_postgres::Client> {
    let from: tokio_postgres::Config = url.parse().context("the PostgreSQL URL")?;
    let mut config = tokio_postgres::Config::new();
    config.host(host).port(port).connect_timeout(Duration::from_secs(5));
    config.user(from.get_user().unwrap_or("postgres"));
    if let Some(p) = from.get_password() {
        config.password(p);
    }
    if let Some(db) = from.get_dbname() {
        config.dbname(db);
    }
    let (client, connection) = config.connect(tokio_postgres::NoTls).await.with_context(|| format!("{host}:{port}"))?;
    tokio::spawn(connection);
    Ok(client)
}

/// Every PostgreSQL member (`name`, `host`, `port` from Patroni's `/cluster`) against `ids`.
pub async fn pg(patroni: &Patroni, url: &str, ids: &[i64]) -> Result<Vec<Member>> {
    let cluster = patroni.get("/cluster").await?;
    let mut members = Vec::new();
    for m in cluster["members"].as_array().into_iter().flatten() {
        let name = m["name"].as_str().unwrap_or("?").to_owned();
        let host = m["host"].as_str().unwrap_or_default().to_owned();
        let port = m["port"].as_u64().and_then(|p| u16::try_from(p).ok()).unwrap_or(5432);
        members.push((name, m["role"] == "leader", pg_connect(url, &host, port).await));
    }
    let leader = members.iter().find_map(|(_, leader, c)| c.as_ref().ok().filter(|_| *leader));
    let target: Option<String> = match leader {
        Some(c) => c.query_one("SELECT pg_current_wal_lsn()::text", &[]).await.ok().map(|r| r.get(0)),
        None => None,
    };
    let deadline = Instant::now() + CATCH_UP;
    let mut out = Vec::new();
    for (name, leader, client) in members {
        let client = match client {
            Ok(c) => c,
            Err(e) => {
                out.push(counted(name, false, ids.len(), Err(e)));
                continue;
            }
        };
        let mut caught_up = leader;
        while !caught_up && Instant::now() < deadline {
            let Some(lsn) = &target else { break };
            let sql = "SELECT coalesce(pg_last_wal_replay_lsn() >= $1::text::pg_lsn, false)";
            caught_up = client.query_one(sql, &[lsn]).await.is_ok_and(|r| r.get::<_, bool>(0));
            if !caught_up {
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }
        let found = client
            .query_one("SELECT count(*) FROM orders WHERE id = ANY($1)", &[&ids])
            .await
            .map(|r| r.get::<_, i64>(0).max(0) as u64)
            .context("reading the acknowledged orders");
        out.push(counted(name, caught_up, ids.len(), found));
    }
    Ok(out)
}

fn optime(member: &Document) -> Option<(u32, u32)> {
    match member.get_document("optime").ok()?.get("ts")? {
        Bson::Timestamp(t) => Some((t.time, t.increment)),
        _ => None,
    }
}

async fn optimes(client: &mongodb::Client) -> Result<Vec<(String, bool, Option<(u32, u32)>)>> {
    let status = client.database("admin").run_command(doc! {"replSetGetStatus": 1}).await?;
    Ok(status
        .get_array("members")
        .map(|ms| {
            ms.iter()
                .filter_map(Bson::as_document)
                .filter_map(|m| {
                    Some((m.get_str("name").ok()?.to_owned(), m.get_str("stateStr") == Ok("PRIMARY"), optime(m)))
                })
                .collect()
        })
        .unwrap_or_default())
}

/// Every MongoDB member (`replSetGetStatus`) against `ids` in `db.orders`, each read directly.
pub async fn mongo(client: &mongodb::Client, db: &str, ids: &[i64]) -> Result<Vec<Member>> {
    let deadline = Instant::now() + CATCH_UP;
    let mut members = optimes(client).await?;
    loop {
        let primary = members.iter().find(|(_, p, _)| *p).and_then(|(_, _, t)| *t);
        let behind = members.iter().any(|(_, _, t)| primary.is_none() || *t < primary);
        if !behind || Instant::now() >= deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        members = optimes(client).await?;
    }
    let primary = members.iter().find(|(_, p, _)| *p).and_then(|(_, _, t)| *t);
    let mut out = Vec::new();
    for (name, _, at) in members {
        let caught_up = primary.is_some() && at >= primary;
        let found = async {
            let uri = format!("mongodb://{name}/?directConnection=true&readPreference=secondaryPreferred");
            let direct = mongodb::Client::with_uri_str(&uri).await?;
            let orders = direct.database(db).collection::<Document>("orders");
            Ok(orders.count_documents(doc! {"_id": {"$in": ids}}).await?)
        };
        let found = found.await;
        out.push(counted(name, caught_up, ids.len(), found));
    }
    Ok(out)
}

/// The members in one cell: `pg1 0 lost`, a member behind or unread said so.
pub fn cell(members: &[Member]) -> String {
    if members.is_empty() {
        return "not read".into();
    }
    let one = |m: &Member| match (&m.error, m.caught_up) {
        (Some(e), _) => format!("{}: unread ({e})", m.member),
        (None, true) => format!("{}: {} lost", m.member, m.lost),
        (None, false) => format!("{}: {} lost (not caught up within {} s)", m.member, m.lost, CATCH_UP.as_secs()),
    };
    members.iter().map(one).collect::<Vec<_>>().join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_member_missing_orders_counts_them_lost_and_an_unread_one_says_why() {
        let m = counted("pg2".into(), true, 10, Ok(8));
        assert_eq!((m.found, m.lost), (8, 2));
        let unread = counted("mongo1".into(), false, 10, Err(anyhow::anyhow!("refused")));
        assert_eq!(unread.lost, 0);
        let text = cell(&[m, unread, counted("pg3".into(), false, 10, Ok(10))]);
        assert_eq!(text, "pg2: 2 lost; mongo1: unread (refused); pg3: 0 lost (not caught up within 60 s)");
        assert_eq!(cell(&[]), "not read");
    }
}
