//! Editing `extension.json` without losing a field or a byte it need not change.

use super::*;

/// Sets `enabled` in `dir/extension.json`, keeping every other field and their order.
/// The file is replaced atomically.
///
/// Returns whether the file changed: nothing is written when the extension already is
/// in that state (no `enabled` field counts as enabled). The edit is the smallest that
/// does it, so `disable` then `enable` gives back the very bytes there were (and
/// `zot ext verify` finds nothing changed): `"enabled": false` is added right after the
/// opening brace, in the file's own layout, and removed again; an existing value is
/// flipped in place.
pub fn set_enabled(dir: &Path, enabled: bool) -> Result<bool, ManifestError> {
    edit(dir, |text, manifest| {
        let object = manifest.as_object_mut()?;
        if object
            .get("enabled")
            .and_then(Value::as_bool)
            .unwrap_or(true)
            == enabled
        {
            return Some(None);
        }
        let mut wanted = object.clone();
        let had_field = wanted.contains_key("enabled");
        wanted.insert("enabled".into(), Value::Bool(enabled));
        let wanted = Value::Object(wanted);
        let candidates = enabled_edits(text, enabled, had_field);
        let fits = |candidate: &String| {
            let parsed = serde_json::from_str::<Value>(candidate).ok();
            parsed.as_ref().is_some_and(|v| {
                v == &wanted
                    || (enabled
                        && v.get("enabled").is_none()
                        && without_enabled(v) == without_enabled(&wanted))
            })
        };
        Some(Some(match candidates.into_iter().find(fits) {
            Some(text) => text.into_bytes(),
            None => pretty(&wanted),
        }))
    })
}

/// What the manifest `text` read before `disable` switched it off: the small edits that
/// turn it on again (the added `"enabled": false` removed, or `false` flipped back);
/// none when it is not off. The switch is zot's own: `zot ext verify` finds the file
/// unchanged when one of these is what was installed.
pub fn before_disable(text: &str) -> Vec<String> {
    let off = serde_json::from_str::<Value>(text)
        .ok()
        .and_then(|v| v.get("enabled").and_then(Value::as_bool));
    match off {
        Some(false) => enabled_edits(text, true, true),
        Some(true) | None => Vec::new(),
    }
}

/// Sets one top-level field of `dir/extension.json`, keeping every other field and their
/// order. The file is replaced atomically, never through a link (see
/// [`crate::util::safe_write`]).
pub fn set_field(dir: &Path, key: &str, value: Value) -> Result<(), ManifestError> {
    edit(dir, |_, manifest| {
        manifest.as_object_mut()?.insert(key.into(), value);
        Some(Some(pretty(manifest)))
    })
    .map(|_| ())
}

/// Makes `dir/extension.json` run the component `wasm` instead of a program: `wasm` set,
/// `exec` and `args` dropped, every other field kept (a build for the sandbox).
pub fn run_component(dir: &Path, wasm: &str) -> Result<(), ManifestError> {
    edit(dir, |_, manifest| {
        let fields = manifest.as_object_mut()?;
        fields.remove("exec");
        fields.remove("args");
        fields.insert("wasm".into(), Value::String(wasm.into()));
        Some(Some(pretty(manifest)))
    })
    .map(|_| ())
}

/// Reads `dir/extension.json`, asks `change` for its new bytes (`None`: not an object;
/// `Some(None)`: nothing to change) and replaces the file with them, never through a
/// link. Returns whether it wrote.
fn edit(
    dir: &Path,
    change: impl FnOnce(&str, &mut Value) -> Option<Option<Vec<u8>>>,
) -> Result<bool, ManifestError> {
    use ManifestErrorKind::*;
    let path = dir.join(MANIFEST_FILE);
    let err = |kind| ManifestError {
        path: path.clone(),
        kind,
    };
    let bytes = read_manifest_file(&path).map_err(|e| err(Unreadable(e)))?;
    let text = String::from_utf8(bytes).map_err(|e| err(Invalid(e.to_string())))?;
    let mut manifest: Value =
        serde_json::from_str(&text).map_err(|e| err(Invalid(e.to_string())))?;
    let Some(out) = change(&text, &mut manifest).ok_or_else(|| err(NotAnObject))? else {
        return Ok(false);
    };
    crate::util::safe_write::SafeDir::open(dir)
        .and_then(|d| d.write(MANIFEST_FILE, &out))
        .map_err(|e| err(Unwritable(e.to_string())))?;
    Ok(true)
}

/// `manifest` as indented JSON with a final newline.
fn pretty(manifest: &Value) -> Vec<u8> {
    let mut out = serde_json::to_vec_pretty(manifest).expect("JSON value serialises");
    out.push(b'\n');
    out
}

/// `manifest` without its `enabled` field.
fn without_enabled(manifest: &Value) -> Value {
    let mut v = manifest.clone();
    if let Some(object) = v.as_object_mut() {
        object.shift_remove("enabled");
    }
    v
}

/// Small textual edits of `text` that set `enabled`, best first; each is checked by
/// parsing before it is used.
fn enabled_edits(text: &str, enabled: bool, had_field: bool) -> Vec<String> {
    let Some(brace) = text.find('{') else {
        return Vec::new();
    };
    let (head, rest) = text.split_at(brace + 1);
    // The layout after the brace: a newline and the first field's indentation, or none.
    let indent: String = rest
        .strip_prefix('\n')
        .map(|r| r.chars().take_while(|c| *c == ' ' || *c == '\t').collect())
        .unwrap_or_default();
    let added = if rest.starts_with('\n') {
        format!("\n{indent}\"enabled\": false,")
    } else {
        "\"enabled\": false, ".to_string()
    };
    let mut edits = Vec::new();
    if enabled {
        if let Some(after) = rest.strip_prefix(added.as_str()) {
            edits.push(format!("{head}{after}"));
        }
    } else if !had_field {
        edits.push(format!("{head}{added}{rest}"));
    }
    if had_field {
        let (from, to) = if enabled {
            ("false", "true")
        } else {
            ("true", "false")
        };
        for spacing in ["\"enabled\": ", "\"enabled\":"] {
            let needle = format!("{spacing}{from}");
            if text.matches(&needle).count() == 1 {
                edits.push(text.replacen(&needle, &format!("{spacing}{to}"), 1));
            }
        }
    }
    edits
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disable_then_enable_gives_back_the_same_bytes() {
        let dir = zot_test_fixtures::fresh_dir("enable");
        let path = dir.join(MANIFEST_FILE);
        for original in [
            "{\n  \"name\": \"x\",\n  \"exec\": \"python3\",\n  \"args\": [\"a.py\", \"--v\"]\n}\n",
            "{\n\t\"name\": \"x\",\n\t\"exec\": \"x\"\n}",
            r#"{"name":"x","exec":"x","args":["a",  "b"]}"#,
            "{\n  \"name\": \"x\",\n  \"enabled\": true,\n  \"exec\": \"x\"\n}\n",
            r#"{"name":"x","enabled":false,"exec":"x"}"#,
        ] {
            std::fs::write(&path, original).unwrap();
            let was = Manifest::read(&dir).unwrap().enabled;
            assert!(
                !set_enabled(&dir, was).unwrap(),
                "already so: nothing written"
            );
            assert_eq!(std::fs::read_to_string(&path).unwrap(), original);
            assert!(set_enabled(&dir, !was).unwrap());
            assert_eq!(Manifest::read(&dir).unwrap().enabled, !was, "{original}");
            assert!(set_enabled(&dir, was).unwrap());
            assert_eq!(Manifest::read(&dir).unwrap().enabled, was);
            assert_eq!(std::fs::read_to_string(&path).unwrap(), original);
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
