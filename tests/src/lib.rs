//! Shared support for the integration tests.
pub mod agents;
pub mod api;
pub mod browser;
pub mod cluster;
pub mod cut;
pub mod db;
pub mod http;
pub mod load;
pub mod plans;
pub mod policies;
pub mod python;
pub mod replica;
pub mod setup;
pub mod sim;
pub mod wait;

/// Generates, for each listed test body (an `async fn(Store)`), one test
/// on a fresh SQLite file (`sqlite::name`) and one on a fresh PostgreSQL
/// database (`postgres::name`): the one conformance harness every store
/// test uses. Bodies are named `name` (in the calling module) or
/// `path => name`.
#[macro_export]
macro_rules! on_both_stores {
    ($($name:ident),* $(,)?) => {
        $crate::on_both_stores!($(super::$name => $name),*);
    };
    ($($path:path => $name:ident),* $(,)?) => {
        mod sqlite {
            #[allow(unused_imports)]
            use super::*;
            $(
                #[tokio::test]
                async fn $name() {
                    let (store, _dir) = $crate::db::fresh_sqlite().await;
                    $path(store.clone()).await;
                    store.close().await;
                }
            )*
        }
        mod postgres {
            #[allow(unused_imports)]
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let Some(db) = $crate::db::fresh_postgres_db().await else {
                        return;
                    };
                    $path(db.store.clone()).await;
                    db.cleanup().await;
                }
            )*
        }
    };
}
