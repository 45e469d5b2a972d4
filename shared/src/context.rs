//! What every function runs on, built once per cold start: the configuration, the store,
//! the list engine, the delivery queue and the usage meter. Workers and use cases take a
//! `Context`; the HTTP pipeline (`app`) adds authentication, rate limits and S3 on top of it.

use crate::config::Config;
use crate::search::engine::{Embedded, ListEngine};
use crate::store::Store;
use crate::usage::Meter;
use crate::webhooks::queue::DeliveryQueue;

pub struct Context {
    pub config: Config,
    pub store: Store,
    /// What lists return (`search/engine.rs`): the embedded engine over this process's warm
    /// snapshots of the store's index.
    pub lists: Box<dyn ListEngine>,
    /// The webhook delivery queue, when one is configured.
    pub queue: Option<DeliveryQueue>,
    /// What this process counted of each organization's usage, not yet in the table.
    pub meter: Meter,
}

impl Context {
    /// A context over `store` (its lists kept under the configuration's snapshot policy),
    /// with no queue.
    pub fn new(config: Config, store: Store) -> Self {
        let meter = Meter::new(config.usage_flush, config.metrics.clone());
        Self {
            lists: Box::new(Embedded::new(store.clone(), config.snapshots)),
            config,
            store,
            queue: None,
            meter,
        }
    }

    /// Reads the configuration from the environment and refuses to start on one that
    /// would serve forgeable cursors (Lambda reports the init error).
    pub fn config_from_env() -> Config {
        let config = Config::from_env();
        if let Some(why) = config.refusal() {
            tracing::error!(%why, "refusing to start");
            panic!("refusing to start: {why}");
        }
        config
    }

    /// The context of `config`, with clients built from the shared AWS configuration.
    pub fn from_sdk(config: Config, shared: &aws_config::SdkConfig) -> Self {
        let store = config.store(Store::client_from_config(shared));
        let queue = DeliveryQueue::new(aws_sdk_sqs::Client::new(shared), &config.webhooks);
        let checkpoints = config.imports.checkpoint_bucket.clone().map(|bucket| {
            std::sync::Arc::new(crate::imports::checkpoints::S3Checkpoints {
                client: crate::imports::s3_client(shared),
                bucket,
            })
        });
        let mut cx = Self::new(config, store);
        if let Some(checkpoints) = checkpoints {
            cx.lists = Box::new(Embedded::with_checkpoints(
                cx.store.clone(),
                cx.config.snapshots,
                checkpoints,
                checkpoint_key(&cx.config),
            ));
        }
        cx.queue = queue;
        cx
    }

    /// Builds the context from the environment and keeps it for the process's lifetime
    /// (the workers' entry point).
    pub async fn leaked() -> &'static Context {
        let config = Self::config_from_env();
        let shared = aws_config::load_from_env().await;
        Box::leak(Box::new(Self::from_sdk(config, &shared)))
    }
}

/// What the deployment seals its list checkpoints with (derived from its cursor secret).
pub fn checkpoint_key(config: &Config) -> crate::search::snapshot::CheckpointKey {
    crate::search::snapshot::CheckpointKey::new(
        config.cursor_key.derive("catalog list checkpoints"),
    )
}
