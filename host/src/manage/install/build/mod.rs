//! Building at install what a source does not hold: when the program (`exec`), the
//! script a program from `PATH` runs, or the component (`wasm`) its manifest names is
//! missing, a recipe the source carries says how to make it — the manifest's `build`
//! (argv), `go.mod` (`go build`), `Cargo.toml` (`cargo build --release`) or a
//! `package.json` `build` script — and [`plan`] says exactly what will run, with which
//! toolchain, before anything runs. `--wasm` builds a component instead of a program,
//! and the staged manifest is made to run it in the sandbox. The build itself runs
//! confined (`run.rs`); what it made is recorded ([`Built`]).

#[cfg(target_os = "linux")]
mod run;
mod toolchain;

#[cfg(target_os = "linux")]
pub(super) use run::{run, Place, BUILD_TIMEOUT};
pub use toolchain::Toolchain;

use super::InstallError;
use crate::manifest::Manifest;
pub use crate::records::provenance::{Built, Recipe, Target};
use std::path::{Component, Path, PathBuf};

/// One command of a build, run in the source's copy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// The program (as found: [`Toolchain::command`]) and its arguments.
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

/// The whole source an extension installed with `--path` is a folder of. Its build runs
/// in the folder there, as in a checkout: a Go module, a Cargo workspace or an npm
/// `file:` dependency above the folder is found.
#[derive(Debug, Clone)]
pub enum Whole {
    /// The clone, in the staging folder.
    Cloned { top: PathBuf, sub: PathBuf },
    /// The user's folder, never built in: copied into the staging folder first.
    Copied { top: PathBuf, sub: PathBuf },
}

impl Whole {
    /// The extension's folder in it.
    pub fn folder(&self) -> PathBuf {
        match self {
            Whole::Cloned { top, sub } | Whole::Copied { top, sub } => top.join(sub),
        }
    }

    fn top(&self) -> &Path {
        match self {
            Whole::Cloned { top, .. } | Whole::Copied { top, .. } => top,
        }
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
    /// Where the build makes the file, relative to the build's cache, when not at
    /// `output` (Cargo's target folder is kept there): copied to `output` after it.
    pub artifact: Option<String>,
    /// It runs in the extension's folder of the whole source ([`Whole`]), not in the
    /// staged copy of the folder: what it makes is copied there after it.
    pub in_whole: bool,
}

/// The one port a fetch step may connect to: HTTPS, what Go's module proxy, crates.io
/// and the npm registry are reached by.
pub const FETCH_PORTS: &[u16] = &[443];

impl Plan {
    /// What the build may touch, in words, said at the prompt: how it is confined, and
    /// what of it this kernel does not enforce.
    pub fn may_touch(&self) -> Vec<String> {
        let ports: Vec<String> = FETCH_PORTS.iter().map(u16::to_string).collect();
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
        words.extend(self.not_enforced(!fetch.is_empty()));
        words
    }

    /// What this kernel does not hold of the build's confinement (the widest step's),
    /// said, not pretended.
    #[cfg(target_os = "linux")]
    fn not_enforced(&self, fetches: bool) -> Vec<String> {
        let widest = match fetches {
            true => crate::confine::Network::Fetch(FETCH_PORTS.to_vec()),
            false => crate::confine::Network::Off,
        };
        let (_, rules) = crate::confine::kernel_report(&widest);
        rules
            .iter()
            .filter(|r| !r.watched)
            .filter_map(|r| {
                let why = r.not_enforced.as_ref()?;
                Some(format!("not enforced on this kernel: {} ({why})", r.what))
            })
            .collect()
    }

    /// No confinement here: the build does not run ([`InstallError::BuildNotConfinable`]).
    #[cfg(not(target_os = "linux"))]
    fn not_enforced(&self, _: bool) -> Vec<String> {
        vec!["not enforced on this platform: any of it (the build will not run)".into()]
    }
}

/// How to build what `m` (staged in `tree`, a folder of `whole` with `--path`) runs, for
/// `target` (a component built for `--wasm` is `<name>.wasm`, `name` the one the source
/// gives it, which its `build:wasm` script may use too); `None` when it needs no build
/// (the program or component is there, or runs from `PATH`). An error when it needs one
/// and none can be made: no recipe, or its toolchain is missing. A Go module or Cargo
/// package is looked for in the folder, then in the folders above it up to the top of
/// the source.
pub fn plan(
    tree: &Path,
    m: &Manifest,
    (target, name): (Target, &str),
    whole: Option<&Whole>,
) -> Result<Option<Plan>, InstallError> {
    let (output, runs_component_instead) = match (target, m.wasm.as_deref(), m.exec.as_deref()) {
        // Already a component: `--wasm` changes nothing.
        (_, Some(wasm), _) => (wasm.to_string(), false),
        // A program from PATH running a script of the source (`node dist/main.js`): the
        // script is what a build makes.
        (Target::Native, None, Some(exec)) if !exec.contains('/') => {
            match m.args.first().filter(|a| a.contains('/')) {
                Some(script) => (script.clone(), false),
                None => return Ok(None),
            }
        }
        (Target::Native, None, Some(exec)) => (exec.to_string(), false),
        (Target::Wasm, None, Some(_)) => (format!("{name}.wasm"), true),
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
    // The manifest's own `build` wins for what the manifest runs; `--wasm` of a program
    // needs a toolchain's recipe.
    let own = m.build.as_ref().filter(|_| !runs_component_instead);
    // The folders a module or package may be declared in: the extension's, then up.
    let mut above = vec![tree.to_path_buf()];
    if let Some(whole) = whole {
        let folder = whole.folder();
        let top = whole.top();
        above.extend(
            folder
                .ancestors()
                .skip(1)
                .take_while(|dir| dir.starts_with(top))
                .map(Path::to_path_buf),
        );
    }
    let declared = |file: &str| above.iter().find(|dir| dir.join(file).is_file()).cloned();
    let recipe = match own {
        Some(_) => (Recipe::Manifest, tree.to_path_buf()),
        None => match (declared("go.mod"), declared("Cargo.toml")) {
            (Some(dir), _) => (Recipe::Go, dir),
            (None, Some(dir)) => (Recipe::Cargo, dir),
            (None, None) if npm_script(tree, builds_wasm).is_some() => {
                (Recipe::Npm, tree.to_path_buf())
            }
            (None, None) => {
                return Err(InstallError::NoRecipe {
                    missing: output,
                    wasm: runs_component_instead,
                })
            }
        },
    };
    let wasm = Wasm {
        builds: builds_wasm,
        instead: runs_component_instead,
    };
    let mut plan = match (recipe, own) {
        ((Recipe::Manifest, _), Some(argv)) => manifest_plan(argv, output, target)?,
        ((Recipe::Go, dir), _) => go_plan(&dir, output, wasm)?,
        ((Recipe::Cargo, dir), _) => cargo_plan(&dir, m, output, wasm)?,
        ((Recipe::Npm, dir), _) => npm_plan(&dir, output, wasm)?,
        ((Recipe::Manifest, _), None) => unreachable!("a manifest recipe has its argv"),
    };
    plan.in_whole = whole.is_some();
    Ok(Some(plan))
}

/// Whether a build makes a component, and whether the manifest is made to run it
/// instead of a program (`--wasm`).
#[derive(Clone, Copy)]
struct Wasm {
    builds: bool,
    instead: bool,
}

impl Wasm {
    /// The plan of a toolchain's `recipe`: its `steps` make `output` (or `artifact` in
    /// the build's cache, copied there).
    fn plan(
        self,
        (recipe, toolchain): (Recipe, Toolchain),
        steps: Vec<Step>,
        output: String,
        artifact: Option<String>,
    ) -> Plan {
        Plan {
            recipe,
            target: match self.builds {
                true => Target::Wasm,
                false => Target::Native,
            },
            toolchain,
            steps,
            output,
            runs_component_instead: self.instead,
            artifact,
            in_whole: false,
        }
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
        artifact: None,
        in_whole: false,
    })
}

/// `go build -o <output> .`, for `GOOS=wasip1 GOARCH=wasm` when it builds a module;
/// `go mod download` first when `go.mod` requires modules and no `vendor/` holds them.
fn go_plan(dir: &Path, output: String, wasm: Wasm) -> Result<Plan, InstallError> {
    let toolchain = Toolchain::go()?;
    let go = toolchain.command.clone();
    let requires = std::fs::read_to_string(dir.join("go.mod"))
        .map_err(InstallError::io("read", dir.join("go.mod")))?
        .lines()
        .any(|l| l.trim_start().starts_with("require"));
    let vendored = dir.join("vendor/modules.txt").is_file();
    let mut steps = Vec::new();
    if requires && !vendored {
        steps.push(Step {
            argv: vec![go.clone(), "mod".into(), "download".into()],
            env: Vec::new(),
            fetches: true,
        });
    }
    let env = match wasm.builds {
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
            // No `git` run on the clone to stamp the program.
            "-buildvcs=false".into(),
            "-o".into(),
            output.clone(),
            ".".into(),
        ],
        env,
        fetches: false,
    });
    Ok(wasm.plan((Recipe::Go, toolchain), steps, output, None))
}

/// `cargo build --release --offline --bin <name>` (for `--target wasm32-wasip2` when it
/// builds a component: a command component), `cargo fetch` first when `Cargo.toml`
/// has dependencies. The target folder is in the build's cache; the binary named by
/// the manifest's program (`target/release/demo`: `demo`) is copied into place.
fn cargo_plan(dir: &Path, m: &Manifest, output: String, wasm: Wasm) -> Result<Plan, InstallError> {
    let toolchain = Toolchain::cargo(wasm.builds)?;
    let cargo = toolchain.command.clone();
    let manifest = std::fs::read_to_string(dir.join("Cargo.toml"))
        .map_err(InstallError::io("read", dir.join("Cargo.toml")))?;
    // The binary: the program the manifest runs (for `--wasm`, the one it ran).
    let program = match wasm.instead {
        true => m.exec.as_deref().unwrap_or_default(),
        false => output.as_str(),
    };
    let bin = Path::new(program)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or_default()
        .to_string();
    let mut steps = Vec::new();
    if has_dependencies(&manifest) {
        steps.push(Step {
            argv: vec![cargo.clone(), "fetch".into()],
            env: Vec::new(),
            fetches: true,
        });
    }
    let mut argv = vec![
        cargo,
        "build".into(),
        "--release".into(),
        "--offline".into(),
    ];
    if wasm.builds {
        argv.extend(["--target".into(), WASM_TARGET.into()]);
    }
    argv.extend(["--bin".into(), bin.clone()]);
    steps.push(Step {
        argv,
        env: Vec::new(),
        fetches: false,
    });
    let artifact = match wasm.builds {
        true => format!("{CARGO_TARGET}/{WASM_TARGET}/release/{bin}.wasm"),
        false => format!("{CARGO_TARGET}/release/{bin}"),
    };
    Ok(wasm.plan((Recipe::Cargo, toolchain), steps, output, Some(artifact)))
}

/// The `package.json` script that builds it: `build`, or `build:wasm` for a component
/// (the TypeScript SDK's scaffold has both); `None` without one.
fn npm_script(dir: &Path, wasm: bool) -> Option<&'static str> {
    let text = std::fs::read(dir.join("package.json")).ok()?;
    let package: serde_json::Value = serde_json::from_slice(&text).ok()?;
    let script = if wasm { "build:wasm" } else { "build" };
    package["scripts"][script].is_string().then_some(script)
}

/// `npm ci` (or `npm install` without a lock file) when `package.json` has
/// dependencies, then `npm run build` (`build:wasm` for a component), which must make
/// the script (or component) the manifest names.
fn npm_plan(dir: &Path, output: String, wasm: Wasm) -> Result<Plan, InstallError> {
    let toolchain = Toolchain::npm()?;
    let npm = toolchain.command.clone();
    let script = npm_script(dir, wasm.builds).unwrap_or("build");
    let text = std::fs::read(dir.join("package.json"))
        .map_err(InstallError::io("read", dir.join("package.json")))?;
    let package: serde_json::Value = serde_json::from_slice(&text).unwrap_or_default();
    let has = |key: &str| package[key].as_object().is_some_and(|o| !o.is_empty());
    let mut steps = Vec::new();
    if has("dependencies") || has("devDependencies") {
        let install = match dir.join("package-lock.json").is_file() {
            true => "ci",
            false => "install",
        };
        steps.push(Step {
            argv: vec![npm.clone(), install.into()],
            env: Vec::new(),
            fetches: true,
        });
    }
    steps.push(Step {
        argv: vec![npm, "run".into(), script.into()],
        env: Vec::new(),
        fetches: false,
    });
    Ok(wasm.plan((Recipe::Npm, toolchain), steps, output, None))
}

/// The target a Rust source is built for to run in the sandbox: a command component.
pub const WASM_TARGET: &str = "wasm32-wasip2";

/// Cargo's target folder, in the build's cache.
pub const CARGO_TARGET: &str = "cargo-target";

/// Whether a `Cargo.toml` names a dependency (in any `…dependencies` table): then its
/// packages are fetched first. One it names that this misses makes the offline build
/// fail, saying which package it lacks.
fn has_dependencies(cargo_toml: &str) -> bool {
    let mut in_table = false;
    for line in cargo_toml.lines().map(str::trim) {
        if line.starts_with('[') {
            let table = line.trim_matches(|c| c == '[' || c == ']');
            in_table = table.ends_with("dependencies");
            if table.contains("dependencies.") {
                return true;
            }
        } else if in_table && !line.is_empty() && !line.starts_with('#') {
            return true;
        }
    }
    false
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
    fn a_cargo_toml_with_a_dependency_in_any_table_fetches() {
        let plain = "[package]\nname = \"x\"\n\n[dependencies]\n# none yet\n\n[profile.release]\nlto = true\n";
        assert!(!has_dependencies(plain));
        for with in [
            "[dependencies]\nserde = \"1\"\n",
            "[target.'cfg(unix)'.dependencies]\nlibc = \"0.2\"\n",
            "[dev-dependencies]\nx = { path = \"x\" }\n",
            "[dependencies.serde]\nversion = \"1\"\n",
            "[workspace.dependencies]\nserde = \"1\"\n",
        ] {
            assert!(has_dependencies(with), "{with}");
        }
    }

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
