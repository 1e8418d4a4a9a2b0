//! Compiling components without letting a hostile one hurt the host. [`caps`] refuses a
//! component built to be expensive before any work is done; what passes is compiled in a
//! child process (the `zot` binary again, as `zot __compile`) under an address-space
//! limit, a CPU-time limit and a wall deadline ([`CompileLimits`]), which writes the
//! artifact into the compilation cache for the host to load. A compile that fails or runs
//! out fails that one extension, with the reason.

pub mod caps;

use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};
use wasmtime::component::Component;
use wasmtime::Engine;

/// The first argument that makes the `zot` binary a compiler: `zot __compile …`.
pub const SUBCOMMAND: &str = "__compile";

/// Limits on one compile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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

/// How components are compiled.
#[derive(Debug, Clone, Default)]
pub struct Compiler {
    /// The program that compiles in a child process when run as `<program> __compile …`:
    /// the `zot` binary, or an embedder's own binary that hands those arguments to
    /// [`child_main`]. `None`: in this process, where the caps apply but the limits do
    /// not (an embedder that runs no hostile components, and the tests of this crate).
    pub program: Option<PathBuf>,
    pub limits: CompileLimits,
}

impl Compiler {
    /// This program as the compiler (the `zot` binary), with limits from the
    /// environment ([`CompileLimits::from_env`]).
    pub fn this_program() -> Result<Compiler, String> {
        let program = std::env::current_exe()
            .map_err(|e| format!("cannot find this program to compile with: {e}"))?;
        Ok(Compiler {
            program: Some(program),
            limits: CompileLimits::from_env()?,
        })
    }

    /// Compiles `bytes` (the component at `wasm`), writing the artifact to the cache
    /// entry `entry`: the component, or why not. Blocks: call it off the async runtime.
    pub(crate) fn compile(
        &self,
        engine: &Engine,
        bytes: &[u8],
        wasm: &Path,
        entry: &Path,
    ) -> Result<Component, String> {
        caps::check(bytes)?;
        let Some(program) = &self.program else {
            let component = Component::new(engine, bytes)
                .map_err(|e| format!("not a valid component: {e:#}"))?;
            if let Ok(artifact) = component.serialize() {
                let _ = crate::cache::store(entry, &artifact);
            }
            return Ok(component);
        };
        self.in_child(program, wasm, entry)?;
        crate::cache::read_entry(engine, entry)
            .map_err(|e| e.unwrap_or_else(|| "the compiler wrote no artifact".into()))
    }

    /// Runs `program __compile MEMORY_MB CPU_SECS WASM ENTRY` and waits at most the wall
    /// deadline: `Ok` once it wrote the entry, else why it did not, in words.
    fn in_child(&self, program: &Path, wasm: &Path, entry: &Path) -> Result<(), String> {
        let limits = self.limits;
        if let Some(dir) = entry.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("cannot create the cache {}: {e}", dir.display()))?;
        }
        let mut child = Command::new(program)
            .arg(SUBCOMMAND)
            .arg(limits.memory_mb.to_string())
            .arg(limits.cpu.as_secs().to_string())
            .arg(wasm)
            .arg(entry)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start the compiler {}: {e}", program.display()))?;
        let stderr = child.stderr.take().map(|mut pipe| {
            std::thread::spawn(move || {
                let mut kept = Vec::new();
                let _ = (&mut pipe).take(16 * 1024).read_to_end(&mut kept);
                // Drain the rest so the child never blocks on a full pipe.
                let _ = std::io::copy(&mut pipe, &mut std::io::sink());
                String::from_utf8_lossy(&kept).trim().to_string()
            })
        });
        let deadline = Instant::now() + limits.wall;
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break Some(status),
                Ok(None) if Instant::now() >= deadline => {
                    let _ = child.kill();
                    let _ = child.wait();
                    break None;
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(10)),
                Err(e) => return Err(format!("cannot wait for the compiler: {e}")),
            }
        };
        let said = stderr.and_then(|t| t.join().ok()).unwrap_or_default();
        let Some(status) = status else {
            return Err(format!(
                "compiling took longer than {} s: stopped (ZOT_COMPILE_WALL_SECS raises the \
                 limit)",
                limits.wall.as_secs()
            ));
        };
        use std::os::unix::process::ExitStatusExt;
        let out_of_memory = format!(
            "compiling needed more than {} MiB of memory: stopped (ZOT_COMPILE_MEMORY_MB \
             raises the limit)",
            limits.memory_mb
        );
        match (status.code(), status.signal()) {
            (Some(0), _) => Ok(()),
            _ if said.contains("memory allocation") || said.contains("out of memory") => {
                Err(out_of_memory)
            }
            (_, Some(libc::SIGXCPU)) | (_, Some(libc::SIGKILL)) => Err(format!(
                "compiling used more than {} s of CPU time: stopped (ZOT_COMPILE_CPU_SECS \
                 raises the limit)",
                limits.cpu.as_secs()
            )),
            (_, Some(libc::SIGABRT)) | (_, Some(libc::SIGSEGV)) => Err(out_of_memory),
            (_, Some(signal)) => Err(format!("the compiler died of signal {signal}: {said}")),
            _ if said.is_empty() => Err(format!("the compiler failed ({status})")),
            _ => Err(said),
        }
    }
}

/// What `zot __compile MEMORY_MB CPU_SECS WASM ENTRY` runs (`args` after the
/// subcommand): limits this process, compiles the component at WASM and writes the cache
/// entry ENTRY. Exit 0, or the reason on stderr and exit 1.
pub fn child_main(args: &[OsString]) -> ExitCode {
    match compile_here(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}

fn compile_here(args: &[OsString]) -> Result<(), String> {
    let [memory_mb, cpu_secs, wasm, entry] = args else {
        return Err(format!(
            "usage: zot {SUBCOMMAND} MEMORY_MB CPU_SECS WASM ENTRY (used by zot itself)"
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
    // The soft limit sends SIGXCPU; the hard one, a little later, SIGKILL.
    limit(libc::RLIMIT_CPU, number(cpu_secs)?, 2)?;
    let (wasm, entry) = (Path::new(wasm), Path::new(entry));
    let bytes = std::fs::read(wasm).map_err(|e| format!("cannot read {}: {e}", wasm.display()))?;
    caps::check(&bytes)?;
    let engine = crate::transport::wasm::compile_engine()?;
    let component =
        Component::new(&engine, &bytes).map_err(|e| format!("not a valid component: {e:#}"))?;
    let artifact = component
        .serialize()
        .map_err(|e| format!("cannot serialise the compiled component: {e:#}"))?;
    crate::cache::store(entry, &artifact)
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
