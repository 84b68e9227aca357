//! The metric names a PromQL expression reads: what is left once string literals, label matchers
//! (`{...}`), ranges (`[...]`), grouping clauses (`by (...)`, `on (...)`, ...), function names (a
//! name before `(`), aggregation operators, keywords and numbers are taken out. Enough for the dashboard's expressions,
//! which is all it is for; a name it missed would fail the live test as a panel without data.

/// Words that are never metric names: binary operators, modifiers, and the aggregation operators
/// (which may stand before `by (...)` instead of before their parenthesis).
const KEYWORDS: [&str; 23] = [
    "and",
    "or",
    "unless",
    "bool",
    "offset",
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "sum",
    "min",
    "max",
    "avg",
    "group",
    "stddev",
    "stdvar",
    "count",
    "count_values",
    "bottomk",
    "topk",
    "quantile",
];
const GROUPING: [&str; 6] = ["by", "without", "on", "ignoring", "group_left", "group_right"];

pub fn metric_names(expr: &str) -> Vec<String> {
    let cleaned = strip(expr);
    let chars: Vec<char> = cleaned.chars().collect();
    let mut names = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_ascii_alphabetic() || c == '_' || c == ':' {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_' || chars[i] == ':') {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let next = chars[i..].iter().find(|c| !c.is_whitespace());
            if GROUPING.contains(&word.as_str()) && next == Some(&'(') {
                // Skip the label list of `by (...)` and its like.
                while i < chars.len() && chars[i] != ')' {
                    i += 1;
                }
            } else if next != Some(&'(') && !KEYWORDS.contains(&word.as_str()) && !names.contains(&word) {
                names.push(word);
            }
        } else if c.is_ascii_digit() || c == '.' {
            // A number, with an exponent such as 1e-3.
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.' || chars[i] == '-') {
                i += 1;
            }
        } else {
            i += 1;
        }
    }
    names
}

/// The expression without string literals, `{...}` and `[...]`.
fn strip(expr: &str) -> String {
    let mut out = String::with_capacity(expr.len());
    let (mut depth, mut quote) = (0_u32, None::<char>);
    let mut escaped = false;
    for c in expr.chars() {
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '"' | '\'' | '`' => quote = Some(c),
            '{' | '[' => depth += 1,
            '}' | ']' => depth = depth.saturating_sub(1),
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_found_and_everything_else_left_out() {
        let expr = r#"histogram_quantile(0.95, sum by (scenario, le) (rate(k6_http_req_duration_seconds{name=~"/a{b}"}[$__rate_interval]))) / on (scenario) group_left sum(x_total) or vector(1e-3) > bool 0"#;
        assert_eq!(metric_names(expr), ["k6_http_req_duration_seconds", "x_total"]);
        assert_eq!(metric_names("pg_up"), ["pg_up"]);
        assert_eq!(metric_names("sum(a) - sum(a) + b offset 5m"), ["a", "b"]);
    }
}
