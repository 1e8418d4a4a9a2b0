//! A launcher for tests (`test-support` feature): every extension is a
//! [`Peer`](crate::transport::memory::Peer) the test plays, on an in-memory connection.

use crate::launcher::{LaunchFuture, Launched, Launcher, Request, SeenPaths};
use crate::manifest::TransportKind;
use crate::transport::memory::{self, Peer};
use crate::transport::INBOUND_QUEUE;
use std::future::Future;
use std::pin::Pin;

/// What plays one extension: given its name and its end of the connection.
type Play = Box<dyn Fn(String, Peer) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

/// Starts every extension as an in-memory [`Peer`], played by a task of the test's:
/// `play(name, peer)` is spawned once per start (a reload starts it again), with the name
/// in the extension's manifest. The host discovers extensions as always (a manifest per
/// extension); it lists them as stdio extensions, and `hello_ack` tells them `""` for
/// every path.
///
/// ```
/// use serde_json::json;
/// use std::sync::Arc;
/// use zot_host::launcher::Scripted;
/// use zot_host::{Host, HostConfig, ZotHome};
///
/// # #[tokio::main]
/// # async fn main() -> std::io::Result<()> {
/// let root = std::env::temp_dir().join(format!("zot-scripted-{}", std::process::id()));
/// let dir = root.join("echo");
/// std::fs::create_dir_all(&dir)?;
/// std::fs::write(dir.join("extension.json"), r#"{"name": "echo", "exec": "echo"}"#)?;
/// let mut config = HostConfig::new(ZotHome::new(root.join("home")), root.clone());
/// config.explicit = vec![dir];
/// config.installed = false;
///
/// let echo = Scripted::new(|name, mut peer| async move {
///     peer.print(&json!({"type": "hello", "name": name, "version": "1"}).to_string())
///         .await;
///     peer.print(r#"{"type":"register_tool","name":"echo","description":"Echoes.","schema":{"type":"object"}}"#)
///         .await;
///     peer.print(r#"{"type":"ready"}"#).await;
///     while let Some(frame) = peer.recv().await {
///         match frame["type"].as_str() {
///             Some("tool_call") => {
///                 let text = &frame["args"]["text"];
///                 let content = json!([{"type": "text", "text": text}]);
///                 let result = json!({"type": "tool_result", "id": frame["id"], "content": content});
///                 peer.print(&result.to_string()).await;
///             }
///             Some("shutdown") => return peer.exit(0),
///             _ => {}
///         }
///     }
/// });
/// let (host, _events) = Host::with_launcher(config, Arc::new(echo));
/// assert_eq!(host.load().await.ready, ["echo"]);
/// let (_, result) = host.call_tool("echo", json!({"text": "hi"}), None).await.unwrap();
/// assert_eq!(result.content[0]["text"], "hi");
/// host.shutdown().await;
/// std::fs::remove_dir_all(&root)
/// # }
/// ```
pub struct Scripted {
    play: Play,
}

impl Scripted {
    /// Extensions played by `play`.
    pub fn new<F, P>(play: F) -> Scripted
    where
        F: Fn(String, Peer) -> P + Send + Sync + 'static,
        P: Future<Output = ()> + Send + 'static,
    {
        Scripted {
            play: Box::new(move |name, peer| Box::pin(play(name, peer))),
        }
    }
}

impl Launcher for Scripted {
    fn launch<'a>(&'a self, request: Request<'a>) -> LaunchFuture<'a> {
        let name = request.manifest.name.clone();
        Box::pin(async move {
            let (connection, peer) = memory::pair(INBOUND_QUEUE);
            tokio::spawn((self.play)(name, peer));
            Ok(Launched {
                connection,
                transport: TransportKind::Stdio,
                sandbox: None,
                paths: SeenPaths {
                    extension_dir: String::new(),
                    cwd: String::new(),
                    data_dir: String::new(),
                },
            })
        })
    }
}
