//! The `zot` command: `zot ext …` manages and checks extensions, `zot host` is the sidecar.

mod cli;

fn main() -> std::process::ExitCode {
    one_malloc_arena();
    // The child process that compiles one component under limits, when the host started
    // this program as one; else zot is recorded as its own compiler.
    if let Some(code) = zot_host::compile::child_if_asked() {
        return code;
    }
    cli::main()
}

/// Makes glibc's malloc keep one arena for all threads (as `MALLOC_ARENA_MAX=1`), before
/// any thread starts. With an arena per thread, what a reload frees on one thread stays
/// in that thread's arena: `zot host` grew 12 % in ten minutes of a reload a minute, and
/// stays flat with one (docs/benchmarks.md, "Soak"). Small blocks still come from each
/// thread's own cache, without the lock.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn one_malloc_arena() {
    // SAFETY: mallopt only sets a tunable of the allocator; no thread runs yet.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn one_malloc_arena() {}
