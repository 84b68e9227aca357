//! `demo --targets`: the systems the demo compares. PostgreSQL jsonb (`pg`) and MongoDB (`mongo`)
//! always: which of the two is the question the demo answers. The hybrid layout (`pgh`,
//! orders-pg-hybrid) only when asked for, in a database of the demo's own on the local stack's
//! second PostgreSQL server (`HYBRID_DATABASE_URL`, a CPU budget of its own). Not by default: on
//! two cores a third database and service take CPU the other two would have.

use anyhow::{Context, Result, bail};
use orders_bench_engines::{NAMES, hybrid};
use std::collections::BTreeMap;

/// The targets every demo runs.
const ALWAYS: [&str; 2] = ["pg", "mongo"];

/// One name of `--targets` (clap's value parser): an engine the runner knows
/// (`orders_bench_engines::NAMES`), or an error naming them all.
pub fn parse_name(text: &str) -> Result<String, String> {
    match NAMES.contains(&text) {
        true => Ok(text.to_owned()),
        false => Err(format!("no target named \"{text}\" (known: {})", NAMES.join(", "))),
    }
}

/// Refuses a selection that leaves out PostgreSQL jsonb or MongoDB.
pub fn check(names: &[String]) -> Result<()> {
    if let Some(missing) = ALWAYS.iter().find(|always| !names.iter().any(|n| n == *always)) {
        bail!(
            "--targets {}: the demo always compares pg and mongo (PostgreSQL jsonb and MongoDB), {missing} is \
             missing; add {} to run the hybrid layout beside them",
            names.join(","),
            hybrid::NAME
        );
    }
    Ok(())
}

/// The databases of the targets beyond pg's and mongo's, as `--database NAME=URL` gives them:
/// for `pgh`, database `db_name` on the stack's hybrid server (`stack_env`: `stack.sh env`).
pub fn other_databases(
    names: &[String],
    stack_env: &BTreeMap<String, String>,
    db_name: &str,
) -> Result<Vec<(String, String)>> {
    if !names.iter().any(|n| n == hybrid::NAME) {
        return Ok(Vec::new());
    }
    let server = stack_env.get(hybrid::STACK_URL).with_context(|| {
        format!(
            "--targets {}: stack.sh env printed no {}, so this stack has no PostgreSQL server for the hybrid (restart \
             it with this repository's infra/local/stack.sh)",
            names.join(","),
            hybrid::STACK_URL
        )
    })?;
    Ok(vec![(hybrid::NAME.to_owned(), orders_bench_engines::databases::with_database(server, db_name))])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(text: &str) -> Vec<String> {
        text.split(',').map(str::to_owned).collect()
    }

    #[test]
    fn an_unknown_name_is_refused_with_the_known_ones() {
        assert_eq!(parse_name("pgh"), Ok("pgh".to_owned()));
        // Every known one, in order (an engine added later comes after these).
        let refused = parse_name("mysql").expect_err("unknown");
        assert!(refused.starts_with("no target named \"mysql\" (known: pg, mongo, pgh"), "{refused}");
    }

    #[test]
    fn pg_and_mongo_are_always_compared() {
        assert!(check(&names("pg,mongo")).is_ok());
        assert!(check(&names("pgh,mongo,pg")).is_ok());
        let error = check(&names("pg,pgh")).expect_err("mongo left out").to_string();
        assert!(error.contains("always compares pg and mongo") && error.contains("mongo is missing"), "{error}");
    }

    #[test]
    fn the_hybrid_gets_the_demo_database_on_its_own_server() {
        let env = BTreeMap::from([
            ("DATABASE_URL".to_owned(), "postgres://postgres@127.0.0.1:56432/orders".to_owned()),
            (hybrid::STACK_URL.to_owned(), "postgres://postgres@127.0.0.1:56433/orders".to_owned()),
        ]);
        assert!(other_databases(&names("pg,mongo"), &env, "orders_demo").expect("two").is_empty());
        assert_eq!(
            other_databases(&names("pg,mongo,pgh"), &env, "orders_demo").expect("three"),
            [("pgh".to_owned(), "postgres://postgres@127.0.0.1:56433/orders_demo".to_owned())]
        );
        let old_stack = BTreeMap::new();
        let error = other_databases(&names("pg,mongo,pgh"), &old_stack, "orders_demo").expect_err("no server");
        assert!(error.to_string().contains("printed no HYBRID_DATABASE_URL"), "{error}");
    }
}
