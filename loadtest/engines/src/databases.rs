//! `Databases`: where the databases are, as `seed` and `round` both take them (flags or the same
//! environment variables the services read), so the two subcommands cannot drift apart; each
//! engine's backend reads its own. And the runner's own connections to them,
//! and another database of the same server (`with_database`).

use clap::Args;

#[derive(Debug, Clone, Default, Args)]
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
    /// Any other engine's database, `NAME=URL` (repeatable), by its target's name: where a backend
    /// without flags of its own finds its database. From the environment, several are separated by
    /// spaces (the droplets' load machines name the hybrid's there, keeping its password off every
    /// command line, as DATABASE_URL and MONGODB_URI do).
    #[arg(
        long = "database",
        env = "ORDERS_BENCH_DATABASE",
        value_delimiter = ' ',
        value_parser = parse_database,
        hide_env_values = true
    )]
    pub others: Vec<(String, String)>,
}

impl Databases {
    /// The database `--database NAME=URL` names for target `name`, if one does.
    pub fn other(&self, name: &str) -> Option<&str> {
        self.others.iter().rev().find(|(n, _)| n == name).map(|(_, url)| url.as_str())
    }
}

/// `NAME=URL`, as `--database` takes it.
pub fn parse_database(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((name, url)) if !name.is_empty() && url.contains("://") => Ok((name.to_owned(), url.to_owned())),
        _ => Err(format!("\"{text}\" is not NAME=URL, like pg2=postgres://127.0.0.1:5432/orders")),
    }
}

/// `url` with its database replaced by `name` (same server, credentials and options): the demo's
/// database on a stack server, or a server's `postgres` database to create and copy others from.
pub fn with_database(url: &str, name: &str) -> String {
    let (base, query) = url.split_once('?').map_or((url, None), |(b, q)| (b, Some(q)));
    let server = base.rsplit_once('/').map_or(base, |(server, _)| server);
    format!("{server}/{name}{}", query.map(|q| format!("?{q}")).unwrap_or_default())
}

/// A connection to PostgreSQL at `url`, whose task ends when the client is dropped: keep the
/// handle beside the client (`let (client, _connection) = ...`).
pub async fn pg_session(url: &str) -> anyhow::Result<(tokio_postgres::Client, tokio::task::JoinHandle<()>)> {
    use anyhow::Context as _;
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .with_context(|| format!("connecting to {}", redact(url)))?;
    let task = tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok((client, task))
}

/// A MongoDB client of the runner's own for `uri` (5 s to find the server).
pub async fn mongo_client(uri: &str) -> anyhow::Result<mongodb::Client> {
    use anyhow::Context as _;
    let mut options = mongodb::options::ClientOptions::parse(uri).await.context("the MongoDB URI")?;
    options.server_selection_timeout = Some(std::time::Duration::from_secs(5));
    options.app_name = Some("orders-bench".into());
    mongodb::Client::with_options(options).context("MongoDB client")
}

/// `url` without its password, for messages.
pub fn redact(url: &str) -> String {
    match url.split_once("://").and_then(|(scheme, rest)| Some((scheme, rest.split_once('@')?))) {
        Some((scheme, (credentials, host))) => {
            let user = credentials.split(':').next().unwrap_or_default();
            format!("{scheme}://{user}@{host}")
        }
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn another_database_of_the_same_server_keeps_the_server_and_the_options() {
        assert_eq!(
            with_database("postgres://postgres@127.0.0.1:55432/orders", "orders_demo"),
            "postgres://postgres@127.0.0.1:55432/orders_demo"
        );
        assert_eq!(with_database("postgres://h/orders?sslmode=disable", "x"), "postgres://h/x?sslmode=disable");
        assert_eq!(
            with_database("postgres://u:secret@127.0.0.1:55433/orders_demo", "postgres"),
            "postgres://u:secret@127.0.0.1:55433/postgres"
        );
    }
}
