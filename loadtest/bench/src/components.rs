//! Which process on this machine is a component of a run: the database or service listening at
//! the port its URL names (`/proc`, through `procstat`), and the runner itself. The CPU sampler
//! (`round::cpu`), the quiet check of a fresh start (`fresh::quiet`) and the budgets all find their
//! processes here, below every one of them.

use crate::procstat;
use orders_bench_model::cpu::{Component, RUNNER, Role};

/// The port of a URL whose host is this machine (`postgres://u@127.0.0.1:5432/db`,
/// `mongodb://localhost:27017`, `http://127.0.0.1:8080`), else `None`.
pub fn local_port(url: &str) -> Option<u16> {
    let (scheme, rest) = url.split_once("://")?;
    let authority = rest.split(['/', '?']).next()?;
    let host_port = authority.rsplit('@').next()?.split(',').next()?;
    let (host, port) = match host_port.rsplit_once(':') {
        Some((host, port)) if !port.contains(']') => (host, port.parse().ok()?),
        _ => (host_port, default_port(scheme)?),
    };
    matches!(host, "127.0.0.1" | "localhost" | "[::1]" | "::1").then_some(port)
}

fn default_port(scheme: &str) -> Option<u16> {
    match scheme {
        "postgres" | "postgresql" => Some(5432),
        "mongodb" => Some(27017),
        "http" => Some(80),
        _ => None,
    }
}

/// The component listening at `url` on this machine, or why it cannot be measured.
pub fn locate(name: &str, role: Role, target: &str, url: &str) -> Component {
    let (pid, note) = match local_port(url) {
        None => (None, Some(format!("{url} is not on this machine"))),
        Some(port) => match procstat::listening_pid(port) {
            Some(pid) => (Some(pid), None),
            None => (None, Some(format!("no readable process listens on port {port}"))),
        },
    };
    Component { name: name.into(), role, target: Some(target.into()), pid, note }
}

/// The runner: this process's own threads (not its children: k6 and the demo's services are
/// measured as themselves).
pub fn runner() -> Component {
    Component { name: RUNNER.into(), role: Role::Runner, target: None, pid: Some(std::process::id()), note: None }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_ports_come_from_urls_on_this_machine_only() {
        assert_eq!(local_port("postgres://postgres@127.0.0.1:55432/orders"), Some(55432));
        assert_eq!(local_port("mongodb://localhost"), Some(27017));
        assert_eq!(local_port("mongodb://127.0.0.1:57017,127.0.0.1:57018/?replicaSet=r"), Some(57017));
        assert_eq!(local_port("http://127.0.0.1:8080/"), Some(8080));
        assert_eq!(local_port("http://10.0.0.5:8080"), None);
        assert_eq!(local_port("no url"), None);
    }
}
