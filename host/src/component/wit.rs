//! Which world a component is built for, told by its exports: a reactor of a
//! `zot:extension` version this host speaks ([`SPOKEN`]), or a `wasi:cli/run` command.
//! The wasm transport has one set of bindings per spoken version (checked when it
//! compiles).

use super::ComponentError;

/// Every `zot:extension` WIT version this host speaks, oldest first.
pub const SPOKEN: &[&str] = &["0.1.0"];
/// The newest version this host speaks.
pub const NEWEST: &str = SPOKEN[SPOKEN.len() - 1];

/// What kind of component it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Exports `zot:extension/guest`: frames through `start`/`handle` and `host.send`.
    Reactor,
    /// Exports `wasi:cli/run`: frames over virtual stdin/stdout.
    Command,
    /// A WASI preview-1 core module exporting `_start`: frames over stdin/stdout, as a
    /// command.
    Preview1,
}

/// The world a component runs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum World {
    /// A reactor of this spoken `zot:extension` version (one of [`SPOKEN`]).
    Reactor(&'static str),
    /// A `wasi:cli/run` command.
    Command,
    /// A WASI preview-1 command module.
    Preview1,
}

impl World {
    /// A reactor or a command.
    pub fn kind(self) -> Kind {
        match self {
            World::Reactor(_) => Kind::Reactor,
            World::Command => Kind::Command,
            World::Preview1 => Kind::Preview1,
        }
    }
}

/// The export a reactor of version `wit` has.
fn guest_export(wit: &str) -> String {
    format!("zot:extension/guest@{wit}")
}

/// The guest exports of every version this host speaks, for messages.
pub(crate) fn guest_exports() -> String {
    SPOKEN
        .iter()
        .map(|v| guest_export(v))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The worlds this host speaks, for messages: `zot:extension@0.1.0 or …`.
pub(crate) fn spoken() -> String {
    SPOKEN
        .iter()
        .map(|v| format!("zot:extension@{v}"))
        .collect::<Vec<_>>()
        .join(" or ")
}

/// The world of a component with these top-level exports: the newest spoken reactor
/// version it exports, else a command; an error for one built only for other versions of
/// `zot:extension`, or for neither world.
pub fn world_of(exports: &[String]) -> Result<World, ComponentError> {
    if let Some(wit) = SPOKEN
        .iter()
        .rev()
        .find(|v| exports.contains(&guest_export(v)))
    {
        return Ok(World::Reactor(wit));
    }
    if let Some(other) = exports
        .iter()
        .find(|e| e.starts_with("zot:extension/guest@"))
    {
        return Err(ComponentError::WrongVersion {
            built_for: other.clone(),
        });
    }
    if exports.iter().any(|e| e.starts_with("wasi:cli/run@0.2")) {
        return Ok(World::Command);
    }
    Err(ComponentError::WrongWorld {
        exports: exports.to_vec(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    #[test]
    fn every_spoken_version_is_picked_by_its_export() {
        for wit in SPOKEN {
            let found = world_of(&names(&["wasi:cli/run@0.2.0", &guest_export(wit)]));
            assert_eq!(found.unwrap(), World::Reactor(wit));
        }
        assert_eq!(
            world_of(&names(&["wasi:cli/run@0.2.0"])).unwrap(),
            World::Command
        );
        let neither = world_of(&names(&["x"])).unwrap_err().to_string();
        assert!(neither.contains("(it exports: x)"), "{neither}");
    }

    #[test]
    fn another_version_is_refused_naming_the_spoken_ones() {
        let error = world_of(&names(&["zot:extension/guest@9.9.9"]))
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("built for zot:extension/guest@9.9.9"),
            "{error}"
        );
        for wit in SPOKEN {
            assert!(error.contains(&format!("zot:extension@{wit}")), "{error}");
        }
        assert!(
            error.contains(&format!("wit/zot-extension-{NEWEST}")),
            "{error}"
        );
    }
}
