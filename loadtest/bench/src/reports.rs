//! The report's command lines: `orders-bench report DIR...` (round, demo or experiment folders
//! combined into one report by `orders_bench_report::write`), `orders-bench compare A B` (two
//! runs side by side, `orders_bench_report::compare`) and `orders-bench results` (every run on one
//! page, `orders_bench_report::runs`). What they read is the result model; where they write by
//! default is this repository's `results/`.

use anyhow::{Result, bail};
use clap::Args;
use orders_bench_model::result;
use std::path::PathBuf;

#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    /// Round or demo folders (each with a result.json), or result.json files.
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// Folder for report.md, report.html, charts/ and the combined result.json [default: the folder
    /// given, when only one is; else results/<timestamp>-report].
    #[arg(long)]
    pub out: Option<PathBuf>,
}

pub fn report(args: ReportArgs) -> Result<()> {
    let mut rounds = Vec::new();
    for dir in &args.dirs {
        let (base, found) = result::read(dir)?;
        rounds.extend(found.into_iter().map(|round| {
            let dir = if round.dir == "." || round.dir.is_empty() { base.clone() } else { base.join(&round.dir) };
            (dir, round)
        }));
    }
    let out = match (&args.out, args.dirs.as_slice()) {
        (Some(out), _) => out.clone(),
        (None, [one]) if one.is_dir() => one.clone(),
        _ => crate::repo::root()
            .unwrap_or_default()
            .join("results")
            .join(format!("{}-report", crate::repo::folder_stamp())),
    };
    orders_bench_report::write(&out, &rounds)?;
    println!("report: {} and {}", out.join("report.md").display(), out.join("report.html").display());
    Ok(())
}

#[derive(Debug, Clone, Args)]
pub struct CompareArgs {
    /// The first run: a round, demo or experiment-round folder (with a result.json), or the file.
    pub a: PathBuf,
    /// The second run.
    pub b: PathBuf,
}

pub fn compare(args: CompareArgs) -> Result<()> {
    let (_, a) = result::read(&args.a)?;
    let (_, b) = result::read(&args.b)?;
    let text = orders_bench_report::compare::markdown(&a, &b);
    if text.is_empty() {
        bail!("{} and {} have no round in common (rounds are matched by name)", args.a.display(), args.b.display());
    }
    println!("A: {}\nB: {}\n\n{text}", args.a.display(), args.b.display());
    Ok(())
}

#[derive(Debug, Clone, Args)]
pub struct ResultsArgs {
    /// The folder of runs [default: this repository's results/].
    #[arg(long)]
    pub dir: Option<PathBuf>,
}

pub fn results(args: ResultsArgs) -> Result<()> {
    let dir = match args.dir {
        Some(dir) => dir,
        None => crate::repo::root()?.join("results"),
    };
    if !dir.is_dir() {
        bail!("{} is not a folder of runs (a demo, round or experiment writes one)", dir.display());
    }
    let written = orders_bench_report::runs::write(&dir)?;
    println!(
        "results: {} ({} run(s), {} folder(s) that are not readable runs, {} comparison page(s) in {})",
        written.index.display(),
        written.runs - written.unreadable,
        written.unreadable,
        written.comparisons,
        dir.join(orders_bench_report::runs::COMPARE_DIR).display()
    );
    Ok(())
}
