//! Memory and CPU as Linux's `/proc` reports them: the resident set of this
//! process, and CPU time per process group, to say what a run spent where.
//!
//! Why `/proc` rather than `ps` or `top`: they read the same files, and
//! a difference of two readings covers a whole run, where one `top` sample
//! covers an instant.

use std::collections::HashMap;

use crate::setup::Error;

/// Clock ticks per second of `/proc/*/stat` (`USER_HZ`): 100 on every
/// Linux this runs on.
const TICKS: f64 = 100.0;

/// A `kB` line of `/proc/self/status` (`VmRSS`, `VmHWM`), in bytes.
pub fn status_bytes(field: &str) -> Result<u64, Error> {
    status_bytes_at("/proc/self/status", field)
}

/// [`status_bytes`] of another process.
pub fn status_bytes_of(pid: u32, field: &str) -> Result<u64, Error> {
    status_bytes_at(&format!("/proc/{pid}/status"), field)
}

fn status_bytes_at(path: &str, field: &str) -> Result<u64, Error> {
    let status = std::fs::read_to_string(path)?;
    let line = status
        .lines()
        .find(|l| l.starts_with(field) && l[field.len()..].starts_with(':'))
        .ok_or_else(|| format!("no {field} in {path}"))?;
    let kb: u64 = line[field.len() + 1..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()?;
    Ok(kb * 1024)
}

/// Resets the peak resident set (`VmHWM`) to the current one, so that the
/// next reading is the peak of what ran in between, not of the whole life.
pub fn reset_peak() -> Result<(), Error> {
    std::fs::write("/proc/self/clear_refs", "5")?;
    Ok(())
}

pub fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// CPU seconds (user + system) a process has used, `None` once it is gone.
fn process_cpu(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces: the fields start after its ')'.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / TICKS)
}

/// Every process whose command name is `comm` (`postgres`: the server and
/// all its backends, other databases' included).
fn processes_named(comm: &str) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim_end() == comm)
        })
        .collect()
}

/// The machine's busy and total CPU seconds from `/proc/stat` (all cores).
fn machine_cpu() -> Result<(f64, f64), Error> {
    let stat = std::fs::read_to_string("/proc/stat")?;
    let line = stat.lines().next().ok_or("empty /proc/stat")?;
    let ticks: Vec<f64> = line
        .split_whitespace()
        .skip(1)
        .map(str::parse)
        .collect::<Result<_, _>>()?;
    let total: f64 = ticks.iter().sum();
    // idle and iowait are the 4th and 5th.
    let idle = ticks.get(3).copied().unwrap_or(0.0) + ticks.get(4).copied().unwrap_or(0.0);
    Ok(((total - idle) / TICKS, total / TICKS))
}

/// CPU time per group at one instant.
pub struct CpuSample {
    groups: Vec<(String, f64)>,
    /// Per postgres pid, so backends that end between two samples are
    /// still counted up to their last reading.
    postgres: HashMap<u32, f64>,
    busy: f64,
    total: f64,
}

impl CpuSample {
    /// Reads each named group of pids, every `postgres` process and the
    /// machine as a whole.
    pub fn take(groups: &[(&str, Vec<u32>)]) -> Result<Self, Error> {
        let groups = groups
            .iter()
            .map(|(name, pids)| {
                let cpu = pids.iter().filter_map(|p| process_cpu(*p)).sum();
                (name.to_string(), cpu)
            })
            .collect();
        let postgres = processes_named("postgres")
            .into_iter()
            .filter_map(|p| Some((p, process_cpu(p)?)))
            .collect();
        let (busy, total) = machine_cpu()?;
        Ok(Self {
            groups,
            postgres,
            busy,
            total,
        })
    }

    /// What was spent between `self` and the later `end`, as one line per
    /// group in CPU seconds and in cores (CPU seconds per wall second).
    pub fn report(&self, end: &CpuSample, wall: f64) -> String {
        let cores = nproc();
        let mut lines = Vec::new();
        let mut ours = 0.0;
        let mut line = |name: &str, cpu: f64| {
            lines.push(format!(
                "  {name:<22} {cpu:7.2} CPU-s  {:5.2} cores",
                cpu / wall
            ));
        };
        for ((name, before), (_, after)) in self.groups.iter().zip(&end.groups) {
            ours += after - before;
            line(name, after - before);
        }
        let postgres: f64 = end
            .postgres
            .iter()
            .map(|(pid, after)| after - self.postgres.get(pid).unwrap_or(&0.0))
            .sum();
        ours += postgres;
        line("postgres (all)", postgres);
        let busy = end.busy - self.busy;
        line("everything else", (busy - ours).max(0.0));
        let idle = (end.total - self.total) - busy;
        line("idle", idle.max(0.0));
        format!(
            "CPU over {wall:.2} s on {cores} cores:\n{}",
            lines.join("\n")
        )
    }
}

impl CpuSample {
    /// CPU per unit of work between `self` and `end`: each group's and all
    /// of PostgreSQL's, in milliseconds per `unit`.
    pub fn per_unit(&self, end: &CpuSample, units: usize, unit: &str) -> String {
        let n = units.max(1) as f64;
        let mut parts: Vec<String> = (self.groups.iter().zip(&end.groups))
            .map(|((name, before), (_, after))| {
                format!("{name} {:.3} ms", (after - before) * 1e3 / n)
            })
            .collect();
        let postgres: f64 = (end.postgres.iter())
            .map(|(pid, after)| after - self.postgres.get(pid).unwrap_or(&0.0))
            .sum();
        parts.push(format!("postgres (all) {:.3} ms", postgres * 1e3 / n));
        format!("CPU per {unit}: {}", parts.join(", "))
    }
}

fn nproc() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
