//! `zot ext sign`: for an author, a signature that `install --require-signature` accepts,
//! made with the standard `minisign` tool. A component file is signed as it is; a source
//! tree through its statement, which the library computes from the source fetched as an
//! install fetches it.

use crate::output::error::{CliError, Context as _};
use crate::output::terminal;
use crate::runtime::runtime;
use std::path::{Path, PathBuf};
use std::process::Command;
use zot_host::compile::Compiler;
use zot_host::manage::install::{self, signature, InstallSource, Request};
use zot_host::manage::paths::ZotHome;
use zot_host::terminal_text::one_line;

#[derive(clap::Args)]
pub(crate) struct SignArgs {
    /// What to sign, as `zot ext install` takes it: a directory, a git URL or a .wasm.
    #[arg(add = clap_complete::ArgValueCompleter::new(crate::complete::extension_paths()))]
    source: String,
    /// The branch, tag or commit to sign (git sources, and a local repository: sign
    /// what is committed, e.g. `--ref HEAD`).
    #[arg(long = "ref", value_name = "REF")]
    git_ref: Option<String>,
    /// The extension's folder inside the source.
    #[arg(long, value_name = "SUBDIR")]
    path: Option<String>,
    /// The minisign secret key (minisign's own default without it).
    #[arg(long, short = 's', value_name = "FILE")]
    secret_key: Option<PathBuf>,
    /// The signature's trusted comment (signed with it; `info` shows it).
    #[arg(long, short = 't', value_name = "TEXT")]
    trusted_comment: Option<String>,
    /// Where to write the signature: `<file>.minisig` for a .wasm; for a tree,
    /// `extension.minisig` in the extension's folder of a local source, else here.
    #[arg(long, short = 'o', value_name = "FILE")]
    output: Option<PathBuf>,
    /// Print a tree's statement (what its signature signs) instead, to sign it with
    /// another tool: `minisign -S -m statement -x extension.minisig`.
    #[arg(long)]
    statement: bool,
}

pub(crate) fn sign(args: SignArgs) -> Result<(), CliError> {
    let what = format!("sign {}", args.source);
    let source = InstallSource::parse(&args.source);
    if let InstallSource::Wasm(file) = &source {
        if args.statement || args.git_ref.is_some() || args.path.is_some() {
            return Err("a component file is signed as it is: no statement, --ref or --path")
                .context(&what);
        }
        install::read_component_file(file).context(&what)?;
        let out = args
            .output
            .clone()
            .unwrap_or_else(|| signature::signature_of(file));
        let comment = args.trusted_comment.clone().unwrap_or_else(|| {
            let name = file.file_name().unwrap_or_default().to_string_lossy();
            format!("{name}, {}", now())
        });
        minisign(&args, file, &out, &comment).context(&what)?;
        say!("Wrote {}.", out.display());
        say!(
            "Ship it beside the file: `zot ext install {} --require-signature <your public \
             key>` then accepts this file and nothing else.",
            file.display()
        );
        return Ok(());
    }
    let (text, name) = statement(&source, &args).context(&what)?;
    if args.statement {
        terminal::print_bytes(&text);
        return Ok(());
    }
    let local = match &source {
        InstallSource::Dir(dir) => Some(dir.join(args.path.as_deref().unwrap_or(""))),
        InstallSource::Git(_) | InstallSource::Wasm(_) => None,
    };
    let out = args
        .output
        .clone()
        .or_else(|| local.map(|dir| dir.join(signature::SIGNATURE_FILE)))
        .unwrap_or_else(|| PathBuf::from(signature::SIGNATURE_FILE));
    let scratch = Scratch::new().context(&what)?;
    let message = scratch.0.join("statement.json");
    std::fs::write(&message, &text)
        .map_err(|e| format!("cannot write {}: {e}", message.display()))
        .context(&what)?;
    let comment = args
        .trusted_comment
        .clone()
        .unwrap_or_else(|| format!("{name}, {}", now()));
    minisign(&args, &message, &out, &comment).context(&what)?;
    say!("Wrote {}.", out.display());
    say!(
        "Commit it in the extension's folder (the signature is not part of what it signs): \
         `zot ext install <source> --require-signature <your public key>` then accepts \
         these files, and nothing else."
    );
    Ok(())
}

/// A tree's statement, fetched as an install fetches it, and its manifest's name and
/// version. Staged in a throwaway home: no settings of the user's apply, nothing is
/// installed.
fn statement(source: &InstallSource, args: &SignArgs) -> Result<(Vec<u8>, String), String> {
    let scratch = Scratch::new()?;
    let home = ZotHome::new(scratch.0.join("home"));
    // A local repository's ref (`HEAD` too) is the commit it names there.
    let git_ref = match (source, &args.git_ref) {
        (InstallSource::Dir(dir), Some(r)) if dir.join(".git").exists() => {
            Some(local_commit(dir, r)?)
        }
        (_, r) => r.clone(),
    };
    let req = Request {
        source: source.clone(),
        git_ref,
        path: args.path.clone(),
        name: None,
        wasm: false,
        root: home.extensions_dir(),
        home: home.clone(),
        compiler: Compiler::in_process(),
        signers: Vec::new(),
    };
    let staged = runtime()?
        .block_on(install::stage(&req, &install::Quiet))
        .map_err(|e| e.to_string())?;
    let m = &staged.manifest;
    let name = match m.version.as_str() {
        "" => one_line(&m.name).into_owned(),
        v => format!("{} {}", one_line(&m.name), one_line(v)),
    };
    Ok((signature::statement(&staged.record.files), name))
}

/// The commit `git_ref` names in the local repository `dir`.
fn local_commit(dir: &Path, git_ref: &str) -> Result<String, String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["rev-parse", "--verify", "--end-of-options"])
        .arg(format!("{git_ref}^{{commit}}"))
        .output()
        .map_err(|e| format!("cannot run git: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "no commit {git_ref} in {}: {}",
            dir.display(),
            one_line(String::from_utf8_lossy(&out.stderr).trim())
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Runs `minisign -S` on `message`, writing its signature to `out`, on the terminal (it
/// asks for the key's password there).
fn minisign(args: &SignArgs, message: &Path, out: &Path, comment: &str) -> Result<(), String> {
    let mut cmd = Command::new("minisign");
    cmd.arg("-S").arg("-m").arg(message).arg("-x").arg(out);
    cmd.arg("-t").arg(comment);
    if let Some(key) = &args.secret_key {
        cmd.arg("-s").arg(key);
    }
    let status = cmd.status().map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => "minisign is not installed: install it (your \
             system's package, or https://jedisct1.github.io/minisign/), or print the \
             statement with --statement and sign it with your own tools"
            .to_string(),
        _ => format!("cannot run minisign: {e}"),
    })?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("minisign failed ({status}); nothing was signed"))
    }
}

/// Now, RFC 3339 in UTC, to the second.
fn now() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

/// A folder of this process's in the temporary directory, removed with everything in it.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Result<Scratch, String> {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("zot-sign-{}-{n}", std::process::id()));
        std::fs::create_dir(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        Ok(Scratch(dir))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
