//! The Prometheus text format (version 0.0.4) of named samples: the samples of one metric together
//! under one `# HELP` and `# TYPE`, label values escaped, and a sample repeated with the same name
//! and labels written once (the first one wins; Percona's exporter would report it as invalid).

use crate::naming::Sample;
use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;

/// The text of `samples` plus `mongodb_up` (1 when the server answered).
pub fn render(samples: &[Sample], up: bool) -> String {
    let mut families: BTreeMap<&str, Vec<&Sample>> = BTreeMap::new();
    for sample in samples {
        families.entry(sample.name.as_str()).or_default().push(sample);
    }
    let mut out = String::new();
    let _ = writeln!(out, "# HELP mongodb_up Whether the MongoDB server answered serverStatus.");
    let _ = writeln!(out, "# TYPE mongodb_up gauge");
    let _ = writeln!(out, "mongodb_up {}", u8::from(up));
    for (name, family) in families {
        let first = family[0];
        let kind = if first.counter { "counter" } else { "untyped" };
        let _ = writeln!(out, "# HELP {name} {}", escape_help(&first.help));
        let _ = writeln!(out, "# TYPE {name} {kind}");
        let mut seen = HashSet::new();
        for sample in family {
            let labels = labels(&sample.labels);
            if seen.insert(labels.clone()) {
                let _ = writeln!(out, "{name}{labels} {}", number(sample.value));
            }
        }
    }
    out
}

fn labels(pairs: &[(String, String)]) -> String {
    if pairs.is_empty() {
        return String::new();
    }
    let inner: Vec<String> = pairs.iter().map(|(k, v)| format!("{k}=\"{}\"", escape_value(v))).collect();
    format!("{{{}}}", inner.join(","))
}

fn escape_value(text: &str) -> String {
    text.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

fn escape_help(text: &str) -> String {
    text.replace('\\', "\\\\").replace('\n', "\\n")
}

fn number(value: f64) -> String {
    if value.is_nan() {
        "NaN".into()
    } else if value.is_infinite() {
        if value > 0.0 { "+Inf".into() } else { "-Inf".into() }
    } else {
        value.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(name: &str, labels: &[(&str, &str)], value: f64) -> Sample {
        Sample {
            name: name.into(),
            help: format!("serverStatus.{name}"),
            labels: labels.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect(),
            value,
            counter: false,
        }
    }

    #[test]
    fn samples_are_grouped_by_metric_escaped_and_written_once() {
        let samples = [
            sample("mongodb_ss_opcounters", &[("legacy_op_type", "insert")], 4.0),
            sample("mongodb_ss_mem_resident", &[], 118.0),
            sample("mongodb_ss_opcounters", &[("legacy_op_type", "query")], 2118.0),
            sample("mongodb_ss_opcounters", &[("legacy_op_type", "insert")], 99.0),
            sample("mongodb_ss_metrics_commands", &[("cmd_name", "odd \"name\"\\")], 1.5),
        ];
        let text = render(&samples, true);
        assert!(text.starts_with("# HELP mongodb_up"), "{text}");
        assert!(text.contains("\nmongodb_up 1\n"));
        let opcounters = "# TYPE mongodb_ss_opcounters untyped\nmongodb_ss_opcounters{legacy_op_type=\"insert\"} 4\n\
                          mongodb_ss_opcounters{legacy_op_type=\"query\"} 2118\n";
        assert!(text.contains(opcounters), "{text}");
        assert!(!text.contains(" 99\n"), "a repeated series is written once: {text}");
        assert!(text.contains(r#"mongodb_ss_metrics_commands{cmd_name="odd \"name\"\\"} 1.5"#), "{text}");
        assert!(text.contains("\nmongodb_ss_mem_resident 118\n"));
        assert!(render(&[], false).contains("\nmongodb_up 0\n"));
        assert_eq!(number(f64::NAN), "NaN");
        assert_eq!(number(f64::NEG_INFINITY), "-Inf");
    }
}
