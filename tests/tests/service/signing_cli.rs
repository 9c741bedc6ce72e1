//! `policy keygen` and `policy sign` through the real binary, and `serve
//! --policy-verify-key` refusing to start on a policy file whose signature
//! is missing or by another key (before it serves anything).

use std::path::Path;
use std::process::{Command, Output};

use nomos_continue::policy::BUILTIN_POLICY_WASM;
use nomos_continue::signing::{signature_path, PublicKey, SecretKey, Signature};
use nomos_continue_tests::policies::variant;
use nomos_continue_tests::replica::binary;

fn run(args: &[&std::ffi::OsStr], env: &[(&str, &Path)]) -> Output {
    let mut command = Command::new(binary());
    command.args(args).env_remove("DATABASE_URL");
    for (name, value) in env {
        command.env(name, value);
    }
    command
        .output()
        .unwrap_or_else(|e| panic!("run {args:?}: {e}"))
}

fn ok(output: &Output) -> String {
    assert!(
        output.status.success(),
        "exited {}: {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn os(s: &str) -> &std::ffi::OsStr {
    s.as_ref()
}

#[test]
fn keygen_and_sign_round_trip_and_serve_refuses_an_unverified_policy_file() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let prefix = dir.path().join("ops");
    let out = ok(&run(&[os("policy"), os("keygen"), prefix.as_os_str()], &[]));
    let public = PublicKey::read(&dir.path().join("ops.pub")).expect("the .pub file");
    let secret = SecretKey::read(&dir.path().join("ops.key")).expect("the .key file");
    assert_eq!(secret.public().id(), public.id());
    assert!(out.contains(&format!("key id {}", public.id())), "{out}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let meta = std::fs::metadata(dir.path().join("ops.key")).expect("stat");
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    }
    let again = run(&[os("policy"), os("keygen"), prefix.as_os_str()], &[]);
    assert!(!again.status.success(), "keygen must not overwrite a key");

    let wasm = dir.path().join("policy.wasm");
    let bytes = variant("cli");
    std::fs::write(&wasm, &bytes).expect("write the policy");
    let key = dir.path().join("ops.key");
    let out = ok(&run(
        &[
            os("policy"),
            os("sign"),
            os("--key"),
            key.as_os_str(),
            wasm.as_os_str(),
        ],
        &[],
    ));
    assert!(out.contains(&public.id().0), "{out}");
    let line = std::fs::read_to_string(signature_path(&wasm)).expect("the .sig file");
    let signature = Signature::parse(&line).expect("a signature line");
    assert_eq!(public.verify(&bytes, &signature), Ok(()));
    let mut tampered = bytes.clone();
    tampered.push(0);
    assert!(public.verify(&tampered, &signature).is_err());
    assert!(public.verify(BUILTIN_POLICY_WASM, &signature).is_err());

    // serve: the file signed by another key (flag), then unsigned (env var).
    let other = dir.path().join("other");
    ok(&run(&[os("policy"), os("keygen"), other.as_os_str()], &[]));
    let db = format!("sqlite:{}", dir.path().join("db.sqlite").display());
    let serve = |key_flag: Option<&Path>, env: &[(&str, &Path)]| {
        let mut args = vec![
            os("serve"),
            os("--listen"),
            os("127.0.0.1:0"),
            os("--database-url"),
            os(&db),
            os("--policy"),
            wasm.as_os_str(),
        ];
        if let Some(key) = key_flag {
            args.extend([os("--policy-verify-key"), key.as_os_str()]);
        }
        let output = run(&args, env);
        assert!(!output.status.success(), "serve must refuse to start");
        String::from_utf8_lossy(&output.stderr).into_owned()
    };
    let other_pub = dir.path().join("other.pub");
    let err = serve(Some(&other_pub), &[]);
    assert!(err.contains("not by the configured verify key"), "{err}");
    std::fs::remove_file(signature_path(&wasm)).expect("remove the .sig");
    let ops_pub = dir.path().join("ops.pub");
    let err = serve(None, &[("NOMOS_CONTINUE_POLICY_VERIFY_KEY", &ops_pub)]);
    assert!(err.contains("is not signed"), "{err}");
}
