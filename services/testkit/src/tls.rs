//! TLS on real servers for the tests that prove it: `TestCerts` makes a throwaway CA and server
//! certificates with `infra/local/tls.sh` (the openssl command) in a temporary folder removed on
//! drop, and starts private servers of `faults::databases` that accept TLS only: a PostgreSQL with
//! `ssl = on` and a `hostssl`-only `pg_hba.conf`, a mongod with `--tlsMode requireTLS`. Without
//! the openssl command the tests skip, and say so. The local stack's PostgreSQL wheel is built
//! without TLS, so the PostgreSQL here is the first built with OpenSSL of `$PG_BIN` and Debian's
//! (`/usr/lib/postgresql/N/bin`; `infra/local/tls.sh install` installs the pinned one).

use crate::faults::databases::temp_dir;
use crate::faults::{PrivateMongo, PrivatePostgres};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A CA, the server certificates it signed, and a CA that signed none (`infra/local/tls.sh`).
pub struct TestCerts {
    dir: PathBuf,
}

impl TestCerts {
    /// Fresh certificates, or `None` (with a message) when the openssl command is missing.
    pub fn make() -> Option<Self> {
        if Command::new("openssl").arg("version").output().is_err() {
            eprintln!("SKIPPED: the openssl command is missing, so no certificates (Debian: apt-get install openssl)");
            return None;
        }
        let dir = temp_dir("orders-tls");
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../infra/local/tls.sh");
        let output = Command::new("bash").arg(&script).arg("certs").arg(&dir).output().expect("run infra/local/tls.sh");
        assert!(output.status.success(), "tls.sh: {}", String::from_utf8_lossy(&output.stderr));
        Some(Self { dir })
    }

    /// A file of the set: `ca.crt`, `other-ca.crt`, `server.crt` ...
    pub fn file(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// A PostgreSQL that speaks TLS with certificate `name` (`server`: for 127.0.0.1 and
    /// localhost; `wrong-name`: for another name) and refuses any session without it.
    pub fn postgres(&self, name: &str) -> PrivatePostgres {
        let conf = "ssl = on\nssl_cert_file = 'server.crt'\nssl_key_file = 'server.key'\n";
        let hba = "hostssl all all 127.0.0.1/32 trust\n";
        let (cert, key) = (self.file(&format!("{name}.crt")), self.file(&format!("{name}.key")));
        PrivatePostgres::start_with(
            postgres_with_tls(),
            conf,
            Some(hba),
            &[(&cert, "server.crt"), (&key, "server.key")],
        )
    }

    /// A mongod that requires TLS (server certificate for 127.0.0.1; no client certificate asked).
    pub fn mongo(&self) -> PrivateMongo {
        let (pem, ca) = (self.file("server.pem"), self.file("ca.crt"));
        let (pem, ca) = (pem.to_str().expect("UTF-8 path"), ca.to_str().expect("UTF-8 path"));
        PrivateMongo::start_with(&[
            "--tlsMode",
            "requireTLS",
            "--tlsCertificateKeyFile",
            pem,
            "--tlsCAFile",
            ca,
            "--tlsAllowConnectionsWithoutCertificates",
        ])
    }
}

/// The first folder of PostgreSQL binaries built with OpenSSL: `$PG_BIN`, then Debian's, newest
/// first.
pub fn postgres_with_tls() -> PathBuf {
    let mut candidates: Vec<PathBuf> = std::env::var_os("PG_BIN").map(PathBuf::from).into_iter().collect();
    let mut debian: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path().join("bin"))
        .collect();
    debian.sort_by_key(|path| {
        std::cmp::Reverse(path.parent().and_then(|p| p.file_name()).and_then(|n| n.to_str()?.parse::<u32>().ok()))
    });
    candidates.extend(debian);
    let with_openssl = |bin: &PathBuf| {
        Command::new(bin.join("pg_config"))
            .arg("--configure")
            .output()
            .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).contains("openssl"))
    };
    candidates.into_iter().find(with_openssl).unwrap_or_else(|| {
        panic!("no PostgreSQL built with OpenSSL ($PG_BIN's wheel has no TLS): bash infra/local/tls.sh install")
    })
}

impl Drop for TestCerts {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
