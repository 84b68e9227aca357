//! `orders-bench seed`: writes the same generated orders (ids, contents, timestamps) into
//! PostgreSQL (`postgres`: binary `COPY`, secondary indexes built after, `ANALYZE`) and MongoDB
//! (`mongo`: unordered `insert_many` batches, indexes built after), both at once with
//! `--target both`, then records the data set in the manifest. A target that already holds
//! orders is refused unless `--reset` is given, so the two databases never silently differ.

mod progress;

use anyhow::{Result, bail};
use clap::Args;
use orders_bench_engines::{self as backend, Backend, Loaded};
use orders_core::Timestamp;
use orders_dataset::Profile;
use orders_dataset::manifest::{Manifest, TargetRecord};
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;

#[derive(Debug, Clone, Args)]
pub struct SeedArgs {
    /// Seed of the generator: the same seed and profile give the same orders on every machine.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Number of orders; their ids are 1..=N.
    #[arg(long, default_value_t = 1_000_000)]
    pub orders: u64,
    /// Number of customers (ids 1..=N), each order's drawn at random [default: orders / 10, so
    /// about 10 orders per customer as in study S1]
    #[arg(long)]
    pub customers: Option<u64>,
    /// Number of products (ids 1..=N), an order's items distinct ones drawn at random [default:
    /// orders / 10, so a product search matches about 3 × 10 = 30 orders as in study S1]
    #[arg(long)]
    pub products: Option<u64>,
    /// Items per order: 3 gives study S1's ~600-byte orders, 40 its big ones.
    #[arg(long, default_value_t = 3)]
    pub items: u32,
    /// Adds a note of exactly this many bytes of text to every order (study S2's big documents).
    #[arg(long = "note-bytes", default_value_t = 0)]
    pub note_bytes: u32,
    /// Which database(s) to seed: one target's name (pg, mongo; pgh with `--database pgh=URL`), or
    /// `all` of them, loaded at the same time (`both` is the same).
    #[arg(long, default_value = "all")]
    pub target: Selection,
    /// Empty the table / drop the collection first (otherwise a target holding orders is refused).
    #[arg(long)]
    pub reset: bool,
    #[command(flatten)]
    pub databases: orders_bench_engines::databases::Databases,
    /// Where to write the data set manifest that the k6 script and the bench runner read.
    #[arg(long, default_value = ".local/dataset.json")]
    pub manifest: PathBuf,
}

/// `--target`: one database by its target's name, or `all` (also `both`) for every one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection(Option<String>);

impl Selection {
    pub fn all() -> Self {
        Self(None)
    }

    fn includes(&self, name: &str) -> bool {
        self.0.as_deref().is_none_or(|chosen| chosen == name)
    }
}

impl FromStr for Selection {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "both" | "all" => Ok(Self::all()),
            name if !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric()) => Ok(Self(Some(name.into()))),
            _ => Err("expected a target's name (pg, mongo, pgh) or all".into()),
        }
    }
}

impl SeedArgs {
    pub fn profile(&self) -> Profile {
        let per_ten = (self.orders / 10).max(1);
        Profile {
            seed: self.seed,
            orders: self.orders,
            customers: self.customers.unwrap_or(per_ten),
            products: self.products.unwrap_or(per_ten.max(u64::from(self.items))),
            items: self.items,
            note_bytes: self.note_bytes,
        }
    }
}

/// The seeder's line for one database: "pg    2000 orders in 1.2 s = ...".
fn line(name: &str, loaded: &Loaded) -> String {
    let phases: Vec<String> =
        loaded.phases.iter().map(|(name, s)| format!("{name} {:.1} s", s.as_secs_f64())).collect();
    format!(
        "{:<5} {} orders in {:.1} s = {:.0} docs/s ({}); on disk {:.1} MiB ({}) [{}]",
        name,
        loaded.orders,
        loaded.seconds.as_secs_f64(),
        docs_per_sec(loaded),
        phases.join(", "),
        loaded.bytes_on_disk as f64 / 1_048_576.0,
        loaded.size_source,
        loaded.database,
    )
}

fn docs_per_sec(loaded: &Loaded) -> f64 {
    loaded.orders as f64 / loaded.seconds.as_secs_f64().max(1e-9)
}

fn record(loaded: &Loaded) -> TargetRecord {
    TargetRecord {
        database: loaded.database.clone(),
        seeded_at: Timestamp::now(),
        seconds: loaded.seconds.as_secs_f64(),
        docs_per_sec: docs_per_sec(loaded),
        bytes_on_disk: loaded.bytes_on_disk,
    }
}

pub async fn run(args: SeedArgs) -> Result<()> {
    let profile = args.profile();
    profile.check()?;
    let approx_doc_bytes = profile.approx_doc_bytes()?;
    let chosen: Vec<Arc<dyn Backend>> =
        backend::all(&args.databases).into_iter().filter(|b| args.target.includes(&b.info().name)).collect();
    if chosen.is_empty() {
        let names: Vec<String> = backend::all(&args.databases).iter().map(|b| b.info().name).collect();
        bail!("--target: no database is called that (known: {}, or both)", names.join(", "));
    }

    // Connect to every target and check it before loading any, so a refusal changes nothing.
    let mut seeders = Vec::new();
    for backend in &chosen {
        seeders.push((backend.info(), backend.seeder().await?));
    }
    if !args.reset {
        let mut refusals = Vec::new();
        for (_, seeder) in &seeders {
            refusals.extend(seeder.refusal().await?);
        }
        if !refusals.is_empty() {
            bail!("refusing to seed: {}", refusals.join("; "));
        }
    }

    let labels: Vec<&str> = seeders.iter().map(|(info, _)| info.label.as_str()).collect();
    eprintln!(
        "seeding {} orders (seed {}, {} items, note {} bytes, ~{approx_doc_bytes} bytes each) into {}",
        profile.orders,
        profile.seed,
        profile.items,
        profile.note_bytes,
        if labels.len() > 1 { format!("{} at once", labels.join(" and ")) } else { labels.concat() }
    );
    let bars = progress::Bars::new();
    let loads = seeders.into_iter().map(|(info, seeder)| {
        let bar = bars.add(&info.name, profile.orders);
        async move { (info.name, seeder.load(profile, args.reset, bar).await) }
    });
    let loaded = futures_util::future::join_all(loads).await;

    // The manifest lists the targets that now hold the data set; a failed one is dropped from it.
    let mut manifest = Manifest::new(&profile, approx_doc_bytes);
    let mut failures = Vec::new();
    let mut failed_targets = Vec::new();
    for (name, result) in &loaded {
        match result {
            Ok(loaded) => {
                println!("{}", line(name, loaded));
                manifest.targets.insert(name.clone(), record(loaded));
            }
            Err(error) => {
                failures.push(format!("{name}: {error:#}"));
                failed_targets.push(name.as_str());
            }
        }
    }
    let manifest = manifest.write_merged(&args.manifest, &failed_targets)?;
    let targets: Vec<&str> = manifest.targets.keys().map(String::as_str).collect();
    println!("manifest {} (data set held by: {})", args.manifest.display(), targets.join(", "));
    if !failures.is_empty() {
        bail!("seeding failed: {}", failures.join("; "));
    }
    Ok(())
}
