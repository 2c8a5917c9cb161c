//! TLS in front of the fake: the cluster's API as a client that trusts only the cluster's CA sees it
//! (the runner's installer does). The certificate and key are the caller's (a test CA's server certificate).

use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// Serves TLS with `cert_pem`/`key_pem` on 127.0.0.1, passing each connection through to `backend`
/// (`http://…`, e.g. [`crate::KubeFake::url`]); the `https://` URL and the task (abort it to stop).
pub async fn tls_front(
    backend: &str,
    cert_pem: &[u8],
    key_pem: &[u8],
) -> Result<(String, tokio::task::JoinHandle<()>), String> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<_, _>>()
        .map_err(|e| format!("server certificate: {e}"))?;
    let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| format!("server key: {e}"))?;
    let config =
        rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::aws_lc_rs::default_provider()))
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .map_err(|e| e.to_string())?;
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| e.to_string())?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let backend = backend.trim_start_matches("http://").to_owned();
    let front = tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let (acceptor, backend) = (acceptor.clone(), backend.clone());
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let Ok(mut up) = tokio::net::TcpStream::connect(&backend).await else {
                    return;
                };
                let _ = tokio::io::copy_bidirectional(&mut tls, &mut up).await;
            });
        }
    });
    Ok((format!("https://{addr}"), front))
}
