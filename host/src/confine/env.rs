//! The environment of a confined extension: a documented base, then what was granted.
//! Nothing else of the host's environment (tokens, `SSH_AUTH_SOCK`, `DBUS_*`) reaches it.

use std::path::Path;

/// The system's program path, whatever the host's `PATH` is.
const PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// Variables taken from the host's environment when set: the locale and the terminal.
const PASSED: &[&str] = &["LANG", "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "TERM", "TZ"];

/// The base: `PATH`, `HOME` (its data dir), `TMPDIR` (its temp dir), the locale and
/// terminal variables the host has, then `granted` (name, value) pairs.
pub fn environment(
    data_dir: &Path,
    tmp_dir: &Path,
    host: impl Fn(&str) -> Option<String>,
    granted: &[(String, String)],
) -> Vec<(String, String)> {
    let mut env = vec![
        ("PATH".to_string(), PATH.to_string()),
        ("HOME".to_string(), data_dir.display().to_string()),
        ("TMPDIR".to_string(), tmp_dir.display().to_string()),
    ];
    for name in PASSED {
        if let Some(value) = host(name) {
            env.push((name.to_string(), value));
        }
    }
    env.extend(granted.iter().cloned());
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_base_is_fixed_and_only_the_locale_and_granted_names_are_added() {
        let host = |name: &str| match name {
            "LANG" => Some("C.UTF-8".to_string()),
            "SSH_AUTH_SOCK" | "AWS_SECRET_ACCESS_KEY" => Some("leak".to_string()),
            _ => None,
        };
        let env = environment(
            Path::new("/d"),
            Path::new("/t"),
            host,
            &[("API_KEY".into(), "k".into())],
        );
        let names: Vec<&str> = env.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, ["PATH", "HOME", "TMPDIR", "LANG", "API_KEY"]);
        assert_eq!(env[1].1, "/d");
        assert_eq!(env[2].1, "/t");
    }
}
