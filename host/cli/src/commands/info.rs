//! `zot ext info`: an installed extension's manifest, where it came from, what it runs
//! and its hash, what it asks and was granted, its confinement.

use crate::flags::scope::{resolve, Scope};
use crate::output::error::{CliError, Context as _};
use crate::output::terminal::{self, cwd};
use crate::records::install_record;
use std::path::Path;
use zot_host::manage::confine::ConfineView;
use zot_host::manage::identity::Identity;
use zot_host::manage::install;
use zot_host::manage::manifest::{Launch, Manifest};
use zot_host::manage::paths::ZotHome;
use zot_host::manage::records::{grants, provenance};
use zot_host::manage::sandbox::{asked_words, granted_words};
use zot_host::terminal_text::one_line;
use zot_host::SandboxView;

/// The file an extension runs, relative to its folder and `/`-separated as in its install
/// record: its component, else its program when that is in the folder, else the first
/// argument naming a file in it (a script run by an interpreter on `PATH`).
fn program_file(m: &Manifest, dir: &Path) -> Option<String> {
    let inside = |path: &Path| {
        let rel = path.strip_prefix(dir).ok()?;
        let parts: Option<Vec<&str>> = rel
            .components()
            .map(|c| match c {
                std::path::Component::Normal(part) => part.to_str(),
                _ => None,
            })
            .collect();
        parts.filter(|p| !p.is_empty()).map(|p| p.join("/"))
    };
    let path = match m.launch(dir) {
        Launch::Wasm(path) | Launch::Exec(path) => path,
        // Nothing of its own runs: its URL is shown instead.
        Launch::Remote(_) => return None,
    };
    inside(&path).or_else(|| {
        m.program_args()
            .iter()
            .map(|a| dir.join(a))
            .find(|p| p.is_file())
            .and_then(|p| inside(&p))
    })
}

pub(crate) fn info(
    home: &ZotHome,
    name: &str,
    json: bool,
    scope: Option<Scope>,
) -> Result<(), CliError> {
    let what = format!("info {name}");
    let (dir, scope) = resolve(home, &cwd().context(&what)?, name, scope).context(&what)?;
    let m = Manifest::read(&dir).context(&what)?;
    let record = install_record(home, &dir).context(&what)?;
    let id = Identity::of(&dir, home);
    let view = SandboxView::on_disk(home, &id, &m, &dir);
    let grant = view.as_ref().and_then(SandboxView::recorded_grant);
    let grant_stale = view.as_ref().is_some_and(|v| v.grant_stale);
    let confinement = ConfineView::on_disk(home, &id, &m, &dir);
    let program = program_file(&m, &dir);
    let sha256 = program.as_ref().and_then(|p| {
        let hash = record.as_ref()?.files.get(p)?;
        Some(hash.clone()).filter(|h| !h.starts_with("symlink:"))
    });
    let transport = m.transport().as_str();
    let asks = view
        .as_ref()
        .map(|v| serde_json::json!({"permissions": v.asked, "limits": v.limits}));
    let guard = zot_host::manage::records::guard::load(home, &id);
    if json {
        let value = serde_json::json!({
            "name": m.name, "version": m.version, "description": m.description,
            "dir": dir.display().to_string(), "scope": scope.label(), "transport": transport,
            "enabled": m.enabled, "provenance": record, "asks": asks, "grant": grant,
            "grant_stale": grant_stale,
            "program": program.as_ref().map(|p| serde_json::json!({"path": p, "sha256": sha256})),
            "url": m.mcp.as_ref().and_then(|s| s.url.as_deref()),
            "confinement": confinement,
            "fail_closed": guard.blocks(),
        });
        terminal::print_line(&serde_json::to_string_pretty(&value).expect("JSON serialises"));
        return Ok(());
    }
    let row = |k: &str, v: &str| say!("{k:<13}{}", one_line(v));
    let rows = |k: &str, lines: &[String]| {
        for (i, line) in lines.iter().enumerate() {
            row(if i == 0 { k } else { "" }, line);
        }
    };
    row("name", &m.name);
    row("version", &m.version);
    row("description", &m.description);
    row(
        "directory",
        &format!("{} ({} copy)", dir.display(), scope.label()),
    );
    row("transport", transport);
    row("enabled", if m.enabled { "yes" } else { "no" });
    source_rows(record.as_ref(), name, &row);
    let label = if m.is_component() {
        "component"
    } else {
        "program"
    };
    let url = m.mcp.as_ref().and_then(|s| s.url.as_deref());
    match (&program, &sha256) {
        _ if url.is_some() => row("url", url.unwrap_or_default()),
        (Some(p), Some(hash)) => row(label, &format!("{p}, sha256 {hash} (as installed)")),
        (Some(p), None) => row(label, &format!("{p}, sha256 not recorded")),
        (None, _) => row(
            label,
            &format!(
                "{} (not part of the install)",
                m.command().unwrap_or_default()
            ),
        ),
    }
    if let Some(view) = &confinement {
        for (k, v) in crate::records::confinement::rows(name, view) {
            row(k, &v);
        }
    }
    if confinement.as_ref().is_none_or(|v| v.confined) {
        rows("asks", &asked_words(&m));
    }
    let classic_grant = grants::load(home, &id).ok().flatten();
    match (&confinement, grant) {
        (Some(view), _) if !view.confined => row(
            "granted",
            "everything you can: a classic extension runs with your full user permissions",
        ),
        (Some(_), _) => match &classic_grant {
            Some(g) => rows("granted", &granted_words(&m, g)),
            None => row("granted", "nothing beyond its data dir (no grant recorded)"),
        },
        (None, Some(g)) => rows("granted", &granted_words(&m, g)),
        (None, None) => row("granted", "nothing beyond its data dir (no grant recorded)"),
    }
    if grant_stale {
        row(
            "",
            &format!(
                "not applied: given for another build of the component; {}",
                zot_host::manage::sandbox::stale_warning(name, &id, &dir)
            ),
        );
    }
    if guard.blocks() {
        row("guard", &crate::records::guard::failure_words(&guard));
    }
    Ok(())
}

/// Where an install came from, as `info` shows it (`row`: one labelled row).
fn source_rows(record: Option<&provenance::Provenance>, name: &str, row: &dyn Fn(&str, &str)) {
    match record {
        None => row(
            "source",
            "unknown (no install record: installed by hand or by an older zot)",
        ),
        Some(r) => {
            row("source", &format!("{} ({})", r.source, kind_label(r.kind)));
            if let Some(v) = &r.git_ref {
                row("ref", v);
            }
            if let Some(v) = &r.path {
                row("path", v);
            }
            if let Some(v) = &r.commit {
                row("commit", v);
            }
            row("installed at", &r.installed_at);
            let signature = match &r.signature {
                Some(s) => format!("by key {}: {}", s.key, crate::records::signers::vouches(s)),
                None => "none required when it was installed".into(),
            };
            row("signature", &signature);
            row(
                "files",
                &format!(
                    "{} recorded (`zot ext verify {name}` checks them)",
                    r.files.len()
                ),
            );
        }
    }
}

fn kind_label(kind: install::SourceKind) -> &'static str {
    match kind {
        install::SourceKind::Dir => "directory",
        install::SourceKind::Git => "git",
        install::SourceKind::Wasm => "component file",
    }
}
