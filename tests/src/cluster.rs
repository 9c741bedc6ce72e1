//! PostgreSQL clusters of a test's own, on loopback ports of their own: a
//! primary made with `initdb`, standbys made from it with `pg_basebackup`,
//! stopped, started and promoted with `pg_ctl`. For the faults the shared
//! server on 5432 must never suffer (a failover, a restart, a cluster with
//! a low `max_connections`).
//!
//! Each cluster lives in a temporary directory owned by the `postgres`
//! user (PostgreSQL refuses to run as root; as root the tools are run
//! through `runuser`), listens on 127.0.0.1 only, keeps its socket in its
//! own directory, and is stopped (`immediate`) and removed when dropped.
//! When the PostgreSQL binaries are missing a test is skipped with a line
//! on stderr, except under `CI=true`, where it panics.

use std::path::PathBuf;
use std::process::Output;

use sqlx::{Connection, PgConnection};
use tempfile::TempDir;
use tokio::process::Command;

use crate::db::in_ci;
use crate::wait::until;

/// One cluster: its directory, its port and the binaries that run it.
pub struct Cluster {
    dir: TempDir,
    port: u16,
    bin: PathBuf,
    name: String,
}

/// How a cluster is shut down (`pg_ctl stop -m`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// Clients are disconnected and a checkpoint written.
    Fast,
    /// A crash: no checkpoint, recovery at the next start.
    Immediate,
}

/// How a standby follows its primary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replication {
    /// Commits on the primary wait until this standby has flushed them
    /// (`synchronous_standby_names` names it, `synchronous_commit = on`).
    Synchronous,
    /// Commits return at once; the standby may lag.
    Asynchronous,
}

impl Cluster {
    /// A new primary, started, with `settings` (`name = value` lines of
    /// `postgresql.conf`) after the defaults below. `None` when the
    /// PostgreSQL binaries are not installed and this is not CI.
    ///
    /// Defaults: `fsync` on (a real disk's guarantees), `wal_level =
    /// replica` with room for standbys, small shared buffers (many clusters
    /// may run on this machine at once).
    pub async fn primary(name: &str, settings: &[(&str, &str)]) -> Option<Cluster> {
        let bin = bin_dir()?;
        let cluster = Cluster::empty(name, bin);
        cluster
            .as_postgres(
                "initdb",
                &[
                    "--auth=trust",
                    "--username=postgres",
                    "--encoding=UTF8",
                    "--no-instructions",
                    "-D",
                    &cluster.data().display().to_string(),
                ],
            )
            .await;
        let mut conf = vec![
            ("listen_addresses", "'127.0.0.1'".to_owned()),
            ("fsync", "on".to_owned()),
            ("wal_level", "replica".to_owned()),
            ("max_wal_senders", "5".to_owned()),
            ("hot_standby", "on".to_owned()),
            ("shared_buffers", "'16MB'".to_owned()),
        ];
        conf.extend(settings.iter().map(|(k, v)| (*k, (*v).to_owned())));
        cluster.configure(&conf).await;
        cluster.start().await;
        Some(cluster)
    }

    /// A standby of this primary, made by `pg_basebackup -R` and started:
    /// it streams from the primary under the application name `name`. With
    /// [`Replication::Synchronous`] the primary is told to wait for it.
    pub async fn standby(&self, name: &str, replication: Replication) -> Cluster {
        let standby = Cluster::empty(name, self.bin.clone());
        standby
            .as_postgres(
                "pg_basebackup",
                &[
                    "-h",
                    "127.0.0.1",
                    "-p",
                    &self.port.to_string(),
                    "-U",
                    "postgres",
                    "-D",
                    &standby.data().display().to_string(),
                    "-R",
                    "-X",
                    "stream",
                    "--checkpoint=fast",
                ],
            )
            .await;
        // Its own port, socket and name (the walreceiver's application
        // name is the cluster's name, which synchronous_standby_names
        // matches). Later lines of postgresql.conf win.
        standby.configure(&[]).await;
        standby.start().await;
        if replication == Replication::Synchronous {
            self.set(&[
                ("synchronous_standby_names", format!("'{name}'")),
                ("synchronous_commit", "on".to_owned()),
            ])
            .await;
            until(&format!("{name} streaming synchronously"), || async {
                let mut conn = PgConnection::connect(&self.url("postgres")).await.ok()?;
                let state: Option<String> = sqlx::query_scalar(
                    "SELECT sync_state FROM pg_stat_replication WHERE application_name = $1",
                )
                .bind(name)
                .fetch_optional(&mut conn)
                .await
                .ok()?;
                (state.as_deref() == Some("sync")).then_some(())
            })
            .await;
        } else {
            until(&format!("{name} streaming"), || async {
                let mut conn = PgConnection::connect(&self.url("postgres")).await.ok()?;
                let n: i64 = sqlx::query_scalar(
                    "SELECT count(*) FROM pg_stat_replication \
                     WHERE application_name = $1 AND state = 'streaming'",
                )
                .bind(name)
                .fetch_one(&mut conn)
                .await
                .ok()?;
                (n == 1).then_some(())
            })
            .await;
        }
        standby
    }

    /// The cluster's loopback port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Its name (the standby's application name).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The URL of database `db` as user `postgres`.
    pub fn url(&self, db: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{db}", self.port)
    }

    /// Creates database `db` (on a primary).
    pub async fn create_database(&self, db: &str) {
        let mut conn = PgConnection::connect(&self.url("postgres"))
            .await
            .unwrap_or_else(|e| panic!("connect to {}: {e}", self.name));
        sqlx::query(&format!("CREATE DATABASE \"{db}\""))
            .execute(&mut conn)
            .await
            .unwrap_or_else(|e| panic!("create database {db} on {}: {e}", self.name));
    }

    /// Starts it and waits until it accepts connections.
    pub async fn start(&self) {
        let log = self.dir.path().join("server.log").display().to_string();
        let data = self.data().display().to_string();
        self.as_postgres(
            "pg_ctl",
            &["-D", &data, "-l", &log, "-w", "-t", "60", "start"],
        )
        .await;
    }

    /// Stops it (`pg_ctl stop -m fast|immediate`) and waits until it is down.
    pub async fn stop(&self, how: Stop) {
        let mode = match how {
            Stop::Fast => "fast",
            Stop::Immediate => "immediate",
        };
        let data = self.data().display().to_string();
        self.as_postgres("pg_ctl", &["-D", &data, "-m", mode, "-w", "stop"])
            .await;
    }

    /// Promotes a standby and waits until it is out of recovery.
    pub async fn promote(&self) {
        let data = self.data().display().to_string();
        self.as_postgres("pg_ctl", &["-D", &data, "-w", "promote"])
            .await;
    }

    /// Sets `postgresql.conf` values and reloads the running server.
    pub async fn set(&self, settings: &[(&str, String)]) {
        let mut conn = PgConnection::connect(&self.url("postgres"))
            .await
            .unwrap_or_else(|e| panic!("connect to {}: {e}", self.name));
        for (key, value) in settings {
            sqlx::query(&format!("ALTER SYSTEM SET {key} = {value}"))
                .execute(&mut conn)
                .await
                .unwrap_or_else(|e| panic!("ALTER SYSTEM SET {key} on {}: {e}", self.name));
        }
        sqlx::query("SELECT pg_reload_conf()")
            .execute(&mut conn)
            .await
            .unwrap_or_else(|e| panic!("reload {}: {e}", self.name));
    }

    /// Whether the server is a standby now (`pg_is_in_recovery()`).
    pub async fn in_recovery(&self) -> bool {
        let mut conn = PgConnection::connect(&self.url("postgres"))
            .await
            .unwrap_or_else(|e| panic!("connect to {}: {e}", self.name));
        sqlx::query_scalar("SELECT pg_is_in_recovery()")
            .fetch_one(&mut conn)
            .await
            .unwrap_or_else(|e| panic!("ask {} whether it is in recovery: {e}", self.name))
    }

    /// Waits until `standby` has replayed everything this primary has
    /// written so far.
    pub async fn wait_replayed(&self, standby: &Cluster) {
        let mut conn = PgConnection::connect(&self.url("postgres"))
            .await
            .unwrap_or_else(|e| panic!("connect to {}: {e}", self.name));
        let lsn: String = sqlx::query_scalar("SELECT pg_current_wal_lsn()::text")
            .fetch_one(&mut conn)
            .await
            .unwrap_or_else(|e| panic!("read {}'s WAL position: {e}", self.name));
        until(&format!("{} replayed {lsn}", standby.name), || async {
            let mut conn = PgConnection::connect(&standby.url("postgres")).await.ok()?;
            let caught_up: Option<bool> =
                sqlx::query_scalar("SELECT pg_last_wal_replay_lsn() >= $1::text::pg_lsn")
                    .bind(&lsn)
                    .fetch_one(&mut conn)
                    .await
                    .ok()?;
            caught_up.unwrap_or(false).then_some(())
        })
        .await;
    }

    /// The server's log so far (for a failing test's message).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
    }

    /// A directory owned by `postgres` with nothing in it yet, and a free
    /// loopback port.
    fn empty(name: &str, bin: PathBuf) -> Cluster {
        let dir = tempfile::Builder::new()
            .prefix(&format!("nomos-pg-{name}-"))
            .tempdir()
            .unwrap_or_else(|e| panic!("a directory for cluster {name}: {e}"));
        if running_as_root() {
            let status = std::process::Command::new("chown")
                .arg("postgres:postgres")
                .arg(dir.path())
                .status()
                .unwrap_or_else(|e| panic!("chown {}: {e}", dir.path().display()));
            assert!(status.success(), "chown {} failed", dir.path().display());
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .unwrap_or_else(|e| panic!("a free port for cluster {name}: {e}"));
        Cluster {
            dir,
            port,
            bin,
            name: name.to_owned(),
        }
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// Appends this cluster's own settings, then `settings`, to its
    /// `postgresql.conf`.
    async fn configure(&self, settings: &[(&str, String)]) {
        let mut text = format!(
            "\n# nomos-continue test cluster {name}\nport = {port}\n\
             unix_socket_directories = '{dir}'\ncluster_name = '{name}'\n",
            name = self.name,
            port = self.port,
            dir = self.dir.path().display(),
        );
        for (key, value) in settings {
            text.push_str(&format!("{key} = {value}\n"));
        }
        let path = self.data().join("postgresql.conf");
        let mut conf = tokio::fs::read_to_string(&path)
            .await
            .unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
        conf.push_str(&text);
        tokio::fs::write(&path, conf)
            .await
            .unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    }

    /// Runs one of PostgreSQL's programs as the `postgres` user; panics with
    /// its output (and the server's log) when it fails.
    async fn as_postgres(&self, program: &str, args: &[&str]) -> Output {
        let path = self.bin.join(program);
        let mut command = if running_as_root() {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(&path);
            c
        } else {
            Command::new(&path)
        };
        let output = command
            .args(args)
            .current_dir(self.dir.path())
            .output()
            .await
            .unwrap_or_else(|e| panic!("run {}: {e}", path.display()));
        assert!(
            output.status.success(),
            "{program} {args:?} for cluster {} failed: {}\n{}\n{}\nserver log:\n{}",
            self.name,
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr),
            self.log(),
        );
        output
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // Best effort and blocking (Drop cannot await): the directory goes
        // with the TempDir right after.
        let pg_ctl = self.bin.join("pg_ctl");
        let data = self.data();
        let mut command = if running_as_root() {
            let mut c = std::process::Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(&pg_ctl);
            c
        } else {
            std::process::Command::new(&pg_ctl)
        };
        let _ = command
            .arg("-D")
            .arg(&data)
            .args(["-m", "immediate", "-w", "stop"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status();
    }
}

/// The newest installed PostgreSQL's `bin` directory (`/usr/lib/postgresql/N/bin`
/// on Debian), or `NOMOS_TEST_PG_BIN`. `None` (a test is skipped) when
/// there is none, except under CI, where that panics.
fn bin_dir() -> Option<PathBuf> {
    if let Ok(dir) = std::env::var("NOMOS_TEST_PG_BIN") {
        return Some(PathBuf::from(dir));
    }
    let newest = std::fs::read_dir("/usr/lib/postgresql")
        .ok()
        .into_iter()
        .flatten()
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let version: u32 = entry.file_name().to_str()?.parse().ok()?;
            let bin = entry.path().join("bin");
            bin.join("initdb").exists().then_some((version, bin))
        })
        .max_by_key(|(version, _)| *version)
        .map(|(_, bin)| bin);
    if newest.is_none() {
        assert!(
            !in_ci(),
            "CI=true but no PostgreSQL server binaries (initdb) under /usr/lib/postgresql: \
             install postgresql or set NOMOS_TEST_PG_BIN"
        );
        eprintln!("skipped: no PostgreSQL server binaries for a cluster of the test's own");
    }
    newest
}

fn running_as_root() -> bool {
    // The process's effective uid, without a libc binding: /proc says it.
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|rest| rest.split_whitespace().nth(1).map(|u| u == "0"))
        })
        .unwrap_or(false)
}
