//! How each old primary rejoined, from its own files (issue 43, point 2): whether Patroni ran
//! `pg_rewind` on the old PostgreSQL primary (the lines of its member's `patroni.log` that name it),
//! and what the old MongoDB primary rolled back (the BSON files under its dbpath's `rollback/`
//! written since the kill: how many documents, and how many of them were acknowledged orders —
//! which must be none).

use anyhow::{Context, Result};
use mongodb::bson::{Bson, Document};
use serde::Serialize;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

#[derive(Debug, Clone, Default, Serialize)]
pub struct Rejoin {
    /// PostgreSQL: the old primary's Patroni log lines that mention `pg_rewind`.
    pub pg_rewind: Option<Vec<String>>,
    /// MongoDB: the documents in the rollback files written since the kill, and those of them
    /// that were acknowledged orders.
    pub rolled_back: Option<u64>,
    pub rolled_back_acknowledged: Option<u64>,
    pub rollback_files: Vec<String>,
    /// What could not be read.
    pub error: Option<String>,
}

/// The lines of `log` that mention `pg_rewind`.
pub fn pg_rewind(log: &Path) -> Rejoin {
    match std::fs::read_to_string(log) {
        Ok(text) => Rejoin {
            pg_rewind: Some(text.lines().filter(|l| l.contains("pg_rewind")).map(str::to_owned).collect()),
            ..Rejoin::default()
        },
        Err(e) => Rejoin { error: Some(format!("{}: {e}", log.display())), ..Rejoin::default() },
    }
}

/// The `--dbpath` of a `mongod` command line.
pub fn dbpath(cmdline: &[String]) -> Option<PathBuf> {
    let at = cmdline.iter().position(|a| a == "--dbpath");
    at.and_then(|i| cmdline.get(i + 1))
        .or_else(|| cmdline.iter().find_map(|a| a.strip_prefix("--dbpath=").map(|_| a)))
        .map(|a| PathBuf::from(a.strip_prefix("--dbpath=").unwrap_or(a)))
}

fn bson_files(dir: &Path, since: SystemTime, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            bson_files(&path, since, out);
        } else if path.extension().is_some_and(|e| e == "bson")
            && entry.metadata().and_then(|m| m.modified()).is_ok_and(|t| t >= since)
        {
            out.push(path);
        }
    }
}

fn id(doc: &Document) -> Option<i64> {
    match doc.get("_id")? {
        Bson::Int64(v) => Some(*v),
        Bson::Int32(v) => Some(i64::from(*v)),
        _ => None,
    }
}

/// The rollback files under `dbpath/rollback` written since `since`, against `acked`.
pub fn mongo_rollback(dbpath: &Path, since: SystemTime, acked: &HashSet<i64>) -> Rejoin {
    let mut files = Vec::new();
    bson_files(&dbpath.join("rollback"), since, &mut files);
    let read = || -> Result<(u64, u64)> {
        let (mut docs, mut acknowledged) = (0, 0);
        for file in &files {
            let bytes = std::fs::read(file).with_context(|| file.display().to_string())?;
            let mut rest = &bytes[..];
            while !rest.is_empty() {
                let doc =
                    Document::from_reader(&mut rest).with_context(|| format!("a document of {}", file.display()))?;
                docs += 1;
                acknowledged += u64::from(id(&doc).is_some_and(|i| acked.contains(&i)));
            }
        }
        Ok((docs, acknowledged))
    };
    let rollback_files = files.iter().map(|f| f.display().to_string()).collect();
    match read() {
        Ok((docs, acknowledged)) => Rejoin {
            rolled_back: Some(docs),
            rolled_back_acknowledged: Some(acknowledged),
            rollback_files,
            ..Rejoin::default()
        },
        Err(e) => Rejoin { rollback_files, error: Some(format!("{e:#}")), ..Rejoin::default() },
    }
}

/// The rejoin in one table cell.
pub fn cell(r: &Rejoin) -> String {
    let mut parts = Vec::new();
    if let Some(lines) = &r.pg_rewind {
        parts.push(match lines.len() {
            0 => "pg_rewind not in Patroni's log".to_owned(),
            n => format!("pg_rewind in Patroni's log ({n} lines; the last: `{}`)", lines[n - 1].trim()),
        });
    }
    if let (Some(docs), Some(acked)) = (r.rolled_back, r.rolled_back_acknowledged) {
        parts.push(format!(
            "rolled back {docs} documents in {} files, **{acked}** of them acknowledged orders",
            r.rollback_files.len()
        ));
    }
    if let Some(e) = &r.error {
        parts.push(format!("unread: {e}"));
    }
    if parts.is_empty() { "not read".into() } else { parts.join("; ") }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mongodb::bson::doc;

    #[test]
    fn rolled_back_documents_are_counted_and_acknowledged_ones_found() {
        let dir = std::env::temp_dir().join(format!("rollback-test-{}", std::process::id()));
        let coll = dir.join("rollback").join("some-uuid");
        std::fs::create_dir_all(&coll).expect("dirs");
        let mut bytes = Vec::new();
        for id in [7_i64, 8, 9] {
            doc! {"_id": id, "idempotency_key": "k"}.to_writer(&mut bytes).expect("bson");
        }
        std::fs::write(coll.join("removed.2026-12-07T15-00-00.0.bson"), &bytes).expect("file");
        let since = SystemTime::now() - std::time::Duration::from_secs(60);
        let r = mongo_rollback(&dir, since, &HashSet::from([8, 100]));
        assert_eq!((r.rolled_back, r.rolled_back_acknowledged), (Some(3), Some(1)), "{r:?}");
        assert!(cell(&r).contains("rolled back 3 documents in 1 files, **1** of them"));
        std::fs::write(coll.join("removed.bad.bson"), [9, 0, 0]).expect("file");
        assert!(mongo_rollback(&dir, since, &HashSet::new()).error.is_some());
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(mongo_rollback(&dir, since, &HashSet::new()).rolled_back, Some(0));
    }

    #[test]
    fn the_dbpath_and_the_rewind_lines_are_found() {
        let args = |a: &[&str]| a.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(dbpath(&args(&["mongod", "--dbpath", "/d/data", "--fork"])), Some(PathBuf::from("/d/data")));
        assert_eq!(dbpath(&args(&["mongod", "--dbpath=/e"])), Some(PathBuf::from("/e")));
        assert_eq!(dbpath(&args(&["mongod"])), None);
        let log = std::env::temp_dir().join(format!("patroni-test-{}.log", std::process::id()));
        std::fs::write(&log, "a\nINFO: running pg_rewind from pg2\nb\n").expect("log");
        let r = pg_rewind(&log);
        assert_eq!(r.pg_rewind.as_deref(), Some(&["INFO: running pg_rewind from pg2".to_owned()][..]));
        let _ = std::fs::remove_file(&log);
        assert!(pg_rewind(&log).error.is_some());
    }
}
