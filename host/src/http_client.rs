//! The HTTP client the model client and the console's remote desk build
//! on: reqwest over rustls with the ring provider, configured here rather
//! than by whatever provider the process installed (a library makes no
//! process-wide choice). It trusts the system's roots (`SSL_CERT_FILE`
//! and `SSL_CERT_DIR` are honoured, so a company's own CA works) and the
//! webpki roots (so a container without a CA bundle works too).

use std::sync::{Arc, OnceLock};

/// A client builder with toolhost's TLS.
pub(crate) fn builder() -> reqwest::ClientBuilder {
    static TLS: OnceLock<rustls::ClientConfig> = OnceLock::new();
    reqwest::Client::builder().tls_backend_preconfigured(TLS.get_or_init(tls).clone())
}

fn tls() -> rustls::ClientConfig {
    let mut roots = rustls::RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() };
    let system = rustls_native_certs::load_native_certs();
    let (_, ignored) = roots.add_parsable_certificates(system.certs);
    if ignored > 0 || !system.errors.is_empty() {
        tracing::debug!("{ignored} system CA certificates were unreadable; errors: {:?}", system.errors);
    }
    rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .expect("ring supports the default TLS versions")
        .with_root_certificates(roots)
        .with_no_client_auth()
}
