//! The `zot` command: `zot ext …` manages and checks extensions, `zot host` is the sidecar,
//! `zot mcp` an MCP server. [`app`] is the command tree; each subcommand is a module of
//! [`commands`] (none imports another); the flags several share are [`flags`]'s, what they
//! print [`output`]'s.
//!
//! Whatever is printed for people goes through [`say!`] (stdout) or [`esay!`] (stderr),
//! which show the whole text with [`zot_host::terminal_text::multi_line`]: nothing from
//! outside (a manifest, a frame, a file name, an error quoting them) drives the terminal.
//! JSON output is printed as serde writes it, its data exact (`terminal::print_line`).
//! A command that fails returns an [`output::error::CliError`]; [`app::main`] prints it,
//! the one place that writes `zot: <what>: <why>`.

/// `println!` for people: the text shown with `terminal_text::multi_line`; a closed
/// stdout ends the program quietly (`terminal::print_line`).
macro_rules! say {
    () => { $crate::output::terminal::print_line("") };
    ($($arg:tt)*) => {
        $crate::output::terminal::print_line(
            &zot_host::terminal_text::multi_line(&format!($($arg)*)),
        )
    };
}

/// `eprintln!` for people: the text shown with `terminal_text::multi_line`.
macro_rules! esay {
    ($($arg:tt)*) => {
        $crate::output::terminal::eprint_line(
            &zot_host::terminal_text::multi_line(&format!($($arg)*)),
        )
    };
}

mod app;
mod commands;
mod complete;
mod flags;
mod output;
mod records;
mod runtime;

fn main() -> std::process::ExitCode {
    one_malloc_arena();
    // The child process that compiles one component under limits, when the host started
    // this program as one; else zot is recorded as its own compiler.
    if let Some(code) = zot_host::compile::child_if_asked() {
        return code;
    }
    app::main()
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
