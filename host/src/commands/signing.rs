//! `nomos-continue policy keygen|sign`: the operator's half of signed
//! revisions (the server's half is `serve --policy-verify-key`). The file
//! formats are described in `crate::signing`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};

use crate::policy::read_policy_file;
use crate::signing::{self, SecretKey};

/// `policy keygen PREFIX`: writes a new key pair, `PREFIX.key` (owner-only,
/// never overwritten: losing the old key to a typo would orphan every
/// revision it signed) and `PREFIX.pub`, and prints the key id.
pub fn keygen(prefix: &Path) -> Result<ExitCode> {
    let secret_path = with_suffix(prefix, ".key");
    let public_path = with_suffix(prefix, ".pub");
    if public_path.exists() {
        anyhow::bail!("{} exists; choose another prefix", public_path.display());
    }
    let key = SecretKey::generate();
    signing::write_secret_file(&secret_path, &key).context("write the private key")?;
    let public = key.public();
    std::fs::write(&public_path, public.to_file_text())
        .with_context(|| format!("write the public key {}", public_path.display()))?;
    println!("key id {}", public.id());
    println!("private key {} (keep it secret)", secret_path.display());
    println!("public key {}", public_path.display());
    Ok(ExitCode::SUCCESS)
}

/// `policy sign --key PREFIX.key POLICY.wasm`: writes `POLICY.wasm.sig`,
/// the signature line `serve` and the upload header expect.
pub fn sign(key: &Path, wasm: &Path) -> Result<ExitCode> {
    let secret = SecretKey::read(key).context("read the private key")?;
    let bytes = read_policy_file(wasm)?;
    let line = secret.sign(&bytes).to_line();
    let sig_path = signing::signature_path(wasm);
    std::fs::write(&sig_path, format!("{line}\n"))
        .with_context(|| format!("write {}", sig_path.display()))?;
    println!(
        "signed {} with key {} -> {}",
        wasm.display(),
        secret.public().id(),
        sig_path.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// `prefix` with `suffix` appended to its file name (not replacing an
/// extension: `keys/prod.2026` becomes `keys/prod.2026.key`).
fn with_suffix(prefix: &Path, suffix: &str) -> PathBuf {
    let mut name = prefix.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}
