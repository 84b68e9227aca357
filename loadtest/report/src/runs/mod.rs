//! Every run on one page (`orders-bench results`): `results/index.html` holds one row per folder
//! of `results/`, read from the folder's own `result.json` (a round, demo or report folder, or an
//! experiment), and `results/compare/` one comparison page (`compare::blocks`) for every two runs
//! with a round in common, so the page works from the files alone, with no server. A folder that
//! cannot be read is a row saying why, never an error.

mod page;
mod read;
#[cfg(test)]
mod tests;

use anyhow::{Context, Result};
use orders_bench_model::result::RoundResult;
use std::path::{Path, PathBuf};

/// The folder of the comparison pages, inside the results folder (not a run).
pub const COMPARE_DIR: &str = "compare";
/// The page itself, inside the results folder.
pub const INDEX: &str = "index.html";

/// One folder of `results/`.
#[derive(Debug, Clone)]
pub struct Run {
    /// Its path below the results folder (`20261207T061500Z-demo`, `do/3f2a`).
    pub folder: String,
    /// Whether it holds a `report.html` to link to.
    pub has_report: bool,
    pub what: What,
}

#[derive(Debug, Clone)]
pub enum What {
    /// A round, demo or report folder: its rounds.
    Rounds(Vec<RoundResult>),
    /// An experiment: its summary and the rounds of its round folders.
    Experiment(Experiment, Vec<RoundResult>),
    /// Not a run, or one that cannot be read: why.
    Unreadable(String),
}

/// What the index shows of an experiment's `result.json`.
#[derive(Debug, Clone, Default)]
pub struct Experiment {
    pub name: String,
    pub title: String,
    pub started_at: String,
    pub machine: String,
    pub commit: Option<String>,
    pub settings: String,
    pub budget: Option<String>,
    /// Each row of its table: the finding, workload and both figures, and the verdict in words.
    pub verdicts: Vec<(String, String)>,
    /// Round folders it names that could not be read.
    pub unread_rounds: usize,
}

impl Run {
    /// The rounds it holds (none when unreadable).
    pub fn rounds(&self) -> &[RoundResult] {
        match &self.what {
            What::Rounds(rounds) | What::Experiment(_, rounds) => rounds,
            What::Unreadable(_) => &[],
        }
    }

    /// When it started, as recorded (none when unreadable).
    pub fn started_at(&self) -> Option<&str> {
        match &self.what {
            What::Rounds(rounds) => rounds.first().map(|r| r.started_at.as_str()),
            What::Experiment(experiment, _) => Some(experiment.started_at.as_str()),
            What::Unreadable(_) => None,
        }
    }

    /// Whether this run and `other` have a round of the same name (what `compare` matches).
    fn shares_a_round(&self, other: &Run) -> bool {
        self.rounds().iter().any(|a| other.rounds().iter().any(|b| a.name == b.name))
    }
}

/// Every folder below `results` (one level deeper where a folder holds run folders but is not
/// one itself, as `results/do/`), newest first, the unreadable ones last.
pub fn scan(results: &Path) -> Result<Vec<Run>> {
    let mut runs = Vec::new();
    for (name, dir) in folders(results).with_context(|| format!("reading {}", results.display()))? {
        if name == COMPARE_DIR || name.starts_with('.') {
            continue;
        }
        let nested: Vec<(String, PathBuf)> = if dir.join("result.json").exists() {
            Vec::new()
        } else {
            folders(&dir).unwrap_or_default().into_iter().filter(|(_, d)| d.join("result.json").is_file()).collect()
        };
        if nested.is_empty() {
            runs.push(read::folder(&dir, &name));
        }
        runs.extend(nested.iter().map(|(sub, d)| read::folder(d, &format!("{name}/{sub}"))));
    }
    runs.sort_by(|a, b| b.started_at().cmp(&a.started_at()).then_with(|| b.folder.cmp(&a.folder)));
    Ok(runs)
}

/// The folders directly below `dir`, by name.
fn folders(dir: &Path) -> std::io::Result<Vec<(String, PathBuf)>> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            found.push((path.file_name().unwrap_or_default().to_string_lossy().into_owned(), path));
        }
    }
    found.sort();
    Ok(found)
}

/// Two runs with a round in common and the page comparing them: `older` is compare's A.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pair {
    pub older: usize,
    pub newer: usize,
    /// The page, relative to the results folder.
    pub file: String,
}

/// What `write` wrote.
#[derive(Debug, Clone)]
pub struct Written {
    pub index: PathBuf,
    pub runs: usize,
    pub unreadable: usize,
    pub comparisons: usize,
}

/// Writes `results/index.html` and the comparison pages under `results/compare/` (whose old
/// pages it removes first).
pub fn write(results: &Path) -> Result<Written> {
    let runs = scan(results)?;
    let compare_dir = results.join(COMPARE_DIR);
    if compare_dir.is_dir() {
        for (_, path) in pages(&compare_dir)? {
            std::fs::remove_file(&path).with_context(|| format!("removing {}", path.display()))?;
        }
    }
    let mut pairs = Vec::new();
    for newer in 0..runs.len() {
        for older in newer + 1..runs.len() {
            if !runs[newer].shares_a_round(&runs[older]) {
                continue;
            }
            let blocks = crate::compare::blocks(runs[older].rounds(), runs[newer].rounds());
            if blocks.is_empty() {
                continue;
            }
            let file = format!("{COMPARE_DIR}/{}--{}.html", slug(&runs[older].folder), slug(&runs[newer].folder));
            std::fs::create_dir_all(&compare_dir).with_context(|| format!("creating {}", compare_dir.display()))?;
            let html = page::comparison(&runs[older], &runs[newer], &blocks);
            std::fs::write(results.join(&file), html).with_context(|| format!("writing {file}"))?;
            pairs.push(Pair { older, newer, file });
        }
    }
    let index = results.join(INDEX);
    std::fs::write(&index, page::index(&runs, &pairs)).with_context(|| format!("writing {}", index.display()))?;
    Ok(Written {
        index,
        runs: runs.len(),
        unreadable: runs.iter().filter(|r| matches!(r.what, What::Unreadable(_))).count(),
        comparisons: pairs.len(),
    })
}

/// The comparison pages this module wrote before (`A--B.html`).
fn pages(dir: &Path) -> Result<Vec<(String, PathBuf)>> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        let name = path.file_name().unwrap_or_default().to_string_lossy().into_owned();
        if path.is_file() && name.ends_with(".html") && name.contains("--") {
            found.push((name, path));
        }
    }
    Ok(found)
}

/// A folder's path as part of a file name.
fn slug(folder: &str) -> String {
    folder.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '.' { c } else { '_' }).collect()
}
