//! The data set manifest (`.local/dataset.json` by default): what was seeded (seed, counts, id,
//! customer and product ranges, items per order, note size, approximate document size) and into
//! which databases, so the k6 script and the bench runner draw ids from the real ranges and nobody
//! passes them by hand. Seeding the same profile into another target adds that target to the
//! manifest; seeding a different profile starts a new manifest, so a target listed there always
//! holds exactly this data set.

use crate::Profile;
use anyhow::{Context, Result};
use orders_core::Timestamp;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// Version of the manifest and of the generator behind it: bump it whenever either changes.
pub const FORMAT: u32 = 1;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct IdRange {
    pub min: u64,
    pub max: u64,
}

impl IdRange {
    fn to(max: u64) -> Self {
        Self { min: 1, max }
    }
}

/// One database that holds the data set, and how fast it was loaded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetRecord {
    /// Server and database, without credentials, e.g. `postgres://127.0.0.1:55432/orders`.
    pub database: String,
    pub seeded_at: Timestamp,
    pub seconds: f64,
    pub docs_per_sec: f64,
    pub bytes_on_disk: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub format: u32,
    pub seed: u64,
    pub orders: u64,
    pub customers: u64,
    pub products: u64,
    pub order_ids: IdRange,
    pub customer_ids: IdRange,
    pub product_ids: IdRange,
    pub items_per_order: u32,
    pub note_bytes: u32,
    /// Mean size of an order as the API's JSON.
    pub approx_doc_bytes: u64,
    /// When this manifest was last written.
    pub created_at: Timestamp,
    /// `pg` and/or `mongo`.
    pub targets: BTreeMap<String, TargetRecord>,
}

impl Manifest {
    pub fn new(profile: &Profile, approx_doc_bytes: u64) -> Self {
        Self {
            format: FORMAT,
            seed: profile.seed,
            orders: profile.orders,
            customers: profile.customers,
            products: profile.products,
            order_ids: IdRange::to(profile.orders),
            customer_ids: IdRange::to(profile.customers),
            product_ids: IdRange::to(profile.products),
            items_per_order: profile.items,
            note_bytes: profile.note_bytes,
            approx_doc_bytes,
            created_at: Timestamp::now(),
            targets: BTreeMap::new(),
        }
    }

    /// Same generator and same profile: the same orders.
    fn same_data_as(&self, other: &Manifest) -> bool {
        let strip =
            |m: &Manifest| Manifest { created_at: Timestamp::from_millis(0), targets: BTreeMap::new(), ..m.clone() };
        strip(self) == strip(other)
    }

    /// Writes `self` plus the targets of the manifest already at `path` that hold the same data,
    /// except `forget` (targets whose load just failed, so they may hold anything).
    pub fn write_merged(mut self, path: &Path, forget: &[&str]) -> Result<Manifest> {
        if let Some(existing) = read(path).ok().filter(|existing| existing.same_data_as(&self)) {
            for (target, record) in existing.targets {
                if !forget.contains(&target.as_str()) {
                    self.targets.entry(target).or_insert(record);
                }
            }
        }
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
        }
        let text = serde_json::to_string_pretty(&self).context("manifest as JSON")?;
        std::fs::write(path, text + "\n").with_context(|| format!("writing {}", path.display()))?;
        Ok(self)
    }
}

pub fn read(path: &Path) -> Result<Manifest> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{} is not a data set manifest", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(seed: u64) -> Profile {
        Profile { seed, orders: 20, customers: 5, products: 7, items: 3, note_bytes: 0 }
    }

    fn record(database: &str) -> TargetRecord {
        TargetRecord {
            database: database.into(),
            seeded_at: Timestamp::from_millis(1),
            seconds: 1.0,
            docs_per_sec: 20.0,
            bytes_on_disk: 8192,
        }
    }

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("orders-bench-manifest-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir.join("sub").join("dataset.json")
    }

    #[test]
    fn ranges_follow_the_profile_and_the_file_round_trips() {
        let path = scratch("roundtrip");
        let mut manifest = Manifest::new(&profile(1), 600);
        manifest.targets.insert("pg".into(), record("postgres://h:1/db"));
        let written = manifest.write_merged(&path, &[]).expect("write");
        assert_eq!(written.order_ids, IdRange { min: 1, max: 20 });
        assert_eq!(written.product_ids, IdRange { min: 1, max: 7 });
        assert_eq!(read(&path).expect("read"), written);
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).expect("file")).expect("json");
        assert_eq!(json["customer_ids"]["max"], 5);
        assert_eq!(json["targets"]["pg"]["bytes_on_disk"], 8192);
    }

    #[test]
    fn a_second_target_of_the_same_data_is_added_and_other_data_replaces_the_file() {
        let path = scratch("merge");
        let mut first = Manifest::new(&profile(1), 600);
        first.targets.insert("pg".into(), record("postgres://h:1/db"));
        first.write_merged(&path, &[]).expect("write");

        let mut same = Manifest::new(&profile(1), 600);
        same.targets.insert("mongo".into(), record("mongodb://h:2/db"));
        let merged = same.write_merged(&path, &[]).expect("write");
        assert_eq!(merged.targets.keys().collect::<Vec<_>>(), ["mongo", "pg"]);

        let mut other = Manifest::new(&profile(2), 600);
        other.targets.insert("mongo".into(), record("mongodb://h:2/db"));
        let replaced = other.write_merged(&path, &[]).expect("write");
        assert_eq!(replaced.targets.keys().collect::<Vec<_>>(), ["mongo"], "pg holds seed 1, not seed 2");
    }
}
