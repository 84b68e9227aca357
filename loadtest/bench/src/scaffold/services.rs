//! The services as `demo` and `experiment` run them: the release binaries (built with cargo
//! together with `orders-bench` itself, so nothing is compiled twice; or taken from a folder), each
//! started on a free loopback port in its own process group with its log in the run's folder, and
//! stopped with SIGTERM (SIGKILL after ten seconds). A `Service` that is dropped without being
//! stopped is killed, so an error or a Ctrl-C never leaves one running.

use anyhow::{Context, Result, bail};
use orders_bench_engines::{hybrid, mongo, postgres};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

/// The packages the demo builds. `orders-bench` is among them although it is already built: cargo
/// unifies features over the packages it is asked for, and `orders-pg` + `orders-mongo` alone
/// resolve their shared dependencies (hyper, tokio, ...) with fewer features than `orders-bench`'s
/// own build did, so without it some twenty crates would be compiled a second time. With it, the
/// selection resolves exactly as `cargo run --release -p orders-bench` did and only the service
/// binaries are compiled and linked (`scripts/check-build-once.sh` keeps it so). The hybrid's
/// service is built whatever `--targets` says: one selection, one check, and once built it costs
/// nothing.
pub const BUILD_PACKAGES: [&str; 4] = ["orders-bench", postgres::SERVICE, mongo::SERVICE, hybrid::SERVICE];

/// Where the service binaries come from (`demo` and `experiment`): a folder, beside this
/// binary, or built.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Binaries {
    /// Use the service binaries (orders-pg, orders-mongo, orders-pg-hybrid) in this folder instead
    /// of building them.
    #[arg(long = "bin-dir", conflicts_with = "no_build")]
    pub bin_dir: Option<PathBuf>,
    /// Do not build: use the service binaries next to this orders-bench binary.
    #[arg(long = "no-build")]
    pub no_build: bool,
}

impl Binaries {
    /// The folder of the service binaries: `--bin-dir`, beside this binary (`--no-build`), or
    /// built in `repo`.
    pub async fn folder(&self, repo: &Path) -> Result<PathBuf> {
        match (&self.bin_dir, self.no_build) {
            (Some(dir), _) => Ok(dir.clone()),
            (None, true) => beside_this_binary(),
            (None, false) => build(repo).await,
        }
    }
}

/// Runs `cargo build --release` of `BUILD_PACKAGES` in the repository and returns the folder
/// holding the binaries.
pub async fn build(repo: &Path) -> Result<PathBuf> {
    let selection: Vec<String> = BUILD_PACKAGES.iter().flat_map(|p| ["-p".to_owned(), (*p).to_owned()]).collect();
    eprintln!("demo: building the services (cargo build --release {})", selection.join(" "));
    let mut cargo = std::process::Command::new("cargo");
    without_cargo_run_vars(&mut cargo);
    let status = tokio::process::Command::from(cargo)
        .arg("build")
        .arg("--release")
        .args(&selection)
        .current_dir(repo)
        .stdin(Stdio::null())
        .status()
        .await
        .context("running cargo (pass --bin-dir to use built binaries instead)")?;
    if !status.success() {
        bail!("cargo build --release {} failed ({status})", selection.join(" "));
    }
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| repo.join("target"), PathBuf::from);
    Ok(crate::repo::absolute(&target).join("release"))
}

/// A variable `cargo run` gives the program it runs (`CARGO_PKG_NAME`, `CARGO_MANIFEST_DIR`, ...).
/// They must not reach the demo's own `cargo build` (nor the end-to-end tests' `ensure_services`):
/// ring's build script asks to run again when
/// `CARGO_PKG_NAME`, `CARGO_MANIFEST_DIR` or `OUT_DIR` differ from the build before, which under
/// `cargo run` they always do, and that compiled ring, rustls, the mongodb driver and everything on
/// top of them a second time (3 to 4 minutes on two cores).
pub fn without_cargo_run_vars(command: &mut std::process::Command) {
    for (name, _) in std::env::vars_os() {
        if name.to_str().is_some_and(set_by_cargo_run) {
            command.env_remove(&name);
        }
    }
}

fn set_by_cargo_run(name: &str) -> bool {
    name.starts_with("CARGO_PKG_")
        || matches!(
            name,
            "CARGO_MANIFEST_DIR"
                | "CARGO_MANIFEST_PATH"
                | "CARGO_MANIFEST_LINKS"
                | "CARGO_CRATE_NAME"
                | "CARGO_BIN_NAME"
                | "CARGO_PRIMARY_PACKAGE"
                | "OUT_DIR"
        )
}

/// The folder of the running orders-bench, where cargo puts the service binaries too.
pub fn beside_this_binary() -> Result<PathBuf> {
    let exe = std::env::current_exe().context("locating orders-bench")?;
    exe.parent().map(Path::to_path_buf).context("orders-bench has no folder")
}

pub fn binary(dir: &Path, name: &str) -> Result<PathBuf> {
    let path = dir.join(name);
    if !path.is_file() {
        bail!("{} does not exist: build it (cargo build --release -p {name}) or pass --bin-dir", path.display());
    }
    Ok(path)
}

/// An environment variable of a service.
pub type Var = (String, String);

/// A service's environment on the local stack: what its backend sets (its database), the worker
/// threads and the marker of the run that started it.
pub fn local_env(backend: &dyn orders_bench_engines::Backend, threads: &str, marker: &Var) -> Vec<Var> {
    let mut env = backend.service_env();
    env.extend([("WORKER_THREADS".to_owned(), threads.to_owned()), marker.clone()]);
    env
}

/// Starts the service `name` from `bin_dir` with `env`, its log `logs/<name>.log`.
pub fn start_in(bin_dir: &Path, logs: &Path, name: &str, env: &[(String, String)]) -> Result<Service> {
    let binary = binary(bin_dir, name)?;
    Service::start(name, &binary, env, logs.join(format!("{name}.log")))
}

/// Waits until `client`'s services are ready (a minute at most); if they are not, the error
/// carries each service's state and the tail of its log.
pub async fn wait_ready<'a>(
    client: &crate::diagnostics::Client,
    services: impl IntoIterator<Item = &'a mut Service>,
) -> Result<()> {
    if let Err(error) = client.wait_ready(Duration::from_secs(60)).await {
        let logs: Vec<String> = services
            .into_iter()
            .map(|s| {
                let state = s.exited().unwrap_or_else(|| "running".into());
                format!("{} ({state}):\n{}", s.name, s.log_tail())
            })
            .collect();
        bail!("{error:#}\n{}", logs.join("\n"));
    }
    Ok(())
}

pub struct Service {
    pub name: String,
    pub url: String,
    pub log: PathBuf,
    binary: PathBuf,
    env: Vec<(String, String)>,
    port: u16,
    child: Option<tokio::process::Child>,
}

impl Service {
    /// Starts `binary` on a free port with `env` (plus `BIND_ADDR`, `RUST_LOG=warn`).
    pub fn start(name: &str, binary: &Path, env: &[(String, String)], log: PathBuf) -> Result<Self> {
        let port = crate::k6::free_port()?;
        let mut service = Self {
            name: name.to_owned(),
            url: format!("http://127.0.0.1:{port}"),
            log,
            binary: binary.to_path_buf(),
            env: env.to_vec(),
            port,
            child: None,
        };
        service.spawn()?;
        Ok(service)
    }

    fn spawn(&mut self) -> Result<()> {
        let (binary, env, log, port) = (&self.binary, &self.env, &self.log, self.port);
        let out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .with_context(|| format!("creating {}", log.display()))?;
        let err = out.try_clone().context("service log")?;
        let mut command = std::process::Command::new(binary);
        command
            .env("BIND_ADDR", format!("127.0.0.1:{port}"))
            .env("RUST_LOG", "warn")
            .env("LOG_FORMAT", "text")
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .process_group(0);
        let child = tokio::process::Command::from(command)
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting {}", binary.display()))?;
        self.child = Some(child);
        Ok(())
    }

    /// The process id while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref()?.id()
    }

    /// The exit status if it has already stopped (it should not have).
    pub fn exited(&mut self) -> Option<String> {
        let status = self.child.as_mut()?.try_wait().ok()??;
        Some(status.to_string())
    }

    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(15)..].join("\n")
    }

    /// SIGTERM, then SIGKILL if it has not exited within ten seconds.
    pub async fn stop(&mut self) {
        let Some(mut child) = self.child.take() else { return };
        if let Some(pid) = child.id() {
            let _ = tokio::process::Command::new("kill").args(["-TERM", &pid.to_string()]).status().await;
            if tokio::time::timeout(Duration::from_secs(10), child.wait()).await.is_ok() {
                return;
            }
        }
        let _ = child.kill().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_build_once_check_compares_the_selection_the_demo_builds() {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/check-build-once.sh");
        let text = std::fs::read_to_string(&script).expect("scripts/check-build-once.sh");
        let selection: Vec<String> = BUILD_PACKAGES.iter().map(|p| format!("-p {p}")).collect();
        assert!(
            text.contains(&format!("(resolved {})", selection.join(" "))),
            "{} checks another selection",
            script.display()
        );
    }

    /// cargo runs tests, like `cargo run` runs the demo, with the package's variables set: the
    /// command the demo builds with must reach cargo without them, and with the user's own.
    #[test]
    fn the_demo_builds_without_the_variables_cargo_run_gave_it() {
        let inherited = |name: &str| std::env::var_os(name).is_some();
        assert!(inherited("CARGO_PKG_NAME") && inherited("CARGO_MANIFEST_DIR"), "run under cargo, as the demo is");
        let mut env = std::process::Command::new("env");
        without_cargo_run_vars(&mut env);
        let output = env.env("CARGO_TARGET_DIR", "/kept").output().expect("run env");
        let seen = String::from_utf8_lossy(&output.stdout);
        let names: Vec<&str> = seen.lines().filter_map(|l| l.split_once('=').map(|(n, _)| n)).collect();
        for gone in ["CARGO_PKG_NAME", "CARGO_PKG_VERSION_MAJOR", "CARGO_MANIFEST_DIR"] {
            assert!(!names.contains(&gone), "{gone} reached the build: {names:?}");
        }
        assert!(names.contains(&"PATH") && names.contains(&"CARGO_TARGET_DIR"), "{names:?}");
    }
}
