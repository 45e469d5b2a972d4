//! Webhook topics (decisions.md): `<entity>.created|updated|deleted`, `<entity>.*` and `*`,
//! how a subscription's topics are checked, and which events they match.

use crate::domain::entity_types::EntityType;
use crate::domain::named::named_enum;

/// Most topics one subscription may list.
pub const MAX_TOPICS: usize = 50;

named_enum! {
    /// What happened to an entity, or (`test`, `verification`) what a subscription was sent
    /// on request: [`Action::is_topic`] says which topics name.
    pub enum Action {
        Created => "created",
        Updated => "updated",
        Deleted => "deleted",
        Test => "test",
        Verification => "verification",
    }
}

impl Action {
    /// Whether topics name it: the actions of catalog events. A test event (`POST
    /// /webhooks/{id}/test`) and an AWS destination's proof of ownership
    /// (`webhook.verification`) are never topics, sent only when asked for.
    pub fn is_topic(self) -> bool {
        match self {
            Self::Created | Self::Updated | Self::Deleted => true,
            Self::Test | Self::Verification => false,
        }
    }

    /// The actions topics name, in declaration order.
    pub fn topics() -> impl Iterator<Item = Action> {
        Self::ALL.iter().copied().filter(|a| a.is_topic())
    }

    /// The names of the actions topics name, in declaration order.
    pub fn topic_names() -> Vec<&'static str> {
        Self::topics().map(Self::as_str).collect()
    }

    /// The topic action `s` names.
    pub fn parse_topic(s: &str) -> Option<Self> {
        Self::parse(s).filter(|a| a.is_topic())
    }

    /// The action of a logged event's name (`product.updated`, `webhook.test`).
    pub fn of_event(event: &str) -> Option<Self> {
        match event.rsplit_once('.')? {
            (TEST_ENTITY_TYPE, "test") => Some(Self::Test),
            (TEST_ENTITY_TYPE, "verification") => Some(Self::Verification),
            (_, action) => Self::parse_topic(action),
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
    if action != "*" && Action::parse_topic(action).is_none() {
        return Err(format!(
            "topic '{topic}' names unknown action '{action}'; actions are {} or *",
            Action::topic_names().join(", ")
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
