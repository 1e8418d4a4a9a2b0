//! `zot ext shell` on a pseudo-terminal (expectrl), its transcript kept: a test that
//! fails while one is open prints what the terminal showed and the extension logs, so a
//! failure seen once on a busy machine can be read instead of guessed at.

use expectrl::session::{OsProcess, OsStream};
use expectrl::stream::log::LogStream;
use std::io::Write;
use std::ops::{Deref, DerefMut};
use std::path::PathBuf;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long each `expect` waits unless the test sets another.
const EXPECT_TIMEOUT: Duration = Duration::from_secs(30);
/// How much of the transcript a failure prints.
const TRANSCRIPT_TAIL: usize = 8192;

/// The session's reads and writes, as expectrl logs them.
#[derive(Clone, Default)]
pub struct Transcript(Arc<Mutex<Vec<u8>>>);

impl Write for Transcript {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A session whose stream is logged into a [`Transcript`].
pub type Session = expectrl::Session<OsProcess, LogStream<OsStream, Transcript>>;

/// A shell on a pseudo-terminal; on a failing test, its transcript and the logs under
/// `home` are printed when it is dropped.
pub struct Pty {
    session: Session,
    transcript: Transcript,
    home: PathBuf,
}

impl Pty {
    /// Spawns `cmd` (whose `ZOT_HOME` is `home`) on a pseudo-terminal.
    pub fn spawn(cmd: Command, home: PathBuf) -> Pty {
        let session = expectrl::Session::spawn(cmd).expect("spawn in a pty");
        let transcript = Transcript::default();
        let mut session = expectrl::session::log(session, transcript.clone()).expect("log the pty");
        session.set_expect_timeout(Some(EXPECT_TIMEOUT));
        Pty {
            session,
            transcript,
            home,
        }
    }
}

impl Deref for Pty {
    type Target = Session;

    fn deref(&self) -> &Session {
        &self.session
    }
}

impl DerefMut for Pty {
    fn deref_mut(&mut self) -> &mut Session {
        &mut self.session
    }
}

impl Drop for Pty {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            return;
        }
        let text = {
            let t = self.transcript.0.lock().unwrap_or_else(|e| e.into_inner());
            let start = t.len().saturating_sub(TRANSCRIPT_TAIL);
            String::from_utf8_lossy(&t[start..]).into_owned()
        };
        let mut s = format!("\n--- the pty's transcript (tail):\n{text}");
        if let Ok(dir) = std::fs::read_dir(self.home.join("logs")) {
            for e in dir.flatten() {
                let log = std::fs::read(e.path()).unwrap_or_default();
                let start = log.len().saturating_sub(2048);
                s.push_str(&format!(
                    "\n--- {} (tail):\n{}",
                    e.path().display(),
                    String::from_utf8_lossy(&log[start..])
                ));
            }
        }
        eprintln!("{s}");
    }
}
