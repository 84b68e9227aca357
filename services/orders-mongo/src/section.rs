//! A part of `/diagnostics` as the server answered it: the figures read, or the error it gave
//! instead (a command a standalone or a restricted user cannot run), so one refusal does not fail
//! the whole report. Shared by `diagnostics` and `tls`.

use mongodb::bson::Document;
use serde::{Deserialize, Serialize};

/// A section as read, or the error the server answered instead (`{"error": "..."}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Section<T> {
    Refused { error: String },
    Read(T),
}

impl<T> Section<T> {
    pub fn read(&self) -> Option<&T> {
        match self {
            Section::Read(value) => Some(value),
            Section::Refused { .. } => None,
        }
    }
}

/// The section `read` makes of a command's answer, or its error.
pub fn section<T>(result: &Result<Document, String>, read: impl Fn(&Document) -> T) -> Section<T> {
    match result {
        Ok(document) => Section::Read(read(document)),
        Err(error) => Section::Refused { error: error.clone() },
    }
}
