//! Unit tests of keys, signatures and their files.

use super::*;

const WASM: &[u8] = b"\0asm pretend component";

fn path() -> &'static Path {
    Path::new("k")
}

#[test]
fn a_signature_verifies_under_its_key_after_a_round_trip_through_text() {
    let secret = SecretKey::generate();
    let secret = SecretKey::parse(path(), &secret.to_file_text()).expect("key file");
    let public = PublicKey::parse(path(), &secret.public().to_file_text()).expect("pub");
    let line = secret.sign(WASM).to_line();
    assert!(!line.contains('\n'), "one line, fit for a header");
    let signature = Signature::parse(&format!("{line}\n")).expect("signature");
    assert_eq!(&signature.key_id, public.id());
    assert_eq!(public.verify(WASM, &signature), Ok(()));
}

#[test]
fn a_signature_by_another_key_names_both_keys() {
    let signer = SecretKey::generate();
    let other = SecretKey::generate().public();
    let signature = signer.sign(WASM);
    assert_eq!(
        other.verify(WASM, &signature),
        Err(SignatureError::UnknownKey {
            signed_by: signer.public().id().clone(),
            expected: other.id().to_string(),
        })
    );
}

#[test]
fn a_keyring_accepts_each_of_its_keys_and_names_them_all_otherwise() {
    let (old, new) = (SecretKey::generate(), SecretKey::generate());
    let dir = tempfile::tempdir().expect("tempdir");
    let paths: Vec<PathBuf> = [&old, &new]
        .iter()
        .enumerate()
        .map(|(i, key)| {
            let path = dir.path().join(format!("{i}.pub"));
            std::fs::write(&path, key.public().to_file_text()).expect("write");
            path
        })
        .collect();
    let ring = Keyring::read(&paths).expect("read").expect("two keys");
    assert!(Keyring::read(&[]).expect("no files").is_none());
    assert_eq!(ring.verify(WASM, &old.sign(WASM)), Ok(()));
    assert_eq!(ring.verify(WASM, &new.sign(WASM)), Ok(()));
    let stranger = SecretKey::generate().sign(WASM);
    match ring.verify(WASM, &stranger) {
        Err(SignatureError::UnknownKey { expected, .. }) => {
            assert_eq!(
                expected,
                format!("{}, {}", old.public().id(), new.public().id())
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn tampered_bytes_or_a_tampered_signature_are_refused() {
    let secret = SecretKey::generate();
    let public = secret.public();
    let signature = secret.sign(WASM);
    let mut tampered = WASM.to_vec();
    tampered[5] ^= 1;
    assert_eq!(
        public.verify(&tampered, &signature),
        Err(SignatureError::Invalid(public.id().clone()))
    );
    let line = signature.to_line();
    let (head, sig) = line.rsplit_once(' ').expect("three words");
    let mut bytes = BASE64.decode(sig).expect("base64");
    bytes[0] ^= 1;
    let forged = Signature::parse(&format!("{head} {}", BASE64.encode(bytes))).expect("parse");
    assert_eq!(
        public.verify(WASM, &forged),
        Err(SignatureError::Invalid(public.id().clone()))
    );
}

#[test]
fn malformed_signatures_are_refused_with_a_reason() {
    let line = SecretKey::generate().sign(WASM).to_line();
    let words: Vec<&str> = line.split(' ').collect();
    for bad in [
        String::new(),
        "garbage".to_owned(),
        format!("nomos-continue-signature-v0 {} {}", words[1], words[2]),
        format!("{} {}", words[0], words[1]),
        format!("{} xyz {}", words[0], words[2]),
        format!("{} {} not-base64!", words[0], words[1]),
        format!("{} {} {}", words[0], words[1], BASE64.encode([0u8; 63])),
        format!("{line} extra"),
    ] {
        assert!(
            matches!(Signature::parse(&bad), Err(SignatureError::Malformed(_))),
            "{bad:?} parsed"
        );
    }
}

#[test]
fn malformed_key_files_are_refused_and_the_two_kinds_are_not_confused() {
    let secret = SecretKey::generate();
    let public_text = secret.public().to_file_text();
    let malformed = |r: Result<PublicKey, SignatureError>| {
        matches!(r, Err(SignatureError::MalformedKey { .. }))
    };
    assert!(malformed(PublicKey::parse(path(), &secret.to_file_text())));
    assert!(matches!(
        SecretKey::parse(path(), &public_text),
        Err(SignatureError::MalformedKey { .. })
    ));
    assert!(malformed(PublicKey::parse(path(), "")));
    assert!(malformed(PublicKey::parse(path(), PUBLIC_HEADER)));
    let short = format!("{PUBLIC_HEADER}\n{}\n", BASE64.encode([1u8; 31]));
    assert!(malformed(PublicKey::parse(path(), &short)));
    let extra = format!("{public_text}more\n");
    assert!(malformed(PublicKey::parse(path(), &extra)));
}

#[test]
fn a_secret_key_file_is_created_owner_only_and_never_overwritten() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("p.key");
    let key = SecretKey::generate();
    write_secret_file(&path, &key).expect("write");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).expect("stat").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    assert!(write_secret_file(&path, &SecretKey::generate()).is_err());
    let read = SecretKey::read(&path).expect("read back");
    assert_eq!(read.public().id(), key.public().id());
}
