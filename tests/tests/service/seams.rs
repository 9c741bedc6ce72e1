//! Rules that follow seams rather than line counts alone:
//!
//! - no file under `host/src` is over 500 lines;
//! - no function there is over 100 lines (a screen and a half: the steps of
//!   a pass fit, each a call), but for a short list of tables, each named
//!   with why;
//! - every test, file and table the promise → test index of
//!   `ARCHITECTURE.md` ("The promises") names exists, so the index cannot
//!   point at a test that was renamed or removed.

use crate::house::{rust_files, workspace};

/// The longest function allowed under `host/src`, in lines from `fn` to
/// its closing brace (unit tests, after `#[cfg(test)]`, are not counted).
const MAX_FUNCTION_LINES: usize = 100;

/// The functions allowed past [`MAX_FUNCTION_LINES`], and why.
const LONG_FUNCTIONS: &[(&str, &str, &str)] = &[
    (
        "commands/serve/mod.rs",
        "into_config",
        "one assignment per flag: a table from the command line to the configuration",
    ),
    (
        "api/mod.rs",
        "router",
        "one line per route: the API's route table, read beside the OpenAPI document",
    ),
];

/// A function's name and length in lines, for each function of `source`
/// with a body, above its `#[cfg(test)]` module. A body ends at the first
/// line that is its signature's indentation and a `}`, as rustfmt writes it.
fn function_lengths(source: &str) -> Vec<(String, usize)> {
    let lines: Vec<&str> = source.lines().collect();
    let end = (lines.iter().position(|l| l.trim() == "#[cfg(test)]")).unwrap_or(lines.len());
    let mut out = Vec::new();
    let mut i = 0;
    while i < end {
        let Some((indent, name)) = fn_signature(lines[i]) else {
            i += 1;
            continue;
        };
        let Some(open) = (i..end).find(|&j| {
            let l = lines[j].trim_end();
            l.ends_with('{') || l.ends_with(';')
        }) else {
            break;
        };
        if lines[open].trim_end().ends_with(';') {
            i = open + 1;
            continue;
        }
        let close = (open + 1..end)
            .find(|&k| lines[k].len() == indent + 1 && lines[k].ends_with('}'))
            .unwrap_or(end);
        out.push((name, close - i + 1));
        i = open + 1;
    }
    out
}

/// The indentation and name of a line that opens a function.
fn fn_signature(line: &str) -> Option<(usize, String)> {
    let trimmed = line.trim_start();
    let indent = line.len() - trimmed.len();
    let mut rest = trimmed;
    for prefix in [
        "pub(crate) ",
        "pub(super) ",
        "pub ",
        "const ",
        "async ",
        "unsafe ",
    ] {
        rest = rest.strip_prefix(prefix).unwrap_or(rest);
    }
    let name = rest.strip_prefix("fn ")?;
    let name: String = name
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    (!name.is_empty()).then_some((indent, name))
}

#[test]
fn the_length_scanner_measures_bodies_and_skips_declarations() {
    let source = "trait T {\n    fn f(&self);\n}\n\npub(crate) async fn g(\n    a: u8,\n) -> u8 {\n    a\n}\n\nimpl X {\n    fn h() {\n        if true {\n        }\n    }\n}\n#[cfg(test)]\nmod tests {\n    fn long() {\n    }\n}\n";
    assert_eq!(
        function_lengths(source),
        vec![("g".to_string(), 5), ("h".to_string(), 4)]
    );
}

#[test]
fn no_host_file_is_over_500_lines() {
    let long: Vec<String> = rust_files(&workspace().join("host/src"))
        .into_iter()
        .filter_map(|f| {
            let n = std::fs::read_to_string(&f)
                .expect("readable source")
                .lines()
                .count();
            (n > 500).then(|| format!("{}: {n} lines", f.display()))
        })
        .collect();
    assert!(long.is_empty(), "{}", long.join("\n"));
}

#[test]
fn no_host_function_is_over_100_lines_but_the_listed_tables() {
    let src = workspace().join("host/src");
    let mut long = Vec::new();
    let mut allowed_seen = Vec::new();
    for file in rust_files(&src) {
        let relative = file.strip_prefix(&src).expect("under host/src");
        let relative = relative.to_string_lossy().replace('\\', "/");
        let source = std::fs::read_to_string(&file).expect("readable source");
        for (name, lines) in function_lengths(&source) {
            let listed = LONG_FUNCTIONS
                .iter()
                .any(|(f, n, _)| *f == relative && *n == name);
            if listed {
                allowed_seen.push((relative.clone(), name.clone()));
            } else if lines > MAX_FUNCTION_LINES {
                long.push(format!("{relative}: {name} is {lines} lines"));
            }
        }
    }
    assert!(
        long.is_empty(),
        "split these along their steps (or list one, with why, in LONG_FUNCTIONS):\n{}",
        long.join("\n")
    );
    // The list names functions that still exist: an entry outlives no
    // rename.
    for (file, name, _) in LONG_FUNCTIONS {
        assert!(
            allowed_seen.iter().any(|(f, n)| f == file && n == name),
            "LONG_FUNCTIONS lists {file}: {name}, which is gone"
        );
    }
}

/// The backquoted names of `ARCHITECTURE.md`'s promise → test index, from
/// "**The promises.**" to the next bold heading.
fn promise_index_names() -> Vec<String> {
    let text =
        std::fs::read_to_string(workspace().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let start = text
        .find("**The promises.**")
        .expect("the promises' heading");
    let rest = &text[start + 2..];
    let end = rest.find("\n**").map_or(rest.len(), |e| e + 1);
    rest[..end]
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

/// Every `.rs` file under `tests/` and `host/src`, with its text.
fn sources() -> Vec<(String, String)> {
    let root = workspace();
    let mut files = rust_files(&root.join("tests"));
    files.extend(rust_files(&root.join("host/src")));
    files
        .into_iter()
        .filter(|f| !f.components().any(|c| c.as_os_str() == "target"))
        .map(|f| {
            let text = std::fs::read_to_string(&f).expect("readable source");
            (f.to_string_lossy().replace('\\', "/"), text)
        })
        .collect()
}

/// Whether `text` defines a function whose name matches `pattern`, where
/// `*` stands for any run of name characters.
fn defines_fn(text: &str, pattern: &str) -> bool {
    let (head, tail) = pattern.split_once('*').unwrap_or((pattern, ""));
    text.match_indices("fn ").any(|(at, _)| {
        let name: String = text[at + 3..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let followed = text[at + 3 + name.len()..].starts_with(['(', '<']);
        let matches = if pattern.contains('*') {
            name.starts_with(head) && name.ends_with(tail) && name.len() >= head.len() + tail.len()
        } else {
            name == pattern
        };
        followed && matches
    })
}

/// Why the index's `name` names nothing, or `None` when it is found: a
/// path (a file or directory, from the workspace or as the end of a path
/// under `tests/`), a test function, a table (`nomos_*`, in a migration),
/// or `module::item` (a test matching `item` in the module's file, or an
/// item or submodule of a host module).
fn missing(name: &str, sources: &[(String, String)]) -> Option<String> {
    let root = workspace();
    let is_word = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '*')
    };
    if name.ends_with(".rs") || name.ends_with('/') || name.ends_with(".md") {
        let found = root.join(name).exists()
            || sources.iter().any(|(path, _)| {
                path.ends_with(&format!("/{name}")) || path.contains(&format!("/{name}"))
            });
        return (!found).then(|| format!("no file {name}"));
    }
    if name.starts_with("nomos_") {
        let found = ["migrations/postgres", "migrations/sqlite"]
            .iter()
            .any(|dir| {
                let entries = std::fs::read_dir(root.join(dir)).expect("a migrations folder");
                entries.flatten().any(|entry| {
                    let sql = std::fs::read_to_string(entry.path()).unwrap_or_default();
                    sql.contains(name)
                })
            });
        return (!found).then(|| format!("no migration creates {name}"));
    }
    if let Some((module, item)) = name.split_once("::") {
        let in_module = |path: &str| {
            path.contains(&format!("/{module}/")) || path.ends_with(&format!("/{module}.rs"))
        };
        let found = sources
            .iter()
            .filter(|(path, _)| in_module(path))
            .any(|(path, text)| {
                defines_fn(text, item)
                    || path.ends_with(&format!("/{module}/{item}.rs"))
                    || text.contains(&format!("struct {item}"))
                    || text.contains(&format!("enum {item}"))
            });
        return (!found).then(|| format!("nothing in {module} matches {item}"));
    }
    if name.contains('_') && is_word(name) {
        let found = sources.iter().any(|(_, text)| defines_fn(text, name));
        return (!found).then(|| format!("no test fn {name}"));
    }
    None
}

#[test]
fn every_test_the_promise_index_names_exists() {
    let names = promise_index_names();
    assert!(names.len() > 20, "the index was read: {names:?}");
    let sources = sources();
    let missing: Vec<String> = names.iter().filter_map(|n| missing(n, &sources)).collect();
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md's promise index names:\n{}",
        missing.join("\n")
    );
    // The check can fail: a name the index does not hold is reported.
    assert!(missing_example_is_reported(&sources));
}

/// A renamed test, a removed file and an unknown table are each reported.
fn missing_example_is_reported(sources: &[(String, String)]) -> bool {
    [
        "a_test_that_was_renamed_away",
        "worker/gone.rs",
        "nomos_no_such_table",
        "simulation::*_never_written",
    ]
    .iter()
    .all(|name| missing(name, sources).is_some())
}
