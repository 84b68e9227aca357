//! The writes' pool and, with `READ_DATABASE_URL`, a second one for reads (a replicated
//! deployment's standbys): get and both lists run on `reads()`, every write and `/diagnostics`'s
//! counters on `writes`. Shared by orders-pg and orders-pg-hybrid; `/diagnostics` says where the
//! reads went (`reads`: the server's own word, read on a connection of the reads' pool).

use crate::config::PgConfig;
use crate::errors::from_db;
use crate::pool::{PgConnection, PgPool, connection_config};
use crate::replication::Reads;
use orders_core::{PoolStatus, StoreError};

pub struct Pools {
    pub writes: PgPool,
    reads: Option<PgPool>,
}

impl Pools {
    /// The writes' pool over `writes` (from `connection_config`), and the reads' pool when
    /// `config` has a `read_database_url`, with the same settings and pool size.
    pub fn new(writes: PgConnection, config: &PgConfig, application_name: &str) -> Result<Self, StoreError> {
        let reads = match &config.read_database_url {
            None => None,
            Some(url) => {
                let read_config = PgConfig { database_url: url.clone(), ..config.clone() };
                let connection = connection_config(&read_config, &format!("{application_name}-reads"))?;
                Some(PgPool::new(connection, &read_config)?)
            }
        };
        Ok(Self { writes: PgPool::new(writes, config)?, reads })
    }

    /// The pool reads run on.
    pub fn reads(&self) -> &PgPool {
        self.reads.as_ref().unwrap_or(&self.writes)
    }

    pub async fn reads_report(&self) -> Reads {
        let Some(reads) = &self.reads else { return Reads { pool: "DATABASE_URL".into(), ..Reads::default() } };
        let server = match reads.connection().await {
            Ok(client) => crate::replication::read(&client).await.map_err(|e| from_db(e).to_string()),
            Err(error) => Err(error.to_string()),
        };
        let (server, error) = match server {
            Ok(server) => (Some(server), None),
            Err(error) => (None, Some(error)),
        };
        Reads { pool: "READ_DATABASE_URL".into(), server, error }
    }

    /// Both pools' connections together: the gauges and the load shedding see every connection.
    pub fn status(&self) -> PoolStatus {
        let writes = self.writes.status();
        let Some(reads) = &self.reads else { return writes };
        let reads = reads.status();
        PoolStatus {
            max_size: writes.max_size + reads.max_size,
            size: writes.size + reads.size,
            available: writes.available + reads.available,
            waiting: writes.waiting + reads.waiting,
        }
    }
}
