//! Logging setup shared by every binary: JSON lines to stdout, which CloudWatch ingests.

/// Installs the global tracing subscriber once, at `RUST_LOG` if set, else at the function's
/// application log level (`AWS_LAMBDA_LOG_LEVEL`, which Lambda sets from the template's
/// `LoggingConfig.ApplicationLogLevel`; its `FATAL` is `error`), else at `info`.
pub fn init() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .ok()
        .or_else(|| {
            let level = std::env::var("AWS_LAMBDA_LOG_LEVEL")
                .ok()?
                .to_ascii_lowercase();
            let level = if level == "fatal" {
                "error".into()
            } else {
                level
            };
            tracing_subscriber::EnvFilter::try_new(level).ok()
        })
        .unwrap_or_else(|| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .json()
        .with_env_filter(filter)
        .with_target(false)
        .without_time()
        .with_current_span(false)
        .try_init();
}
