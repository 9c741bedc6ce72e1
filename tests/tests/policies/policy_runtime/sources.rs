//! Where the running policy comes from when a watched file, uploads and the
//! database all name one (`nomos_continue::deploy`): the database decides.
//! A file is uploaded when its contents change, and at start-up when the
//! database has never stored them; otherwise the database's active
//! revision runs, here and in the database, whatever the file holds.
//!
//! Watchers are driven by hand (`run_once`), so each step is a fact, not a
//! race against a poll interval.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use nomos_continue::clock::{Clock, SystemClock};
use nomos_continue::deploy::{DbPolicyWatcher, FileWatcher, PolicyDeployment, WatchOutcome};
use nomos_continue::policy::{Limits, PolicyRuntime, Revision, BUILTIN_POLICY_WASM};
use nomos_continue::store::Store;
use nomos_continue_tests::policies::variant;
use tempfile::TempDir;

nomos_continue_tests::on_both_stores!(
    an_upload_outlives_watcher_passes_until_the_file_changes,
    a_file_the_database_already_has_does_not_replace_its_active_revision,
    the_file_watcher_uploads_new_files_and_reports_a_bad_one_once,
);

/// One replica as `serve --policy FILE` builds it: a runtime started from
/// the file, its deployment and both watchers.
struct Replica {
    store: Store,
    runtime: Arc<PolicyRuntime>,
    deployment: PolicyDeployment,
    file: FileWatcher,
    database: DbPolicyWatcher,
    path: PathBuf,
    _dir: TempDir,
}

impl Replica {
    fn start(store: &Store, file: &[u8]) -> Replica {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("policy.wasm");
        std::fs::write(&path, file).expect("write the policy file");
        let runtime = Arc::new(
            PolicyRuntime::with_policy(Limits::default(), file).expect("the file's policy loads"),
        );
        let deployment =
            PolicyDeployment::new(runtime.clone(), store.clone(), Arc::new(SystemClock), None);
        let hour = Duration::from_secs(3600);
        Replica {
            store: store.clone(),
            file: deployment.watch_file(path.clone(), hour),
            database: deployment.watch_database(hour),
            runtime,
            deployment,
            path,
            _dir: dir,
        }
    }

    /// Both watchers look `n` times, in turn, as their loops would; answers
    /// every revision either activated. Two sources that fight show up here
    /// as a swap on every look, even when the last look swaps back.
    async fn passes(&mut self, n: usize) -> Vec<Revision> {
        let mut activated = Vec::new();
        for _ in 0..n {
            for outcome in [self.file.run_once().await, self.database.run_once().await] {
                match outcome {
                    WatchOutcome::Activated(revision) => activated.push(revision),
                    WatchOutcome::Unchanged => {}
                    other => panic!("a watcher failed: {other:?}"),
                }
            }
        }
        activated
    }

    /// Asserts that `bytes` run here and are the database's active revision.
    async fn assert_active(&self, bytes: &[u8], what: &str) {
        let expected = Revision::of(bytes);
        assert_eq!(self.runtime.active_revision(), expected, "{what}: here");
        let active = self
            .store
            .active_policy()
            .await
            .expect("read the active policy")
            .expect("an active policy");
        assert_eq!(active.hash, expected.0, "{what}: in the database");
    }
}

/// Saves `bytes` as a revision (as an upload from elsewhere did earlier).
async fn save(store: &Store, bytes: &[u8]) {
    let hash = Revision::of(bytes).0;
    store
        .save_policy_revision(&hash, bytes, "variant", "0", SystemClock.now())
        .await
        .expect("save a revision");
}

async fn activate(store: &Store, bytes: &[u8]) {
    store
        .activate_policy(&Revision::of(bytes).0, SystemClock.now())
        .await
        .expect("activate a revision");
}

/// Start-up with a file the database has never seen uploads it; an upload
/// then wins over the unchanged file however often the watchers look; a
/// change of the file is uploaded and wins in turn.
async fn an_upload_outlives_watcher_passes_until_the_file_changes(store: Store) {
    let (a, b, c, d) = (variant("a"), variant("b"), variant("c"), variant("d"));
    save(&store, &b).await;
    activate(&store, &b).await;

    let mut replica = Replica::start(&store, &a);
    match replica.file.run_once().await {
        WatchOutcome::Activated(revision) => assert_eq!(revision, Revision::of(&a)),
        other => panic!("a file new to the database is uploaded at start-up, got {other:?}"),
    }
    assert_eq!(replica.passes(2).await, [], "the file's upload is settled");
    replica.assert_active(&a, "after start-up").await;

    let (revision, _) = replica
        .deployment
        .upload(c.clone(), None)
        .await
        .expect("the upload is valid");
    assert_eq!(revision, Revision::of(&c));
    assert_eq!(
        replica.passes(3).await,
        [],
        "neither watcher undoes the upload while the file is unchanged"
    );
    replica
        .assert_active(&c, "an upload, then the unchanged file")
        .await;

    std::fs::write(&replica.path, &d).expect("change the policy file");
    assert_eq!(
        replica.passes(2).await,
        [Revision::of(&d)],
        "the changed file is uploaded once"
    );
    replica.assert_active(&d, "after the file changed").await;
}

/// Start-up with a file the database already has (uploaded once, since
/// replaced by another upload): the database's active revision runs.
async fn a_file_the_database_already_has_does_not_replace_its_active_revision(store: Store) {
    let (a, b) = (variant("a"), variant("b"));
    save(&store, &a).await;
    save(&store, &b).await;
    activate(&store, &b).await;

    let mut replica = Replica::start(&store, &a);
    assert!(
        matches!(replica.file.run_once().await, WatchOutcome::Unchanged),
        "a file the database has is no news"
    );
    match replica.database.run_once().await {
        WatchOutcome::Activated(revision) => assert_eq!(revision, Revision::of(&b)),
        other => panic!("the database's revision replaces the file's, got {other:?}"),
    }
    assert_eq!(replica.passes(3).await, [], "the file does not fight back");
    replica.assert_active(&b, "the database decides").await;
}

/// A missing file is a failed look; a new file is uploaded once; a bad one
/// is refused, reported once and not vetted again, and the last good
/// revision keeps running here and in the database.
async fn the_file_watcher_uploads_new_files_and_reports_a_bad_one_once(store: Store) {
    let mut replica = Replica::start(&store, BUILTIN_POLICY_WASM);
    std::fs::remove_file(&replica.path).expect("remove the policy file");
    assert!(
        matches!(replica.file.run_once().await, WatchOutcome::Failed(_)),
        "no file"
    );

    let x = variant("x");
    std::fs::write(&replica.path, &x).expect("write the policy file");
    match replica.file.run_once().await {
        WatchOutcome::Activated(revision) => assert_eq!(revision, Revision::of(&x)),
        other => panic!("expected the new file to be uploaded, got {other:?}"),
    }
    assert!(matches!(
        replica.file.run_once().await,
        WatchOutcome::Unchanged
    ));
    replica.assert_active(&x, "the new file").await;

    let broken = super::wasm(env!("BROKEN_WASM"));
    std::fs::write(&replica.path, &broken).expect("write the policy file");
    match replica.file.run_once().await {
        WatchOutcome::Rejected(revision, reasons) => {
            assert_eq!(revision, Revision::of(&broken));
            assert!(!reasons.is_empty());
        }
        other => panic!("expected the broken file to be refused, got {other:?}"),
    }
    let rejected = replica.runtime.stats().rejected_candidates;
    assert_eq!(replica.passes(2).await, []);
    assert_eq!(
        replica.runtime.stats().rejected_candidates,
        rejected,
        "a bad file is reported once, not vetted again"
    );
    replica
        .assert_active(&x, "the last good revision keeps running")
        .await;
    let saved = store.policy_revisions().await.expect("revisions");
    assert!(
        saved.iter().all(|r| r.hash != Revision::of(&broken).0),
        "a refused file is never saved"
    );
}
