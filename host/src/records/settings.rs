//! `$ZOT_HOME/settings.json`: the user's host-wide choices. Absent, every choice is its
//! default; a field zot does not know is ignored (a newer zot's); a file that cannot be
//! read or parsed is an error, never taken as the defaults — a choice to confine is not
//! dropped because the file holding it broke.

use crate::paths::ZotHome;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// The user's host-wide choices.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Settings {
    /// Confine every classic extension the user did not unconfine (Linux; `zot ext
    /// confine --default`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub confine_classic: bool,
    /// A confined extension does not start where this kernel cannot enforce one of its
    /// rules (`--require-confinement`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub require_confinement: bool,
    /// Who must sign what is installed from where: a source (a git URL, an absolute
    /// path), or a prefix of sources ending in `/`, to the minisign public keys (base64)
    /// any of which an install from it must be signed by (`zot ext signer`).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub signers: std::collections::BTreeMap<String, Vec<String>>,
    /// Whether an extension (by name) that exits by itself is started again, over the
    /// host's default (on).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub restart: std::collections::BTreeMap<String, bool>,
}

/// Why the settings cannot be used.
#[derive(Debug)]
pub struct SettingsError {
    pub path: PathBuf,
    pub cause: String,
}

impl std::fmt::Display for SettingsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.cause)
    }
}

impl std::error::Error for SettingsError {}

impl Settings {
    /// The settings of `home`: the defaults when it has no settings file.
    pub fn load(home: &ZotHome) -> Result<Settings, SettingsError> {
        let path = home.settings_path();
        let fail = |cause: String| SettingsError {
            path: path.clone(),
            cause,
        };
        match path.symlink_metadata() {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Settings::default()),
            Err(e) => return Err(fail(e.to_string())),
            Ok(_) => {}
        }
        let bytes =
            crate::util::tree::read_regular(&path, 1 << 20).map_err(|e| fail(e.to_string()))?;
        serde_json::from_slice(&bytes).map_err(|e| fail(e.to_string()))
    }

    /// Records the settings in `home`, replacing the file atomically.
    pub fn save(&self, home: &ZotHome) -> Result<(), SettingsError> {
        let path = home.settings_path();
        let mut text = serde_json::to_vec_pretty(self).expect("settings serialise");
        text.push(b'\n');
        crate::paths::write_atomic(&path, &text).map_err(|e| SettingsError {
            path,
            cause: e.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absent_is_the_defaults_and_broken_is_an_error() {
        let dir = zot_test_fixtures::fresh_dir("settings");
        let home = ZotHome::new(&dir);
        assert_eq!(Settings::load(&home).unwrap(), Settings::default());
        let on = Settings {
            confine_classic: true,
            ..Settings::default()
        };
        on.save(&home).unwrap();
        assert_eq!(
            std::fs::read_to_string(home.settings_path()).unwrap(),
            "{\n  \"confine_classic\": true\n}\n"
        );
        assert_eq!(Settings::load(&home).unwrap(), on);
        std::fs::write(
            home.settings_path(),
            r#"{"confine_classic":true,"later":1}"#,
        )
        .unwrap();
        assert_eq!(
            Settings::load(&home).unwrap(),
            on,
            "an unknown field is ignored"
        );
        std::fs::write(home.settings_path(), "{").unwrap();
        assert!(Settings::load(&home).is_err());
        std::fs::remove_file(home.settings_path()).unwrap();
        std::os::unix::fs::symlink("/nonexistent", home.settings_path()).unwrap();
        assert!(
            Settings::load(&home).is_err(),
            "a dangling link is no absence"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
