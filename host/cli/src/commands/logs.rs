//! `zot ext logs NAME`: an extension's log, each line made safe for a terminal — all of
//! it, its last lines (`-n`), those written since a time (`--since`), as JSON lines
//! (`--json`), and what is appended after (`-f`).

use crate::output::error::{self, CliError, Context as _};
use serde_json::{json, Value};
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::time::{Duration, SystemTime};
use zot_host::manage::install;
use zot_host::terminal_text::one_line;
use zot_host::ZotHome;

#[derive(clap::Args)]
pub(crate) struct LogsArgs {
    #[arg(add = clap_complete::ArgValueCompleter::new(crate::complete::names))]
    name: String,
    /// Keep printing as the log grows.
    #[arg(long, short)]
    follow: bool,
    /// Only its last N lines (with --follow: then what is appended).
    #[arg(short = 'n', long = "lines", value_name = "N")]
    lines: Option<usize>,
    /// Only the lines written since WHEN: a time ago (`10m`, `2h 30m`) or a moment
    /// (`2026-12-04T09:00:00Z`).
    #[arg(long, value_name = "WHEN", value_parser = since)]
    since: Option<SystemTime>,
    /// Each line as a JSON object: `time`, `source` (`zot`, `guest` or `stderr`),
    /// `level` (`null` for stderr) and `message`.
    #[arg(long)]
    json: bool,
}

/// `--since`: a duration before now, or an RFC 3339 moment.
fn since(text: &str) -> Result<SystemTime, String> {
    if let Ok(ago) = humantime::parse_duration(text) {
        return SystemTime::now()
            .checked_sub(ago)
            .ok_or_else(|| format!("{text} ago is before the clock starts"));
    }
    humantime::parse_rfc3339_weak(text).map_err(|_| {
        format!("{text:?} is neither a time ago (10m, 2h) nor a moment (2026-12-04T09:00:00Z)")
    })
}

/// Which lines to print, and how.
struct Select {
    since: Option<SystemTime>,
    json: bool,
}

/// One log line, `<time> [<source>] <level>: <message>` (a `stderr` line has no level).
struct Line<'a> {
    time: Option<&'a str>,
    source: Option<&'a str>,
    level: Option<&'a str>,
    message: &'a str,
}

impl<'a> Line<'a> {
    fn parse(text: &'a str) -> Line<'a> {
        let parsed = text.split_once(' ').and_then(|(time, rest)| {
            let (source, rest) = rest.strip_prefix('[')?.split_once("] ")?;
            let (level, message) = match source {
                "stderr" => (None, rest),
                _ => match rest.split_once(": ") {
                    Some((level, message)) => (Some(level), message),
                    None => (None, rest),
                },
            };
            Some(Line {
                time: Some(time),
                source: Some(source),
                level,
                message,
            })
        });
        parsed.unwrap_or(Line {
            time: None,
            source: None,
            level: None,
            message: text,
        })
    }

    /// Written at or after `since` (a line without a readable time is kept).
    fn since(&self, since: Option<SystemTime>) -> bool {
        let (Some(since), Some(time)) = (since, self.time) else {
            return true;
        };
        humantime::parse_rfc3339_weak(time).map_or(true, |t| t >= since)
    }

    fn json(&self) -> Value {
        json!({"time": self.time, "source": self.source, "level": self.level,
               "message": self.message})
    }
}

impl Select {
    /// Writes each selected line of `text` (whole lines), escaped or as JSON.
    fn write(&self, lines: &[&str], out: &mut impl Write) -> io::Result<()> {
        for text in lines {
            // The log escaped what an extension wrote; escaping again keeps a hand-edited
            // log from driving the terminal.
            let line = Line::parse(text);
            if !line.since(self.since) {
                continue;
            }
            if self.json {
                writeln!(out, "{}", line.json())?;
            } else {
                writeln!(out, "{}", one_line(text))?;
            }
        }
        Ok(())
    }
}

/// Prints the log as asked; with `follow`, keeps printing what is appended (polling
/// every 200 ms) and waits for a log that does not exist yet.
pub(crate) fn run(home: &ZotHome, args: LogsArgs) -> Result<(), CliError> {
    let name = &args.name;
    let path = install::log_path(home, name).context(format!("logs {name}"))?;
    let what = format!("logs {name}: {}", path.display());
    let select = Select {
        since: args.since,
        json: args.json,
    };
    let mut offset = 0;
    match read_whole_lines(&path, 0) {
        Err(e) if e.kind() == io::ErrorKind::NotFound && !args.follow => {
            return Err(CliError::new(format!(
                "no log at {} yet; it is written when the extension runs",
                path.display()
            )))
            .context(format!("logs {name}"));
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => error::note(format_args!(
            "no log at {} yet; waiting for it",
            path.display()
        )),
        Err(e) => return Err(e).context(&what),
        Ok((text, end)) => {
            let lines: Vec<&str> = text.split_terminator('\n').collect();
            let lines = match args.lines {
                Some(n) => &lines[lines.len().saturating_sub(n)..],
                None => &lines[..],
            };
            ignore_broken_pipe(select.write(lines, &mut io::stdout().lock())).context(&what)?;
            offset = end;
        }
    }
    if !args.follow {
        return Ok(());
    }
    loop {
        match follow_from(&path, offset, &select) {
            Ok(next) => offset = next,
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return Ok(()),
            Err(e) => return Err(e).context(&what),
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn ignore_broken_pipe(result: io::Result<()>) -> io::Result<()> {
    match result {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => Err(e),
        _ => Ok(()),
    }
}

/// The whole lines of `path` from `offset` (a partial last line is left for later), and
/// the offset after them.
fn read_whole_lines(path: &Path, offset: u64) -> io::Result<(String, u64)> {
    let mut file = File::open(path)?;
    file.seek(SeekFrom::Start(offset))?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    let whole = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    bytes.truncate(whole);
    Ok((
        String::from_utf8_lossy(&bytes).into_owned(),
        offset + whole as u64,
    ))
}

/// Prints the lines appended since `offset` (from the start of a log that shrank or was
/// rotated meanwhile); returns where it stopped.
fn follow_from(path: &Path, offset: u64, select: &Select) -> io::Result<u64> {
    let Ok(len) = std::fs::metadata(path).map(|m| m.len()) else {
        return Ok(offset);
    };
    let start = if len < offset {
        error::note(format_args!(
            "{} was truncated; following from its start",
            path.display()
        ));
        0
    } else {
        offset
    };
    let (text, end) = read_whole_lines(path, start)?;
    let mut out = io::stdout().lock();
    // Split at newlines only: a carriage return is shown, not taken as a line's end.
    select.write(&text.split_terminator('\n').collect::<Vec<_>>(), &mut out)?;
    out.flush()?;
    Ok(end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_line_is_read_in_its_parts() {
        let l = Line::parse("2026-12-04T09:01:58.021Z [zot] warn: not enforced: x");
        assert_eq!(
            l.json(),
            json!({"time": "2026-12-04T09:01:58.021Z", "source": "zot", "level": "warn",
                   "message": "not enforced: x"})
        );
        let l = Line::parse("2026-12-04T09:01:58.067Z [stderr] Error: a: b");
        assert_eq!(
            (l.source, l.level, l.message),
            (Some("stderr"), None, "Error: a: b")
        );
        let l = Line::parse("edited by hand");
        assert_eq!((l.time, l.message), (None, "edited by hand"));
        let at = humantime::parse_rfc3339_weak("2026-12-04T09:00:00Z").unwrap();
        assert!(Line::parse("2026-12-04T09:01:58.021Z [zot] info: a").since(Some(at)));
        assert!(!Line::parse("2026-12-04T08:59:58.021Z [zot] info: a").since(Some(at)));
    }
}
