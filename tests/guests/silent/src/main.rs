//! A WASI command component that never says `hello`: it waits for a line on stdin that
//! the host never sends before a hello. `zot ext install silent.wasm` must refuse it once
//! the start deadline passes.

fn main() {
    let mut line = String::new();
    let _ = std::io::stdin().read_line(&mut line);
}
