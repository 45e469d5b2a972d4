//! What every function runs on, built once per cold start: the configuration, the store,
//! the list engine, the delivery queue and the usage meter. Workers and use cases take a
//! `Context`; the HTTP pipeline (`app`) adds authentication, rate limits and S3 on top of it.
//! Each entry point names the [`Parts`] it uses beyond the store, so a binary links only the
//! engine and clients it builds.

use crate::config::Config;
use crate::search::engine::{Embedded, FlatLists, ListEngine};
use crate::store::Store;
use crate::usage::Meter;
use crate::webhooks::queue::DeliveryQueue;

pub struct Context {
    pub config: Config,
    pub store: Store,
    /// What lists return (`search/engine.rs`): the embedded engine over this process's warm
    /// snapshots of the store's index, or only its flat lists.
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
        let lists = Box::new(Embedded::new(store.clone(), config.snapshots));
        Self::of(config, store, lists, None)
    }

    /// The context of these parts, with its usage meter.
    fn of(
        config: Config,
        store: Store,
        lists: Box<dyn ListEngine>,
        queue: Option<DeliveryQueue>,
    ) -> Self {
        let meter = Meter::new(config.usage_flush, config.metrics.clone());
        Self {
            config,
            store,
            lists,
            queue,
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

    /// The context of `config`, with clients built from the shared AWS configuration and
    /// the list engine `parts` names (none: the flat lists only; a product list answers a
    /// 500 it never reaches).
    pub fn from_sdk(config: Config, shared: &aws_config::SdkConfig, parts: Parts) -> Self {
        let store = config.store(Store::client_from_config(shared));
        let queue = DeliveryQueue::new(aws_sdk_sqs::Client::new(shared), &config.webhooks);
        let lists = match parts.lists {
            Some(build) => build(&config, &store, shared),
            None => Box::new(FlatLists::new(store.clone(), config.snapshots)),
        };
        Self::of(config, store, lists, queue)
    }

    /// Builds the context from the environment and keeps it for the process's lifetime
    /// (the workers' entry point).
    pub async fn leaked(parts: Parts) -> &'static Context {
        let config = Self::config_from_env();
        let shared = aws_config::load_from_env().await;
        Box::leak(Box::new(Self::from_sdk(config, &shared, parts)))
    }
}

/// Builds a function's list engine from its configuration, store and AWS configuration.
pub type ListsFrom = fn(&Config, &Store, &aws_config::SdkConfig) -> Box<dyn ListEngine>;

/// Builds an S3 client from the AWS configuration.
pub type S3From = fn(&aws_config::SdkConfig) -> aws_sdk_s3::Client;

/// What a function builds beyond the store, the delivery queue and the meter, named once
/// by its entry point (an `Api`'s `parts`, a worker's `main`). They are constructors, not
/// flags: a binary links the list engine or the S3 client only when its entry point names
/// the function that builds them, so a function that never lists carries neither.
#[derive(Clone, Copy)]
pub struct Parts {
    /// The list engine; `None` for functions that serve no product, variant or SKU list
    /// and check no referrer (they get the flat lists only).
    pub lists: Option<ListsFrom>,
    /// The HTTP pipeline's S3 client (imports' upload URLs, exports' download URLs), built
    /// when an import bucket is configured.
    pub s3: Option<S3From>,
}

impl Parts {
    /// The store, the queue and the meter only.
    pub const NONE: Self = Self {
        lists: None,
        s3: None,
    };

    /// With the embedded list engine, its checkpoints in S3 when a bucket is configured.
    pub const LISTS: Self = Self {
        lists: Some(embedded_lists),
        s3: None,
    };

    /// These parts and the pipeline's S3 client.
    pub const fn with_s3(self) -> Self {
        Self {
            s3: Some(crate::imports::s3_client),
            ..self
        }
    }
}

/// The embedded engine over this process's snapshots, starting cold lists from the
/// deployment's checkpoints when it keeps them (`CATALOG_CHECKPOINT_BUCKET`).
fn embedded_lists(
    config: &Config,
    store: &Store,
    shared: &aws_config::SdkConfig,
) -> Box<dyn ListEngine> {
    let Some(bucket) = config.imports.checkpoint_bucket.clone() else {
        return Box::new(Embedded::new(store.clone(), config.snapshots));
    };
    let checkpoints = std::sync::Arc::new(crate::imports::checkpoints::S3Checkpoints {
        client: crate::imports::s3_client(shared),
        bucket,
    });
    Box::new(Embedded::with_checkpoints(
        store.clone(),
        config.snapshots,
        checkpoints,
        checkpoint_key(config),
    ))
}

/// What the deployment seals its list checkpoints with (derived from its cursor secret).
pub fn checkpoint_key(config: &Config) -> crate::search::snapshot::CheckpointKey {
    crate::search::snapshot::CheckpointKey::new(
        config.cursor_key.derive("catalog list checkpoints"),
    )
}
