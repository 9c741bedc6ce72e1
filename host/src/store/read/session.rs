//! One session's lists, a page at a time, for `GET /v1/sessions/{id}` and
//! `status`: its links (oldest first), its ledger (newest first) and its
//! notices (oldest first).
//!
//! # Why keyset pages
//!
//! A session can link thousands of executions; answering all of them at once
//! made one request megabytes long. Each list is read with `LIMIT` after a
//! cursor holding the sort key of the last row returned, never with an
//! `OFFSET`: a page costs the same however deep it is, and rows added while
//! a client pages (new links, new deliveries) neither shift a page nor make
//! it repeat a row. Every order ends in a unique column, so it is total and
//! two rows never tie.
//!
//! Each page reads one row more than it returns, so a full last page says
//! "no more" itself instead of sending the client to an empty one.

use std::fmt;
use std::future::Future;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use serde::Serialize;
use uuid::Uuid;

use crate::store::chat::history::{notice, SessionNotice, NOTICE_COLS};
use crate::store::decode::{self, RowExt};
use crate::store::deliveries::delivery_cols;
use crate::store::dialect::{from_micros, query, Row};
use crate::store::links::{link_joins, LINK_COLS};
#[cfg(feature = "test-support")]
use crate::store::types::Window;
use crate::store::types::{Delivery, DeliveryKind, Link};
use crate::store::{Result, Store, StoreError};

/// Rows per page when the caller names no limit.
pub const DEFAULT_PAGE_LIMIT: u32 = 100;

/// The most rows one page may hold. A link is about 250 bytes of JSON, so a
/// full page of links stays near 100 KiB; a delivery carries its note, which
/// is larger, and a client that pages the ledger may want a smaller limit.
pub const MAX_PAGE_LIMIT: u32 = 500;

/// Checks a page size: at least one row (a page of none would never
/// advance) and at most [`MAX_PAGE_LIMIT`].
pub fn check_limit(limit: u32) -> Result<u32> {
    if (1..=MAX_PAGE_LIMIT).contains(&limit) {
        Ok(limit)
    } else {
        Err(StoreError::InvalidValue {
            field: "limit",
            reason: format!("must be between 1 and {MAX_PAGE_LIMIT}, got {limit}"),
        })
    }
}

/// Some rows of a list, and where the next page starts (`None`: no more).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Page<T, C> {
    /// The rows, in the list's order.
    pub items: Vec<T>,
    /// The cursor to pass for the next page, if there are more rows.
    pub next: Option<C>,
}

/// Keyset position in a session's links, ordered `(created_at, execution_id)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinkCursor {
    /// `created_at` of the last link returned.
    pub created_at: DateTime<Utc>,
    /// `execution_id` of the last link returned.
    pub execution_id: Uuid,
}

/// Keyset position in a session's ledger, ordered `(created_at, id)`
/// descending (newest first).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeliveryCursor {
    /// `created_at` of the last delivery returned.
    pub created_at: DateTime<Utc>,
    /// `id` of the last delivery returned.
    pub id: Uuid,
}

/// Keyset position in a session's notices, ordered by `id`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NoticeCursor {
    /// `id` of the last notice returned.
    pub id: i64,
}

/// The text form of the cursors: a tag naming the list and the format's
/// version, then the key. Clients treat it as opaque; the tag makes a
/// cursor of one list given for another a clear 400 rather than a page
/// from a meaningless position, and the version lets the format change.
const LINK_TAG: &str = "l1";
const DELIVERY_TAG: &str = "d1";
const NOTICE_TAG: &str = "n1";

fn bad_cursor(text: &str) -> StoreError {
    StoreError::InvalidValue {
        field: "cursor",
        reason: format!("{text:?} is not a cursor this list returned"),
    }
}

/// The parts after `tag`: `tag.a.b` → `[a, b]`.
fn cursor_parts<'t, const N: usize>(tag: &str, text: &'t str) -> Result<[&'t str; N]> {
    let mut parts = text.split('.');
    if parts.next() != Some(tag) {
        return Err(bad_cursor(text));
    }
    let parts: Vec<&str> = parts.collect();
    parts.try_into().map_err(|_| bad_cursor(text))
}

/// A time and a UUID, as the link and delivery cursors hold them.
/// 0000-01-01T00:00:00Z in microseconds since the Unix epoch.
const CURSOR_MIN_MICROS: i64 = -62_167_219_200_000_000;
/// 9999-12-31T23:59:59.999999Z in microseconds since the Unix epoch.
const CURSOR_MAX_MICROS: i64 = 253_402_300_799_999_999;

pub(in crate::store) fn time_and_id(tag: &str, text: &str) -> Result<(DateTime<Utc>, Uuid)> {
    let [micros, id] = cursor_parts::<2>(tag, text)?;
    let micros: i64 = micros.parse().map_err(|_| bad_cursor(text))?;
    // Years 0 to 9999 in microseconds: chrono accepts far more than
    // PostgreSQL's timestamps, and a time PostgreSQL refuses would be a
    // database error (a 503 a client retries) instead of a bad cursor.
    if !(CURSOR_MIN_MICROS..=CURSOR_MAX_MICROS).contains(&micros) {
        return Err(bad_cursor(text));
    }
    let at = from_micros("cursor", micros).map_err(|_| bad_cursor(text))?;
    let id = Uuid::parse_str(id).map_err(|_| bad_cursor(text))?;
    Ok((at, id))
}

impl fmt::Display for LinkCursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let micros = self.created_at.timestamp_micros();
        write!(f, "{LINK_TAG}.{micros}.{}", self.execution_id)
    }
}

impl FromStr for LinkCursor {
    type Err = StoreError;
    fn from_str(text: &str) -> Result<Self> {
        let (created_at, execution_id) = time_and_id(LINK_TAG, text)?;
        Ok(Self {
            created_at,
            execution_id,
        })
    }
}

impl fmt::Display for DeliveryCursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let micros = self.created_at.timestamp_micros();
        write!(f, "{DELIVERY_TAG}.{micros}.{}", self.id)
    }
}

impl FromStr for DeliveryCursor {
    type Err = StoreError;
    fn from_str(text: &str) -> Result<Self> {
        let (created_at, id) = time_and_id(DELIVERY_TAG, text)?;
        Ok(Self { created_at, id })
    }
}

impl fmt::Display for NoticeCursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{NOTICE_TAG}.{}", self.id)
    }
}

impl FromStr for NoticeCursor {
    type Err = StoreError;
    fn from_str(text: &str) -> Result<Self> {
        let [id] = cursor_parts::<1>(NOTICE_TAG, text)?;
        let id = id.parse().map_err(|_| bad_cursor(text))?;
        Ok(Self { id })
    }
}

/// How many rows each of a session's lists holds: what `status` and the
/// API show beside a page, and whether anything is known of the session.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SessionCounts {
    /// Links.
    pub links: i64,
    /// Ledger rows (continuations and notices delivered to the agent).
    pub deliveries: i64,
    /// Notices: ledger rows of kind `notice`.
    pub notices: i64,
}

#[cfg(feature = "test-support")]
/// Everything about a session, every list read to the end: for tests and
/// tools that know the session is small. The API and `status` page instead.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SessionSummary {
    /// The session.
    pub session_id: Uuid,
    /// Its window, if ever approved.
    pub window: Option<Window>,
    /// All its links, oldest first.
    pub links: Vec<Link>,
    /// Its ledger, newest first.
    pub deliveries: Vec<Delivery>,
}

#[cfg(feature = "test-support")]
impl SessionSummary {
    /// True when the store knows nothing about the session. An unknown
    /// session is not an error: it is an empty summary, and the caller
    /// decides whether that is a 404.
    pub fn is_empty(&self) -> bool {
        self.window.is_none() && self.links.is_empty() && self.deliveries.is_empty()
    }
}

/// Reads a list from its first page to its last, handing each page's rows
/// to `each` as they come, so a caller can show a long list without holding
/// all of it.
///
/// `page` is a plain closure returning the store's future (not an async
/// closure), so the caller's future stays `Send` for axum and `async_trait`.
pub async fn each_page<T, C, E, Fut>(
    mut page: impl FnMut(Option<C>) -> Fut,
    mut each: impl FnMut(Vec<T>) -> Result<(), E>,
) -> Result<(), E>
where
    E: From<StoreError>,
    Fut: Future<Output = Result<Page<T, C>>>,
{
    let mut cursor = None;
    loop {
        let Page { items, next } = page(cursor).await?;
        each(items)?;
        match next {
            Some(c) => cursor = Some(c),
            None => return Ok(()),
        }
    }
}

/// Reads a list to its end, every page at the largest size.
async fn read_all<T, C, Fut>(page: impl FnMut(Option<C>) -> Fut) -> Result<Vec<T>>
where
    Fut: Future<Output = Result<Page<T, C>>>,
{
    let mut all = Vec::new();
    each_page(page, |items| {
        all.extend(items);
        Ok::<_, StoreError>(())
    })
    .await?;
    Ok(all)
}

/// Cuts the extra row a page query read (see the module docs) and makes
/// the cursor of the last row kept, if there was an extra row.
pub(in crate::store) fn into_page<T, C>(
    mut items: Vec<T>,
    limit: u32,
    cursor: impl Fn(&T) -> C,
) -> Page<T, C> {
    let limit = limit as usize;
    let next = if items.len() > limit {
        items.truncate(limit);
        items.last().map(cursor)
    } else {
        None
    };
    Page { items, next }
}

impl Store {
    /// One page of the session's links with their state, oldest first
    /// (`(created_at, execution_id)`), after `after`.
    pub async fn session_links(
        &self,
        session_id: Uuid,
        after: Option<LinkCursor>,
        limit: u32,
    ) -> Result<Page<Link, LinkCursor>> {
        let limit = check_limit(limit)?;
        let keyset = if after.is_some() {
            "AND l.created_at >= $3 AND (l.created_at, l.execution_id) > ($3, $4)"
        } else {
            ""
        };
        let sql = format!(
            "SELECT {LINK_COLS} FROM nomos_plan_executions l {} \
             WHERE l.session_id = $1 {keyset} \
             ORDER BY l.created_at, l.execution_id LIMIT $2",
            link_joins(self.backend())
        );
        let mut q = query(sql).bind(session_id).bind(i64::from(limit) + 1);
        if let Some(c) = after {
            q = q.bind(c.created_at).bind(c.execution_id);
        }
        let rows = q.fetch_all(self).await?;
        let links = rows.iter().map(decode::link).collect::<Result<Vec<_>>>()?;
        Ok(into_page(links, limit, |l| LinkCursor {
            created_at: l.created_at,
            execution_id: l.execution_id,
        }))
    }

    /// One page of the session's ledger, newest first (`(created_at, id)`
    /// descending), after `after`.
    pub async fn session_deliveries(
        &self,
        session_id: Uuid,
        after: Option<DeliveryCursor>,
        limit: u32,
    ) -> Result<Page<Delivery, DeliveryCursor>> {
        let (cols, read) = (delivery_cols!(), decode::delivery);
        self.ledger_page(session_id, None, after, limit, cols, read)
            .await
    }

    /// [`Self::session_deliveries`] (only those of `kind`, if given)
    /// selecting `cols`, each row read by `read` into a delivery and what
    /// else the columns hold (the console reads notes cut).
    pub(in crate::store) async fn ledger_page<T>(
        &self,
        session_id: Uuid,
        kind: Option<DeliveryKind>,
        after: Option<DeliveryCursor>,
        limit: u32,
        cols: &str,
        read: impl Fn(&Row) -> Result<T>,
    ) -> Result<Page<T, DeliveryCursor>>
    where
        T: AsRef<Delivery>,
    {
        let limit = check_limit(limit)?;
        let keyset = if after.is_some() {
            "AND created_at <= $3 AND (created_at, id) < ($3, $4)"
        } else {
            ""
        };
        let kind = kind.map_or(String::new(), |k| format!("AND kind = '{}'", k.as_str()));
        // The page's rows are chosen on narrow columns first. Sorted in the
        // query that reads the notes, a plan that sorts (PostgreSQL's
        // generic plan does, for a session of thousands of deliveries)
        // reads every note of the session: 0.8 s a page at 64 KiB notes.
        let sql = format!(
            "SELECT {cols} FROM nomos_deliveries \
             WHERE id IN (SELECT id FROM nomos_deliveries WHERE session_id = $1 {kind} {keyset} \
                          ORDER BY created_at DESC, id DESC LIMIT $2) \
             ORDER BY created_at DESC, id DESC"
        );
        let mut q = query(sql).bind(session_id).bind(i64::from(limit) + 1);
        if let Some(c) = after {
            q = q.bind(c.created_at).bind(c.id);
        }
        let rows = q.fetch_all(self).await?;
        let items = rows.iter().map(read).collect::<Result<Vec<_>>>()?;
        Ok(into_page(items, limit, |item| {
            let d = item.as_ref();
            DeliveryCursor {
                created_at: d.created_at,
                id: d.id,
            }
        }))
    }

    /// One page of the notices `chatWith` recorded for the session's
    /// operator, oldest first (by `id`), after `after`.
    pub async fn session_notices(
        &self,
        session_id: Uuid,
        after: Option<NoticeCursor>,
        limit: u32,
    ) -> Result<Page<SessionNotice, NoticeCursor>> {
        let limit = check_limit(limit)?;
        let keyset = if after.is_some() { "AND id > $3" } else { "" };
        let sql = format!(
            "SELECT {NOTICE_COLS} FROM nomos_notices WHERE session_id = $1 {keyset} \
             ORDER BY id LIMIT $2"
        );
        let mut q = query(sql).bind(session_id).bind(i64::from(limit) + 1);
        if let Some(c) = after {
            q = q.bind(c.id);
        }
        let rows = q.fetch_all(self).await?;
        let notices = rows.iter().map(notice).collect::<Result<Vec<_>>>()?;
        Ok(into_page(notices, limit, |n| NoticeCursor { id: n.id }))
    }

    /// How many rows each of the session's lists holds (all zero for an
    /// unknown session).
    pub async fn session_counts(&self, session_id: Uuid) -> Result<SessionCounts> {
        let row = query(
            "SELECT \
               (SELECT COUNT(*) FROM nomos_plan_executions WHERE session_id = $1) AS links, \
               (SELECT COUNT(*) FROM nomos_deliveries WHERE session_id = $1) AS deliveries, \
               (SELECT COUNT(*) FROM nomos_deliveries WHERE session_id = $1 \
                  AND kind = 'notice') AS notices",
        )
        .bind(session_id)
        .fetch_one(self)
        .await?;
        Ok(SessionCounts {
            links: row.bigint("links")?,
            deliveries: row.bigint("deliveries")?,
            notices: row.bigint("notices")?,
        })
    }

    #[cfg(feature = "test-support")]
    /// The session's window and every link and ledger row, read page by
    /// page (see [`SessionSummary`]).
    ///
    /// An unknown session is not an error: the summary is empty
    /// ([`SessionSummary::is_empty`]). Several reads, not one snapshot.
    pub async fn session_summary(&self, session_id: Uuid) -> Result<SessionSummary> {
        Ok(SessionSummary {
            session_id,
            window: self.window(session_id).await?,
            links: read_all(move |c| self.session_links(session_id, c, MAX_PAGE_LIMIT)).await?,
            deliveries: self.deliveries_for_session(session_id).await?,
        })
    }

    /// The session's whole ledger, newest first (empty for an unknown
    /// session), read page by page.
    pub async fn deliveries_for_session(&self, session_id: Uuid) -> Result<Vec<Delivery>> {
        read_all(move |c| self.session_deliveries(session_id, c, MAX_PAGE_LIMIT)).await
    }

    #[cfg(feature = "test-support")]
    /// All the session's notices, oldest first (empty for an unknown
    /// session), read page by page.
    pub async fn notices(&self, session_id: Uuid) -> Result<Vec<SessionNotice>> {
        read_all(move |c| self.session_notices(session_id, c, MAX_PAGE_LIMIT)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_refuse_each_other() {
        let at = DateTime::from_timestamp_micros(1_764_460_800_123_456).expect("time");
        let id = Uuid::from_u128(0x3f25_04e0_4f89_11d3_9a0c_0305_e82c_3301);
        let link = LinkCursor {
            created_at: at,
            execution_id: id,
        };
        let delivery = DeliveryCursor { created_at: at, id };
        let notice = NoticeCursor { id: 42 };
        assert_eq!(link.to_string().parse::<LinkCursor>().ok(), Some(link));
        assert_eq!(
            delivery.to_string().parse::<DeliveryCursor>().ok(),
            Some(delivery)
        );
        assert_eq!(
            notice.to_string().parse::<NoticeCursor>().ok(),
            Some(notice)
        );
        assert!(link.to_string().parse::<DeliveryCursor>().is_err());
        assert!(notice.to_string().parse::<LinkCursor>().is_err());
        for bad in [
            "",
            "l1",
            "l1.x.y",
            "l1.1.not-a-uuid",
            "n1.",
            "n1.1.2",
            "l1.1.2.3",
        ] {
            assert!(bad.parse::<LinkCursor>().is_err(), "{bad}");
            assert!(bad.parse::<NoticeCursor>().is_err(), "{bad}");
        }
    }

    #[test]
    fn limits_outside_the_range_are_refused() {
        assert!(check_limit(0).is_err());
        assert!(check_limit(MAX_PAGE_LIMIT + 1).is_err());
        assert_eq!(check_limit(MAX_PAGE_LIMIT).ok(), Some(MAX_PAGE_LIMIT));
    }

    #[test]
    fn a_page_cut_at_the_limit_points_after_its_last_row() {
        let page = into_page(vec![1, 2, 3], 2, |n| *n);
        assert_eq!((page.items, page.next), (vec![1, 2], Some(2)));
        let last = into_page(vec![1, 2], 2, |n| *n);
        assert_eq!((last.items, last.next), (vec![1, 2], None));
    }
}
