//! A session's lists as sub-resources (`/links`, `/deliveries`,
//! `/notices`): following `next_cursor` visits every row exactly once, on
//! both stores; bad paging parameters are 400 problems. The session
//! itself answers its window and counts; the list of sessions pages too.

use std::collections::HashSet;

use chrono::{DateTime, Duration, Utc};
use nomos_continue::store::{NoticeAbout, Store, DEFAULT_PAGE_LIMIT};
use nomos_continue_tests::api::ServedApi;
use serde_json::Value;
use uuid::Uuid;

use super::sqlite_api;

nomos_continue_tests::on_both_stores!(
    paging_visits_every_row_once,
    bad_paging_parameters_are_400_json,
    the_list_of_sessions_pages_and_filters
);

const LINKS: usize = 1234;
const LEDGER: usize = 7;
const NOTICES: usize = 5;

fn start() -> DateTime<Utc> {
    "2026-11-30T04:00:00Z".parse().expect("a valid time")
}

/// Links in batches of a hundred sharing one time (so pages break inside
/// runs of equal times), a few ledger rows and notices. Returns the link
/// ids in the order the API lists them.
async fn seed(store: &Store, session: Uuid) -> Vec<Uuid> {
    let mut order = Vec::new();
    for (batch, start_at) in (0..LINKS).step_by(100).enumerate() {
        let mut ids: Vec<Uuid> = (start_at..LINKS.min(start_at + 100))
            .map(|_| Uuid::new_v4())
            .collect();
        let at = start() + Duration::seconds(batch as i64);
        store.link(session, &ids, at).await.expect("link");
        ids.sort();
        order.extend(ids);
    }
    for i in 0..LEDGER {
        let about = NoticeAbout {
            session_id: session,
            execution_ids: &order[i..=i],
            policy_revision: "test",
        };
        let at = start() + Duration::milliseconds(i as i64 / 2);
        let key = format!("ledger-{i}");
        assert!(store
            .record_notice(about, &key, "dropped", at)
            .await
            .expect("ledger row"));
    }
    for i in 0..NOTICES {
        store
            .append_notice(session, &format!("notice {i}"), &format!("n-{i}"), start())
            .await
            .expect("notice");
    }
    order
}

/// Follows one list's `next_cursor` from its first page until it is
/// `null`; `between` runs after the first page. Answers the rows.
async fn follow(
    api: &ServedApi,
    path: &str,
    limit: usize,
    between: impl AsyncFnOnce(),
) -> (Vec<Value>, usize) {
    let mut rows = Vec::new();
    let mut pages = 0;
    let mut between = Some(between);
    let mut cursor: Option<String> = None;
    loop {
        let q = match &cursor {
            Some(c) => format!("limit={limit}&cursor={c}"),
            None => format!("limit={limit}"),
        };
        let answer = api.send("GET", &format!("{path}?{q}"), "").await;
        assert_eq!(answer.status, 200, "{}", answer.text);
        let page = answer.json();
        let items = page["items"].as_array().expect("items").clone();
        assert!(items.len() <= limit, "{path}: {} rows", items.len());
        rows.extend(items);
        pages += 1;
        if let Some(between) = between.take() {
            between().await;
        }
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    (rows, pages)
}

/// Follows each list from the first page until `next_cursor` is `null`,
/// with a link added half way (after the first page): every row comes back
/// exactly once, in order, the new link last.
async fn paging_visits_every_row_once(store: Store) {
    let api = ServedApi::start(store.clone(), None).await;
    let session = Uuid::new_v4();
    let mut want = seed(&store, session).await;
    let path = format!("/v1/sessions/{session}");
    let limit = 100;

    let summary = api.send("GET", &path, "").await;
    assert_eq!(summary.status, 200, "{}", summary.text);
    let summary = summary.json();
    assert_eq!(summary["counts"]["links"], LINKS, "{summary}");
    assert_eq!(summary["counts"]["in_flight"], LINKS, "{summary}");
    assert_eq!(summary["counts"]["deliveries"], LEDGER, "{summary}");
    // A notice is a delivery of kind notice (these ledger rows); chatWith's
    // copies in its history are not counted again.
    assert_eq!(summary["counts"]["notices"], LEDGER, "{summary}");
    assert_eq!(summary["status"], "ok", "{summary}");
    assert!(summary["window"].is_null());
    assert!(summary.get("links").is_none(), "lists are sub-resources");

    let late = Uuid::new_v4();
    let (links, pages) = follow(&api, &format!("{path}/links"), limit, async || {
        store
            .link(session, &[late], start() + Duration::hours(1))
            .await
            .expect("link");
    })
    .await;
    want.push(late);
    assert_eq!(pages, (LINKS + 1).div_ceil(limit));
    let links: Vec<String> = links
        .iter()
        .map(|l| l["execution_id"].as_str().expect("id").to_owned())
        .collect();
    let want: Vec<String> = want.iter().map(Uuid::to_string).collect();
    assert_eq!(links, want, "every link once, oldest first");

    let (notices, _) = follow(&api, &format!("{path}/notices"), 2, async || {}).await;
    let ids: HashSet<String> = notices
        .iter()
        .map(|n| n["delivery"]["id"].to_string())
        .collect();
    assert_eq!((notices.len(), ids.len()), (LEDGER, LEDGER));
    for n in &notices {
        assert_eq!(n["delivery"]["kind"], "notice", "{n}");
        // Queued for the operator's channel by migration 025's trigger.
        assert_eq!(n["operator"]["state"], "pending", "{n}");
        assert_eq!(n["undelivered"], false, "{n}");
    }

    // The ledger is newest first, across pages of one row too.
    let (ledger, pages) = follow(&api, &format!("{path}/deliveries"), 1, async || {}).await;
    assert_eq!((ledger.len(), pages), (LEDGER, LEDGER));
    let ids: HashSet<String> = ledger.iter().map(|d| d["id"].to_string()).collect();
    assert_eq!(ids.len(), LEDGER);
    let times: Vec<DateTime<Utc>> = ledger
        .iter()
        .map(|d| {
            d["created_at"]
                .as_str()
                .expect("a time")
                .parse()
                .expect("RFC 3339")
        })
        .collect();
    assert!(times.windows(2).all(|w| w[0] >= w[1]), "{times:?}");
    for row in &ledger {
        for internal in [
            "lease_owner",
            "lease_expires_at",
            "claim_token",
            "claims",
            "shortages",
        ] {
            assert!(row.get(internal).is_none(), "{internal} on the wire: {row}");
        }
        assert!(row["failed_attempts"].is_number(), "{row}");
    }
}

#[tokio::test]
async fn the_first_page_has_the_default_limit_and_says_what_follows() {
    let (api, _dir) = sqlite_api(None).await;
    let session = Uuid::new_v4();
    seed(&api.store, session).await;
    let page = api
        .send("GET", &format!("/v1/sessions/{session}/links"), "")
        .await;
    assert_eq!(page.status, 200, "{}", page.text);
    let page = page.json();
    assert_eq!(
        page["items"].as_array().map(Vec::len),
        Some(DEFAULT_PAGE_LIMIT as usize)
    );
    assert!(page["next_cursor"].is_string(), "{page}");
    let page = api
        .send("GET", &format!("/v1/sessions/{session}/deliveries"), "")
        .await
        .json();
    assert_eq!(page["items"].as_array().map(Vec::len), Some(LEDGER));
    assert!(page["next_cursor"].is_null(), "{page}");
    // An unknown session's lists are a 404, like the session.
    for list in ["", "/links", "/deliveries", "/notices"] {
        let path = format!("/v1/sessions/{}{list}", Uuid::new_v4());
        assert_eq!(api.send("GET", &path, "").await.problem(404), "not-found");
    }
}

async fn bad_paging_parameters_are_400_json(store: Store) {
    let api = ServedApi::start(store, None).await;
    let session = Uuid::new_v4();
    seed(&api.store, session).await;
    let path = format!("/v1/sessions/{session}");
    let page = api
        .send("GET", &format!("{path}/links?limit=2"), "")
        .await
        .json();
    let links_cursor = page["next_cursor"].as_str().expect("cursor");
    for (list, query) in [
        ("links", "limit=0".to_string()),
        ("links", "limit=501".to_string()),
        ("links", "limit=-1".to_string()),
        ("links", "limit=abc".to_string()),
        ("links", "limit=".to_string()),
        ("links", "limit=1&limit=2".to_string()),
        ("links", "cursor=".to_string()),
        ("links", "cursor=garbage".to_string()),
        // Beyond PostgreSQL's timestamps: a bad cursor, not a database error.
        (
            "links",
            format!("cursor=l1.-300000000000000000.{}", Uuid::nil()),
        ),
        (
            "links",
            format!("cursor=l1.300000000000000000.{}", Uuid::nil()),
        ),
        ("deliveries", format!("cursor={links_cursor}")),
        ("notices", format!("cursor={links_cursor}")),
        ("links", "links_cursor=x".to_string()),
        ("links", "page=2".to_string()),
    ] {
        let answer = api.send("GET", &format!("{path}/{list}?{query}"), "").await;
        assert_eq!(answer.problem(400), "bad-request", "{list}?{query}");
    }
    for query in [
        "filter=nope",
        "status=failed",
        "status=",
        "limit=0",
        "cursor=garbage",
        "page=1",
    ] {
        let answer = api.send("GET", &format!("/v1/sessions?{query}"), "").await;
        assert_eq!(answer.problem(400), "bad-request", "{query}");
    }
}

/// `GET /v1/sessions` lists every session once, newest first, and its
/// filters are the console's.
async fn the_list_of_sessions_pages_and_filters(store: Store) {
    let api = ServedApi::start(store.clone(), None).await;
    let mut made = Vec::new();
    for i in 0..7 {
        let session = Uuid::new_v4();
        let at = start() + Duration::seconds(i);
        store
            .link(session, &[Uuid::new_v4()], at)
            .await
            .expect("link");
        made.push(session.to_string());
    }
    let (rows, pages) = follow(&api, "/v1/sessions", 3, async || {}).await;
    assert_eq!(pages, 3);
    let listed: Vec<String> = rows
        .iter()
        .map(|r| r["session_id"].as_str().expect("id").to_owned())
        .collect();
    made.reverse();
    assert_eq!(listed, made, "newest first, each once");
    assert!(rows.iter().all(|r| r["in_flight"] == 1), "{rows:?}");
    let open = api.send("GET", "/v1/sessions?filter=open", "").await;
    assert_eq!(open.status, 200, "{}", open.text);
    assert_eq!(open.json()["items"], serde_json::json!([]));
    let in_flight = api
        .send("GET", "/v1/sessions?filter=in-flight&limit=500", "")
        .await;
    assert_eq!(in_flight.json()["items"].as_array().map(Vec::len), Some(7));
}
