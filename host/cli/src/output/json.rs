//! JSON shaped for what the CLI prints and answers (`zot host`, `call --json`).

use serde_json::Value;

/// `value` as an object without `remove` keys, plus `extension`.
pub(crate) fn with_extension(
    value: impl serde::Serialize,
    extension: String,
    remove: &[&str],
) -> Value {
    let mut value = serde_json::to_value(value).unwrap_or_default();
    if let Some(map) = value.as_object_mut() {
        for key in remove {
            map.shift_remove(*key);
        }
        map.insert("extension".into(), Value::String(extension));
    }
    value
}
