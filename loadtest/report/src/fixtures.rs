//! Small results for the report's unit tests: a round whose repeats passed given rates.

use orders_bench_model::cpu::CpuReport;
use orders_bench_model::fairness::Fairness;
use orders_bench_model::generator::Latency;
use orders_bench_model::result::{DataSet, Machine, RatePlan, RepeatResult, RoundResult, TargetResult};
use orders_bench_model::verdict::{MaxRate, PassMark, RateSummary};
use std::collections::BTreeMap;
use std::time::Duration;

fn target(rate: u32) -> TargetResult {
    TargetResult {
        steps: Vec::new(),
        max_rate: MaxRate { rate, first_failed_rate: Some(rate + 100) },
        requests: 1000,
        failures: 0,
        dropped_iterations: 0,
        latency_ms: Latency::default(),
        endpoints: BTreeMap::new(),
        retired: None,
    }
}

/// A round whose repeats passed `pg` and `mongo` req/s.
pub fn round(name: &str, mix: &str, started_at: &str, rates: &[(u32, u32)]) -> RoundResult {
    let repeats: Vec<RepeatResult> = rates
        .iter()
        .enumerate()
        .map(|(i, (pg, mongo))| RepeatResult {
            index: i as u32 + 1,
            reseeded: true,
            started_at: started_at.into(),
            fairness: Fairness { ok: true, checks: Vec::new() },
            start: None,
            run_seconds: 30.0,
            stopped_early: false,
            targets: BTreeMap::from([("pg".into(), target(*pg)), ("mongo".into(), target(*mongo))]),
            explain: Default::default(),
            cpu: CpuReport::default(),
            files: BTreeMap::new(),
            notes: Vec::new(),
            load_generator: None,
            fleet: None,
            plan: None,
            superseded: None,
        })
        .collect();
    let summary = |runs: Vec<u32>| RateSummary {
        median: orders_bench_model::stats::median(&runs.iter().map(|r| f64::from(*r)).collect::<Vec<_>>())
            .unwrap_or_default(),
        min: runs.iter().copied().min().unwrap_or_default(),
        max: runs.iter().copied().max().unwrap_or_default(),
        runs,
        lower_bound: false,
    };
    RoundResult {
        name: name.into(),
        mix: mix.into(),
        mix_weights: BTreeMap::new(),
        started_at: started_at.into(),
        finished_at: started_at.into(),
        plan: RatePlan {
            start_rate: 100,
            step: 100,
            max_rate: 5000,
            step_seconds: Duration::from_secs(3),
            factor: None,
        },
        pass_mark: PassMark::default(),
        data_set: Some(DataSet {
            seed: 1,
            orders: 2000,
            customers: 200,
            products: 200,
            items_per_order: 40,
            note_bytes: 1024,
            approx_doc_bytes: 7000,
        }),
        machine: Machine { cores: 2, os: "Linux test".into() },
        commit: Some("abc1234".into()),
        targets: Vec::new(),
        fairness_overridden: false,
        budget: Some("0.25 CPU and 4.0 GiB each".into()),
        plan_probe: None,
        max_rate: BTreeMap::from([
            ("pg".into(), summary(rates.iter().map(|r| r.0).collect())),
            ("mongo".into(), summary(rates.iter().map(|r| r.1).collect())),
        ]),
        repeats,
        regime: None,
        dir: ".".into(),
    }
}
