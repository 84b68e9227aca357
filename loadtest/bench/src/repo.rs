//! Where the project's own files are: the repository root is the nearest folder, from the working
//! directory up and then from the running executable up (`target/release/orders-bench` sits two
//! levels below it), that holds `loadtest/k6/orders.js`. The k6 script, the local stack script and
//! the cargo workspace are found from there, so `orders-bench` works from any sub-folder.

use anyhow::{Result, bail};
use std::path::{Path, PathBuf};

pub const SCRIPT: &str = "loadtest/k6/orders.js";

fn search_up(start: &Path) -> Option<PathBuf> {
    start.ancestors().find(|dir| dir.join(SCRIPT).is_file()).map(Path::to_path_buf)
}

pub fn root() -> Result<PathBuf> {
    let from_cwd = std::env::current_dir().ok().and_then(|cwd| search_up(&cwd));
    let from_exe = || std::env::current_exe().ok().and_then(|exe| exe.parent().and_then(search_up));
    match from_cwd.or_else(from_exe) {
        Some(root) => Ok(root),
        None => bail!("cannot find the repository ({SCRIPT}) above the working directory or the orders-bench binary"),
    }
}

/// `path` as given when absolute, else relative to the working directory.
pub fn absolute(path: &Path) -> PathBuf {
    if path.is_absolute() {
        return path.to_path_buf();
    }
    std::env::current_dir().map_or_else(|_| path.to_path_buf(), |cwd| cwd.join(path))
}

/// `20261130T101500Z`, for folder names.
pub fn folder_stamp() -> String {
    orders_core::Timestamp::now().to_string().chars().filter(char::is_ascii_alphanumeric).take(15).collect::<String>()
        + "Z"
}

/// The commit of the checkout this runs from (`80c77f1`, with `+` when tracked files have
/// uncommitted changes), for the record; `None` outside a git checkout.
pub fn commit() -> Option<String> {
    let root = root().ok()?;
    let git = |args: &[&str]| std::process::Command::new("git").arg("-C").arg(&root).args(args).output().ok();
    let head = git(&["rev-parse", "--short=7", "HEAD"]).filter(|o| o.status.success())?;
    let head = String::from_utf8_lossy(&head.stdout).trim().to_owned();
    let changed = git(&["diff", "--quiet", "HEAD", "--"]).is_some_and(|o| o.status.code() == Some(1));
    Some(if changed { format!("{head}+") } else { head })
}
