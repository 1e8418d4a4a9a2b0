//! Whether a classic extension runs confined: the one place that decides, for the
//! launcher and for what `info`, `list` and `check` report. The user's decision for
//! these very files (its grant, bound to their fingerprint), else the host-wide setting
//! (`settings.json`), else not. A grant or settings file that cannot be read, or a
//! decision to confine made for other files, refuses the start: never unconfined by
//! default.

use super::settings::Settings;
use super::trust::Fingerprint;
use super::{grants, Grant};
use crate::identity::Identity;
use crate::manifest::Manifest;
use crate::paths::ZotHome;
use std::path::Path;

/// How a classic extension runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Confinement {
    /// With the user's full permissions: nobody confined it, or the user unconfined
    /// these files (`by_user`).
    Unconfined { by_user: bool },
    /// Confined. `grant`: the user's grant for these files (what else it may reach),
    /// if any; `by_default`: by the host-wide setting, not by its own grant; `require`:
    /// it does not start where this kernel cannot enforce a rule; `digest`: its files'
    /// fingerprint as one hash, `files` that fingerprint (what its program is checked
    /// against at its start).
    Confined {
        grant: Option<Grant>,
        by_default: bool,
        require: bool,
        digest: String,
        files: Fingerprint,
    },
    /// It does not start: why.
    Refused(String),
}

/// How the classic extension of manifest `m` in `dir`, installed as `id`, runs.
pub fn decide(home: &ZotHome, id: &Identity, m: &Manifest, dir: &Path) -> Confinement {
    let settings = match Settings::load(home) {
        Ok(settings) => settings,
        Err(e) => return Confinement::Refused(format!("the settings cannot be read ({e})")),
    };
    let grant = match grants::load(home, id) {
        Ok(grant) => grant,
        Err(e) => return Confinement::Refused(format!("its grant cannot be read: {e}")),
    };
    // What its grant is bound to, by the rule that wrote it.
    let digest =
        || grants::classic_files(m, dir).map_err(|e| format!("its files cannot be read: {e}"));
    let confined = |grant: Option<Grant>, by_default: bool, (digest, files)| {
        let require =
            settings.require_confinement || grant.as_ref().is_some_and(|g| g.require_confinement);
        Confinement::Confined {
            grant,
            by_default,
            require,
            digest,
            files,
        }
    };
    match (grant, settings.confine_classic) {
        (Some(g), _) if g.confine => match digest() {
            Ok(d) if d.0 == g.sha256 => confined(Some(g), false, d),
            Ok(_) => Confinement::Refused(format!(
                "it changed since it was confined: `zot ext confine {}` to review",
                m.name
            )),
            Err(e) => Confinement::Refused(e),
        },
        (Some(g), true) => match digest() {
            Ok(d) if d.0 == g.sha256 && g.unconfined => Confinement::Unconfined { by_user: true },
            Ok(d) if d.0 == g.sha256 => confined(Some(g), true, d),
            // Granted or unconfined for other files: confined, nothing granted.
            Ok(d) => confined(None, true, d),
            Err(e) => Confinement::Refused(e),
        },
        (None, true) => match digest() {
            Ok(d) => confined(None, true, d),
            Err(e) => Confinement::Refused(e),
        },
        (Some(g), false) => Confinement::Unconfined {
            by_user: g.unconfined,
        },
        (None, false) => Confinement::Unconfined { by_user: false },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A home and a classic extension in it; the decision for it as things are.
    struct Case {
        root: std::path::PathBuf,
        home: ZotHome,
        dir: std::path::PathBuf,
    }

    impl Case {
        fn new(tag: &str) -> Case {
            let root = std::env::temp_dir()
                .join(format!("zot-confine-decision-{tag}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&root);
            let dir = root.join("home/extensions/x");
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("extension.json"), r#"{"name":"x","exec":"./x"}"#).unwrap();
            std::fs::write(dir.join("x"), "#!/bin/sh\n").unwrap();
            Case {
                home: ZotHome::new(root.join("home")),
                root,
                dir,
            }
        }
        fn id(&self) -> Identity {
            Identity::of(&self.dir, &self.home)
        }
        fn digest(&self) -> String {
            grants::classic_files(&Manifest::read(&self.dir).unwrap(), &self.dir)
                .unwrap()
                .0
        }
        fn grant(&self, edit: impl FnOnce(&mut Grant)) {
            let mut grant = Grant {
                sha256: self.digest(),
                ..Grant::default()
            };
            edit(&mut grant);
            grants::save(&self.home, &self.id(), &grant).unwrap();
        }
        fn settings(&self, confine_classic: bool) {
            Settings {
                confine_classic,
                ..Settings::default()
            }
            .save(&self.home)
            .unwrap();
        }
        fn decide(&self) -> Confinement {
            decide(
                &self.home,
                &self.id(),
                &Manifest::read(&self.dir).unwrap(),
                &self.dir,
            )
        }
        fn change(&self) {
            std::fs::write(self.dir.join("x"), "#!/bin/sh\n# changed\n").unwrap();
        }
    }

    impl Drop for Case {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.root);
        }
    }

    fn confined(c: &Confinement) -> Option<(bool, bool)> {
        match c {
            Confinement::Confined {
                grant, by_default, ..
            } => Some((grant.is_some(), *by_default)),
            Confinement::Unconfined { .. } | Confinement::Refused(_) => None,
        }
    }

    #[test]
    fn its_own_decision_holds_for_its_files_only() {
        let case = Case::new("own");
        assert_eq!(case.decide(), Confinement::Unconfined { by_user: false });
        case.grant(|g| g.confine = true);
        assert_eq!(confined(&case.decide()), Some((true, false)));
        case.change();
        assert!(
            matches!(case.decide(), Confinement::Refused(why) if why.contains("changed since it was confined"))
        );
        std::fs::write(case.home.grant_path(&case.id()), "{").unwrap();
        assert!(
            matches!(case.decide(), Confinement::Refused(why) if why.contains("its grant cannot be read"))
        );
    }

    #[test]
    fn by_default_spares_only_what_was_unconfined_as_it_is() {
        let case = Case::new("default");
        case.settings(true);
        assert_eq!(confined(&case.decide()), Some((false, true)));
        case.grant(|g| g.unconfined = true);
        assert_eq!(case.decide(), Confinement::Unconfined { by_user: true });
        case.change();
        assert_eq!(
            confined(&case.decide()),
            Some((false, true)),
            "the exemption was for other files"
        );
        case.grant(|_| {});
        assert_eq!(
            confined(&case.decide()),
            Some((true, true)),
            "granted for these files"
        );
        case.settings(false);
        assert_eq!(case.decide(), Confinement::Unconfined { by_user: false });
        std::fs::write(case.home.settings_path(), "[").unwrap();
        assert!(
            matches!(case.decide(), Confinement::Refused(why) if why.contains("settings cannot be read"))
        );
    }

    #[test]
    fn required_by_its_grant_or_by_the_settings() {
        let case = Case::new("require");
        case.grant(|g| {
            g.confine = true;
            g.require_confinement = true;
        });
        assert!(matches!(
            case.decide(),
            Confinement::Confined { require: true, .. }
        ));
        case.grant(|g| g.confine = true);
        assert!(matches!(
            case.decide(),
            Confinement::Confined { require: false, .. }
        ));
        Settings {
            require_confinement: true,
            ..Settings::default()
        }
        .save(&case.home)
        .unwrap();
        assert!(matches!(
            case.decide(),
            Confinement::Confined { require: true, .. }
        ));
    }
}
