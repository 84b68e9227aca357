//! The replicated stack's members as the failover sees them: which member is each engine's primary
//! (Patroni's `/cluster` leader; MongoDB's `hello`), the process to kill inside that member's
//! network namespace (`ip netns pids`: the postmaster, whose parent is Patroni, not another
//! postgres; the `mongod`), the kill itself (one `kill -KILL` for both, so they die at the same
//! moment), and a killed `mongod` started again with its own command line in its own namespace
//! and budget (Patroni restarts its postgres by itself; nothing restarts a `mongod`).

use anyhow::{Context, Result, bail};
use serde::Serialize;
use std::time::Duration;

/// A member's process, read before it is killed.
#[derive(Debug, Clone, Serialize)]
pub struct Victim {
    /// `pg1`, `mongo2`.
    pub member: String,
    pub address: String,
    pub pid: u32,
    #[serde(skip)]
    pub namespace: String,
    #[serde(skip)]
    pub cmdline: Vec<String>,
}

/// The namespaces' prefix (`fo-`) and how many members each engine has.
#[derive(Debug, Clone)]
pub struct Members {
    pub prefix: String,
    pub count: usize,
    /// The replicas' folder (`pg1/patroni.log`, ...), when known.
    pub dir: Option<std::path::PathBuf>,
}

impl Members {
    /// The member of `engine` (`pg`, `mongo`) whose bridge address is `address`.
    pub async fn by_address(&self, engine: &str, address: &str) -> Result<String> {
        for i in 1..=self.count {
            let member = format!("{engine}{i}");
            if self.address(&member).await.is_some_and(|a| a == address) {
                return Ok(member);
            }
        }
        bail!("no {engine} member has address {address}")
    }

    pub async fn address(&self, member: &str) -> Option<String> {
        let ns = format!("{}{member}", self.prefix);
        let out = tokio::process::Command::new("ip")
            .args(["-n", &ns, "-4", "-br", "addr", "show", "eth0"])
            .output()
            .await
            .ok()?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        text.split_whitespace().nth(2).and_then(|a| a.split('/').next()).map(str::to_owned)
    }

    /// The process named `comm` in `member`'s namespace whose parent is not also a `comm` (the
    /// postmaster among its backends; the one `mongod`).
    pub async fn victim(&self, member: &str, comm: &str) -> Result<Victim> {
        let namespace = format!("{}{member}", self.prefix);
        let out = tokio::process::Command::new("ip").args(["netns", "pids", &namespace]).output().await?;
        let pids: Vec<u32> =
            String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| l.trim().parse().ok()).collect();
        let pid = pids
            .iter()
            .copied()
            .find(|pid| {
                self::comm(*pid).as_deref() == Some(comm) && parent(*pid).and_then(self::comm).as_deref() != Some(comm)
            })
            .with_context(|| format!("no {comm} (not a child of another) in namespace {namespace}"))?;
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline"))
            .with_context(|| format!("reading the command line of pid {pid}"))?
            .split(|b| *b == 0)
            .filter(|a| !a.is_empty())
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        let address = self.address(member).await.unwrap_or_default();
        Ok(Victim { member: member.to_owned(), address, pid, namespace, cmdline })
    }
}

fn comm(pid: u32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{pid}/comm")).ok().map(|c| c.trim().to_owned())
}

/// The parent's pid: the field after the state, after the last `)` of `/proc/<pid>/stat`.
fn parent(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.split_whitespace().nth(1)?.parse().ok()
}

/// `kill -KILL` to every pid in one command: they die microseconds apart.
pub async fn kill(pids: &[u32]) -> Result<()> {
    let mut args = vec!["-KILL".to_owned()];
    args.extend(pids.iter().map(u32::to_string));
    let status = tokio::process::Command::new("kill").args(&args).status().await.context("running kill")?;
    if !status.success() {
        bail!("kill {} failed ({status})", args.join(" "));
    }
    Ok(())
}

pub fn alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// Starts the killed `mongod` again with its own command line (it forks and returns, as at the
/// stack's start), in its namespace and in the budget named after it (the stack's
/// `replica_budget_name`: the namespace's name), entered before the exec so no instruction of the
/// new process runs outside it.
pub async fn restart(victim: &Victim) -> Result<()> {
    let method = orders_budget::Method::detect();
    let dirs = orders_budget::apply::dirs(&method, &victim.namespace);
    let enter: String = dirs.iter().map(|d| format!("echo $$ > '{}/cgroup.procs' && ", d.display())).collect();
    let script = format!("{enter}exec ip netns exec \"$0\" \"$@\"");
    let out =
        tokio::process::Command::new("sh").arg("-c").arg(script).arg(&victim.namespace).args(&victim.cmdline).output();
    let out = tokio::time::timeout(Duration::from_secs(120), out)
        .await
        .context("mongod did not fork within 120 s")?
        .context("starting mongod")?;
    if !out.status.success() {
        bail!(
            "restarting {} failed ({}): {}{}",
            victim.member,
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_has_a_parent_and_a_name() {
        let me = std::process::id();
        assert!(parent(me).is_some_and(|p| p > 0 && p != me));
        assert!(comm(me).is_some_and(|c| !c.is_empty()));
        assert!(alive(me));
    }
}
