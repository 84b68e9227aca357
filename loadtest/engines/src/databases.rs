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
/// handle beside the client (`let (client, _connection) = ...`). Over TLS when the URL's `sslmode`
/// asks for it, with the services' own connector (`orders_pg::tls`: `sslrootcert`, `verify-full`),
/// so the runner's sessions on the droplets are encrypted and verified like the services'.
pub async fn pg_session(url: &str) -> anyhow::Result<(tokio_postgres::Client, tokio::task::JoinHandle<()>)> {
    use anyhow::Context as _;
    let (plain, tls) = orders_pg::tls::split_url(url).map_err(anyhow::Error::msg)?;
    let mut config: tokio_postgres::Config =
        plain.parse().with_context(|| format!("{} is not a PostgreSQL URL", redact(url)))?;
    config.ssl_mode(orders_pg::tls::SslMode::driver_mode(tls.mode));
    let connected = match orders_pg::tls::connector(&tls).map_err(anyhow::Error::msg)? {
        Some(tls) => config.connect(tls).await.map(|(client, connection)| (client, spawn_connection(connection))),
        None => config
            .connect(tokio_postgres::NoTls)
            .await
            .map(|(client, connection)| (client, spawn_connection(connection))),
    };
    connected.with_context(|| format!("connecting to {}", redact(url)))
}

/// `url` as the driver's settings, without its TLS words (`sslmode=verify-full` and `sslrootcert`,
/// which the driver does not know: `pg_session` reads them).
pub fn pg_config(url: &str) -> anyhow::Result<tokio_postgres::Config> {
    use anyhow::Context as _;
    let (plain, _tls) = orders_pg::tls::split_url(url).map_err(anyhow::Error::msg)?;
    plain.parse().with_context(|| format!("{} is not a PostgreSQL URL", redact(url)))
}

/// A connection's task, whichever stream (plain or TLS) it runs over.
fn spawn_connection<F>(connection: F) -> tokio::task::JoinHandle<()>
where
    F: Future + Send + 'static,
    F::Output: Send,
{
    tokio::spawn(async move {
        let _ = connection.await;
    })
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
    fn the_runners_urls_may_carry_libpqs_tls_words() {
        let url = "postgres://orders_loader:pw@10.0.0.5:5432/orders?sslmode=verify-full&sslrootcert=/etc/ca.crt";
        let config = pg_config(url).expect("verify-full is not the driver's word, and is taken out");
        assert_eq!((config.get_dbname(), config.get_ports()), (Some("orders"), &[5432][..]));
        assert!(pg_config("postgres://h/orders?sslmode=verify-everything").is_err());
    }

    #[tokio::test]
    async fn verify_full_without_a_ca_file_is_refused_before_any_connection() {
        // Refused before dialling (port 1 of loopback would refuse a connection with another error).
        let error = pg_session("postgres://u@127.0.0.1:1/orders?sslmode=verify-full").await.expect_err("no CA file");
        assert!(format!("{error:#}").contains("needs sslrootcert"), "{error:#}");
    }

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
