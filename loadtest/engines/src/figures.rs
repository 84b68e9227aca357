//! Helpers both engines' backends read `/diagnostics` with: the service's runtime in words, figures
//! as floats, differences and growth between two snapshots, a typed section's fields as text.

use orders_bench_model::explain::Growth;
use serde::Serialize;
use serde_json::{Number, Value};
use std::collections::BTreeMap;

/// The service's tokio runtime as its `/diagnostics` reports it (`"runtime": {"flavor":
/// "current_thread", "worker_threads": 1}`), in words: `current_thread, 1 worker thread`.
pub fn runtime(v: &Value) -> Option<String> {
    let runtime = v.get("runtime")?;
    let flavor = runtime.get("flavor")?.as_str()?;
    let threads = runtime.get("worker_threads")?.as_u64()?;
    Some(format!("{flavor}, {threads} worker thread{}", if threads == 1 { "" } else { "s" }))
}

/// An integer figure as the explaining arithmetic uses it.
pub fn float(value: Option<i64>) -> Option<f64> {
    value.map(|v| v as f64)
}

/// A server's figure (integer or not) as a float.
pub fn figure(value: Option<&Number>) -> Option<f64> {
    value.and_then(Number::as_f64)
}

/// A struct's fields by their serialized names, with their values as text (numbers and booleans
/// written out, absent ones left out): the settings as `result.json` records them.
pub fn as_text_map(value: &impl Serialize) -> BTreeMap<String, String> {
    let Ok(Value::Object(fields)) = serde_json::to_value(value) else { return BTreeMap::new() };
    fields
        .into_iter()
        .filter_map(|(name, value)| match value {
            Value::Null => None,
            Value::String(text) => Some((name, text)),
            other => Some((name, other.to_string())),
        })
        .collect()
}

pub fn diff(after: Option<f64>, before: Option<f64>) -> Option<f64> {
    Some(after? - before?)
}

pub fn max_of(values: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    values.flatten().reduce(f64::max)
}

pub fn growth_map(before: &BTreeMap<String, f64>, after: &BTreeMap<String, f64>) -> BTreeMap<String, Growth> {
    before
        .keys()
        .chain(after.keys())
        .map(|k| (k.clone(), Growth::of(before.get(k).copied(), after.get(k).copied())))
        .collect()
}
