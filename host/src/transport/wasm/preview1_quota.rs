//! The `/data` quota for preview-1 modules. `wasmtime-wasi`'s preview-1 implementation
//! writes files itself, past the `wasi:filesystem` wrapper that charges components
//! (`files.rs`), so each preview-1 function that can make the data directory grow is
//! shadowed here by one that charges first and then calls the original (through a
//! small trampoline module that re-exports the module's memory, since the original
//! finds the guest's memory through its caller's exports): a write is
//! charged its whole length, a new name what a new entry costs, a new size the whole
//! size (an upper bound of the growth: the module's file offsets are not visible from
//! here). An upper bound over-counts rewrites; a refused charge then measures the
//! directory again before it refuses ([`Usage::shrunk`]), so what is refused is what
//! the directory really cannot take. A refused call returns `nospc` and does nothing; a
//! call that fails is refunded ([`Usage::refund`]: never past a measurement). Writes to
//! the module's own stdout and stderr are not charged — and a descriptor stops counting
//! as those once it is closed or renumbered.
//!
//! Each file `path_open` opens in a writable directory is tracked by its handle, as a
//! component's are ([`Usage::track`]): it counts while open, also once unlinked, however
//! deep its path. The handle is the entry `path_open` adds to the module's resource
//! table, in the slot that was next free before the call ([`next_slot`]).

use super::disk::{blocks_of, Usage};
use super::GuestData;
use std::collections::BTreeSet;
use std::sync::{Arc, OnceLock};
use wasm_encoder::{
    CodeSection, EntityType, ExportKind, ExportSection, Function, FunctionSection, ImportSection,
    Instruction, MemoryType, Module as Encoded, TypeSection, ValType,
};
use wasmtime::{Caller, Engine, Extern, Instance, Linker, Memory, Module, Store};
use wasmtime_wasi::filesystem::Descriptor;
use wasmtime_wasi::WasiView;

/// The preview-1 functions' module.
pub(super) const P1: &str = "wasi_snapshot_preview1";
/// `errno::nospc`; `errno::inval` (more than [`IOV_MAX`] iovecs, as POSIX `writev`
/// says); `errno::notcapable` (a call before the trampoline is connected).
const NOSPC: i32 = 51;
const INVAL: i32 = 28;
/// The most iovecs one write may name (POSIX's `IOV_MAX` on Linux).
const IOV_MAX: usize = 1024;
const NOTCAPABLE: i32 = 76;

/// The shadowed functions and their parameters (each returns an `errno`, an `i32`): the
/// quota's, and the polled stdin's (`fd_read`, `fd_fdstat_get`: [`super::preview1_stdin`]).
const SHADOWED: &[(&str, &[ValType])] = {
    use ValType::{I32, I64};
    &[
        ("fd_write", &[I32, I32, I32, I32]),
        ("fd_pwrite", &[I32, I32, I32, I64, I32]),
        ("fd_allocate", &[I32, I64, I64]),
        ("fd_filestat_set_size", &[I32, I64]),
        ("path_open", &[I32, I32, I32, I32, I32, I64, I64, I32, I32]),
        ("path_create_directory", &[I32, I32, I32]),
        ("path_symlink", &[I32, I32, I32, I32, I32]),
        ("path_link", &[I32, I32, I32, I32, I32, I32, I32]),
        ("path_rename", &[I32, I32, I32, I32, I32, I32]),
        ("path_unlink_file", &[I32, I32, I32]),
        ("path_remove_directory", &[I32, I32, I32]),
        ("fd_close", &[I32]),
        ("fd_renumber", &[I32, I32]),
        ("fd_read", &[I32, I32, I32, I32]),
        ("fd_fdstat_get", &[I32, I32]),
    ]
};
/// `oflags::creat`, `oflags::trunc`.
const O_CREAT: i32 = 1;
const O_TRUNC: i32 = 8;

/// The descriptors that are still the module's stdin, stdout and stderr.
pub(super) struct Stdio(BTreeSet<i32>);

impl Default for Stdio {
    fn default() -> Self {
        Stdio(BTreeSet::from([0, 1, 2]))
    }
}

/// Shadows, in `linker` (which has the preview-1 functions), every preview-1 function
/// that can make the data directory grow (and those that decide which descriptors are
/// stdio) with one that keeps the quota; [`connect`] gives them the originals once the
/// module is instantiated.
pub(super) fn add_to_linker(linker: &mut Linker<GuestData>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);

    linker.func_wrap_async(
        P1,
        "fd_write",
        move |mut c: Caller<'_, GuestData>, (fd, iovs, n, out): (i32, i32, i32, i32)| {
            Box::new(async move {
                let Some(len) = iovecs_len(&mut c, iovs, n) else {
                    return Ok(INVAL);
                };
                let cost = if is_stdio(&c, fd) { 0 } else { blocks_of(len) };
                charged(&mut c, cost, "fd_write", (fd, iovs, n, out)).await
            })
        },
    )?;
    linker.func_wrap_async(
        P1,
        "fd_pwrite",
        move |mut c: Caller<'_, GuestData>, (fd, iovs, n, at, out): (i32, i32, i32, i64, i32)| {
            Box::new(async move {
                let Some(len) = iovecs_len(&mut c, iovs, n) else {
                    return Ok(INVAL);
                };
                charged(&mut c, blocks_of(len), "fd_pwrite", (fd, iovs, n, at, out)).await
            })
        },
    )?;
    linker.func_wrap_async(
        P1,
        "fd_allocate",
        move |mut c: Caller<'_, GuestData>, (fd, at, len): (i32, i64, i64)| {
            Box::new(async move {
                charged(&mut c, blocks_of(len as u64), "fd_allocate", (fd, at, len)).await
            })
        },
    )?;
    linker.func_wrap_async(
        P1,
        "fd_filestat_set_size",
        move |mut c: Caller<'_, GuestData>, (fd, size): (i32, i64)| {
            Box::new(async move {
                shrunk(&c);
                charged(
                    &mut c,
                    blocks_of(size as u64),
                    "fd_filestat_set_size",
                    (fd, size),
                )
                .await
            })
        },
    )?;
    type Open = (i32, i32, i32, i32, i32, i64, i64, i32, i32);
    linker.func_wrap_async(
        P1,
        "path_open",
        move |mut c: Caller<'_, GuestData>, args: Open| {
            Box::new(async move {
                let (oflags, name_len) = (args.4, args.3);
                if oflags & O_TRUNC != 0 {
                    shrunk(&c);
                }
                let cost = if oflags & O_CREAT != 0 {
                    name_cost(name_len)
                } else {
                    0
                };
                let slot = next_slot(&mut c);
                match charged(&mut c, cost, "path_open", args).await? {
                    0 => track_opened(&mut c, slot, args.8).await,
                    errno => Ok(errno),
                }
            })
        },
    )?;
    linker.func_wrap_async(
        P1,
        "path_create_directory",
        move |mut c: Caller<'_, GuestData>, args: (i32, i32, i32)| {
            Box::new(async move {
                charged(&mut c, name_cost(args.2), "path_create_directory", args).await
            })
        },
    )?;
    linker.func_wrap_async(
        P1,
        "path_symlink",
        move |mut c: Caller<'_, GuestData>, args: (i32, i32, i32, i32, i32)| {
            Box::new(async move {
                let cost = name_cost(args.4).saturating_add(blocks_of(args.1.max(0) as u64));
                charged(&mut c, cost, "path_symlink", args).await
            })
        },
    )?;
    linker.func_wrap_async(
        P1,
        "path_link",
        move |mut c: Caller<'_, GuestData>, args: (i32, i32, i32, i32, i32, i32, i32)| {
            Box::new(async move { charged(&mut c, name_cost(args.6), "path_link", args).await })
        },
    )?;
    linker.func_wrap_async(
        P1,
        "path_rename",
        move |mut c: Caller<'_, GuestData>, args: (i32, i32, i32, i32, i32, i32)| {
            Box::new(async move {
                shrunk(&c);
                charged(&mut c, name_cost(args.5), "path_rename", args).await
            })
        },
    )?;
    for name in ["path_unlink_file", "path_remove_directory"] {
        linker.func_wrap_async(
            P1,
            name,
            move |mut c: Caller<'_, GuestData>, args: (i32, i32, i32)| {
                Box::new(async move {
                    let errno = call(&mut c, name, args).await?;
                    shrunk(&c);
                    Ok(errno)
                })
            },
        )?;
    }
    linker.func_wrap_async(
        P1,
        "fd_close",
        move |mut c: Caller<'_, GuestData>, (fd,): (i32,)| {
            Box::new(async move {
                let errno = call(&mut c, "fd_close", (fd,)).await?;
                if errno == 0 {
                    c.data_mut().p1_stdio.0.remove(&fd);
                }
                Ok(errno)
            })
        },
    )?;
    linker.func_wrap_async(
        P1,
        "fd_renumber",
        move |mut c: Caller<'_, GuestData>, (from, to): (i32, i32)| {
            Box::new(async move {
                let errno = call(&mut c, "fd_renumber", (from, to)).await?;
                if errno == 0 {
                    let stdio = &mut c.data_mut().p1_stdio.0;
                    match stdio.remove(&from) {
                        true => stdio.insert(to),
                        false => stdio.remove(&to),
                    };
                }
                Ok(errno)
            })
        },
    )?;
    linker.allow_shadowing(false);
    Ok(())
}

pub(super) fn is_stdio(c: &Caller<'_, GuestData>, fd: i32) -> bool {
    c.data().p1_stdio.0.contains(&fd)
}

/// What a new entry whose name is `len` bytes costs.
fn name_cost(len: i32) -> u64 {
    super::disk::BLOCK + len.max(0) as u64 + 32
}

fn usage(c: &Caller<'_, GuestData>) -> Option<Arc<Usage>> {
    c.data().disk.clone()
}

fn shrunk(c: &Caller<'_, GuestData>) {
    if let Some(usage) = usage(c) {
        usage.shrunk();
    }
}

/// The bytes the `n` iovecs at `iovs` in the module's memory point to, all of them (an
/// upper bound of what one write takes); 0 if they cannot be read (the original then
/// fails on them too). `None` for more than [`IOV_MAX`] of them.
fn iovecs_len(c: &mut Caller<'_, GuestData>, iovs: i32, n: i32) -> Option<u64> {
    let count = usize::try_from(n).unwrap_or(0);
    if count > IOV_MAX {
        return None;
    }
    let Some(list) = read_memory(c, iovs, count * 8) else {
        return Some(0);
    };
    let lens = list
        .chunks_exact(8)
        .map(|v| u32::from_le_bytes([v[4], v[5], v[6], v[7]]));
    Some(lens.map(u64::from).fold(0, u64::saturating_add))
}

/// Calls the original of `name` with `args` once `cost` is charged (`nospc` if the quota
/// refuses it); refunds the charge if the call fails.
async fn charged<P: wasmtime::WasmParams + Sync>(
    c: &mut Caller<'_, GuestData>,
    cost: u64,
    name: &str,
    args: P,
) -> wasmtime::Result<i32> {
    let Some(usage) = usage(c).filter(|_| cost > 0) else {
        return call(c, name, args).await;
    };
    let Ok(charge) = usage.charge_bound(cost) else {
        return Ok(NOSPC);
    };
    let errno = call(c, name, args).await?;
    if errno != 0 {
        usage.refund(charge);
    }
    Ok(errno)
}

/// The slot of the module's resource table that its next entry takes (the head of the
/// table's free list, else its end), found by adding a placeholder and taking it out.
/// `None` without a quota (nothing to track) or if the table is full.
fn next_slot(c: &mut Caller<'_, GuestData>) -> Option<u32> {
    c.data().disk.as_ref()?;
    let table = c.data_mut().p1.as_mut()?.ctx().table;
    let placeholder = table.push(()).ok()?;
    let slot = placeholder.rep();
    table.delete(placeholder).ok()?;
    Some(slot)
}

/// After `path_open` succeeded: tracks the file it opened, the descriptor it added in
/// `slot` (if opened in a writable directory; a directory is not tracked). If `slot`
/// holds no descriptor, the file cannot be counted: the new descriptor (at `opened` in
/// the module's memory) is closed and `notcapable` returned.
async fn track_opened(
    c: &mut Caller<'_, GuestData>,
    slot: Option<u32>,
    opened: i32,
) -> wasmtime::Result<i32> {
    let Some(usage) = usage(c) else {
        return Ok(0);
    };
    let table = c.data_mut().p1.as_mut().map(|p1| p1.ctx().table);
    let entry = slot
        .zip(table)
        .and_then(|(slot, t)| t.get_any_mut(slot).ok());
    match entry.and_then(|e| e.downcast_ref::<Descriptor>()) {
        Some(Descriptor::File(f)) if !f.perms.write_not_permitted() => usage.track(&f.file),
        Some(Descriptor::File(_) | Descriptor::Dir(_)) => {}
        None => {
            let fd = read_memory(c, opened, 4).and_then(|b| b.try_into().ok());
            call(c, "fd_close", (fd.map_or(-1, i32::from_le_bytes),)).await?;
            return Ok(NOTCAPABLE);
        }
    }
    Ok(0)
}

/// The `len` bytes at `at` in the module's memory, if they can be read.
fn read_memory(c: &mut Caller<'_, GuestData>, at: i32, len: usize) -> Option<Vec<u8>> {
    let Some(Extern::Memory(memory)) = c.get_export("memory") else {
        return None;
    };
    let mut bytes = vec![0u8; len];
    memory.read(&*c, at as u32 as usize, &mut bytes).ok()?;
    Some(bytes)
}

/// Calls the original of `name` through the trampoline.
pub(super) async fn call<P: wasmtime::WasmParams + Sync>(
    c: &mut Caller<'_, GuestData>,
    name: &str,
    args: P,
) -> wasmtime::Result<i32> {
    let Some(trampoline) = c.data().p1_trampoline else {
        return Ok(NOTCAPABLE);
    };
    let f = trampoline
        .get_typed_func::<P, i32>(&mut *c, name)
        .map_err(|e| e.context(format!("the trampoline's {name}")))?;
    f.call_async(&mut *c, args).await
}

/// Instantiates the trampoline over the instantiated module's `memory`, its imports the
/// original preview-1 functions: from now on the shadows reach them.
pub(super) async fn connect(store: &mut Store<GuestData>, memory: Memory) -> wasmtime::Result<()> {
    let mut linker = Linker::<GuestData>::new(store.engine());
    wasmtime_wasi::p1::add_to_linker_async(&mut linker, |d| {
        d.p1.as_mut()
            .expect("a preview-1 guest's store holds its context")
    })?;
    linker.define(&mut *store, "env", "memory", memory)?;
    let module = trampoline(store.engine())?;
    let instance: Instance = linker.instantiate_async(&mut *store, &module).await?;
    store.data_mut().p1_trampoline = Some(instance);
    // wasmtime-wasi makes the module's first descriptors (stdio, preopens) in its table
    // on the first call: here, so none is made within a `path_open` (see `next_slot`).
    // Closing a descriptor that does not exist does nothing else.
    let close = instance.get_typed_func::<(i32,), i32>(&mut *store, "fd_close")?;
    close.call_async(&mut *store, (-1,)).await?;
    Ok(())
}

/// The trampoline module (compiled once per process): it imports a memory and the
/// original of each [`SHADOWED`] function, exports the memory as `memory` and each
/// function under its own name, calling the original.
fn trampoline(engine: &Engine) -> wasmtime::Result<Module> {
    static MODULE: OnceLock<Module> = OnceLock::new();
    if let Some(module) = MODULE.get() {
        return Ok(module.clone());
    }
    let (mut types, mut imports, mut functions) = (
        TypeSection::new(),
        ImportSection::new(),
        FunctionSection::new(),
    );
    let (mut exports, mut code) = (ExportSection::new(), CodeSection::new());
    let memory = MemoryType {
        minimum: 0,
        maximum: None,
        memory64: false,
        shared: false,
        page_size_log2: None,
    };
    imports.import("env", "memory", EntityType::Memory(memory));
    exports.export("memory", ExportKind::Memory, 0);
    let count = SHADOWED.len() as u32;
    for (i, (name, params)) in SHADOWED.iter().enumerate() {
        let i = i as u32;
        types.ty().function(params.iter().copied(), [ValType::I32]);
        imports.import(P1, name, EntityType::Function(i));
        functions.function(i);
        exports.export(name, ExportKind::Func, count + i);
        let mut body = Function::new([]);
        for p in 0..params.len() as u32 {
            body.instruction(&Instruction::LocalGet(p));
        }
        body.instruction(&Instruction::Call(i));
        body.instruction(&Instruction::End);
        code.function(&body);
    }
    let mut bytes = Encoded::new();
    bytes
        .section(&types)
        .section(&imports)
        .section(&functions)
        .section(&exports)
        .section(&code);
    let module = Module::new(engine, bytes.finish())?;
    Ok(MODULE.get_or_init(|| module).clone())
}
