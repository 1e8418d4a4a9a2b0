//! `zot ext verify`: an install's files against its record.

use crate::flags::scope::{copy_at, resolve, Scope};
use crate::output::error::{CliError, Context as _};
use crate::output::terminal::{self, cwd};
use crate::records::{install_record, no_record};
use zot_host::manage::install::signature;
use zot_host::manage::paths::ZotHome;
use zot_host::manage::records::provenance;
use zot_host::terminal_text::one_line;

pub(crate) fn verify(
    home: &ZotHome,
    name: &str,
    json: bool,
    scope: Option<Scope>,
) -> Result<(), CliError> {
    let what = format!("verify {name}");
    let (dir, scope) = resolve(home, &cwd().context(&what)?, name, scope).context(&what)?;
    let copy = copy_at(&dir, scope);
    let record = install_record(home, &dir)
        .and_then(|r| {
            r.ok_or_else(|| format!("{}: nothing to compare with", no_record(home, &dir, &copy)))
        })
        .context(&what)?;
    let changes = provenance::verify(&dir, &record).context(&what)?;
    let signed = signature::reverify(&dir, &record).context(&what)?;
    if json {
        let value = serde_json::json!({
            "name": name, "dir": dir.display().to_string(), "scope": scope.label(),
            "ok": changes.is_empty(), "changes": changes,
            "signature": signed.as_ref().map(|s| serde_json::json!({
                "key": s.key, "over": s.over, "ok": true,
                "changed_by_install": s.changed_by_install,
            })),
        });
        terminal::print_line(&serde_json::to_string_pretty(&value).expect("JSON serialises"));
    } else if changes.is_empty() {
        say!(
            "{name}: all {} files match the install record of {} ({copy})",
            record.files.len(),
            record.installed_at
        );
    } else {
        for change in &changes {
            let (label, path) = match change {
                provenance::Change::Modified(p) => ("modified", p),
                provenance::Change::Added(p) => ("added", p),
                provenance::Change::Removed(p) => ("removed", p),
            };
            say!("{label:<9}{}", one_line(path));
        }
    }
    if let Some(s) = signed.as_ref().filter(|_| !json) {
        say!("signature good: by key {}", s.key);
        for path in &s.changed_by_install {
            say!(
                "  {} was changed by the install itself (as recorded)",
                one_line(path)
            );
        }
    }
    if changes.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{} file(s) changed since it was installed ({copy})",
            changes.len()
        ))
        .context(&what)
    }
}
