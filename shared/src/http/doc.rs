//! The OpenAPI description a route entry carries, so a route is declared once: its method,
//! path, scope, handler and this description sit in one entry, and `api/openapi/` renders
//! the document from the entries.

pub use super::query::{QueryDoc, NO_QUERY};

/// What a success response holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Body {
    /// `{"result": <schema>}`.
    Single(&'static str),
    /// `{"result": [<schema>], "pagination": ...}`.
    List(&'static str),
    /// The object itself, not wrapped in `result`.
    Bare(&'static str),
    /// `{"result": [...]}` without paging.
    Lines(&'static str),
    /// The OpenAPI document.
    Document,
}

/// A request body's schema: [`super::schema::request`] of the type the handler parses.
pub type RequestSchema = fn(&mut schemars::SchemaGenerator) -> schemars::Schema;

/// One operation's description.
#[derive(Debug, Clone, Copy)]
pub struct Doc {
    pub summary: &'static str,
    /// The query type its handler reads (names and schemas of its parameters).
    pub query: QueryDoc,
    /// The request body's schema, when the route takes one.
    pub request: Option<RequestSchema>,
    /// The success status.
    pub status: u16,
    pub body: Body,
    /// Whether `included` (sideloaded metaobjects) may come back.
    pub included: bool,
    /// Whether the route also answers 201 when it creates (upserts).
    pub creates: bool,
}

impl Doc {
    pub const fn new(
        summary: &'static str,
        query: QueryDoc,
        request: Option<RequestSchema>,
        status: u16,
        body: Body,
    ) -> Self {
        Self {
            summary,
            query,
            request,
            status,
            body,
            included: false,
            creates: false,
        }
    }

    /// A DELETE: no query, no body, `{"result": {"identifier", "deleted": true}}`.
    pub const fn delete(summary: &'static str) -> Self {
        Self::new(summary, NO_QUERY, None, 200, Body::Single("DeleteResult"))
    }

    /// May sideload metaobjects under `included`.
    pub const fn included(mut self) -> Self {
        self.included = true;
        self
    }

    /// An upsert: 201 when it created, the declared status otherwise.
    pub const fn creates(mut self) -> Self {
        self.creates = true;
        self
    }
}

/// The query of a paged list without filters.
pub const PAGE: QueryDoc = QueryDoc::of::<super::query::PageParams>();
