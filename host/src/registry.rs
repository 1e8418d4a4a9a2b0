//! Command and tool names: who owns each one. Built-ins always win; among extensions the
//! one earliest in load order wins, whenever its registration arrives, so the outcome
//! never depends on timing. Losing claims are kept: if the owner exits, the next takes over.

use crate::extension::Extension;
use crate::schema::Validator;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, OnceLock};
use zot_protocol::{RegisterCommand, RegisterTool};

/// One extension's claim on a name.
struct Claim<T> {
    ext: Extension,
    spec: T,
}

/// The most names remembered as departed ([`Names::departed`]).
const MAX_DEPARTED: usize = 4096;

/// Claims on one kind of name (commands or tools).
struct Names<T> {
    kind: &'static str,
    builtins: BTreeSet<String>,
    claims: BTreeMap<String, Vec<Claim<T>>>,
    /// Names no one claims any more, each with the extension that owned it last: a
    /// call to one can say which extension is gone instead of "no such name". Bounded:
    /// past [`MAX_DEPARTED`] names, no more are remembered.
    departed: BTreeMap<String, String>,
}

impl<T> Names<T> {
    fn new(kind: &'static str, builtins: &[String]) -> Self {
        Names {
            kind,
            builtins: builtins.iter().cloned().collect(),
            claims: BTreeMap::new(),
            departed: BTreeMap::new(),
        }
    }

    /// Adds (or replaces) `ext`'s claim on `name`; logs who is shadowed. Returns the
    /// extensions whose registrations changed.
    fn claim(&mut self, ext: &Extension, name: String, spec: T) -> Vec<Extension> {
        let kind = self.kind;
        if self.builtins.contains(&name) {
            ext.log()
                .warn(&format!("{kind} {name:?} is a built-in: shadowed"));
        }
        self.departed.remove(&name);
        let list = self.claims.entry(name.clone()).or_default();
        if let Some(existing) = list.iter_mut().find(|c| c.ext.is(ext)) {
            existing.spec = spec;
            return vec![ext.clone()];
        }
        let at = list.partition_point(|c| c.ext.rank() < ext.rank());
        let mut changed = vec![ext.clone()];
        if self.builtins.contains(&name) {
            // Already logged.
        } else if at > 0 {
            ext.log().warn(&format!(
                "{kind} {name:?} is already provided by extension {:?}: shadowed",
                list[0].ext.name()
            ));
        } else if let Some(previous) = list.first() {
            previous.ext.log().warn(&format!(
                "{kind} {name:?} is now provided by extension {:?}, which loads earlier: shadowed",
                ext.name()
            ));
            changed.push(previous.ext.clone());
        }
        list.insert(
            at,
            Claim {
                ext: ext.clone(),
                spec,
            },
        );
        changed
    }

    /// Drops every claim of `ext`. Returns `ext` if it had any, then the extensions that
    /// took over one of its names.
    fn remove(&mut self, ext: &Extension) -> Vec<Extension> {
        let mut promoted = Vec::new();
        let mut had_any = false;
        let departed = &mut self.departed;
        self.claims.retain(|name, list| {
            let was_owner = list.first().is_some_and(|c| c.ext.is(ext));
            let before = list.len();
            list.retain(|c| !c.ext.is(ext));
            had_any |= list.len() != before;
            if was_owner && !self.builtins.contains(name) {
                if let Some(next) = list.first() {
                    next.ext.log().info(&format!(
                        "{} {name:?} is now provided by this extension ({:?} exited)",
                        self.kind,
                        ext.name()
                    ));
                    promoted.push(next.ext.clone());
                }
            }
            if was_owner && list.is_empty() && departed.len() < MAX_DEPARTED {
                departed.insert(name.clone(), ext.name().to_string());
            }
            !list.is_empty()
        });
        if had_any {
            promoted.insert(0, ext.clone());
        }
        promoted
    }

    /// The owner of `name`, unless it is a built-in.
    fn owner(&self, name: &str) -> Option<&Claim<T>> {
        if self.builtins.contains(name) {
            return None;
        }
        self.claims.get(name)?.first()
    }

    /// Names `ext` owns and names it claimed but does not own.
    fn of(&self, ext: &Extension) -> (Vec<String>, Vec<String>) {
        let (mut owned, mut shadowed) = (Vec::new(), Vec::new());
        for (name, list) in &self.claims {
            if !list.iter().any(|c| c.ext.is(ext)) {
                continue;
            }
            if self.owner(name).is_some_and(|c| c.ext.is(ext)) {
                owned.push(name.clone());
            } else {
                shadowed.push(name.clone());
            }
        }
        (owned, shadowed)
    }

    /// Every owned name with its owner and spec, sorted by name.
    fn owned(&self) -> impl Iterator<Item = (&Extension, &T)> {
        self.claims
            .keys()
            .filter_map(|name| self.owner(name))
            .map(|c| (&c.ext, &c.spec))
    }
}

/// A tool's registration, and its schema compiled at its first call (once per
/// registration, not per call).
struct Tool {
    reg: RegisterTool,
    validator: OnceLock<Arc<Validator>>,
}

/// All command and tool names.
pub(crate) struct Registry {
    commands: Names<RegisterCommand>,
    tools: Names<Tool>,
}

/// What one extension has in the registry.
#[derive(Debug, Default, Clone)]
pub struct Owned {
    pub commands: Vec<String>,
    pub tools: Vec<String>,
    /// Names it registered that a built-in or an earlier extension owns.
    pub shadowed: Vec<String>,
}

impl Registry {
    pub(crate) fn new(builtin_commands: &[String], builtin_tools: &[String]) -> Self {
        Registry {
            commands: Names::new("command", builtin_commands),
            tools: Names::new("tool", builtin_tools),
        }
    }

    pub(crate) fn claim_command(
        &mut self,
        ext: &Extension,
        reg: RegisterCommand,
    ) -> Vec<Extension> {
        self.commands.claim(ext, reg.name.clone(), reg)
    }

    pub(crate) fn claim_tool(&mut self, ext: &Extension, reg: RegisterTool) -> Vec<Extension> {
        let tool = Tool {
            validator: OnceLock::new(),
            reg,
        };
        self.tools.claim(ext, tool.reg.name.clone(), tool)
    }

    /// Drops `ext`'s claims; returns the extensions whose registrations changed: `ext`
    /// (if it had any) and those that took over one of its names.
    pub(crate) fn remove(&mut self, ext: &Extension) -> Vec<Extension> {
        let mut changed = self.commands.remove(ext);
        for e in self.tools.remove(ext) {
            if !changed.iter().any(|c| c.is(&e)) {
                changed.push(e);
            }
        }
        changed
    }

    pub(crate) fn command(&self, name: &str) -> Option<Extension> {
        self.commands.owner(name).map(|c| c.ext.clone())
    }

    pub(crate) fn tool(&self, name: &str) -> Option<Extension> {
        self.tools.owner(name).map(|c| c.ext.clone())
    }

    /// The extension that owned tool `name` last, when no one claims it now.
    pub(crate) fn departed_tool(&self, name: &str) -> Option<&str> {
        self.tools.departed.get(name).map(String::as_str)
    }

    /// The extension that owned command `name` last, when no one claims it now.
    pub(crate) fn departed_command(&self, name: &str) -> Option<&str> {
        self.commands.departed.get(name).map(String::as_str)
    }

    /// The active tool `name`'s schema, compiled (at its first call).
    pub(crate) fn tool_validator(&self, name: &str) -> Option<Arc<Validator>> {
        let tool = &self.tools.owner(name)?.spec;
        let validator = tool
            .validator
            .get_or_init(|| Arc::new(Validator::new(&tool.reg.schema)));
        Some(validator.clone())
    }

    pub(crate) fn is_builtin_tool(&self, name: &str) -> bool {
        self.tools.builtins.contains(name)
    }

    pub(crate) fn of(&self, ext: &Extension) -> Owned {
        let (commands, mut shadowed) = self.commands.of(ext);
        let (tools, shadowed_tools) = self.tools.of(ext);
        shadowed.extend(shadowed_tools);
        Owned {
            commands,
            tools,
            shadowed,
        }
    }

    /// Every active tool with its owner.
    pub(crate) fn tools(&self) -> Vec<(String, RegisterTool)> {
        self.tools
            .owned()
            .map(|(e, t)| (e.name().to_string(), t.reg.clone()))
            .collect()
    }

    /// Every active command with its owner.
    pub(crate) fn commands(&self) -> Vec<(String, RegisterCommand)> {
        self.commands
            .owned()
            .map(|(e, c)| (e.name().to_string(), c.clone()))
            .collect()
    }
}
