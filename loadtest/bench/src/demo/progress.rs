//! Where the demo is in the whole run, in one line before each round: which round of how many,
//! the time the rounds have taken and an estimate of the time left, so a person can plan around it. The estimate
//! is the pace of the rounds so far (before the first round ends, the time to the demo's
//! deadline), never past that deadline, where extra repeats stop.

use std::time::{Duration, Instant};

/// "demo: round 2 of 4 (insert); 3 min 10 s into the rounds, about 9 min 30 s left", `began`
/// being when the first round started.
pub fn line(index: usize, rounds: usize, name: &str, began: Instant, now: Instant, deadline: Instant) -> String {
    let spent = now.saturating_duration_since(began);
    let to_deadline = deadline.saturating_duration_since(now);
    let left = if index == 0 { to_deadline } else { (spent / index as u32 * (rounds - index) as u32).min(to_deadline) };
    format!(
        "demo: round {} of {rounds} ({name}); {} into the rounds, about {} left",
        index + 1,
        words(spent),
        words(left)
    )
}

/// "45 s", "3 min 10 s", "12 min".
fn words(duration: Duration) -> String {
    let seconds = duration.as_secs();
    match (seconds / 60, seconds % 60) {
        (0, s) => format!("{s} s"),
        (m, s) if m >= 10 || s == 0 => format!("{} min", (seconds + 30) / 60),
        (m, s) => format!("{m} min {s} s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_time_left_follows_the_pace_of_the_rounds_so_far_and_never_passes_the_deadline() {
        let began = Instant::now();
        let deadline = began + Duration::from_secs(14 * 60);
        let at = |s| began + Duration::from_secs(s);
        assert_eq!(
            line(0, 4, "read", began, began, deadline),
            "demo: round 1 of 4 (read); 0 s into the rounds, about 14 min left"
        );
        assert_eq!(
            line(1, 4, "insert", began, at(190), deadline),
            "demo: round 2 of 4 (insert); 3 min 10 s into the rounds, about 9 min 30 s left",
            "three more rounds at 190 s each"
        );
        assert_eq!(
            line(2, 3, "read:60,insert:40", began, at(600), deadline),
            "demo: round 3 of 3 (read:60,insert:40); 10 min into the rounds, about 4 min left",
            "300 s a round, but only 240 s to the deadline"
        );
        assert!(line(3, 4, "shop", began, at(20 * 60), deadline).ends_with("about 0 s left"), "past the deadline");
    }
}
