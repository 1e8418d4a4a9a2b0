//! A local HTTP server for the tests that give a component the network.

use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The request target (`/path?query`) of a request head.
fn request_target(head: &[u8]) -> String {
    let head = String::from_utf8_lossy(head);
    head.split_whitespace().nth(1).unwrap_or("").to_string()
}

/// A status code and a body.
pub type Reply = (u16, String);

/// A local HTTP server on `127.0.0.1:<ephemeral port>`: answers each connection with what
/// its handler returns for the request target, recording the targets; it stops by itself
/// after `max` connections or a minute, whichever comes first.
pub struct LocalServer {
    pub port: u16,
    targets: Arc<Mutex<Vec<String>>>,
}

impl LocalServer {
    /// Answers every request with `200` and `body`.
    pub fn text(body: &'static str, max: usize) -> LocalServer {
        LocalServer::start(max, move |_| (200, body.to_string()))
    }

    /// Answers each request with `handler(target)`.
    pub fn start(max: usize, handler: impl Fn(&str) -> Reply + Send + 'static) -> LocalServer {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let targets = Arc::new(Mutex::new(Vec::new()));
        let seen = targets.clone();
        std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(60);
            while seen.lock().unwrap().len() < max && Instant::now() < deadline {
                let mut stream = match listener.accept() {
                    Ok((stream, _)) => stream,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        std::thread::sleep(Duration::from_millis(10));
                        continue;
                    }
                    Err(_) => return,
                };
                let _ = stream.set_nonblocking(false);
                let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
                let mut request = Vec::new();
                let mut buf = [0u8; 1024];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                let target = request_target(&request);
                let (status, body) = handler(&target);
                seen.lock().unwrap().push(target);
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status} X\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\
                     Connection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        LocalServer { port, targets }
    }

    /// How many requests it answered.
    pub fn hits(&self) -> usize {
        self.targets.lock().unwrap().len()
    }

    /// The request targets, in order.
    pub fn targets(&self) -> Vec<String> {
        self.targets.lock().unwrap().clone()
    }
}
