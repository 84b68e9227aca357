//! The services an experiment drives (one per target: orders-pg, orders-mongo and, when selected,
//! orders-pg-hybrid), and how a variant's settings reach them.
//!
//! - **Local** (the default): the services as `crate::scaffold::services` runs them, on free
//!   loopback ports over the experiment's databases, restarted with the variant's environment when
//!   the variant changes.
//! - **Deployed** (`--pg-url`, `--mongo-url`, `--pgh-url`): services the runner cannot restart;
//!   `--apply CMD` runs `CMD` with `{}` replaced by a variant's settings (e.g. `infra/do/do.sh
//!   toggle {}`); without it only the variant the services already run is measured.
//!
//! Either way the variant's settings are read back from `/diagnostics` before it is measured.

use super::variant::Variant;
use crate::diagnostics::{self, Client};
use crate::experiment::engine::Target;
use crate::scaffold::services::{self, Service};
use anyhow::{Context, Result, bail};
use std::path::PathBuf;
use std::time::Duration;

/// Where each target's service answers, in report order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Urls(pub Vec<(Target, String)>);

impl Urls {
    /// Every service by target name, as the runner's targets take them.
    pub fn services(&self) -> Vec<(String, String)> {
        self.0.iter().map(|(target, url)| (target.name().to_owned(), url.clone())).collect()
    }

    pub fn get(&self, target: Target) -> Option<&str> {
        self.0.iter().find(|(t, _)| *t == target).map(|(_, url)| url.as_str())
    }
}

/// What `prepare` found.
pub enum Prepared {
    Ready {
        urls: Urls,
        how: String,
    },
    /// Deployed services without `--apply` run another variant.
    Skip(String),
}

pub struct Local {
    pub bin_dir: PathBuf,
    pub logs: PathBuf,
    /// Per target, the environment every start gets (database, marker); the variant's comes on
    /// top.
    pub envs: Vec<(Target, Vec<(String, String)>)>,
    running: Vec<(Target, Service)>,
    current: Option<&'static str>,
}

pub struct Deployed {
    pub urls: Urls,
    pub apply: Option<String>,
    applied: Option<&'static str>,
}

pub enum Services {
    Local(Local),
    Deployed(Deployed),
}

impl Local {
    pub fn new(bin_dir: PathBuf, logs: PathBuf, envs: Vec<(Target, Vec<(String, String)>)>) -> Self {
        Self { bin_dir, logs, envs, running: Vec::new(), current: None }
    }

    fn urls(&self) -> Urls {
        Urls(self.running.iter().map(|(target, service)| (*target, service.url.clone())).collect())
    }
}

impl Deployed {
    pub fn new(urls: Urls, apply: Option<String>) -> Self {
        Self { urls, apply, applied: None }
    }
}

fn with_variant(base: &[(String, String)], variant: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut env = base.to_vec();
    env.extend(variant.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())));
    env
}

async fn run_apply(command: &str, variant: &Variant) -> Result<()> {
    let line = command.replace("{}", &variant.assignments());
    eprintln!("experiment: applying variant {}: {line}", variant.name);
    let status = tokio::process::Command::new("sh")
        .args(["-c", &line])
        .status()
        .await
        .with_context(|| format!("running --apply: {line}"))?;
    if !status.success() {
        bail!("--apply for variant {} failed ({status}): {line}", variant.name);
    }
    Ok(())
}

impl Services {
    /// Makes `variant` the one in effect and returns where the services are; the settings are
    /// checked against `/diagnostics`.
    pub async fn prepare(&mut self, variant: &Variant) -> Result<Prepared> {
        let (urls, how) = match self {
            Self::Local(local) => (local.prepare(variant).await?, "local services restarted with its settings".into()),
            Self::Deployed(deployed) => {
                if let Some(command) = &deployed.apply
                    && deployed.applied != Some(variant.name)
                {
                    run_apply(command, variant).await?;
                    deployed.applied = Some(variant.name);
                }
                let client = Client::for_services(deployed.urls.services())?;
                client.wait_ready(Duration::from_secs(120)).await?;
                let how = match &deployed.apply {
                    Some(command) => format!("applied with `{command}`"),
                    None => "as deployed".into(),
                };
                (deployed.urls.clone(), how)
            }
        };
        let client = Client::for_services(urls.services())?;
        let pair = client.settled(0.0, Duration::from_secs(30)).await?;
        let mismatches = variant.mismatches(&pair);
        if mismatches.is_empty() {
            return Ok(Prepared::Ready { urls, how });
        }
        match self {
            Self::Deployed(Deployed { apply: None, .. }) => Ok(Prepared::Skip(format!(
                "the deployed services do not run variant `{}` ({}), and without --apply the runner cannot change \
                 them",
                variant.name,
                mismatches.join("; ")
            ))),
            _ => bail!("variant {} is not in effect after {how}: {}", variant.name, mismatches.join("; ")),
        }
    }

    /// The local services' process ids (none for deployed ones).
    pub fn pids(&self) -> Vec<(Target, Option<u32>)> {
        match self {
            Self::Local(local) => local.running.iter().map(|(t, s)| (*t, s.pid())).collect(),
            Self::Deployed(_) => Vec::new(),
        }
    }

    pub fn is_local(&self) -> bool {
        matches!(self, Self::Local(_))
    }

    /// Stops what was started (nothing for deployed services).
    pub async fn stop(&mut self) {
        if let Self::Local(local) = self {
            local.stop().await;
        }
    }
}

impl Local {
    async fn prepare(&mut self, variant: &Variant) -> Result<Urls> {
        if self.current == Some(variant.name) && self.running.len() == self.envs.len() {
            return Ok(self.urls());
        }
        self.stop().await;
        for (target, env) in &self.envs {
            let env = with_variant(env, variant.env_for(*target));
            self.running.push((*target, services::start_in(&self.bin_dir, &self.logs, target.service(), &env)?));
        }
        let urls = self.urls();
        let client = diagnostics::Client::for_services(urls.services())?;
        services::wait_ready(&client, self.running.iter_mut().map(|(_, s)| s)).await?;
        self.current = Some(variant.name);
        let listening: Vec<String> = urls.0.iter().map(|(t, url)| format!("{} {url}", t.service())).collect();
        eprintln!("experiment: variant {}: {}", variant.name, listening.join(", "));
        Ok(urls)
    }

    async fn stop(&mut self) {
        for (_, service) in &mut self.running {
            service.stop().await;
        }
        self.running.clear();
        self.current = None;
    }
}
