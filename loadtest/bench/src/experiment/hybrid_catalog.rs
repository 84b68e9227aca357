//! Whether finding F1 (S1: the GIN pending list's cost turns the prepared product search's generic
//! plan into a sequential scan) can happen to the hybrid layout, asked of the engine rather than
//! assumed: the hybrid's database, migrated exactly as orders-pg-hybrid migrates it at start-up,
//! and its catalogs' indexes with their access methods (`pg_index`, `pg_class`, `pg_am`), orders-pg's
//! beside them. F1 needs a GIN index, whose pending list is what inserts grow and the planner adds
//! to the index plan's cost; without one there is nothing for the mix to grow. One query per
//! database and no load round: a round could only show the absence of a pending list, which the
//! catalog already proves for every round.

use super::Ctx;
use anyhow::{Context, Result};
use orders_bench_engines::Backend;
use orders_bench_engines::databases::{pg_session, redact};
use orders_bench_engines::hybrid::Hybrid;
use orders_bench_engines::postgres::admin::{self, IndexEntry};
use serde::Serialize;

/// What the catalogs said, or why they were not read.
#[derive(Debug, Clone, Serialize)]
pub struct HybridCatalog {
    /// The hybrid's database (no credentials).
    pub database: Option<String>,
    pub indexes: Vec<IndexEntry>,
    /// orders-pg's indexes, for contrast.
    pub jsonb_indexes: Vec<IndexEntry>,
    /// Whether F1 can happen to the hybrid (it has a GIN index); `None`: not read.
    pub f1_possible: Option<bool>,
    pub not_read: Option<String>,
}

fn list(indexes: &[IndexEntry]) -> String {
    let entries: Vec<String> =
        indexes.iter().map(|i| format!("{} on {} ({})", i.index, i.table, i.access_method)).collect();
    if entries.is_empty() { "no index".into() } else { entries.join(", ") }
}

impl HybridCatalog {
    fn gin(&self) -> Vec<&IndexEntry> {
        self.indexes.iter().filter(|i| i.access_method == "gin").collect()
    }

    /// The gin report's answer, in one paragraph.
    pub fn statement(&self) -> String {
        if let Some(why) = &self.not_read {
            return format!("**Can F1 happen to the hybrid layout?** Not checked: {why}.");
        }
        let database = self.database.as_deref().unwrap_or("?");
        let contrast = format!("orders-pg's, for contrast: {}", list(&self.jsonb_indexes));
        match self.gin().as_slice() {
            [] => format!(
                "**Can F1 happen to the hybrid layout?** No: the hybrid layout has no GIN index (catalog of {database}, \
                 `pg_index` / `pg_class` / `pg_am`: {}), so it has no pending list for inserts to grow and nothing \
                 that makes its product search's index plan dearer: F1 cannot happen to it. {contrast}.",
                list(&self.indexes)
            ),
            gin => format!(
                "**Can F1 happen to the hybrid layout?** It can: the hybrid layout has a GIN index (catalog of \
                 {database}: {}), whose pending list inserts grow (`gin_pending` applies to it). All its indexes: \
                 {}. {contrast}.",
                gin.iter().map(|i| i.definition.as_str()).collect::<Vec<_>>().join("; "),
                list(&self.indexes)
            ),
        }
    }

    fn failed(database: Option<String>, why: String) -> Self {
        Self { database, indexes: Vec::new(), jsonb_indexes: Vec::new(), f1_possible: None, not_read: Some(why) }
    }
}

async fn indexes_of(url: &str) -> Result<Vec<IndexEntry>> {
    let (client, _connection) = pg_session(url).await?;
    admin::indexes(&client).await.with_context(|| format!("reading the catalog of {}", redact(url)))
}

/// Reads both catalogs; the hybrid's database is created (on the local stack) and migrated first.
pub async fn read(ctx: &Ctx) -> HybridCatalog {
    let Some(url) = ctx.hybrid.clone() else {
        return HybridCatalog::failed(
            None,
            "no database of the hybrid layout on a server of its own is known (the local stack prints \
             HYBRID_DATABASE_URL when it runs one; deployed, pass --database pgh=URL)"
                .into(),
        );
    };
    // On the local stack the experiment's database of that name may not exist yet (the hybrid is
    // not a target of gin by default); a backend creates it on its own server.
    read_at(&url, &ctx.databases.database_url, ctx.local.is_some()).await
}

/// The catalogs of the hybrid's database at `url` (created first, through its own server, when
/// `create`; migrated as the service does) and of orders-pg's at `jsonb_url`.
async fn read_at(url: &str, jsonb_url: &str, create: bool) -> HybridCatalog {
    let read = async {
        let hybrid = Hybrid::new(url);
        if create {
            hybrid.create_database().await?;
        }
        hybrid.migrate().await?;
        anyhow::Ok((indexes_of(url).await?, indexes_of(jsonb_url).await?))
    };
    let database = Some(redact(url));
    match read.await {
        Ok((indexes, jsonb_indexes)) => {
            let mut catalog = HybridCatalog { database, indexes, jsonb_indexes, f1_possible: None, not_read: None };
            catalog.f1_possible = Some(!catalog.gin().is_empty());
            catalog
        }
        Err(error) => HybridCatalog::failed(database, format!("{error:#}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index(table: &str, index: &str, method: &str) -> IndexEntry {
        IndexEntry {
            table: table.into(),
            index: index.into(),
            access_method: method.into(),
            definition: format!("CREATE INDEX {index} ON public.{table} USING {method} (...)"),
        }
    }

    #[test]
    fn the_answer_names_the_catalog_it_rests_on() {
        let mut catalog = HybridCatalog {
            database: Some("postgres://postgres@127.0.0.1:54433/x".into()),
            indexes: vec![
                index("orders", "orders_pkey", "btree"),
                index("order_items", "order_items_product", "btree"),
            ],
            jsonb_indexes: vec![index("orders", "orders_items", "gin")],
            f1_possible: Some(false),
            not_read: None,
        };
        let no = catalog.statement();
        assert!(no.contains("the hybrid layout has no GIN index (catalog of postgres://"), "{no}");
        assert!(no.contains("order_items_product on order_items (btree)") && no.contains("F1 cannot happen"), "{no}");
        assert!(no.contains("orders_items on orders (gin)"), "orders-pg's beside it: {no}");
        catalog.indexes.push(index("orders", "orders_doc", "gin"));
        assert!(catalog.statement().contains("It can: the hybrid layout has a GIN index"));
        let unread = HybridCatalog::failed(None, "no database".into()).statement();
        assert!(unread.contains("Not checked: no database"), "{unread}");
    }

    /// The real catalogs: the hybrid's database migrated as its service migrates it, orders-pg's
    /// beside it (fresh databases of the test server; the catalog is per database).
    #[tokio::test]
    async fn the_engine_says_the_hybrid_has_no_gin_index_and_orders_pg_has_one() {
        let jsonb = orders_pg::testing::fresh_database().await;
        let (mut client, _connection) = pg_session(&jsonb).await.expect("connect");
        orders_pg::migrate::run(&mut client).await.expect("orders-pg's migrations");
        let catalog = read_at(&orders_pg::testing::fresh_database().await, &jsonb, false).await;
        assert_eq!((catalog.f1_possible, &catalog.not_read), (Some(false), &None), "{catalog:#?}");
        let methods: Vec<(&str, &str)> =
            catalog.indexes.iter().map(|i| (i.index.as_str(), i.access_method.as_str())).collect();
        assert!(methods.contains(&("order_items_product", "btree")), "{methods:?}");
        assert!(methods.iter().all(|(_, method)| *method == "btree"), "{methods:?}");
        assert!(catalog.jsonb_indexes.iter().any(|i| i.index == "orders_items" && i.access_method == "gin"));
        assert!(catalog.statement().contains("F1 cannot happen to it"));
        let unreachable = read_at("postgres://postgres@127.0.0.1:9/none", &jsonb, false).await;
        assert!(unreachable.f1_possible.is_none() && unreachable.statement().contains("Not checked"));
    }
}
