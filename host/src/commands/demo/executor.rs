//! A simulated executor: the asynchronous side of a tool such as
//! `pct_create`. Starting a step answers at once with "running, execution
//! ID"; the work finishes later in the background and the result is
//! reported to nomos-continue through its API, as a runtime would.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use uuid::Uuid;

use super::client::ApiClient;
use super::timeline::{Actor, Timeline};

/// How a simulated step ends.
#[derive(Debug, Clone)]
pub struct Script {
    pub status: &'static str,
    pub result: String,
    pub takes: Duration,
}

/// Runs steps in the background and reports their results.
pub struct Executor {
    api: ApiClient,
    timeline: Arc<Timeline>,
    /// How many times each step has been started, so a step can fail the
    /// first time and succeed on the retry.
    attempts: Mutex<HashMap<String, u32>>,
    tasks: Mutex<tokio::task::JoinSet<()>>,
}

impl Executor {
    pub fn new(api: ApiClient, timeline: Arc<Timeline>) -> Self {
        Self {
            api,
            timeline,
            attempts: Mutex::new(HashMap::new()),
            tasks: Mutex::new(tokio::task::JoinSet::new()),
        }
    }

    /// Starts `step`; returns the tool result the agent sees at once.
    pub fn start(&self, step: &str) -> (Uuid, String) {
        let id = Uuid::new_v4();
        let attempt = {
            let mut attempts = self.attempts.lock().unwrap_or_else(|p| p.into_inner());
            let n = attempts.entry(step.to_string()).or_default();
            *n += 1;
            *n
        };
        let script = outcome(step, attempt);
        self.timeline.record(
            Actor::Executor,
            format!("{step}: started execution {id}, running in the background"),
        );
        let api = self.api.clone();
        let timeline = self.timeline.clone();
        let name = step.to_string();
        let mut tasks = self.tasks.lock().unwrap_or_else(|p| p.into_inner());
        tasks.spawn(async move {
            if let Err(e) = api.put_execution(id, "running", "").await {
                timeline.record(
                    Actor::Executor,
                    format!("could not report execution {id}: {e:#}"),
                );
                return;
            }
            tokio::time::sleep(script.takes).await;
            timeline.record(
                Actor::Executor,
                format!(
                    "{name}: execution {id} {}: {}",
                    script.status,
                    first_line(&script.result)
                ),
            );
            if let Err(e) = api.put_execution(id, script.status, &script.result).await {
                timeline.record(
                    Actor::Executor,
                    format!("could not report execution {id}: {e:#}"),
                );
            }
        });
        (id, format!("{step}: accepted; running, execution {id}"))
    }

    /// Waits for every background step to report.
    pub async fn finish(&self) {
        let mut tasks = std::mem::take(&mut *self.tasks.lock().unwrap_or_else(|p| p.into_inner()));
        while tasks.join_next().await.is_some() {}
    }
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}

/// The scripted world: the package install fails the first time because
/// the new container's sshd is not up yet.
fn outcome(step: &str, attempt: u32) -> Script {
    let ms = Duration::from_millis;
    match (step, attempt) {
        ("pct_create web-01", _) => Script {
            status: "completed",
            result: "container 101 (web-01) created on pve1\nip: 10.0.0.7/24\nstatus: running".into(),
            takes: ms(400),
        },
        ("apt-get install nginx", 1) => Script {
            status: "failed",
            result: "ssh: connect to host 10.0.0.7 port 22: Connection refused\nexit status 255".into(),
            takes: ms(300),
        },
        ("apt-get install nginx", _) => Script {
            status: "completed",
            result: "Setting up nginx (1.22.1-9) ...\nnginx is already the newest version\n0 upgraded, 3 newly installed".into(),
            takes: ms(500),
        },
        ("pct exec 101 -- systemctl enable --now ssh", _) => Script {
            status: "completed",
            result: "Created symlink /etc/systemd/system/sshd.service → /lib/systemd/system/ssh.service.\nssh.service: active (running)".into(),
            takes: ms(250),
        },
        ("configure nginx site", _) => Script {
            status: "completed",
            result: "wrote /etc/nginx/sites-enabled/web-01\nnginx: configuration file /etc/nginx/nginx.conf test is successful\nnginx reloaded".into(),
            takes: ms(300),
        },
        ("verify http://10.0.0.7/", _) => Script {
            status: "completed",
            result: "HTTP/1.1 200 OK\nServer: nginx/1.22.1\nContent-Type: text/html".into(),
            takes: ms(200),
        },
        (other, _) => Script { status: "failed", result: format!("unknown step {other:?}"), takes: ms(50) },
    }
}
