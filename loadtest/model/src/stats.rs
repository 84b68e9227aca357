//! The one median of the bench: of the values that are numbers (a figure not measured is left out),
//! the middle one, or the mean of the middle two; and when two sets of repeats are told apart.

/// The median of `values`' finite values; `None` when there is none.
pub fn median(values: &[f64]) -> Option<f64> {
    let mut sorted: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(sorted[n / 2]),
        _ => Some((sorted[n / 2 - 1] + sorted[n / 2]) / 2.0),
    }
}

/// Every value of `a` above every value of `b` (false when either is empty): the repeats tell the
/// two apart, whatever their medians.
pub fn above(a: &[f64], b: &[f64]) -> bool {
    let low = a.iter().copied().fold(f64::INFINITY, f64::min);
    let high = b.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    !a.is_empty() && !b.is_empty() && low > high
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_middle_value_or_the_mean_of_the_middle_two_of_what_was_measured() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[f64::NAN, 5.0]), Some(5.0));
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn one_set_is_above_another_only_when_their_ranges_do_not_touch() {
        assert!(above(&[1600.0, 1800.0], &[1200.0, 1400.0]));
        assert!(!above(&[1600.0, 1800.0], &[1200.0, 1600.0]), "a shared value is no separation");
        assert!(!above(&[1200.0, 1400.0], &[1600.0]));
        assert!(!above(&[], &[1.0]));
        assert!(!above(&[1.0], &[]));
    }
}
