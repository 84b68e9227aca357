//! A `Duration` as the files write it: a number of seconds (`3.5`, `30.0`), for
//! `#[serde(with = "orders_bench_model::seconds")]` on a field the code holds as a `Duration`. A
//! negative, infinite or too large number is refused when read.

use serde::{Deserialize, Deserializer, Serializer};
use std::time::Duration;

pub fn serialize<S: Serializer>(duration: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_f64(duration.as_secs_f64())
}

pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
    let seconds = f64::deserialize(deserializer)?;
    Duration::try_from_secs_f64(seconds)
        .map_err(|_| serde::de::Error::custom(format!("{seconds} is not a number of seconds")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Held {
        #[serde(with = "super")]
        seconds: Duration,
    }

    #[test]
    fn a_duration_is_written_and_read_back_as_the_same_seconds() {
        for text in ["1.0", "1.5", "3.5", "30.0", "0.1", "1.332", "90.25"] {
            let json = format!(r#"{{"seconds":{text}}}"#);
            let held: Held = serde_json::from_str(&json).expect("seconds");
            assert_eq!(serde_json::to_string(&held).expect("JSON"), json);
        }
        let held = Held { seconds: Duration::from_millis(2500) };
        assert_eq!(serde_json::to_string(&held).expect("JSON"), r#"{"seconds":2.5}"#);
        assert!(serde_json::from_str::<Held>(r#"{"seconds":-1.0}"#).is_err());
    }
}
