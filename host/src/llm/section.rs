//! `[llm.NAME]`: a model endpoint as the policy file spells it, checked and
//! turned into an [`LlmProfile`].

use super::LlmProfile;
use crate::config_error::{ConfigError, in_range};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// `[llm.NAME]` as the file spells it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LlmSection {
    base_url: String,
    model: String,
    api_key_env: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    #[serde(default)]
    extra_body: toml::Table,
    idle_timeout_ms: Option<u64>,
    connect_timeout_ms: Option<u64>,
    retries: Option<u32>,
    max_reply_kib: Option<u64>,
    max_line_kib: Option<u64>,
    max_call_argument_kib: Option<u64>,
    max_calls_per_reply: Option<u64>,
    request_timeout_ms: Option<u64>,
    vcp_server: Option<String>,
}

impl LlmSection {
    pub(crate) fn resolve(self, name: &str, path: &Path) -> Result<LlmProfile, ConfigError> {
        let invalid = |key: &str, value: String, why: &str| ConfigError::Invalid {
            path: path.to_owned(),
            key: format!("llm.{name}.{key}"),
            value,
            why: why.to_owned(),
        };
        if !(self.base_url.starts_with("http://") || self.base_url.starts_with("https://")) {
            return Err(invalid("base_url", self.base_url, "an http:// or https:// URL, e.g. http://127.0.0.1:8080/v1"));
        }
        let mut profile = LlmProfile::new(self.base_url, self.model);
        profile.api_key_env = self.api_key_env;
        profile.headers = self.headers;
        profile.extra_body = match serde_json::to_value(&self.extra_body) {
            Ok(serde_json::Value::Object(map)) => map,
            _ => return Err(invalid("extra_body", format!("{:?}", self.extra_body), "a table of JSON-representable values")),
        };
        let millis = |key: &str, value: Option<u64>, default: Duration| match value {
            None => Ok(default),
            Some(ms @ 1..=3_600_000) => Ok(Duration::from_millis(ms)),
            Some(ms) => Err(invalid(key, ms.to_string(), "1 to 3600000 milliseconds")),
        };
        profile.idle_timeout = millis("idle_timeout_ms", self.idle_timeout_ms, profile.idle_timeout)?;
        profile.connect_timeout = millis("connect_timeout_ms", self.connect_timeout_ms, profile.connect_timeout)?;
        profile.request_timeout = millis("request_timeout_ms", self.request_timeout_ms, profile.request_timeout)?;
        if let Some(retries) = self.retries {
            if retries > MAX_LLM_RETRIES {
                return Err(invalid("retries", retries.to_string(), &format!("0 to {MAX_LLM_RETRIES}")));
            }
            profile.retry.retries = retries;
        }
        let kib = |key: &str, value: Option<u64>, default: usize| match value {
            None => Ok(default),
            Some(kib) => Ok((in_range(path, &format!("llm.{name}.{key}"), kib, 1..=MAX_REPLY_KIB)? as usize) << 10),
        };
        profile.max_reply_bytes = kib("max_reply_kib", self.max_reply_kib, profile.max_reply_bytes)?;
        profile.max_line_bytes = kib("max_line_kib", self.max_line_kib, profile.max_line_bytes)?;
        profile.max_call_argument_bytes =
            kib("max_call_argument_kib", self.max_call_argument_kib, profile.max_call_argument_bytes)?;
        if let Some(calls) = self.max_calls_per_reply {
            let key = format!("llm.{name}.max_calls_per_reply");
            profile.max_calls_per_reply = in_range(path, &key, calls, 1..=MAX_CALLS_PER_REPLY)? as usize;
        }
        profile.vcp_server = self.vcp_server;
        Ok(profile)
    }
}

/// The most retries an `[llm.NAME]` profile may ask for.
const MAX_LLM_RETRIES: u32 = 10;
/// The largest reply, line or arguments cap an `[llm.NAME]` profile may
/// set: 1 GiB.
const MAX_REPLY_KIB: u64 = 1 << 20;
/// The most calls per reply an `[llm.NAME]` profile may allow.
const MAX_CALLS_PER_REPLY: u64 = 4096;
