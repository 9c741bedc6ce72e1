//! The watched policy file (`serve --policy`): uploaded as any upload is
//! when its contents change, compared with the file as this process last
//! saw it (see the parent module for why not with the active revision).

use std::path::PathBuf;
use std::time::Duration;

use async_trait::async_trait;

use super::watch::Look;
use super::{DeployError, PolicyDeployment, WatchOutcome};
use crate::policy::Revision;
use crate::signing::{self, Signature};

impl PolicyDeployment {
    /// A watcher of the policy file at `path`, looking every `interval`.
    pub fn watch_file(&self, path: PathBuf, interval: Duration) -> FileWatcher {
        FileWatcher {
            deployment: self.clone(),
            path,
            interval,
            last_seen: None,
            last_stat: None,
        }
    }
}

/// How long after its modification a policy file's length and time are
/// trusted to change with its contents: file times tick coarsely (a few
/// milliseconds), so two writes of the same length inside one tick share
/// a time.
const RACY_MODIFICATION: Duration = Duration::from_secs(2);

/// Uploads a policy file when its contents change (see the module docs).
pub struct FileWatcher {
    deployment: PolicyDeployment,
    path: PathBuf,
    interval: Duration,
    /// The file's revision and signature as last seen, uploaded or
    /// refused; `None` before the first successful look. The signature is
    /// part of it so that signing a refused file (writing `FILE.sig` after
    /// the component) is seen as a change.
    last_seen: Option<(Revision, Option<String>)>,
    /// The file's length and modification time when `last_seen` was read:
    /// while they stay the same the file is not read and hashed again (an
    /// interpreted policy is tens of MB, looked at every interval).
    last_stat: Option<(u64, std::time::SystemTime)>,
}

impl FileWatcher {
    /// Remembers what was read, and the file's stat it was read at.
    fn mark_seen(
        &mut self,
        seen: (Revision, Option<String>),
        stat: Option<(u64, std::time::SystemTime)>,
    ) {
        self.last_seen = Some(seen);
        self.last_stat = stat;
    }

    /// Looks at the file once.
    pub async fn run_once(&mut self) -> WatchOutcome {
        let stat = tokio::fs::metadata(&self.path)
            .await
            .ok()
            .and_then(|m| Some((m.len(), m.modified().ok()?)));
        let signature = match signing::read_signature_file(&self.path).await {
            Ok(signature) => signature,
            Err(e) => return WatchOutcome::Failed(e.to_string()),
        };
        if let (Some(stat), Some(last)) = (stat, &self.last_seen) {
            if self.last_stat == Some(stat) && last.1 == signature {
                return WatchOutcome::Unchanged;
            }
        }
        // A file modified within the clock's granularity of the read could
        // change again without its stat changing (as git's "racily clean"
        // entries): such a stat is not trusted, and the next look reads it.
        let stat = stat
            .filter(|(_, modified)| modified.elapsed().is_ok_and(|age| age > RACY_MODIFICATION));
        let bytes = match tokio::fs::read(&self.path).await {
            Ok(b) => b,
            Err(e) => return WatchOutcome::Failed(format!("{}: {e}", self.path.display())),
        };
        let revision = Revision::of(&bytes);
        let seen = (revision.clone(), signature.clone());
        match &self.last_seen {
            Some(last) if *last == seen => return WatchOutcome::Unchanged,
            Some(_) => {}
            // Start-up: a file the database already has (with this file's
            // signer) is no news, even if another revision is active there
            // (it was uploaded after this file): the database decides.
            None => {
                let signer = signature
                    .as_deref()
                    .and_then(|s| Signature::parse(s).ok())
                    .map(|s| s.key_id.0);
                match self.deployment.is_saved(&revision, signer.as_deref()).await {
                    Ok(true) => {
                        self.mark_seen(seen, stat);
                        return WatchOutcome::Unchanged;
                    }
                    Ok(false) => {}
                    Err(e) => return WatchOutcome::Failed(format!("saved policy revisions: {e}")),
                }
            }
        }
        match self.deployment.upload(bytes, signature.as_deref()).await {
            Ok((uploaded, _)) => {
                self.mark_seen(seen, stat);
                WatchOutcome::Activated(uploaded)
            }
            Err(DeployError::Rejected(e)) => {
                tracing::error!(path = %self.path.display(), "policy file refused: {e}");
                self.mark_seen(seen, stat);
                WatchOutcome::Rejected(revision, e.reasons())
            }
            Err(DeployError::Signature(e)) => {
                tracing::error!(path = %self.path.display(), "policy file refused: {e}");
                self.mark_seen(seen, stat);
                WatchOutcome::Rejected(revision, vec![e.to_string()])
            }
            // Not marked as seen: the upload is tried again at the next look.
            Err(e) => WatchOutcome::Failed(format!("upload {}: {e}", self.path.display())),
        }
    }
}

#[async_trait]
impl Look for FileWatcher {
    async fn look(&mut self) -> WatchOutcome {
        self.run_once().await
    }

    fn interval(&self) -> Duration {
        self.interval
    }
}
