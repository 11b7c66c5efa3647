//! Where `toolhost add` takes a component from: a file, an `https://` URL
//! whose SHA-256 the user gives, or an OCI registry (`oci://HOST/REPO:TAG`
//! or `oci://HOST/REPO@sha256:…`) holding it as a Wasm OCI artifact (one
//! `application/wasm` layer, the `application/vnd.wasm.config.v0+json`
//! config), fetched with the `oci-wasm` crate.

use anyhow::{Context, bail, ensure};
use futures::StreamExt;
use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};
use oci_wasm::{WASM_LAYER_MEDIA_TYPE, WasmClient};
use std::path::PathBuf;
use toolhost::sha256_hex;

/// The largest component `toolhost add` downloads.
pub(super) const MAX_DOWNLOAD_BYTES: usize = 256 << 20;

/// A parsed `toolhost add` source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Source {
    /// A component file.
    File(PathBuf),
    /// An `https://` URL.
    Https(String),
    /// An OCI reference, without its `oci://`.
    Oci(String),
}

impl Source {
    /// `text` as a source: `oci://…`, `https://…`, or else a file path.
    /// Plain `http://` is refused: a component is code the user will run.
    pub(super) fn parse(text: &str) -> anyhow::Result<Source> {
        if let Some(reference) = text.strip_prefix("oci://") {
            return Ok(Source::Oci(reference.to_owned()));
        }
        if text.starts_with("https://") {
            return Ok(Source::Https(text.to_owned()));
        }
        if text.starts_with("http://") {
            bail!("`{text}`: toolhost downloads components only over https://");
        }
        Ok(Source::File(PathBuf::from(text.strip_prefix("file://").unwrap_or(text))))
    }

    /// The component's bytes. An `https://` download must have the SHA-256
    /// `expected`; a file or an OCI artifact must have it when given. An
    /// OCI pull checks every digest the registry names (manifest, layer).
    pub(super) async fn fetch(&self, expected: Option<&str>) -> anyhow::Result<Vec<u8>> {
        let bytes = match self {
            Source::File(path) => std::fs::read(path).with_context(|| format!("reading {}", path.display()))?,
            Source::Https(url) => {
                ensure!(
                    expected.is_some(),
                    "an https:// source needs --sha256 DIGEST: the digest you trust, from the component's publisher"
                );
                download(url).await?
            }
            Source::Oci(reference) => pull(reference).await?,
        };
        if let Some(expected) = expected {
            let actual = sha256_hex(&bytes);
            ensure!(
                actual.eq_ignore_ascii_case(expected.trim_start_matches("sha256:")),
                "the component's SHA-256 is {actual}, not the {expected} given with --sha256; it was not installed"
            );
        }
        Ok(bytes)
    }
}

async fn download(url: &str) -> anyhow::Result<Vec<u8>> {
    install_crypto();
    let mut response = reqwest::get(url).await.and_then(|r| r.error_for_status()).with_context(|| format!("downloading {url}"))?;
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await.with_context(|| format!("downloading {url}"))? {
        append_capped(&mut bytes, &chunk, url)?;
    }
    Ok(bytes)
}

/// Add `chunk` to what arrived of `what`, unless that makes it larger than
/// [`MAX_DOWNLOAD_BYTES`]: checked before the chunk is kept.
fn append_capped(bytes: &mut Vec<u8>, chunk: &[u8], what: &str) -> anyhow::Result<()> {
    ensure!(
        bytes.len() + chunk.len() <= MAX_DOWNLOAD_BYTES,
        "{what} is larger than {} MiB, the most toolhost downloads (MAX_DOWNLOAD_BYTES); it was not installed",
        MAX_DOWNLOAD_BYTES >> 20
    );
    bytes.extend_from_slice(chunk);
    Ok(())
}

/// Pull the component layer of the artifact at `reference`. Plain HTTP
/// only to a registry on loopback (a local test or mirror); HTTPS anywhere
/// else. Anonymous: the registry must allow pulls without credentials.
/// The layer is read as it streams, so one larger than
/// [`MAX_DOWNLOAD_BYTES`] is refused before it is held: by the size its
/// manifest declares, else as its bytes pass the cap.
async fn pull(reference: &str) -> anyhow::Result<Vec<u8>> {
    install_crypto();
    let parsed: Reference = reference.parse().with_context(|| format!("`oci://{reference}` is not an OCI reference"))?;
    let host = parsed.resolve_registry().to_owned();
    let protocol = if is_loopback(&host) { ClientProtocol::HttpsExcept(vec![host]) } else { ClientProtocol::Https };
    let client = WasmClient::new(Client::new(ClientConfig { protocol, ..ClientConfig::default() }));
    let pulling = || format!("pulling oci://{reference}");
    // Checks one layer, and the Wasm artifact's media types.
    let (manifest, _config, _digest) = client.pull_manifest_and_config(&parsed, &RegistryAuth::Anonymous).await.with_context(pulling)?;
    let layer = manifest.layers.first().context("the artifact has no layer")?;
    let what = format!("oci://{reference}");
    ensure!(layer.media_type == WASM_LAYER_MEDIA_TYPE, "{what}: its layer is {}, not {WASM_LAYER_MEDIA_TYPE}", layer.media_type);
    ensure!(
        usize::try_from(layer.size).is_ok_and(|size| size <= MAX_DOWNLOAD_BYTES),
        "{what} declares a component of {} bytes, larger than {} MiB, the most toolhost downloads (MAX_DOWNLOAD_BYTES); \
         it was not installed",
        layer.size,
        MAX_DOWNLOAD_BYTES >> 20
    );
    let mut stream = client.pull_blob_stream(&parsed, layer).await.with_context(pulling)?;
    let mut bytes = Vec::new();
    while let Some(chunk) = stream.next().await {
        append_capped(&mut bytes, &chunk.with_context(pulling)?, &what)?;
    }
    let actual = format!("sha256:{}", sha256_hex(&bytes));
    ensure!(layer.digest == actual, "{what}: the component's digest is {actual}, but its manifest says {}", layer.digest);
    Ok(bytes)
}

/// Whether `host` (with or without a port) is this machine.
fn is_loopback(host: &str) -> bool {
    let name = host.rsplit_once(':').filter(|(_, port)| port.parse::<u16>().is_ok()).map_or(host, |(name, _)| name);
    let name = name.trim_start_matches('[').trim_end_matches(']');
    name == "localhost" || name.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// The TLS library's cryptography (ring, which the sandbox's HTTP client
/// already builds), installed once for the process.
fn install_crypto() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_are_told_apart_and_plain_http_is_refused() {
        assert_eq!(Source::parse("oci://127.0.0.1:5000/tools/calc:0.1.0").unwrap(), Source::Oci("127.0.0.1:5000/tools/calc:0.1.0".into()));
        assert_eq!(Source::parse("https://example.com/c.wasm").unwrap(), Source::Https("https://example.com/c.wasm".into()));
        assert_eq!(Source::parse("dist/c.wasm").unwrap(), Source::File("dist/c.wasm".into()));
        assert_eq!(Source::parse("file:///tmp/c.wasm").unwrap(), Source::File("/tmp/c.wasm".into()));
        let error = Source::parse("http://example.com/c.wasm").unwrap_err().to_string();
        assert!(error.contains("only over https://"), "{error}");
    }

    #[test]
    fn only_this_machine_is_loopback() {
        for host in ["127.0.0.1:5000", "localhost:5000", "[::1]:5000", "127.0.0.1", "localhost"] {
            assert!(is_loopback(host), "{host}");
        }
        for host in ["ghcr.io", "10.0.0.1:5000", "localhost.example.com", "example.com:443"] {
            assert!(!is_loopback(host), "{host}");
        }
    }
}
