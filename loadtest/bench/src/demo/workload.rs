//! The demo's workload: which rounds it runs and what the documents look like. Named mixes come
//! from `--mixes`, a person's own from `--mix` (weights as `round --mix` takes them) and
//! `--mixes-file`; the shape from `--items` and `--note-bytes`, as on `seed`. Everything is
//! checked before the demo starts anything, so a bad mix stops it with the mix, the endpoint or
//! the weight named and nothing running.

use anyhow::{Context, Result, bail};
use clap::Args;
use orders_loadgen::mixes::Definitions;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The named mixes the demo runs when it is given no mix of any kind.
pub const DEFAULT_MIXES: [&str; 4] = ["read", "insert", "status", "shop"];

/// The largest weight of one endpoint: enough for any share, small enough that sums cannot overflow.
const MAX_WEIGHT: u32 = 1_000_000;

#[derive(Debug, Clone, Default, Args)]
pub struct WorkloadArgs {
    /// Named mixes to run, in order (read, customer, product, insert, status, shop) [default:
    /// read,insert,status,shop; none when --mix or --mixes-file is given].
    #[arg(long, value_delimiter = ',')]
    pub mixes: Option<Vec<String>>,
    /// A round of your own mix: weights as `round --mix` takes them, e.g.
    /// `read:60,product:30,insert:10` (endpoints read, customer, product, insert, status).
    /// Repeatable, one round each, named by its weights. Replaces the default named mixes; add
    /// --mixes to run named ones before it.
    #[arg(long = "mix", value_name = "WEIGHTS")]
    pub mix: Vec<String>,
    /// A file of your own mixes, one round per line: `NAME = WEIGHTS` or just `WEIGHTS`; `#`
    /// starts a comment. Its rounds run after --mix's.
    #[arg(long = "mixes-file", value_name = "FILE")]
    pub mixes_file: Option<PathBuf>,
    /// Items per order in the data set and in inserted orders: 3 gives study S1's ~600-byte
    /// orders, 40 its big ones (1 to 1000).
    #[arg(long, default_value_t = 3)]
    pub items: u32,
    /// Adds a note of exactly this many bytes of text to every order (study S2's big documents;
    /// at most 262144).
    #[arg(long = "note-bytes", default_value_t = 0)]
    pub note_bytes: u32,
}

/// One round of the demo: its name (folder and report) and its mix as `round` takes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Round {
    pub name: String,
    pub mix: String,
}

impl WorkloadArgs {
    /// Every round in order, each mix checked against loadtest/mixes.json; an error names the bad
    /// mix and, where there is one, the endpoint or weight.
    pub fn rounds(&self) -> Result<Vec<Round>> {
        let definitions = Definitions::embedded()?;
        let custom_given = !self.mix.is_empty() || self.mixes_file.is_some();
        let named: Vec<String> = match (&self.mixes, custom_given) {
            (Some(mixes), _) => mixes.clone(),
            (None, true) => Vec::new(),
            (None, false) => DEFAULT_MIXES.iter().map(|m| (*m).to_owned()).collect(),
        };
        let mut rounds = Vec::new();
        for name in named {
            if !definitions.mixes.contains_key(&name) {
                bail!(
                    "--mixes: unknown mix \"{name}\" (named mixes: {}; weights such as read:60,insert:40 go to --mix)",
                    join(definitions.mixes.keys())
                );
            }
            rounds.push(Round { name: name.clone(), mix: name });
        }
        for text in &self.mix {
            let mix = weights(&definitions, text).with_context(|| format!("--mix {text}"))?;
            rounds.push(Round { name: mix.clone(), mix });
        }
        if let Some(file) = &self.mixes_file {
            rounds.extend(from_file(&definitions, file)?);
        }
        if rounds.is_empty() {
            bail!("no round to run: --mixes, --mix or --mixes-file name none");
        }
        let mut seen = BTreeSet::new();
        if let Some(twice) = rounds.iter().find(|r| !seen.insert(folder(&r.name))) {
            bail!("two rounds would share the name and folder \"{}\": name one of them in a mixes file", twice.name);
        }
        Ok(rounds)
    }

    /// The data set's shape for `orders` orders, checked as `seed` checks it.
    pub fn check_shape(&self, orders: u64) -> Result<()> {
        let seed = crate::seed::SeedArgs {
            seed: 1,
            orders,
            customers: None,
            products: None,
            items: self.items,
            note_bytes: self.note_bytes,
            target: crate::seed::Selection::all(),
            reset: true,
            databases: Default::default(),
            manifest: PathBuf::new(),
        };
        seed.profile().check()
    }
}

/// The folder a round of this name is written to.
pub fn folder(name: &str) -> String {
    name.replace(|c: char| !c.is_ascii_alphanumeric() && c != '-', "_")
}

fn join<'a>(names: impl Iterator<Item = &'a String>) -> String {
    names.cloned().collect::<Vec<_>>().join(", ")
}

/// `text` as `round --mix` takes it, stricter: every endpoint once, every weight a whole number
/// from 1 to `MAX_WEIGHT`. Returns the mix as given, without spaces.
fn weights(definitions: &Definitions, text: &str) -> Result<String> {
    let text: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    if definitions.mixes.contains_key(&text) {
        return Ok(text);
    }
    if text.is_empty() {
        bail!("no endpoint:weight given");
    }
    let mut endpoints = BTreeSet::new();
    for part in text.split(',') {
        let Some((endpoint, weight)) = part.split_once(':') else {
            bail!("\"{part}\" is neither endpoint:weight nor a named mix ({})", join(definitions.mixes.keys()));
        };
        if !definitions.endpoints.contains_key(endpoint) {
            bail!("unknown endpoint \"{endpoint}\" (endpoints: {})", join(definitions.endpoints.keys()));
        }
        if !endpoints.insert(endpoint) {
            bail!("endpoint {endpoint} is given twice");
        }
        let valid = weight.parse::<u32>().ok().filter(|w| (1..=MAX_WEIGHT).contains(w));
        if valid.is_none() || !weight.chars().all(|c| c.is_ascii_digit()) {
            bail!("the weight \"{weight}\" of {endpoint} is not a whole number from 1 to {MAX_WEIGHT}");
        }
    }
    // The round resolves it again: the same reading as the load generators', or a clear refusal.
    definitions.mix(&text)?;
    Ok(text)
}

/// The rounds of a mixes file: `NAME = WEIGHTS` or `WEIGHTS` per line, `#` comments.
fn from_file(definitions: &Definitions, file: &Path) -> Result<Vec<Round>> {
    let text = std::fs::read_to_string(file).with_context(|| format!("--mixes-file {}", file.display()))?;
    parse_file(definitions, &text).with_context(|| format!("--mixes-file {}", file.display()))
}

fn parse_file(definitions: &Definitions, text: &str) -> Result<Vec<Round>> {
    let mut rounds = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or_default().trim();
        if line.is_empty() {
            continue;
        }
        let (name, mix) = match line.split_once('=') {
            Some((name, mix)) => (Some(name.trim()), mix),
            None => (None, line),
        };
        let at = || format!("line {}", number + 1);
        let mix = weights(definitions, mix).with_context(at)?;
        let name = match name {
            Some(name) if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || "-_".contains(c)) => {
                bail!("{}: the name \"{name}\" must be letters, digits, - and _", at());
            }
            Some(name) => name.to_owned(),
            None => mix.clone(),
        };
        rounds.push(Round { name, mix });
    }
    if rounds.is_empty() {
        bail!("no mix in the file (one per line: NAME = read:60,product:30,insert:10)");
    }
    Ok(rounds)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(mixes: Option<&str>, mix: &[&str]) -> WorkloadArgs {
        WorkloadArgs {
            mixes: mixes.map(|m| m.split(',').map(str::to_owned).collect()),
            mix: mix.iter().map(|m| (*m).to_owned()).collect(),
            items: 3,
            ..WorkloadArgs::default()
        }
    }

    fn names(rounds: &[Round]) -> Vec<&str> {
        rounds.iter().map(|r| r.name.as_str()).collect()
    }

    #[test]
    fn without_a_mix_the_demo_runs_the_four_named_mixes() {
        let rounds = args(None, &[]).rounds().expect("default");
        assert_eq!(names(&rounds), DEFAULT_MIXES);
        assert!(rounds.iter().all(|r| r.name == r.mix));
    }

    #[test]
    fn a_custom_mix_replaces_the_named_mixes_unless_they_are_asked_for() {
        let alone = args(None, &["read:60, product:30,insert:10"]).rounds().expect("custom");
        assert_eq!(
            alone,
            [Round { name: "read:60,product:30,insert:10".into(), mix: "read:60,product:30,insert:10".into() }]
        );
        let both = args(Some("read"), &["read:60,insert:40", "status:1"]).rounds().expect("both");
        assert_eq!(names(&both), ["read", "read:60,insert:40", "status:1"]);
    }

    #[test]
    fn a_bad_mix_is_refused_naming_the_endpoint_or_the_weight() {
        let refusal = |mix: &str| format!("{:#}", args(None, &[mix]).rounds().expect_err(mix));
        let unknown = refusal("read:60,reads:40");
        assert!(
            unknown.contains("--mix read:60,reads:40") && unknown.contains("unknown endpoint \"reads\""),
            "{unknown}"
        );
        assert!(unknown.contains("customer, insert, product, read, status"), "lists the endpoints: {unknown}");
        for (mix, weight) in [
            ("read:0,insert:10", "\"0\" of read"),
            ("read:x", "\"x\" of read"),
            ("read:-5", "\"-5\" of read"),
            ("read:", "\"\" of read"),
            ("read:2000000", "\"2000000\" of read"),
            ("read:+3", "\"+3\" of read"),
        ] {
            let text = refusal(mix);
            assert!(text.contains(&format!("the weight {weight} is not a whole number")), "{mix}: {text}");
        }
        assert!(refusal("read:1,read:2").contains("read is given twice"));
        assert!(refusal("shopping").contains("\"shopping\" is neither endpoint:weight nor a named mix"));
        assert!(refusal(" ").contains("no endpoint:weight"));
        let named = format!("{:#}", args(Some("read,sale"), &[]).rounds().expect_err("sale"));
        assert!(named.contains("--mixes: unknown mix \"sale\""), "{named}");
    }

    #[test]
    fn two_rounds_of_one_name_are_refused() {
        let twice = format!("{:#}", args(Some("read"), &["read"]).rounds().expect_err("twice"));
        assert!(twice.contains("share the name and folder \"read\""), "{twice}");
    }

    #[test]
    fn a_mixes_file_names_its_rounds_and_says_which_line_is_bad() {
        let definitions = Definitions::embedded().expect("mixes");
        let text = "# our traffic\ncheckout = read:60,product:30,insert:10\n\nstatus:50,read:50  # no name\n";
        let rounds = parse_file(&definitions, text).expect("file");
        assert_eq!(names(&rounds), ["checkout", "status:50,read:50"]);
        assert_eq!(rounds[0].mix, "read:60,product:30,insert:10");
        let bad = format!("{:#}", parse_file(&definitions, "a = read:1\nb = read:1,update:3\n").expect_err("line 2"));
        assert!(bad.contains("line 2") && bad.contains("unknown endpoint \"update\""), "{bad}");
        assert!(
            format!("{:#}", parse_file(&definitions, "my mix = read:1").expect_err("name"))
                .contains("the name \"my mix\"")
        );
        assert!(parse_file(&definitions, "# nothing\n").is_err());
    }

    #[test]
    fn the_shape_is_checked_as_seed_checks_it() {
        let shape =
            |items, note_bytes| WorkloadArgs { items, note_bytes, ..WorkloadArgs::default() }.check_shape(2_000);
        assert!(shape(40, 10_240).is_ok());
        assert!(format!("{:#}", shape(0, 0).expect_err("no items")).contains("--items"));
        assert!(format!("{:#}", shape(3, 300_000).expect_err("big note")).contains("--note-bytes"));
    }

    /// The command line as a person types it, through `demo::run`: refused before anything starts
    /// (not even the report folder).
    #[tokio::test]
    async fn the_demo_with_a_bad_mix_stops_before_it_starts_anything() {
        #[derive(clap::Parser)]
        struct Line {
            #[command(flatten)]
            demo: super::super::DemoArgs,
        }
        let out = std::env::temp_dir().join(format!("orders-bench-bad-mix-{}", std::process::id()));
        let out_flag = out.display().to_string();
        for (flags, named) in [
            (vec!["--mix", "read:60,prodct:30,insert:10"], "unknown endpoint \"prodct\""),
            (vec!["--mix", "read:60", "--mix", "insert:0"], "the weight \"0\" of insert"),
            (vec!["--items", "0"], "--items"),
        ] {
            let line = ["demo", "--quick", "--out", &out_flag].into_iter().chain(flags.iter().copied());
            let Line { demo } = clap::Parser::try_parse_from(line).expect("the flags parse");
            let error = format!("{:#}", super::super::run(demo).await.expect_err("refused"));
            assert!(error.contains(named), "{flags:?}: {error}");
            assert!(!out.exists(), "{flags:?}: nothing may start, not even {}", out.display());
        }
    }
}
