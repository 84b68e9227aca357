//! `orders-bench seed`: writes the same generated orders (ids, contents, timestamps) into
//! PostgreSQL (`postgres`: binary `COPY`, secondary indexes built after, `ANALYZE`) and MongoDB
//! (`mongo`: unordered `insert_many` batches, indexes built after), both at once with
//! `--target both`, then records the data set in the manifest. A target that already holds
//! orders is refused unless `--reset` is given, so the two databases never silently differ.

mod feed;
mod mongo;
mod postgres;
mod progress;

use anyhow::{Result, bail};
use clap::Args;
use orders_bench_model::target::Target;
use orders_core::Timestamp;
use orders_dataset::Profile;
use orders_dataset::manifest::{Manifest, TargetRecord};
use std::path::PathBuf;
use std::str::FromStr;

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
    /// Which database(s) to seed: pg, mongo, or both (loaded at the same time).
    #[arg(long, default_value = "both")]
    pub target: Targets,
    /// Empty the table / drop the collection first (otherwise a target holding orders is refused).
    #[arg(long)]
    pub reset: bool,
    #[command(flatten)]
    pub databases: crate::databases::Databases,
    /// Where to write the data set manifest that the k6 script and the bench runner read.
    #[arg(long, default_value = ".local/dataset.json")]
    pub manifest: PathBuf,
}

/// `--target`: one target by its name, or `both` (also `all`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Targets(Vec<Target>);

impl Targets {
    pub fn all() -> Self {
        Self(Target::ALL.to_vec())
    }

    pub fn includes(&self, target: Target) -> bool {
        self.0.contains(&target)
    }

    fn label(&self) -> String {
        let labels: Vec<&str> = self.0.iter().map(|t| t.label()).collect();
        if labels.len() > 1 { format!("{} at once", labels.join(" and ")) } else { labels.concat() }
    }
}

impl FromStr for Targets {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "both" | "all" => Ok(Self::all()),
            name => Target::from_name(name).map(|t| Self(vec![t])).ok_or_else(|| {
                let names: Vec<&str> = Target::ALL.iter().map(|t| t.name()).collect();
                format!("expected {} or both", names.join(", "))
            }),
        }
    }
}

impl SeedArgs {
    fn profile(&self) -> Profile {
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

/// What one target's load did, for the final line and the manifest.
pub struct Loaded {
    pub target: Target,
    pub database: String,
    pub orders: u64,
    pub seconds: f64,
    /// (phase, seconds), in the order they ran.
    pub phases: Vec<(&'static str, f64)>,
    pub bytes_on_disk: u64,
    /// How `bytes_on_disk` was measured.
    pub size_source: String,
}

impl Loaded {
    fn docs_per_sec(&self) -> f64 {
        self.orders as f64 / self.seconds.max(1e-9)
    }

    fn line(&self) -> String {
        let phases: Vec<String> = self.phases.iter().map(|(name, s)| format!("{name} {s:.1} s")).collect();
        format!(
            "{:<5} {} orders in {:.1} s = {:.0} docs/s ({}); on disk {:.1} MiB ({}) [{}]",
            self.target,
            self.orders,
            self.seconds,
            self.docs_per_sec(),
            phases.join(", "),
            self.bytes_on_disk as f64 / 1_048_576.0,
            self.size_source,
            self.database,
        )
    }

    fn record(&self) -> TargetRecord {
        TargetRecord {
            database: self.database.clone(),
            seeded_at: Timestamp::now(),
            seconds: self.seconds,
            docs_per_sec: self.docs_per_sec(),
            bytes_on_disk: self.bytes_on_disk,
        }
    }
}

pub async fn run(args: SeedArgs) -> Result<()> {
    let profile = args.profile();
    profile.check()?;
    let approx_doc_bytes = profile.approx_doc_bytes()?;
    let wants_pg = args.target.includes(Target::Pg);
    let wants_mongo = args.target.includes(Target::Mongo);

    // Connect to every target and check it before loading any, so a refusal changes nothing.
    let pg = if wants_pg { Some(postgres::PgTarget::connect(&args.databases.database_url).await?) } else { None };
    let mongo = if wants_mongo {
        Some(mongo::MongoTarget::connect(&args.databases.mongodb_uri, &args.databases.mongodb_db).await?)
    } else {
        None
    };
    if !args.reset {
        let mut refusals = Vec::new();
        if let Some(pg) = &pg {
            refusals.extend(pg.refusal().await?);
        }
        if let Some(mongo) = &mongo {
            refusals.extend(mongo.refusal().await?);
        }
        if !refusals.is_empty() {
            bail!("refusing to seed: {}", refusals.join("; "));
        }
    }

    eprintln!(
        "seeding {} orders (seed {}, {} items, note {} bytes, ~{approx_doc_bytes} bytes each) into {}",
        profile.orders,
        profile.seed,
        profile.items,
        profile.note_bytes,
        args.target.label()
    );
    let bars = progress::Bars::new();
    let pg_load = async {
        match pg {
            Some(pg) => pg.load(profile, args.reset, bars.add(Target::Pg.name(), profile.orders)).await.map(Some),
            None => Ok(None),
        }
    };
    let mongo_load = async {
        match mongo {
            Some(mongo) => {
                mongo.load(profile, args.reset, bars.add(Target::Mongo.name(), profile.orders)).await.map(Some)
            }
            None => Ok(None),
        }
    };
    let (pg_loaded, mongo_loaded) = tokio::join!(pg_load, mongo_load);

    // The manifest lists the targets that now hold the data set; a failed one is dropped from it.
    let mut manifest = Manifest::new(&profile, approx_doc_bytes);
    let mut failures = Vec::new();
    let mut failed_targets = Vec::new();
    for (target, result) in [(Target::Pg, pg_loaded), (Target::Mongo, mongo_loaded)] {
        match result {
            Ok(Some(loaded)) => {
                println!("{}", loaded.line());
                manifest.targets.insert(loaded.target.name().to_owned(), loaded.record());
            }
            Ok(None) => {}
            Err(error) => {
                failures.push(format!("{target}: {error:#}"));
                failed_targets.push(target.name());
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

/// The refusal of one target, in the words the user needs.
fn refusal_message(what: &str, database: &str) -> String {
    format!(
        "{what} in {database} already holds orders; seeding on top of them would leave data the manifest does not \
         describe, so pass --reset to empty it first"
    )
}
