//! The WASI interfaces toolhost answers some functions of itself, and the
//! WASI 0.2 version they are linked at.

/// The WASI interfaces toolhost answers some functions of itself, at the
/// versions `wasmtime-wasi` links (a plugin built against an older 0.2.x
/// links to them by semver).
pub(crate) const WASI_FILESYSTEM_TYPES: &str = "wasi:filesystem/types@0.2.12";
pub(crate) const WASI_IO_STREAMS: &str = "wasi:io/streams@0.2.12";
pub(crate) const WASI_IO_POLL: &str = "wasi:io/poll@0.2.12";

/// The WASI 0.2 version `wasmtime-wasi` 48 links.
pub(crate) const WASI_LINKED_VERSION: &str = "0.2.12";
