//! Webhook topics (decisions.md): `<entity>.created|updated|deleted`, `<entity>.*` and `*`,
//! how a subscription's topics are checked, and which events they match.

use crate::domain::entity_types::EntityType;
use serde::{Deserialize, Serialize};

/// Most topics one subscription may list.
pub const MAX_TOPICS: usize = 50;

/// What happened to an entity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    Created,
    Updated,
    Deleted,
    /// A test event (`POST /webhooks/{id}/test`): never a topic, sent only on request.
    Test,
    /// An AWS destination's proof of ownership (`webhook.verification`, with its token):
    /// never a topic, sent when the subscription is made and on request.
    Verification,
}

impl Action {
    /// The actions of catalog events, the ones topics name.
    pub const ALL: [Action; 3] = [Self::Created, Self::Updated, Self::Deleted];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Created => "created",
            Self::Updated => "updated",
            Self::Deleted => "deleted",
            Self::Test => "test",
            Self::Verification => "verification",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|a| a.as_str() == s)
    }

    /// The action of a logged event's name (`product.updated`, `webhook.test`).
    pub fn of_event(event: &str) -> Option<Self> {
        match event.rsplit_once('.')? {
            (TEST_ENTITY_TYPE, "test") => Some(Self::Test),
            (TEST_ENTITY_TYPE, "verification") => Some(Self::Verification),
            (_, action) => Self::parse(action),
        }
    }
}

/// The entity type and identifier a test event names (`webhook.test`, the subscription).
pub const TEST_ENTITY_TYPE: &str = "webhook";

/// The event name of a change: `product.updated`.
pub fn event_name(entity_type: &str, action: Action) -> String {
    format!("{entity_type}.{}", action.as_str())
}

/// Checks one topic pattern; the error names what is wrong with it.
pub fn validate(topic: &str) -> Result<(), String> {
    if topic == "*" {
        return Ok(());
    }
    let Some((entity, action)) = topic.split_once('.') else {
        return Err(format!(
            "topic '{topic}' must be '<entity>.<action>', '<entity>.*' or '*'"
        ));
    };
    if EntityType::parse(entity).is_none() {
        return Err(format!(
            "topic '{topic}' names unknown entity '{entity}'; entities are {}",
            EntityType::names()
        ));
    }
    if action != "*" && Action::parse(action).is_none() {
        return Err(format!(
            "topic '{topic}' names unknown action '{action}'; actions are created, updated, deleted or *"
        ));
    }
    Ok(())
}

/// Whether `pattern` (a valid topic) covers the event `entity_type.action`.
pub fn matches(pattern: &str, entity_type: &str, action: Action) -> bool {
    if pattern == "*" {
        return true;
    }
    match pattern.split_once('.') {
        Some((entity, a)) => entity == entity_type && (a == "*" || a == action.as_str()),
        None => false,
    }
}

/// Whether any of `topics` covers the event.
pub fn any_matches(topics: &[String], entity_type: &str, action: Action) -> bool {
    topics.iter().any(|t| matches(t, entity_type, action))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_and_invalid_topics() {
        for ok in [
            "*",
            "product.*",
            "sku.deleted",
            "asset.created",
            "category.updated",
        ] {
            assert_eq!(validate(ok), Ok(()), "{ok}");
        }
        assert_eq!(
            validate("product"),
            Err("topic 'product' must be '<entity>.<action>', '<entity>.*' or '*'".into())
        );
        assert!(validate("widget.created")
            .unwrap_err()
            .contains("unknown entity 'widget'"));
        assert!(validate("product.renamed")
            .unwrap_err()
            .contains("unknown action 'renamed'"));
        assert!(validate("*.created").is_err());
        assert!(validate("").is_err());
    }

    #[test]
    fn patterns_match_events() {
        assert!(matches("*", "sku", Action::Deleted));
        assert!(matches("product.*", "product", Action::Updated));
        assert!(!matches("product.*", "variant", Action::Updated));
        assert!(matches("variant.deleted", "variant", Action::Deleted));
        assert!(!matches("variant.deleted", "variant", Action::Created));
        let topics = vec!["sku.created".to_string(), "product.*".to_string()];
        assert!(any_matches(&topics, "sku", Action::Created));
        assert!(!any_matches(&topics, "sku", Action::Updated));
        assert_eq!(event_name("product", Action::Updated), "product.updated");
    }
}
