//! The embedded migrations against the folders, and how a recorded
//! schema is judged.

use std::path::Path;

use sqlx::migrate::Migrator;

use super::{check_applied, names, PG_MIGRATOR, SQLITE_MIGRATOR};
use crate::store::StoreError;

/// SHA-384 of `017_nomos_plan_executions.up.sql`, as `sqlx::migrate!`
/// recorded it on every database migrated so far: the seed's text and
/// its checksum never change.
const SEED_CHECKSUMS: [(&str, &str); 2] = [
    (
        "postgres",
        "61b0bd7e1779d916bf28d01ce2b1c5d1dff5a08c4bff44ef645c0a43e40f4cf215414a3f73a5bb98571c3bf0b3eeb17e",
    ),
    (
        "sqlite",
        "10b2323d4a1445b31a4123ddd6c326ac38613e924ff42dc184d6a9e86ac5f40ce46950ce5487cb091f1588952dada879",
    ),
];

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn migrators() -> [(&'static str, &'static Migrator); 2] {
    [("postgres", &PG_MIGRATOR), ("sqlite", &SQLITE_MIGRATOR)]
}

#[test]
fn the_embedded_migrations_are_what_sqlx_reads_from_the_folders() {
    for (folder, migrator) in migrators() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../migrations")
            .join(folder);
        let key = |m: &sqlx::migrate::Migration| {
            (
                m.version,
                m.migration_type.is_up_migration(),
                m.description.to_string(),
                hex(&m.checksum),
                m.no_tx,
            )
        };
        let mut read: Vec<_> = sqlx::migrate::resolve_blocking(&dir)
            .expect("sqlx reads the folder")
            .iter()
            .map(|(m, _)| key(m))
            .collect();
        read.sort();
        let mut embedded: Vec<_> = migrator.iter().map(key).collect();
        embedded.sort();
        assert_eq!(embedded, read, "{folder}");
        assert!(migrator.locking && !migrator.ignore_missing && !migrator.no_tx);
    }
}

#[test]
fn the_seed_keeps_its_checksum() {
    for ((folder, migrator), (expected_folder, checksum)) in
        migrators().into_iter().zip(SEED_CHECKSUMS)
    {
        assert_eq!(folder, expected_folder);
        let seed = migrator
            .iter()
            .find(|m| m.version == 17 && m.migration_type.is_up_migration())
            .expect("017");
        assert_eq!(hex(&seed.checksum), checksum, "{folder}");
    }
}

#[test]
fn pre_release_and_newer_versions_are_told_apart() {
    let migrator = &*PG_MIGRATOR;
    let checksum = |v: i64| {
        migrator
            .iter()
            .find(|m| m.version == v && m.migration_type.is_up_migration())
            .map(|m| m.checksum.to_vec())
            .expect("a known version")
    };
    let latest = migrator.iter().map(|m| m.version).max().expect("latest");
    let current: Vec<(i64, Vec<u8>)> = (17..=latest).map(|v| (v, checksum(v))).collect();
    assert!(check_applied(migrator, &current).is_ok());
    assert!(check_applied(migrator, &[]).is_ok());

    // A pre-release 018 (another text), with or without its later versions.
    let mut old = current.clone();
    old[1].1 = vec![0];
    assert!(matches!(
        check_applied(migrator, &old),
        Err(StoreError::PreRelease { version: 18 })
    ));
    old.push((44, vec![0]));
    old.push((999, vec![0]));
    assert!(matches!(
        check_applied(migrator, &old),
        Err(StoreError::PreRelease { version: 18 })
    ));
    // The next version, in the pre-release range or beyond: a newer
    // release (releases number on from this binary's latest).
    for next in [latest + 1, 45] {
        let mut newer = current.clone();
        newer.push((next, vec![0]));
        assert!(matches!(
            check_applied(migrator, &newer),
            Err(StoreError::NewerSchema { database, binary })
                if database == next && binary == latest
        ));
    }
    // The seed's checksum is not ours to judge: sqlx reports it.
    let mut seed = current;
    seed[0].1 = vec![0];
    assert!(check_applied(migrator, &seed).is_ok());
}

#[test]
fn an_index_is_named_as_a_whole_word() {
    let sql = "CREATE INDEX CONCURRENTLY IF NOT EXISTS idx_a\n ON t (x);";
    assert!(names(sql, "idx_a"));
    assert!(names(sql, "IDX_A"));
    assert!(!names(sql, "idx"));
    assert!(!names(sql, "idx_a2"));
}

/// SHA-384 of every up migration of release 0.1.0, as `_sqlx_migrations`
/// records it. From 0.1.0 on migrations are append-only: a released file
/// is never edited (a database that ran it would refuse the new text), so
/// its checksum is pinned here; a new migration is added to the list when
/// it is released.
const RELEASED: &[(&str, i64, &str)] = &[];

#[test]
fn released_migrations_keep_their_checksums() {
    let mut listed = Vec::new();
    for (folder, migrator) in migrators() {
        for m in migrator
            .iter()
            .filter(|m| m.migration_type.is_up_migration())
        {
            listed.push(format!(
                "    (\"{folder}\", {}, \"{}\"),",
                m.version,
                hex(&m.checksum)
            ));
        }
    }
    let pinned: Vec<String> = RELEASED
        .iter()
        .map(|(folder, version, sum)| format!("    (\"{folder}\", {version}, \"{sum}\"),"))
        .collect();
    assert!(
        pinned.len() >= 16,
        "0.1.0 released 017-024 on both backends"
    );
    let changed: Vec<&String> = pinned.iter().filter(|p| !listed.contains(p)).collect();
    assert!(
        changed.is_empty(),
        "released migrations changed ({changed:?}); add a new migration instead. \
         Embedded now:\n{}",
        listed.join("\n")
    );
}
