//! Reading a policy file (`serve --policy`, the `policy` subcommands).
//!
//! Watching the file is not done here: what a changed file means (it is
//! uploaded as a new revision, and the database decides what runs) involves
//! the database, which the sandbox does not know. See `crate::deploy`.

use super::PolicyError;

/// Reads a policy file for `--policy` and the CLI.
pub fn read_policy_file(path: &std::path::Path) -> Result<Vec<u8>, PolicyError> {
    std::fs::read(path).map_err(|source| PolicyError::Read {
        path: path.display().to_string(),
        source,
    })
}
