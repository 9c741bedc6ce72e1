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
const RELEASED: &[(&str, i64, &str)] = &[
    ("postgres", 17, "61b0bd7e1779d916bf28d01ce2b1c5d1dff5a08c4bff44ef645c0a43e40f4cf215414a3f73a5bb98571c3bf0b3eeb17e"),
    ("postgres", 18, "706dbf8bdae6eba7284752a570e6cbf4891629268cd33b60e96f274c45a9e01d4bbe46037ee5e9b6d74d0c3c3da35aa2"),
    ("postgres", 19, "a4ae9a2bd9641a4c9faf195c3702e4779ad6f07903aff00c73f8fa7012a2532d8725a4f94992004390af12ef73f3facf"),
    ("postgres", 20, "c4c617aecdec38e8a4d8fa1705efe2c44a0cd563c8abcf92a7934c213734e7149f33e00e32534819d1beab44383a4070"),
    ("postgres", 21, "00d3b55fd63c5b5262c3560ad04bc7530a4b0d6f1ebc4a05177d7c55e160fec3cef65b0b2268febcfe9419ac66f4fe68"),
    ("postgres", 22, "e439a05944ae2a57888380c2fd2656501573b27a4bc7e629324455bb1a30e75e5c5fcbab8bc713b926e689a7fb7e6c0c"),
    ("postgres", 23, "6016532e9ee0abc1dbced7f8c28f17cdf7bafe143959fbd927cc6c519751be21b8b1f432fb49a796da8853adf2578488"),
    ("postgres", 24, "03639ef9c27d211cfb97dd6211a0bb0984476e33662607a2bd75add080048af4a37b6b28ffa1ba795ca74a74e27f9323"),
    ("sqlite", 17, "10b2323d4a1445b31a4123ddd6c326ac38613e924ff42dc184d6a9e86ac5f40ce46950ce5487cb091f1588952dada879"),
    ("sqlite", 18, "59307180158d49b2246d04266fa725d5e8c3b63649af14c0558373f3017232ad52614f82e2951641475b7bb3b2630655"),
    ("sqlite", 19, "5182a49ad6339975e9fd8d44fd6286e11ab62768162f73bf74ef079a48b3a6ff64d75792feabdc118ba918e2dbfd00ad"),
    ("sqlite", 20, "0e8fdf8f73af28069154cc25b1cac3c286ad53ff091cfd180fdb0b5e879490d2ede2546b5669688a1464df15ea9eafa6"),
    ("sqlite", 21, "0ab9667beec83f82a2b7cdb97629020e05d1121baed24118e043127358d348ed19fe24bc9ec88de3caf73ccd42e8fddd"),
    ("sqlite", 22, "750dfb36b88cf8b517ae74832816b5df1c47cb780389bcba074327cdf16ecfd5743dcbdb40b3f67f8ed802c7814d176c"),
    ("sqlite", 23, "a4cba98374d1c779901cc7d27e7035ff503a30bd0bd3ceeff8f7f77f74bd0afec9589999f0f7326a6f73a3ea736a32df"),
    ("sqlite", 24, "1da0503e7ab75fe3ab7f66c2375a3ba1fcb159c2f7d41d500ec8a94d7debbd4c8134a5e838c7d111e712194f3149d05e"),
];

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
