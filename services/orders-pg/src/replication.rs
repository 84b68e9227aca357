//! The `replication` section of `/diagnostics` (shared with orders-pg-hybrid): which server the
//! pooled connection is on and what a commit on it waits for, read back in one query
//! (`inet_server_addr()`, `pg_is_in_recovery()`, `synchronous_standby_names`, the session's
//! `synchronous_commit` and `pg_stat_replication`), so "a commit waits for the synchronous standby
//! pg2" is the server's word, not the configuration's; and `reads`, the same read on a connection of
//! the reads' pool when there is one (`pools`).

use serde::{Deserialize, Serialize};
use tokio_postgres::Client;

/// What the server the connection is on says of its replication.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Replication {
    /// `primary` (standbys stream from it, or it names synchronous ones), `standby` (in
    /// recovery) or `standalone` (neither).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// `inet_server_addr()` and `inet_server_port()`: the member the pooled connection is on
    /// (no address over a unix socket).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_addr: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_port: Option<i32>,
    /// `pg_is_in_recovery()`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub in_recovery: Option<bool>,
    /// The server's `synchronous_standby_names` (empty: no commit waits for a standby).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub synchronous_standby_names: Option<String>,
    /// The session's `synchronous_commit`, as requests' commits run with it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub synchronous_commit: Option<String>,
    /// `pg_stat_replication`: the standbys streaming from this server, by name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub standbys: Option<Vec<Standby>>,
    /// What a commit waits for before it is acknowledged, in words, from the figures above.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit_waits_for: Option<String>,
}

/// One row of `pg_stat_replication`. Without `pg_read_all_stats` (or superuser) the server
/// hides everything but the name: the other fields are then absent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Standby {
    /// `application_name` (Patroni: the member's name, as `synchronous_standby_names` lists it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_addr: Option<String>,
    /// `streaming`, `catchup`, ...
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// `sync`, `quorum`, `potential` or `async`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sync_state: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sent_lsn: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_lsn: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flush_lsn: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replay_lsn: Option<String>,
}

/// One query: the server's address, recovery, the two settings and the standbys as JSON.
const QUERY: &str = "SELECT host(inet_server_addr()), inet_server_port(), pg_is_in_recovery(),
        current_setting('synchronous_standby_names'), current_setting('synchronous_commit'),
        (SELECT coalesce(json_agg(json_build_object(
                'name', application_name, 'client_addr', host(client_addr), 'state', state,
                'sync_state', sync_state, 'sent_lsn', sent_lsn::text, 'write_lsn', write_lsn::text,
                'flush_lsn', flush_lsn::text, 'replay_lsn', replay_lsn::text) ORDER BY application_name), '[]')
         FROM pg_stat_replication)";

/// Reads the section on `client` (a pooled connection, so `synchronous_commit` is the session's).
pub async fn read(client: &Client) -> Result<Replication, tokio_postgres::Error> {
    let row = client.query_one(QUERY, &[]).await?;
    let standbys: Vec<Standby> = serde_json::from_value(row.get(5)).unwrap_or_default();
    Ok(Replication::new(row.get(0), row.get(1), row.get(2), row.get(3), row.get(4), standbys))
}

impl Replication {
    /// The section from the query's figures, with the role and what a commit waits for.
    pub fn new(
        server_addr: Option<String>,
        server_port: Option<i32>,
        in_recovery: bool,
        synchronous_standby_names: String,
        synchronous_commit: String,
        standbys: Vec<Standby>,
    ) -> Self {
        let role = if in_recovery {
            "standby"
        } else if !standbys.is_empty() || !synchronous_standby_names.is_empty() {
            "primary"
        } else {
            "standalone"
        };
        let commit_waits_for =
            commit_waits_for(in_recovery, &synchronous_standby_names, &synchronous_commit, &standbys);
        Self {
            role: Some(role.into()),
            server_addr,
            server_port,
            in_recovery: Some(in_recovery),
            synchronous_standby_names: Some(synchronous_standby_names),
            synchronous_commit: Some(synchronous_commit),
            standbys: Some(standbys),
            commit_waits_for: Some(commit_waits_for),
        }
    }

    /// The names of the standbys a commit waits for now (`sync_state` `sync` or `quorum`).
    pub fn synchronous_standbys(&self) -> Vec<&str> {
        synchronous(self.standbys.as_deref().unwrap_or_default())
    }
}

fn synchronous(standbys: &[Standby]) -> Vec<&str> {
    let synchronous = standbys.iter().filter(|s| matches!(s.sync_state.as_deref(), Some("sync" | "quorum")));
    synchronous.filter_map(|s| s.name.as_deref()).collect()
}

/// In words, what a commit waits for: PostgreSQL's rules for `synchronous_commit` (`off`: not
/// even the local flush; `local`, or no `synchronous_standby_names`: the local flush; otherwise
/// the local flush and the synchronous standbys' write, flush or replay).
fn commit_waits_for(in_recovery: bool, names: &str, commit: &str, standbys: &[Standby]) -> String {
    if in_recovery {
        return "nothing: a standby accepts no writes".into();
    }
    if commit == "off" {
        return "nothing: acknowledged before its WAL is flushed (synchronous_commit = off)".into();
    }
    if commit == "local" || names.is_empty() {
        return "the WAL flush on this server only".into();
    }
    let remote = match commit {
        "remote_write" => "written (not flushed)",
        "remote_apply" => "replayed (visible to reads)",
        _ => "flushed",
    };
    let hidden = standbys.iter().any(|s| s.sync_state.is_none());
    let whom = match synchronous(standbys).as_slice() {
        [] if hidden => format!(
            "a standby named by synchronous_standby_names '{names}' (which: pg_stat_replication hides it from this role \
             without pg_read_all_stats)"
        ),
        [] => format!("a standby named by synchronous_standby_names '{names}' (none connected: commits wait)"),
        [one] => format!("the synchronous standby {one}"),
        many => format!("the synchronous standbys {} as '{names}' asks", many.join(", ")),
    };
    format!("the WAL flush on this server and the WAL {remote} on {whom}")
}

/// `/diagnostics`' `reads`: which URL's pool the reads use and, for `READ_DATABASE_URL`'s, what
/// the server a connection of it is on says of itself (a standby: `in_recovery`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Reads {
    /// `DATABASE_URL` (one pool for everything) or `READ_DATABASE_URL`.
    pub pool: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<Replication>,
    /// Why the reads' pool could not be asked (the rest of `/diagnostics` still answers).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn standby(name: &str, sync_state: &str) -> Standby {
        Standby { name: Some(name.into()), sync_state: Some(sync_state.into()), ..Standby::default() }
    }

    #[test]
    fn a_primary_with_a_synchronous_standby_says_its_commits_wait_for_it() {
        let standbys = vec![standby("pg2", "sync"), standby("pg3", "async")];
        let r =
            Replication::new(Some("198.18.42.21".into()), Some(5432), false, "\"pg2\"".into(), "on".into(), standbys);
        assert_eq!(r.role.as_deref(), Some("primary"));
        assert_eq!(r.synchronous_standbys(), ["pg2"]);
        assert_eq!(
            r.commit_waits_for.as_deref(),
            Some("the WAL flush on this server and the WAL flushed on the synchronous standby pg2")
        );
        let apply =
            Replication::new(None, None, false, "pg2".into(), "remote_apply".into(), vec![standby("pg2", "sync")]);
        assert!(
            apply
                .commit_waits_for
                .is_some_and(|w| w.contains("replayed (visible to reads) on the synchronous standby pg2"))
        );
    }

    #[test]
    fn without_synchronous_standbys_a_commit_waits_for_the_local_flush_or_nothing() {
        let alone = Replication::new(Some("127.0.0.1".into()), Some(55432), false, String::new(), "on".into(), vec![]);
        assert_eq!(alone.role.as_deref(), Some("standalone"));
        assert_eq!(alone.commit_waits_for.as_deref(), Some("the WAL flush on this server only"));
        let asynchronous =
            Replication::new(None, None, false, String::new(), "on".into(), vec![standby("pg2", "async")]);
        assert_eq!(asynchronous.role.as_deref(), Some("primary"));
        assert_eq!(asynchronous.commit_waits_for.as_deref(), Some("the WAL flush on this server only"));
        let local = Replication::new(None, None, false, "pg2".into(), "local".into(), vec![standby("pg2", "sync")]);
        assert_eq!(local.commit_waits_for.as_deref(), Some("the WAL flush on this server only"));
        let off = Replication::new(None, None, false, "pg2".into(), "off".into(), vec![standby("pg2", "sync")]);
        assert!(off.commit_waits_for.is_some_and(|w| w.starts_with("nothing")));
        let standby = Replication::new(None, None, true, String::new(), "on".into(), vec![]);
        assert_eq!(standby.role.as_deref(), Some("standby"));
    }
}
