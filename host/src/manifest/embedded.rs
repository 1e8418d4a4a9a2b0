//! The manifest a component carries in its `zot:manifest` custom section.

use super::*;

/// The custom section in which a component carries its manifest: a public contract
/// (docs/writing-extensions.md, "Embedding the manifest"). Its content is the JSON of an
/// `extension.json`, of which only `name`, `version`, `permissions` and `limits` count.
pub const SECTION: &str = crate::component::inspect::MANIFEST_SECTION;

/// What a component's embedded manifest says (its [`SECTION`] custom section): what a
/// bare `.wasm` is named and asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Embedded {
    pub name: Option<String>,
    pub version: Option<String>,
    pub permissions: Permissions,
    pub limits: Limits,
}

impl Embedded {
    /// The fields a component's embedded manifest may set; any other is ignored.
    pub const FIELDS: [&'static str; 4] = ["name", "version", "permissions", "limits"];

    /// Reads the embedded manifest of the component `bytes`: the first [`SECTION`]
    /// custom section at any depth (the Rust SDK's lands in the component's core
    /// module), validated as `extension.json` is. `None` without one (or when `bytes`
    /// cannot be parsed before one is found: loading the file says what is wrong).
    pub fn of(bytes: &[u8]) -> Result<Option<Embedded>, ManifestErrorKind> {
        let Some(section) = crate::component::inspect(bytes).manifest else {
            return Ok(None);
        };
        let wrap = |kind| ManifestErrorKind::Section(Box::new(kind));
        let value: Value = serde_json::from_slice(section)
            .map_err(|e| wrap(ManifestErrorKind::InvalidJson(e.to_string())))?;
        let Value::Object(mut object) = value else {
            return Err(wrap(ManifestErrorKind::NotAnObject));
        };
        object.retain(|key, _| Embedded::FIELDS.contains(&key.as_str()));
        let name = object.get("name").cloned();
        let version = object.get("version").cloned();
        // Validated as a manifest's fields are: as a whole manifest, with a stand-in
        // name when it names none and the component it is in.
        if name.is_none() {
            object.insert("name".into(), Value::String("component".into()));
        }
        object.insert("wasm".into(), Value::String("component.wasm".into()));
        let m = Manifest::from_value(Value::Object(object)).map_err(wrap)?;
        Ok(Some(Embedded {
            name: name.map(|_| m.name),
            version: version.map(|_| m.version),
            permissions: m.permissions,
            limits: m.limits,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leb(n: usize, out: &mut Vec<u8>) {
        zot_test_fixtures::leb(n as u64, out);
    }

    /// A section `id` with `body`.
    fn section(id: u8, body: &[u8]) -> Vec<u8> {
        let mut out = vec![id];
        leb(body.len(), &mut out);
        out.extend_from_slice(body);
        out
    }

    fn custom(name: &str, content: &[u8]) -> Vec<u8> {
        let mut body = Vec::new();
        leb(name.len(), &mut body);
        body.extend_from_slice(name.as_bytes());
        body.extend_from_slice(content);
        section(0, &body)
    }

    const MODULE: &[u8] = b"\0asm\x01\0\0\0";
    const COMPONENT: &[u8] = b"\0asm\x0d\0\x01\0";

    fn module(sections: &[Vec<u8>]) -> Vec<u8> {
        [MODULE.to_vec(), sections.concat()].concat()
    }

    fn component(sections: &[Vec<u8>]) -> Vec<u8> {
        [COMPONENT.to_vec(), sections.concat()].concat()
    }

    const ASKS: &str = r#"{"name":"probe","version":"1.2.0","wasm":"ignored.wasm",
        "exec":"ignored","description":"ignored","enabled":false,
        "permissions":{"env":["TOKEN"],"http":["api.example.com"]},"limits":{"memory_mb":96}}"#;

    #[test]
    fn a_top_level_section_is_read_and_only_its_four_fields_count() {
        let bytes = component(&[custom("other", b"x"), custom(SECTION, ASKS.as_bytes())]);
        let e = Embedded::of(&bytes).unwrap().unwrap();
        assert_eq!(e.name.as_deref(), Some("probe"));
        assert_eq!(e.version.as_deref(), Some("1.2.0"));
        assert_eq!(e.permissions.env, ["TOKEN"]);
        assert_eq!(e.permissions.http, ["api.example.com"]);
        assert!(e.permissions.data_dir);
        assert_eq!(e.limits.caps.memory_mb, Some(96));
    }

    #[test]
    fn a_nested_section_is_found_and_the_first_one_wins() {
        let inner = module(&[custom(SECTION, ASKS.as_bytes())]);
        let later = br#"{"permissions":{"env":["LATER"]}}"#;
        let bytes = component(&[
            section(1, &inner),
            section(4, &component(&[custom(SECTION, later)])),
            custom(SECTION, later),
        ]);
        let e = Embedded::of(&bytes).unwrap().unwrap();
        assert_eq!(e.permissions.env, ["TOKEN"]);
        // Deeper: a component inside a component.
        let bytes = component(&[section(4, &component(&[section(1, &inner)]))]);
        assert_eq!(
            Embedded::of(&bytes).unwrap().unwrap().name.as_deref(),
            Some("probe")
        );
    }

    #[test]
    fn without_a_section_nothing_is_asked() {
        let bytes = component(&[section(1, &module(&[custom("producers", b"")]))]);
        assert_eq!(Embedded::of(&bytes).unwrap(), None);
        assert_eq!(Embedded::of(b"not wasm at all").unwrap(), None);
        // Only some fields: the rest as a manifest without them.
        let bytes = component(&[custom(SECTION, br#"{"version":"2"}"#)]);
        let e = Embedded::of(&bytes).unwrap().unwrap();
        assert_eq!((e.name, e.version.as_deref()), (None, Some("2")));
        assert_eq!(e.permissions, Permissions::default());
        assert_eq!(e.limits, Limits::default());
    }

    #[test]
    fn a_malformed_section_is_an_error_naming_it() {
        for (content, says) in [
            (&b"{not json"[..], "invalid JSON"),
            (b"[1]", "not a JSON object"),
            (
                br#"{"permissions":{"net":true}}"#,
                "field \"permissions\": unknown field `net`",
            ),
            (
                br#"{"limits":{"memory_mb":99999}}"#,
                "field \"limits.memory_mb\"",
            ),
            (
                br#"{"permissions":{"http":["ftp://x"]}}"#,
                "field \"permissions.http[0]\"",
            ),
            (br#"{"name":"../x"}"#, "field \"name\""),
        ] {
            let bytes = component(&[custom(SECTION, content)]);
            let e = Embedded::of(&bytes).unwrap_err().to_string();
            assert!(
                e.starts_with("its embedded manifest (section \"zot:manifest\"): "),
                "{e}"
            );
            assert!(e.contains(says), "{says}: {e}");
        }
    }

    #[test]
    fn a_bare_component_takes_its_name_and_asks_from_the_section() {
        let dir = std::env::temp_dir().join(format!("zot-embedded-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let with = dir.join("some file.wasm");
        std::fs::write(&with, component(&[custom(SECTION, ASKS.as_bytes())])).unwrap();
        let m = Manifest::bare_component(&with).unwrap();
        assert_eq!((m.name.as_str(), m.version.as_str()), ("probe", "1.2.0"));
        assert_eq!(m.permissions.env, ["TOKEN"]);
        assert_eq!(m.limits.caps.memory_mb, Some(96));
        assert!(m.enabled && m.exec.is_none() && m.description.is_empty());
        let without = dir.join("plain.wasm");
        std::fs::write(&without, component(&[])).unwrap();
        let m = Manifest::bare_component(&without).unwrap();
        assert_eq!((m.name.as_str(), m.version.as_str()), ("plain", ""));
        assert_eq!(m.permissions, Permissions::default());
        let bad = dir.join("bad.wasm");
        std::fs::write(&bad, component(&[custom(SECTION, b"{")])).unwrap();
        let e = Manifest::bare_component(&bad).unwrap_err().to_string();
        assert!(e.contains("bad.wasm: its embedded manifest"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
