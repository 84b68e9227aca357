//! `orders-bench agent`: a follower load machine. A small HTTP server the leader's `round` talks
//! to: `POST /runs` starts a segment run (one at a time), `GET /runs/{id}` says whether it is still
//! running and, once over, returns its report, `POST /runs/{id}/stop` stops it early (the leader
//! stopped its own k6), `GET /healthz` answers once the agent is up. It runs nothing but k6 with the
//! script's own settings; only the leading load machines should reach its port (on droplets the
//! cloud firewall admits only the load droplets).

use super::segment_run::{self, Settings};
use super::{RunRequest, RunState, SCRIPT_VARIABLES};
use anyhow::{Context, Result};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use clap::Args;
use serde_json::json;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use tokio::sync::watch;

#[derive(Debug, Clone, Args)]
pub struct AgentArgs {
    /// Address to listen on, e.g. `0.0.0.0:9400` on a load droplet.
    #[arg(long, env = "AGENT_LISTEN", default_value = "127.0.0.1:9400")]
    pub listen: String,
    /// The k6 binary [default: the local stack's .venv/bin/k6, else k6 on the PATH].
    #[arg(long, env = "K6")]
    pub k6: Option<PathBuf>,
    /// The k6 script [default: loadtest/k6/orders.js of this repository].
    #[arg(long)]
    pub script: Option<PathBuf>,
    /// Folder for the files of each run (manifest, k6 log and summary).
    #[arg(long = "work-dir", default_value = ".local/agent")]
    pub work_dir: PathBuf,
}

/// Finished runs kept for the leader to fetch.
const KEEP: usize = 20;

#[derive(Default)]
struct Runs {
    /// The run going on now, and its stop switch.
    active: Option<(String, watch::Sender<bool>)>,
    states: BTreeMap<String, RunState>,
    order: Vec<String>,
}

#[derive(Clone)]
struct Agent {
    settings: Arc<Settings>,
    runs: Arc<Mutex<Runs>>,
}

fn refuse(status: StatusCode, message: impl Into<String>) -> Response {
    (status, Json(json!({"error": message.into()}))).into_response()
}

/// Why a request cannot be run, if it cannot.
fn invalid(request: &RunRequest) -> Option<String> {
    if request.id.is_empty() || request.id.len() > 200 {
        return Some("id must be 1..200 characters".into());
    }
    if !request.segment.is_valid() {
        return Some(format!(
            "segment {}/{} is not one of 1..64 equal parts",
            request.segment.index, request.segment.count
        ));
    }
    if let Some((name, _)) = request.env.iter().find(|(name, _)| !SCRIPT_VARIABLES.contains(&name.as_str())) {
        return Some(format!("{name} is not a setting of the k6 script (allowed: {})", SCRIPT_VARIABLES.join(", ")));
    }
    let now = segment_run::now_ms();
    if request.start_at_ms.abs_diff(now) > 600_000 {
        return Some("start_at_ms is more than ten minutes from this machine's clock".into());
    }
    if !request.manifest.is_object() {
        return Some("manifest must be the data set manifest (a JSON object)".into());
    }
    None
}

async fn start(State(agent): State<Agent>, Json(request): Json<RunRequest>) -> Response {
    if let Some(reason) = invalid(&request) {
        return refuse(StatusCode::UNPROCESSABLE_ENTITY, reason);
    }
    let (stop_switch, stop) = watch::channel(false);
    {
        let Ok(mut runs) = agent.runs.lock() else { return refuse(StatusCode::INTERNAL_SERVER_ERROR, "internal") };
        if let Some((id, _)) = &runs.active {
            return refuse(StatusCode::CONFLICT, format!("run {id} is still going"));
        }
        if runs.states.contains_key(&request.id) {
            return refuse(StatusCode::CONFLICT, format!("run {} exists already", request.id));
        }
        runs.active = Some((request.id.clone(), stop_switch));
        runs.states.insert(request.id.clone(), RunState::Running);
        runs.order.push(request.id.clone());
        while runs.order.len() > KEEP {
            let old = runs.order.remove(0);
            runs.states.remove(&old);
        }
    }
    let id = request.id.clone();
    eprintln!("agent: run {id}, segment {}", request.segment.range());
    let task_agent = agent.clone();
    tokio::spawn(async move {
        let state = match segment_run::run(&task_agent.settings, request, stop).await {
            Ok(report) => RunState::Finished { report: Box::new(report) },
            Err(error) => RunState::Failed { error: format!("{error:#}") },
        };
        let line = match &state {
            RunState::Failed { error } => format!("failed: {error}"),
            _ => "finished".into(),
        };
        eprintln!("agent: run {id} {line}");
        if let Ok(mut runs) = task_agent.runs.lock() {
            runs.active = None;
            runs.states.insert(id, state);
        }
    });
    (StatusCode::ACCEPTED, Json(RunState::Running)).into_response()
}

async fn state(State(agent): State<Agent>, Path(id): Path<String>) -> Response {
    let Ok(runs) = agent.runs.lock() else { return refuse(StatusCode::INTERNAL_SERVER_ERROR, "internal") };
    match runs.states.get(&id) {
        Some(state) => Json(state.clone()).into_response(),
        None => refuse(StatusCode::NOT_FOUND, format!("no run {id}")),
    }
}

async fn stop(State(agent): State<Agent>, Path(id): Path<String>) -> Response {
    let Ok(runs) = agent.runs.lock() else { return refuse(StatusCode::INTERNAL_SERVER_ERROR, "internal") };
    match &runs.active {
        Some((active, switch)) if *active == id => {
            let _ = switch.send(true);
            (StatusCode::ACCEPTED, Json(json!({"stopping": id}))).into_response()
        }
        _ if runs.states.contains_key(&id) => (StatusCode::OK, Json(json!({"over": id}))).into_response(),
        _ => refuse(StatusCode::NOT_FOUND, format!("no run {id}")),
    }
}

fn app(agent: Agent) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/runs", post(start))
        .route("/runs/{id}", get(state))
        .route("/runs/{id}/stop", post(stop))
        .with_state(agent)
}

pub async fn run(args: AgentArgs) -> Result<()> {
    let repo = crate::repo::root().ok();
    let script = match (&args.script, &repo) {
        (Some(script), _) => crate::repo::absolute(script),
        (None, Some(repo)) => repo.join(crate::repo::SCRIPT),
        (None, None) => anyhow::bail!("pass --script: the k6 script was not found"),
    };
    let settings = Settings {
        k6: crate::k6::binary(args.k6.as_deref(), repo.as_deref())?,
        script,
        work_dir: crate::repo::absolute(&args.work_dir),
    };
    let listener =
        tokio::net::TcpListener::bind(&args.listen).await.with_context(|| format!("listening on {}", args.listen))?;
    eprintln!(
        "agent: listening on {} (k6 {}, script {})",
        listener.local_addr().map_or(args.listen.clone(), |a| a.to_string()),
        settings.k6.display(),
        settings.script.display()
    );
    let agent = Agent { settings: Arc::new(settings), runs: Arc::default() };
    axum::serve(listener, app(agent)).await.context("agent server")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::Segment;

    fn request() -> RunRequest {
        RunRequest {
            id: "shop-1".into(),
            segment: Segment { index: 1, count: 2 },
            env: vec![("TARGETS".into(), "pg=http://10.0.0.2:8080".into()), ("MIX".into(), "shop".into())],
            manifest: json!({"orders": 10}),
            start_at_ms: segment_run::now_ms() + 5000,
        }
    }

    #[test]
    fn only_the_scripts_own_settings_and_sane_requests_are_run() {
        assert_eq!(invalid(&request()), None);
        let mut bad = request();
        bad.env.push(("LD_PRELOAD".into(), "/tmp/x.so".into()));
        assert!(invalid(&bad).is_some_and(|r| r.contains("LD_PRELOAD")));
        let mut bad = request();
        bad.segment = Segment { index: 2, count: 2 };
        assert!(invalid(&bad).is_some());
        let mut bad = request();
        bad.start_at_ms = 0;
        assert!(invalid(&bad).is_some_and(|r| r.contains("clock")));
        let mut bad = request();
        bad.manifest = json!("x");
        assert!(invalid(&bad).is_some());
    }
}
