//! Logging setup shared by every binary: JSON lines to stdout, which CloudWatch ingests.

/// Installs the global tracing subscriber once; `RUST_LOG` overrides the default `info` level.
pub fn init() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .json()
        .with_env_filter(filter)
        .with_target(false)
        .without_time()
        .with_current_span(false)
        .try_init();
}
