//! `http_get`: GET a URL from the hosts the host application allows.

use toolhost_sdk::http;
use toolhost_sdk::prelude::*;

/// Bodies longer than this are cut and marked as truncated.
const MAX_BODY_BYTES: usize = 512 * 1024;

struct HttpGet;

impl Plugin for HttpGet {
    fn manifest() -> Manifest {
        Manifest::new("http_get", env!("CARGO_PKG_VERSION"), "GET a URL from allow-listed hosts")
            .http_host("example.com")
            .http_host("api.github.com")
            .http_host("127.0.0.1")
            .tool(
                Tool::new("http_get", "Fetch a URL with HTTP GET and return its status and body as text.")
                    .param("url", Type::String, "an http:// or https:// URL on an allowed host", Required)
                    .permission(Permission::Moderate)
                    .agent_callable(true)
                    .tag("network")
                    .example(json!({ "url": "https://example.com/" })),
            )
    }

    fn invoke(tool: &str, args: Args) -> Result<Output, ToolError> {
        if tool != "http_get" {
            return Err(ToolError::unknown_tool(tool));
        }
        let url: String = args.get("url")?;
        let response = http::get(&url, MAX_BODY_BYTES)?;
        Ok(json!({
            "status": response.status,
            "body": String::from_utf8_lossy(&response.body),
            "truncated": response.truncated,
        })
        .into())
    }
}

toolhost_sdk::export_plugin!(HttpGet);
