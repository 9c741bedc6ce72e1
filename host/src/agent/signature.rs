//! Standard Webhooks signatures (HMAC-SHA256 over `{id}.{timestamp}.{body}`),
//! so a receiver can tell a delivery from nomos-continue from anything else
//! that reaches its URL, and a replayed one from a fresh one.
//!
//! Why this scheme rather than a bearer token alone: a token proves only
//! that the sender knows it, and every proxy and log on the way sees it; a
//! signature binds the secret to this body and this moment, and the secret
//! never travels. Why the Standard Webhooks form: receivers verify it with
//! an off-the-shelf library in their own language (`docs/webhooks.md`).

use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig, STANDARD as BASE64};
use base64::engine::DecodePaddingMode;
use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// What every secret starts with, so a value pasted into the wrong setting
/// (a bearer token, a key of another kind) is refused at start-up.
pub const SECRET_PREFIX: &str = "whsec_";

/// The fewest key bytes accepted: the Standard Webhooks floor, and short
/// enough that a generated 32-byte key is never refused.
pub const MIN_SECRET_BYTES: usize = 24;

/// Reads a secret's key with or without its `=` padding, as the reference
/// libraries do, so a secret copied from another sender is not refused.
const SECRET_BASE64: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// Why a secret was refused. The messages never quote the value.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum SecretError {
    /// The value does not start with `whsec_`.
    #[error("a webhook secret must start with {SECRET_PREFIX}")]
    Prefix,
    /// What follows `whsec_` is not standard base64.
    #[error("the part of a webhook secret after {SECRET_PREFIX} is not valid base64")]
    Base64,
    /// The key is too short to be worth signing with.
    #[error("a webhook secret must decode to at least {MIN_SECRET_BYTES} bytes; this one has {0}")]
    TooShort(usize),
}

/// One signing key, parsed from its `whsec_…` text.
///
/// Why the keyed HMAC is kept rather than the bytes: keying cannot fail
/// for HMAC, but its API says it might, and doing it once here leaves
/// signing with no failure to handle.
#[derive(Clone)]
pub struct WebhookSecret {
    mac: Hmac<Sha256>,
}

// Written by hand so no key reaches a log.
impl std::fmt::Debug for WebhookSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WebhookSecret(<redacted>)")
    }
}

impl WebhookSecret {
    /// Parses `whsec_<base64 key>`; surrounding whitespace (a file's
    /// newline) is ignored.
    pub fn parse(text: &str) -> Result<Self, SecretError> {
        let encoded = text
            .trim()
            .strip_prefix(SECRET_PREFIX)
            .ok_or(SecretError::Prefix)?;
        let key = SECRET_BASE64
            .decode(encoded)
            .map_err(|_| SecretError::Base64)?;
        if key.len() < MIN_SECRET_BYTES {
            return Err(SecretError::TooShort(key.len()));
        }
        // HMAC takes a key of any length, so this error cannot occur.
        let mac = Hmac::<Sha256>::new_from_slice(&key).map_err(|_| SecretError::TooShort(0))?;
        Ok(Self { mac })
    }

    /// The base64 HMAC-SHA256 of `{id}.{timestamp}.{body}`.
    fn sign(&self, id: &str, timestamp: i64, body: &[u8]) -> String {
        let mut mac = self.mac.clone();
        mac.update(id.as_bytes());
        mac.update(b".");
        mac.update(timestamp.to_string().as_bytes());
        mac.update(b".");
        mac.update(body);
        BASE64.encode(mac.finalize().into_bytes())
    }
}

impl std::str::FromStr for WebhookSecret {
    type Err = SecretError;

    fn from_str(text: &str) -> Result<Self, SecretError> {
        Self::parse(text)
    }
}

/// The `webhook-signature` value for one message: a `v1,<signature>` per
/// secret, space-separated, in the order given, so a receiver holding any
/// one of the secrets verifies it (that is how a secret is rotated).
/// `None` without secrets: the header is then left out.
pub fn signature_header(
    secrets: &[WebhookSecret],
    id: &str,
    timestamp: i64,
    body: &[u8],
) -> Option<String> {
    if secrets.is_empty() {
        return None;
    }
    let entries: Vec<String> = secrets
        .iter()
        .map(|secret| format!("v1,{}", secret.sign(id, timestamp, body)))
        .collect();
    Some(entries.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    // Computed by the `standardwebhooks` Python package (1.1.0) and
    // checked with `openssl dgst -sha256 -mac HMAC`: key bytes 0..32 and
    // 100..132, message id `cont-0123456789abcdef`, timestamp 1800000000,
    // body `{"type":"notice.v1"}`.
    const FIRST: &str = "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
    const SECOND: &str = "whsec_ZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXp7fH1+f4CBgoM=";
    const FIRST_SIGNATURE: &str = "v1,WiLbeNJ4LkaLNzj6wFtLnELRDYqC32/WDdjknlppFs8=";
    const SECOND_SIGNATURE: &str = "v1,holgc0hYpaSrfSV2VyKX/86TB2BkHivCg1iTszqrs58=";
    const ID: &str = "cont-0123456789abcdef";
    const BODY: &[u8] = br#"{"type":"notice.v1"}"#;

    fn secret(text: &str) -> WebhookSecret {
        WebhookSecret::parse(text).expect("a valid secret")
    }

    #[test]
    fn signs_as_the_reference_implementation_does() {
        let header = signature_header(&[secret(FIRST)], ID, 1_800_000_000, BODY);
        assert_eq!(header.as_deref(), Some(FIRST_SIGNATURE));
    }

    #[test]
    fn every_secret_signs_in_the_order_given() {
        let header = signature_header(&[secret(FIRST), secret(SECOND)], ID, 1_800_000_000, BODY);
        assert_eq!(
            header,
            Some(format!("{FIRST_SIGNATURE} {SECOND_SIGNATURE}"))
        );
    }

    #[test]
    fn the_id_the_timestamp_and_the_body_are_all_signed() {
        let secrets = [secret(FIRST)];
        let base = signature_header(&secrets, ID, 1_800_000_000, BODY);
        for other in [
            signature_header(&secrets, "cont-other", 1_800_000_000, BODY),
            signature_header(&secrets, ID, 1_800_000_001, BODY),
            signature_header(&secrets, ID, 1_800_000_000, br#"{"type":"notice.v2"}"#),
        ] {
            assert_ne!(other, base);
        }
    }

    #[test]
    fn no_secret_no_signature() {
        assert_eq!(signature_header(&[], ID, 1_800_000_000, BODY), None);
    }

    #[test]
    fn bad_secrets_are_refused_without_quoting_them() {
        let err = |text: &str| WebhookSecret::parse(text).err();
        assert_eq!(
            err("AAECAwQFBgcICQoLDA0ODxAREhMUFRYX"),
            Some(SecretError::Prefix)
        );
        assert_eq!(err("whsec_not base64!"), Some(SecretError::Base64));
        assert_eq!(err("whsec_AAECAwQFBgcI"), Some(SecretError::TooShort(9)));
        assert!(err(&format!("  {FIRST}\n")).is_none(), "a file's newline");
        assert!(err(FIRST.trim_end_matches('=')).is_none(), "unpadded");
        let message = SecretError::Base64.to_string();
        assert!(!message.contains("not base64!"), "{message}");
    }

    #[test]
    fn debug_never_shows_the_key() {
        let shown = format!("{:?}", secret(FIRST));
        assert_eq!(shown, "WebhookSecret(<redacted>)");
    }
}
