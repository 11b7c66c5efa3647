//! `clock`: the current time, and conversion between time zones.

use chrono::{DateTime, NaiveDateTime, TimeZone, Utc};
use chrono_tz::Tz;
use toolhost_sdk::prelude::*;

struct Clock;

impl Plugin for Clock {
    fn manifest() -> Manifest {
        Manifest::new("clock", env!("CARGO_PKG_VERSION"), "Current time and time-zone conversion")
            .tool(
                Tool::new("current_time", "The current date and time in a time zone (default UTC).")
                    .param("zone", Type::String, "an IANA time zone, e.g. Europe/Paris", Optional)
                    .agent_callable(true)
                    .tag("time")
                    .example(json!({ "zone": "Asia/Tokyo" })),
            )
            .tool(
                Tool::new("convert_time", "Convert a local date and time from one time zone to another.")
                    .param("time", Type::String, "local time as YYYY-MM-DD HH:MM[:SS]", Required)
                    .param("from", Type::String, "the IANA zone the time is in", Required)
                    .param("to", Type::String, "the IANA zone to convert to", Required)
                    .agent_callable(true)
                    .tag("time")
                    .example(json!({ "time": "2026-03-01 09:30", "from": "America/New_York", "to": "Europe/Berlin" })),
            )
    }

    fn invoke(tool: &str, args: Args) -> Result<Output, ToolError> {
        match tool {
            "current_time" => {
                let zone = zone(args.get_opt::<String>("zone")?.as_deref().unwrap_or("UTC"))?;
                let now = Utc::now().with_timezone(&zone);
                Ok(json!({ "zone": zone.name(), "time": now.to_rfc3339(), "weekday": now.format("%A").to_string() }).into())
            }
            "convert_time" => {
                let text: String = args.get("time")?;
                let from = zone(&args.get::<String>("from")?)?;
                let to = zone(&args.get::<String>("to")?)?;
                let local = parse_local(&text)?;
                let instant: DateTime<Tz> = from.from_local_datetime(&local).earliest().ok_or_else(|| {
                    ToolError::invalid_args(format!("{text} does not exist in {} (a clock change skips it)", from.name()))
                })?;
                let converted = instant.with_timezone(&to);
                Ok(json!({
                    "from": { "zone": from.name(), "time": instant.to_rfc3339() },
                    "to": { "zone": to.name(), "time": converted.to_rfc3339() },
                })
                .into())
            }
            other => Err(ToolError::unknown_tool(other)),
        }
    }
}

toolhost_sdk::export_plugin!(Clock);

fn zone(name: &str) -> Result<Tz, ToolError> {
    name.parse().map_err(|_| ToolError::invalid_args(format!("`{name}` is not an IANA time zone (e.g. Europe/Paris)")))
}

fn parse_local(text: &str) -> Result<NaiveDateTime, ToolError> {
    ["%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M"]
        .iter()
        .find_map(|format| NaiveDateTime::parse_from_str(text.trim(), format).ok())
        .ok_or_else(|| ToolError::invalid_args(format!("`{text}` is not YYYY-MM-DD HH:MM[:SS]")))
}
