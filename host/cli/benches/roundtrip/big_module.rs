//! A big component (about 5 MB, generated): its first compile through zot (the compile
//! child under limits, the cache entry hashed and written) against what `wasmtime
//! compile` does with zot's engine (a process compiles, serialises and writes the
//! artifact: `--wasmtime-compile`, roles.rs) and against `Component::new` in this
//! process; and its load from zot's cache against wasmtime's `Component::deserialize`
//! (and `deserialize_file`, mapped) of the same artifact.

use crate::interleave::{self, Plan, Row};
use crate::measure::{table, target, Figure, Line};
use crate::Bench;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use wasmtime::component::Component;
use zot_host::compile::Compiler;
use zot_host::manage::component::cache::{self, Source};

/// Each of 5 rounds compiles (or loads) once per row.
const ROUNDS: Plan = Plan {
    rounds: 5,
    calls: 1,
    warmup: 0,
};

/// About `bytes` of component: one core module of functions `(param i64) (result i64)`,
/// each a chain of arithmetic on its argument and locals, as a compiler's output is.
fn generated(bytes: usize) -> Vec<u8> {
    use wasm_encoder::*;
    let mut types = TypeSection::new();
    types.ty().function([ValType::I64], [ValType::I64]);
    let mut body = Function::new([(8, ValType::I64)]);
    let mut ins = body.instructions();
    for i in 0..40u32 {
        let local = 1 + i % 8;
        ins.local_get(0)
            .i64_const(i64::from(i) * 2_654_435_761)
            .i64_mul()
            .local_get(1 + (i * 3) % 8)
            .i64_xor()
            .local_set(local);
    }
    ins.local_get(1).local_get(2).i64_add().end();
    let mut size = Vec::new();
    body.encode(&mut size);
    let count = (bytes / size.len()) as u32;
    let mut funcs = FunctionSection::new();
    let mut code = CodeSection::new();
    for _ in 0..count {
        funcs.function(0);
        code.function(&body);
    }
    let mut exports = ExportSection::new();
    exports.export("f0", ExportKind::Func, 0);
    let mut module = Module::new();
    module
        .section(&types)
        .section(&funcs)
        .section(&exports)
        .section(&code);
    let mut component = wasm_encoder::Component::new();
    component.section(&ModuleSection(&module));
    component.finish()
}

/// One row: `n` timings of `once`.
fn row(mut once: impl FnMut() -> Duration + 'static) -> Box<dyn Row> {
    Box::new(move |n| (0..n).map(|_| once()).collect())
}

/// The files of the one cache entry in `dir` (its artifact and its sum).
fn entry_in(dir: &Path) -> Vec<PathBuf> {
    let files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(
        files
            .iter()
            .any(|p| p.extension().is_some_and(|x| x == "cwasm")),
        "a cache entry in {}",
        dir.display()
    );
    files
}

pub fn compile_and_load(b: &Bench) {
    let dir = b.dir.join("big");
    std::fs::create_dir_all(&dir).unwrap();
    let bytes = generated(5 << 20);
    let file = dir.join("big.wasm");
    std::fs::write(&file, &bytes).unwrap();
    let engine = zot_host::manage::component::engine().unwrap().clone();
    let compiler = Compiler::this_program().unwrap();
    let rt = b.rt.handle().clone();
    // zot's load of `file` with the cache in `cache_dir`, expecting the hash `expected`
    // (as a start does its grant's): how long, how it came, and the component's hash.
    let zot_load = {
        let (engine, compiler, file, rt) = (engine.clone(), compiler.clone(), file.clone(), rt);
        move |cache_dir: &Path, expected: Option<&str>| {
            let t = Instant::now();
            let loaded = rt
                .block_on(cache::load(&engine, &file, cache_dir, &compiler, expected))
                .unwrap();
            (t.elapsed(), loaded.source, loaded.sha256)
        }
    };
    // A first compile, for the artifact every load row uses.
    let first = dir.join("cache-first");
    let (_, source, sha256) = zot_load(&first, None);
    assert!(matches!(source, Source::Compiled(_)), "{source:?}");
    let entry = entry_in(&first);
    let compile_process = {
        let (file, out) = (file.clone(), dir.join("wasmtime-compile.cwasm"));
        move || {
            let t = Instant::now();
            let status = Command::new(std::env::current_exe().unwrap())
                .arg("--wasmtime-compile")
                .arg(&file)
                .arg(&out)
                .status()
                .unwrap();
            assert!(status.success(), "{status}");
            t.elapsed()
        }
    };
    let artifact = Component::new(&engine, &bytes)
        .unwrap()
        .serialize()
        .unwrap();
    let artifact_file = dir.join("big.cwasm");
    std::fs::write(&artifact_file, &artifact).unwrap();

    let mut n = 0;
    let compile_zot = zot_load.clone();
    let compile_dir = dir.clone();
    // A new cache folder each time, named `tag`-N: not the code this process loaded.
    let fresh_cache = |tag: &'static str| {
        let (dir, entry) = (dir.clone(), entry.clone());
        let mut m = 0;
        move || {
            m += 1;
            let warm = dir.join(format!("{tag}-{m}"));
            std::fs::create_dir_all(&warm).unwrap();
            for file in &entry {
                let copy = warm.join(file.file_name().unwrap());
                std::fs::copy(file, &copy).unwrap();
                // Written out before the load is timed: the kernel's writeback of the
                // copy is not the load's work.
                std::fs::File::open(&copy).unwrap().sync_all().unwrap();
            }
            warm
        }
    };
    let (load_zot, mut fresh_cache_too) = (zot_load.clone(), fresh_cache("warm"));
    let (load_expecting, mut fresh_cache) = (zot_load, fresh_cache("expecting"));
    let (e1, e2, e3) = (engine.clone(), engine.clone(), engine.clone());
    let mut rows = vec![
        row(compile_process),
        row(move || {
            let t = Instant::now();
            Component::new(&e1, &bytes).unwrap();
            t.elapsed()
        }),
        row(move || {
            n += 1;
            let (took, source, _) = compile_zot(&compile_dir.join(format!("cold-{n}")), None);
            assert!(matches!(source, Source::Compiled(_)), "{source:?}");
            took
        }),
        row(move || {
            let t = Instant::now();
            // SAFETY: serialised above by this engine.
            unsafe { Component::deserialize(&e2, &artifact) }.unwrap();
            t.elapsed()
        }),
        row(move || {
            let t = Instant::now();
            // SAFETY: serialised above by this engine.
            unsafe { Component::deserialize_file(&e3, &artifact_file) }.unwrap();
            t.elapsed()
        }),
        row(move || {
            let (took, source, _) = load_zot(&fresh_cache_too(), None);
            assert!(matches!(source, Source::Cached(_)), "{source:?}");
            took
        }),
        row(move || {
            let (took, source, _) = load_expecting(&fresh_cache(), Some(&sha256));
            assert!(matches!(source, Source::Cached(_)), "{source:?}");
            took
        }),
    ];
    let f: Vec<Figure> = interleave::run(&mut rows, ROUNDS)
        .into_iter()
        .map(|rounds| Figure::of(rounds.concat()))
        .collect();
    table(
        &format!(
            "a {:.1} MB component, first compile ({} each)",
            std::fs::metadata(&file).unwrap().len() as f64 / 1e6,
            ROUNDS.rounds
        ),
        &[
            Line::new("wasmtime compile, a process (baseline)", f[0]),
            Line::new("wasmtime Component::new, in process", f[1]),
            Line::new("zot: compile child, cache entry written", f[2]),
        ],
    );
    table(
        &format!(
            "the same component loaded compiled ({} each; artifact {:.1} MB)",
            ROUNDS.rounds,
            std::fs::metadata(dir.join("big.cwasm")).unwrap().len() as f64 / 1e6
        ),
        &[
            Line::new("wasmtime Component::deserialize (baseline)", f[3]),
            Line::new("wasmtime Component::deserialize_file", f[4]),
            Line::new("zot: from its disk cache, no hash expected", f[5]),
            Line::new("zot: the same, its grant's hash expected", f[6]),
        ],
    );
    println!("\ntargets (a big component)");
    target(
        "first compile p50 ≤ 1.2× wasmtime compile",
        f[2].p50 / f[0].p50,
        1.2,
    );
    target(
        "cached load p50 ≤ 1.2× deserialize",
        f[6].p50 / f[3].p50,
        1.2,
    );
    target(
        "cached load p50 ≤ 10 ms (× 10 ms)",
        f[6].p50 / 10_000.0,
        1.0,
    );
}
