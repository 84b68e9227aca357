//! The `replication` section of `/diagnostics`: which member the service writes to and what a
//! write waits for, from the `hello` the report reads anyway (`me`, `primary`, `setName`, the
//! members) and the write concern in effect (the one the driver sends with every write, else the
//! server's default), so "a write waits for a majority, 2 of 3 members" is read back, not assumed.

use mongodb::bson::{Bson, Document};
use serde::{Deserialize, Serialize};
use std::fmt;

/// `w` and `j` of the collection's write concern; both `null` when none is set.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SentWriteConcern {
    pub w: Option<WriteAck>,
    pub j: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// `w`: a number of nodes, or a name (`majority`, a tag).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum WriteAck {
    Nodes(u32),
    Named(String),
}

impl fmt::Display for WriteAck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WriteAck::Nodes(nodes) => write!(f, "{nodes}"),
            WriteAck::Named(name) => f.write_str(name),
        }
    }
}

/// What `hello` says of the member the service's commands reach (the primary, for writes).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Replication {
    /// `primary`, `secondary`, `arbiter`, `mongos` or `standalone`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// `setName`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub set_name: Option<String>,
    /// `me`: the member that answered, the one writes go to when `role` is `primary`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub me: Option<String>,
    /// `primary`: the member the set has elected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub primary: Option<String>,
    /// `hosts`, `passives` and `arbiters` of `hello` (hidden members are not listed).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub passives: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub arbiters: Vec<String>,
    /// The write concern every write of the service has: `w`, `j` and where it comes from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_concern: Option<WriteConcernInEffect>,
    /// How many data-bearing members hold a write before it is acknowledged (`w: majority` of the
    /// listed members, `w: N`; absent for a tag).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub acknowledged_by: Option<u32>,
    /// Of how many members (`hosts`, `passives` and `arbiters`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub members: Option<u32>,
    /// What a write waits for before it is acknowledged, in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_waits_for: Option<String>,
}

/// `w` and `j` of every write, and `source`: `sent with every write` (the service's
/// `MONGO_WRITE_CONCERN` and `MONGO_JOURNAL`) or `server default` (`getDefaultRWConcern`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct WriteConcernInEffect {
    pub w: Option<WriteAck>,
    pub j: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// The section from `hello`, the write concern the driver sends and `getDefaultRWConcern`'s
/// answer (when the server gave one).
pub fn from_hello(hello: &Document, sent: &SentWriteConcern, server_default: Option<&Document>) -> Replication {
    let strings = |key: &str| -> Vec<String> {
        let list = hello.get_array(key).map(|list| list.iter().filter_map(Bson::as_str).map(str::to_owned).collect());
        list.unwrap_or_default()
    };
    let flag = |key: &str| hello.get_bool(key).unwrap_or(false);
    let set_name = hello.get_str("setName").ok().map(str::to_owned);
    let role = if hello.get_str("msg") == Ok("isdbgrid") {
        "mongos"
    } else if set_name.is_none() {
        "standalone"
    } else if flag("isWritablePrimary") {
        "primary"
    } else if flag("secondary") {
        "secondary"
    } else if flag("arbiterOnly") {
        "arbiter"
    } else {
        "other"
    };
    let concern = in_effect(sent, server_default);
    let (hosts, passives, arbiters) = (strings("hosts"), strings("passives"), strings("arbiters"));
    let data_bearing = (hosts.len() + passives.len()) as u32;
    let members = data_bearing + arbiters.len() as u32;
    let acknowledged_by = match (role, &concern.w) {
        ("standalone", _) => Some(1),
        ("mongos", _) => None,
        (_, Some(WriteAck::Named(name))) if name == "majority" => Some((members / 2 + 1).min(data_bearing)),
        (_, Some(WriteAck::Nodes(nodes))) => Some(*nodes),
        _ => None,
    };
    let primary = hello.get_str("primary").ok().map(str::to_owned);
    let waits = write_waits_for(role, primary.as_deref(), &concern, acknowledged_by, members);
    Replication {
        role: Some(role.into()),
        set_name,
        me: hello.get_str("me").ok().map(str::to_owned),
        primary,
        hosts,
        passives,
        arbiters,
        write_concern: Some(concern),
        acknowledged_by,
        members: (role != "standalone" && role != "mongos").then_some(members),
        write_waits_for: Some(waits),
    }
}

/// The driver's write concern when it sends one, else the server's default.
fn in_effect(sent: &SentWriteConcern, server_default: Option<&Document>) -> WriteConcernInEffect {
    if sent.w.is_some() || sent.j.is_some() {
        return WriteConcernInEffect { w: sent.w.clone(), j: sent.j, source: Some("sent with every write".into()) };
    }
    let default = server_default.and_then(|d| d.get_document("defaultWriteConcern").ok());
    let w = default.and_then(|d| match d.get("w") {
        Some(Bson::String(name)) => Some(WriteAck::Named(name.clone())),
        Some(Bson::Int32(n)) => u32::try_from(*n).ok().map(WriteAck::Nodes),
        Some(Bson::Int64(n)) => u32::try_from(*n).ok().map(WriteAck::Nodes),
        _ => None,
    });
    let j = default.and_then(|d| d.get_bool("j").ok());
    WriteConcernInEffect { w, j, source: Some("server default".into()) }
}

fn write_waits_for(
    role: &str,
    primary: Option<&str>,
    concern: &WriteConcernInEffect,
    acknowledged_by: Option<u32>,
    members: u32,
) -> String {
    let journal = match concern.j {
        Some(true) => ", each in its on-disk journal (j: true)",
        Some(false) => ", in memory (j: false)",
        None => " (j not set: the server's default)",
    };
    let primary = primary.unwrap_or("(none elected)");
    let whom = match (role, acknowledged_by, &concern.w) {
        ("standalone", _, _) => "this one server (a standalone: majority is itself)".to_owned(),
        ("mongos", _, w) => {
            format!("w: {} on each shard's replica set", w.as_ref().map_or("default".into(), |w| w.to_string()))
        }
        (_, Some(1), _) => format!("the primary {primary} alone"),
        (_, Some(n), w) => {
            let majority = if matches!(w, Some(WriteAck::Named(_))) { "a majority, " } else { "" };
            let secondaries =
                if n == 2 { "1 secondary".to_owned() } else { format!("{} secondaries", n.saturating_sub(1)) };
            format!("{majority}{n} of {members} members: the primary {primary} and {secondaries}")
        }
        (_, None, Some(w)) => format!("the members tag '{w}' names"),
        (_, None, None) => "the server's default write concern".to_owned(),
    };
    format!("{whom}{journal}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use mongodb::bson::doc;

    fn majority() -> SentWriteConcern {
        SentWriteConcern { w: Some(WriteAck::Named("majority".into())), j: Some(true), note: None }
    }

    #[test]
    fn a_primary_of_three_says_a_write_waits_for_two_members_journaled() {
        let hello = doc! {
            "hosts": ["198.18.42.11:27017", "198.18.42.12:27017", "198.18.42.13:27017"], "setName": "rs0",
            "isWritablePrimary": true, "secondary": false, "primary": "198.18.42.11:27017", "me": "198.18.42.11:27017",
        };
        let r = from_hello(&hello, &majority(), None);
        assert_eq!(r.role.as_deref(), Some("primary"));
        assert_eq!((r.acknowledged_by, r.members), (Some(2), Some(3)));
        assert_eq!(
            r.write_waits_for.as_deref(),
            Some(
                "a majority, 2 of 3 members: the primary 198.18.42.11:27017 and 1 secondary, each in its on-disk journal (j: true)"
            )
        );
        let one = SentWriteConcern { w: Some(WriteAck::Nodes(1)), j: Some(true), note: None };
        let r = from_hello(&hello, &one, None);
        assert_eq!(r.acknowledged_by, Some(1));
        assert!(r.write_waits_for.is_some_and(|w| w.starts_with("the primary 198.18.42.11:27017 alone")));
    }

    #[test]
    fn a_standalone_says_so_and_the_server_default_applies_when_nothing_is_sent() {
        let hello = doc! {"isWritablePrimary": true, "maxWireVersion": 17};
        let none = SentWriteConcern { w: None, j: None, note: Some("none set".into()) };
        let default = doc! {"defaultWriteConcern": {"w": "majority", "wtimeout": 0}};
        let r = from_hello(&hello, &none, Some(&default));
        assert_eq!(r.role.as_deref(), Some("standalone"));
        assert_eq!(r.acknowledged_by, Some(1));
        assert_eq!(r.members, None);
        let concern = r.write_concern.expect("write concern");
        assert_eq!(
            (concern.w, concern.source.as_deref()),
            (Some(WriteAck::Named("majority".into())), Some("server default"))
        );
        let json = serde_json::to_value(from_hello(&hello, &majority(), None)).expect("json");
        assert_eq!(json["role"], "standalone");
        assert!(json.get("hosts").is_none(), "empty member lists are left out: {json}");
    }
}
