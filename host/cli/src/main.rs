//! The `zot` command: `zot ext …` manages and checks extensions, `zot host` is the sidecar.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
