//! `zot ext install`: what an extension may do shown, the user's consent asked, then
//! staged, compiled and committed by the library, which records the consent.

use crate::output::error::{CliError, Context as _};
use crate::output::install::{headline, runs};
use crate::output::terminal::{self, cwd, Prompt as _, Term, TermProgress};
use crate::runtime::runtime;
use std::path::Path;
use zot_host::compile::Compiler;
use zot_host::manage::identity::Identity;
use zot_host::manage::install::{self, InstallSource, Request, Staged};
use zot_host::manage::manifest::Manifest;
use zot_host::manage::paths::{project_extensions_dir, ZotHome};
use zot_host::manage::records::consent;
use zot_host::manage::sandbox::asked_words;
use zot_host::terminal_text::one_line;

#[derive(clap::Args)]
pub(crate) struct InstallArgs {
    /// A directory holding extension.json, a git URL (https://, git@, ssh://, file://,
    /// *.git), or a WebAssembly component (a .wasm file).
    #[arg(add = clap_complete::ArgValueCompleter::new(crate::complete::extension_paths()))]
    source: String,
    /// The branch, tag or commit to install (git sources).
    #[arg(long = "ref", value_name = "REF")]
    git_ref: Option<String>,
    /// The extension's folder inside the source, e.g. `examples/guard` of a monorepo.
    #[arg(long, value_name = "SUBDIR")]
    path: Option<String>,
    /// Install into ./.zot/extensions (this project) instead of $ZOT_HOME/extensions.
    #[arg(long)]
    project: bool,
    /// Install under this name instead of the manifest's (or the component's) own.
    #[arg(long)]
    name: Option<String>,
    /// Do not ask: consent to what it asks for (for scripts).
    #[arg(long, short)]
    yes: bool,
    /// Replace an existing install of that name (atomically).
    #[arg(long)]
    force: bool,
    /// Run it confined (a classic extension, Linux: `zot ext confine`), with what it
    /// asks for.
    #[arg(long)]
    confine: bool,
    /// Build a source whose program is not built as a WebAssembly component (Go:
    /// GOOS=wasip1), and install it sandboxed.
    #[arg(long)]
    wasm: bool,
    /// Install only if signed by this minisign public key (the key, `RW…`, or its
    /// `.pub` file): `<file>.minisig` beside a .wasm, `extension.minisig` in a source's
    /// folder. Repeat for any of several keys.
    #[arg(long = "require-signature", value_name = "KEY")]
    require_signature: Vec<String>,
}

pub(crate) fn install(home: &ZotHome, args: InstallArgs) -> Result<(), CliError> {
    let what = format!("install {}", args.source);
    let root = if args.project {
        project_extensions_dir(&cwd().context(&what)?)
    } else {
        home.extensions_dir()
    };
    let compiler = Compiler::this_program().context(&what)?;
    let signers = crate::records::signers::parse(&args.require_signature).context(&what)?;
    let req = Request {
        source: InstallSource::parse(&args.source),
        git_ref: args.git_ref.clone(),
        path: args.path.clone(),
        name: args.name.clone(),
        wasm: args.wasm,
        root,
        home: home.clone(),
        compiler: compiler.clone(),
        signers,
    };
    // A bare component is run to learn its name: the user consents before it is even
    // compiled. What it asks is known from the file alone: what its embedded manifest
    // asks, or nothing.
    let bare = match &req.source {
        InstallSource::Wasm(file) => {
            // Not a component, or not signed as required: said before anything is asked
            // about it.
            install::read_component_file(file).context(&what)?;
            install::signed_component(home, file, &req.signers).context(&what)?;
            Some(Manifest::bare_component(file).context(&what)?)
        }
        _ => None,
    };
    if let Some(m) = bare.as_ref().filter(|_| args.confine) {
        return Err(not_confinable(m)).context(&what);
    }
    let settings = zot_host::manage::records::Settings::load(home).context(&what)?;
    if let Some(m) = &bare {
        say!("{} (a component file)", args.source);
        let question = describe_asks(m, false);
        terminal::ask(&mut Term, &question, args.yes).context(&what)?;
    }
    let mut staged = stage(&req).context(&what)?;
    still_consented(&staged, bare.as_ref(), args.force).context(&what)?;
    say!("{}", headline(&staged));
    if let Some(signed) = &staged.record.signature {
        say!("{}", crate::records::signers::signed_line(signed));
    }
    if let Some(plan) = &staged.build {
        say_build(plan);
        terminal::ask(&mut Term, "Build it?", args.yes).context(&what)?;
        staged.run_build(&TermProgress::new()).context(&what)?;
        say!("Built {}.", one_line(&plan_output(&staged)));
    }
    let m = &staged.manifest;
    if let Some(warning) = staged.not_executable() {
        esay!("warning: {warning}");
    }
    if let Some(own) = &staged.renamed_from {
        say!(
            "--name: installed as {:?}, the name zot uses for it (check, call, info, the \
             agent); the extension calls itself {own:?}, and its hello may still say so.",
            m.name
        );
    }
    if args.confine && m.asks_permissions() {
        return Err(not_confinable(m)).context(&what);
    }
    let confined = !m.asks_permissions() && (args.confine || settings.confine_classic);
    if bare.is_none() {
        let question = describe_asks(m, confined);
        terminal::ask(&mut Term, &question, args.yes).context(&what)?;
    }
    let wasm = staged.component_file();
    if let Some(file) = &wasm {
        let file = staged.tree().join(file);
        runtime()
            .context(&what)?
            .block_on(install::compile(
                home,
                &compiler,
                &file,
                &TermProgress::new(),
            ))
            .context(&what)?;
    }
    let done = staged.commit(args.force).context(&what)?;
    let id = Identity::of(&done.dir, home);
    // The user consented to this code and to what it asks now: nothing is inherited
    // from an earlier install there.
    let confined_by = confined.then_some(args.confine);
    consent::installed(
        home,
        &id,
        (&done.manifest, &done.dir),
        wasm.as_deref(),
        confined_by,
    )
    .context(&what)?;
    if confined {
        say!(
            "It runs confined{}.",
            if args.confine { "" } else { " (by default)" }
        );
    }
    say_installed(&done.manifest, &done.dir);
    Ok(())
}

/// Says what will be built, how, with which toolchain, and what the build may touch.
fn say_build(plan: &install::build::Plan) {
    say!(
        "It is not built: {} is not in the source. zot builds it with {}:",
        one_line(&plan.output),
        one_line(&plan.toolchain.version)
    );
    for step in &plan.steps {
        say!("  {}", one_line(&step.shown()));
    }
    say!("The build runs confined (Landlock and seccomp), in a copy of the source:");
    Term.list(&plan.may_touch());
}

/// The file the build made, as the install record has it.
fn plan_output(staged: &Staged) -> String {
    let outputs = staged.record.build.as_ref().map(|b| &b.outputs);
    outputs
        .and_then(|o| o.keys().next().cloned())
        .unwrap_or_default()
}

/// Refuses what was staged if it is not what the user was asked about (a component file
/// that changed meanwhile), or would replace an install without `--force`.
fn still_consented(staged: &Staged, bare: Option<&Manifest>, force: bool) -> Result<(), String> {
    let m = &staged.manifest;
    // Staging read the file again: it must ask what the user consented to.
    if let Some(b) = bare.filter(|b| (&b.permissions, &b.limits) != (&m.permissions, &m.limits)) {
        return Err(format!(
            "{} changed while it was installed: it now asks for something else; nothing \
             was changed",
            b.wasm.as_deref().unwrap_or_default()
        ));
    }
    if staged.dest().symlink_metadata().is_ok() && !force {
        let taken = install::InstallError::AlreadyInstalled {
            name: m.name.clone(),
            dest: staged.dest(),
        };
        return Err(taken.to_string());
    }
    Ok(())
}

/// Says where the extension of `m` was installed (`dir`), and that it is off if it is.
fn say_installed(m: &Manifest, dir: &Path) {
    let version = match m.version.as_str() {
        "" => String::new(),
        v => format!(" {}", one_line(v)),
    };
    say!("Installed {}{version} into {}", m.name, dir.display());
    if !m.enabled {
        say!(
            "It is disabled; turn it on with `zot ext enable {}`.",
            m.name
        );
    }
}

/// `--confine` of a component.
fn not_confinable(m: &Manifest) -> String {
    if m.transport() == zot_host::manage::manifest::TransportKind::Remote {
        return format!(
            "--confine: {} is a remote MCP server: nothing runs here to confine (what host \
             it asks to reach is shown before it is installed)",
            m.name
        );
    }
    format!(
        "--confine: {} is a component: it always runs in the sandbox (what it asks is \
         shown before it is installed)",
        m.name
    )
}

/// Stages `req` on a runtime of its own (install and update run outside any), showing
/// progress on the terminal.
fn stage(req: &Request) -> Result<Staged, String> {
    runtime()?
        .block_on(install::stage(req, &TermProgress::new()))
        .map_err(|e| e.to_string())
}

/// Prints what `m` may do once installed (a classic extension: the command it runs,
/// exactly); returns the question to ask.
fn describe_asks(m: &Manifest, confined: bool) -> String {
    if let Some(url) = m.mcp.as_ref().and_then(|s| s.url.as_deref()) {
        say!(
            "It is a remote MCP server at {}: nothing runs here. It asks to:",
            one_line(url)
        );
        Term.list(&asked_words(m));
        format!("Grant this and install {}?", m.name)
    } else if m.is_component() {
        say!("It is a sandboxed WebAssembly component. It asks to:");
        Term.list(&asked_words(m));
        format!("Grant this and install {}?", m.name)
    } else if confined {
        say!(
            "It is a classic extension, to run confined (Landlock and seccomp): the system \
             read-only, its folder, its data dir, no network. It runs (from its folder's \
             copy):"
        );
        say!("  {}", runs(m));
        say!("It asks to:");
        Term.list(&asked_words(m));
        format!("Grant this and install {} confined?", m.name)
    } else {
        esay!(
            "warning: {} is a classic extension: it runs as a program with your full user \
             permissions (every file you can read or write, the network, your environment). \
             Install only extensions you trust.",
            m.name
        );
        say!("It runs (from its folder's copy):");
        say!("  {}", runs(m));
        format!("Install {}?", m.name)
    }
}
