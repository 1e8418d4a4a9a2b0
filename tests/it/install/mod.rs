//! Installing and managing extensions: `install`, `update`, `remove`, `enable`,
//! `disable`, `list`, `info`, `verify`; the first steps a new user takes; records a
//! project cannot forge and writes that follow no link.

mod build;
mod first_steps;
mod manage;
mod records;
