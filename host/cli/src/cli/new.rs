//! `zot ext new <name> --lang …`: write a working extension to start from.
//!
//! The templates are files under `host/cli/templates/<lang>/`, embedded in the binary;
//! `{{key}}` placeholders in them are replaced by [`render`] (no template engine).

use super::error::CliError;
use std::path::{Path, PathBuf};
use zot_host::manage::manifest::validate_name;
use zot_host::manage::safe_write::SafeDir;

/// The languages a scaffold can be written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Lang {
    Rust,
    Python,
    Node,
    Typescript,
}

impl Lang {
    fn word(self) -> &'static str {
        match self {
            Lang::Rust => "rust",
            Lang::Python => "python",
            Lang::Node => "node",
            Lang::Typescript => "typescript",
        }
    }
}

#[derive(clap::Args)]
pub(crate) struct NewArgs {
    /// The extension's name (1–64 of A-Z a-z 0-9 . _ -, not starting with '.' or '-'):
    /// its folder, its slash command /<name> and its tool <name>_echo.
    name: String,
    /// The language of the scaffold.
    #[arg(long, value_enum)]
    lang: Lang,
    /// Rust only: a manifest running the sandboxed WebAssembly component
    /// (target/wasm32-wasip2/release/<name>.wasm) instead of the native build.
    #[arg(long)]
    wasm: bool,
    /// The folder to create the extension's folder <name> in.
    #[arg(long, value_name = "PARENT", default_value = ".", value_hint = clap::ValueHint::DirPath)]
    dir: PathBuf,
    /// Rust only: the zot-ext SDK's folder (guest-sdk/ of the zot sources); default: the
    /// one this zot was built from.
    #[arg(long, value_name = "PATH", value_hint = clap::ValueHint::DirPath)]
    sdk: Option<PathBuf>,
}

/// One file of a scaffold: its path in the new folder and its template.
type Template = (&'static str, &'static str);

macro_rules! template {
    ($out:literal, $file:literal) => {
        ($out, include_str!(concat!("../../templates/", $file)))
    };
}

const PYTHON: &[Template] = &[
    template!("extension.json", "python/extension.json"),
    template!("main.py", "python/main.py"),
    template!("README.md", "python/README.md"),
];

const NODE: &[Template] = &[
    template!("extension.json", "node/extension.json"),
    template!("index.js", "node/index.js"),
    template!("README.md", "node/README.md"),
];

const TYPESCRIPT: &[Template] = &[
    template!("extension.json", "typescript/extension.json"),
    template!("index.ts", "typescript/index.ts"),
    template!("package.json", "typescript/package.json"),
    template!("tsconfig.json", "typescript/tsconfig.json"),
    template!(".gitignore", "typescript/gitignore"),
    template!("README.md", "typescript/README.md"),
];

/// Native or component: the manifest's `{{launch}}` field names the `{{artifact}}`.
const RUST: &[Template] = &[
    template!("extension.json", "rust/extension.json"),
    template!("Cargo.toml", "rust/Cargo.toml.tmpl"),
    template!("src/main.rs", "rust/src/main.rs"),
    template!(".gitignore", "rust/gitignore"),
    template!("README.md", "rust/README.md"),
];

/// Replaces every `{{key}}` of `vars` in `text`; anything else is left as it is.
pub(crate) fn render(text: &str, vars: &[(&str, &str)]) -> String {
    let mut out = text.to_string();
    for (key, value) in vars {
        out = out.replace(&format!("{{{{{key}}}}}"), value);
    }
    out
}

/// `zot ext new` (a failure is exit 1).
pub(crate) fn run(args: NewArgs) -> Result<(), CliError> {
    new(args).map_err(CliError::from)
}

/// Writes the scaffold; prints what it created and what to run next.
fn new(args: NewArgs) -> Result<(), String> {
    let name = args.name.as_str();
    validate_name(name).map_err(|e| format!("invalid extension name: {e}"))?;
    if args.wasm && args.lang != Lang::Rust {
        let why = match args.lang {
            Lang::Python => {
                "no Python component toolchain is bundled; for a Python component, start \
                 from examples/hello-component-py (built with componentize-py)"
            }
            _ => "no JavaScript component toolchain is bundled",
        };
        return Err(format!(
            "--wasm is supported with --lang rust only ({why}); without --wasm, --lang {} \
             writes a classic extension",
            args.lang.word()
        ));
    }
    if args.sdk.is_some() && args.lang != Lang::Rust {
        return Err("--sdk applies to --lang rust only".into());
    }
    let dir = args.dir.join(name);
    refuse_existing(&dir)?;

    let krate = crate_name(name);
    let pkg = npm_name(name);
    let mut vars: Vec<(&str, String)> = vec![
        ("name", name.to_string()),
        ("crate", krate.clone()),
        ("pkg", pkg),
    ];
    let (templates, next_build): (&[Template], Option<String>) = match args.lang {
        Lang::Python => (PYTHON, None),
        Lang::Node => (NODE, None),
        Lang::Typescript => (TYPESCRIPT, None),
        Lang::Rust => {
            let sdk = sdk_dir(args.sdk.as_deref())?;
            let sdk_display = sdk.display().to_string();
            vars.push(("sdk", toml_string(&sdk_display)));
            vars.push(("sdk_display", sdk_display));
            let build = if args.wasm {
                vars.push(("wasm_flag", " --wasm".into()));
                vars.push(("flavour", "sandboxed WebAssembly component".into()));
                vars.push(("kind", "sandboxed component".into()));
                vars.push(("launch", "wasm".into()));
                vars.push((
                    "artifact",
                    format!("target/wasm32-wasip2/release/{krate}.wasm"),
                ));
                "rustup target add wasm32-wasip2   # once\ncargo build --release --target wasm32-wasip2"
            } else {
                vars.push(("wasm_flag", String::new()));
                vars.push(("flavour", "native build".into()));
                vars.push(("kind", "native".into()));
                vars.push(("launch", "exec".into()));
                vars.push(("artifact", format!("target/release/{krate}")));
                "cargo build --release"
            };
            vars.push(("build", build.to_string()));
            (RUST, Some(build.to_string()))
        }
    };
    let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();

    // Nothing is written through a link: the folder and its subfolders are opened
    // without following one, each file created afresh in them (see `safe_write`).
    let root = SafeDir::create(&args.dir)
        .and_then(|parent| parent.create_sub(name))
        .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    for (path, template) in templates {
        let mut parts: Vec<&str> = path.split('/').collect();
        let file = parts.pop().unwrap_or_default();
        let mut sub: Option<SafeDir> = None;
        for part in parts {
            let here = sub.as_ref().unwrap_or(&root);
            let next = here
                .create_sub(part)
                .map_err(|e| format!("cannot create {}: {e}", here.path().join(part).display()))?;
            sub = Some(next);
        }
        sub.as_ref()
            .unwrap_or(&root)
            .write(file, render(template, &vars).as_bytes())
            .map_err(|e| format!("cannot write {}: {e}", dir.join(path).display()))?;
    }

    let shown = zot_host::terminal_text::shell_word(&dir.display().to_string());
    let flavour = match (args.lang, args.wasm) {
        (Lang::Rust, true) => "rust, sandboxed component",
        (Lang::Rust, false) => "rust, native",
        (lang, _) => lang.word(),
    };
    say!("Created {name} ({flavour}) in {}:", dir.display());
    for (path, _) in templates {
        say!("  {path}");
    }
    say!();
    say!("Next:");
    if let Some(build) = next_build {
        say!("  cd {shown}");
        for line in build.lines() {
            say!("  {line}");
        }
        say!("  zot ext check .");
        say!("  zot ext install .");
    } else {
        let wait = if args.lang == Lang::Typescript {
            " --wait 120s   # the first start downloads tsx"
        } else {
            ""
        };
        say!("  zot ext check {shown}{wait}");
        say!("  zot ext install {shown}");
    }
    Ok(())
}

/// Refuses a target that exists, unless it is an empty folder (not a link to one).
fn refuse_existing(dir: &Path) -> Result<(), String> {
    if dir
        .symlink_metadata()
        .is_ok_and(|m| m.file_type().is_symlink())
    {
        return Err(format!(
            "{} is a link: zot writes a new extension only into a folder of its own; \
             choose another name or --dir",
            dir.display()
        ));
    }
    match std::fs::read_dir(dir) {
        Ok(mut entries) => {
            if entries.next().is_some() {
                Err(format!(
                    "{} already exists and is not empty: choose another name or --dir",
                    dir.display()
                ))
            } else {
                Ok(())
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if dir.symlink_metadata().is_ok() {
                Err(format!("{} already exists", dir.display()))
            } else {
                Ok(())
            }
        }
        Err(_) if dir.symlink_metadata().is_ok() => Err(format!(
            "{} already exists and is not a folder",
            dir.display()
        )),
        Err(e) => Err(format!("cannot read {}: {e}", dir.display())),
    }
}

/// The SDK's folder: `--sdk`, or guest-sdk/ of the sources this binary was built from.
fn sdk_dir(flag: Option<&Path>) -> Result<PathBuf, String> {
    let (dir, hint) = match flag {
        Some(dir) => (dir.to_path_buf(), "the folder given with --sdk"),
        None => (
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../guest-sdk"),
            "where it was when this zot was built; pass --sdk PATH to the guest-sdk/ folder \
             of the zot sources",
        ),
    };
    let canonical = std::fs::canonicalize(&dir)
        .map_err(|e| format!("the zot-ext SDK is not at {} ({hint}): {e}", dir.display()))?;
    let manifest = canonical.join("Cargo.toml");
    let is_sdk =
        std::fs::read_to_string(&manifest).is_ok_and(|text| text.contains("name = \"zot-ext\""));
    if !is_sdk {
        return Err(format!(
            "{} is not the zot-ext SDK (no Cargo.toml of the package zot-ext there; {hint})",
            canonical.display()
        ));
    }
    Ok(canonical)
}

/// A cargo package name for `name`: `.` is not allowed there, nor a leading digit.
fn crate_name(name: &str) -> String {
    let name = name.replace('.', "_");
    if name.starts_with(|c: char| c.is_ascii_digit()) {
        format!("ext_{name}")
    } else {
        name
    }
}

/// An npm package name for `name`: lower case, not starting with `_`.
fn npm_name(name: &str) -> String {
    let name = name.to_ascii_lowercase();
    if name.starts_with('_') {
        format!("ext{name}")
    } else {
        name
    }
}

/// A TOML basic string holding `text`.
fn toml_string(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use zot_host::manage::manifest::MANIFEST_FILE;

    const ALL: &[&[Template]] = &[PYTHON, NODE, TYPESCRIPT, RUST];

    #[test]
    fn render_replaces_only_known_keys() {
        let out = render("{{name}}: {{name}} {{other}} {x}", &[("name", "demo")]);
        assert_eq!(out, "demo: demo {{other}} {x}");
    }

    #[test]
    fn every_template_is_filled_and_every_manifest_is_json() {
        let vars = [
            ("name", "demo"),
            ("crate", "demo"),
            ("pkg", "demo"),
            ("sdk", "\"/sdk\""),
            ("sdk_display", "/sdk"),
            ("wasm_flag", ""),
            ("flavour", "native build"),
            ("kind", "native"),
            ("launch", "exec"),
            ("artifact", "target/release/demo"),
            ("build", "cargo build --release"),
        ];
        for templates in ALL {
            assert!(templates.iter().any(|(p, _)| *p == MANIFEST_FILE));
            for (path, template) in *templates {
                let out = render(template, &vars);
                for (key, _) in vars {
                    assert!(!out.contains(&format!("{{{{{key}}}}}")), "{path}: {key}");
                }
                if path.ends_with(".json") {
                    let v: serde_json::Value =
                        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{path}: {e}\n{out}"));
                    if *path == MANIFEST_FILE {
                        assert_eq!(v["name"], "demo", "{path}");
                    }
                }
            }
        }
    }

    #[test]
    fn names_become_valid_package_names() {
        assert_eq!(crate_name("my.ext"), "my_ext");
        assert_eq!(crate_name("9lives"), "ext_9lives");
        assert_eq!(npm_name("My_Ext"), "my_ext");
        assert_eq!(npm_name("_x"), "ext_x");
        assert_eq!(toml_string(r#"C:\a "b""#), r#""C:\\a \"b\"""#);
    }
}
