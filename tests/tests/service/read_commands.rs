//! Read commands read: `status`, `policy replay` and `policy capture`
//! never create a store nor migrate one. Pointed at a missing SQLite file
//! or an unmigrated database they say so and exit non-zero, and leave it as
//! they found it (before, `status` in a folder without a database created
//! `nomos-continue.db`, migrated it and reported an empty system).

use std::path::Path;
use std::process::Output;

use nomos_continue::policy::BUILTIN_POLICY_PATH;
use nomos_continue_tests::db::empty_postgres;
use nomos_continue_tests::replica::binary;

/// Each read command against `url`, run in `dir` with no `DATABASE_URL`.
fn reads(url: &str, dir: &Path) -> Vec<(String, Output)> {
    let to = dir.join("golden");
    let to = to.to_str().expect("a UTF-8 path");
    [
        vec!["status"],
        vec!["policy", "replay", BUILTIN_POLICY_PATH],
        vec!["policy", "capture", "1", "--to", to],
    ]
    .into_iter()
    .map(|args| {
        let output = std::process::Command::new(binary())
            .args(&args)
            .args(["--database-url", url])
            .current_dir(dir)
            .env_remove("DATABASE_URL")
            .output()
            .unwrap_or_else(|e| panic!("run {args:?}: {e}"));
        (args.join(" "), output)
    })
    .collect()
}

/// Each command failed, and its error says `why`.
fn each_refused(outputs: &[(String, Output)], why: &str) {
    for (args, output) in outputs {
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{args} succeeded: {stderr}");
        assert!(stderr.contains(why), "{args}: {stderr}");
    }
}

#[test]
fn a_missing_sqlite_file_is_not_created() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("nomos-continue.db");
    let url = format!("sqlite:{}", file.display());
    each_refused(&reads(&url, dir.path()), "does not exist");
    assert!(!file.exists(), "a read created {}", file.display());
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .expect("read the folder")
        .map(|e| e.map(|e| e.file_name()))
        .collect::<Result<_, _>>()
        .expect("list the folder");
    assert!(left.is_empty(), "a read left files: {left:?}");
}

#[test]
fn an_unmigrated_sqlite_file_is_not_migrated() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("empty.db");
    // An empty file is an empty SQLite database.
    std::fs::File::create(&file).expect("create the file");
    let url = format!("sqlite:{}", file.display());
    each_refused(
        &reads(&url, dir.path()),
        "run `nomos-continue migrate` first",
    );
    let bytes = std::fs::metadata(&file).expect("the file").len();
    assert_eq!(
        bytes, 0,
        "a read wrote {bytes} bytes into the empty database"
    );
}

#[tokio::test]
async fn an_unmigrated_postgres_database_is_not_migrated() {
    let Some(db) = empty_postgres().await else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let url = db.url.clone();
    let outputs = tokio::task::spawn_blocking(move || {
        let outputs = reads(&url, dir.path());
        drop(dir);
        outputs
    })
    .await
    .expect("the commands ran");
    each_refused(&outputs, "holds no nomos-continue schema");
    let tables = db.store.tables().await.expect("list the tables");
    assert!(tables.is_empty(), "a read created tables: {tables:?}");
    db.cleanup().await;
}

/// `serve --no-migrate` on a database `migrate` has not brought up to this
/// version stops before serving, says why and migrates nothing.
#[test]
fn serve_with_no_migrate_refuses_an_unmigrated_database() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("empty.db");
    std::fs::File::create(&file).expect("create the file");
    let output = std::process::Command::new(binary())
        .args(["serve", "--no-migrate", "--listen", "127.0.0.1:0"])
        .args(["--database-url", &format!("sqlite:{}", file.display())])
        .current_dir(dir.path())
        .env_remove("DATABASE_URL")
        .output()
        .expect("run serve");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "serve started: {stderr}");
    assert!(
        stderr.contains("--no-migrate") && stderr.contains("nomos-continue migrate"),
        "{stderr}"
    );
    let bytes = std::fs::metadata(&file).expect("the file").len();
    assert_eq!(bytes, 0, "serve --no-migrate wrote {bytes} bytes");
}

/// A database URL's password appears in no error: a connection refused,
/// from a read command and from `serve`, in text and in JSON logs.
#[test]
fn a_failing_connection_prints_no_password() {
    const PLANTED: &str = "s3cretpw";
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = closed.local_addr().expect("addr").port();
    drop(closed);
    let url = format!("postgres://nomos:{PLANTED}@127.0.0.1:{port}/nomos");
    let commands = [
        vec!["status"],
        vec!["serve", "--listen", "127.0.0.1:0"],
        vec!["--log-format", "json", "serve", "--listen", "127.0.0.1:0"],
        vec!["migrate"],
    ];
    // At once: each waits out the pool's connect timeout before it fails.
    let outputs: Vec<Output> = std::thread::scope(|scope| {
        let running: Vec<_> = (commands.iter())
            .map(|args| {
                let url = &url;
                scope.spawn(move || {
                    std::process::Command::new(binary())
                        .args(args)
                        .env("DATABASE_URL", url)
                        .output()
                        .unwrap_or_else(|e| panic!("run {args:?}: {e}"))
                })
            })
            .collect();
        (running.into_iter())
            .map(|r| r.join().expect("the command's thread"))
            .collect()
    });
    for (args, output) in commands.iter().zip(&outputs) {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(!output.status.success(), "{args:?} succeeded: {stderr}");
        assert!(
            !stderr.contains(PLANTED) && !stdout.contains(PLANTED),
            "{args:?} printed the password: {stderr}{stdout}"
        );
        assert!(stderr.contains("error"), "{args:?} says nothing: {stderr}");
    }
}
