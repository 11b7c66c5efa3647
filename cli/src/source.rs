//! Where `toolhost add` takes a component from: a file, an `https://` URL
//! whose SHA-256 the user gives, or an OCI registry (`oci://HOST/REPO:TAG`
//! or `oci://HOST/REPO@sha256:…`) holding it as a Wasm OCI artifact (one
//! `application/wasm` layer, the `application/vnd.wasm.config.v0+json`
//! config), fetched with the `oci-wasm` crate.
//!
//! Every byte is counted as it arrives, before it is held: a file that is
//! not a regular file (`/dev/zero`, a FIFO) is refused without reading, a
//! download or OCI layer is cut at [`MAX_DOWNLOAD_BYTES`] (a layer at the
//! size its manifest declares), an OCI manifest at [`MAX_MANIFEST_BYTES`],
//! and a redirect to plain `http://` is refused (but to a registry on
//! loopback).

use anyhow::{Context, bail, ensure};
use futures::StreamExt;
use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::manifest::OciImageManifest;
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference, RegistryOperation};
use oci_wasm::{WASM_LAYER_MEDIA_TYPE, WASM_MANIFEST_CONFIG_MEDIA_TYPE};
use std::path::PathBuf;
use toolhost_support::digest::sha256_hex;

/// The largest component `toolhost add` downloads: the largest the
/// registry reads from a plugin directory.
pub(super) const MAX_DOWNLOAD_BYTES: usize = toolhost::registry::MAX_COMPONENT_BYTES as usize;
/// The largest OCI manifest read, as containerd caps it: a Wasm artifact's
/// is well under a KiB.
pub(super) const MAX_MANIFEST_BYTES: usize = 4 << 20;
/// Redirects followed at most.
const MAX_REDIRECTS: usize = 10;

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
            Source::File(path) => toolhost_support::regular_file::read_regular_file(path, MAX_DOWNLOAD_BYTES as u64)
                .with_context(|| format!("reading {}; it was not installed", path.display()))?,
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
    let response = http_client(false)?.get(url).send().await.and_then(|r| r.error_for_status());
    let response = response.with_context(|| format!("downloading {url}"))?;
    read_capped(response, MAX_DOWNLOAD_BYTES, url, "MAX_DOWNLOAD_BYTES").await
}

/// An HTTP client that follows redirects only to `https://` (and, when
/// `loopback_http`, to plain HTTP on this machine): a component is code
/// the user will run, and a downgrade is refused rather than followed.
fn http_client(loopback_http: bool) -> anyhow::Result<reqwest::Client> {
    let policy = reqwest::redirect::Policy::custom(move |attempt| {
        let url = attempt.url();
        let allowed =
            url.scheme() == "https" || (loopback_http && url.scheme() == "http" && url.host_str().is_some_and(is_loopback));
        if !allowed {
            let refused = format!("redirected to {url}, which is not https://; toolhost downloads components only over https://");
            attempt.error(refused)
        } else if attempt.previous().len() >= MAX_REDIRECTS {
            attempt.error(format!("more than {MAX_REDIRECTS} redirects"))
        } else {
            attempt.follow()
        }
    });
    reqwest::Client::builder().redirect(policy).build().context("building the HTTP client")
}

/// The body of `response`, refused once it passes `cap` bytes (by its
/// declared length, before reading, else as its bytes arrive). `limit`
/// names the cap in the message.
async fn read_capped(mut response: reqwest::Response, cap: usize, what: &str, limit: &str) -> anyhow::Result<Vec<u8>> {
    let over =
        || anyhow::anyhow!("{what} is larger than {}, the most toolhost reads ({limit}); it was not installed", in_words(cap));
    if response.content_length().is_some_and(|length| length > cap as u64) {
        return Err(over());
    }
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await.with_context(|| format!("downloading {what}"))? {
        ensure!(bytes.len() + chunk.len() <= cap, over());
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

/// `bytes` as a size a person reads.
fn in_words(bytes: usize) -> String {
    if bytes >= 1 << 20 { format!("{} MiB", bytes >> 20) } else { format!("{bytes} bytes") }
}

/// Pull the component layer of the artifact at `reference`. Plain HTTP
/// only to a registry on loopback (a local test or mirror); HTTPS anywhere
/// else. Anonymous: the registry must allow pulls without credentials.
/// The manifest is read up to [`MAX_MANIFEST_BYTES`], and the layer as it
/// streams, so one larger than [`MAX_DOWNLOAD_BYTES`] is refused before it
/// is held: by the size its manifest declares, and its bytes are cut at
/// that size as they arrive.
async fn pull(reference: &str) -> anyhow::Result<Vec<u8>> {
    install_crypto();
    let parsed: Reference = reference.parse().with_context(|| format!("`oci://{reference}` is not an OCI reference"))?;
    let host = parsed.resolve_registry().to_owned();
    let loopback = is_loopback(&host);
    let protocol = if loopback { ClientProtocol::HttpsExcept(vec![host.clone()]) } else { ClientProtocol::Https };
    let client = Client::new(ClientConfig { protocol, ..ClientConfig::default() });
    let pulling = || format!("pulling oci://{reference}");
    let what = format!("oci://{reference}");
    let token = client.auth(&parsed, &RegistryAuth::Anonymous, RegistryOperation::Pull).await.with_context(pulling)?;
    let manifest = pull_manifest(&parsed, loopback, token.as_deref(), &what).await.with_context(pulling)?;
    ensure!(
        manifest.config.media_type == WASM_MANIFEST_CONFIG_MEDIA_TYPE,
        "{what}: its config is {}, not {WASM_MANIFEST_CONFIG_MEDIA_TYPE}: not a Wasm artifact",
        manifest.config.media_type
    );
    ensure!(manifest.layers.len() == 1, "{what} has {} layers; a Wasm artifact has one", manifest.layers.len());
    let layer = &manifest.layers[0];
    ensure!(layer.media_type == WASM_LAYER_MEDIA_TYPE, "{what}: its layer is {}, not {WASM_LAYER_MEDIA_TYPE}", layer.media_type);
    let declared = usize::try_from(layer.size).ok().filter(|size| *size <= MAX_DOWNLOAD_BYTES);
    let Some(declared) = declared else {
        bail!(
            "{what} declares a component of {} bytes, larger than {} MiB, the most toolhost downloads (MAX_DOWNLOAD_BYTES); \
             it was not installed",
            layer.size,
            MAX_DOWNLOAD_BYTES >> 20
        );
    };
    let mut stream = client.pull_blob_stream(&parsed, layer).await.with_context(pulling)?;
    let mut bytes = Vec::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.with_context(pulling)?;
        ensure!(
            bytes.len() + chunk.len() <= declared,
            "{what}: the registry sent more than the {declared} bytes its manifest declares for the component; it was not installed"
        );
        bytes.extend_from_slice(&chunk);
    }
    let actual = format!("sha256:{}", sha256_hex(&bytes));
    ensure!(layer.digest == actual, "{what}: the component's digest is {actual}, but its manifest says {}", layer.digest);
    Ok(bytes)
}

/// The image manifest of `reference`, read up to [`MAX_MANIFEST_BYTES`]
/// (the OCI client would read any length), checked against the digest the
/// reference names, if it names one.
async fn pull_manifest(
    reference: &Reference,
    loopback: bool,
    token: Option<&str>,
    what: &str,
) -> anyhow::Result<OciImageManifest> {
    let registry = reference.resolve_registry();
    let scheme = if loopback { "http" } else { "https" };
    let tag = reference.digest().or(reference.tag()).unwrap_or("latest");
    let url = format!("{scheme}://{registry}/v2/{}/manifests/{tag}", reference.repository());
    let mut request =
        http_client(loopback)?.get(&url).header(reqwest::header::ACCEPT, oci_client::manifest::OCI_IMAGE_MEDIA_TYPE);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.and_then(|r| r.error_for_status()).with_context(|| format!("fetching {url}"))?;
    let body = read_capped(response, MAX_MANIFEST_BYTES, &format!("the manifest of {what}"), "MAX_MANIFEST_BYTES").await?;
    if let Some(digest) = reference.digest() {
        let actual = format!("sha256:{}", sha256_hex(&body));
        ensure!(digest == actual, "the manifest's digest is {actual}, not the {digest} the reference names");
    }
    serde_json::from_slice(&body).with_context(|| format!("the manifest of {what} is not an OCI image manifest"))
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
        assert_eq!(
            Source::parse("oci://127.0.0.1:5000/tools/calc:0.1.0").unwrap(),
            Source::Oci("127.0.0.1:5000/tools/calc:0.1.0".into())
        );
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
