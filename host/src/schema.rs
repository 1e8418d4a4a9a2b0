//! Tool arguments checked against the tool's JSON Schema (its `register_tool` `schema`)
//! before a call sends them: each problem names its field. [`Host::call_tool`]
//! (crate::Host::call_tool) checks them unless [`HostConfig::validate_arguments`]
//! (crate::HostConfig::validate_arguments) is off; [`Host::check_arguments`]
//! (crate::Host::check_arguments) checks without calling.
//!
//! Only the schema itself is read: a `$ref` to anything outside it (a file, a URL) is not
//! loaded, and a schema that cannot be compiled, or names a draft the validator does not
//! know, checks nothing ([`Checked::Unchecked`]: the caller warns and sends anyway).
//! The texts quote field names and values from the arguments and the schema as they
//! are (a name between plain quotes, a value as compact JSON): make them terminal-safe
//! ([`terminal_text`](crate::terminal_text)) before a terminal shows them.

use serde_json::Value;

/// The most problems listed; the rest are counted.
const MAX_PROBLEMS: usize = 10;
/// A value quoted in a problem longer than this (as compact JSON) is cut.
const MAX_QUOTED: usize = 60;
/// Where the schema is said to live, so relative references resolve inside it.
const SCHEMA_URL: &str = "https://zot.invalid/tool-schema.json";

/// What checking the arguments found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Checked {
    /// They fit the schema.
    Valid,
    /// They do not: each problem, naming its field.
    Invalid(Vec<Problem>),
    /// The schema cannot be used to check them (why): send them unchecked, saying so.
    Unchecked(String),
}

/// One way the arguments do not fit the schema.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Problem {
    /// The field, as a path (`city`, `stops[2].name`); absent for the arguments as a
    /// whole (and for the line counting the problems not listed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// The problem in words, naming the field: `argument "city": expected a string, got
    /// 3`, `missing required field "city"`.
    pub message: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// Checks `args` against `schema`.
pub fn validate(schema: &Value, args: &Value) -> Checked {
    Validator::new(schema).check(args)
}

/// A tool's schema compiled once, to check many calls' arguments: compiling (the draft's
/// metaschema checked, every keyword read) costs many times what checking does.
pub struct Validator {
    /// The compiled schema, or why it cannot be used.
    compiled: Result<(boon::Schemas, boon::SchemaIndex), String>,
}

impl Validator {
    /// `schema` compiled; one that cannot be makes every check [`Checked::Unchecked`].
    pub fn new(schema: &Value) -> Validator {
        let mut schemas = boon::Schemas::new();
        let mut compiler = boon::Compiler::new();
        compiler.use_loader(Box::new(NothingOutside));
        let unusable = |e: boon::CompileError| format!("its schema cannot be used: {e}");
        let compiled = match compiler.add_resource(SCHEMA_URL, schema.clone()) {
            Err(e) => Err(unusable(e)),
            Ok(()) => match compiler.compile(SCHEMA_URL, &mut schemas) {
                Ok(index) => Ok((schemas, index)),
                Err(e) => Err(unusable(e)),
            },
        };
        Validator { compiled }
    }

    /// Checks `args`.
    pub fn check(&self, args: &Value) -> Checked {
        let (schemas, index) = match &self.compiled {
            Ok(compiled) => compiled,
            Err(why) => return Checked::Unchecked(why.clone()),
        };
        let Err(error) = schemas.validate(args, *index) else {
            return Checked::Valid;
        };
        let mut problems = Vec::new();
        leaves(&error, args, &mut problems);
        if problems.len() > MAX_PROBLEMS {
            let more = problems.len() - MAX_PROBLEMS;
            problems.truncate(MAX_PROBLEMS);
            problems.push(Problem {
                field: None,
                message: format!("… and {more} more"),
            });
        }
        Checked::Invalid(problems)
    }
}

impl std::fmt::Debug for Validator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.compiled {
            Ok(_) => f.write_str("Validator(compiled)"),
            Err(why) => write!(f, "Validator({why})"),
        }
    }
}

/// Refuses every document the schema refers to outside itself (the draft metaschemas are
/// built in): checking never reads a file or the network.
struct NothingOutside;

impl boon::UrlLoader for NothingOutside {
    fn load(&self, url: &str) -> Result<Value, Box<dyn std::error::Error>> {
        Err(format!("{url} is outside the tool's schema: zot does not load it").into())
    }
}

/// The problems at the leaves of `error`'s tree (the inner ones only group them), each
/// once, in order.
fn leaves(error: &boon::ValidationError, args: &Value, out: &mut Vec<Problem>) {
    if error.causes.is_empty() {
        for problem in problems(error, args) {
            if !out.contains(&problem) {
                out.push(problem);
            }
        }
    }
    for cause in &error.causes {
        leaves(cause, args, out);
    }
}

/// The problems of one leaf in words: one for each field a `required` or
/// `additionalProperties` names.
fn problems(error: &boon::ValidationError, args: &Value) -> Vec<Problem> {
    use boon::ErrorKind;
    let tokens = &error.instance_location.tokens;
    let field = path(tokens);
    let at = |why: String| Problem {
        message: match &field {
            Some(field) => format!("argument \"{field}\": {why}"),
            None => format!("the arguments: {why}"),
        },
        field: field.clone(),
    };
    // A field of the object at this location: `a.b` under `a`.
    let child = |name: &str| match &field {
        Some(field) => format!("{field}.{name}"),
        None => name.to_string(),
    };
    let each = |names: &[&str], say: fn(&str) -> String| -> Vec<Problem> {
        names
            .iter()
            .map(|n| {
                let name = child(n);
                Problem {
                    message: say(&name),
                    field: Some(name),
                }
            })
            .collect()
    };
    match &error.kind {
        ErrorKind::Required { want } => {
            each(want, |name| format!("missing required field \"{name}\""))
        }
        ErrorKind::AdditionalProperties { got } => {
            let got: Vec<&str> = got.iter().map(|n| n.as_ref()).collect();
            each(&got, |name| {
                format!("unknown field \"{name}\" (the schema allows no others)")
            })
        }
        ErrorKind::Type { want, .. } => {
            let want: Vec<&str> = want.iter().map(a_type).collect();
            vec![at(format!(
                "expected {}, got {}",
                want.join(" or "),
                quoted(value_at(args, tokens))
            ))]
        }
        ErrorKind::Enum { want } => {
            let want: Vec<String> = want.iter().map(|v| quoted(Some(v))).collect();
            vec![at(format!(
                "expected one of {}, got {}",
                want.join(", "),
                quoted(value_at(args, tokens))
            ))]
        }
        ErrorKind::Const { want } => vec![at(format!(
            "expected {}, got {}",
            quoted(Some(want)),
            quoted(value_at(args, tokens))
        ))],
        other => vec![at(other.to_string())],
    }
}

/// `city`, `stops[2].name`; `None` for the arguments themselves.
fn path(tokens: &[boon::InstanceToken]) -> Option<String> {
    let mut path = String::new();
    for token in tokens {
        match token {
            boon::InstanceToken::Prop(name) => {
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(name);
            }
            boon::InstanceToken::Item(i) => path.push_str(&format!("[{i}]")),
        }
    }
    (!path.is_empty()).then_some(path)
}

/// The value at `tokens` in `args`.
fn value_at<'v>(args: &'v Value, tokens: &[boon::InstanceToken]) -> Option<&'v Value> {
    tokens.iter().try_fold(args, |v, token| match token {
        boon::InstanceToken::Prop(name) => v.get(name.as_ref()),
        boon::InstanceToken::Item(i) => v.get(*i),
    })
}

/// A value as compact JSON, cut after [`MAX_QUOTED`] characters.
fn quoted(value: Option<&Value>) -> String {
    let Some(value) = value else {
        return "nothing".into();
    };
    let text = serde_json::to_string(value).unwrap_or_default();
    match text.char_indices().nth(MAX_QUOTED) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text,
    }
}

/// `a string`, `an integer`, …
fn a_type(t: boon::Type) -> &'static str {
    match t {
        boon::Type::Null => "null",
        boon::Type::Boolean => "a boolean",
        boon::Type::Number => "a number",
        boon::Type::Integer => "an integer",
        boon::Type::String => "a string",
        boon::Type::Array => "an array",
        boon::Type::Object => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn forecast() -> Value {
        json!({"type": "object", "required": ["city"],
               "properties": {"city": {"type": "string"},
                              "days": {"type": "integer", "minimum": 1},
                              "unit": {"enum": ["c", "f"]},
                              "stops": {"type": "array",
                                        "items": {"type": "object", "required": ["name"],
                                                  "properties": {"name": {"type": "string"}}}}},
               "additionalProperties": false})
    }

    fn problems(args: Value) -> Vec<String> {
        match validate(&forecast(), &args) {
            Checked::Invalid(p) => p.into_iter().map(|p| p.message).collect(),
            other => panic!("{args}: {other:?}"),
        }
    }

    #[test]
    fn good_arguments_pass() {
        assert_eq!(
            validate(&forecast(), &json!({"city": "Oslo"})),
            Checked::Valid
        );
        assert_eq!(validate(&json!({}), &json!({"x": 1})), Checked::Valid);
        assert_eq!(validate(&json!(true), &json!({"x": 1})), Checked::Valid);
    }

    #[test]
    fn each_problem_names_its_field() {
        assert_eq!(
            problems(json!({"city": 3})),
            ["argument \"city\": expected a string, got 3"]
        );
        assert_eq!(problems(json!({})), ["missing required field \"city\""]);
        let mut several = problems(json!({"city": "Oslo", "unit": "k", "days": 0, "x": 1}));
        several.sort();
        assert_eq!(
            several,
            [
                "argument \"days\": must be >=1, but got 0",
                "argument \"unit\": expected one of \"c\", \"f\", got \"k\"",
                "unknown field \"x\" (the schema allows no others)",
            ]
        );
        assert_eq!(
            problems(json!({"city": "Oslo", "stops": [{"name": "a"}, {"name": 2}, {}]})),
            [
                "argument \"stops[1].name\": expected a string, got 2",
                "missing required field \"stops[2].name\""
            ]
        );
    }

    #[test]
    fn each_problem_carries_its_field_as_a_path() {
        let Checked::Invalid(found) = validate(&forecast(), &json!({"stops": [{}], "x": 1})) else {
            panic!("the arguments fit");
        };
        let mut fields: Vec<_> = found.iter().map(|p| p.field.clone()).collect();
        fields.sort();
        let want = ["city", "stops[0].name", "x"].map(|f| Some(f.to_string()));
        assert_eq!(fields, want);
        let whole = validate(&json!({"type": "object", "minProperties": 1}), &json!({}));
        let Checked::Invalid(whole) = whole else {
            panic!("{whole:?}");
        };
        assert_eq!(whole[0].field, None);
        assert!(whole[0].message.starts_with("the arguments: "), "{whole:?}");
    }

    #[test]
    fn a_long_value_is_cut() {
        let long = "x".repeat(500);
        let p = problems(json!({"city": [long]}));
        assert!(p[0].ends_with("…"), "{p:?}");
        assert!(p[0].len() < 200, "{p:?}");
    }

    #[test]
    fn a_schema_that_cannot_be_used_checks_nothing() {
        for schema in [
            json!({"$schema": "https://example.com/my-draft", "type": "object"}),
            json!({"$ref": "file:///etc/passwd"}),
            json!({"$ref": "https://example.com/other.json"}),
            json!({"type": "object", "properties": {"a": {"type": 5}}}),
        ] {
            match validate(&schema, &json!({"a": 1})) {
                Checked::Unchecked(why) => assert!(why.starts_with("its schema cannot be used")),
                other => panic!("{schema}: {other:?}"),
            }
        }
    }
}
