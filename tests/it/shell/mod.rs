//! `zot ext shell` and `zot ext dev`: scripted sessions, the interactive terminal
//! (through a pseudo-terminal), and the dev loop's rebuild and reload.

mod dev;
mod session;
mod terminal;
