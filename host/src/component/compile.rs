//! Compiling components without letting a hostile one hurt the host. The caps of
//! [`super::inspect()`] refuse a component built to be expensive before any work is
//! done; what passes is compiled in a child process (this program again, as
//! `<program> __compile …`) under an address-space limit, a CPU-time limit and a wall
//! deadline ([`CompileLimits`]), which writes the artifact into the compilation cache
//! for the host to load. The child is given the very bytes the host hashed, on its stdin
//! (it never opens the component's file), so what is compiled is what a grant and the
//! cache key name. At most [`MAX_COMPILES`] compiles run at once in one process; the
//! others wait their turn. A compile that fails or runs out fails that one extension,
//! with the reason.
//!
//! A program that embeds the host calls [`child_if_asked`] first thing in its `main`: in
//! a compile child it compiles and gives the exit code, otherwise it records that this
//! program can be its own compiler. Without that call the default [`Compiler`] refuses
//! to compile (it fails closed, saying what to do); compiling in this process, without
//! the limits, is only ever chosen by name ([`Compiler::in_process`]).

use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use super::{Code, CompileLimit, ComponentError};
use wasmtime::Engine;

/// The first argument that makes this program a compiler: `<program> __compile …`.
const SUBCOMMAND: &str = "__compile";
/// The environment variable the host sets on the compile child, so that an embedder's
/// own first argument `__compile` is never taken for a compile.
const CHILD_MARKER: &str = "ZOT_COMPILE_CHILD";

/// Whether this program called [`child_if_asked`], so it can compile in a child of itself.
static CAN_COMPILE_IN_CHILD: AtomicBool = AtomicBool::new(false);

/// What a program that embeds the host calls first thing in its `main`:
///
/// ```no_run
/// fn main() -> std::process::ExitCode {
///     if let Some(code) = zot_host::compile::child_if_asked() {
///         return code;
///     }
///     // ... the program ...
///     std::process::ExitCode::SUCCESS
/// }
/// ```
///
/// When the host started this process to compile a component (`<program> __compile …`,
/// with its marker in the environment), it compiles under the limits it was given and
/// returns the exit code for `main` to return. Otherwise it records that this program
/// can act as its own compiler, which the default [`Compiler`] needs, and returns `None`.
pub fn child_if_asked() -> Option<ExitCode> {
    let args: Vec<OsString> = std::env::args_os().collect();
    if is_compile_child(&args, std::env::var_os(CHILD_MARKER).as_deref()) {
        return Some(child_main(&args[2..]));
    }
    CAN_COMPILE_IN_CHILD.store(true, Ordering::SeqCst);
    None
}

/// Whether a process with these arguments and this value of [`CHILD_MARKER`] is a
/// compile child: both the subcommand and the marker, the one the host sets.
fn is_compile_child(args: &[OsString], marker: Option<&std::ffi::OsStr>) -> bool {
    let subcommand = args.get(1).is_some_and(|a| a == SUBCOMMAND);
    match (subcommand, marker) {
        (true, Some(marker)) => marker == "1",
        (true, None) => false,
        (false, Some(_)) => false,
        (false, None) => false,
    }
}

/// At most this many compiles run at once in one process (each may use
/// [`CompileLimits::memory_mb`] and a core); the others wait their turn, at most
/// [`QUEUE_WAITS`] times the wall limit.
pub const MAX_COMPILES: usize = 2;
/// How many wall limits a compile waits for its turn before it fails.
pub const QUEUE_WAITS: u32 = 8;
/// How many more seconds of CPU the hard limit (SIGKILL) allows than the soft one
/// (SIGXCPU), so that the two are told apart.
const CPU_HARD_EXTRA: u64 = 2;

/// Limits on one compile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct CompileLimits {
    /// Address space of the compiling process, in MiB.
    pub memory_mb: u64,
    /// CPU time it may use (all its threads together).
    pub cpu: Duration,
    /// How long the host waits for it.
    pub wall: Duration,
}

/// 2 GiB, 60 s of CPU, 60 s.
impl Default for CompileLimits {
    fn default() -> Self {
        CompileLimits {
            memory_mb: 2048,
            cpu: Duration::from_secs(60),
            wall: Duration::from_secs(60),
        }
    }
}

impl CompileLimits {
    /// The defaults, each replaced by `ZOT_COMPILE_MEMORY_MB`, `ZOT_COMPILE_CPU_SECS` or
    /// `ZOT_COMPILE_WALL_SECS` when set; a value that is not a positive number is an
    /// error naming the variable.
    pub fn from_env() -> Result<CompileLimits, String> {
        let var = |name: &str, default: u64| match std::env::var(name) {
            Err(_) => Ok(default),
            Ok(v) => v
                .trim()
                .parse::<u64>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| format!("{name}={v:?} is not a positive whole number")),
        };
        let d = CompileLimits::default();
        Ok(CompileLimits {
            memory_mb: var("ZOT_COMPILE_MEMORY_MB", d.memory_mb)?,
            cpu: Duration::from_secs(var("ZOT_COMPILE_CPU_SECS", d.cpu.as_secs())?),
            wall: Duration::from_secs(var("ZOT_COMPILE_WALL_SECS", d.wall.as_secs())?),
        })
    }
}

/// How components are compiled: where ([`CompileMode`]), and the limits of a child.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Compiler {
    /// Where it compiles.
    pub mode: CompileMode,
    /// The limits of a compile child; with [`CompileMode::InProcess`], only how long a
    /// compile waits for its turn (their wall limit times `QUEUE_WAITS`).
    pub limits: CompileLimits,
}

/// Where components are compiled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompileMode {
    /// In a child of this program, under the limits. This program must have called
    /// [`child_if_asked`] first thing in its `main`; if it did not, every compile fails
    /// closed, saying so (`ComponentError::NoCompileChild`).
    ThisProgram,
    /// In a child `<program> __compile …`, under the limits: a program that hands those
    /// arguments to [`child_if_asked`] (the `zot` binary, or a wrapper that runs it).
    Program(PathBuf),
    /// In this process: the caps of `super::inspect()` apply, the limits do not, so a
    /// component built to be expensive to compile can exhaust this process's memory or
    /// CPU. Only for a program that runs only components it trusts (and this crate's
    /// unit tests).
    InProcess,
}

/// In a child of this program with the default limits: what [`HostConfig::new`]
/// chooses. It needs [`child_if_asked`] called first thing in `main`; without it,
/// compiling fails closed with what to do.
///
/// [`HostConfig::new`]: crate::HostConfig::new
impl Default for Compiler {
    fn default() -> Self {
        Compiler {
            mode: CompileMode::ThisProgram,
            limits: CompileLimits::default(),
        }
    }
}

impl Compiler {
    /// In a child of this program, with limits from the environment
    /// ([`CompileLimits::from_env`]): what the `zot` binary uses. Like the default, it
    /// needs [`child_if_asked`] called first thing in `main`.
    pub fn this_program() -> Result<Compiler, String> {
        Ok(Compiler {
            mode: CompileMode::ThisProgram,
            limits: CompileLimits::from_env()?,
        })
    }

    /// In this process, without the limits ([`CompileMode::InProcess`]): only for a
    /// program that runs only components it trusts.
    pub fn in_process() -> Compiler {
        Compiler {
            mode: CompileMode::InProcess,
            limits: CompileLimits::default(),
        }
    }

    /// The program to run as the compile child: `None` to compile in this process, or
    /// why there is none (`hooked`: whether [`child_if_asked`] was called).
    fn child_program(&self, hooked: bool) -> Result<Option<PathBuf>, ComponentError> {
        match &self.mode {
            CompileMode::ThisProgram => match hooked {
                true => std::env::current_exe().map(Some).map_err(|e| {
                    ComponentError::Io(format!("cannot find this program to compile with: {e}"))
                }),
                false => Err(ComponentError::NoCompileChild),
            },
            CompileMode::Program(program) => Ok(Some(program.clone())),
            CompileMode::InProcess => Ok(None),
        }
    }

    /// Compiles `bytes` (whose hex SHA-256 is `sha256`), writing the artifact to the
    /// cache entry `entry`: the component, or why not. Waits for its turn
    /// ([`MAX_COMPILES`]). Blocks: call it off the async runtime.
    pub(crate) fn compile(
        &self,
        engine: &Engine,
        bytes: &[u8],
        sha256: &str,
        entry: &Path,
    ) -> Result<Code, ComponentError> {
        let program = self.child_program(CAN_COMPILE_IN_CHILD.load(Ordering::SeqCst))?;
        super::inspect(bytes).within_caps()?;
        let _turn = Turn::take(self.limits.wall * QUEUE_WAITS)?;
        let Some(program) = program else {
            let code = Code::compile(engine, bytes)?;
            if let Ok(artifact) = code.serialize() {
                let _ = super::entry::store(entry, sha256, &artifact);
            }
            return Ok(code);
        };
        self.in_child(&program, bytes, sha256, entry)?;
        super::entry::read_entry(engine, entry, sha256).map_err(|e| match e {
            Some(why) => ComponentError::Io(why),
            None => ComponentError::Compiler("the compiler wrote no artifact".into()),
        })
    }

    /// Runs `program __compile MEMORY_MB CPU_SECS SHA256 ENTRY` with `bytes` on its stdin
    /// and waits at most the wall deadline: `Ok` once it wrote the entry, else why it did
    /// not, in words.
    fn in_child(
        &self,
        program: &Path,
        bytes: &[u8],
        sha256: &str,
        entry: &Path,
    ) -> Result<(), ComponentError> {
        let limits = self.limits;
        if let Some(dir) = entry.parent() {
            std::fs::create_dir_all(dir).map_err(|e| {
                ComponentError::Io(format!("cannot create the cache {}: {e}", dir.display()))
            })?;
        }
        let mut child = Command::new(program)
            .arg(SUBCOMMAND)
            .arg(limits.memory_mb.to_string())
            .arg(limits.cpu.as_secs().to_string())
            .arg(sha256)
            .arg(entry)
            .env(CHILD_MARKER, "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| {
                ComponentError::Io(format!(
                    "cannot start the compiler {}: {e}",
                    program.display()
                ))
            })?;
        let stderr = child.stderr.take().map(|mut pipe| {
            std::thread::spawn(move || {
                let mut kept = Vec::new();
                let _ = (&mut pipe).take(16 * 1024).read_to_end(&mut kept);
                // Drain the rest so the child never blocks on a full pipe.
                let _ = std::io::copy(&mut pipe, &mut std::io::sink());
                String::from_utf8_lossy(&kept).trim().to_string()
            })
        });
        let stdin = child.stdin.take();
        let ended = std::thread::scope(|scope| {
            // The bytes hashed, not the file (which may have changed since). The write
            // ends when the child has read them or has died (the pipe closes).
            if let Some(mut stdin) = stdin {
                scope.spawn(move || {
                    let _ = stdin.write_all(bytes);
                });
            }
            wait(&mut child, Instant::now() + limits.wall)
        })?;
        let said = stderr.and_then(|t| t.join().ok()).unwrap_or_default();
        let Some((status, cpu_used)) = ended else {
            return Err(ComponentError::CompileLimit(CompileLimit::Wall(
                limits.wall.as_secs(),
            )));
        };
        let out_of_memory = ComponentError::CompileLimit(CompileLimit::Memory(limits.memory_mb));
        let out_of_cpu = ComponentError::CompileLimit(CompileLimit::Cpu(limits.cpu.as_secs()));
        let killed = |signal: i32| {
            let mut text = format!("the compiler was killed by signal {signal}");
            if !said.is_empty() {
                text.push_str(": ");
                text.push_str(&said);
            }
            ComponentError::Compiler(text)
        };
        match (status.code(), status.signal()) {
            (Some(0), _) => Ok(()),
            _ if said.contains("memory allocation") || said.contains("out of memory") => {
                Err(out_of_memory)
            }
            // The soft limit's signal: the CPU limit it is.
            (_, Some(libc::SIGXCPU)) => Err(out_of_cpu),
            // The hard limit's, only once the CPU time used passed the soft one (whose
            // SIGXCPU it survived); else it came from outside.
            (_, Some(libc::SIGKILL)) if cpu_used > limits.cpu => Err(out_of_cpu),
            (_, Some(signal)) => Err(killed(signal)),
            _ if said.is_empty() => Err(ComponentError::Compiler(format!(
                "the compiler failed ({status})"
            ))),
            _ => Err(ComponentError::Compiler(said)),
        }
    }
}

/// Waits for `child` until `deadline`, then kills it: its status and the CPU time it
/// used, or `None` if it was killed at the deadline.
fn wait(
    child: &mut std::process::Child,
    deadline: Instant,
) -> Result<Option<(ExitStatus, Duration)>, ComponentError> {
    let pid = child.id() as libc::pid_t;
    loop {
        let mut status = 0;
        // SAFETY: an all-zero rusage is a valid value for wait4 to fill.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: wait4 on our own child, with pointers to the locals above.
        match unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) } {
            0 if Instant::now() >= deadline => {
                let _ = child.kill();
                // SAFETY: as above; it was killed, so this returns at once.
                unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
                return Ok(None);
            }
            0 => std::thread::sleep(Duration::from_millis(10)),
            n if n == pid => {
                let time = |t: libc::timeval| {
                    Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
                };
                let cpu = time(usage.ru_utime) + time(usage.ru_stime);
                return Ok(Some((ExitStatus::from_raw(status), cpu)));
            }
            _ => {
                let e = std::io::Error::last_os_error();
                if e.kind() != std::io::ErrorKind::Interrupted {
                    // Not left running (nor its stdin's writer waiting on it).
                    let _ = child.kill();
                    return Err(ComponentError::Io(format!(
                        "cannot wait for the compiler: {e}"
                    )));
                }
            }
        }
    }
}

/// A turn to compile: one of [`MAX_COMPILES`], given back when dropped.
struct Turn;

static RUNNING: Mutex<usize> = Mutex::new(0);
static FREED: Condvar = Condvar::new();

impl Turn {
    /// Waits at most `patience` for a turn.
    fn take(patience: Duration) -> Result<Turn, ComponentError> {
        let running = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
        let (mut running, waited) = FREED
            .wait_timeout_while(running, patience, |n| *n >= MAX_COMPILES)
            .unwrap_or_else(|e| e.into_inner());
        if waited.timed_out() && *running >= MAX_COMPILES {
            return Err(ComponentError::CompileLimit(CompileLimit::Turn(
                patience.as_secs(),
            )));
        }
        *running += 1;
        Ok(Turn)
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        let mut running = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
        *running -= 1;
        FREED.notify_one();
    }
}

/// What `<program> __compile MEMORY_MB CPU_SECS SHA256 ENTRY` runs (`args` after the
/// subcommand): limits this process, reads the component from stdin (it must have the
/// SHA-256 SHA256), compiles it and writes the cache entry ENTRY. Exit 0, or the reason
/// on stderr and exit 1.
fn child_main(args: &[OsString]) -> ExitCode {
    match compile_here(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}

fn compile_here(args: &[OsString]) -> Result<(), String> {
    let [memory_mb, cpu_secs, sha256, entry] = args else {
        return Err(format!(
            "usage: <program> {SUBCOMMAND} MEMORY_MB CPU_SECS SHA256 ENTRY, the component on \
             stdin (run by the zot host library itself)"
        ));
    };
    let number = |v: &OsString| {
        v.to_str()
            .and_then(|s| s.parse::<u64>().ok())
            .ok_or_else(|| format!("{v:?} is not a number"))
    };
    // Dies with the host: a compile nobody waits for stops at once.
    #[cfg(target_os = "linux")]
    // SAFETY: prctl(PR_SET_PDEATHSIG) only sets a flag of this process.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
    }
    limit(
        libc::RLIMIT_AS,
        number(memory_mb)?.saturating_mul(1 << 20),
        0,
    )?;
    // The soft limit sends SIGXCPU, which ends this process (its default action, restored
    // here in case it was inherited ignored); the hard one, later, SIGKILL.
    // SAFETY: restoring a signal's default action changes only this process.
    unsafe {
        libc::signal(libc::SIGXCPU, libc::SIG_DFL);
    }
    limit(libc::RLIMIT_CPU, number(cpu_secs)?, CPU_HARD_EXTRA)?;
    let sha256 = sha256.to_str().unwrap_or_default();
    let mut bytes = Vec::new();
    std::io::stdin()
        .lock()
        .take(super::inspect::MAX_COMPONENT_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read the component from stdin: {e}"))?;
    if super::entry::sha256_hex(&bytes) != sha256 {
        return Err(format!(
            "the component read from stdin is not the one with SHA-256 {sha256}"
        ));
    }
    super::inspect(&bytes).within_caps()?;
    let entry = Path::new(entry);
    let engine = super::compile_engine()?;
    let artifact = Code::compile(&engine, &bytes)?
        .serialize()
        .map_err(|e| format!("cannot serialise the compiled code: {e:#}"))?;
    super::entry::store(entry, sha256, &artifact)
        .map_err(|e| format!("cannot write {}: {e}", entry.display()))
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
type Resource = libc::__rlimit_resource_t;
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
type Resource = libc::c_int;

/// Sets `resource`'s soft limit to `value` and its hard limit to `value + extra`.
fn limit(resource: Resource, value: u64, extra: u64) -> Result<(), String> {
    let limits = libc::rlimit {
        rlim_cur: value,
        rlim_max: value.saturating_add(extra),
    };
    // SAFETY: setrlimit reads the struct it is given and changes only this process.
    if unsafe { libc::setrlimit(resource, &limits) } == 0 {
        Ok(())
    } else {
        Err(format!(
            "cannot limit the compile: {}",
            std::io::Error::last_os_error()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// The smallest component: its header, no sections.
    const EMPTY_COMPONENT: &[u8] = b"\0asm\x0d\0\x01\0";

    /// A scratch directory of this test process.
    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("zot-compile-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    /// Without [`child_if_asked`] (no test of this crate calls it), the default compiler,
    /// the one `HostConfig::new` chooses, and `this_program` compile nothing: they fail
    /// closed, saying to call the hook or to choose `in_process` knowingly.
    #[test]
    fn the_default_without_the_hook_refuses_and_says_what_to_do() {
        assert!(!CAN_COMPILE_IN_CHILD.load(Ordering::SeqCst));
        assert_eq!(
            crate::HostConfig::new(crate::paths::ZotHome::new("/nonexistent"), "/".into()).compiler,
            Compiler {
                mode: CompileMode::ThisProgram,
                limits: CompileLimits::default(),
            }
        );
        let engine = super::super::compile_engine().unwrap();
        let dir = scratch("refused");
        let entry = dir.join("cache/entry.cwasm");
        let sha = super::super::entry::sha256_hex(EMPTY_COMPONENT);
        for compiler in [Compiler::default(), Compiler::this_program().unwrap()] {
            let error = match compiler.compile(&engine, EMPTY_COMPONENT, &sha, &entry) {
                Ok(_) => panic!("{compiler:?} compiled without the hook"),
                Err(e) => e,
            };
            assert!(matches!(error, ComponentError::NoCompileChild), "{error:?}");
            let said = error.to_string();
            for words in [
                "zot_host::compile::child_if_asked() first thing in main",
                "Compiler::in_process()",
            ] {
                assert!(said.contains(words), "{said}");
            }
        }
        assert!(!dir.exists(), "nothing was compiled nor cached");
    }

    /// `in_process` compiles here, within the caps, and caches what it compiled.
    #[test]
    fn in_process_compiles_here() {
        let engine = super::super::compile_engine().unwrap();
        let dir = scratch("in-process");
        let entry = dir.join("entry.cwasm");
        let sha = super::super::entry::sha256_hex(EMPTY_COMPONENT);
        let compiler = Compiler::in_process();
        assert_eq!(compiler.child_program(false).unwrap(), None);
        compiler
            .compile(&engine, EMPTY_COMPONENT, &sha, &entry)
            .unwrap();
        assert!(entry.is_file());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Which program compiles: this one once the hook was called, a given one always,
    /// none in process.
    #[test]
    fn the_child_program_of_each_mode() {
        let this = std::env::current_exe().unwrap();
        let default = Compiler::default();
        assert_eq!(default.child_program(true).unwrap(), Some(this));
        let given = Compiler {
            mode: CompileMode::Program("/opt/agent".into()),
            limits: CompileLimits::default(),
        };
        for hooked in [true, false] {
            assert_eq!(
                given.child_program(hooked).unwrap(),
                Some(PathBuf::from("/opt/agent"))
            );
            assert_eq!(Compiler::in_process().child_program(hooked).unwrap(), None);
        }
    }

    /// A compile child is told by its first argument and the host's marker together: an
    /// embedder's own argument `__compile`, or the marker alone, is no compile.
    #[test]
    fn a_compile_child_needs_the_subcommand_and_the_marker() {
        let args = |a: &[&str]| a.iter().map(OsString::from).collect::<Vec<_>>();
        let marker = Some(std::ffi::OsStr::new("1"));
        let compile = args(&["agent", "__compile", "2048", "60", "sha", "entry"]);
        assert!(is_compile_child(&compile, marker));
        assert!(!is_compile_child(&compile, None));
        assert!(!is_compile_child(&compile, Some(std::ffi::OsStr::new("0"))));
        assert!(!is_compile_child(&args(&["agent", "chat"]), marker));
        assert!(!is_compile_child(&args(&["agent"]), marker));
        assert!(!is_compile_child(
            &args(&["agent", "x", "__compile"]),
            marker
        ));
    }

    /// However many compiles start at once, at most [`MAX_COMPILES`] hold a turn.
    #[test]
    fn at_most_max_compiles_at_once() {
        static NOW: AtomicUsize = AtomicUsize::new(0);
        static MOST: AtomicUsize = AtomicUsize::new(0);
        let threads: Vec<_> = (0..6)
            .map(|_| {
                std::thread::spawn(|| {
                    let _turn = Turn::take(Duration::from_secs(60)).unwrap();
                    let now = NOW.fetch_add(1, Ordering::SeqCst) + 1;
                    MOST.fetch_max(now, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(50));
                    NOW.fetch_sub(1, Ordering::SeqCst);
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let most = MOST.load(Ordering::SeqCst);
        assert!((1..=MAX_COMPILES).contains(&most), "{most} at once");
    }
}
