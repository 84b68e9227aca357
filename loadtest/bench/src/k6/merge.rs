//! One test run in k6 execution segments on several load droplets, merged into the summary of the
//! whole test: the same JSON shape `loadtest/k6/orders.js` writes (see `summary`), so the rest of
//! the round reads it as if one k6 had offered the full rate. Counts, failures, iterations and
//! dropped iterations are summed, achieved rates too (every part divides by the same duration);
//! latency percentiles come from all parts' requests together: each part's `quantiles_ms` grid is
//! read as its latency distribution (linear between grid points, as k6 interpolates between
//! ranks), the parts are mixed in proportion to their request counts and the mixture is inverted.
//! Averaging the parts' percentiles would be wrong whenever the parts differ (a saturated load
//! droplet, one slow path). The parts are resumed and stopped together, so the run lasted as long
//! as the longest part (k6's own durations differ by some milliseconds; the shortest would leave
//! the last step unjudged). A part that ended early shows as requests missing from the merge.

use anyhow::{Context, Result, bail};
use serde_json::{Map, Value, json};

/// One part's latency distribution: (percent, ms) points from 0 (min) to 100 (max), ascending.
#[derive(Debug, Clone, PartialEq)]
pub struct Grid {
    pub count: u64,
    pub points: Vec<(f64, f64)>,
}

impl Grid {
    /// Share of this part's requests at or below `ms`.
    fn cdf(&self, ms: f64) -> f64 {
        let (Some(first), Some(last)) = (self.points.first(), self.points.last()) else { return 0.0 };
        if ms < first.1 {
            return 0.0;
        }
        if ms >= last.1 {
            return 1.0;
        }
        // The last point at or below `ms` and the one after it.
        let after = self.points.iter().position(|p| p.1 > ms).unwrap_or(self.points.len() - 1);
        let (a, b) = (self.points[after - 1], self.points[after]);
        let share = if b.1 > a.1 { (ms - a.1) / (b.1 - a.1) } else { 1.0 };
        (a.0 + (b.0 - a.0) * share) / 100.0
    }

    fn min(&self) -> Option<f64> {
        self.points.first().map(|p| p.1)
    }

    fn max(&self) -> Option<f64> {
        self.points.last().map(|p| p.1)
    }
}

/// The `percent` quantile of the count-weighted mixture of `grids`, in ms.
pub fn mixture_quantile(grids: &[Grid], percent: f64) -> Option<f64> {
    let grids: Vec<&Grid> = grids.iter().filter(|g| g.count > 0 && !g.points.is_empty()).collect();
    let total: u64 = grids.iter().map(|g| g.count).sum();
    let low = grids.iter().filter_map(|g| g.min()).reduce(f64::min)?;
    let high = grids.iter().filter_map(|g| g.max()).reduce(f64::max)?;
    if percent <= 0.0 {
        return Some(low);
    }
    if percent >= 100.0 {
        return Some(high);
    }
    let wanted = percent / 100.0;
    let mixed = |ms: f64| grids.iter().map(|g| g.count as f64 * g.cdf(ms)).sum::<f64>() / total as f64;
    // The smallest latency whose mixed share reaches the wanted one; bisection to a microsecond.
    let (mut lo, mut hi) = (low, high);
    while hi - lo > 1e-4 {
        let mid = (lo + hi) / 2.0;
        if mixed(mid) >= wanted { hi = mid } else { lo = mid }
    }
    Some(hi)
}

fn count_of(figures: &Value) -> u64 {
    figures["count"].as_u64().unwrap_or(0)
}

fn grid_of(figures: &Value, what: &str) -> Result<Grid> {
    let count = count_of(figures);
    let points: Vec<(f64, f64)> = figures["quantiles_ms"]
        .as_array()
        .map(|list| list.iter().filter_map(|p| Some((p.get(0)?.as_f64()?, p.get(1)?.as_f64()?))).collect())
        .unwrap_or_default();
    // Figures whose latency the script does not keep (its endpoints') merge by their counts alone.
    let latency_kept = !figures["latency_ms"]["p50"].is_null();
    if count > 0 && points.len() < 3 && latency_kept {
        bail!("{what}: {count} requests but no quantiles_ms grid (a k6 script older than the load droplets' merge)");
    }
    Ok(Grid { count, points })
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// The figures object (count, achieved_rate, failures, latency_ms, quantiles_ms) of all parts.
fn merge_figures(parts: &[&Value], what: &str) -> Result<Value> {
    let grids = parts.iter().map(|f| grid_of(f, what)).collect::<Result<Vec<_>>>()?;
    let sum = |key: &str| parts.iter().map(|f| f[key].as_u64().unwrap_or(0)).sum::<u64>();
    let rate: f64 = parts.iter().map(|f| f["achieved_rate"].as_f64().unwrap_or(0.0)).sum();
    let percents: Vec<f64> =
        grids.iter().find(|g| g.count > 0).map(|g| g.points.iter().map(|p| p.0).collect()).unwrap_or_default();
    let quantile = |p: f64| mixture_quantile(&grids, p).map(round3);
    let quantiles: Vec<Value> = percents.iter().filter_map(|p| Some(json!([p, quantile(*p)?]))).collect();
    let mut merged = parts.first().map(|f| (*f).clone()).unwrap_or_else(|| json!({}));
    merged["count"] = json!(sum("count"));
    merged["failures"] = json!(sum("failures"));
    merged["achieved_rate"] = json!((rate * 100.0).round() / 100.0);
    merged["latency_ms"] = json!({
        "p50": quantile(50.0), "p90": quantile(90.0), "p95": quantile(95.0), "p99": quantile(99.0), "max": quantile(100.0),
    });
    merged["quantiles_ms"] = Value::Array(quantiles);
    Ok(merged)
}

fn all_true(parts: &[&Value], key: &str) -> bool {
    parts.iter().all(|p| p[key].as_bool().unwrap_or(false))
}

/// Sub-objects `key` (an object of figures by name, or a list of them by position) of all parts.
fn merge_named(parts: &[&Value], key: &str, what: &str) -> Result<Value> {
    let first = &parts[0][key];
    if let Some(list) = first.as_array() {
        let mut out = Vec::new();
        for i in 0..list.len() {
            let same: Vec<&Value> = parts.iter().map(|p| &p[key][i]).collect();
            if same.iter().any(|s| s.is_null()) {
                bail!("{what}: the parts have different {key}");
            }
            // Everything but the figures (step, rate, offered_iterations) is the first part's.
            out.push(merge_figures(&same, &format!("{what} {key}[{i}]"))?);
        }
        return Ok(Value::Array(out));
    }
    let mut out = Map::new();
    for name in first.as_object().map(|o| o.keys().cloned().collect::<Vec<_>>()).unwrap_or_default() {
        let same: Vec<&Value> = parts.iter().map(|p| &p[key][&name]).collect();
        out.insert(name.clone(), merge_figures(&same, &format!("{what} {key} {name}"))?);
    }
    Ok(Value::Object(out))
}

fn merge_target(parts: &[&Value], name: &str) -> Result<Value> {
    let what = format!("target {name}");
    let mut merged = merge_figures(parts, &what)?;
    for key in ["iterations", "dropped_iterations"] {
        merged[key] = json!(parts.iter().map(|p| p[key].as_u64().unwrap_or(0)).sum::<u64>());
    }
    if let Some(thresholds) = parts[0]["thresholds"].as_object() {
        let names: Vec<&String> = thresholds.keys().collect();
        merged["thresholds"] = Value::Object(
            names.into_iter().map(|k| (k.clone(), json!(parts.iter().all(|p| p["thresholds"][k] == true)))).collect(),
        );
    }
    merged["passed"] = json!(all_true(parts, "passed"));
    merged["endpoints"] = merge_named(parts, "endpoints", &what)?;
    merged["steps"] = merge_named(parts, "steps", &what)?;
    Ok(merged)
}

/// The summary of the whole test from the summaries of its execution segments (same script, same
/// settings, different segments). The first part gives everything that is not a figure.
pub fn merge(parts: &[Value]) -> Result<Value> {
    let Some(first) = parts.first() else { bail!("no summaries to merge") };
    let all: Vec<&Value> = parts.iter().collect();
    for part in &all[1..] {
        for key in ["offered", "mix", "executor"] {
            if part[key] != first[key] {
                bail!("the load droplets' summaries differ in `{key}`: not segments of the same test");
            }
        }
    }
    let mut merged = first.clone();
    let run_seconds = all.iter().filter_map(|p| p["run_seconds"].as_f64()).reduce(f64::max).context("run_seconds")?;
    merged["run_seconds"] = json!(run_seconds);
    merged["passed"] = json!(all_true(&all, "passed"));
    merged["segments"] = json!(parts.len());
    let names: Vec<String> =
        first["targets"].as_object().map(|o| o.keys().cloned().collect()).context("summary without targets")?;
    for name in names {
        let same: Vec<&Value> = all.iter().map(|p| &p["targets"][&name]).collect();
        if same.iter().any(|t| t.is_null()) {
            bail!("target {name} is missing from a load droplet's summary");
        }
        merged["targets"][&name] = merge_target(&same, &name)?;
    }
    Ok(merged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use orders_loadgen::summary::{FIXTURE, Summary};

    /// k6's percentile of sorted samples: linear between the closest ranks.
    fn k6_percentile(sorted: &[f64], percent: f64) -> f64 {
        let i = percent / 100.0 * (sorted.len() as f64 - 1.0);
        let (lo, hi) = (sorted[i.floor() as usize], sorted[i.ceil() as usize]);
        lo + (hi - lo) * (i - i.floor())
    }

    const PERCENTS: [f64; 9] = [0.0, 10.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0, 100.0];

    fn grid(samples: &mut [f64]) -> Grid {
        samples.sort_by(f64::total_cmp);
        let mut percents: Vec<f64> = (0..=100).map(f64::from).collect();
        percents.extend([99.5, 99.9]);
        percents.sort_by(f64::total_cmp);
        Grid {
            count: samples.len() as u64,
            points: percents.iter().map(|p| (*p, k6_percentile(samples, *p))).collect(),
        }
    }

    /// Deterministic samples: `n` latencies spread between `low` and `high` ms with a long tail.
    fn samples(n: usize, low: f64, high: f64, seed: u64) -> Vec<f64> {
        let mut state = seed;
        (0..n)
            .map(|_| {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let u = (state >> 11) as f64 / (1u64 << 53) as f64;
                low + (high - low) * u * u
            })
            .collect()
    }

    #[test]
    fn merged_percentiles_are_those_of_all_requests_together_not_averaged_ones() {
        let mut fast = samples(8800, 1.0, 10.0, 1);
        let mut slow = samples(1200, 20.0, 200.0, 2);
        let grids = [grid(&mut fast), grid(&mut slow)];
        let mut union: Vec<f64> = fast.iter().chain(slow.iter()).copied().collect();
        union.sort_by(f64::total_cmp);
        for p in [50.0, 90.0, 95.0, 99.0] {
            let exact = k6_percentile(&union, p);
            let merged = mixture_quantile(&grids, p).expect("requests");
            assert!((merged - exact).abs() <= exact * 0.03 + 0.05, "p{p}: merged {merged}, exact {exact}");
        }
        // Averaging the two parts' p90s says ~100 ms; the p90 of all requests is a fifth of that.
        let averaged = (k6_percentile(&fast, 90.0) + k6_percentile(&slow, 90.0)) / 2.0;
        let exact = k6_percentile(&union, 90.0);
        assert!(averaged > 3.0 * exact, "averaged {averaged} vs exact {exact}");
        assert_eq!(mixture_quantile(&grids, 100.0), Some(union[union.len() - 1]));
        assert_eq!(mixture_quantile(&grids, 0.0), Some(union[0]));
    }

    #[test]
    fn identical_parts_merge_to_the_same_percentiles() {
        let mut a = samples(5000, 2.0, 40.0, 7);
        let g = grid(&mut a);
        for p in PERCENTS {
            let merged = mixture_quantile(&[g.clone(), g.clone()], p).expect("requests");
            assert!((merged - k6_percentile(&a, p)).abs() < 0.01, "p{p}");
        }
        let empty = Grid { count: 0, points: Vec::new() };
        assert_eq!(mixture_quantile(&[g.clone(), empty.clone()], 95.0), mixture_quantile(&[g], 95.0));
        assert_eq!(mixture_quantile(&[empty], 95.0), None);
    }

    /// The fixture with a quantile grid on every figure, as the current script writes it, with
    /// latencies scaled by `factor`.
    fn part(factor: f64) -> Value {
        let mut summary: Value = serde_json::from_str(FIXTURE).expect("fixture");
        fn add_grid(figures: &mut Value, factor: f64) {
            let count = figures["count"].as_u64().unwrap_or(0);
            let grid: Vec<Value> =
                if count == 0 { Vec::new() } else { (0..=100).map(|p| json!([p, f64::from(p) * factor])).collect() };
            figures["quantiles_ms"] = Value::Array(grid);
        }
        for target in summary["targets"].as_object_mut().expect("targets").values_mut() {
            add_grid(target, factor);
            for endpoint in target["endpoints"].as_object_mut().expect("endpoints").values_mut() {
                add_grid(endpoint, factor);
            }
            for step in target["steps"].as_array_mut().expect("steps") {
                add_grid(step, factor);
            }
        }
        summary
    }

    #[test]
    fn two_segments_of_a_run_merge_into_one_summary_of_the_full_rate() {
        let (a, mut b) = (part(1.0), part(3.0));
        b["run_seconds"] = json!(6.3);
        let merged = merge(&[a.clone(), b.clone()]).expect("merge");
        let summary = Summary::parse(&merged.to_string()).expect("the merged summary reads as a summary");
        let single = Summary::parse(FIXTURE).expect("fixture");
        assert_eq!(summary.run_seconds, 6.3, "the longest part");
        let (pg, one) = (&summary.targets["pg"], &single.targets["pg"]);
        assert_eq!(pg.figures.count, 2 * one.figures.count);
        assert_eq!(pg.dropped_iterations, 2 * one.dropped_iterations);
        assert_eq!(pg.steps[1].figures.count, 2 * one.steps[1].figures.count);
        assert_eq!(pg.steps[1].offered_iterations, one.steps[1].offered_iterations, "the script offers the full rate");
        assert!((pg.figures.achieved_rate - 2.0 * one.figures.achieved_rate).abs() < 0.02);
        assert_eq!(pg.endpoints["insert"].count, 2 * one.endpoints["insert"].count);
        // Equal counts, latencies 0..100 and 0..300 ms uniform: the mixture's median is 75 ms.
        let p50 = pg.figures.latency_ms.p50.expect("p50");
        assert!((p50 - 75.0).abs() < 0.5, "p50 {p50}");
        assert_eq!(pg.figures.latency_ms.max, Some(300.0));
    }

    #[test]
    fn figures_without_latency_merge_by_their_counts() {
        let without = |part: &mut Value| {
            for endpoint in part["targets"]["pg"]["endpoints"].as_object_mut().expect("endpoints").values_mut() {
                endpoint["latency_ms"] = json!({"p50": null, "p90": null, "p95": null, "p99": null, "max": null});
                endpoint["quantiles_ms"] = json!([]);
            }
        };
        let (mut a, mut b) = (part(1.0), part(2.0));
        without(&mut a);
        without(&mut b);
        let merged = merge(&[a.clone(), b]).expect("merge");
        let insert = &merged["targets"]["pg"]["endpoints"]["insert"];
        assert_eq!(insert["count"], 2 * a["targets"]["pg"]["endpoints"]["insert"]["count"].as_u64().expect("count"));
        assert!(insert["latency_ms"]["p50"].is_null(), "{insert}");
    }

    #[test]
    fn parts_of_different_tests_or_without_a_grid_are_refused() {
        let mut other = part(1.0);
        other["offered"]["peak_rate"] = json!(5);
        let error = merge(&[part(1.0), other]).expect_err("different staircase");
        assert!(error.to_string().contains("offered"), "{error}");
        let old: Value = serde_json::from_str(FIXTURE).expect("fixture");
        let error = merge(&[old.clone(), old]).expect_err("no grid");
        assert!(format!("{error:#}").contains("quantiles_ms"), "{error:#}");
    }
}
