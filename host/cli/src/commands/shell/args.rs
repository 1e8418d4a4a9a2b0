//! The argument prompt of `call <tool>` (interactively, with no JSON given): the fields
//! of the tool's schema listed, required and optional, with their types and
//! descriptions; the JSON the prompt starts with (every field, required ones first,
//! optional ones empty); and the arguments from what was typed, where an optional field
//! left empty is not sent. Pure: `mod.rs` asks and calls.

use crate::output::render::clean;
use serde_json::{Map, Value};

/// The fields a tool's schema declares, as the argument prompt shows them.
pub(crate) struct Form {
    fields: Vec<Field>,
}

struct Field {
    name: String,
    required: bool,
    /// Its type in words (`string`, `"a" or "b"`, `array of integer`, `any`).
    kind: String,
    default: Option<Value>,
    description: String,
    /// What the prompt starts it with. An optional field still holding it is left out.
    empty: Value,
}

impl Form {
    /// The fields of `schema`: its `properties` in order, then any `required` name it
    /// does not describe.
    pub(crate) fn of(schema: &Value) -> Form {
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let properties = schema.get("properties").and_then(Value::as_object);
        let mut fields: Vec<Field> = properties
            .into_iter()
            .flatten()
            .map(|(name, spec)| Field::of(name, spec, required.contains(&name.as_str())))
            .collect();
        for name in &required {
            if !fields.iter().any(|f| f.name == *name) {
                fields.push(Field::of(name, &Value::Null, true));
            }
        }
        // Required fields first, each group in the schema's order.
        fields.sort_by_key(|f| !f.required);
        Form { fields }
    }

    /// The lines shown above the prompt: one per field.
    pub(crate) fn describe(&self, tool: &str) -> Vec<String> {
        let tool = clean(tool);
        if self.fields.is_empty() {
            return vec![format!("{tool} declares no argument")];
        }
        let mut out = vec![format!(
            "{tool} takes a JSON object (an optional field left empty is not sent):"
        )];
        for f in &self.fields {
            let mut what = format!(
                "{}, {}",
                f.kind,
                if f.required { "required" } else { "optional" }
            );
            if let Some(default) = &f.default {
                what.push_str(&format!(", default {}", clean(&default.to_string())));
            }
            let mut line = format!("  {} ({what})", clean(&f.name));
            if !f.description.is_empty() {
                line.push_str(&format!(": {}", clean(&f.description)));
            }
            out.push(line);
        }
        out
    }

    /// The JSON the prompt starts with: every field, required ones first.
    pub(crate) fn initial(&self) -> String {
        let map: Map<String, Value> = self
            .fields
            .iter()
            .map(|f| (f.name.clone(), f.empty.clone()))
            .collect();
        Value::Object(map).to_string()
    }

    /// The arguments of the call from the text typed at the prompt (empty: `{}`): a JSON
    /// object, less the optional fields still empty. The one place the prompt's
    /// arguments are made.
    pub(crate) fn args(&self, text: &str) -> Result<Value, String> {
        let text = text.trim();
        if text.is_empty() {
            return Ok(Value::Object(Map::new()));
        }
        let mut map = super::verbs::object(text, "the tool's arguments")?;
        for f in self.fields.iter().filter(|f| !f.required) {
            if map.get(&f.name) == Some(&f.empty) {
                map.shift_remove(&f.name);
            }
        }
        Ok(Value::Object(map))
    }
}

impl Field {
    fn of(name: &str, spec: &Value, required: bool) -> Field {
        let ty = type_names(spec);
        let empty = if required {
            // Something of its type to fill in.
            match ty.first().copied() {
                Some("string") => Value::from(""),
                Some("number" | "integer") => Value::from(0),
                Some("boolean") => Value::from(false),
                Some("array") => Value::Array(Vec::new()),
                Some("object") => Value::Object(Map::new()),
                _ => Value::Null,
            }
        } else if ty.first() == Some(&"string") {
            Value::from("")
        } else {
            Value::Null
        };
        Field {
            name: name.to_string(),
            required,
            kind: kind(spec, &ty),
            default: spec.get("default").cloned(),
            description: spec
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            empty,
        }
    }
}

/// The names of a schema's `type` (a name or a list of names).
fn type_names(spec: &Value) -> Vec<&str> {
    match spec.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// A schema's type in words: its `enum` or `const` values, else its type names (an
/// array with the type of its items).
fn kind(spec: &Value, ty: &[&str]) -> String {
    if let Some(values) = spec.get("enum").and_then(Value::as_array) {
        return or_list(values.iter().map(|v| clean(&v.to_string())).collect());
    }
    if let Some(value) = spec.get("const") {
        return clean(&value.to_string());
    }
    if ty.is_empty() {
        return "any".into();
    }
    or_list(
        ty.iter()
            .map(
                |t| match (*t, type_names(spec.get("items").unwrap_or(&Value::Null))) {
                    ("array", items) if !items.is_empty() => {
                        format!("array of {}", clean(&items.join(" or ")))
                    }
                    (t, _) => clean(t),
                },
            )
            .collect(),
    )
}

/// `a`, `a or b`, `a, b or c`.
fn or_list(mut words: Vec<String>) -> String {
    match words.pop() {
        None => String::new(),
        Some(last) if words.is_empty() => last,
        Some(last) => format!("{} or {last}", words.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn forecast() -> Form {
        Form::of(&json!({"type": "object",
            "properties": {
                "units": {"type": "string", "enum": ["metric", "imperial"], "description": "units"},
                "city": {"type": "string", "description": "the city\u{1b}[31m"},
                "days": {"type": "integer", "default": 3},
                "tags": {"type": "array", "items": {"type": "string"}},
                "when": {"type": ["string", "null"]},
            },
            "required": ["city", "ok"]}))
    }

    #[test]
    fn every_field_is_listed_required_first() {
        assert_eq!(
            forecast().describe("forecast"),
            vec![
                "forecast takes a JSON object (an optional field left empty is not sent):",
                "  city (string, required): the city\\x1b[31m",
                "  ok (any, required)",
                "  units (\"metric\" or \"imperial\", optional): units",
                "  days (integer, optional, default 3)",
                "  tags (array of string, optional)",
                "  when (string or null, optional)",
            ]
        );
        assert_eq!(
            Form::of(&json!({"type": "object"})).describe("t"),
            vec!["t declares no argument"]
        );
    }

    #[test]
    fn the_prompt_starts_with_every_field() {
        assert_eq!(
            forecast().initial(),
            r#"{"city":"","ok":null,"units":"","days":null,"tags":null,"when":""}"#
        );
        let schema = json!({"type":"object","required":["city","days","ok"],
            "properties":{"city":{"type":"string"},"days":{"type":"integer"},"ok":{"type":"boolean"}}});
        assert_eq!(
            Form::of(&schema).initial(),
            r#"{"city":"","days":0,"ok":false}"#
        );
        assert_eq!(Form::of(&json!({"type":"object"})).initial(), "{}");
    }

    #[test]
    fn optional_fields_left_empty_are_not_sent() {
        let form = forecast();
        assert_eq!(
            form.args(&form.initial()).unwrap(),
            json!({"city": "", "ok": null})
        );
        assert_eq!(
            form.args(r#"{"city":"Oslo","ok":1,"units":"metric","days":0,"tags":null,"when":"x"}"#)
                .unwrap(),
            json!({"city": "Oslo", "ok": 1, "units": "metric", "days": 0, "when": "x"})
        );
        // Fields the schema does not name are sent as typed.
        assert_eq!(
            form.args(r#"{"city":"Oslo","extra":""}"#).unwrap(),
            json!({"city": "Oslo", "extra": ""})
        );
        assert_eq!(form.args("  ").unwrap(), json!({}));
        assert!(form.args("[1]").unwrap_err().contains("JSON object"));
        assert!(form.args("{").unwrap_err().contains("not JSON"));
    }
}
