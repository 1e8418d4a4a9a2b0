//! What a component may be before the host spends compile time on it: a cheap pass over
//! its bytes (wasmparser, no validation or compilation) against documented caps, so that
//! a component built to make the compiler use gigabytes and minutes is refused in
//! milliseconds with a message naming the cap. The caps are far above what real
//! components use (the CPython component, 18 MB: see docs/sandbox.md); the compile's own
//! memory, CPU and time limits ([`super::CompileLimits`]) catch what passes them.

use wasmparser::{Operator, Parser, Payload};

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

/// Checks `bytes` against the caps: its measures, or which cap it exceeds (and by what).
pub fn check(bytes: &[u8]) -> Result<Measures, String> {
    let mut m = Measures {
        bytes: bytes.len(),
        ..Measures::default()
    };
    over(
        "bytes in the file",
        m.bytes as u64,
        MAX_COMPONENT_BYTES as u64,
    )?;
    let invalid = |e: wasmparser::BinaryReaderError| format!("not a valid component: {e}");
    for payload in Parser::new(0).parse_all(bytes) {
        match payload.map_err(invalid)? {
            Payload::TableSection(r) => m.tables += r.count() as usize,
            Payload::MemorySection(r) => m.memories += r.count() as usize,
            Payload::CodeSectionEntry(body) => {
                m.functions += 1;
                over("functions", m.functions as u64, MAX_FUNCTIONS as u64)?;
                let size = body.range().len();
                m.largest_body = m.largest_body.max(size);
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
            }
            _ => {}
        }
    }
    over("tables", m.tables as u64, MAX_TABLES as u64)?;
    over("memories", m.memories as u64, MAX_MEMORIES as u64)?;
    Ok(m)
}

/// `Err` naming the cap when `value` exceeds `cap`.
fn over(what: &str, value: u64, cap: u64) -> Result<(), String> {
    if value > cap {
        Err(format!(
            "refused before compiling: {value} {what} (at most {cap}: see \"Compile limits\" \
             in docs/sandbox.md)"
        ))
    } else {
        Ok(())
    }
}
