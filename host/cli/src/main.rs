//! The `zot` command: `zot ext …` manages and checks extensions, `zot host` is the sidecar.

mod cli;

fn main() -> std::process::ExitCode {
    // The child process that compiles one component under limits, when the host started
    // this program as one; else zot is recorded as its own compiler.
    if let Some(code) = zot_host::compile::child_if_asked() {
        return code;
    }
    cli::main()
}
