//! Durations on the command line, as k6 writes them: `30s`, `2m`, `1m30s`, `500ms` (humantime's
//! grammar), or a plain number of seconds (`2.5`, what the runner passes on to the generator).
//! Zero is refused: every duration here is a length of time something must last.

use std::time::Duration;

/// `text` as a duration above zero.
pub fn parse(text: &str) -> Result<Duration, String> {
    let bad = || format!("\"{text}\" is not a duration like 30s, 2m or 1m30s");
    let parsed = match text.trim().parse::<f64>() {
        Ok(seconds) if seconds.is_finite() && seconds > 0.0 => Ok(Duration::from_secs_f64(seconds)),
        Ok(_) => Err(bad()),
        Err(_) => humantime::parse_duration(text.trim()).map_err(|_| bad()),
    }?;
    if parsed.is_zero() { Err(bad()) } else { Ok(parsed) }
}

/// `duration` as `parse` reads it back: whole seconds as `30s`, anything else as seconds (`2.5`).
pub fn arg(duration: Duration) -> String {
    let seconds = duration.as_secs_f64();
    if duration.subsec_nanos() == 0 { format!("{seconds}s") } else { format!("{seconds}") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_like_k6_durations() {
        assert_eq!(parse("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse("2.5"), Ok(Duration::from_millis(2500)));
        assert!(parse("0").is_err());
        assert!(parse("0s").is_err());
        assert!(parse("5x").is_err());
        assert!(parse("30s5").is_err());
        for d in [Duration::from_secs(4), Duration::from_millis(2500), Duration::from_millis(100)] {
            assert_eq!(parse(&arg(d)), Ok(d), "{}", arg(d));
        }
    }
}
