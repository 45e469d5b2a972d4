//! The table's definition, held once in code: DynamoDB Local and the tests create the table
//! from it, and a test compares it with the table declared in `infra/template.yaml`.

use super::keys::{GSI1PK, GSI2SK, INDEX_BY_CHANGE, PK, SK, TTL};
use super::{Store, StoreError};
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, GlobalSecondaryIndex, KeySchemaElement, KeyType, Projection,
    ProjectionType, ScalarAttributeType, StreamSpecification, StreamViewType, TableStatus,
    TimeToLiveSpecification,
};
use std::time::{Duration, Instant};

/// One global secondary index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexDef {
    pub name: &'static str,
    pub hash: &'static str,
    pub range: &'static str,
    /// `None` projects keys only; `Some(list)` projects those attributes too.
    pub include: Option<&'static [&'static str]>,
}

/// What `byChange` carries: everything lists sort and filter on (values, name, family), the
/// attribute keys in use, the version and the tombstone flag, so warm list snapshots and the
/// attribute-use check never read whole items.
pub const CHANGE_PROJECTION: &[&str] = &[
    "kind", "id", "pid", "vid", "su", "tu", "ak", "ver", "name", "familyId", "vals", "del",
];

/// The whole table, as deployed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableDef {
    pub hash: &'static str,
    pub range: &'static str,
    pub attributes: &'static [&'static str],
    pub indexes: &'static [IndexDef],
    pub stream_view: &'static str,
    pub ttl_attribute: &'static str,
}

pub const TABLE: TableDef = TableDef {
    hash: PK,
    range: SK,
    attributes: &[PK, SK, GSI1PK, GSI2SK],
    indexes: &[IndexDef {
        name: INDEX_BY_CHANGE,
        hash: GSI1PK,
        range: GSI2SK,
        include: Some(CHANGE_PROJECTION),
    }],
    stream_view: "NEW_AND_OLD_IMAGES",
    ttl_attribute: TTL,
};

impl TableDef {
    /// The CloudFormation properties that define the table's shape, as YAML lines indented
    /// by `indent` spaces. `infra/template.yaml` holds exactly these lines between the
    /// `# BEGIN table-shape` and `# END table-shape` markers.
    pub fn cloudformation_yaml(&self, indent: usize) -> String {
        let pad = " ".repeat(indent);
        let mut out = Vec::new();
        out.push("BillingMode: PAY_PER_REQUEST".to_string());
        out.push("AttributeDefinitions:".to_string());
        for a in self.attributes {
            out.push(format!("  - AttributeName: {a}"));
            out.push("    AttributeType: S".to_string());
        }
        out.push("KeySchema:".to_string());
        out.push(format!("  - AttributeName: {}", self.hash));
        out.push("    KeyType: HASH".to_string());
        out.push(format!("  - AttributeName: {}", self.range));
        out.push("    KeyType: RANGE".to_string());
        out.push("GlobalSecondaryIndexes:".to_string());
        for ix in self.indexes {
            out.push(format!("  - IndexName: {}", ix.name));
            out.push("    KeySchema:".to_string());
            out.push(format!("      - AttributeName: {}", ix.hash));
            out.push("        KeyType: HASH".to_string());
            out.push(format!("      - AttributeName: {}", ix.range));
            out.push("        KeyType: RANGE".to_string());
            out.push("    Projection:".to_string());
            match ix.include {
                None => out.push("      ProjectionType: KEYS_ONLY".to_string()),
                Some(attrs) => {
                    out.push("      ProjectionType: INCLUDE".to_string());
                    out.push("      NonKeyAttributes:".to_string());
                    for a in attrs {
                        out.push(format!("        - {a}"));
                    }
                }
            }
        }
        out.push("StreamSpecification:".to_string());
        out.push(format!("  StreamViewType: {}", self.stream_view));
        out.push("TimeToLiveSpecification:".to_string());
        out.push(format!("  AttributeName: {}", self.ttl_attribute));
        out.push("  Enabled: true".to_string());
        out.iter()
            .map(|l| format!("{pad}{l}\n"))
            .collect::<String>()
    }
}

fn key(name: &str, kind: KeyType) -> KeySchemaElement {
    KeySchemaElement::builder()
        .attribute_name(name)
        .key_type(kind)
        .build()
        .expect("key schema element has all fields")
}

impl Store {
    /// Creates the table from `TABLE` unless it exists, then waits until it is active.
    /// Returns whether it was created.
    pub async fn ensure_table(&self) -> Result<bool, StoreError> {
        let exists = match self
            .client
            .describe_table()
            .table_name(&self.table)
            .send()
            .await
        {
            Ok(_) => true,
            Err(e) => {
                let is_missing = e
                    .as_service_error()
                    .is_some_and(|s| s.is_resource_not_found_exception());
                if !is_missing {
                    return Err(StoreError::from_sdk("DescribeTable", e));
                }
                false
            }
        };
        if exists {
            return Ok(false);
        }
        let def = &TABLE;
        let mut req = self
            .client
            .create_table()
            .table_name(&self.table)
            .billing_mode(BillingMode::PayPerRequest)
            .key_schema(key(def.hash, KeyType::Hash))
            .key_schema(key(def.range, KeyType::Range))
            .stream_specification(
                StreamSpecification::builder()
                    .stream_enabled(true)
                    .stream_view_type(StreamViewType::from(def.stream_view))
                    .build()
                    .expect("stream spec has all fields"),
            );
        for a in def.attributes {
            req = req.attribute_definitions(
                AttributeDefinition::builder()
                    .attribute_name(*a)
                    .attribute_type(ScalarAttributeType::S)
                    .build()
                    .expect("attribute definition has all fields"),
            );
        }
        for ix in def.indexes {
            let projection = match ix.include {
                None => Projection::builder().projection_type(ProjectionType::KeysOnly),
                Some(attrs) => attrs.iter().fold(
                    Projection::builder().projection_type(ProjectionType::Include),
                    |p, a| p.non_key_attributes(*a),
                ),
            };
            req = req.global_secondary_indexes(
                GlobalSecondaryIndex::builder()
                    .index_name(ix.name)
                    .key_schema(key(ix.hash, KeyType::Hash))
                    .key_schema(key(ix.range, KeyType::Range))
                    .projection(projection.build())
                    .build()
                    .expect("index has all fields"),
            );
        }
        req.send()
            .await
            .map_err(|e| StoreError::from_sdk("CreateTable", e))?;
        self.wait_active(Duration::from_secs(30)).await?;
        self.client
            .update_time_to_live()
            .table_name(&self.table)
            .time_to_live_specification(
                TimeToLiveSpecification::builder()
                    .attribute_name(def.ttl_attribute)
                    .enabled(true)
                    .build()
                    .expect("ttl spec has all fields"),
            )
            .send()
            .await
            .map_err(|e| StoreError::from_sdk("UpdateTimeToLive", e))?;
        Ok(true)
    }

    async fn wait_active(&self, limit: Duration) -> Result<(), StoreError> {
        let deadline = Instant::now() + limit;
        loop {
            let out = self
                .client
                .describe_table()
                .table_name(&self.table)
                .send()
                .await
                .map_err(|e| StoreError::from_sdk("DescribeTable", e))?;
            let status = out.table().and_then(|t| t.table_status()).cloned();
            if status == Some(TableStatus::Active) {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(StoreError::Other(format!(
                    "table {} not active after {limit:?}",
                    self.table
                )));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_names_every_index_and_the_stream() {
        let yaml = TABLE.cloudformation_yaml(0);
        assert!(yaml.contains("IndexName: byChange"));
        assert_eq!(yaml.matches("IndexName:").count(), 1);
        assert!(yaml.contains("StreamViewType: NEW_AND_OLD_IMAGES"));
        assert!(yaml.lines().all(|l| !l.ends_with(' ')));
    }
}
