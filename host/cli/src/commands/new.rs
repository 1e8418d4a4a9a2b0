//! `zot ext new <name> --lang …`: write a working extension to start from.
//!
//! The templates are files under `host/cli/templates/<lang>/`, embedded in the binary;
//! `{{key}}` placeholders in them are replaced by [`render`] (no template engine).

use crate::flags::sdk::{sdk_dir, Sdk};
use crate::output::error::CliError;
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
    Go,
}

impl Lang {
    fn word(self) -> &'static str {
        match self {
            Lang::Rust => "rust",
            Lang::Python => "python",
            Lang::Node => "node",
            Lang::Typescript => "typescript",
            Lang::Go => "go",
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
    /// A sandboxed WebAssembly component instead of a native program: Rust builds it
    /// with `cargo build --target wasm32-wasip2`; TypeScript and JavaScript (`node`) on
    /// the @zot/ext SDK with `npm run build` (esbuild, then --engine's tool); Go as a
    /// WASI preview-1 module (`GOOS=wasip1 GOARCH=wasm go build`).
    #[arg(long)]
    wasm: bool,
    /// TypeScript and JavaScript with --wasm: the JavaScript engine inside the component.
    /// quickjs (componentize-qjs): about 1.8 MB, about 2 s for its first compile, no
    /// event loop (handlers synchronous); starlingmonkey (componentize-js): async
    /// handlers, timers and Web APIs, about 12 MB, about 15 s for its first compile.
    #[arg(long, value_enum, value_name = "ENGINE")]
    engine: Option<Engine>,
    /// The folder to create the extension's folder <name> in.
    #[arg(long, value_name = "PARENT", default_value = ".", value_hint = clap::ValueHint::DirPath)]
    dir: PathBuf,
    /// Rust, TypeScript, and JavaScript with --wasm: the SDKs' folder (guest-sdk/ of the
    /// zot sources: zot-ext there, @zot/ext in its ts/); default: the one this zot was
    /// built from.
    #[arg(long, value_name = "PATH", value_hint = clap::ValueHint::DirPath)]
    sdk: Option<PathBuf>,
}

/// The JavaScript engine a TypeScript or JavaScript component embeds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Engine {
    Quickjs,
    Starlingmonkey,
}

/// The build tools a component scaffold pins (examples/ts-hello pins the same; a test
/// checks it), and StarlingMonkey's.
const TYPESCRIPT_VERSION: &str = "5.9.3";
const ESBUILD_VERSION: &str = "0.28.2";
const COMPONENTIZE_QJS_VERSION: &str = "0.4.5";
const COMPONENTIZE_JS_VERSION: &str = "0.23.0";
/// componentize-js 0.23.0 imports it without declaring it: named, so an install has it.
const PREVIEW2_SHIM_VERSION: &str = "0.25.0";

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

/// Go, standard library only: native or a preview-1 module, the same source.
const GO: &[Template] = &[
    template!("extension.json", "go/extension.json"),
    template!("go.mod", "go/go.mod"),
    template!("main.go", "go/main.go"),
    template!(".gitignore", "go/gitignore"),
    template!("README.md", "go/README.md"),
];

const NODE: &[Template] = &[
    template!("extension.json", "node/extension.json"),
    template!("index.js", "node/index.js"),
    template!("README.md", "node/README.md"),
];

/// The published WIT package a JavaScript component implements, written into its scaffold.
const WIT: &str = include_str!("../../../../wit/zot-extension-0.1.0/extension.wit");

/// TypeScript on the @zot/ext SDK: a Node script (`npm run build:node`) or a component
/// (`npm run build:wasm`); the manifest runs one, `npm run build` builds it.
const SDK_TS: &[Template] = &[
    template!("extension.json", "sdk/extension.json"),
    template!("package.json", "sdk/package.json"),
    template!("tsconfig.json", "sdk/tsconfig.json"),
    template!("src/main.ts", "sdk/src/main.ts"),
    template!("src/component.ts", "sdk/src/component.ts"),
    ("wit/extension.wit", WIT),
    template!(".npmrc", "sdk/npmrc"),
    template!(".gitignore", "sdk/gitignore"),
    template!("README.md", "sdk/README.md"),
];

/// The same in JavaScript: the templates without their types.
const SDK_JS: &[Template] = &[
    template!("extension.json", "sdk/extension.json"),
    template!("package.json", "sdk/package.json"),
    template!("src/main.js", "sdk/src/main.ts"),
    template!("src/component.js", "sdk/src/component.ts"),
    ("wit/extension.wit", WIT),
    template!(".npmrc", "sdk/npmrc"),
    template!(".gitignore", "sdk/gitignore"),
    template!("README.md", "sdk/README.md"),
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
    check_flags(&args)?;
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
        Lang::Node if !args.wasm => (NODE, None),
        Lang::Typescript | Lang::Node => {
            let sdk = sdk_dir(args.sdk.as_deref(), Sdk::Ts)?;
            let typescript = args.lang == Lang::Typescript;
            let engine = args.engine.unwrap_or(Engine::Quickjs);
            sdk_vars(&mut vars, name, typescript, args.wasm, engine);
            vars.push((
                "sdk_ts",
                serde_json::Value::from(format!("file:{}", sdk.display())).to_string(),
            ));
            let templates = if typescript { SDK_TS } else { SDK_JS };
            (templates, Some("npm install\nnpm run build".into()))
        }
        Lang::Go => {
            let build = go_vars(&mut vars, name, args.wasm);
            vars.push(("build", build.clone()));
            (GO, Some(build))
        }
        Lang::Rust => {
            let sdk = sdk_dir(args.sdk.as_deref(), Sdk::Rust)?;
            let sdk_display = sdk.display().to_string();
            vars.push(("sdk", toml_string(&sdk_display)));
            vars.push(("sdk_display", sdk_display));
            let build = rust_vars(&mut vars, &krate, args.wasm);
            vars.push(("build", build.to_string()));
            (RUST, Some(build.to_string()))
        }
    };
    let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();

    write_templates(&args.dir, name, templates, &vars)?;

    print_next(&args, &dir, templates, next_build);
    Ok(())
}

/// Refuses flags that do not go together.
fn check_flags(args: &NewArgs) -> Result<(), String> {
    let javascript = matches!(args.lang, Lang::Node | Lang::Typescript);
    if args.wasm && args.lang == Lang::Python {
        return Err(
            "--wasm is not supported with --lang python (no Python component \
                    toolchain is bundled; for a Python component, start from \
                    examples/hello-component-py, built with componentize-py); without \
                    --wasm, --lang python writes a classic extension"
                .into(),
        );
    }
    if args.engine.is_some() && !(javascript && args.wasm) {
        return Err("--engine applies to --lang typescript or node with --wasm".into());
    }
    let on_sdk = match args.lang {
        Lang::Rust | Lang::Typescript => true,
        Lang::Node => args.wasm,
        Lang::Python | Lang::Go => false,
    };
    if args.sdk.is_some() && !on_sdk {
        return Err(
            "--sdk applies to --lang rust and typescript, and to node with --wasm: the other \
             scaffolds use no SDK"
                .into(),
        );
    }
    Ok(())
}

/// The variables of a Go scaffold, native or a preview-1 module (`wasm`); the build
/// command.
fn go_vars(vars: &mut Vec<(&str, String)>, name: &str, wasm: bool) -> String {
    // A module path takes the name's letters, digits, `.`, `_` and `-` as they are.
    vars.push(("gomod", name.to_string()));
    let out = zot_host::terminal_text::shell_word(name);
    if wasm {
        vars.push(("wasm_flag", " --wasm".into()));
        vars.push(("go_kind", ", sandboxed".into()));
        vars.push(("flavour", "sandboxed WebAssembly (preview-1) module".into()));
        vars.push(("launch", "wasm".into()));
        vars.push(("artifact", format!("{name}.wasm")));
        format!("GOOS=wasip1 GOARCH=wasm go build -o {out}.wasm .")
    } else {
        vars.push(("wasm_flag", String::new()));
        vars.push(("go_kind", String::new()));
        vars.push(("flavour", "native build".into()));
        vars.push(("launch", "exec".into()));
        vars.push(("artifact", format!("./{name}")));
        format!("go build -o {out} .")
    }
}

/// The variables of a Rust scaffold, native or a component (`wasm`); the build command.
fn rust_vars(vars: &mut Vec<(&str, String)>, krate: &str, wasm: bool) -> &'static str {
    if wasm {
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
    }
}

/// Writes `templates`, rendered with `vars`, into the new folder `name` of `parent`.
fn write_templates(
    parent: &Path,
    name: &str,
    templates: &[Template],
    vars: &[(&str, &str)],
) -> Result<(), String> {
    let dir = parent.join(name);
    // Nothing is written through a link: the folder and its subfolders are opened
    // without following one, each file created afresh in them (see `safe_write`).
    let root = SafeDir::create(parent)
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
            .write(file, render(template, vars).as_bytes())
            .map_err(|e| format!("cannot write {}: {e}", dir.join(path).display()))?;
    }

    Ok(())
}

/// Says what was created and what to run next.
fn print_next(args: &NewArgs, dir: &Path, templates: &[Template], next_build: Option<String>) {
    let name = args.name.as_str();
    let shown = zot_host::terminal_text::shell_word(&dir.display().to_string());
    let flavour = match (args.lang, args.wasm) {
        (Lang::Rust, true) => "rust, sandboxed component".to_string(),
        (Lang::Rust, false) => "rust, native".to_string(),
        (lang @ (Lang::Node | Lang::Typescript), true) => {
            let engine = match args.engine.unwrap_or(Engine::Quickjs) {
                Engine::Quickjs => "QuickJS",
                Engine::Starlingmonkey => "StarlingMonkey",
            };
            format!("{}, sandboxed component ({engine})", lang.word())
        }
        (Lang::Typescript, false) => "typescript, Node script".to_string(),
        (Lang::Go, true) => "go, sandboxed preview-1 module".to_string(),
        (Lang::Go, false) => "go, native".to_string(),
        (lang, _) => lang.word().to_string(),
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
        say!("  zot ext check {shown}");
        say!("  zot ext install {shown}");
    }
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

/// The variables of a scaffold on @zot/ext (`SDK_TS`, `SDK_JS`): a Node script or, with
/// `wasm`, a component built with `engine`.
fn sdk_vars(
    vars: &mut Vec<(&str, String)>,
    name: &str,
    typescript: bool,
    wasm: bool,
    engine: Engine,
) {
    let (language, word, ext) = if typescript {
        ("typescript", "TypeScript", "ts")
    } else {
        ("node", "JavaScript", "js")
    };
    let mut tools = vec![("esbuild", ESBUILD_VERSION)];
    let (engine_word, engine_flag, componentize, note, line) =
        engine_words(engine, name, &mut tools);
    if typescript {
        tools.push(("typescript", TYPESCRIPT_VERSION));
    }
    tools.sort();
    let dev_dependencies = tools
        .iter()
        .map(|(package, version)| format!("\"{package}\": \"{version}\""))
        .collect::<Vec<_>>()
        .join(",\n    ");
    let tool = if typescript { "type check (tsc), " } else { "" };
    let builder = componentize.split(' ').next().unwrap_or_default();
    let (launch, kind, artifact, default_build, build_steps, dev_pad) = if wasm {
        (
            format!("\"wasm\": \"{name}.wasm\""),
            "sandboxed component",
            format!("{name}.wasm"),
            "build:wasm",
            format!("{tool}bundle (esbuild), then {name}.wasm ({builder})"),
            "  ",
        )
    } else {
        (
            "\"exec\": \"node\",\n  \"args\": [\"dist/main.js\"]".to_string(),
            "Node script",
            "dist/main.js".to_string(),
            "build:node",
            format!("{tool}bundle (esbuild) into dist/main.js"),
            "         ",
        )
    };
    let typed = |ts: &str| {
        if typescript {
            ts.to_string()
        } else {
            String::new()
        }
    };
    vars.extend([
        ("language", language.to_string()),
        ("language_word", word.to_string()),
        ("ext", ext.to_string()),
        ("check", typed("tsc -p . && ")),
        ("string_type", typed(": string")),
        ("args_type", typed(": { text?: unknown }")),
        (
            "tool_args_type",
            typed(" as { command?: unknown } | undefined"),
        ),
        (
            "tsconfig_row",
            typed(
                "\n| `tsconfig.json` | TypeScript's settings (the build checks the types first) |",
            ),
        ),
        ("engine_word", engine_word.to_string()),
        ("engine_flag", engine_flag.to_string()),
        ("engine_note", note.to_string()),
        ("engine_line", line.to_string()),
        ("componentize", componentize.clone()),
        ("dev_dependencies", dev_dependencies),
        ("build_steps", build_steps),
        ("launch", launch),
        ("kind", kind.to_string()),
        ("artifact", artifact),
        ("default_build", default_build.to_string()),
        ("wasm_flag", if wasm { " --wasm" } else { "" }.to_string()),
        ("dev_pad", dev_pad.to_string()),
    ]);
}

/// What a component scaffold says of its JavaScript engine: its name, its `--engine`
/// flag, the command that makes the component, a note for the README and a line for the
/// source; the tools it needs are added to `tools`.
fn engine_words(
    engine: Engine,
    name: &str,
    tools: &mut Vec<(&'static str, &'static str)>,
) -> (
    &'static str,
    &'static str,
    String,
    &'static str,
    &'static str,
) {
    match engine {
        Engine::Quickjs => {
            tools.push(("componentize-qjs", COMPONENTIZE_QJS_VERSION));
            (
                "componentize-qjs (QuickJS)",
                "",
                format!("componentize-qjs --sync --wit wit --js dist/component.js -o {name}.wasm"),
                "QuickJS makes a small component (about 1.8 MB, about 2 s to compile) but has no \
                 event loop: nothing runs between two frames, so a handler must answer before \
                 it returns (one that returns a promise fails at once, saying so), and there \
                 are no timers. For async handlers, timers and the Web APIs (`TextEncoder`, \
                 `URL`, `crypto`, `AbortController`), build with StarlingMonkey: \
                 `zot ext new <name> --lang <lang> --wasm --engine starlingmonkey`.",
                "In the component (QuickJS) nothing runs between frames: keep handlers synchronous.",
            )
        }
        Engine::Starlingmonkey => {
            tools.push(("@bytecodealliance/componentize-js", COMPONENTIZE_JS_VERSION));
            tools.push(("@bytecodealliance/preview2-shim", PREVIEW2_SHIM_VERSION));
            (
                "componentize-js (StarlingMonkey)",
                " --engine starlingmonkey",
                format!(
                    "componentize-js dist/component.js --wit wit --world-name extension \
                     --disable http fetch-event -o {name}.wasm"
                ),
                "StarlingMonkey has an event loop and the Web APIs (timers, `TextEncoder`, `URL`, \
                 `crypto`, `AbortController`): handlers may be async. Each frame runs to its \
                 end inside the host's call, so a `tool_cancel` reaches a call only after it \
                 returned. The component is about 12 MB, its first compile takes about 15 s (then \
                 zot caches it), and the tools take about 390 MB of `node_modules`.",
                "In the component (StarlingMonkey) handlers may be async; each frame runs to its end.",
            )
        }
    }
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

    const ALL: &[&[Template]] = &[PYTHON, NODE, RUST];

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

    /// Every variable of a JavaScript component scaffold is filled, its JSON files parse,
    /// and it pins the tools the example (examples/ts-hello) pins.
    #[test]
    fn component_scaffolds_are_filled_and_pin_the_examples_tools() {
        let example: serde_json::Value =
            serde_json::from_str(include_str!("../../../../examples/ts-hello/package.json"))
                .unwrap();
        for (typescript, wasm) in [(true, true), (true, false), (false, true)] {
            for engine in [Engine::Quickjs, Engine::Starlingmonkey] {
                let mut vars = vec![
                    ("name", "demo".to_string()),
                    ("pkg", "demo".to_string()),
                    ("sdk_ts", "\"file:/sdk/ts\"".to_string()),
                ];
                sdk_vars(&mut vars, "demo", typescript, wasm, engine);
                let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
                let templates = if typescript { SDK_TS } else { SDK_JS };
                for (path, template) in templates {
                    let out = render(template, &vars);
                    let what =
                        format!("{path} (typescript: {typescript}, wasm: {wasm}, {engine:?})");
                    if *path != "wit/extension.wit" {
                        assert!(!out.contains("{{"), "{what}:\n{out}");
                    }
                    if path.starts_with("src/main") {
                        assert_eq!(out.contains(": string"), typescript, "{what}");
                    }
                    if !path.ends_with(".json") {
                        continue;
                    }
                    let v: serde_json::Value =
                        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{what}: {e}\n{out}"));
                    if *path == MANIFEST_FILE {
                        match wasm {
                            true => assert_eq!(v["wasm"], "demo.wasm", "{what}"),
                            false => assert_eq!(
                                (&v["exec"], &v["args"]),
                                (&"node".into(), &serde_json::json!(["dist/main.js"])),
                                "{what}"
                            ),
                        }
                    }
                    if *path != "package.json" {
                        continue;
                    }
                    let build = if wasm {
                        "npm run build:wasm"
                    } else {
                        "npm run build:node"
                    };
                    assert_eq!(v["scripts"]["build"], build, "{what}");
                    assert_eq!(v["dependencies"]["@zot/ext"], "file:/sdk/ts", "{what}");
                    let dev = v["devDependencies"].as_object().unwrap();
                    for (tool, version) in dev {
                        match example["devDependencies"].get(tool) {
                            Some(pinned) => assert_eq!(pinned, version, "{what}: {tool}"),
                            None => assert!(
                                [
                                    ("@bytecodealliance/componentize-js", COMPONENTIZE_JS_VERSION),
                                    ("@bytecodealliance/preview2-shim", PREVIEW2_SHIM_VERSION),
                                ]
                                .contains(&(tool.as_str(), version.as_str().unwrap())),
                                "{what}: {tool}"
                            ),
                        }
                    }
                    assert_eq!(dev.contains_key("typescript"), typescript, "{what}");
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
