//! Where the cgroup hierarchies are mounted, from `/proc/self/mountinfo`: each v1 hierarchy with
//! its controllers (several may share one, as `cpu,cpuacct`), and the v2 hierarchy.

use std::fs;
use std::path::{Path, PathBuf};

/// A v1 hierarchy's controllers and mount point, or the v2 mount point.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Mounts {
    pub v1: Vec<(Vec<String>, PathBuf)>,
    pub v2: Option<PathBuf>,
}

impl Mounts {
    /// From the text of `/proc/self/mountinfo`: `... mount-point ... - cgroup cgroup rw,cpu,cpuacct`.
    pub fn parse(mountinfo: &str) -> Self {
        let mut mounts = Self::default();
        for line in mountinfo.lines() {
            let Some((before, after)) = line.split_once(" - ") else { continue };
            let Some(point) = before.split_whitespace().nth(4) else { continue };
            let mut post = after.split_whitespace();
            match (post.next(), post.nth(1)) {
                (Some("cgroup"), Some(options)) => {
                    let controllers = options.split(',').map(str::to_owned).collect();
                    mounts.v1.push((controllers, PathBuf::from(point)));
                }
                (Some("cgroup2"), _) if mounts.v2.is_none() => mounts.v2 = Some(PathBuf::from(point)),
                _ => {}
            }
        }
        mounts
    }

    pub fn read() -> Self {
        Self::parse(&fs::read_to_string("/proc/self/mountinfo").unwrap_or_default())
    }

    /// The mount point of the v1 hierarchy holding `controller`.
    pub fn v1_mount(&self, controller: &str) -> Option<&Path> {
        self.v1.iter().find(|(controllers, _)| controllers.iter().any(|c| c == controller)).map(|(_, p)| p.as_path())
    }
}

/// True when the v2 cgroup `dir` offers every one of `controllers` (its `cgroup.controllers`).
pub fn v2_has(dir: &Path, controllers: &[&str]) -> bool {
    let offered = fs::read_to_string(dir.join("cgroup.controllers")).unwrap_or_default();
    controllers.iter().all(|wanted| offered.split_whitespace().any(|c| c == *wanted))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub const MOUNTINFO: &str = "\
24 1 8:1 / / rw,relatime shared:1 - ext4 /dev/vda rw
30 24 0:26 / /sys/fs/cgroup rw - tmpfs tmpfs rw,mode=755
31 30 0:27 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
32 30 0:28 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
33 30 0:29 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
34 30 0:30 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";

    #[test]
    fn mountinfo_gives_each_controller_its_hierarchy() {
        let mounts = Mounts::parse(MOUNTINFO);
        assert_eq!(mounts.v1_mount("cpuacct"), Some(Path::new("/sys/fs/cgroup/cpuacct")));
        assert_eq!(mounts.v1_mount("memory"), Some(Path::new("/sys/fs/cgroup/memory")));
        assert_eq!(mounts.v1_mount("blkio"), None);
        assert_eq!(mounts.v2.as_deref(), Some(Path::new("/sys/fs/cgroup/unified")));
    }
}
