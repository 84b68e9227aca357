//! `Databases`: where the two databases are, as `seed` and `round` both take them (flags or the
//! same environment variables the services read), so the two subcommands cannot drift apart.

use crate::target::Target;
use clap::Args;

#[derive(Debug, Clone, Args)]
pub struct Databases {
    /// PostgreSQL URL (the `orders-pg` service's database).
    #[arg(
        long = "database-url",
        env = "DATABASE_URL",
        default_value = "postgres://postgres@127.0.0.1:5432/orders",
        hide_env_values = true
    )]
    pub database_url: String,
    /// MongoDB URI (the `orders-mongo` service's server).
    #[arg(
        long = "mongodb-uri",
        env = "MONGODB_URI",
        default_value = "mongodb://127.0.0.1:27017",
        hide_env_values = true
    )]
    pub mongodb_uri: String,
    /// MongoDB database (the `orders-mongo` service's).
    #[arg(long = "mongodb-db", env = "MONGODB_DB", default_value = "orders")]
    pub mongodb_db: String,
}

impl Databases {
    /// Where `target`'s database listens (for the CPU sampler: the URL's port).
    pub fn url(&self, target: Target) -> &str {
        match target {
            Target::Pg => &self.database_url,
            Target::Mongo => &self.mongodb_uri,
        }
    }
}
