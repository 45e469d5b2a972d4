//! API-key authentication: parse the bearer key, find its organization, check the secret's
//! hash in constant time, check API access and scopes. Resolved keys are cached briefly in
//! the warm Lambda so most requests spend no DynamoDB request on authentication.

pub mod apikey;
pub(crate) mod cache;
pub(crate) mod rate;
pub(crate) mod scope;
pub mod session;

pub use apikey::{ApiKey, ParsedKey};
pub use cache::Authenticator;
pub use scope::Scope;

/// Who is calling: the organization every store access is scoped to, and what the key may do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    pub org: String,
    pub key_id: String,
    pub scopes: Vec<Scope>,
    /// The organization's own rate limit, when it has one (else the deployment's).
    pub limit: Option<crate::domain::rate::Policy>,
    /// The console session the call came with (its cookie), if any: the call then acts as
    /// the session's key.
    pub session: Option<session::Session>,
}

impl Principal {
    /// Who its writes are recorded as: its key, or the console session acting as its key.
    pub fn actor(&self) -> crate::domain::actor::Actor {
        use crate::domain::actor::Actor;
        let key = self.key_id.clone();
        match self.session {
            Some(_) => Actor::Console(key),
            None => Actor::ApiKey(key),
        }
    }

    /// The caller of a public route: no organization, no scope.
    pub fn anonymous() -> Self {
        Self {
            org: String::new(),
            key_id: String::new(),
            scopes: Vec::new(),
            limit: None,
            session: None,
        }
    }

    pub fn has(&self, scope: Scope) -> bool {
        self.scopes.contains(&scope)
    }
}
