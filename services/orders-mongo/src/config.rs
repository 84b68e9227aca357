//! Settings of the MongoDB service (`MONGODB_URI`, `MONGODB_DB`, `MONGO_POOL_SIZE`,
//! `MONGO_WRITE_CONCERN`, `MONGO_JOURNAL`), parsed by clap from flags or the environment next to
//! the shared `HttpConfig`. Every value is checked here, so a bad one stops start-up with clap's
//! message, which names the variable (each `value_name` is the variable's own name).

use clap::builder::BoolValueParser;
use clap::{ArgAction, Args, Parser};
use mongodb::options::{Acknowledgment, ConnectionString, WriteConcern};
use orders_http::{DatabaseLimits, HttpConfig};

/// Everything `orders-mongo` reads at start-up.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "orders-mongo",
    version,
    about = "The order service on MongoDB: the shared order HTTP API over one `orders` collection \
             (`_id` = order id), with the write concern and journaling chosen by MONGO_WRITE_CONCERN \
             and MONGO_JOURNAL. Every setting is a flag or an environment variable."
)]
pub struct Config {
    #[command(flatten)]
    pub http: HttpConfig,
    #[command(flatten)]
    pub mongo: MongoConfig,
}

#[derive(Debug, Clone, Args)]
pub struct MongoConfig {
    /// MongoDB connection string. MONGO_POOL_SIZE, MONGO_WRITE_CONCERN and MONGO_JOURNAL override
    /// the URI's `maxPoolSize`, `w` and `journal`; without `serverSelectionTimeoutMS` in the URI a
    /// request waits at most POOL_TIMEOUT_MS for a reachable server.
    #[arg(
        long = "mongodb-uri",
        env = "MONGODB_URI",
        value_name = "MONGODB_URI",
        default_value = "mongodb://127.0.0.1:27017",
        hide_env_values = true,
        value_parser = parse_uri
    )]
    pub uri: String,

    /// Database that holds the `orders` collection.
    #[arg(long = "mongodb-db", env = "MONGODB_DB", value_name = "MONGODB_DB", default_value = "orders", value_parser = parse_db_name)]
    pub db: String,

    /// Largest number of connections the driver opens per server.
    #[arg(
        long = "mongo-pool-size",
        env = "MONGO_POOL_SIZE",
        value_name = "MONGO_POOL_SIZE",
        default_value_t = 16,
        value_parser = clap::value_parser!(u32).range(1..=1000)
    )]
    pub pool_size: u32,

    /// Write concern `w` of every write: `majority`, a number of nodes from 1 to 50, or the name of
    /// a replica-set tag. (0, unacknowledged, is refused: the driver does not support it and it
    /// would make the comparison with Postgres unfair.)
    #[arg(
        long = "mongo-write-concern",
        env = "MONGO_WRITE_CONCERN",
        value_name = "MONGO_WRITE_CONCERN",
        default_value = "majority",
        value_parser = parse_acknowledgment
    )]
    pub write_concern: Acknowledgment,

    /// Write concern `j`: `true` acknowledges a write only once it is in the on-disk journal (like
    /// Postgres' `synchronous_commit=on`).
    #[arg(
        long = "mongo-journal",
        env = "MONGO_JOURNAL",
        value_name = "MONGO_JOURNAL",
        default_value = "true",
        action = ArgAction::Set,
        value_parser = BoolValueParser::new()
    )]
    pub journal: bool,

    /// `POOL_TIMEOUT_MS` and the command deadline (`maxTimeMS`), from the shared settings
    /// (`Config::store`).
    #[arg(skip)]
    pub limits: DatabaseLimits,
}

impl Config {
    /// The store's settings with the shared limits (`POOL_TIMEOUT_MS`, `REQUEST_TIMEOUT_MS`).
    pub fn store(&self) -> MongoConfig {
        MongoConfig { limits: self.http.database_limits(), ..self.mongo.clone() }
    }
}

impl MongoConfig {
    /// The write concern every write of the service carries.
    pub fn write_concern(&self) -> WriteConcern {
        WriteConcern::builder().w(self.write_concern.clone()).journal(self.journal).build()
    }

    /// `MONGO_WRITE_CONCERN` as it would be written in the environment.
    pub fn write_concern_text(&self) -> String {
        acknowledgment_text(&self.write_concern)
    }

    /// The defaults (majority, journal on, pool of 16) against `uri` and database `db`.
    pub fn new(uri: impl Into<String>, db: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            db: db.into(),
            pool_size: 16,
            write_concern: Acknowledgment::Majority,
            journal: true,
            limits: DatabaseLimits::default(),
        }
    }
}

/// `majority`, a number, or a tag name: the value `MONGO_WRITE_CONCERN` takes.
pub fn acknowledgment_text(w: &Acknowledgment) -> String {
    match w {
        Acknowledgment::Majority => "majority".into(),
        Acknowledgment::Nodes(nodes) => nodes.to_string(),
        Acknowledgment::Custom(tag) => tag.clone(),
        other => format!("{other:?}"),
    }
}

/// Only the syntax is checked here (no DNS, no connection): the driver's own parser. A
/// `mongodb+srv://` URI needs the `srv` feature (the driver's DNS resolver), which says so.
fn parse_uri(value: &str) -> Result<String, String> {
    if cfg!(not(feature = "srv")) && value.starts_with("mongodb+srv://") {
        return Err(
            "a mongodb+srv:// URI needs the driver's DNS resolver: build orders-mongo with `--features srv`".into()
        );
    }
    ConnectionString::parse(value).map(|_| value.to_owned()).map_err(|error| format!("not a MongoDB URI: {error}"))
}

/// MongoDB's naming rules for databases on Linux servers.
fn parse_db_name(value: &str) -> Result<String, String> {
    if value.is_empty() || value.len() > 63 {
        return Err("must be 1 to 63 bytes long".into());
    }
    if let Some(bad) = value.chars().find(|c| matches!(c, '/' | '\\' | '.' | ' ' | '"' | '$' | '\0')) {
        return Err(format!("must not contain {bad:?}"));
    }
    Ok(value.to_owned())
}

fn parse_acknowledgment(value: &str) -> Result<Acknowledgment, String> {
    if value == "majority" {
        return Ok(Acknowledgment::Majority);
    }
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        return match value.parse::<u32>() {
            Ok(0) => Err("0 (unacknowledged writes) is not supported; use 1..50 or majority".into()),
            Ok(nodes @ 1..=50) => Ok(Acknowledgment::Nodes(nodes)),
            _ => Err("a number of nodes must be from 1 to 50".into()),
        };
    }
    let is_tag = value.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && value.len() <= 64
        && value.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if is_tag {
        Ok(Acknowledgment::Custom(value.to_owned()))
    } else {
        Err("must be `majority`, a number of nodes from 1 to 50, or a replica-set tag name".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Config, clap::Error> {
        Config::try_parse_from(std::iter::once("orders-mongo").chain(args.iter().copied()))
    }

    #[test]
    fn write_concern_accepts_majority_nodes_and_tags() {
        assert_eq!(parse_acknowledgment("majority"), Ok(Acknowledgment::Majority));
        assert_eq!(parse_acknowledgment("1"), Ok(Acknowledgment::Nodes(1)));
        assert_eq!(parse_acknowledgment("50"), Ok(Acknowledgment::Nodes(50)));
        assert_eq!(parse_acknowledgment("eastCoast"), Ok(Acknowledgment::Custom("eastCoast".into())));
        for bad in ["", "0", "51", "99999999999", "-1", "1.5", "two words", "$where"] {
            assert!(parse_acknowledgment(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn database_names_follow_mongodb_rules() {
        assert!(parse_db_name("orders").is_ok());
        for bad in ["", "a.b", "a/b", "a b", "a$", &"x".repeat(64)] {
            assert!(parse_db_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_defaults_are_majority_with_journal_and_a_pool_of_16() {
        let config =
            parse(&["--mongodb-uri", "mongodb://127.0.0.1:27017", "--mongodb-db", "orders"]).expect("defaults");
        let concern = config.mongo.write_concern();
        assert_eq!(concern.w, Some(Acknowledgment::Majority));
        assert_eq!(concern.journal, Some(true));
        assert!(config.mongo.pool_size >= 1);
    }

    #[test]
    fn bad_values_are_errors_that_name_the_variable() {
        for (flag, value, variable) in [
            ("--mongo-write-concern", "0", "MONGO_WRITE_CONCERN"),
            ("--mongo-journal", "yes", "MONGO_JOURNAL"),
            ("--mongo-pool-size", "0", "MONGO_POOL_SIZE"),
            ("--mongo-pool-size", "1001", "MONGO_POOL_SIZE"),
            ("--mongodb-uri", "postgres://x", "MONGODB_URI"),
            ("--mongodb-db", "a.b", "MONGODB_DB"),
        ] {
            let error = parse(&[flag, value]).expect_err(value).to_string();
            assert!(error.contains(variable), "{flag} {value}: {error}");
        }
    }

    #[test]
    fn journal_is_exactly_true_or_false() {
        assert!(!parse(&["--mongo-journal", "false"]).expect("false").mongo.journal);
        assert!(parse(&["--mongo-journal", "true"]).expect("true").mongo.journal);
        assert!(parse(&["--mongo-journal", "1"]).is_err());
    }

    /// A malformed `MONGODB_URI` stops start-up with clap's message, which repeats the value:
    /// without its password (`orders_http::config::try_parse_args_from`).
    #[test]
    fn a_malformed_uri_is_shown_without_its_password() {
        for uri in ["mongodb://orders:hunter2@db:notaport", "mongodb://orders:hunter2@db:99999"] {
            let args = ["orders-mongo", "--mongodb-uri", uri];
            let error = orders_http::config::try_parse_args_from::<Config, _, _>("127.0.0.1:0", args)
                .expect_err("malformed")
                .to_string();
            assert!(error.contains("MONGODB_URI") && error.contains("orders:***@db"), "{error}");
            assert!(!error.contains("hunter2"), "{error}");
        }
    }
}
