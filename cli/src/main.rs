//! `strato`: see `strato --help` and cli/README.md.

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    // One TLS provider for reqwest and the WebSocket client (the workspace also builds aws-lc-rs).
    let _ = rustls::crypto::ring::default_provider().install_default();
    std::process::ExitCode::from(strato_cli::main().await)
}
