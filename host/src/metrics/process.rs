//! What every Prometheus client exposes about its process, under the
//! names dashboards expect (`process_*`, no prefix), and which build runs
//! (`nomos_continue_build_info`), read at scrape time.
//!
//! The process figures come from Linux's `/proc/self`; elsewhere they are
//! left out rather than reported as 0.

use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::registry::Registry;

use crate::policy::POLICY_EXPORT;

/// The commit this binary was built from (`build.rs`), or `unknown`.
const COMMIT: &str = env!("NOMOS_CONTINUE_COMMIT");

/// The process as `/proc/self` shows it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ProcessGauges {
    /// User and system CPU time, in seconds.
    pub cpu_seconds: f64,
    /// Resident memory, in bytes.
    pub resident_bytes: i64,
    /// Virtual memory, in bytes.
    pub virtual_bytes: i64,
    /// Open file descriptors.
    pub open_fds: i64,
    /// The soft limit on open file descriptors.
    pub max_fds: i64,
    /// When the process started, in Unix seconds.
    pub start_time_seconds: f64,
}

impl ProcessGauges {
    /// Reads them; `None` where `/proc` is missing or unreadable.
    pub fn read() -> Option<Self> {
        #[cfg(target_os = "linux")]
        {
            linux::read()
        }
        #[cfg(not(target_os = "linux"))]
        {
            None
        }
    }
}

/// The contract version a policy must export, as `package@version`.
fn wit() -> &'static str {
    // `nomos:continuation/policy@0.2.0` → `0.2.0`.
    POLICY_EXPORT
        .rsplit_once('@')
        .map_or(POLICY_EXPORT, |(_, v)| v)
}

/// Registers the build's info and, when read, the process's figures in a
/// registry without the crate's prefix (the `process_*` names are shared).
pub(super) fn registry(process: Option<ProcessGauges>) -> Registry {
    let mut r = Registry::default();
    let info = Family::<Vec<(&'static str, String)>, Gauge>::default();
    info.get_or_create(&vec![
        ("version", env!("CARGO_PKG_VERSION").to_owned()),
        ("commit", COMMIT.to_owned()),
        ("wit", format!("nomos:continuation@{}", wit())),
    ])
    .set(1);
    r.register(
        "nomos_continue_build_info",
        "The running build: its version, commit and policy contract (always 1)",
        info,
    );
    let Some(p) = process else {
        return r;
    };
    r.register(
        "process_cpu_seconds",
        "User and system CPU time spent, in seconds",
        ConstCounter::new(p.cpu_seconds),
    );
    let gauges = [
        (
            "process_resident_memory_bytes",
            "Resident memory size in bytes",
            p.resident_bytes,
        ),
        (
            "process_virtual_memory_bytes",
            "Virtual memory size in bytes",
            p.virtual_bytes,
        ),
        ("process_open_fds", "Open file descriptors", p.open_fds),
        (
            "process_max_fds",
            "The limit on open file descriptors",
            p.max_fds,
        ),
    ];
    for (name, help, value) in gauges {
        r.register(name, help, ConstGauge::new(value));
    }
    r.register(
        "process_start_time_seconds",
        "Start time of the process since the Unix epoch, in seconds",
        ConstGauge::new(p.start_time_seconds),
    );
    r
}

#[cfg(target_os = "linux")]
mod linux {
    use super::ProcessGauges;

    /// `/proc/self/stat`, `/proc/self/fd`, `/proc/self/limits` and the
    /// boot time in `/proc/stat`.
    pub(super) fn read() -> Option<ProcessGauges> {
        let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
        // Fields after the command, which is in parentheses and may hold
        // spaces: state is field 3, utime 14, stime 15, starttime 22,
        // vsize 23, rss 24.
        let after = stat.rsplit_once(')')?.1;
        let fields: Vec<&str> = after.split_whitespace().collect();
        let field = |n: usize| fields.get(n - 3).and_then(|f| f.parse::<u64>().ok());
        // SAFETY: sysconf reads a constant of the running system.
        let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
        // SAFETY: as above.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(1);
        let cpu_seconds = (field(14)? + field(15)?) as f64 / ticks;
        let start_time_seconds = boot_time()? + field(22)? as f64 / ticks;
        let open_fds = std::fs::read_dir("/proc/self/fd").ok()?.count() as i64;
        Some(ProcessGauges {
            cpu_seconds,
            resident_bytes: field(24)? as i64 * page,
            virtual_bytes: field(23)? as i64,
            open_fds,
            max_fds: max_fds().unwrap_or(-1),
            start_time_seconds,
        })
    }

    /// When the system booted, in Unix seconds (`btime`).
    fn boot_time() -> Option<f64> {
        let stat = std::fs::read_to_string("/proc/stat").ok()?;
        let line = stat.lines().find(|l| l.starts_with("btime "))?;
        line.split_whitespace().nth(1)?.parse().ok()
    }

    /// The soft limit of `Max open files`.
    fn max_fds() -> Option<i64> {
        let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
        let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
        let soft = line
            .trim_start_matches("Max open files")
            .split_whitespace()
            .next()?;
        soft.parse().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_build_and_the_process_are_exposed() {
        let gauges = ProcessGauges::read();
        #[cfg(target_os = "linux")]
        {
            let read = gauges.expect("linux has /proc/self");
            assert!(read.resident_bytes > 0 && read.open_fds > 0, "{read:?}");
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .expect("after 1970")
                .as_secs_f64();
            assert!(read.start_time_seconds > 0.0 && read.start_time_seconds <= now + 1.0);
        }
        let mut text = String::new();
        prometheus_client::encoding::prometheus_text::encode(&mut text, &registry(gauges))
            .expect("encoded");
        assert!(
            text.contains("nomos_continue_build_info{version=\""),
            "{text}"
        );
        assert!(
            text.contains(&format!("wit=\"nomos:continuation@{}\"", wit())),
            "{text}"
        );
        assert!(!wit().contains('/'));
        #[cfg(target_os = "linux")]
        for name in [
            "process_cpu_seconds_total",
            "process_resident_memory_bytes",
            "process_open_fds",
        ] {
            assert!(text.contains(name), "{name} in {text}");
        }
    }
}
