//! The budget experiment's report: its tables (CPU per request by budget and rate, the marginal
//! and idle split, context switches, the engines asked directly) and one sentence per budget.

use super::{Cost, Direct, HOLDS_WITHIN, Regime, Split, StepRow, holds};
use orders_bench_report::doc::Block;

fn us(value: Option<f64>) -> String {
    value.map_or("-".into(), |v| format!("{v:.0}"))
}

fn share(value: Option<f64>) -> String {
    value.map_or("-".into(), |v| format!("{:.0}%", v * 100.0))
}

fn times(value: Option<f64>) -> String {
    value.map_or("-".into(), |v| format!("{v:.2}"))
}

/// One row per step of every regime: the mix, pool, budget and rate, then `columns` of the step.
fn per_step(regimes: &[Regime], headers: &[&str], columns: impl Fn(&StepRow) -> Vec<String>) -> Block {
    let mut header: Vec<String> = ["mix", "pool", "budget", "rate"].iter().map(|h| h.to_string()).collect();
    header.extend(headers.iter().map(|h| h.to_string()));
    let rows = regimes
        .iter()
        .flat_map(|r| {
            r.steps.iter().map(|s| {
                let mut row = vec![r.mix.to_string(), r.pool.to_string(), r.budget.clone(), s.rate.to_string()];
                row.extend(columns(s));
                row
            })
        })
        .collect();
    Block::Table { header, rows }
}

fn table(regimes: &[Regime]) -> Block {
    let headers = [
        "PostgreSQL µs/req",
        "MongoDB µs/req",
        "MongoDB ÷ PostgreSQL",
        "÷ unbudgeted",
        "budget used (PG / MongoDB)",
        "throttled (PG / MongoDB)",
    ];
    per_step(regimes, &headers, |s| {
        vec![
            us(s.pg.cpu_us_per_request),
            us(s.mongo.cpu_us_per_request),
            times(s.ratio),
            times(s.shift),
            format!("{} / {}", share(s.pg.budget_share), share(s.mongo.budget_share)),
            format!("{} / {}", share(s.pg.throttled_share), share(s.mongo.throttled_share)),
        ]
    })
}

fn direct_table(regimes: &[Regime]) -> Block {
    let header = ["budget", "rate", "PostgreSQL: orders-pg / pgbench µs", "MongoDB: orders-mongo / driver µs"];
    let side = |through: Option<f64>, direct: Option<&Direct>| {
        let direct = direct.and_then(|d| d.cpu_us_per_request);
        let ratio = through.zip(direct).map_or(String::new(), |(t, d)| format!(" ({:.2}×)", t / d));
        format!("{} / {}{ratio}", us(through), us(direct))
    };
    let rows = regimes
        .iter()
        .filter_map(|r| {
            let direct = r.direct.as_ref()?;
            let step = r.steps.iter().find(|s| s.rate == direct.rate);
            Some(vec![
                r.budget.clone(),
                direct.rate.to_string(),
                side(step.and_then(|s| s.pg.cpu_us_per_request), direct.pg.as_ref()),
                side(step.and_then(|s| s.mongo.cpu_us_per_request), direct.mongo.as_ref()),
            ])
        })
        .collect();
    Block::Table { header: header.iter().map(|h| h.to_string()).collect(), rows }
}

fn switches_table(regimes: &[Regime]) -> Block {
    let per = |c: &Cost| match (c.voluntary_per_request, c.involuntary_per_request) {
        (Some(v), Some(i)) => format!("{v:.1} + {i:.2}"),
        _ => "-".into(),
    };
    per_step(regimes, &["PostgreSQL", "MongoDB"], |s| vec![per(&s.pg), per(&s.mongo)])
}

fn split_text(split: Option<Split>) -> String {
    split.map_or("-".into(), |s| format!("{:.0} µs + {:.3} cores", s.marginal_us, s.idle_cores))
}

fn split_table(regimes: &[Regime]) -> Block {
    let header = ["mix", "pool", "budget", "PostgreSQL", "MongoDB", "MongoDB ÷ PostgreSQL per request", "÷ unbudgeted"];
    let rows = regimes
        .iter()
        .map(|r| {
            vec![
                r.mix.to_string(),
                r.pool.to_string(),
                r.budget.clone(),
                split_text(r.pg_split),
                split_text(r.mongo_split),
                times(r.marginal_ratio),
                times(r.marginal_shift),
            ]
        })
        .collect();
    Block::Table { header: header.iter().map(|h| h.to_string()).collect(), rows }
}

/// One sentence per budgeted regime: its shift, and whether it favours neither engine.
pub fn statements(regimes: &[Regime]) -> Vec<String> {
    regimes
        .iter()
        .filter(|r| r.budget != "all")
        .map(|r| {
            let worst = [r.shift, r.top_shift].into_iter().flatten().max_by(|a, b| (a - 1.0).abs().total_cmp(&(b - 1.0).abs()));
            let verdict = match (holds(r), worst) {
                (Some(true), _) => format!("within {:.0}% of it: this regime favours neither engine", HOLDS_WITHIN * 100.0),
                (Some(false), Some(w)) if w > 1.0 => "MongoDB pays for this regime relative to PostgreSQL".into(),
                (Some(false), _) => "PostgreSQL pays for this regime relative to MongoDB".into(),
                (None, _) => "no reference to hold it against".into(),
            };
            let regime = match r.budget.as_str() {
                "none" => "out of their cgroups (no quota, CPU read from /proc, an eighth of the weight)".to_owned(),
                cores => format!("at {cores} CPU"),
            };
            let top = r.steps.iter().rev().find(|s| s.shift.is_some());
            format!(
                "{} (pool {}) {regime}: MongoDB ÷ PostgreSQL of the CPU per request is {} × the reference's (a quota of \
                 every core) at the same rates (median of the steps), {} at the highest rate both passed ({} req/s, \
                 MongoDB using {} of its budget, PostgreSQL {}): {verdict}.",
                r.mix,
                r.pool,
                times(r.shift),
                times(r.top_shift),
                top.map_or("-".into(), |s| s.rate.to_string()),
                share(top.and_then(|s| s.mongo.budget_share)),
                share(top.and_then(|s| s.pg.budget_share)),
            )
        })
        .collect()
}

/// The report's sections, in order.
pub fn details(regimes: &[Regime]) -> Vec<Block> {
    vec![
        Block::Heading(2, "CPU per request by budget".into()),
        table(regimes),
        Block::Heading(2, "What one more request costs, and what idling costs".into()),
        Block::Paragraph(
            "A straight line through each database's steps (cores used against requests a second): its slope is \
                 the CPU one more request costs, its intercept the cores the database burns with no requests (its \
                 background work), which the CPU per request at a low rate spreads over few requests."
                .into(),
        ),
        split_table(regimes),
        Block::Heading(2, "Context switches per request".into()),
        Block::Paragraph(
            "Each database's threads, summed: the waits they chose (a lock, the network, a condition variable) + \
                 the preemptions (a time slice used up, or the quota's throttle), per request of the step."
                .into(),
        ),
        switches_table(regimes),
        Block::Heading(2, "What our services add: the engines asked directly".into()),
        Block::Paragraph(
            "Reads at the staircase's top rate, one engine at a time, with the services' pool of connections: \
                 pgbench `-M prepared` running orders-pg's `SELECT doc FROM orders WHERE id = $1`, and the official \
                 MongoDB driver running orders-mongo's `find` by `_id`; each database's CPU per request read as the \
                 rounds read it (its cgroup), beside the same through the service (both services loaded at once)."
                .into(),
        ),
        direct_table(regimes),
    ]
}
