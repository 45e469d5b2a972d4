//! `GET /deletions` (scope `catalog:read`, served by the `products` function): the entities
//! of one type deleted after a time, oldest first, kept 30 days, so that a client that
//! missed a webhook learns of every deletion since its last sync.

use crate::app::{handler, App, Call, Endpoint};
use crate::auth::Scope;
use crate::domain::entity_types::EntityType;
use crate::domain::time::Timestamp;
use crate::error::ApiError;
use crate::http::cursor::{CursorPageParams, CursorPaging, Start};
use crate::http::doc::QueryDoc;
use crate::http::query::{query_values, QueryValue, UpdatedAfter};
use crate::http::render::to_json;
use crate::http::{ApiResponse, Body, Doc, Route};
use crate::search::flat::{PageQuery, Seek};
use crate::store::flat_lists::Followed;
use crate::store::writes::DELETION_RETENTION_SECS;
use schemars::JsonSchema;
use serde::Serialize;

/// A deleted entity, as the deletions list shows it.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "Deletion")]
struct DeletionView<'a> {
    #[schemars(schema_with = "entity_types")]
    entity_type: &'a str,
    identifier: &'a str,
    #[serde(rename = "deletedAt")]
    #[schemars(with = "Timestamp")]
    deleted_at: &'a str,
}

fn entity_types(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"enum": EntityType::NAMES})
}

/// The answer types of this module, for the OpenAPI document.
pub(crate) const ANSWERS: &[crate::http::doc::RequestSchema] =
    &[crate::http::schema::answer::<DeletionView>];

pub const ENDPOINT: Endpoint = Endpoint::new(
    Route::new(
        "GET",
        "/deletions",
        Scope::CatalogRead,
        Doc::new(
            "Entities of one type deleted after a time, oldest first (kept 30 days)",
            QueryDoc::of::<DeletionParams>(),
            None,
            200,
            Body::List("Deletion"),
        ),
    ),
    handler!(list),
);

/// The query of `GET /deletions`.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct DeletionParams {
    entity_type: EntityTypeParam,
    /// Only deletions later than this; at most 30 days back.
    updated_after: Option<UpdatedAfter>,
    #[serde(flatten)]
    paging: CursorPageParams,
}

/// `entity_type`: the type whose deletions to list.
#[derive(Debug)]
struct EntityTypeParam(&'static str);

impl QueryValue for EntityTypeParam {
    fn parse(raw: &str) -> Result<Self, ApiError> {
        EntityType::parse(raw)
            .map(|t| Self(t.as_str()))
            .ok_or_else(|| {
                ApiError::bad_request(format!(
                    "query parameter 'entity_type': '{raw}' is not one of {}",
                    EntityType::names()
                ))
            })
    }

    fn schema() -> schemars::Schema {
        schemars::json_schema!({"type": "string", "enum": EntityType::NAMES, "description": "The type whose deletions to list."})
    }
}

query_values!(EntityTypeParam);

/// GET /deletions?entity_type=&updated_after=: the type's deletions index brought up to
/// date (one Query of what was deleted since the previous call), then the page and the
/// total from memory; a position holds all a deletion shows, so nothing more is read.
async fn list(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let params = call.query.typed::<DeletionParams>()?;
    let entity_type = params.entity_type.0;
    let horizon =
        Timestamp::from_millis(Timestamp::now().millis() - DELETION_RETENTION_SECS * 1000);
    let since = params.updated_after.map(|t| t.0);
    if since.is_some_and(|t| t < horizon) {
        return Err(ApiError::bad_request(
            "query parameter 'updated_after': deletions are kept 30 days and this is older; resync in full",
        ));
    }
    // Positions are `<deletedAt>#<identifier>`: everything of a time sorts below `<time>$`.
    let floor = since.map(|t| format!("{t}$"));
    let scope = format!(
        "deletions?entity_type={entity_type}&updated_after={}",
        call.query.get("updated_after").unwrap_or_default()
    );
    let paging = CursorPaging::open(&params.paging, &app.config.cursor_key, call.org(), scope)?;
    let list = Followed::Deletions {
        org: call.org(),
        entity_type,
    };
    app.lists.flat().refresh(&list).await?;
    let from = match &paging.start {
        Start::After(position) => Seek::After(position),
        Start::Page(_) => Seek::Offset(paging.offset()),
    };
    let page = app.lists.flat().page(
        &list,
        &PageQuery {
            floor: floor.as_deref(),
            from,
            limit: paging.limit as usize,
            descending: false,
            filter: None,
        },
    );
    let next = page.more.then(|| page.keys.last()).flatten();
    let result = page
        .keys
        .iter()
        .filter_map(|position| {
            let (deleted_at, identifier) = position.split_once('#')?;
            let deletion = DeletionView {
                entity_type,
                identifier,
                deleted_at,
            };
            Some((to_json(deletion), position.clone()))
        })
        .collect();
    paging.respond(result, page.total, next.map(String::as_str))
}
