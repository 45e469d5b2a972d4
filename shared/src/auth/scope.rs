//! Key scopes of decisions.md.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Scope {
    #[serde(rename = "catalog:read")]
    CatalogRead,
    #[serde(rename = "catalog:write")]
    CatalogWrite,
    #[serde(rename = "settings:manage")]
    SettingsManage,
}

impl Scope {
    pub const ALL: [Scope; 3] = [Self::CatalogRead, Self::CatalogWrite, Self::SettingsManage];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::CatalogRead => "catalog:read",
            Self::CatalogWrite => "catalog:write",
            Self::SettingsManage => "settings:manage",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|x| x.as_str() == s)
    }
}
