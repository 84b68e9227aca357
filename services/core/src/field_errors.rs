//! `FieldErrors`: the bad fields of one request body, collected while it is read. The first
//! `FieldErrors::MAX_LISTED` are kept with their path and message; any more are only counted, and
//! their paths are never even spelled out. One body of `MAX_BODY_BYTES` can hold tens of
//! thousands of bad fields (every key unknown, one key repeated); listing them all would cost a
//! path string each and send back an answer as large as the body, so a hostile body costs no
//! more to reject than a valid one costs to accept.

use std::fmt;

/// One bad field: `field` is a path such as `items[0].quantity`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FieldError {
    pub field: String,
    pub message: String,
}

/// The bad fields found, in the order they were found: the first `MAX_LISTED` listed, the rest
/// counted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldErrors {
    listed: Vec<FieldError>,
    unlisted: usize,
}

impl FieldErrors {
    /// How many bad fields are listed with their path and message.
    pub const MAX_LISTED: usize = 100;

    pub fn new() -> Self {
        Self::default()
    }

    /// Records a bad field; its path is formatted (and its message kept) only while fewer than
    /// `MAX_LISTED` are listed.
    pub fn push(&mut self, field: impl fmt::Display, message: impl Into<String>) {
        if self.listed.len() < Self::MAX_LISTED {
            self.listed.push(FieldError { field: field.to_string(), message: message.into() });
        } else {
            self.unlisted += 1;
        }
    }

    /// The first `MAX_LISTED` bad fields.
    pub fn listed(&self) -> &[FieldError] {
        &self.listed
    }

    /// How many more bad fields there were beyond the listed ones.
    pub fn unlisted(&self) -> usize {
        self.unlisted
    }

    pub fn is_empty(&self) -> bool {
        self.listed.is_empty()
    }

    /// Every bad field found, listed or not.
    pub fn len(&self) -> usize {
        self.listed.len() + self.unlisted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_hundred_are_listed_in_order_and_the_rest_counted() {
        let mut errors = FieldErrors::new();
        assert!(errors.is_empty());
        for i in 0..250 {
            errors.push(format_args!("items[{i}].sku"), "must be a string, not a number");
        }
        assert_eq!(errors.listed().len(), FieldErrors::MAX_LISTED);
        assert_eq!(errors.unlisted(), 150);
        assert_eq!(errors.len(), 250);
        assert_eq!(errors.listed()[0].field, "items[0].sku");
        assert_eq!(errors.listed()[99].field, "items[99].sku");
    }

    #[test]
    fn a_path_past_the_listed_ones_is_never_formatted() {
        struct Panics;
        impl fmt::Display for Panics {
            fn fmt(&self, _: &mut fmt::Formatter<'_>) -> fmt::Result {
                panic!("formatted a path that is not listed")
            }
        }
        let mut errors = FieldErrors::new();
        for _ in 0..FieldErrors::MAX_LISTED {
            errors.push("x", "unknown field");
        }
        errors.push(Panics, "unknown field");
        assert_eq!((errors.listed().len(), errors.unlisted()), (100, 1));
    }
}
