//! Signed revisions (`serve --policy-verify-key`): every way a revision
//! reaches a replica with the key (an upload, the watched file, the
//! database's active row, a rollback) is refused without a valid signature
//! by that key, and the key id is recorded with the revision. The built-in
//! policy needs none. Watchers are driven by hand, as in `sources.rs`.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use nomos_continue::clock::SystemClock;
use nomos_continue::deploy::{DeployError, PolicyDeployment, WatchOutcome};
use nomos_continue::policy::{Limits, PolicyRuntime, Revision, BUILTIN_POLICY_WASM};
use nomos_continue::signing::{Keyring, PublicKey, SecretKey, SignatureError};
use nomos_continue::store::Store;
use nomos_continue_tests::api::ServedApi;
use nomos_continue_tests::policies::variant;

nomos_continue_tests::on_both_stores!(
    an_upload_needs_a_valid_signature_and_its_key_id_is_recorded,
    a_revision_stored_unsigned_by_a_replica_without_the_key_is_refused,
    a_watched_file_without_its_signature_is_refused_until_it_is_signed,
    a_rollback_to_an_unsigned_revision_is_refused,
    the_built_in_policy_needs_no_signature,
);

const ADMIN: &str = "admin-token";

/// A replica's deployment on a runtime of its own (tests swap), checking
/// signatures with `key` when given.
fn replica(store: &Store, key: Option<&PublicKey>) -> (Arc<PolicyRuntime>, PolicyDeployment) {
    let runtime = Arc::new(PolicyRuntime::new(Limits::default()).expect("built-in policy loads"));
    let deployment = PolicyDeployment::new(
        runtime.clone(),
        store.clone(),
        Arc::new(SystemClock),
        key.cloned().map(Keyring::from),
    );
    (runtime, deployment)
}

/// The key id the store recorded for `wasm`'s revision.
async fn recorded_key(store: &Store, wasm: &[u8]) -> Option<String> {
    let hash = Revision::of(wasm).0;
    let revisions = store.policy_revisions().await.expect("list revisions");
    let row = revisions
        .into_iter()
        .find(|r| r.hash == hash)
        .expect("the revision is stored");
    row.key_id
}

async fn active_hash(store: &Store) -> String {
    let active = store.active_policy().await.expect("read the active policy");
    active.expect("an active revision").hash
}

fn reason(body: &serde_json::Value) -> String {
    body["reasons"][0].as_str().unwrap_or_default().to_owned()
}

/// Over the API: no signature, another key's, a signature of other bytes
/// and a malformed one are each a 422 naming why, and change nothing; a
/// valid one is accepted and its key id and line are stored with the row.
async fn an_upload_needs_a_valid_signature_and_its_key_id_is_recorded(store: Store) {
    let key = SecretKey::generate();
    let api = ServedApi::start_verified(store.clone(), ADMIN, key.public()).await;
    let (a, b) = (variant("signed-a"), variant("signed-b"));

    let refusals = [
        (None, "is not signed"),
        (
            Some(SecretKey::generate().sign(&a).to_line()),
            "not by the configured verify key",
        ),
        (Some(key.sign(&b).to_line()), "does not match the component"),
        (
            Some("nomos-continue-signature-v1 zz".to_owned()),
            "malformed",
        ),
    ];
    for (signature, why) in refusals {
        let answer = api.upload_policy(&a, signature.as_deref()).await;
        let body = answer.expect_error(422);
        assert!(reason(&body).contains(why), "{why}: {body}");
    }
    assert!(
        store.active_policy().await.expect("read").is_none(),
        "a refused upload records nothing"
    );

    let line = key.sign(&a).to_line();
    let answer = api.upload_policy(&a, Some(&line)).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_eq!(answer.json()["revision"], Revision::of(&a).0);
    assert_eq!(
        recorded_key(&store, &a).await.as_deref(),
        Some(key.public().id().0.as_str())
    );
    let active = store.active_policy().await.expect("read").expect("active");
    assert_eq!(active.signature.as_deref(), Some(line.as_str()));
}

/// A replica without the key stores and activates an unsigned revision; a
/// replica with the key does not run it (and says so once). Once the same
/// revision is uploaded with its signature, the keyed replica runs it.
async fn a_revision_stored_unsigned_by_a_replica_without_the_key_is_refused(store: Store) {
    let key = SecretKey::generate();
    let (_, open) = replica(&store, None);
    let (keyed_runtime, keyed) = replica(&store, Some(&key.public()));
    let mut watcher = keyed.watch_database(Duration::from_secs(3600));
    let a = variant("unsigned-row");

    open.upload(a.clone(), None)
        .await
        .expect("no key, no check");
    assert_eq!(recorded_key(&store, &a).await, None);
    match watcher.run_once().await {
        WatchOutcome::Rejected(revision, reasons) => {
            assert_eq!(revision, Revision::of(&a));
            assert!(reasons[0].contains("is not signed"), "{reasons:?}");
        }
        other => panic!("an unsigned row must be refused, got {other:?}"),
    }
    assert_eq!(
        keyed_runtime.active_revision(),
        Revision::of(BUILTIN_POLICY_WASM)
    );
    assert!(matches!(watcher.run_once().await, WatchOutcome::Unchanged));

    let line = key.sign(&a).to_line();
    open.upload(a.clone(), Some(&line))
        .await
        .expect("re-signed");
    match watcher.run_once().await {
        WatchOutcome::Activated(revision) => assert_eq!(revision, Revision::of(&a)),
        other => panic!("the signed row must be activated, got {other:?}"),
    }
    assert_eq!(keyed_runtime.active_revision(), Revision::of(&a));
}

/// `--policy FILE` with a key: the file alone is refused; writing
/// `FILE.sig` (as `policy sign` does) is a change the watcher acts on.
async fn a_watched_file_without_its_signature_is_refused_until_it_is_signed(store: Store) {
    let key = SecretKey::generate();
    let (runtime, keyed) = replica(&store, Some(&key.public()));
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("policy.wasm");
    let a = variant("watched");
    std::fs::write(&path, &a).expect("write the policy file");
    let mut watcher = keyed.watch_file(path.clone(), Duration::from_secs(3600));

    match watcher.run_once().await {
        WatchOutcome::Rejected(_, reasons) => {
            assert!(reasons[0].contains("is not signed"), "{reasons:?}");
        }
        other => panic!("an unsigned file must be refused, got {other:?}"),
    }
    assert!(matches!(watcher.run_once().await, WatchOutcome::Unchanged));
    assert!(store.active_policy().await.expect("read").is_none());

    write_signature(&path, &key, &a);
    match watcher.run_once().await {
        WatchOutcome::Activated(revision) => assert_eq!(revision, Revision::of(&a)),
        other => panic!("the signed file must be activated, got {other:?}"),
    }
    assert_eq!(runtime.active_revision(), Revision::of(&a));
    assert_eq!(
        recorded_key(&store, &a).await.as_deref(),
        Some(key.public().id().0.as_str())
    );
}

fn write_signature(wasm: &Path, key: &SecretKey, bytes: &[u8]) {
    let path = nomos_continue::signing::signature_path(wasm);
    std::fs::write(path, format!("{}\n", key.sign(bytes).to_line())).expect("write FILE.sig");
}

/// A revision another replica stored unsigned, then a signed upload over
/// the API: the admin's rollback (to the unsigned one) is a 422 naming the
/// missing signature, and the signed revision stays active.
async fn a_rollback_to_an_unsigned_revision_is_refused(store: Store) {
    let key = SecretKey::generate();
    let (_, open) = replica(&store, None);
    let (a, b) = (variant("rollback-unsigned"), variant("rollback-signed"));
    open.upload(a.clone(), None)
        .await
        .expect("no key, no check");

    let api = ServedApi::start_verified(store.clone(), ADMIN, key.public()).await;
    let line = key.sign(&b).to_line();
    let answer = api.upload_policy(&b, Some(&line)).await;
    assert_eq!(answer.status, 200, "{}", answer.text);

    let answer = api.send_admin("POST", "/v1/policy/rollback", "").await;
    let body = answer.expect_error(422);
    assert!(reason(&body).contains("is not signed"), "{body}");
    assert_eq!(active_hash(&store).await, Revision::of(&b).0);
}

/// The first signed upload on a fresh database records the built-in policy
/// it replaces (unsigned); rolling back to it is allowed, and a built-in
/// revision passes the check without a signature.
async fn the_built_in_policy_needs_no_signature(store: Store) {
    let key = SecretKey::generate();
    let (runtime, keyed) = replica(&store, Some(&key.public()));
    assert_eq!(keyed.verify(BUILTIN_POLICY_WASM, None), Ok(None));
    assert_eq!(
        keyed.verify(&variant("x"), None),
        Err(SignatureError::Missing)
    );

    let a = variant("after-builtin");
    let line = key.sign(&a).to_line();
    keyed.upload(a.clone(), Some(&line)).await.expect("signed");
    let builtin = Revision::of(BUILTIN_POLICY_WASM);
    assert_eq!(recorded_key(&store, BUILTIN_POLICY_WASM).await, None);
    let (from, to) = keyed.rollback().await.expect("back to the built-in policy");
    assert_eq!((from, to.clone()), (Revision::of(&a), builtin.clone()));
    assert_eq!(runtime.active_revision(), builtin);

    // And back again: the signed revision's recorded signature is checked.
    let (_, to) = keyed.rollback().await.expect("forward to the signed one");
    assert_eq!(to, Revision::of(&a));
    let unsigned = variant("never-signed");
    match keyed.upload(unsigned, None).await {
        Err(DeployError::Signature(SignatureError::Missing)) => {}
        other => panic!("an unsigned upload must be refused, got {other:?}"),
    }
    assert_eq!(active_hash(&store).await, Revision::of(&a).0);
}
