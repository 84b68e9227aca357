//! The client's figures of one engine's failover, from its own per-request records alone: how
//! long writes were not acknowledged after the kill (to the first acknowledged write sent after
//! it; to the end of the last 1 s window of arrivals whose p95 was at or above the pass mark),
//! what failed, was retried and given up, and acknowledged / failed answers per 100 ms for a chart.
//! A request never acknowledged counts as infinitely slow in its window.

use super::client::{Answer, Request};
use serde::Serialize;

/// The pass mark of a window's p95 (the rounds' own).
pub const P95_MARK_MS: f64 = 50.0;
pub const BUCKET_MS: f64 = 100.0;
pub const WINDOW_MS: f64 = 1000.0;

#[derive(Debug, Clone, Default, Serialize)]
pub struct Figures {
    pub requests: u64,
    pub acknowledged: u64,
    /// Requests not acknowledged after their whole retry budget (or rejected).
    pub given_up: u64,
    /// Requests that needed more than one attempt, and the attempts beyond the first.
    pub retried: u64,
    pub retries: u64,
    /// Attempts not acknowledged, by answer.
    pub failed_attempts: u64,
    pub unknown_answers: u64,
    pub not_written_answers: u64,
    pub rejected_answers: u64,
    /// From the kill to the first acknowledgement of an attempt sent after it.
    pub first_ack_after_kill_ms: Option<f64>,
    /// From the kill to the end of the last 1 s window (of arrivals after the kill) whose p95 was
    /// at or above the mark; 0 when none was; `None` when the run's last window still was.
    pub p95_back_under_ms: Option<f64>,
    /// p95 per 1 s window of arrivals from the kill on (`None`: a request never acknowledged).
    pub window_p95_ms: Vec<Option<f64>>,
    /// The failed attempts' reasons, in the service's words, and how many said each.
    pub reasons: std::collections::BTreeMap<String, u64>,
    /// Per 100 ms from the run's start: attempts answered 201, and attempts answered otherwise.
    pub acked_per_bucket: Vec<u32>,
    pub failed_per_bucket: Vec<u32>,
}

pub fn of(records: &[Request], kill_ms: f64) -> Figures {
    let mut f = Figures { requests: records.len() as u64, ..Figures::default() };
    let last = records.iter().flat_map(|r| r.attempts.iter().map(|a| a.done_ms)).fold(0.0, f64::max);
    let buckets = (last / BUCKET_MS).floor() as usize + 1;
    f.acked_per_bucket = vec![0; buckets];
    f.failed_per_bucket = vec![0; buckets];
    for r in records {
        if r.acked_at().is_some() {
            f.acknowledged += 1;
        } else {
            f.given_up += 1;
        }
        let extra = r.attempts.len().saturating_sub(1) as u64;
        f.retries += extra;
        f.retried += u64::from(extra > 0);
        for a in &r.attempts {
            let bucket = (a.done_ms / BUCKET_MS).floor() as usize;
            match a.answer {
                Answer::Acked => {
                    f.acked_per_bucket[bucket] += 1;
                    if a.sent_ms >= kill_ms {
                        let since = a.done_ms - kill_ms;
                        f.first_ack_after_kill_ms =
                            Some(f.first_ack_after_kill_ms.map_or(since, |m: f64| m.min(since)));
                    }
                    continue;
                }
                Answer::Unknown => f.unknown_answers += 1,
                Answer::NotWritten => f.not_written_answers += 1,
                Answer::Rejected => f.rejected_answers += 1,
            }
            f.failed_attempts += 1;
            *f.reasons.entry(a.reason.clone().unwrap_or_default()).or_default() += 1;
            f.failed_per_bucket[bucket] += 1;
        }
    }
    f.window_p95_ms = windows(records, kill_ms);
    let failing = f.window_p95_ms.iter().rposition(|p| p.is_none_or(|p| p >= P95_MARK_MS));
    f.p95_back_under_ms = match failing {
        None => Some(0.0),
        Some(k) if k + 1 == f.window_p95_ms.len() => None,
        Some(k) => Some((k + 1) as f64 * WINDOW_MS),
    };
    f
}

/// p95 (nearest rank) of the latency from arrival to acknowledgement, per 1 s window of arrivals
/// from the kill on.
fn windows(records: &[Request], kill_ms: f64) -> Vec<Option<f64>> {
    let mut per: Vec<Vec<f64>> = Vec::new();
    for r in records.iter().filter(|r| r.due_ms >= kill_ms) {
        let k = ((r.due_ms - kill_ms) / WINDOW_MS).floor() as usize;
        if per.len() <= k {
            per.resize(k + 1, Vec::new());
        }
        per[k].push(r.acked_at().map_or(f64::INFINITY, |at| at - r.due_ms));
    }
    per.into_iter()
        .map(|mut w| {
            if w.is_empty() {
                return Some(0.0);
            }
            w.sort_by(f64::total_cmp);
            let rank = ((w.len() as f64) * 0.95).ceil() as usize;
            let p = w[rank.clamp(1, w.len()) - 1];
            p.is_finite().then_some(p)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::client::Attempt;
    use super::*;

    fn request(due: f64, answers: &[(f64, Answer)]) -> Request {
        let attempts = answers
            .iter()
            .map(|(done, answer)| Attempt {
                sent_ms: done - 5.0,
                done_ms: *done,
                status: None,
                answer: *answer,
                reason: None,
            })
            .collect();
        Request { id: 1, key: "k".into(), due_ms: due, attempts }
    }

    #[test]
    fn the_gap_runs_from_the_kill_to_the_first_ack_sent_after_it() {
        let records = vec![
            request(0.0, &[(10.0, Answer::Acked)]),
            request(1000.0, &[(1010.0, Answer::Unknown), (3500.0, Answer::Acked)]),
            request(1500.0, &[(1510.0, Answer::NotWritten), (3000.0, Answer::NotWritten)]),
            request(2500.0, &[(2600.0, Answer::Acked)]),
            request(3100.0, &[(3110.0, Answer::Acked)]),
        ];
        let f = of(&records, 900.0);
        assert_eq!(f.first_ack_after_kill_ms, Some(1700.0));
        assert_eq!((f.requests, f.acknowledged, f.given_up, f.retried, f.retries), (5, 4, 1, 2, 2));
        assert_eq!((f.failed_attempts, f.unknown_answers, f.not_written_answers), (3, 1, 2));
        assert_eq!(f.acked_per_bucket[0] + f.acked_per_bucket[35] + f.acked_per_bucket[26] + f.acked_per_bucket[31], 4);
        assert_eq!(f.failed_per_bucket.iter().sum::<u32>(), 3);
        // Windows from 900 ms: [900, 1900) has a 2.5 s wait and a request never acknowledged,
        // [1900, 2900) a 100 ms one (over the mark), [2900, 3900) a 10 ms one: back under 2 s
        // after the kill.
        assert_eq!(f.window_p95_ms, vec![None, Some(100.0), Some(10.0)]);
        assert_eq!(f.p95_back_under_ms, Some(2000.0));
    }

    #[test]
    fn a_run_that_never_recovers_has_no_recovery_time() {
        let records = vec![request(0.0, &[(10.0, Answer::Acked)]), request(1000.0, &[(1010.0, Answer::Unknown)])];
        let f = of(&records, 500.0);
        assert_eq!(f.first_ack_after_kill_ms, None);
        assert_eq!(f.p95_back_under_ms, None);
        assert_eq!(f.given_up, 1);
    }
}
