//! DynamoDB single-table adapter. One `Store` per Lambda, built once at cold start; each
//! submodule adds the operations of one capability (organizations and keys, attribute
//! definitions, the product tree).

pub(crate) mod attributes;
pub(crate) mod changes;
pub mod console;
pub(crate) mod counters;
pub(crate) mod errors;
pub(crate) mod exports;
pub(crate) mod flat_lists;
pub mod history;
pub mod idempotency;
pub(crate) mod imports;
pub mod items;
mod keys;
pub(crate) mod limits;
pub(crate) mod lists;
pub(crate) mod metaobjects;
pub mod metrics;
mod ops;
pub(crate) mod orgs;
pub(crate) mod parallel;
pub(crate) mod products;
pub(crate) mod quotas;
pub(crate) mod rate;
pub(crate) mod resources;
pub(crate) mod settings;
pub(crate) mod slots;
pub mod table;
pub(crate) mod usage;
pub mod webhooks;
pub mod writes;

use crate::domain::credential_tags::CredentialTags;
use aws_sdk_dynamodb::Client;

pub use errors::StoreError;
/// Keys for the end-to-end tests and the benchmark, which read the table directly. The
/// library's own modules never reach the store's keys (`keys` and `ops` are private to the
/// store; `scripts/check-layers.py` refuses this module to them).
#[doc(hidden)]
pub mod raw {
    pub use super::keys::{
        change_pks, history_pk, product_pk, shard_of, HISTORY_HEAD_SK, PRODUCT_SK,
    };
}
/// The change index's shard count, a deployment setting (`CATALOG_INDEX_SHARDS`).
pub use keys::index_shards;

/// The table handle every store capability works through.
#[derive(Clone, Debug)]
pub struct Store {
    pub(crate) client: Client,
    pub(crate) table: String,
    /// What the credentials kept in this table are tagged with (`domain/credential_tags.rs`).
    credential_tags: CredentialTags,
}

impl Store {
    /// The table `table`, its credentials tagged as a local stack's (from the table name).
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        let table = table.into();
        Self {
            client,
            credential_tags: CredentialTags::for_table(&table),
            table,
        }
    }

    /// The same table with credentials tagged with `tags` (a deployment's).
    pub fn with_credential_tags(mut self, tags: CredentialTags) -> Self {
        self.credential_tags = tags;
        self
    }

    pub fn credential_tags(&self) -> &CredentialTags {
        &self.credential_tags
    }

    /// Builds a DynamoDB client from the standard AWS configuration chain (region,
    /// credentials, `AWS_ENDPOINT_URL[_DYNAMODB]`), with the request counter attached.
    pub async fn client_from_env() -> Client {
        Self::client_from_config(&aws_config::load_from_env().await)
    }

    /// A DynamoDB client from an already loaded AWS configuration, with the request counter.
    pub fn client_from_config(shared: &aws_config::SdkConfig) -> Client {
        let config = aws_sdk_dynamodb::config::Builder::from(shared)
            .interceptor(metrics::RequestCounter)
            .build();
        Client::from_conf(config)
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    pub fn table(&self) -> &str {
        &self.table
    }
}
