//! `weather`: an LLM tool that asks a weather service over HTTP.
//!
//! The service is `https://wttr.in` (its `?format=j1` JSON), or the one named by the
//! `WEATHER_API_URL` environment variable. In the sandbox the manifest asks for exactly
//! that: HTTP to `wttr.in` and the one variable; nothing else leaves.
//!
//! The component carries that manifest (`embed_manifest!`), so `weather.wasm` alone
//! asks for the same when installed as a bare file (`zot ext install weather.wasm`).

use serde::Deserialize;
use zot_ext::{http, Extension, JsonSchema, ToolOutput};

zot_ext::embed_manifest!("wasm/extension.json");

const DEFAULT_API: &str = "https://wttr.in";

/// The `weather` tool's arguments.
#[derive(Deserialize, JsonSchema)]
struct Args {
    /// A city name, e.g. "Berlin" or "San Francisco".
    city: String,
}

fn main() {
    Extension::new("weather", env!("CARGO_PKG_VERSION"))
        .tool_typed(
            "weather",
            "Current weather for a city: conditions, temperature, humidity and wind.",
            |_, args: Args| current(&args.city),
        )
        .run();
}

/// One line about the weather in `city`, or an error result saying what went wrong.
fn current(city: &str) -> Result<ToolOutput, String> {
    let city = city.trim();
    if city.is_empty() {
        return Err("weather: name a city".into());
    }
    let api = std::env::var("WEATHER_API_URL").unwrap_or_else(|_| DEFAULT_API.into());
    let url = format!("{}/{}?format=j1", api.trim_end_matches('/'), encode(city));
    let response = http::get(&url).map_err(|e| format!("weather: {e}"))?;
    if response.status != 200 {
        return Err(format!("weather: the service answered {}", response.status));
    }
    let report: Report = response.json().map_err(|e| format!("weather: {e}"))?;
    let now = report
        .current_condition
        .first()
        .ok_or("weather: the service sent no current conditions")?;
    let conditions = now
        .weather_desc
        .first()
        .map(|d| d.value.trim())
        .unwrap_or("unknown conditions");
    Ok(ToolOutput::text(format!(
        "{city}: {conditions}, {} °C (feels like {} °C), humidity {}%, wind {} km/h",
        now.temp_c, now.feels_like_c, now.humidity, now.windspeed_kmph
    )))
}

/// The part of wttr.in's `format=j1` answer this tool reads.
#[derive(Deserialize)]
struct Report {
    current_condition: Vec<Condition>,
}

#[derive(Deserialize)]
struct Condition {
    #[serde(rename = "temp_C")]
    temp_c: String,
    #[serde(rename = "FeelsLikeC")]
    feels_like_c: String,
    humidity: String,
    #[serde(rename = "windspeedKmph")]
    windspeed_kmph: String,
    #[serde(rename = "weatherDesc", default)]
    weather_desc: Vec<Text>,
}

#[derive(Deserialize)]
struct Text {
    value: String,
}

/// Percent-encodes a path segment (RFC 3986 unreserved characters stay).
fn encode(segment: &str) -> String {
    segment
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}
