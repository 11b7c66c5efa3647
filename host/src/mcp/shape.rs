//! [`Shape`]: the members that say what kind of JSON-RPC message a body or
//! a line is, read without its `params`.

use serde::Deserialize;
use serde::de::IgnoredAny;
use std::borrow::Cow;

/// What kind of message: a request has a `method` and an `id`, a
/// notification a `method` alone, an answer an `id` and a `result` or an
/// `error`.
#[derive(Deserialize)]
pub(super) struct Shape<'a> {
    pub(super) jsonrpc: Option<serde_json::Value>,
    #[serde(borrow)]
    pub(super) method: Option<Cow<'a, str>>,
    /// Whether there is an `id` at all: `"id": null` is one.
    #[serde(default, deserialize_with = "present")]
    pub(super) id: bool,
    #[serde(default, deserialize_with = "present")]
    pub(super) result: bool,
    /// `Some(None)` for `"error": null`.
    #[serde(default, deserialize_with = "member")]
    pub(super) error: Option<Option<IgnoredAny>>,
}

impl<'a> Shape<'a> {
    /// The shape of `message`, `None` when it is no JSON object of these
    /// members.
    pub(super) fn of(message: &'a [u8]) -> Option<Self> {
        serde_json::from_slice(message).ok()
    }
}

/// Whether a member is there at all: `null` is.
pub(super) fn present<'de, D: serde::Deserializer<'de>>(member: D) -> Result<bool, D::Error> {
    IgnoredAny::deserialize(member).map(|_| true)
}

fn member<'de, D: serde::Deserializer<'de>>(member: D) -> Result<Option<Option<IgnoredAny>>, D::Error> {
    Option::<IgnoredAny>::deserialize(member).map(Some)
}
