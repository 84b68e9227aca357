//! Running `loadtest/k6/orders.js`: which k6 binary (`--k6`/`$K6`, the local stack's
//! `.venv/bin/k6`, or `k6` on the `PATH`), its environment (targets, mix, staircase, manifest,
//! summary path), and the process itself: its own process group (so a Ctrl-C at the terminal
//! reaches orders-bench, which then stops it), killed if dropped, output in a log file, REST API on
//! a free loopback port for live figures (`live`). `summary` reads what it writes at the end.

pub mod live;
pub mod merge;

use anyhow::{Context, Result, bail};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;

/// The k6 binary: `explicit` (from `--k6` or `$K6`), else `<repo>/.venv/bin/k6`, else the `PATH`.
pub fn binary(explicit: Option<&Path>, repo: Option<&Path>) -> Result<PathBuf> {
    if let Some(path) = explicit {
        if path.is_file() {
            return Ok(path.to_path_buf());
        }
        bail!("k6 binary {} does not exist", path.display());
    }
    if let Some(venv) = repo.map(|r| r.join(".venv/bin/k6")).filter(|p| p.is_file()) {
        return Ok(venv);
    }
    std::env::var_os("PATH")
        .and_then(|paths| std::env::split_paths(&paths).map(|dir| dir.join("k6")).find(|p| p.is_file()))
        .context("no k6 binary: pass --k6 or set K6, or install the local stack (bash infra/local/stack.sh install)")
}

/// A loopback port nobody listens on right now.
pub fn free_port() -> Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").context("finding a free port")?;
    Ok(listener.local_addr().context("finding a free port")?.port())
}

pub struct Launch<'a> {
    pub binary: &'a Path,
    pub script: &'a Path,
    pub env: Vec<(String, String)>,
    /// stdout and stderr of k6.
    pub log: &'a Path,
    /// Further flags of `k6 run` (an execution segment, `--paused`).
    pub args: Vec<String>,
}

pub struct Running {
    pub child: tokio::process::Child,
    pub api: live::Api,
}

pub fn spawn(launch: Launch<'_>) -> Result<Running> {
    let port = free_port()?;
    let log = std::fs::File::create(launch.log).with_context(|| format!("creating {}", launch.log.display()))?;
    let log_err = log.try_clone().context("k6 log")?;
    let mut command = std::process::Command::new(launch.binary);
    command
        .args(["run", "--no-usage-report", "--no-color", "--quiet", "--address"])
        .arg(format!("127.0.0.1:{port}"))
        .args(&launch.args)
        .arg(launch.script)
        .envs(launch.env)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log_err)
        .process_group(0);
    let child = tokio::process::Command::from(command)
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting {}", launch.binary.display()))?;
    Ok(Running { child, api: live::Api::new(port)? })
}
