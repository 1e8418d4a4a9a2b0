//! `zot ext call <target> <tool> [json]` and `zot ext invoke <target> /cmd [args]`: load
//! one extension alone (as `check` does), make one request, print its answer, stop it.
//! For scripts: `--json` prints the answer as the sidecar's response `data`, and the
//! exit status says how it went (0 ok, 1 the extension answered with an error, 2 it
//! could not be asked). A tool's arguments are checked against its schema first
//! (`--no-validate` sends them as they are); when the extension exits or does not start,
//! the last lines of its log follow the error.

use crate::flags::load::RunGrantArgs;
use crate::flags::scope::ScopeArgs;
use crate::flags::target::{setup, start_one, Parsed};
use crate::output::error::{CliError, Context as _};
use crate::output::log_tail::{self, LogMark};
use crate::output::render::{base64_decode, hanging, image_ext, panel_box};
use crate::output::terminal::{self, TermProgress};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;
use zot_host::schema::Checked;
use zot_host::terminal_text::one_line;
use zot_host::{CallOptions, ExtState};
use zot_protocol::{CommandResponse, ToolProgress, ToolResult};

/// How many `tool_progress` frames may wait to be said; more are dropped.
const PROGRESS_QUEUE: usize = 64;

/// One `tool_progress` as a line: `progress: 50/100 text`, its text on one line and
/// safe for a terminal.
fn progress_line(frame: &ToolProgress) -> String {
    let count = match (frame.progress, frame.total) {
        (Some(p), Some(t)) => format!(" {p}/{t}"),
        (Some(p), None) => format!(" {p}"),
        (None, _) => String::new(),
    };
    let text = frame.text.as_deref().map(one_line).unwrap_or_default();
    format!("progress:{count} {text}").trim_end().to_string()
}

/// The extension answered with an error (`is_error`, or `error` in a command response).
const ANSWERED_ERROR: u8 = 1;
/// It could not be asked: bad arguments, no such tool or command, not started, timeout.
const NOT_CALLED: u8 = 2;

#[derive(clap::Args)]
pub(crate) struct CallArgs {
    /// The extension's directory, its extension.json, a component (a .wasm file), or the
    /// name of an installed extension (the copy that loads here: project first).
    #[arg(add = clap_complete::ArgValueCompleter::new(crate::complete::targets))]
    target: String,
    /// The tool to call (without it, the extension's tools are listed).
    #[arg(add = clap_complete::ArgValueCompleter::new(crate::complete::tools))]
    tool: Option<String>,
    /// Its arguments: a JSON object (`-`: read it from stdin), checked against the
    /// tool's schema before it is sent.
    #[arg(value_name = "JSON", default_value = "{}")]
    args: String,
    /// One argument more (repeatable, after the JSON): `key=text` sets a string,
    /// `key:=json` any JSON value (`days:=3`, `unit:='"c"'`).
    #[arg(long = "arg", value_name = "KEY=VALUE")]
    arg: Vec<String>,
    /// Send the arguments without checking them against the tool's schema.
    #[arg(long)]
    no_validate: bool,
    /// Print the result as JSON (the sidecar's `call_tool` response data).
    #[arg(long)]
    json: bool,
    /// Write each image the tool returns to DIR as `<n>.<ext>` (1.png, 2.jpg, …).
    #[arg(long, value_name = "DIR", value_hint = clap::ValueHint::DirPath)]
    save: Option<PathBuf>,
    /// How long the tool may take (default: the manifest's `limits.tool_timeout_ms`, else
    /// 60000).
    #[arg(long, value_name = "MS")]
    timeout_ms: Option<u64>,
    #[command(flatten)]
    load: OneShotArgs,
}

#[derive(clap::Args)]
pub(crate) struct InvokeArgs {
    /// The extension's directory, its extension.json, a component (a .wasm file), or the
    /// name of an installed extension (the copy that loads here: project first).
    #[arg(add = clap_complete::ArgValueCompleter::new(crate::complete::targets))]
    target: String,
    /// The command, with or without its leading `/`.
    #[arg(add = clap_complete::ArgValueCompleter::new(crate::complete::commands))]
    command: String,
    /// Its arguments, joined by spaces (after `--` when one starts with `-`).
    args: Vec<String>,
    /// Print the command's response as JSON (the sidecar's `invoke_command` response
    /// data).
    #[arg(long)]
    json: bool,
    /// How long the command may take to answer.
    #[arg(long, value_name = "MS", default_value_t = 30_000)]
    timeout_ms: u64,
    #[command(flatten)]
    load: OneShotArgs,
}

/// How `call` and `invoke` load their one extension.
#[derive(clap::Args)]
pub(crate) struct OneShotArgs {
    /// How long to wait for the extension to be ready, e.g. `30s`, `500ms`.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = humantime::parse_duration)]
    wait: Duration,
    #[command(flatten)]
    scope: ScopeArgs,
    #[command(flatten)]
    grants: RunGrantArgs,
}

/// One request to the extension once it is ready.
enum Ask {
    Tool {
        name: String,
        args: Value,
        timeout: Option<Duration>,
        /// Check `args` against the tool's schema first.
        validate: bool,
    },
    Command {
        name: String,
        args: String,
    },
}

/// What it answered, with the name of the extension.
enum Answer {
    Tool(String, ToolResult),
    Command(String, Box<CommandResponse>),
}

/// `zot ext call`.
pub(crate) fn call(args: CallArgs) -> Result<ExitCode, CliError> {
    let tool_args = tool_args(&args.args, &args.arg)
        .context(format!("call {}", args.target))
        .map_err(not_called)?;
    let ask = Ask::Tool {
        name: args.tool.clone().unwrap_or_default(),
        args: tool_args,
        timeout: args.timeout_ms.map(Duration::from_millis),
        validate: !args.no_validate,
    };
    match one_shot("call", &args.target, args.load, None, ask).map_err(not_called)? {
        Answer::Tool(ext, result) => {
            if args.json {
                print_json(&crate::output::json::with_extension(
                    &result,
                    ext,
                    &["id", "name"],
                ));
            } else {
                print_result(&result, args.save.as_deref());
            }
            Ok(if result.is_error {
                ExitCode::from(ANSWERED_ERROR)
            } else {
                ExitCode::SUCCESS
            })
        }
        Answer::Command(..) => unreachable!("a tool call is answered by a tool result"),
    }
}

/// `zot ext invoke`.
pub(crate) fn invoke(args: InvokeArgs) -> Result<ExitCode, CliError> {
    let name = args.command.strip_prefix('/').unwrap_or(&args.command);
    let ask = Ask::Command {
        name: name.to_string(),
        args: args.args.join(" "),
    };
    let timeout = Duration::from_millis(args.timeout_ms);
    match one_shot("invoke", &args.target, args.load, Some(timeout), ask).map_err(not_called)? {
        Answer::Command(ext, response) => {
            if args.json {
                print_json(&crate::output::json::with_extension(
                    &*response,
                    ext,
                    &["id"],
                ));
            } else {
                let text = render_response(&response);
                if !text.is_empty() {
                    out(&text);
                }
            }
            Ok(match &response.error {
                Some(error) => {
                    if !args.json {
                        esay!("error: {}", hanging(error));
                    }
                    ExitCode::from(ANSWERED_ERROR)
                }
                None => ExitCode::SUCCESS,
            })
        }
        Answer::Tool(..) => unreachable!("a command is answered by a command response"),
    }
}

/// The error of a request that could not be made: exit 2.
fn not_called(e: CliError) -> CliError {
    e.with_code(NOT_CALLED)
}

/// The most bytes of arguments read from stdin (`-`).
const STDIN_ARGS_MAX: u64 = 16 << 20;

/// The tool's arguments: the JSON object given (`-`: read from stdin), then each
/// `--arg` set on it.
fn tool_args(given: &str, more: &[String]) -> Result<Value, String> {
    let mut value = if given == "-" {
        use std::io::Read as _;
        let mut text = String::new();
        std::io::stdin()
            .take(STDIN_ARGS_MAX + 1)
            .read_to_string(&mut text)
            .map_err(|e| format!("cannot read the arguments from stdin: {e}"))?;
        if text.len() as u64 > STDIN_ARGS_MAX {
            return Err(format!(
                "the arguments on stdin are longer than {} MiB",
                STDIN_ARGS_MAX >> 20
            ));
        }
        parse_tool_args(&text)?
    } else {
        parse_tool_args(given)?
    };
    for arg in more {
        let (key, field) = match (arg.split_once(":="), arg.split_once('=')) {
            (Some((key, json)), Some((before, _))) if key.len() < before.len() => {
                let field = serde_json::from_str(json)
                    .map_err(|e| format!("--arg {arg}: the value after := is not JSON: {e}"))?;
                (key, field)
            }
            (_, Some((key, text))) => (key, Value::String(text.to_string())),
            (_, None) => {
                return Err(format!(
                "--arg {arg}: expected KEY=TEXT or KEY:=JSON (e.g. --arg city=Oslo --arg days:=3)"
            ))
            }
        };
        if key.is_empty() {
            return Err(format!("--arg {arg}: the key is empty"));
        }
        value[key] = field;
    }
    Ok(value)
}

/// The tool's arguments: a JSON object.
fn parse_tool_args(text: &str) -> Result<Value, String> {
    let value: Value =
        serde_json::from_str(text).map_err(|e| format!("the arguments are not JSON: {e}"))?;
    if value.is_object() {
        Ok(value)
    } else {
        let kind = match value {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Number(_) => "a number",
            Value::String(_) => "a string",
            Value::Array(_) => "an array",
            Value::Object(_) => "an object",
        };
        Err(format!(
            "the arguments must be a JSON object (like '{{\"key\": 1}}'), not {kind}"
        ))
    }
}

/// Loads the extension named by `target` alone, asks it one thing and stops it.
fn one_shot(
    verb: &str,
    target: &str,
    load: OneShotArgs,
    command_timeout: Option<Duration>,
    ask: Ask,
) -> Result<Answer, CliError> {
    let progressive = if verb == "call" {
        "calling"
    } else {
        "invoking"
    };
    let what = format!("{verb} {target}");
    let named = target;
    let (home, parsed, compiler, runtime) = setup(verb, target, load.scope, progressive)?;
    let target = match parsed {
        Parsed::Run(target) => target,
        Parsed::Untrusted(u) => return Err(u.message()).context(&what),
    };
    let progress = TermProgress::new();
    let prepared = target
        .prepare(&runtime, &home, &compiler, &progress)
        .context(&what)?;
    let log = LogMark::of(&home, prepared.dir());
    let confined = crate::records::confinement::of(&home, prepared.dir());
    let mut config = prepared.config(home, compiler, load.wait).context(&what)?;
    load.grants.apply(&mut config);
    if let Some(timeout) = command_timeout {
        config.timeouts.command = timeout;
    }
    // The error, whether the extension is gone (it exited, or never started), and
    // whether it failed (that, or it did not answer).
    let answer = runtime.block_on(async {
        let running = start_one(config).await.map_err(|e| (e, true, true))?;
        for (_, line) in crate::output::report::withheld_env(&running.host.extensions()) {
            esay!("{line}");
        }
        let answer = ask_one(&running.host, &running.info.name, ask).await;
        let gone = running
            .host
            .extensions()
            .first()
            .is_none_or(|info| info.state != ExtState::Ready);
        running.stop().await;
        answer.map_err(|e| (e.why, gone, gone || e.by_extension))
    });
    drop(prepared);
    runtime.shutdown_timeout(Duration::from_millis(100));
    answer
        .map_err(|(mut why, gone, failed)| {
            if let Some(tail) = log.filter(|_| gone).and_then(|l| l.tail(&[])) {
                why = format!("{why}\n{}", log_tail::shown(&tail));
            }
            let hint = confined
                .filter(|_| failed)
                .and_then(|view| crate::records::confinement::failure_hint(named, &view));
            if let Some(hint) = hint {
                why = format!("{why}\n{hint}");
            }
            why
        })
        .context(what)
}

/// Makes the request, after checking the tool or command is there (else the error lists
/// what there is).
async fn ask_one(host: &zot_host::Host, ext: &str, ask: Ask) -> Result<Answer, Unanswered> {
    match ask {
        Ask::Tool {
            name,
            args,
            timeout,
            validate: check,
        } => {
            let tools = host.tools();
            let names: Vec<String> = tools.iter().map(|(_, t)| t.name.clone()).collect();
            if name.is_empty() {
                return Err(format!("name a tool to call; {}", has(ext, "tools", &names)).into());
            }
            let Some((_, tool)) = tools.iter().find(|(_, t)| t.name == name) else {
                return Err(
                    format!("no tool named {name:?}; {}", has(ext, "tools", &names)).into(),
                );
            };
            if check {
                match zot_host::schema::validate(&tool.schema, &args) {
                    Checked::Valid => {}
                    Checked::Invalid(problems) => return Err(invalid(&name, &problems).into()),
                    Checked::Unchecked(why) => {
                        esay!(
                            "warning: {}: {}; the arguments are sent unchecked",
                            one_line(&name),
                            one_line(&why)
                        );
                    }
                }
            }
            // Checked above, or not at all with --no-validate. The tool's progress is
            // said on stderr as it comes.
            let (progress, mut progressed) = tokio::sync::mpsc::channel(PROGRESS_QUEUE);
            let options = CallOptions::default()
                .timeout(timeout)
                .unchecked()
                .progress(progress);
            let call = host.call_tool_with(&name, args, options);
            tokio::pin!(call);
            let answer = loop {
                tokio::select! {
                    biased;
                    Some(frame) = progressed.recv() => esay!("{}", progress_line(&frame)),
                    answer = &mut call => break answer,
                }
            };
            // What came just before the result is said before it.
            while let Ok(frame) = progressed.try_recv() {
                esay!("{}", progress_line(&frame));
            }
            let (ext, result) = answer?;
            Ok(Answer::Tool(ext, result))
        }
        Ask::Command { name, args } => {
            let commands: Vec<String> = host
                .commands()
                .into_iter()
                .map(|(_, c)| format!("/{}", c.name))
                .collect();
            if !commands.contains(&format!("/{name}")) {
                return Err(format!(
                    "no command named \"/{name}\"; {}",
                    has(ext, "commands", &commands)
                )
                .into());
            }
            let (ext, response) = host.invoke_command(&name, &args).await?;
            Ok(Answer::Command(ext, Box::new(response)))
        }
    }
}

/// Why a request was not answered, and whether the extension failed (it timed out,
/// exited or is not running) rather than the request being wrong.
struct Unanswered {
    why: String,
    by_extension: bool,
}

impl From<String> for Unanswered {
    fn from(why: String) -> Self {
        Unanswered {
            why,
            by_extension: false,
        }
    }
}

impl From<zot_host::CallError> for Unanswered {
    fn from(e: zot_host::CallError) -> Self {
        use zot_host::CallError::*;
        let by_extension = match &e {
            Timeout { .. } | Exited { .. } | QueueFull { .. } | NotRunning { .. } => true,
            NotFound(_) | Invalid(_) | Arguments { .. } => false,
        };
        Unanswered {
            why: e.to_string(),
            by_extension,
        }
    }
}

/// Why arguments that do not fit `tool`'s schema were not sent: the problem, or each on
/// a line; then what to do.
fn invalid(tool: &str, problems: &[zot_host::schema::Problem]) -> String {
    let tool = one_line(tool);
    let problems: Vec<_> = problems.iter().map(|p| one_line(&p.message)).collect();
    let why = match problems.as_slice() {
        [one] => format!("{tool}: {one}"),
        many => format!(
            "{tool}: the arguments do not fit its schema:\n  - {}",
            many.join("\n  - ")
        ),
    };
    format!("{why}\nhint: make the arguments fit the tool's schema, or pass --no-validate to send them as they are")
}

/// `<ext> has: a, b` or `<ext> has no <what>`, each name on the one line.
fn has(ext: &str, what: &str, names: &[String]) -> String {
    if names.is_empty() {
        format!("{ext} has no {what}")
    } else {
        let names: Vec<_> = names.iter().map(|n| one_line(n)).collect();
        format!("{ext} has {what}: {}", names.join(", "))
    }
}

/// Writes text for people to stdout at once, shown with `terminal_text::multi_line`; a
/// closed stdout (`| head`) is not an error.
fn out(text: &str) {
    write_line(&zot_host::terminal_text::multi_line(text));
}

/// Writes `text` and a newline (unless it ends with one) to stdout at once, as it is.
fn write_line(text: &str) {
    let mut text = text.to_string();
    if !text.ends_with('\n') {
        text.push('\n');
    }
    terminal::print_bytes(text.as_bytes());
}

/// JSON as serde writes it: its data exact, the control characters escaped by JSON.
fn print_json(value: &Value) {
    write_line(&serde_json::to_string_pretty(value).unwrap_or_default());
}

/// A tool result for people (shown with `terminal_text`): text blocks, images as a line (saved to `save`
/// when given), other blocks as compact JSON, then `structured_content` as pretty JSON.
/// An error result goes to stderr, its text after `error: `.
fn print_result(result: &ToolResult, save: Option<&Path>) {
    let mut images = 0;
    for block in &result.content {
        let text = match block.get("type").and_then(Value::as_str) {
            Some("text") => block
                .get("text")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            Some("image") => {
                images += 1;
                image_line(block, images, save)
            }
            _ => serde_json::to_string(block).unwrap_or_default(),
        };
        if result.is_error {
            esay!("error: {}", hanging(text.trim_end_matches('\n')));
        } else if !text.is_empty() {
            out(&text);
        }
    }
    if let Some(structured) = result.extra.get("structured_content") {
        out(&serde_json::to_string_pretty(structured).unwrap_or_default());
    }
}

/// `[image: image/png, 12345 bytes]`, saving it as `<dir>/<n>.<ext>` when asked.
fn image_line(block: &Value, n: usize, save: Option<&Path>) -> String {
    let mime = block
        .get("mime_type")
        .or_else(|| block.get("mimeType"))
        .and_then(Value::as_str)
        .unwrap_or("application/octet-stream");
    let data = block
        .get("data")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let Some(bytes) = base64_decode(data) else {
        return format!(
            "[image: {mime}, data that is not base64 ({} characters)]",
            data.len()
        );
    };
    let Some(dir) = save else {
        return format!("[image: {mime}, {} bytes]", bytes.len());
    };
    let file = dir.join(format!("{n}.{}", image_ext(mime)));
    let saved = std::fs::create_dir_all(dir).and_then(|()| std::fs::write(&file, &bytes));
    match saved {
        Ok(()) => format!(
            "[image: {mime}, {} bytes, saved to {}]",
            bytes.len(),
            file.display()
        ),
        Err(e) => format!(
            "[image: {mime}, {} bytes, not saved: {}: {e}]",
            bytes.len(),
            file.display()
        ),
    }
}

/// A command response for people: `prompt: …`, `insert: …`, the display text, the panel
/// in a box; nothing for `noop`; anything else as compact JSON.
fn render_response(r: &CommandResponse) -> String {
    match r.action.as_str() {
        "prompt" => format!("prompt: {}", r.prompt.as_deref().unwrap_or_default()),
        "insert" => format!("insert: {}", r.insert.as_deref().unwrap_or_default()),
        "display" => r.display.clone().unwrap_or_default(),
        "open_panel" => r
            .open_panel
            .as_ref()
            .map(|p| panel_box(&p.title, &p.lines, &p.footer).join("\n"))
            .unwrap_or_default(),
        "noop" | "" => String::new(),
        _ => {
            let mut value = serde_json::to_value(r).unwrap_or_default();
            if let Some(map) = value.as_object_mut() {
                map.shift_remove("id");
            }
            serde_json::to_string(&value).unwrap_or_default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_arguments_must_be_an_object() {
        assert_eq!(parse_tool_args(r#"{"a":1}"#).unwrap()["a"], 1);
        assert!(parse_tool_args("{")
            .unwrap_err()
            .starts_with("the arguments are not JSON"));
        assert!(parse_tool_args("[1]")
            .unwrap_err()
            .ends_with("not an array"));
    }
}
