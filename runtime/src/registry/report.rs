//! What a load tells the log (`toolhost -v`): at info, each plugin loaded
//! with its pin and whether it came from the compiled cache, and each
//! refusal; at debug, each plugin's grants and limits. The log is where a
//! person looks when a tool is missing or behaves unlike its neighbour.

use super::{Catalog, LoadedPlugin};
use crate::printable::printable;

/// Log what `catalog` holds.
pub(super) fn log_catalog(catalog: &Catalog) {
    if !tracing::enabled!(tracing::Level::INFO) {
        return;
    }
    tracing::info!(
        "{} plugins loaded, {} tools, {} components refused (generation {})",
        catalog.plugins.len(),
        catalog.tools().count(),
        catalog.refused.len(),
        catalog.generation
    );
    for plugin in &catalog.plugins {
        log_plugin(plugin);
    }
}

fn log_plugin(plugin: &LoadedPlugin) {
    let tools: Vec<&str> = plugin.manifest.tools.iter().map(|t| t.name.as_str()).collect();
    tracing::info!(
        "plugin `{}` {} from {} (sha256 {}…): {}; {}; {}",
        plugin.name(),
        plugin.manifest.version,
        plugin.path.display(),
        &plugin.sha256[..12.min(plugin.sha256.len())],
        printable(&tools.join(", ")),
        plugin.pin,
        plugin.cache,
    );
    if !tracing::enabled!(tracing::Level::DEBUG) {
        return;
    }
    let grants = &plugin.grants;
    tracing::debug!("plugin `{}` grants: [{}]", plugin.name(), grants.described().join(", "));
    for withheld in &grants.withheld {
        tracing::debug!("plugin `{}` withheld: {}", plugin.name(), printable(&withheld.to_string()));
    }
    tracing::debug!("plugin `{}` limits per call: {}", plugin.name(), plugin.limits);
}
