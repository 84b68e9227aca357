//! The fairness gate's findings as `result.json` records them: each check with every target's
//! value. `round::fairness` runs the checks.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    pub name: String,
    /// Each target's value, by target name (`"pg": "waits for disk (...)"`), in the round's order.
    #[serde(flatten)]
    pub values: IndexMap<String, String>,
    pub ok: bool,
    /// What the values mean, or what to do about a mismatch.
    pub note: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fairness {
    pub ok: bool,
    pub checks: Vec<Check>,
}

impl Fairness {
    pub fn mismatches(&self) -> Vec<String> {
        self.checks
            .iter()
            .filter(|c| !c.ok)
            .map(|c| {
                let values: Vec<String> = c.values.iter().map(|(target, value)| format!("{target} {value}")).collect();
                format!("{}: {} ({})", c.name, values.join(", "), c.note)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_check_keeps_every_targets_value_in_order_under_its_name() {
        let text =
            r#"{"name": "durability", "pg": "waits for disk", "mongo": "does not wait", "ok": false, "note": "n"}"#;
        let check: Check = serde_json::from_str(text).expect("a check of a schema 2 file");
        assert_eq!(check.values.keys().collect::<Vec<_>>(), ["pg", "mongo"]);
        let fairness = Fairness { ok: false, checks: vec![check.clone()] };
        assert_eq!(fairness.mismatches(), ["durability: pg waits for disk, mongo does not wait (n)"]);
        let json = serde_json::to_value(&check).expect("json");
        assert_eq!((json["pg"].as_str(), json["ok"].as_bool()), (Some("waits for disk"), Some(false)));
    }
}
