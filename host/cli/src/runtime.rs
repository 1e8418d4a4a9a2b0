//! The async runtime of a command that runs outside one (`install`, `update`).

/// A runtime on this thread, for one command.
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start a runtime: {e}"))
}
