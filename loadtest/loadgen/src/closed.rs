//! The closed loop (study S2's way: 8 clients, 20 s): each of N clients per target sends a
//! request, waits for its answer and sends the next at once, until the time is up. Throughput is
//! whatever the target sustains; latency runs from each request's actual send, since in a closed
//! loop there is no schedule to fall behind (and a slow answer delays the next request instead of
//! queueing it). Everything is recorded as one step, windows included. The requests go over the
//! open loop's connections (`wire`), on one thread with no runtime: a client is a request in
//! flight, and an answer (or a failure, or a timeout) frees its client to send the next.

use super::control::Control;
use super::http1;
use super::live;
use super::open::{Due, abandon_in_flight, record};
use super::record::{Recorder, Slot};
use super::request::{EndpointPlan, RequestMaker};
use super::wire::{Outcome, Pending, Wire};
use super::{Finished, Start};
use crate::summary::write::TargetFacts;
use std::io::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Connections opened to every target before the first request.
const WARM_CONNECTIONS: usize = 2;
/// How often requests past their timeout are looked for.
const EXPIRE_EVERY: Duration = Duration::from_millis(100);
/// How often the live figures are printed (`--progress`).
const PROGRESS_EVERY: Duration = Duration::from_millis(500);
/// The longest single wait, so that the stop, the expiry and the live figures stay on time.
const LONGEST_WAIT: Duration = Duration::from_millis(100);

/// The whole closed-loop run: `clients` per target for `duration`, then the requests still in
/// flight (up to their timeout, or two seconds when stopped early).
pub fn run(start: Start, clients: u32, duration: Duration, control: Arc<Control>) -> anyhow::Result<Finished> {
    let Start { targets, mut maker, recorder, request_timeout, progress } = start;
    let urls: Vec<String> = targets.iter().map(|(_, url)| url.clone()).collect();
    let mut closed = ClosedLoop {
        wire: Wire::new(&urls)?,
        recorder,
        endpoints: maker.endpoints.clone(),
        names: targets.iter().map(|(name, _)| name.clone()).collect(),
        request_timeout,
        origin: Instant::now(),
        next_expiry: Instant::now(),
        next_progress: None,
        free: Vec::new(),
    };
    for (target, (name, url)) in targets.iter().enumerate() {
        if let Err(error) = closed.wire.warm_up(target, WARM_CONNECTIONS, Duration::from_secs(2)) {
            eprintln!("load: {name} ({url}): {error}; its requests will fail");
        }
    }
    let cpu_before = crate::own_cpu_seconds();
    let origin = Instant::now() + Duration::from_millis(50);
    std::thread::sleep(origin.saturating_duration_since(Instant::now()));
    closed.origin = origin;
    closed.next_expiry = origin;
    closed.next_progress = progress.then_some(origin);
    let clients = usize::try_from(clients).unwrap_or(usize::MAX);
    closed.free = (0..targets.len()).flat_map(|target| std::iter::repeat_n(target, clients)).collect();
    closed.run_until(origin + duration, &mut maker, &control)?;
    let run_seconds = origin.elapsed().as_secs_f64().min(duration.as_secs_f64());
    let stopped_early = control.stopped();
    let patience = if stopped_early { Duration::from_secs(2) } else { request_timeout + Duration::from_secs(1) };
    let abandoned = closed.drain(patience)?;
    let cpu_seconds = cpu_before.zip(crate::own_cpu_seconds()).map(|(before, after)| after - before);
    let facts = targets
        .iter()
        .enumerate()
        .map(|(target, (name, url))| {
            let connections = closed.wire.figures(target);
            TargetFacts {
                name: name.clone(),
                url: url.trim_end_matches('/').to_owned(),
                connections: connections.opened,
                untimed_answers: connections.untimed_answers,
            }
        })
        .collect();
    Ok(Finished {
        recorder: closed.recorder,
        endpoints: closed.endpoints,
        targets: facts,
        run_seconds,
        stopped_early,
        cpu_seconds,
        abandoned,
        retired: vec![None; targets.len()],
    })
}

/// The closed loop's connections, what it records, and its clients that are free to send.
struct ClosedLoop {
    wire: Wire<Due>,
    recorder: Recorder,
    endpoints: Vec<EndpointPlan>,
    names: Vec<String>,
    request_timeout: Duration,
    /// When the run began: windows count from here.
    origin: Instant,
    next_expiry: Instant,
    /// With `--progress`: when the next live line is due.
    next_progress: Option<Instant>,
    /// One entry per client with no request in flight: its target.
    free: Vec<usize>,
}

impl ClosedLoop {
    /// Every free client sends its next request and waits for the answers, until `end` or a stop.
    /// A client whose request failed at once sends again after one look at the sockets.
    fn run_until(&mut self, end: Instant, maker: &mut RequestMaker, control: &Control) -> std::io::Result<()> {
        loop {
            let now = Instant::now();
            if now >= end || control.stopped() {
                return Ok(());
            }
            for target in std::mem::take(&mut self.free) {
                self.send(target, maker);
            }
            let wait = if self.free.is_empty() { LONGEST_WAIT.min(end - now) } else { Duration::ZERO };
            self.look_after(wait)?;
        }
    }

    /// Sends `target`'s next request; one that fails at once is recorded and its client freed.
    fn send(&mut self, target: usize, maker: &mut RequestMaker) {
        let request = maker.next();
        let now = Instant::now();
        let window = now.saturating_duration_since(self.origin).as_secs_f64() / self.recorder.window.as_secs_f64();
        let slot = Slot { target, step: 0, window: window as usize, endpoint: request.endpoint };
        let endpoint = &self.endpoints[request.endpoint];
        let pending = Pending { tag: Due { slot, due: now }, started: now };
        let sent = self.wire.send(target, pending, |out, host| {
            let (method, body) = (endpoint.method.as_str(), request.body.as_deref());
            http1::encode(out, method, &request.path, host, http1::AGENT, endpoint.headers, body);
        });
        if let Err((pending, outcome)) = sent {
            record(&mut self.recorder, &self.endpoints, pending, outcome);
            self.free.push(target);
        }
    }

    /// Reads what arrived, waiting at most `wait` for something to, and frees the clients whose
    /// requests ended; expires and prints the live figures when their time has come.
    fn look_after(&mut self, wait: Duration) -> std::io::Result<()> {
        let Self { wire, recorder, endpoints, free, .. } = self;
        let mut ended = |pending: Pending<Due>, outcome: Outcome| {
            free.push(pending.tag.slot.target);
            record(recorder, endpoints, pending, outcome);
        };
        wire.poll(wait, &mut ended)?;
        let now = Instant::now();
        if now >= self.next_expiry {
            self.next_expiry = now + EXPIRE_EVERY;
            wire.expire(self.request_timeout, &mut ended);
        }
        if let Some(due) = self.next_progress.filter(|due| now >= *due) {
            self.next_progress = Some(due + PROGRESS_EVERY);
            let line = live::line(&mut self.recorder, &self.names, now.duration_since(self.origin).as_secs_f64());
            let mut stdout = std::io::stdout().lock();
            let _ = writeln!(stdout, "{line}");
            let _ = stdout.flush();
        }
        Ok(())
    }

    /// Waits for the requests still in flight, at most `patience`, sending no more; then counts
    /// those left as failed (`interrupted`) and says how many.
    fn drain(&mut self, patience: Duration) -> std::io::Result<usize> {
        let waiting = Instant::now();
        while self.wire.busy() > 0 && waiting.elapsed() < patience {
            self.look_after(Duration::from_millis(5))?;
        }
        Ok(abandon_in_flight(&mut self.wire, &mut self.recorder, &self.endpoints))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read as _;
    use std::net::TcpListener;

    /// A server on a free port: each connection answers every request it reads with `answer`, or
    /// never answers when it is `None`.
    fn server(answer: Option<&'static [u8]>) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("address"));
        std::thread::spawn(move || {
            for mut socket in listener.incoming().map_while(Result::ok) {
                std::thread::spawn(move || {
                    let mut buffer = [0u8; 4096];
                    while socket.read(&mut buffer).is_ok_and(|n| n > 0) {
                        if let Some(answer) = answer {
                            let _ = std::io::Write::write_all(&mut socket, answer);
                        }
                    }
                });
            }
        });
        url
    }

    fn start(url: &str, request_timeout: Duration) -> Start {
        let definitions = crate::mixes::Definitions::embedded().expect("mixes");
        let profile =
            orders_dataset::Profile { seed: 1, orders: 10, customers: 2, products: 5, items: 3, note_bytes: 0 };
        let manifest = orders_dataset::manifest::Manifest::new(&profile, 600);
        let mix = definitions.mix("read").expect("read");
        let maker = RequestMaker::new(&definitions, &mix, &manifest, 1).expect("maker");
        let recorder =
            Recorder::new(1, maker.endpoints.len(), &[10], Duration::from_millis(100), Duration::from_secs(1));
        Start { targets: vec![("t".into(), url.into())], maker, recorder, request_timeout, progress: false }
    }

    #[test]
    fn each_client_sends_its_next_request_when_its_answer_is_in_over_kept_connections() {
        let url = server(Some(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}"));
        let control = Arc::new(Control::new(vec!["t".into()]));
        let finished = run(start(&url, Duration::from_secs(1)), 2, Duration::from_millis(300), control).expect("run");
        let figures = &finished.recorder.steps[0][0].figures;
        assert!(figures.count > 20, "answered requests: {}", figures.count);
        assert_eq!(figures.failures, 0, "{:?}", finished.recorder.errors);
        assert_eq!((finished.abandoned, finished.stopped_early), (0, false));
        assert_eq!(finished.targets[0].connections, 2, "the two clients' warm connections carried every request");
        assert!((finished.run_seconds - 0.3).abs() < 0.05, "{}", finished.run_seconds);
    }

    #[test]
    fn a_request_past_its_timeout_is_counted_once_and_its_client_sends_the_next() {
        let url = server(None);
        let control = Arc::new(Control::new(vec!["t".into()]));
        let started = Instant::now();
        let finished =
            run(start(&url, Duration::from_millis(100)), 1, Duration::from_millis(350), control).expect("run");
        let errors = &finished.recorder.errors[0];
        let figures = &finished.recorder.steps[0][0].figures;
        // Sent at 0, ~100-200, ~200-400 ms: two or three time out, the last may be cut off at the end.
        assert!((2..=4).contains(&figures.count), "{figures:?} {errors:?}");
        assert_eq!(figures.failures, figures.count, "{errors:?}");
        assert_eq!(errors.get("timeout").copied().unwrap_or(0) + finished.abandoned as u64, figures.count);
        assert!(errors.get("timeout").copied().unwrap_or(0) >= 2, "{errors:?}");
        assert!(started.elapsed() < Duration::from_secs(2), "the end waited for the last one, not longer");
    }
}
