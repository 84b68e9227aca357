//! Private database servers for the fault tests: a PostgreSQL and a mongod of their own, on a
//! free loopback port with their data in a temporary folder, so a test can crash and restart
//! them without touching the shared stack other tests use at the same time. The binaries are the
//! local stack's (`$PG_BIN`, the venv's mongod); PostgreSQL runs as the stack's unprivileged
//! `orders-pg` user when the tests run as root (it refuses to run as root).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A database server a test may crash and start again.
pub trait Crashable {
    /// Kills the server the way a crash would (no clean shutdown).
    fn crash(&mut self);
    /// Starts it again on the same port and data; returns once it accepts connections.
    fn start_again(&mut self);
}

/// The system user the local stack runs PostgreSQL as when it is started as root.
const PG_OS_USER: &str = "orders-pg";

fn is_root() -> bool {
    Command::new("id").arg("-u").output().map(|out| out.stdout.starts_with(b"0\n")).unwrap_or(false)
}

/// A port that was free a moment ago (bound and released).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("a free port")
}

/// Waits until something accepts TCP connections on `port`.
pub fn wait_for_port(port: u16, within: Duration) {
    let started = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(started.elapsed() < within, "nothing listens on {port} after {within:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub(crate) fn temp_dir(prefix: &str) -> PathBuf {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    let dir = std::env::temp_dir().join(format!("{prefix}-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("create a temporary folder");
    dir
}

fn run(command: &mut Command, what: &str) {
    let output = command.stdin(Stdio::null()).output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        output.status.success(),
        "{what}: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A PostgreSQL server of the test's own (`initdb` into a temporary folder, trust auth).
pub struct PrivatePostgres {
    pub port: u16,
    bin: PathBuf,
    dir: PathBuf,
    as_user: bool,
}

impl PrivatePostgres {
    /// Initialises and starts a server; needs `$PG_BIN` (as `infra/local/stack.sh env` prints).
    pub fn start() -> Self {
        let bin = PathBuf::from(std::env::var("PG_BIN").expect("PG_BIN (eval \"$(bash infra/local/stack.sh env)\")"));
        Self::start_with(bin, "", None, &[])
    }

    /// `start` with the binaries of `bin`, more lines for `postgresql.auto.conf`, a `pg_hba.conf`
    /// of its own, and `files` copied into the data folder under the given names first (readable by
    /// the server alone, as a key file must be).
    pub fn start_with(bin: PathBuf, extra_conf: &str, hba: Option<&str>, files: &[(&Path, &str)]) -> Self {
        let dir = temp_dir("orders-faults-pg");
        let as_user = is_root();
        if as_user {
            run(
                Command::new("chown").args(["-R", &format!("{PG_OS_USER}:{PG_OS_USER}")]).arg(&dir),
                "chown the data folder",
            );
        }
        let server = Self { port: free_port(), bin, dir, as_user };
        run(
            &mut server.tool(
                "initdb",
                &["-D", &server.data(), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync"],
            ),
            "initdb",
        );
        let conf = format!(
            "listen_addresses = '127.0.0.1'\nport = {}\nunix_socket_directories = ''\nfsync = on\nsynchronous_commit = on\nmax_connections = 100\nshared_buffers = 32MB\n{extra_conf}",
            server.port
        );
        let data = server.dir.join("data");
        let mut written = vec![(data.join("postgresql.auto.conf"), conf.into_bytes())];
        if let Some(hba) = hba {
            written.push((data.join("pg_hba.conf"), hba.as_bytes().to_vec()));
        }
        for (from, name) in files {
            written.push((
                data.join(name),
                std::fs::read(from).unwrap_or_else(|e| panic!("read {}: {e}", from.display())),
            ));
        }
        for (path, bytes) in written {
            std::fs::write(&path, bytes).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
            let owner_only = std::os::unix::fs::PermissionsExt::from_mode(0o600);
            std::fs::set_permissions(&path, owner_only).unwrap_or_else(|e| panic!("chmod {}: {e}", path.display()));
            if server.as_user {
                run(Command::new("chown").arg(format!("{PG_OS_USER}:{PG_OS_USER}")).arg(&path), "chown a server file");
            }
        }
        server.pg_ctl_start();
        server
    }

    /// The URL of database `postgres` on this server.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    fn data(&self) -> String {
        self.dir.join("data").display().to_string()
    }

    fn tool(&self, name: &str, args: &[&str]) -> Command {
        let program = self.bin.join(name);
        let mut command = if self.as_user {
            let mut command = Command::new("runuser");
            command.args(["-u", PG_OS_USER, "--"]).arg(program);
            command
        } else {
            Command::new(program)
        };
        command.args(args).current_dir("/").env("LC_ALL", "C");
        command
    }

    fn pg_ctl_start(&self) {
        let log = self.dir.join("postgres.log").display().to_string();
        run(&mut self.tool("pg_ctl", &["start", "-D", &self.data(), "-l", &log, "-w", "-t", "60"]), "pg_ctl start");
        wait_for_port(self.port, Duration::from_secs(30));
    }
}

impl Crashable for PrivatePostgres {
    fn crash(&mut self) {
        run(
            &mut self.tool("pg_ctl", &["stop", "-D", &self.data(), "-m", "immediate", "-w"]),
            "pg_ctl stop -m immediate",
        );
    }

    fn start_again(&mut self) {
        self.pg_ctl_start();
    }
}

impl Drop for PrivatePostgres {
    fn drop(&mut self) {
        let _ = self.tool("pg_ctl", &["stop", "-D", &self.data(), "-m", "immediate", "-w"]).output();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A mongod of the test's own (standalone, journal on, like the stack's).
pub struct PrivateMongo {
    pub port: u16,
    binary: PathBuf,
    dir: PathBuf,
    pid: Option<u32>,
    extra_args: Vec<String>,
}

impl PrivateMongo {
    /// Starts a mongod from the project's venv (`.venv/lib/python3*/site-packages/fiftyone/db/bin`).
    pub fn start() -> Self {
        Self::start_with(&[])
    }

    /// `start` with more command-line options (say, `--tlsMode requireTLS` and its files).
    pub fn start_with(extra_args: &[&str]) -> Self {
        let mut server = Self {
            port: free_port(),
            binary: mongod_binary(),
            dir: temp_dir("orders-faults-mongo"),
            pid: None,
            extra_args: extra_args.iter().map(|arg| (*arg).to_owned()).collect(),
        };
        server.launch();
        server
    }

    pub fn uri(&self) -> String {
        format!("mongodb://127.0.0.1:{}", self.port)
    }

    fn launch(&mut self) {
        let data = self.dir.join("data");
        std::fs::create_dir_all(&data).expect("mongod data folder");
        let pidfile = self.dir.join("mongod.pid");
        let port = self.port.to_string();
        run(
            Command::new(&self.binary)
                .args([
                    "--bind_ip",
                    "127.0.0.1",
                    "--port",
                    &port,
                    "--nounixsocket",
                    "--wiredTigerCacheSizeGB",
                    "0.25",
                    "--fork",
                ])
                .arg("--dbpath")
                .arg(&data)
                .arg("--logpath")
                .arg(self.dir.join("mongod.log"))
                .arg("--logappend")
                .arg("--pidfilepath")
                .arg(&pidfile)
                .args(&self.extra_args),
            "mongod --fork",
        );
        let pid = std::fs::read_to_string(&pidfile).expect("mongod pid file");
        self.pid = pid.trim().parse().ok();
        wait_for_port(self.port, Duration::from_secs(30));
    }
}

/// The venv's mongod, found from this crate's folder (the repository root is two levels up).
fn mongod_binary() -> PathBuf {
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.venv/lib");
    let found = std::fs::read_dir(&venv).ok().into_iter().flatten().flatten().find_map(|entry| {
        let candidate = entry.path().join("site-packages/fiftyone/db/bin/mongod");
        candidate.is_file().then_some(candidate)
    });
    found.unwrap_or_else(|| panic!("no mongod under {} (run bash infra/local/stack.sh install)", venv.display()))
}

impl Crashable for PrivateMongo {
    fn crash(&mut self) {
        if let Some(pid) = self.pid.take() {
            run(Command::new("kill").args(["-KILL", &pid.to_string()]), "kill -9 mongod");
            let gone = Instant::now();
            while Path::new(&format!("/proc/{pid}")).exists() && gone.elapsed() < Duration::from_secs(10) {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }

    fn start_again(&mut self) {
        self.launch();
    }
}

impl Drop for PrivateMongo {
    fn drop(&mut self) {
        self.crash();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
