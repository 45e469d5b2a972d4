//! The deletions feed (`GET /deletions`): every deleted entity of one organization and type,
//! in deletion order, kept 30 days (`writes::deletion_record`, written in the deleting
//! transaction). Its partitions sit outside every index, so list snapshots never read them.

use super::keys::{deletions_pk, SK};
use super::{Store, StoreError};
use aws_sdk_dynamodb::types::{AttributeValue, Select};
use serde::Deserialize;

/// One remembered deletion.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Deletion {
    /// `<deletedAt>#<identifier>`: the feed's order, and a cursor's position.
    #[serde(rename = "SK")]
    pub position: String,
    #[serde(rename = "entityType")]
    pub entity_type: String,
    pub identifier: String,
    #[serde(rename = "deletedAt")]
    pub deleted_at: String,
}

impl Store {
    fn deletions_query(
        &self,
        org: &str,
        entity_type: &str,
        after: &str,
    ) -> aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder {
        self.client
            .query()
            .table_name(&self.table)
            .consistent_read(true)
            .key_condition_expression("PK = :pk AND #sk > :after")
            .expression_attribute_names("#sk", SK)
            .expression_attribute_values(":pk", AttributeValue::S(deletions_pk(org, entity_type)))
            .expression_attribute_values(":after", AttributeValue::S(after.to_string()))
    }

    /// The first `skip + take` deletions after position `after` (exclusive), oldest first,
    /// less the first `skip`; and whether more follow. Reads `skip + take + 1` items.
    pub async fn deletions_after(
        &self,
        org: &str,
        entity_type: &str,
        after: &str,
        skip: usize,
        take: usize,
    ) -> Result<(Vec<Deletion>, bool), StoreError> {
        let want = skip + take + 1;
        let mut stream = self
            .deletions_query(org, entity_type, after)
            .limit(want.min(1000) as i32)
            .into_paginator()
            .items()
            .send();
        let mut items = Vec::new();
        while items.len() < want {
            match stream.next().await {
                Some(item) => items.push(item.map_err(|e| StoreError::from_sdk("Query", e))?),
                None => break,
            }
        }
        let more = items.len() > skip + take;
        let page = items
            .into_iter()
            .skip(skip)
            .take(take)
            .map(|i| serde_dynamo::from_item(i).map_err(|e| StoreError::serde("deletion", e)))
            .collect::<Result<_, _>>()?;
        Ok((page, more))
    }

    /// How many deletions sort after `after`: a COUNT Query (one request per 1 MB read).
    pub async fn count_deletions_after(
        &self,
        org: &str,
        entity_type: &str,
        after: &str,
    ) -> Result<usize, StoreError> {
        let pages = self
            .deletions_query(org, entity_type, after)
            .select(Select::Count)
            .into_paginator()
            .send()
            .collect::<Result<Vec<_>, _>>()
            .await
            .map_err(|e| StoreError::from_sdk("Query", e))?;
        Ok(pages.iter().map(|p| p.count() as usize).sum())
    }
}
