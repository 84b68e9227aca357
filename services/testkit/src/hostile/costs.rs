//! What request bodies cost a running service, in its own CPU time (`process::cpu_time`) and
//! memory: `body_costs` sends the ordinary 1 MiB order and each hostile body of `bodies` in
//! batches on one keep-alive connection, one request at a time, and divides each batch's CPU time
//! by its requests; ordinary batches are spread between the hostile ones, so both see the same
//! machine. Then it sends every hostile body from several clients at once and reads the peak of
//! the service's resident memory. The figures are ratios to the ordinary body, which is what
//! holds still on a shared machine.

use super::bodies::{Shape, hostile_bodies, ordinary_order};
use super::process::{Memory, cpu_time, memory};
use std::time::Duration;

/// A batch stops once it has used this much CPU (and holds two requests), or ...
const BATCH_CPU: Duration = Duration::from_millis(250);
/// ... once it holds this many requests, or ...
const BATCH_REQUESTS: usize = 100;
/// ... once it has used this much CPU whatever its count (one request of the old quadratic check
/// costs seconds).
const BATCH_CPU_CAP: Duration = Duration::from_secs(3);

/// The service's CPU time per request for one kind of body.
#[derive(Debug, Clone)]
pub struct BodyCost {
    pub name: &'static str,
    pub requests: usize,
    pub cpu_per_request: Duration,
    /// The statuses answered (one entry per distinct status).
    pub statuses: Vec<u16>,
    /// The largest answer, in bytes.
    pub largest_answer: usize,
}

#[derive(Debug, Clone)]
pub struct BodyCostReport {
    /// Every ordinary batch, then all of them together.
    pub ordinary_batches: Vec<BodyCost>,
    pub ordinary: BodyCost,
    pub hostile: Vec<BodyCost>,
    /// Resident memory after one of each body, and its peak after the concurrent round.
    pub memory_before: Memory,
    pub memory_after: Memory,
    /// How many clients sent the hostile bodies at once in the concurrent round.
    pub concurrent_clients: usize,
}

impl BodyCostReport {
    /// CPU per request of `cost` over that of the ordinary body.
    pub fn ratio(&self, cost: &BodyCost) -> f64 {
        cost.cpu_per_request.as_secs_f64() / self.ordinary.cpu_per_request.as_secs_f64().max(1e-9)
    }

    /// The costliest hostile body and its ratio.
    pub fn worst(&self) -> (&BodyCost, f64) {
        self.hostile
            .iter()
            .map(|cost| (cost, self.ratio(cost)))
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .expect("hostile bodies were sent")
    }

    /// Growth of the peak resident memory over the resident memory before.
    pub fn peak_growth(&self) -> u64 {
        self.memory_after.peak.saturating_sub(self.memory_before.resident)
    }
}

impl std::fmt::Display for BodyCostReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let batches: Vec<String> =
            self.ordinary_batches.iter().map(|b| format!("{:.1}", b.cpu_per_request.as_secs_f64() * 1e3)).collect();
        writeln!(
            f,
            "ordinary 1 MiB order: {:.1} ms CPU per request ({} requests; batches {} ms)",
            self.ordinary.cpu_per_request.as_secs_f64() * 1e3,
            self.ordinary.requests,
            batches.join(", ")
        )?;
        for cost in &self.hostile {
            writeln!(
                f,
                "{:<48} {:>8.1} ms  {:>5.2}x  ({} requests, status {:?}, answer <= {} bytes)",
                cost.name,
                cost.cpu_per_request.as_secs_f64() * 1e3,
                self.ratio(cost),
                cost.requests,
                cost.statuses,
                cost.largest_answer
            )?;
        }
        write!(
            f,
            "resident memory {} MiB before, peak {} MiB with {} clients sending hostile bodies at once",
            self.memory_before.resident >> 20,
            self.memory_after.peak >> 20,
            self.concurrent_clients
        )
    }
}

fn patient_client() -> reqwest::Client {
    reqwest::Client::builder().timeout(Duration::from_secs(600)).build().expect("client")
}

async fn post(client: &reqwest::Client, url: &str, body: &[u8]) -> (u16, usize) {
    let sent = client.post(url).header("content-type", "application/json").body(body.to_vec()).send().await;
    match sent {
        Ok(response) => {
            let status = response.status().as_u16();
            (status, response.bytes().await.map_or(0, |b| b.len()))
        }
        Err(_) => (0, 0),
    }
}

/// Sends `body` until the batch is complete (see the constants) and measures it.
async fn batch(client: &reqwest::Client, url: &str, pid: u32, name: &'static str, body: &[u8]) -> BodyCost {
    let mut cost =
        BodyCost { name, requests: 0, cpu_per_request: Duration::ZERO, statuses: Vec::new(), largest_answer: 0 };
    let started = cpu_time(pid);
    loop {
        let (status, answer) = post(client, url, body).await;
        cost.requests += 1;
        if !cost.statuses.contains(&status) {
            cost.statuses.push(status);
        }
        cost.largest_answer = cost.largest_answer.max(answer);
        let used = cpu_time(pid) - started;
        if (used >= BATCH_CPU && cost.requests >= 2) || cost.requests >= BATCH_REQUESTS || used >= BATCH_CPU_CAP {
            cost.cpu_per_request = used / cost.requests as u32;
            return cost;
        }
    }
}

/// Measures the ordinary body and every hostile body on the service at `base_url` (process `pid`);
/// see the module notes.
pub async fn body_costs(base_url: &str, pid: u32, concurrent_clients: usize) -> BodyCostReport {
    let client = patient_client();
    let url = format!("{base_url}/orders");
    let ordinary = ordinary_order(crate::api::random_id());
    let shapes = hostile_bodies();
    // Warm up: the first requests pay for connections, caches and the allocator's first pages.
    for body in [&ordinary, &shapes[0].body, &ordinary] {
        post(&client, &url, body).await;
    }
    let memory_before = memory(pid);
    let mut ordinary_batches = vec![batch(&client, &url, pid, "ordinary", &ordinary).await];
    let mut hostile = Vec::new();
    for (index, Shape { name, body }) in shapes.iter().enumerate() {
        hostile.push(batch(&client, &url, pid, name, body).await);
        if index % 3 == 2 {
            ordinary_batches.push(batch(&client, &url, pid, "ordinary", &ordinary).await);
        }
    }
    let senders: Vec<_> = (0..concurrent_clients)
        .map(|_| {
            let (url, shapes) = (url.clone(), shapes.clone());
            tokio::spawn(async move {
                let client = patient_client();
                for shape in shapes.iter().rev() {
                    post(&client, &url, &shape.body).await;
                }
            })
        })
        .collect();
    for sender in senders {
        sender.await.expect("concurrent sender");
    }
    let memory_after = memory(pid);
    let requests: usize = ordinary_batches.iter().map(|b| b.requests).sum();
    let total: Duration = ordinary_batches.iter().map(|b| b.cpu_per_request * b.requests as u32).sum();
    let mut statuses: Vec<u16> = ordinary_batches.iter().flat_map(|b| b.statuses.clone()).collect();
    statuses.sort_unstable();
    statuses.dedup();
    let ordinary = BodyCost {
        name: "ordinary",
        requests,
        cpu_per_request: total / requests as u32,
        statuses,
        largest_answer: ordinary_batches.iter().map(|b| b.largest_answer).max().unwrap_or(0),
    };
    BodyCostReport { ordinary_batches, ordinary, hostile, memory_before, memory_after, concurrent_clients }
}
