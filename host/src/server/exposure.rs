//! Whether an address may be served as configured: the API opens assent
//! windows, records results the agent is re-invoked with, writes the turns
//! `chatWith` replays and (with the admin scope) replaces the policy, so it
//! is open without a token only where nothing else can reach it.
//!
//! - loopback: anything goes (the demo, local development);
//! - any other address needs a token, and TLS so the token is not sent in
//!   plain text.
//!
//! Each refusal can be overridden by a flag of its own; an override is
//! logged at every start, so it is never forgotten in a deployment.

use derive_setters::Setters;
use std::net::SocketAddr;

/// The operator's explicit overrides of the exposure checks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Setters)]
#[setters(prefix = "with_")]
#[non_exhaustive]
pub struct Insecure {
    /// Serve a non-loopback address with no token (`--insecure-no-token`).
    pub no_token: bool,
    /// Serve a non-loopback address over plain HTTP with a token
    /// (`--insecure-plaintext`), for a trusted network or a proxy on a
    /// private link.
    pub plaintext: bool,
}

/// Why `serve` refuses an address.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ExposureError {
    /// A non-loopback address with no token.
    #[error(
        "refusing to serve {0} without a token: anyone who can reach it could open assent \
         windows, forge execution results, write the chat turns the agent is replayed, and \
         replace the policy. Set --token (or --token-file, or NOMOS_CONTINUE_TOKEN), or listen \
         on 127.0.0.1; --insecure-no-token overrides this"
    )]
    NoToken(SocketAddr),
    /// A non-loopback address over plain HTTP with a token.
    #[error(
        "refusing to send bearer tokens in plain text on {0}: set --tls-cert and --tls-key, \
         or listen on 127.0.0.1 behind a TLS-terminating proxy (docs/operations.md); \
         --insecure-plaintext overrides this"
    )]
    Plaintext(SocketAddr),
}

/// An override in force, for the log at start-up.
pub const NO_TOKEN_WARNING: &str = "INSECURE: serving a non-loopback address with no token \
    (--insecure-no-token): anyone who can reach it controls when the agent is re-invoked";
/// An override in force, for the log at start-up.
pub const PLAINTEXT_WARNING: &str = "INSECURE: bearer tokens are accepted over plain HTTP on a \
    non-loopback address (--insecure-plaintext)";

/// Checks `addr` against the configuration: `tokens` whether any token is
/// required, `tls` whether TLS is terminated here. `Ok(Some(warning))`
/// when it is allowed only by an override, which the caller logs.
pub fn check(
    addr: SocketAddr,
    tokens: bool,
    tls: bool,
    insecure: Insecure,
) -> Result<Option<&'static str>, ExposureError> {
    match (addr.ip().is_loopback(), tokens, tls) {
        (true, _, _) | (false, true, true) => Ok(None),
        (false, false, _) if insecure.no_token => Ok(Some(NO_TOKEN_WARNING)),
        (false, false, _) => Err(ExposureError::NoToken(addr)),
        (false, true, false) if insecure.plaintext => Ok(Some(PLAINTEXT_WARNING)),
        (false, true, false) => Err(ExposureError::Plaintext(addr)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(s: &str) -> SocketAddr {
        s.parse().expect("address")
    }

    #[test]
    fn loopback_is_always_allowed() {
        for a in ["127.0.0.1:7300", "[::1]:7300"] {
            assert_eq!(check(addr(a), false, false, Insecure::default()), Ok(None));
        }
    }

    #[test]
    fn elsewhere_needs_a_token_and_tls_unless_overridden() {
        let any = addr("0.0.0.0:7300");
        let none = Insecure::default();
        assert_eq!(
            check(any, false, false, none),
            Err(ExposureError::NoToken(any))
        );
        assert_eq!(
            check(any, false, true, none),
            Err(ExposureError::NoToken(any))
        );
        assert_eq!(
            check(any, true, false, none),
            Err(ExposureError::Plaintext(any))
        );
        assert_eq!(check(any, true, true, none), Ok(None));
        let no_token = Insecure {
            no_token: true,
            plaintext: false,
        };
        assert_eq!(
            check(any, false, false, no_token),
            Ok(Some(NO_TOKEN_WARNING))
        );
        let plaintext = Insecure {
            no_token: false,
            plaintext: true,
        };
        assert_eq!(
            check(any, true, false, plaintext),
            Ok(Some(PLAINTEXT_WARNING))
        );
        assert_eq!(
            check(any, false, false, plaintext),
            Err(ExposureError::NoToken(any))
        );
        let lan = addr("192.168.1.10:7300");
        assert!(check(lan, false, false, none).is_err());
    }
}
