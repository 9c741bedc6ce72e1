//! A TCP proxy on loopback that a test can cut and mend: a database
//! outage (every connection dropped, new ones refused) without touching
//! the machine's shared PostgreSQL server. It can also be paused: bytes
//! stop flowing both ways while every connection stays open (a standby
//! that is connected but receives nothing, a network that stalls), or
//! hold only the server's answers (a statement that reached the server
//! while its client still waits for the reply).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinSet;

/// The proxy: forwards each connection to `target` while it is mended.
pub struct CutProxy {
    addr: SocketAddr,
    target: SocketAddr,
    tasks: Arc<Mutex<Option<JoinSet<()>>>>,
    /// Holds the client's bytes.
    paused: watch::Sender<bool>,
    /// Holds the server's bytes.
    answers_held: watch::Sender<bool>,
}

impl CutProxy {
    /// A proxy on a free loopback port forwarding to `target`, mended.
    pub async fn start(target: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind a port");
        let addr = listener.local_addr().expect("its address");
        let proxy = Self {
            addr,
            target,
            tasks: Arc::new(Mutex::new(None)),
            paused: watch::Sender::new(false),
            answers_held: watch::Sender::new(false),
        };
        proxy.serve(listener);
        proxy
    }

    /// The proxy's address (give it to the client instead of the target's).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    fn serve(&self, listener: TcpListener) {
        let mut tasks = JoinSet::new();
        let target = self.target;
        let paused = self.paused.subscribe();
        let answers_held = self.answers_held.subscribe();
        tasks.spawn(async move {
            let mut pipes = JoinSet::new();
            while let Ok((client, _)) = listener.accept().await {
                let paused = paused.clone();
                let answers_held = answers_held.clone();
                pipes.spawn(async move {
                    if let Ok(server) = TcpStream::connect(target).await {
                        let (client_read, client_write) = client.into_split();
                        let (server_read, server_write) = server.into_split();
                        let up = pipe(client_read, server_write, paused);
                        let down = pipe(server_read, client_write, answers_held);
                        tokio::select! {
                            () = up => {}
                            () = down => {}
                        }
                    }
                });
            }
            // Aborting this task drops `pipes`, which closes every connection.
            drop(pipes);
        });
        *self.tasks.lock().unwrap_or_else(PoisonError::into_inner) = Some(tasks);
    }

    /// The outage: the listener closes (new connections are refused) and
    /// every open connection is dropped.
    pub fn cut(&self) {
        let tasks = self
            .tasks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        drop(tasks);
    }

    /// Stops every byte, both ways, on every connection (open ones and
    /// new ones) until [`CutProxy::resume`]; nothing is closed.
    pub fn pause(&self) {
        self.paused.send_replace(true);
        self.answers_held.send_replace(true);
    }

    /// Holds the server's bytes only, on every connection, until
    /// [`CutProxy::resume`]: what clients send reaches the server, and they
    /// wait for its answers.
    pub fn hold_answers(&self) {
        self.answers_held.send_replace(true);
    }

    /// Lets the bytes held since [`CutProxy::pause`] or
    /// [`CutProxy::hold_answers`] flow again.
    pub fn resume(&self) {
        self.paused.send_replace(false);
        self.answers_held.send_replace(false);
    }

    /// The end of the outage: listens again on the same port.
    pub async fn mend(&self) {
        let listener = TcpListener::bind(self.addr)
            .await
            .expect("bind the port again");
        self.serve(listener);
    }
}

/// Copies `from` to `to` until either ends, holding each chunk read while
/// the proxy is paused.
async fn pipe(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    mut paused: watch::Receiver<bool>,
) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        if paused.wait_for(|p| !*p).await.is_err() {
            return;
        }
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        if paused.wait_for(|p| !*p).await.is_err() {
            return;
        }
        if to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}
