//! The `reads` section of `/diagnostics`: where the service's reads (get, list by customer, list
//! by product) go. They follow `MONGODB_URI`'s `readPreference` (the driver's, for every `find`;
//! none: the primary), writes always go to the primary. The member is the server's word: a
//! `hello` sent with the same read preference names the member that answered it.

use mongodb::bson::{Document, doc};
use mongodb::options::{ReadPreference, SelectionCriteria};
use mongodb::{Collection, Database};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Reads {
    /// `primary`, `primaryPreferred`, `secondary`, `secondaryPreferred` or `nearest`.
    pub read_preference: String,
    /// Whether it is the URI's (`MONGODB_URI`'s `readPreference`) or the driver's default.
    pub source: String,
    /// `me` of the member that answered a `hello` sent with that read preference.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answered_by: Option<String>,
    /// `primary` or `secondary`, as that member said.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// Why the member could not be asked, when it could not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The read preference's name as the connection string spells it.
pub fn name(preference: &ReadPreference) -> &'static str {
    match preference {
        ReadPreference::Primary => "primary",
        ReadPreference::PrimaryPreferred { .. } => "primaryPreferred",
        ReadPreference::Secondary { .. } => "secondary",
        ReadPreference::SecondaryPreferred { .. } => "secondaryPreferred",
        ReadPreference::Nearest { .. } => "nearest",
        _ => "other",
    }
}

/// The section for `orders`' reads, asking `db` which member answers them.
pub async fn read(db: &Database, orders: &Collection<Document>) -> Reads {
    let criteria = orders.selection_criteria().cloned();
    let (read_preference, source) = match &criteria {
        Some(SelectionCriteria::ReadPreference(preference)) => (name(preference), "MONGODB_URI's readPreference"),
        Some(_) => ("a predicate", "the driver's options"),
        None => ("primary", "the driver's default"),
    };
    let mut reads = Reads { read_preference: read_preference.into(), source: source.into(), ..Reads::default() };
    match db
        .run_command(doc! {"hello": 1})
        .selection_criteria(criteria.unwrap_or(SelectionCriteria::ReadPreference(ReadPreference::Primary)))
        .await
    {
        Ok(hello) => {
            reads.answered_by = hello.get_str("me").ok().map(str::to_owned);
            reads.role = Some(role(&hello).into());
        }
        Err(error) => reads.error = Some(crate::error::describe(&error)),
    }
    reads
}

fn role(hello: &Document) -> &'static str {
    if hello.get_bool("isWritablePrimary").unwrap_or(false) {
        "primary"
    } else if hello.get_bool("secondary").unwrap_or(false) {
        "secondary"
    } else {
        "other"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_role_is_the_members_own_word() {
        assert_eq!(role(&doc! {"isWritablePrimary": true, "secondary": false}), "primary");
        assert_eq!(role(&doc! {"isWritablePrimary": false, "secondary": true}), "secondary");
        assert_eq!(role(&doc! {"isWritablePrimary": false, "secondary": false}), "other");
    }

    #[test]
    fn a_preference_is_named_as_the_connection_string_spells_it() {
        let options = Default::default();
        assert_eq!(name(&ReadPreference::SecondaryPreferred { options }), "secondaryPreferred");
        assert_eq!(name(&ReadPreference::Primary), "primary");
    }
}
