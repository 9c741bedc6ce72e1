//! A TCP proxy on loopback that a test can cut and mend: a database
//! outage (every connection dropped, new ones refused) without touching
//! the machine's shared PostgreSQL server.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;

/// The proxy: forwards each connection to `target` while it is mended.
pub struct CutProxy {
    addr: SocketAddr,
    target: SocketAddr,
    tasks: Arc<Mutex<Option<JoinSet<()>>>>,
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
        tasks.spawn(async move {
            let mut pipes = JoinSet::new();
            while let Ok((mut client, _)) = listener.accept().await {
                pipes.spawn(async move {
                    if let Ok(mut server) = TcpStream::connect(target).await {
                        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
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

    /// The end of the outage: listens again on the same port.
    pub async fn mend(&self) {
        let listener = TcpListener::bind(self.addr)
            .await
            .expect("bind the port again");
        self.serve(listener);
    }
}
