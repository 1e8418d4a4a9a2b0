//! Moving frames: lines in from the host, lines out to it. The extension's logic never
//! sees which target it was built for; only this module (and [`crate::http`]) does.
//!
//! Both targets speak over stdin/stdout: natively as a subprocess, in the sandbox as a
//! WASI command component whose stdin/stdout the host feeds with the same frames.

#[cfg(not(target_os = "wasi"))]
mod native;
#[cfg(target_os = "wasi")]
mod wasi;

use zot_protocol::{Line, LineDecoder};

/// The longest line accepted from the host, as the host's own default cap.
const MAX_LINE: usize = zot_protocol::DEFAULT_MAX_FRAME;

/// Where frames come from and go to.
pub(crate) trait Transport {
    /// The next line, waiting for it; `None` once the host closed the stream.
    fn recv(&mut self) -> Option<Vec<u8>>;
    /// The next line if one has already arrived; never waits.
    fn try_recv(&mut self) -> Option<Vec<u8>>;
    /// Writes one line (a newline is added). An error means the host is gone.
    fn send(&mut self, line: &[u8]) -> std::io::Result<()>;
}

/// The process's stdin/stdout.
pub(crate) fn stdio() -> Box<dyn Transport> {
    #[cfg(not(target_os = "wasi"))]
    return Box::new(native::Stdio::start());
    #[cfg(target_os = "wasi")]
    return Box::new(wasi::Stdio::new());
}

/// One write per frame (the frame and its newline together), flushed. Standard output
/// is the host's pipe natively and the host's frame reader in the sandbox.
fn write_line(line: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut framed = Vec::with_capacity(line.len() + 1);
    framed.extend_from_slice(line);
    framed.push(b'\n');
    let mut out = std::io::stdout().lock();
    out.write_all(&framed)?;
    out.flush()
}

/// Splits bytes into lines, reporting (on stderr, the extension's log) what it skips.
pub(crate) struct Lines(LineDecoder);

impl Lines {
    pub(crate) fn new() -> Self {
        Lines(LineDecoder::new(MAX_LINE))
    }

    /// The next complete line in `input`, consuming what it used.
    pub(crate) fn next(&mut self, input: &mut &[u8]) -> Option<Vec<u8>> {
        while let Some(line) = self.0.decode(input) {
            if let Some(line) = usable(line) {
                return Some(line);
            }
        }
        None
    }

    /// A last line without a newline at the end of the stream.
    pub(crate) fn finish(&mut self) -> Option<Vec<u8>> {
        self.0.finish().and_then(usable)
    }
}

fn usable(line: Line) -> Option<Vec<u8>> {
    match line {
        Line::Frame(bytes) => Some(bytes),
        Line::Oversize { len, .. } => {
            eprintln!("zot-ext: skipped a {len}-byte line from the host (over {MAX_LINE} bytes)");
            None
        }
    }
}

/// Frames in memory, for the SDK's own tests.
#[cfg(test)]
pub(crate) mod memory {
    use std::cell::RefCell;
    use std::collections::VecDeque;
    use std::rc::Rc;

    /// Lines the host will send, and every line the extension wrote.
    #[derive(Default, Clone)]
    pub(crate) struct Memory {
        pub(crate) input: Rc<RefCell<VecDeque<Vec<u8>>>>,
        pub(crate) output: Rc<RefCell<Vec<serde_json::Value>>>,
        /// Lines that become visible to `try_recv` only (arrive "during" a call).
        pub(crate) during: Rc<RefCell<VecDeque<Vec<u8>>>>,
    }

    impl super::Transport for Memory {
        fn recv(&mut self) -> Option<Vec<u8>> {
            self.input.borrow_mut().pop_front()
        }

        fn try_recv(&mut self) -> Option<Vec<u8>> {
            self.during.borrow_mut().pop_front()
        }

        fn send(&mut self, line: &[u8]) -> std::io::Result<()> {
            let value = serde_json::from_slice(line).expect("the SDK writes JSON");
            self.output.borrow_mut().push(value);
            Ok(())
        }
    }
}
