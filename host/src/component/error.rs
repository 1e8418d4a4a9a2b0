//! [`ComponentError`]: why a file cannot be run as a component, or could not be loaded.

use std::fmt;

/// Why a component cannot be loaded, compiled or run; its text is what a start's
/// `errors[].error` and install say after the file's name.
#[derive(Debug, Clone)]
pub enum ComponentError {
    /// The file is no WebAssembly component: what it is instead (`a text file`, …).
    NotAComponent(&'static str),
    /// A core module that is not a WASI preview-1 command: why.
    CoreModule(String),
    /// It does not parse or compile as a component (the parser's or compiler's reason).
    Invalid(String),
    /// It uses a WebAssembly feature this host does not run (what, found before
    /// compiling by [`super::inspect`]).
    Unsupported(String),
    /// Over one of the caps checked before compiling ([`super::inspect`]).
    OverCap {
        what: &'static str,
        value: u64,
        cap: u64,
    },
    /// It exports `zot:extension/guest` only at versions this host does not speak.
    WrongVersion {
        /// The export it has, e.g. `zot:extension/guest@9.9.9`.
        built_for: String,
    },
    /// It exports neither `zot:extension/guest` nor `wasi:cli/run` (what it exports).
    WrongWorld { exports: Vec<String> },
    /// The compile ran out of one of its limits ([`super::compile::CompileLimits`]).
    CompileLimit(CompileLimit),
    /// The compiling child failed otherwise (its words, or how it ended).
    Compiler(String),
    /// No compile may run: the default compiler compiles in a child of this program,
    /// which did not call [`super::compile::child_if_asked`] (the text says what to do).
    NoCompileChild,
    /// A file, the cache or the engine could not be used: the worded reason.
    Io(String),
}

/// Which limit a compile ran out of, with the limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompileLimit {
    /// Wall time, in seconds.
    Wall(u64),
    /// Address space, in MiB.
    Memory(u64),
    /// CPU time, in seconds.
    Cpu(u64),
    /// The wait for a turn to compile, in seconds.
    Turn(u64),
}

impl fmt::Display for ComponentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use ComponentError::*;
        match self {
            NotAComponent(what) => write!(f, "not a WebAssembly component (it is {what})"),
            CoreModule(why) => write!(f, "a core wasm module this host cannot run: {why}"),
            Invalid(why) => write!(f, "not a valid component: {why}"),
            Unsupported(what) => write!(
                f,
                "refused before compiling: it {what}, which this host does not run (see \
                 \"The runtime\" in docs/security.md)"
            ),
            OverCap { what, value, cap } => write!(
                f,
                "refused before compiling: {value} {what} (at most {cap}: see \"Compile \
                 limits\" in docs/sandbox.md)"
            ),
            WrongVersion { built_for } => write!(
                f,
                "the component was built for {built_for}, but this host speaks {}: rebuild \
                 it against wit/zot-extension-{}, or update zot",
                super::wit::spoken(),
                super::wit::NEWEST
            ),
            WrongWorld { exports } => write!(
                f,
                "the component exports neither {} nor wasi:cli/run@0.2 (it exports: {})",
                super::wit::guest_exports(),
                if exports.is_empty() {
                    "nothing".to_string()
                } else {
                    exports.join(", ")
                }
            ),
            CompileLimit(limit) => write!(f, "{limit}"),
            NoCompileChild => f.write_str(
                "not compiled: components are compiled in a child of this program, under \
                 limits, but it did not call zot_host::compile::child_if_asked() first thing \
                 in main (returning the exit code it gives); call it there, or, if this \
                 program runs only components it trusts, choose \
                 HostConfig::compiler = zot_host::compile::Compiler::in_process() (no limits)",
            ),
            Compiler(why) | Io(why) => f.write_str(why),
        }
    }
}

impl fmt::Display for CompileLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CompileLimit::Wall(secs) => write!(
                f,
                "compiling took longer than {secs} s: stopped (ZOT_COMPILE_WALL_SECS raises \
                 the limit)"
            ),
            CompileLimit::Memory(mb) => write!(
                f,
                "compiling needed more than {mb} MiB of memory: stopped \
                 (ZOT_COMPILE_MEMORY_MB raises the limit)"
            ),
            CompileLimit::Cpu(secs) => write!(
                f,
                "compiling used more than {secs} s of CPU time: stopped \
                 (ZOT_COMPILE_CPU_SECS raises the limit)"
            ),
            CompileLimit::Turn(secs) => write!(
                f,
                "waited {secs} s for a turn to compile (at most {} compiles run at once): \
                 stopped",
                super::compile::MAX_COMPILES
            ),
        }
    }
}

impl std::error::Error for ComponentError {}

/// For callers that only print (the CLI's `Result<_, String>`).
impl From<ComponentError> for String {
    fn from(e: ComponentError) -> String {
        e.to_string()
    }
}
