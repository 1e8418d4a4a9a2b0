//! Building at install what a source does not hold: when the program (`exec`) or
//! component (`wasm`) its manifest names is missing, a recipe the source carries says how
//! to make it — the manifest's `build` (argv), or `go.mod` (`go build`) — and
//! [`plan`] says exactly what will run, with which toolchain, before anything runs.
//! `--wasm` builds a component instead of a program (Go: `GOOS=wasip1`), and the staged
//! manifest is made to run it in the sandbox. The build itself runs confined in the
//! staging copy ([`run`]); what it made is recorded ([`Built`]).

#[cfg(target_os = "linux")]
mod run;
mod toolchain;

#[cfg(target_os = "linux")]
pub(super) use run::{run, Place, BUILD_TIMEOUT};
pub use toolchain::Toolchain;

use super::InstallError;
use crate::manifest::Manifest;
pub use crate::records::provenance::{Built, Recipe, Target};
use std::path::{Component, Path};

/// One command of a build, run in the source's copy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// The program (as found: [`Toolchain::program`]) and its arguments.
    pub argv: Vec<String>,
    /// Variables that change what it makes (`GOOS=wasip1`), shown before the command.
    pub env: Vec<(String, String)>,
    /// It fetches packages: it may use the network (HTTPS, name lookups).
    pub fetches: bool,
}

impl Step {
    /// The command as the user would type it: `GOOS=wasip1 GOARCH=wasm go build -o x .`.
    pub fn shown(&self) -> String {
        let env = self.env.iter().map(|(k, v)| format!("{k}={v}"));
        let words: Vec<String> = env.chain(self.argv.iter().cloned()).collect();
        crate::util::terminal_text::command_line(words.iter().map(String::as_str))
    }
}

/// What an install will build, and how: shown to the user, who consents before it runs.
#[derive(Debug, Clone)]
pub struct Plan {
    pub recipe: Recipe,
    pub target: Target,
    pub toolchain: Toolchain,
    pub steps: Vec<Step>,
    /// The file the build makes, relative to the extension's folder (`/`-separated).
    pub output: String,
    /// `--wasm` of a manifest that runs a program: the staged manifest is made to run
    /// `output` as a component instead (its `exec` and `args` dropped).
    pub runs_component_instead: bool,
}

impl Plan {
    /// What the build may touch, in words, said at the prompt: how it is confined.
    #[cfg(target_os = "linux")]
    pub fn may_touch(&self) -> Vec<String> {
        let ports: Vec<String> = crate::confine::FETCH_PORTS
            .iter()
            .map(u16::to_string)
            .collect();
        let fetch = self
            .steps
            .iter()
            .filter(|s| s.fetches)
            .map(|s| format!("`{}`", s.shown()))
            .collect::<Vec<_>>();
        let network = match fetch.is_empty() {
            true => "network: none".to_string(),
            false => format!(
                "network: only {} (TCP port {}, and UDP for name lookups)",
                fetch.join(", "),
                ports.join(", ")
            ),
        };
        let mut words = vec![
            "reads: the system's program folders, the toolchain, the source's copy".into(),
            "writes: only the source's copy and its own cache ($ZOT_HOME/cache/build/…)".into(),
            network,
            "environment: none of yours (a HOME and a temp dir of its own)".into(),
        ];
        // What this kernel does not hold of it is said, not pretended.
        let widest = match fetch.is_empty() {
            true => crate::confine::Network::Off,
            false => crate::confine::Network::Fetch(crate::confine::FETCH_PORTS.to_vec()),
        };
        let (_, rules) = crate::confine::kernel_report(&widest);
        for rule in rules.iter().filter(|r| !r.watched) {
            if let Some(why) = &rule.not_enforced {
                words.push(format!(
                    "not enforced on this kernel: {} ({why})",
                    rule.what
                ));
            }
        }
        words
    }
}

/// How to build what `m` (staged in `tree`) runs, for `target`; `None` when it needs no
/// build (the program or component is there, or runs from `PATH`). An error when it
/// needs one and none can be made: no recipe, or its toolchain is missing.
pub fn plan(tree: &Path, m: &Manifest, target: Target) -> Result<Option<Plan>, InstallError> {
    let (output, runs_component_instead) = match (target, m.wasm.as_deref(), m.exec.as_deref()) {
        // Already a component: `--wasm` changes nothing.
        (_, Some(wasm), _) => (wasm.to_string(), false),
        (Target::Native, None, Some(exec)) => (exec.to_string(), false),
        (Target::Wasm, None, Some(_)) => (format!("{}.wasm", m.name), true),
        // An MCP server: nothing of its own to build.
        (_, None, None) => return Ok(None),
    };
    let Some(output) = inside(&output, m.wasm.is_some() || runs_component_instead) else {
        // A program from PATH (`python3`) or elsewhere: not the source's to build.
        return Ok(None);
    };
    if !runs_component_instead && tree.join(&output).symlink_metadata().is_ok() {
        return Ok(None);
    }
    let builds_wasm = runs_component_instead || m.wasm.is_some();
    let recipe = if tree.join("go.mod").is_file() && (builds_wasm || m.build.is_none()) {
        Recipe::Go
    } else if let (Some(argv), false) = (&m.build, runs_component_instead) {
        return Ok(Some(manifest_plan(argv, output, target)?));
    } else {
        return Err(InstallError::NoRecipe {
            missing: output,
            wasm: runs_component_instead,
        });
    };
    match recipe {
        Recipe::Go => go_plan(tree, output, builds_wasm, runs_component_instead).map(Some),
        Recipe::Manifest => unreachable!("planned above"),
    }
}

/// The manifest's own `build`: its program found as a command is (on `PATH`, or a path
/// in the source).
fn manifest_plan(argv: &[String], output: String, target: Target) -> Result<Plan, InstallError> {
    let toolchain = Toolchain::for_program(&argv[0])?;
    Ok(Plan {
        recipe: Recipe::Manifest,
        target,
        steps: vec![Step {
            argv: argv.to_vec(),
            env: Vec::new(),
            fetches: false,
        }],
        toolchain,
        output,
        runs_component_instead: false,
    })
}

/// `go build -o <output> .`, for `GOOS=wasip1 GOARCH=wasm` when it builds a module;
/// `go mod download` first when `go.mod` requires modules and no `vendor/` holds them.
fn go_plan(
    tree: &Path,
    output: String,
    wasm: bool,
    runs_component_instead: bool,
) -> Result<Plan, InstallError> {
    let toolchain = Toolchain::go()?;
    let go = toolchain.command.clone();
    let requires = std::fs::read_to_string(tree.join("go.mod"))
        .map_err(InstallError::io("read", tree.join("go.mod")))?
        .lines()
        .any(|l| l.trim_start().starts_with("require"));
    let vendored = tree.join("vendor/modules.txt").is_file();
    let mut steps = Vec::new();
    if requires && !vendored {
        steps.push(Step {
            argv: vec![go.clone(), "mod".into(), "download".into()],
            env: Vec::new(),
            fetches: true,
        });
    }
    let env = match wasm {
        true => vec![
            ("GOOS".to_string(), "wasip1".to_string()),
            ("GOARCH".to_string(), "wasm".to_string()),
        ],
        false => Vec::new(),
    };
    steps.push(Step {
        // `-trimpath`: no staging path in the program, so that the same source built
        // again (`zot ext update`) is the same file.
        argv: vec![
            go,
            "build".into(),
            "-trimpath".into(),
            "-o".into(),
            output.clone(),
            ".".into(),
        ],
        env,
        fetches: false,
    });
    Ok(Plan {
        recipe: Recipe::Go,
        target: if wasm { Target::Wasm } else { Target::Native },
        toolchain,
        steps,
        output,
        runs_component_instead,
    })
}

/// `path` as a plain relative path inside a folder (`./x` → `x`), or `None` when it
/// leaves it, is absolute, or is a bare command name looked up on `PATH` (an `exec`
/// without a `/`: not a `file`, as a component always is).
fn inside(path: &str, file: bool) -> Option<String> {
    if !file && !path.contains('/') {
        return None;
    }
    let mut parts = Vec::new();
    for c in Path::new(path).components() {
        match c {
            Component::CurDir => {}
            Component::Normal(p) => parts.push(p.to_str()?.to_string()),
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_path_inside_the_folder_is_the_source_s_to_build() {
        assert_eq!(inside("./go-async", false).as_deref(), Some("go-async"));
        assert_eq!(inside("bin/ext", false).as_deref(), Some("bin/ext"));
        assert_eq!(inside("ext.wasm", true).as_deref(), Some("ext.wasm"));
        assert_eq!(inside("python3", false), None);
        for outside in ["../x/y", "/usr/bin/node", "./", "a/../../b"] {
            assert_eq!(inside(outside, true), None, "{outside}");
        }
    }
}
