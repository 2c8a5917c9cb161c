//! `strato`: see `strato --help` and cli/README.md.

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    // One TLS provider for reqwest and the WebSocket client (the workspace also builds aws-lc-rs).
    let _ = rustls::crypto::ring::default_provider().install_default();
    // `strato logs … | head` ends quietly, as Unix tools do, instead of panicking on a closed stdout.
    #[cfg(unix)]
    // SAFETY: called before any other thread exists; restores the default action of one signal.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    std::process::ExitCode::from(strato_cli::main().await)
}
