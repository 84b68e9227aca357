//! `FieldErrors`: the bad fields of one request body, collected while it is read. The first
//! `FieldErrors::MAX_LISTED` are kept with their path and message; any more are only counted, and
//! their paths are never even spelled out. One body of `MAX_BODY_BYTES` can hold tens of
//! thousands of bad fields (every key unknown, one key repeated); listing them all would cost a
//! path string each and send back an answer as large as the body, so a hostile body costs no
//! more to reject than a valid one costs to accept. For the same reason a client's text repeated
//! in an error (a field path with an unknown key, a path id, a query value) is cut to
//! `MAX_ECHOED` characters by `echo`.

use std::fmt;

/// The most characters of a client's own text an error repeats.
pub const MAX_ECHOED: usize = 64;

/// `text` as an error repeats it: whole up to `MAX_ECHOED` characters, else its first
/// `MAX_ECHOED` and an ellipsis.
pub fn echo(text: &str) -> String {
    match text.char_indices().nth(MAX_ECHOED) {
        None => text.to_owned(),
        Some((end, _)) => format!("{}…", &text[..end]),
    }
}

/// One bad field: `field` is a path such as `items[0].quantity` (cut by `echo`).
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
    /// `MAX_LISTED` are listed, and cut to `MAX_ECHOED` characters (an unknown key is the client's
    /// own text, of any length).
    pub fn push(&mut self, field: impl fmt::Display, message: impl Into<String>) {
        if self.listed.len() < Self::MAX_LISTED {
            let mut path = field.to_string();
            if path.len() > MAX_ECHOED {
                path = echo(&path);
            }
            self.listed.push(FieldError { field: path, message: message.into() });
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

    #[test]
    fn a_long_field_path_is_cut_to_the_echo_bound() {
        let mut errors = FieldErrors::new();
        let key = "k".repeat(100_000);
        errors.push(format_args!("customer.{key}"), "unknown field");
        errors.push("items[0].sku", "is required");
        let listed = errors.listed();
        assert_eq!(listed[0].field.chars().count(), MAX_ECHOED + 1, "{}", listed[0].field);
        assert!(listed[0].field.starts_with("customer.kkk") && listed[0].field.ends_with('…'));
        assert_eq!(listed[1].field, "items[0].sku");
        assert_eq!(echo("é".repeat(65).as_str()), format!("{}…", "é".repeat(64)));
        assert_eq!(echo("short"), "short");
    }
}
