//! Signed policy revisions: Ed25519 keys, detached signatures over a
//! component's bytes, and the text files they travel in.
//!
//! Why: swapping the policy over HTTP is the point of the WebAssembly
//! boundary, but it also means a leaked admin token installs any component
//! at all. With a verify key configured, a revision runs only if the holder
//! of the matching private key signed it (see [`crate::deploy`] for where
//! that is enforced). This module only does the cryptography and the file
//! formats; it knows nothing of the store or the runtime.
//!
//! # Files
//!
//! Plain text, so they can be pasted, diffed and sent in a header:
//!
//! ```text
//! PREFIX.key   nomos-continue policy signing key (ed25519)
//!              <base64 of the 32-byte secret seed>
//! PREFIX.pub   nomos-continue policy verify key (ed25519)
//!              <base64 of the 32-byte public key>
//! FILE.sig     nomos-continue-signature-v1 <key id> <base64 of the 64-byte signature>
//! ```
//!
//! The signature is one line so that it fits an HTTP header verbatim. The
//! key id is the first 16 hex digits of the SHA-256 of the public key: it
//! names the key that signed, so a refusal can say "signed by another key"
//! rather than only "invalid".
//!
//! # What is signed
//!
//! [`SIGNED_CONTEXT`] followed by the SHA-256 of the component's bytes. The
//! context keeps a signature made for something else with the same key from
//! ever passing as a policy signature.

use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use ed25519_dalek::{Signer, SigningKey, VerifyingKey};
use sha2::{Digest, Sha256};

/// First line of a private key file.
const SECRET_HEADER: &str = "nomos-continue policy signing key (ed25519)";
/// First line of a public key file.
const PUBLIC_HEADER: &str = "nomos-continue policy verify key (ed25519)";
/// First word of a signature line; the version is for a later format.
const SIGNATURE_TAG: &str = "nomos-continue-signature-v1";
/// Prefixed to the component's digest before signing (see the module docs).
pub const SIGNED_CONTEXT: &[u8] = b"nomos-continue policy revision v1\n";

/// Why a key or signature could not be read, or a signature was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SignatureError {
    /// A revision came without a signature while a verify key is set.
    #[error("the policy is not signed (a verify key is configured; sign it with `nomos-continue policy sign`)")]
    Missing,
    /// The signature text is not a signature line.
    #[error("malformed policy signature: {0}")]
    Malformed(String),
    /// Signed, but by a key other than the configured one(s).
    #[error(
        "the policy is signed by key {signed_by}, not by the configured verify key {expected}"
    )]
    UnknownKey {
        /// The key id the signature names.
        signed_by: KeyId,
        /// The configured keys' ids, comma-separated.
        expected: String,
    },
    /// The signature names the configured key but does not match the bytes
    /// (the component was changed after signing, or the signature forged).
    #[error("bad policy signature: it does not match the component under key {0}")]
    Invalid(KeyId),
    /// A key file is not in the expected form.
    #[error("malformed key file {path}: {why}")]
    MalformedKey {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        why: String,
    },
    /// A key or signature file could not be read or written.
    #[error("{path}: {why}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The failure (as text, so that errors compare in tests).
        why: String,
    },
}

/// The first 16 hex digits of the SHA-256 of a public key: short enough to
/// read in a log line, long enough that two keys an operator holds differ.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct KeyId(pub String);

impl KeyId {
    fn of(key: &VerifyingKey) -> Self {
        let digest = Sha256::digest(key.as_bytes());
        KeyId(hex::encode(&digest[..8]))
    }
}

impl fmt::Display for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A private key, to sign with (`policy sign`).
pub struct SecretKey(SigningKey);

/// A public key, to verify with (`serve --policy-verify-key`).
#[derive(Clone, Debug)]
pub struct PublicKey {
    key: VerifyingKey,
    id: KeyId,
}

/// A parsed signature line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Signature {
    /// The key the signer claims to be (checked by verifying).
    pub key_id: KeyId,
    sig: ed25519_dalek::Signature,
}

impl SecretKey {
    /// A new random key from the operating system's generator.
    pub fn generate() -> Self {
        SecretKey(SigningKey::generate(&mut rand::rngs::OsRng))
    }

    /// The matching public key.
    pub fn public(&self) -> PublicKey {
        PublicKey::new(self.0.verifying_key())
    }

    /// A detached signature over a component's bytes.
    pub fn sign(&self, wasm: &[u8]) -> Signature {
        Signature {
            key_id: self.public().id,
            sig: self.0.sign(&signed_message(wasm)),
        }
    }

    /// The key file's text.
    pub fn to_file_text(&self) -> String {
        format!("{SECRET_HEADER}\n{}\n", BASE64.encode(self.0.to_bytes()))
    }

    /// Reads a key file written by [`SecretKey::to_file_text`].
    pub fn parse(path: &Path, text: &str) -> Result<Self, SignatureError> {
        let bytes = key_bytes(path, text, SECRET_HEADER)?;
        Ok(SecretKey(SigningKey::from_bytes(&bytes)))
    }

    /// Reads the key file at `path`.
    pub fn read(path: &Path) -> Result<Self, SignatureError> {
        Self::parse(path, &read_text(path)?)
    }
}

impl PublicKey {
    fn new(key: VerifyingKey) -> Self {
        let id = KeyId::of(&key);
        PublicKey { key, id }
    }

    /// The key's id, as recorded with each revision it verified.
    pub fn id(&self) -> &KeyId {
        &self.id
    }

    /// The key file's text.
    pub fn to_file_text(&self) -> String {
        format!("{PUBLIC_HEADER}\n{}\n", BASE64.encode(self.key.as_bytes()))
    }

    /// Reads a key file written by [`PublicKey::to_file_text`].
    pub fn parse(path: &Path, text: &str) -> Result<Self, SignatureError> {
        let bytes = key_bytes(path, text, PUBLIC_HEADER)?;
        let key = VerifyingKey::from_bytes(&bytes).map_err(|e| SignatureError::MalformedKey {
            path: path.to_owned(),
            why: e.to_string(),
        })?;
        Ok(Self::new(key))
    }

    /// Reads the key file at `path`.
    pub fn read(path: &Path) -> Result<Self, SignatureError> {
        Self::parse(path, &read_text(path)?)
    }

    /// Checks that `signature` was made by this key over exactly `wasm`.
    /// Strict verification, so a signature has one valid encoding only.
    pub fn verify(&self, wasm: &[u8], signature: &Signature) -> Result<(), SignatureError> {
        if signature.key_id != self.id {
            return Err(SignatureError::UnknownKey {
                signed_by: signature.key_id.clone(),
                expected: self.id.to_string(),
            });
        }
        self.key
            .verify_strict(&signed_message(wasm), &signature.sig)
            .map_err(|_| SignatureError::Invalid(self.id.clone()))
    }
}

/// The keys a replica accepts signatures by: one, or two while a key is
/// rotated (so revisions re-signed under the new key and those still signed
/// only by the old one both run until every replica has the new key).
#[derive(Clone, Debug)]
pub struct Keyring(Vec<PublicKey>);

impl Keyring {
    /// Reads each key file; `None` for no files (nothing is checked).
    pub fn read(paths: &[PathBuf]) -> Result<Option<Self>, SignatureError> {
        let keys = paths
            .iter()
            .map(|p| PublicKey::read(p))
            .collect::<Result<Vec<_>, _>>()?;
        Ok((!keys.is_empty()).then_some(Keyring(keys)))
    }

    /// The keys' ids, comma-separated, for logs and refusals.
    pub fn ids(&self) -> String {
        let ids: Vec<&str> = self.0.iter().map(|k| k.id.0.as_str()).collect();
        ids.join(", ")
    }

    /// Checks `signature` under the key it names, which must be one of
    /// these.
    pub fn verify(&self, wasm: &[u8], signature: &Signature) -> Result<(), SignatureError> {
        match self.0.iter().find(|k| k.id == signature.key_id) {
            Some(key) => key.verify(wasm, signature),
            None => Err(SignatureError::UnknownKey {
                signed_by: signature.key_id.clone(),
                expected: self.ids(),
            }),
        }
    }
}

impl From<PublicKey> for Keyring {
    fn from(key: PublicKey) -> Self {
        Keyring(vec![key])
    }
}

impl Signature {
    /// Reads a signature line (surrounding whitespace is ignored, so a file
    /// with a trailing newline or a header value both parse).
    pub fn parse(text: &str) -> Result<Self, SignatureError> {
        let malformed = |why: &str| SignatureError::Malformed(why.to_owned());
        let mut words = text.split_whitespace();
        if words.next() != Some(SIGNATURE_TAG) {
            return Err(malformed(&format!("it must start with `{SIGNATURE_TAG}`")));
        }
        let key_id = words.next().ok_or_else(|| malformed("no key id"))?;
        if key_id.len() != 16 || !key_id.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(malformed("the key id is not 16 hex digits"));
        }
        let encoded = words.next().ok_or_else(|| malformed("no signature"))?;
        if words.next().is_some() {
            return Err(malformed("trailing text after the signature"));
        }
        let bytes = BASE64
            .decode(encoded)
            .map_err(|e| malformed(&format!("signature is not base64: {e}")))?;
        let bytes: [u8; 64] = bytes
            .try_into()
            .map_err(|_| malformed("the signature is not 64 bytes"))?;
        Ok(Signature {
            key_id: KeyId(key_id.to_ascii_lowercase()),
            sig: ed25519_dalek::Signature::from_bytes(&bytes),
        })
    }

    /// The signature line (no newline): the `.sig` file's contents, the
    /// upload header's value and what the store records.
    pub fn to_line(&self) -> String {
        format!(
            "{SIGNATURE_TAG} {} {}",
            self.key_id,
            BASE64.encode(self.sig.to_bytes())
        )
    }
}

/// Where the signature of the component at `wasm` is kept: `FILE.sig`.
pub fn signature_path(wasm: &Path) -> PathBuf {
    let mut name = wasm.as_os_str().to_owned();
    name.push(".sig");
    PathBuf::from(name)
}

/// The signature file beside `wasm`, if there is one. A missing file is
/// `None` (the caller decides whether that is allowed); an unreadable one
/// is an error.
pub async fn read_signature_file(wasm: &Path) -> Result<Option<String>, SignatureError> {
    let path = signature_path(wasm);
    match tokio::fs::read_to_string(&path).await {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(SignatureError::Io {
            path,
            why: e.to_string(),
        }),
    }
}

/// Writes a new private key file readable by its owner only (0600 from the
/// start, never briefly wider), refusing to overwrite one.
pub fn write_secret_file(path: &Path, key: &SecretKey) -> Result<(), SignatureError> {
    let io = |e: std::io::Error| SignatureError::Io {
        path: path.to_owned(),
        why: e.to_string(),
    };
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path).map_err(io)?;
    file.write_all(key.to_file_text().as_bytes()).map_err(io)?;
    file.sync_all().map_err(io)
}

/// The message a signature covers (see the module docs).
fn signed_message(wasm: &[u8]) -> Vec<u8> {
    let mut message = SIGNED_CONTEXT.to_vec();
    message.extend_from_slice(&Sha256::digest(wasm));
    message
}

fn read_text(path: &Path) -> Result<String, SignatureError> {
    std::fs::read_to_string(path).map_err(|e| SignatureError::Io {
        path: path.to_owned(),
        why: e.to_string(),
    })
}

/// The 32 key bytes of a key file: `header`, then one base64 line.
fn key_bytes(path: &Path, text: &str, header: &str) -> Result<[u8; 32], SignatureError> {
    let malformed = |why: String| SignatureError::MalformedKey {
        path: path.to_owned(),
        why,
    };
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    if lines.next() != Some(header) {
        return Err(malformed(format!("the first line must be `{header}`")));
    }
    let encoded = lines.next().ok_or_else(|| malformed("no key".into()))?;
    if lines.next().is_some() {
        return Err(malformed("trailing lines after the key".into()));
    }
    let bytes = BASE64
        .decode(encoded)
        .map_err(|e| malformed(format!("the key is not base64: {e}")))?;
    bytes
        .try_into()
        .map_err(|_| malformed("the key is not 32 bytes".into()))
}

#[cfg(test)]
mod tests;
