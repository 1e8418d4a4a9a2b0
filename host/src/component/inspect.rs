//! One pass over a component's sections (wasmparser, no validation or compilation) that
//! tells what it is: what the file is if no component ([`super::filetype`]), its
//! top-level exports (so its [`World`]), its embedded manifest (the first
//! [`SECTION`](MANIFEST_SECTION) custom section, at any depth) and its measures
//! against documented caps, so that a component built to make the compiler use gigabytes
//! and minutes is refused in milliseconds with a message naming the cap. The caps are far
//! above what real components use (the CPython component, 18 MB: see docs/sandbox.md);
//! the compile's own memory, CPU and time limits ([`super::compile::CompileLimits`])
//! catch what passes them.

use super::wit::{world_of, Kind, World};
use super::ComponentError;
use wasmparser::{
    BinaryReaderError, Chunk, CompositeInnerType, Encoding, FunctionBody, KnownCustom, Operator,
    Parser, Payload, RecGroup,
};

/// The module a WASI preview-1 module imports its functions from.
pub const PREVIEW1: &str = "wasi_snapshot_preview1";

/// The custom section in which a component carries its manifest (a public contract:
/// [`crate::manifest::SECTION`]).
pub const MANIFEST_SECTION: &str = "zot:manifest";

/// At most this many bytes in a component file.
pub const MAX_COMPONENT_BYTES: usize = 128 << 20;
/// At most this many function bodies in all its modules together.
pub const MAX_FUNCTIONS: usize = 250_000;
/// At most this many bytes in one function body.
pub const MAX_BODY_BYTES: usize = 4 << 20;
/// At most this many locals in one function.
pub const MAX_LOCALS: u64 = 10_000;
/// At most this deep a nesting of blocks, loops and ifs in one function.
pub const MAX_NESTING: usize = 5_000;
/// At most this many targets in one `br_table`.
pub const MAX_BR_TABLE: u32 = 50_000;
/// At most this many tables, and memories, declared in all its modules together.
pub const MAX_TABLES: usize = 1_000;
pub const MAX_MEMORIES: usize = 100;

/// What the pass counted: the largest of each measure.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Measures {
    pub bytes: usize,
    pub functions: usize,
    pub largest_body: usize,
    pub most_locals: u64,
    pub deepest_nesting: usize,
    pub largest_br_table: u32,
    pub tables: usize,
    pub memories: usize,
}

/// What [`inspect`] found.
#[derive(Debug)]
pub struct Inspection<'a> {
    /// The size of the file.
    bytes: usize,
    /// Why it has no world: the file is no component (what it is), a core module, or it
    /// does not parse.
    invalid: Option<ComponentError>,
    /// Where the bytes stopped parsing, if they did (the pass stopped there).
    parse_error: Option<ComponentError>,
    /// The function bodies before that, at most one more than [`MAX_FUNCTIONS`]: measured
    /// when the caps are asked ([`Inspection::within_caps`]), not before.
    bodies: Vec<FunctionBody<'a>>,
    tables: usize,
    memories: usize,
    /// Its top-level exports (a core module's, for a core module).
    pub exports: Vec<String>,
    /// Whether it is a core module (not a component).
    core: bool,
    /// The modules a core module imports from.
    imports_from: Vec<String>,
    /// The content of the first embedded-manifest section (before any parse error).
    pub manifest: Option<&'a [u8]>,
}

impl Inspection<'_> {
    /// The world it is built for, or why it has none this host runs.
    pub fn world(&self) -> Result<World, ComponentError> {
        match &self.invalid {
            Some(e) => Err(e.clone()),
            None if self.core => self.preview1(),
            None => world_of(&self.exports),
        }
    }

    fn preview1(&self) -> Result<World, ComponentError> {
        let exports = self.exports.iter().map(String::as_str);
        preview1_world(exports, self.imports_from.iter().map(String::as_str))
    }

    /// Its measures, if it is within every cap and parses; else the first cap it
    /// exceeds or where it stops parsing, whichever comes first in the file.
    pub fn within_caps(&self) -> Result<Measures, ComponentError> {
        let mut m = Measures {
            bytes: self.bytes,
            tables: self.tables,
            memories: self.memories,
            ..Measures::default()
        };
        over(
            "bytes in the file",
            m.bytes as u64,
            MAX_COMPONENT_BYTES as u64,
        )?;
        for body in &self.bodies {
            measure(&mut m, body)?;
        }
        if let Some(e) = &self.parse_error {
            return Err(e.clone());
        }
        over("tables", m.tables as u64, MAX_TABLES as u64)?;
        over("memories", m.memories as u64, MAX_MEMORIES as u64)?;
        Ok(m)
    }
}

/// Inspects the component in `bytes` in one pass over its sections (see the module's
/// documentation); function bodies are decoded only when the caps are asked.
pub fn inspect(bytes: &[u8]) -> Inspection<'_> {
    let mut found = Inspection {
        bytes: bytes.len(),
        invalid: super::filetype::not_a_component(bytes).map(ComponentError::NotAComponent),
        parse_error: None,
        bodies: Vec::new(),
        tables: 0,
        memories: 0,
        exports: Vec::new(),
        core: false,
        imports_from: Vec::new(),
        manifest: None,
    };
    let mut depth = 0usize;
    for payload in Parser::new(0).parse_all(bytes) {
        if let Err(e) = payload
            .map_err(invalid)
            .and_then(|p| found.take(p, &mut depth))
        {
            found.invalid.get_or_insert_with(|| e.clone());
            found.parse_error = Some(e);
            break;
        }
    }
    found
}

impl<'a> Inspection<'a> {
    /// Takes one payload in: an error only when the bytes do not parse.
    fn take(&mut self, payload: Payload<'a>, depth: &mut usize) -> Result<(), ComponentError> {
        match payload {
            Payload::Version { encoding, .. } if *depth == 0 => {
                self.core = encoding == Encoding::Module;
            }
            Payload::ImportSection(reader) if *depth == 0 && self.core => {
                for imports in reader {
                    for import in imports.map_err(invalid)? {
                        let module = import.map_err(invalid)?.1.module;
                        if !self.imports_from.iter().any(|m| m == module) {
                            self.imports_from.push(module.to_string());
                        }
                    }
                }
            }
            Payload::ExportSection(reader) if *depth == 0 && self.core => {
                for export in reader {
                    self.exports.push(export.map_err(invalid)?.name.to_string());
                }
            }
            Payload::ModuleSection { .. } | Payload::ComponentSection { .. } => *depth += 1,
            Payload::End(_) => *depth = depth.saturating_sub(1),
            Payload::ComponentExportSection(reader) if *depth == 0 => {
                for export in reader {
                    self.exports
                        .push(export.map_err(invalid)?.name.name.to_string());
                }
            }
            Payload::CustomSection(reader) if reader.name() == MANIFEST_SECTION => {
                self.manifest.get_or_insert(reader.data());
            }
            Payload::TypeSection(reader) => {
                for group in reader {
                    if let Some(what) = gc_proposal(&group.map_err(invalid)?) {
                        return Err(ComponentError::Unsupported(what.into()));
                    }
                }
            }
            Payload::TableSection(r) => self.tables += r.count() as usize,
            Payload::MemorySection(r) => self.memories += r.count() as usize,
            Payload::CodeSectionEntry(body) if self.bodies.len() <= MAX_FUNCTIONS => {
                self.bodies.push(body);
            }
            _ => {}
        }
        Ok(())
    }
}

/// A core module with `exports` that imports from the modules `imports_from` runs as a
/// WASI preview-1 command if it exports `_start` and imports nothing but
/// `wasi_snapshot_preview1`; else why not.
pub fn preview1_world<'a>(
    mut exports: impl Iterator<Item = &'a str>,
    imports_from: impl Iterator<Item = &'a str>,
) -> Result<World, ComponentError> {
    let mut others: Vec<&str> = Vec::new();
    for module in imports_from.filter(|m| *m != PREVIEW1) {
        if !others.contains(&module) {
            others.push(module);
        }
    }
    if !exports.any(|e| e == "_start") {
        return Err(ComponentError::CoreModule(
            "it exports no `_start`: build it as a WASI preview-1 command".into(),
        ));
    }
    if !others.is_empty() {
        return Err(ComponentError::CoreModule(format!(
            "it imports from {}: a preview-1 module gets `{PREVIEW1}` only",
            others.join(", ")
        )));
    }
    Ok(World::Preview1)
}

/// What in `group` needs a proposal the engine leaves off: the WebAssembly GC proposal
/// ([`super::engine::compile_engine`] says why) for a type open to subtypes or declared
/// a subtype of another, a struct or array, or an explicit recursion group; stack
/// switching for a continuation type.
fn gc_proposal(group: &RecGroup) -> Option<&'static str> {
    if group.is_explicit_rec_group() {
        return Some("declares a recursion group of types (the WebAssembly GC proposal)");
    }
    group.types().find_map(|ty| match &ty.composite_type.inner {
        CompositeInnerType::Func(_) if !ty.is_final => {
            Some("declares a function type open to subtypes (the WebAssembly GC proposal)")
        }
        CompositeInnerType::Func(_) if ty.supertype_idx.is_some() => {
            Some("declares a function type as a subtype of another (the WebAssembly GC proposal)")
        }
        CompositeInnerType::Func(_) => None,
        CompositeInnerType::Array(_) | CompositeInnerType::Struct(_) => {
            Some("declares a struct or array type (the WebAssembly GC proposal)")
        }
        CompositeInnerType::Cont(_) => {
            Some("declares a continuation type (the stack-switching proposal)")
        }
    })
}

/// Measures one function body into `m`: `Err` naming the first cap it exceeds, or
/// where it does not parse.
fn measure(m: &mut Measures, body: &FunctionBody<'_>) -> Result<(), ComponentError> {
    m.functions += 1;
    let size = body.range().len();
    m.largest_body = m.largest_body.max(size);
    over("functions", m.functions as u64, MAX_FUNCTIONS as u64)?;
    over("bytes in one function", size as u64, MAX_BODY_BYTES as u64)?;
    let mut locals = 0u64;
    for decl in body.get_locals_reader().map_err(invalid)? {
        locals += u64::from(decl.map_err(invalid)?.0);
    }
    m.most_locals = m.most_locals.max(locals);
    over("locals in one function", locals, MAX_LOCALS)?;
    let mut depth = 0usize;
    let mut ops = body.get_operators_reader().map_err(invalid)?;
    while !ops.eof() {
        match ops.read().map_err(invalid)? {
            Operator::Block { .. }
            | Operator::Loop { .. }
            | Operator::If { .. }
            | Operator::Try { .. }
            | Operator::TryTable { .. } => {
                depth += 1;
                m.deepest_nesting = m.deepest_nesting.max(depth);
                over(
                    "nested blocks in one function",
                    depth as u64,
                    MAX_NESTING as u64,
                )?;
            }
            Operator::End => depth = depth.saturating_sub(1),
            Operator::BrTable { targets } => {
                let n = targets.len();
                m.largest_br_table = m.largest_br_table.max(n);
                over("targets in one br_table", n.into(), MAX_BR_TABLE.into())?;
            }
            _ => {}
        }
    }
    Ok(())
}

fn invalid(e: BinaryReaderError) -> ComponentError {
    ComponentError::Invalid(e.to_string())
}

/// `Err` naming the cap when `value` exceeds `cap`.
fn over(what: &'static str, value: u64, cap: u64) -> Result<(), ComponentError> {
    if value > cap {
        Err(ComponentError::OverCap { what, value, cap })
    } else {
        Ok(())
    }
}

/// At most this many characters of a toolchain's name and version are kept.
const MAX_PRODUCER_CHARS: usize = 80;

/// Who built a core module, as its custom sections say.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Producer {
    /// Built by Go (`GOOS=wasip1`): its linker writes a `go:buildid` custom section.
    /// Go's runtime reads stdin through its poller (`poll_oneoff`) when stdin says it is
    /// non-blocking, and so keeps running its other goroutines while it waits for input.
    pub go: bool,
    /// The toolchain, for messages: "Go", else the first tool of the `producers`
    /// section's `processed-by` ("rustc 1.92.0", "TinyGo 0.35.0"), else its language.
    pub name: Option<String>,
}

impl Producer {
    /// How a module of `kind` built by it has its stdin served: the one decision, applied
    /// by the wasm transport and shown by the views. `None` for a component.
    pub fn stdin(&self, kind: Kind) -> Option<Stdin> {
        match kind {
            Kind::Preview1 if self.go => Some(Stdin::Polled),
            Kind::Preview1 => Some(Stdin::Blocking),
            Kind::Reactor | Kind::Command => None,
        }
    }
}

/// How a preview-1 module's stdin is served.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stdin {
    /// Said non-blocking, a read with nothing queued answers `again`, and `poll_oneoff`
    /// waits for a frame: its runtime (Go's) runs other goroutines meanwhile.
    Polled,
    /// A read waits for a frame, and nothing else of the module runs meanwhile.
    Blocking,
}

/// Who built the core module `bytes` (nothing known of a component, or of bytes that
/// do not parse). The code section is skipped, not read: the `producers` section comes
/// after it.
pub fn producer(bytes: &[u8]) -> Producer {
    let mut found = Producer::default();
    let (mut parser, mut rest) = (Parser::new(0), bytes);
    let mut language = None;
    while let Ok(Chunk::Parsed { consumed, payload }) = parser.parse(rest, true) {
        rest = &rest[consumed..];
        match payload {
            Payload::Version {
                encoding: Encoding::Component,
                ..
            }
            | Payload::End(_) => break,
            Payload::CodeSectionStart { size, .. } => {
                parser.skip_section();
                rest = rest.get(size as usize..).unwrap_or_default();
            }
            Payload::CustomSection(reader) if reader.name() == "go:buildid" => {
                found.go = true;
                found.name = Some("Go".into());
            }
            Payload::CustomSection(reader) => {
                let KnownCustom::Producers(fields) = reader.as_known() else {
                    continue;
                };
                for field in fields.into_iter().flatten() {
                    let first = field.values.into_iter().flatten().next();
                    let Some(value) = first else { continue };
                    let named = format!("{} {}", value.name, value.version);
                    match field.name {
                        "processed-by" => found.name = found.name.or(Some(named)),
                        "language" => language = Some(named),
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    // Words from the file: at most a line's worth, for the messages that show them.
    found.name = found
        .name
        .or(language)
        .map(|n| n.trim().chars().take(MAX_PRODUCER_CHARS).collect());
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A section `id` with `body` (shorter than 128 bytes).
    fn section(id: u8, body: &[u8]) -> Vec<u8> {
        [vec![id, body.len() as u8], body.to_vec()].concat()
    }

    /// A core module is Go's when it carries a `go:buildid` custom section; any other
    /// custom section, or none, is not. Its toolchain is named by its `producers`
    /// section, after the code.
    #[test]
    fn a_module_is_told_go_by_its_build_id_and_named_by_its_producers() {
        let custom = |name: &str, body: &[u8]| {
            let name = name.as_bytes();
            section(0, &[&[name.len() as u8], name, body].concat())
        };
        let module =
            |sections: &[Vec<u8>]| [b"\0asm\x01\0\0\0".to_vec(), sections.concat()].concat();
        let go = producer(&module(&[custom("go:buildid", b"x")]));
        assert_eq!(
            go,
            Producer {
                go: true,
                name: Some("Go".into())
            }
        );
        assert_eq!(
            producer(&module(&[custom("go:version", b"x")])),
            Producer::default()
        );
        assert_eq!(producer(&module(&[])), Producer::default());
        assert_eq!(producer(b"not wasm"), Producer::default());
        // One type, one function, its code, then the producers: language and tool.
        let string = |s: &str| [&[s.len() as u8], s.as_bytes()].concat();
        let field = |name: &str, value: (&str, &str)| {
            [string(name), vec![1], string(value.0), string(value.1)].concat()
        };
        let producers = [
            vec![2],
            field("language", ("Rust", "")),
            field("processed-by", ("TinyGo", "0.35.0")),
        ]
        .concat();
        let rust = module(&[
            section(1, &[1, 0x60, 0, 0]),
            section(3, &[1, 0]),
            section(10, &[1, 2, 0, 0x0b]),
            custom("producers", &producers),
        ]);
        let found = producer(&rust);
        assert_eq!(found.name.as_deref(), Some("TinyGo 0.35.0"), "{found:?}");
        assert!(!found.go);
    }

    /// A component holding the manifest `manifest` and a core module with one function,
    /// whose body nests a block.
    fn component(manifest: &[u8]) -> Vec<u8> {
        let name = MANIFEST_SECTION.as_bytes();
        let custom = section(0, &[&[name.len() as u8], name, manifest].concat());
        let module = [
            b"\0asm\x01\0\0\0".to_vec(),
            section(1, &[1, 0x60, 0, 0]),
            section(3, &[1, 0]),
            section(10, &[1, 5, 0, 0x02, 0x40, 0x0b, 0x0b]),
        ]
        .concat();
        [b"\0asm\x0d\0\x01\0".to_vec(), custom, section(1, &module)].concat()
    }

    #[test]
    fn one_pass_gives_the_manifest_the_measures_and_the_world() {
        let bytes = component(br#"{"name":"x"}"#);
        let found = inspect(&bytes);
        assert_eq!(found.manifest, Some(&br#"{"name":"x"}"#[..]));
        let m = found.within_caps().unwrap();
        assert_eq!((m.functions, m.deepest_nesting), (1, 1));
        let world = found.world().unwrap_err().to_string();
        assert!(world.ends_with("(it exports: nothing)"), "{world}");
    }

    #[test]
    fn what_is_no_component_is_named_and_a_cut_one_is_invalid() {
        let text = inspect(b"hello\n").world().unwrap_err();
        assert_eq!(
            text.to_string(),
            "not a WebAssembly component (it is a text file)"
        );
        let bytes = component(b"{}");
        let cut = inspect(&bytes[..bytes.len() - 3]);
        assert!(matches!(cut.world(), Err(ComponentError::Invalid(_))));
        assert!(matches!(cut.within_caps(), Err(ComponentError::Invalid(_))));
        // The manifest came before the cut: it is still read.
        assert_eq!(cut.manifest, Some(&b"{}"[..]));
    }

    /// A core module with the type section `types` and nothing else.
    fn typed(types: &wasm_encoder::TypeSection) -> Vec<u8> {
        let mut module = wasm_encoder::Module::new();
        module.section(types);
        module.finish()
    }

    /// Every type the GC proposal adds is refused by the pass, naming it, inside a
    /// component as in a bare module; a plain function type is not.
    #[test]
    fn a_type_of_the_gc_proposal_is_refused_naming_it() {
        use wasm_encoder::{
            CompositeInnerType as Inner, CompositeType, FieldType, FuncType, StorageType,
            StructType, SubType, TypeSection, ValType,
        };
        let sub = |inner: Inner, is_final: bool, supertype_idx: Option<u32>| SubType {
            is_final,
            supertype_idx,
            composite_type: CompositeType {
                inner,
                shared: false,
                descriptor: None,
                describes: None,
            },
        };
        let func = || Inner::Func(FuncType::new([], [ValType::I32]));
        let field = FieldType {
            element_type: StorageType::I8,
            mutable: false,
        };
        let mut open = TypeSection::new();
        open.ty().subtype(&sub(func(), false, None));
        let mut below = TypeSection::new();
        below.ty().function([], [ValType::I32]);
        below.ty().subtype(&sub(func(), true, Some(0)));
        let mut structs = TypeSection::new();
        structs.ty().subtype(&sub(
            Inner::Struct(StructType {
                fields: Box::new([field]),
            }),
            true,
            None,
        ));
        let mut rec = TypeSection::new();
        rec.ty()
            .rec([sub(func(), true, None), sub(func(), true, None)]);
        for (types, said) in [
            (open, "declares a function type open to subtypes"),
            (below, "declares a function type as a subtype of another"),
            (structs, "declares a struct or array type"),
            (rec, "declares a recursion group of types"),
        ] {
            let module = typed(&types);
            let mut component = wasm_encoder::Component::new();
            component.section(&wasm_encoder::RawSection {
                id: wasm_encoder::ComponentSectionId::CoreModule as u8,
                data: &module,
            });
            let component = component.finish();
            for bytes in [&module, &component] {
                let found = inspect(bytes);
                let refused = found.within_caps().unwrap_err().to_string();
                assert!(
                    refused.starts_with("refused before compiling: it "),
                    "{refused}"
                );
                assert!(refused.contains(said), "{refused}");
                assert!(
                    refused.contains("(the WebAssembly GC proposal)"),
                    "{refused}"
                );
            }
        }
        let mut plain = TypeSection::new();
        plain.ty().function([ValType::I32], []);
        assert!(inspect(&typed(&plain)).within_caps().is_ok());
    }
}
