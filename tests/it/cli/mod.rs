//! `zot ext` commands as a user runs them: `call` and `invoke`, their argument checks,
//! `check`, `new`, completion and man pages, the load and run-grant flags, logs, and
//! every outside string made safe for a terminal.

mod call;
mod call_checks;
mod check;
mod completion;
mod load_flags;
mod logs;
mod new;
mod terminal_safety;
