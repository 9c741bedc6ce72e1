//! Who may call what: three bearer tokens with nested scopes.
//!
//! The runtime's token (`serve --token`) is what the runtime beside this
//! process holds: it reports tool results, statuses, approvals and turns,
//! and reads. The read token (`serve --read-token`) only reads: `/metrics`,
//! the GET routes and the console, for a Prometheus server or a person
//! watching, who must not be able to re-invoke an agent. The admin token
//! (`serve --admin-token`) is the only one that may change *which code
//! decides* when an agent is re-invoked (upload, shadow, promotion, roll
//! back): an agent holding SSH tools is re-invoked on that code's word, so
//! a leaked runtime credential must not be enough to replace it.
//!
//! | configured | read routes | runtime routes | admin routes |
//! | --- | --- | --- | --- |
//! | no token | open | open | open (loopback only: `serve` refuses otherwise) |
//! | runtime token | runtime token | runtime token | refused (403) until an admin token is set |
//! | admin token | admin token | admin token | admin token |
//! | read token | read, runtime or admin token | as without it | as without it |
//!
//! Each token opens what the ones below it open: the admin token every
//! route, the runtime's token the reads. A read token on a write is 403.
//!
//! With no token, a request a browser sends from another site's page
//! (`Sec-Fetch-Site`, `Origin`) is refused: see [`scoped`].

use axum::extract::{Request, State};
use axum::http::header::{AUTHORIZATION, HOST, ORIGIN};
use axum::http::HeaderMap;
use axum::middleware::Next;
use axum::response::Response;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::{ApiError, AppState};

/// The tokens a process was started with. `Debug` never shows them.
#[derive(Clone, Default)]
pub struct Auth {
    read: Option<Secret>,
    runtime: Option<Secret>,
    admin: Option<Secret>,
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Auth")
            .field("read", &self.read.as_ref().map(|_| "<set>"))
            .field("runtime", &self.runtime.as_ref().map(|_| "<set>"))
            .field("admin", &self.admin.as_ref().map(|_| "<set>"))
            .finish()
    }
}

/// A token kept as its digest: compared in constant time over fixed-size
/// digests, so neither the token's bytes nor its length leak through timing.
#[derive(Clone)]
struct Secret([u8; 32]);

impl Secret {
    fn new(token: &str) -> Self {
        Self(Sha256::digest(token.as_bytes()).into())
    }

    fn matches(&self, given: &str) -> bool {
        let given: [u8; 32] = Sha256::digest(given.as_bytes()).into();
        given.ct_eq(&self.0).into()
    }
}

/// What a route needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Reading: the read token, the runtime's or the admin token.
    Read,
    /// Reporting and reading: the runtime's token (or the admin token).
    Runtime,
    /// Changing which policy decides: the admin token only.
    Admin,
}

impl Auth {
    /// No token: everything open (loopback development and the demo).
    #[cfg(any(test, feature = "test-support"))]
    pub fn open() -> Self {
        Self::default()
    }

    /// The runtime's token and the admin token (see [`secret`]).
    pub fn new(runtime: Option<&str>, admin: Option<&str>) -> Self {
        Self {
            read: None,
            runtime: secret(runtime),
            admin: secret(admin),
        }
    }

    /// Adds the read-only token (an empty one counts as unset).
    pub fn with_read(mut self, read: Option<&str>) -> Self {
        self.read = secret(read);
        self
    }

    /// Whether any token is required at all.
    pub fn is_enforced(&self) -> bool {
        self.read.is_some() || self.runtime.is_some() || self.admin.is_some()
    }

    /// The widest scope `bearer` opens, if any (with no token configured,
    /// every scope).
    pub fn widest(&self, bearer: Option<&str>) -> Option<Scope> {
        [Scope::Admin, Scope::Runtime, Scope::Read]
            .into_iter()
            .find(|&scope| self.check(scope, bearer).is_ok())
    }

    /// Checks a request's bearer token (`None`: no `Authorization: Bearer`).
    pub fn check(&self, scope: Scope, bearer: Option<&str>) -> Result<(), ApiError> {
        if !self.is_enforced() {
            return Ok(());
        }
        let admin = |t: &str| self.admin.as_ref().is_some_and(|s| s.matches(t));
        let runtime = |t: &str| self.runtime.as_ref().is_some_and(|s| s.matches(t));
        let read = |t: &str| self.read.as_ref().is_some_and(|s| s.matches(t));
        let Some(given) = bearer else {
            return Err(ApiError::Unauthorized);
        };
        match scope {
            Scope::Read if admin(given) || runtime(given) || read(given) => Ok(()),
            Scope::Read => Err(ApiError::Unauthorized),
            Scope::Runtime if admin(given) || runtime(given) => Ok(()),
            Scope::Runtime | Scope::Admin if read(given) => Err(ApiError::Forbidden(
                "the read token only reads: this route writes and needs the runtime's token".into(),
            )),
            Scope::Runtime => Err(ApiError::Unauthorized),
            Scope::Admin if admin(given) => Ok(()),
            Scope::Admin if runtime(given) && self.admin.is_none() => Err(ApiError::Forbidden(
                "policy changes over HTTP are disabled: only the runtime's token is set. \
                 Start serve with --admin-token, --admin-token-file or \
                 NOMOS_CONTINUE_ADMIN_TOKEN to enable them"
                    .into(),
            )),
            Scope::Admin if runtime(given) => Err(ApiError::Forbidden(
                "this route changes which policy decides and needs the admin token; \
                 the runtime's token is not enough"
                    .into(),
            )),
            Scope::Admin => Err(ApiError::Unauthorized),
        }
    }
}

/// A configured token; an empty string counts as unset, so an empty
/// environment variable never becomes a token anyone can send.
fn secret(token: Option<&str>) -> Option<Secret> {
    token.filter(|t| !t.is_empty()).map(Secret::new)
}

/// The bearer token of a request, if it carries one.
pub(crate) fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
}

/// Whether a browser sent the request from another site's page: it says
/// so in `Sec-Fetch-Site`, or names an `Origin` other than the host the
/// request was sent to (`Origin: null` included). A client that is not a
/// browser sends neither header.
fn from_another_site(request: &Request) -> bool {
    let headers = request.headers();
    let site = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok());
    if matches!(site, Some("cross-site" | "same-site")) {
        return true;
    }
    let Some(origin) = headers.get(ORIGIN) else {
        return false;
    };
    let host = headers
        .get(HOST)
        .and_then(|v| v.to_str().ok())
        .or_else(|| request.uri().authority().map(|a| a.as_str()));
    let origin_host = origin
        .to_str()
        .ok()
        .and_then(|o| o.split_once("://"))
        .map(|(_, authority)| authority);
    origin_host.is_none() || origin_host != host
}

/// The middleware that admits a request to a route of `scope`, given as
/// its state beside the app's.
///
/// Without a token (loopback only), a browser would let any page the
/// operator opens call this server (a form or a `no-cors` fetch needs no
/// permission to send), so such a request is refused. With a token there
/// is nothing to check: a page elsewhere cannot send the bearer header.
pub(crate) async fn scoped(
    State((state, scope)): State<(AppState, Scope)>,
    request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    if !state.auth.is_enforced() && from_another_site(&request) {
        return Err(ApiError::Forbidden(
            "a request from another site's page is refused: this server runs without a token \
             (loopback only), so any page a browser on this machine opens could otherwise \
             call it"
                .into(),
        ));
    }
    state.auth.check(scope, bearer(request.headers()))?;
    Ok(next.run(request).await)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_follow_the_table() {
        let open = Auth::open();
        assert!(open.check(Scope::Admin, None).is_ok());
        assert!(open.check(Scope::Runtime, Some("x")).is_ok());

        let runtime_only = Auth::new(Some("rt"), None);
        assert!(runtime_only.check(Scope::Runtime, Some("rt")).is_ok());
        assert!(matches!(
            runtime_only.check(Scope::Runtime, Some("rt2")),
            Err(ApiError::Unauthorized)
        ));
        assert!(matches!(
            runtime_only.check(Scope::Admin, Some("rt")),
            Err(ApiError::Forbidden(m)) if m.contains("--admin-token")
        ));
        assert!(matches!(
            runtime_only.check(Scope::Admin, Some("guess")),
            Err(ApiError::Unauthorized)
        ));

        let both = Auth::new(Some("rt"), Some("adm"));
        assert!(both.check(Scope::Runtime, Some("adm")).is_ok());
        assert!(both.check(Scope::Admin, Some("adm")).is_ok());
        assert!(matches!(
            both.check(Scope::Admin, Some("rt")),
            Err(ApiError::Forbidden(_))
        ));
        assert!(matches!(
            both.check(Scope::Admin, None),
            Err(ApiError::Unauthorized)
        ));

        let empty = Auth::new(Some(""), Some("")).with_read(Some(""));
        assert!(!empty.is_enforced());

        let with_read = Auth::new(Some("rt"), Some("adm")).with_read(Some("rd"));
        for token in ["rd", "rt", "adm"] {
            assert!(with_read.check(Scope::Read, Some(token)).is_ok(), "{token}");
        }
        assert!(matches!(
            with_read.check(Scope::Read, Some("guess")),
            Err(ApiError::Unauthorized)
        ));
        for scope in [Scope::Runtime, Scope::Admin] {
            assert!(matches!(
                with_read.check(scope, Some("rd")),
                Err(ApiError::Forbidden(m)) if m.contains("only reads")
            ));
        }
        assert_eq!(with_read.widest(Some("rd")), Some(Scope::Read));
        assert_eq!(with_read.widest(Some("rt")), Some(Scope::Runtime));
        assert_eq!(with_read.widest(Some("adm")), Some(Scope::Admin));
        assert_eq!(with_read.widest(None), None);
        assert_eq!(open.widest(None), Some(Scope::Admin));
        let read_only = Auth::open().with_read(Some("rd"));
        assert!(read_only.is_enforced());
        assert!(read_only.check(Scope::Runtime, Some("rd")).is_err());
    }
}
