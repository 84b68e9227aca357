//! Parsing of the kernel's files as the kernel writes them.

use super::*;
use crate::mounts::tests::MOUNTINFO;

#[test]
fn a_v1_process_is_placed_per_controller_and_a_v2_one_in_its_one_group() {
    let mounts = Mounts::parse(MOUNTINFO);
    let v1 = parse_placement(
        "4:memory:/orders-bench/postgres-5432\n2:cpuacct:/orders-bench/postgres-5432\n1:cpu:/orders-bench/postgres-5432\n0::/\n",
        &mounts,
    )
    .expect("v1");
    assert_eq!((v1.version, v1.path.as_str()), (Version::V1, "/orders-bench/postgres-5432"));
    assert_eq!(v1.cpuacct.expect("cpuacct").dir, Path::new("/sys/fs/cgroup/cpuacct/orders-bench/postgres-5432"));
    assert_eq!(v1.memory.expect("memory").dir, Path::new("/sys/fs/cgroup/memory/orders-bench/postgres-5432"));

    let v2_only = Mounts { v1: Vec::new(), v2: Some(PathBuf::from("/sys/fs/cgroup")) };
    let v2 = parse_placement("0::/user.slice/orders-bench-mongod-27017.scope\n", &v2_only).expect("v2");
    assert_eq!(v2.version, Version::V2);
    assert_eq!(v2.cpu.expect("cpu").dir, Path::new("/sys/fs/cgroup/user.slice/orders-bench-mongod-27017.scope"));
    assert!(parse_placement("garbage", &v2_only).is_none());
}

#[test]
fn counters_quotas_and_limits_read_like_the_kernel_writes_them() {
    let v1 = "nr_periods 249\nnr_throttled 247\nthrottled_time 1322833030\nnr_bursts 0\n";
    assert_eq!((stat_value(v1, "nr_periods"), stat_value(v1, "nr_throttled")), (Some(249), Some(247)));
    assert_eq!(stat_value(v1, "throttled_time"), Some(1_322_833_030));
    assert_eq!(stat_value("usage_usec 120\nuser_usec 100\n", "usage_usec"), Some(120));
    assert_eq!(stat_value(v1, "nr_throttle"), None, "whole keys only");
    assert_eq!(v1_memory_limit("9223372036854771712\n"), None);
    assert_eq!(v1_memory_limit("268435456\n"), Some(268_435_456));
    assert_eq!(v2_cpu_max("2000 10000\n"), Some((Some(0.2), 10_000)));
    assert_eq!(v2_cpu_max("max 100000\n"), Some((None, 100_000)));
    assert_eq!(tightest([3, 1, 2].into_iter()), Some(1));
}

#[test]
fn a_budget_is_shown_as_stack_sh_reads_it() {
    let budget = Reading {
        quota_cores: Some(0.25),
        period_us: Some(10_000),
        memory_limit_bytes: Some(1 << 30),
        ..Reading::default()
    };
    assert_eq!(
        budget.show("/orders-bench/postgres-55432"),
        "cpus=0.25 period_us=10000 memory=1073741824 cgroup=/orders-bench/postgres-55432"
    );
    assert_eq!(Reading::default().show("/"), "cpus=none period_us=none memory=none cgroup=/");
    let cores = |c: f64| three_digits(c);
    assert_eq!(
        [cores(1.0), cores(0.125), cores(2.0 / 3.0), cores(0.1), cores(12.5)],
        ["1", "0.125", "0.667", "0.1", "12.5"]
    );
}
