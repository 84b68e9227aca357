//! `orders-budget`: the local stack's budgets from the command line, for `infra/local/budget.sh`
//! (which `stack.sh` sources) and for people. Every command detects the method first.

use orders_budget::{Limits, Method, apply, placement};
use std::process::ExitCode;

const USAGE: &str = "\
usage: orders-budget COMMAND
  method                          how budgets can be set here (and why not, when none)
  run NAME CPUS MEMORY -- CMD...  run CMD (and its children) inside budget NAME
  set NAME CPUS MEMORY            make budget NAME or change its limits
  move NAME PID                   move process PID into budget NAME
  move-tree NAME PID              move PID and all its descendants into budget NAME
  release NAME PID                move PID's tree out of budget NAME and delete the budget
  remove NAME                     delete budget NAME's (empty) cgroups
  show PID                        the budget the kernel applies to PID
CPUS is a number of cores or none, MEMORY a number of bytes or none.";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let words: Vec<&str> = args.iter().map(String::as_str).collect();
    let method = Method::detect();
    let done = match words.as_slice() {
        ["method"] => {
            println!("{}", method.name());
            if let Method::None(why) = &method {
                println!("{why}");
            }
            Ok(())
        }
        ["run", name, cpus, memory, "--", _, ..] => {
            Limits::parse(cpus, memory).map(|limits| apply::exec_in(&method, name, limits, &args[5..])).and_then(Err)
        }
        ["set", name, cpus, memory] => Limits::parse(cpus, memory).and_then(|limits| apply::set(&method, name, limits)),
        ["move", name, pid] => pid_of(pid).and_then(|pid| apply::move_process(&method, name, pid)),
        ["move-tree", name, pid] => pid_of(pid).and_then(|pid| apply::move_tree(&method, name, pid)),
        ["release", name, pid] => pid_of(pid).and_then(|pid| apply::release(&method, name, pid)),
        ["remove", name] => apply::remove(&method, name),
        ["show", pid] => pid_of(pid).map(|pid| {
            let found = placement(pid);
            let reading = found.as_ref().map(|p| p.read()).unwrap_or_default();
            println!("{}", reading.show(found.as_ref().map_or("/", |p| p.path.as_str())));
        }),
        ["help" | "--help" | "-h"] => {
            println!("{USAGE}");
            Ok(())
        }
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match done {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("orders-budget: error: {error}");
            ExitCode::FAILURE
        }
    }
}

fn pid_of(text: &str) -> Result<u32, String> {
    text.parse().map_err(|_| format!("'{text}' is not a process id"))
}
