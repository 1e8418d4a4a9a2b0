//! The WASI context a [`Policy`] allows: no args, no inherited environment or stdio, no
//! sockets, no name lookups; the granted directories and variables only, around the
//! stdio streams the transport hands over.

use super::{Policy, DATA_MOUNT};
use wasmtime_wasi::cli::{StdinStream, StdoutStream};
use wasmtime_wasi::p1::WasiP1Ctx;
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder};

/// A WASI context prepared for a [`Policy`] (directories checked and opened), waiting
/// for its stdio: [`PreparedWasi::build`].
pub struct PreparedWasi(WasiCtxBuilder);

/// The guest's standard streams, as the transport provides them; `None`: an empty
/// stdin, a discarded stdout or stderr.
#[derive(Default)]
pub struct Stdio {
    pub stdin: Option<Box<dyn StdinStream + Sync>>,
    pub stdout: Option<Box<dyn StdoutStream + Sync>>,
    pub stderr: Option<Box<dyn StdoutStream + Sync>>,
}

impl Policy {
    /// Prepares the WASI context of this policy: creates the data directory and opens
    /// the granted directories, so what cannot be granted fails before the guest starts.
    pub fn wasi(&self) -> std::io::Result<PreparedWasi> {
        let mut b = WasiCtxBuilder::new();
        b.allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false)
            .socket_addr_check(|_, _| Box::pin(async { false }))
            // File operations run on the guest's own task instead of a `spawn_blocking`
            // round trip each: every one is a single syscall on a local file of at most
            // 64 KiB (wasmtime caps reads), and it cuts an SDK tool call that reads one
            // small file from ~205 µs to ~37 µs (benches/roundtrip.rs, examples/todo).
            .allow_blocking_current_thread(true);
        for (k, v) in &self.env {
            b.env(k, v);
        }
        if let Some(dir) = &self.data_dir {
            std::fs::create_dir_all(dir)?;
            b.preopened_dir(dir, DATA_MOUNT, FsPerms::ReadWrite)
                .map_err(std::io::Error::other)?;
        }
        if let Some(dir) = &self.cwd {
            b.preopened_dir(dir, dir.to_string_lossy(), FsPerms::ReadOnly)
                .map_err(std::io::Error::other)?;
        }
        Ok(PreparedWasi(b))
    }
}

impl PreparedWasi {
    /// The context, with the transport's `stdio`.
    pub fn build(self, stdio: Stdio) -> WasiCtx {
        self.with(stdio).build()
    }

    /// A preview-1 module's context, with the transport's `stdio`.
    pub fn build_p1(self, stdio: Stdio) -> WasiP1Ctx {
        self.with(stdio).build_p1()
    }

    fn with(mut self, stdio: Stdio) -> WasiCtxBuilder {
        let b = &mut self.0;
        if let Some(stdin) = stdio.stdin {
            b.stdin(stdin);
        }
        if let Some(stdout) = stdio.stdout {
            b.stdout(stdout);
        }
        if let Some(stderr) = stdio.stderr {
            b.stderr(stderr);
        }
        self.0
    }
}
