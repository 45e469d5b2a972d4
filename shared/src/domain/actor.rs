//! Who made a change (decisions.md, "Change history"): an API key, a console session acting
//! as its key, or an import. Every entity write records its actor on the item, compactly
//! (`k:<key id>`, `c:<key id>`, `i:<import id>`), so that the table's stream carries it to
//! the history the change feed writes; history shows it as `by`.

use serde::Serialize;

/// The actor of a write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Actor {
    /// A call with an API key (`Authorization: Bearer`): the key's id.
    ApiKey(String),
    /// A call of a console session: the id of the key the session acts as.
    Console(String),
    /// A line of an import: the import's id.
    Import(String),
}

/// An actor as history shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
#[schemars(rename = "HistoryActor")]
pub enum ActorView {
    /// A call with an API key.
    ApiKey { id: String },
    /// A call of a console session, acting as its key.
    Console {
        #[serde(rename = "keyId")]
        key_id: String,
    },
    /// A line of an import.
    Import { id: String },
}

impl Actor {
    /// The compact form an item keeps (a one-letter tag, `:` and the id); a write counts
    /// it into each item it stamps before its first request (`store/writes/origin.rs`).
    pub fn encode(&self) -> String {
        let (tag, id) = match self {
            Actor::ApiKey(id) => ('k', id),
            Actor::Console(id) => ('c', id),
            Actor::Import(id) => ('i', id),
        };
        format!("{tag}:{id}")
    }

    /// An encoded actor back (`None` for anything else).
    pub fn decode(s: &str) -> Option<Self> {
        let (tag, id) = s.split_once(':')?;
        let id = id.to_string();
        match tag {
            "k" => Some(Actor::ApiKey(id)),
            "c" => Some(Actor::Console(id)),
            "i" => Some(Actor::Import(id)),
            _ => None,
        }
    }

    /// How history shows it.
    pub fn view(&self) -> ActorView {
        match self.clone() {
            Actor::ApiKey(id) => ActorView::ApiKey { id },
            Actor::Console(key_id) => ActorView::Console { key_id },
            Actor::Import(id) => ActorView::Import { id },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn actors_round_trip_and_show_as_the_decisions_say() {
        let cases = [
            (
                Actor::ApiKey("abc123def456".into()),
                "k:abc123def456",
                json!({"type": "apiKey", "id": "abc123def456"}),
            ),
            (
                Actor::Console("abc123def456".into()),
                "c:abc123def456",
                json!({"type": "console", "keyId": "abc123def456"}),
            ),
            (
                Actor::Import("imp_01JABCDEFGHJKMNPQRSTVWXYZ0".into()),
                "i:imp_01JABCDEFGHJKMNPQRSTVWXYZ0",
                json!({"type": "import", "id": "imp_01JABCDEFGHJKMNPQRSTVWXYZ0"}),
            ),
        ];
        for (actor, encoded, shown) in cases {
            assert_eq!(actor.encode(), encoded);
            assert_eq!(Actor::decode(encoded), Some(actor.clone()));
            assert_eq!(serde_json::to_value(actor.view()).unwrap(), shown);
        }
        for junk in ["", "k", "x:1", "abc"] {
            assert_eq!(Actor::decode(junk), None);
        }
    }
}
