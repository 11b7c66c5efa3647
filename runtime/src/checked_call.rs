//! [`CheckedCall`]: a call bound to the plugin it was checked against.
//!
//! The check step finds a call's tool in one catalog snapshot and coerces
//! its arguments; approval decides on that plugin's bytes (by their
//! SHA-256); the executor runs that same plugin, never a tool looked up
//! again by name. Holding the plugin keeps its compiled code alive, so a
//! registry reload in between cannot put other bytes under the approval:
//! the approved component runs, and the next turn sees the new one.

use crate::arguments::{self, ArgumentError};
use crate::call::ToolCall;
use crate::manifest::ToolSpec;
use crate::registry::{Catalog, LoadedPlugin};
use std::sync::Arc;

/// A call checked against one loaded plugin: the plugin (its bytes'
/// SHA-256, its manifest, grants and limits), the tool's declaration, and
/// the call with its arguments coerced. What the executor runs.
#[derive(Clone)]
pub struct CheckedCall {
    call: ToolCall,
    plugin: Arc<LoadedPlugin>,
    /// The tool's place among the plugin's declared tools.
    tool: usize,
}

impl CheckedCall {
    /// Check `call` against the tools of `catalog`, as
    /// [`check_call`](crate::arguments::check) does, and bind it to the plugin
    /// that declares its tool.
    ///
    /// # Errors
    ///
    /// An unknown tool (naming the closest), a missing required parameter,
    /// or a value that cannot be coerced, worded for the model.
    pub fn check(call: &ToolCall, catalog: &Catalog) -> Result<Self, ArgumentError> {
        let tools: Vec<&ToolSpec> = catalog.tools().map(|(_, spec)| spec).collect();
        Self::check_among(call, catalog, &tools)
    }

    /// [`check`](Self::check) against `offered`, the tools of `catalog`
    /// the caller may call. A declaration in `offered` that is not
    /// `catalog`'s own (another snapshot's, or one built by hand) is not
    /// offered: a call is only ever checked against the declaration of the
    /// tool it will run.
    ///
    /// # Errors
    ///
    /// As [`check`](Self::check): the tool is not among `offered`, or the
    /// arguments do not fit its declaration.
    pub fn check_among(call: &ToolCall, catalog: &Catalog, offered: &[&ToolSpec]) -> Result<Self, ArgumentError> {
        let own = |spec: &ToolSpec| catalog.tool(&spec.name).is_some_and(|(_, own)| std::ptr::eq(own, spec));
        if offered.iter().filter(|spec| spec.name == call.tool).all(|spec| own(spec)) {
            let checked = arguments::check(call, offered)?;
            if let Some(bound) = Self::bind(checked, catalog) {
                return Ok(bound);
            }
        }
        // A foreign declaration of this name: checked as if it were absent.
        let owned: Vec<&ToolSpec> = offered.iter().copied().filter(|spec| own(spec)).collect();
        let checked = arguments::check(call, &owned)?;
        Ok(Self::bind(checked, catalog).expect("a tool of the catalog's own"))
    }

    /// `call` bound to the plugin of its tool in `catalog`, its arguments
    /// as they are; `None` when no loaded tool has its name.
    pub(crate) fn bind(call: ToolCall, catalog: &Catalog) -> Option<Self> {
        let (plugin, spec) = catalog.tool(&call.tool)?;
        let tool = plugin.manifest.tools.iter().position(|t| std::ptr::eq(t, spec)).expect("a tool of its plugin");
        Some(CheckedCall { call, plugin: plugin.clone(), tool })
    }

    /// The call, its arguments coerced to the declared types.
    pub fn call(&self) -> &ToolCall {
        &self.call
    }

    /// The plugin it runs in: the one it was checked against.
    pub fn plugin(&self) -> &Arc<LoadedPlugin> {
        &self.plugin
    }

    /// The tool's declaration.
    pub fn spec(&self) -> &ToolSpec {
        &self.plugin.manifest.tools[self.tool]
    }

    /// The call, its arguments coerced.
    pub fn into_call(self) -> ToolCall {
        self.call
    }
}

impl std::fmt::Debug for CheckedCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CheckedCall")
            .field("call", &self.call)
            .field("plugin", &self.plugin.label())
            .field("sha256", &self.plugin.sha256)
            .finish()
    }
}
