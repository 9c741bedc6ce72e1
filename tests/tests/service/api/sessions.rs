//! `GET /v1/sessions/{id}` pages its lists: following `next` visits every
//! link, ledger row and notice exactly once, on both stores; bad paging
//! parameters are 400s with a JSON error.

use std::collections::HashSet;

use chrono::{DateTime, Duration, Utc};
use nomos_continue::store::{NoticeAbout, Store, DEFAULT_PAGE_LIMIT};
use nomos_continue_tests::api::ServedApi;
use serde_json::{Map, Value};
use uuid::Uuid;

use super::sqlite_api;

nomos_continue_tests::on_both_stores!(
    paging_visits_every_row_once,
    bad_paging_parameters_are_400_json
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

fn query(next: &Map<String, Value>, limit: usize) -> String {
    let mut params = vec![format!("limit={limit}")];
    for (name, cursor) in next {
        params.push(format!("{name}={}", cursor.as_str().expect("a cursor")));
    }
    params.join("&")
}

/// Follows `next` from the first page until it is `null`, with a link
/// added half way (after the first page): every row comes back exactly
/// once, in order, the new link last.
async fn paging_visits_every_row_once(store: Store) {
    let api = ServedApi::start(store.clone(), None).await;
    let session = Uuid::new_v4();
    let mut want = seed(&store, session).await;
    let path = format!("/v1/sessions/{session}");
    let limit = 100;

    let first = api.send("GET", &format!("{path}?limit={limit}"), "").await;
    assert_eq!(first.status, 200, "{}", first.text);
    let first = first.json();
    assert_eq!(
        first["counts"],
        serde_json::json!({"links": LINKS, "deliveries": LEDGER, "notices": NOTICES})
    );
    assert_eq!(first["limit"], limit);
    assert!(first["window"].is_null());
    let late = Uuid::new_v4();
    store
        .link(session, &[late], start() + Duration::hours(1))
        .await
        .expect("link");
    want.push(late);

    let (mut links, mut ledger, mut notices) = (Vec::new(), Vec::new(), Vec::new());
    let mut page = first;
    let mut pages = 0;
    loop {
        pages += 1;
        for (list, into, key) in [
            ("links", &mut links, "execution_id"),
            ("deliveries", &mut ledger, "id"),
            ("notices", &mut notices, "id"),
        ] {
            if let Some(items) = page[list].as_array() {
                assert!(items.len() <= limit, "{list}: {} rows", items.len());
                into.extend(items.iter().map(|i| i[key].to_string()));
            }
        }
        let Some(next) = page["next"].as_object().cloned() else {
            break;
        };
        let answer = api
            .send("GET", &format!("{path}?{}", query(&next, limit)), "")
            .await;
        assert_eq!(answer.status, 200, "{}", answer.text);
        page = answer.json();
        for list in ["links", "deliveries", "notices"] {
            assert_eq!(
                page.get(list).is_some(),
                next.contains_key(&format!("{list}_cursor")),
                "a later page answers only the lists it continues: {list}, {next:?}"
            );
        }
    }
    assert_eq!(pages, (LINKS + 1).div_ceil(limit));
    let want: Vec<String> = want.iter().map(|id| format!("\"{id}\"")).collect();
    assert_eq!(links, want, "every link once, oldest first");
    assert_eq!(ledger.len(), LEDGER);
    assert_eq!(ledger.iter().collect::<HashSet<_>>().len(), LEDGER);
    assert_eq!(notices.len(), NOTICES);
    assert_eq!(notices.iter().collect::<HashSet<_>>().len(), NOTICES);

    // The ledger is newest first, across pages of one row too.
    let mut times = Vec::new();
    let mut next = Map::new();
    loop {
        next.remove("links_cursor");
        next.remove("notices_cursor");
        let q = if next.is_empty() {
            "limit=1".to_string()
        } else {
            query(&next, 1)
        };
        let page = api.send("GET", &format!("{path}?{q}"), "").await.json();
        let rows = page["deliveries"].as_array().cloned().unwrap_or_default();
        for row in rows {
            let at = row["created_at"].as_str().expect("a time");
            times.push(at.parse::<DateTime<Utc>>().expect("RFC 3339"));
        }
        match page["next"].get("deliveries_cursor") {
            Some(c) => next.insert("deliveries_cursor".into(), c.clone()),
            None => break,
        };
    }
    assert_eq!(times.len(), LEDGER);
    assert!(times.windows(2).all(|w| w[0] >= w[1]), "{times:?}");
}

#[tokio::test]
async fn the_first_page_has_the_default_limit_and_says_what_follows() {
    let (api, _dir) = sqlite_api(None).await;
    let session = Uuid::new_v4();
    seed(&api.store, session).await;
    let page = api
        .send("GET", &format!("/v1/sessions/{session}"), "")
        .await;
    assert_eq!(page.status, 200, "{}", page.text);
    let page = page.json();
    assert_eq!(page["limit"], DEFAULT_PAGE_LIMIT);
    assert_eq!(
        page["links"].as_array().map(Vec::len),
        Some(DEFAULT_PAGE_LIMIT as usize)
    );
    assert_eq!(page["deliveries"].as_array().map(Vec::len), Some(LEDGER));
    assert_eq!(page["notices"].as_array().map(Vec::len), Some(NOTICES));
    let next = page["next"].as_object().expect("more links");
    assert_eq!(next.keys().collect::<Vec<_>>(), ["links_cursor"]);
}

async fn bad_paging_parameters_are_400_json(store: Store) {
    let api = ServedApi::start(store, None).await;
    let session = Uuid::new_v4();
    seed(&api.store, session).await;
    let path = format!("/v1/sessions/{session}");
    let page = api.send("GET", &format!("{path}?limit=2"), "").await.json();
    let links_cursor = page["next"]["links_cursor"].as_str().expect("cursor");
    for query in [
        "limit=0".to_string(),
        "limit=501".to_string(),
        "limit=-1".to_string(),
        "limit=abc".to_string(),
        "limit=".to_string(),
        "limit=1&limit=2".to_string(),
        "links_cursor=".to_string(),
        "links_cursor=garbage".to_string(),
        // Beyond PostgreSQL's timestamps: a bad cursor, not a database error.
        format!("links_cursor=l1.-300000000000000000.{}", Uuid::nil()),
        format!("links_cursor=l1.300000000000000000.{}", Uuid::nil()),
        format!("deliveries_cursor={links_cursor}"),
        format!("notices_cursor={links_cursor}"),
        "cursor=x".to_string(),
        "page=2".to_string(),
    ] {
        let answer = api.send("GET", &format!("{path}?{query}"), "").await;
        answer.expect_error(400);
    }
    // A bad limit is refused even for an unknown session.
    api.send(
        "GET",
        &format!("/v1/sessions/{}?limit=0", Uuid::new_v4()),
        "",
    )
    .await
    .expect_error(400);
}
