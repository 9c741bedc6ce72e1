//! What of a configured URL may be printed: in a log line, an error, a
//! delivery's last error, a notice.
//!
//! Why two rules: a database URL's secret is its password, so the rest
//! (user, hosts, database) is kept to say which database failed. An
//! endpoint's URL may be a secret as a whole: a chat service's incoming
//! webhook carries its credential in the path, a collector's in the query
//! or the user info. So an endpoint is shown by its origin alone.

/// A database URL with its password replaced by `***`; everything else
/// kept (libpq's several hosts included). Text that is not a URL with
/// user info is returned as it is.
pub fn database_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let Some(at) = rest[..authority_end].rfind('@') else {
        return url.to_owned();
    };
    let user_info = &rest[..at];
    let user = match user_info.split_once(':') {
        Some((user, _password)) => format!("{user}:***"),
        None => user_info.to_owned(),
    };
    format!("{scheme}://{user}@{}", &rest[at + 1..])
}

/// An endpoint's origin (`https://hooks.example:8443`), with `/…` when
/// the URL had a path, query or user info beyond it: enough to say which
/// service failed, nothing that may be its credential.
pub fn endpoint(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return "<an endpoint that is not a URL>".to_owned();
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..authority_end];
    let host = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    let beyond = authority.contains('@') || !rest[authority_end..].trim_matches('/').is_empty();
    format!("{scheme}://{host}{}", if beyond { "/…" } else { "" })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_database_url_loses_its_password_only() {
        assert_eq!(
            database_url("postgres://u:s3cret@db:5432/nomos?sslmode=require"),
            "postgres://u:***@db:5432/nomos?sslmode=require"
        );
        assert_eq!(
            database_url("postgresql://u:p@ss@h1:5432,h2:5432/db"),
            "postgresql://u:***@h1:5432,h2:5432/db"
        );
        assert_eq!(database_url("postgres://u@db/x"), "postgres://u@db/x");
        assert_eq!(database_url("sqlite:nomos.db"), "sqlite:nomos.db");
        assert_eq!(
            database_url("postgres://db/x?a=b@c"),
            "postgres://db/x?a=b@c"
        );
    }

    #[test]
    fn an_endpoint_shows_its_origin() {
        assert_eq!(
            endpoint("https://hooks.slack.com/services/T0/B0/s3cret"),
            "https://hooks.slack.com/…"
        );
        assert_eq!(
            endpoint("http://u:s3cret@127.0.0.1:4318"),
            "http://127.0.0.1:4318/…"
        );
        assert_eq!(endpoint("http://127.0.0.1:9000/"), "http://127.0.0.1:9000");
        assert_eq!(
            endpoint("https://c.example?key=s3cret"),
            "https://c.example/…"
        );
        assert!(!endpoint("s3cret").contains("s3cret"));
    }
}
