//! HTTP plumbing shared by every function: decoding API Gateway requests, matching routes,
//! reading query parameters and JSON bodies, and writing JSON responses.

pub(crate) mod answer_size;
pub(crate) mod body;
pub mod credential;
pub mod cursor;
pub(crate) mod doc;
pub(crate) mod etag;
pub(crate) mod event;
pub mod idempotency;
pub(crate) mod query;
pub(crate) mod render;
pub(crate) mod request;
pub(crate) mod response;
pub mod routes;
pub(crate) mod schema;
pub mod site;

pub use body::JsonBody;
pub use credential::Credential;
pub use doc::{Body, Doc};
pub use query::Query;
pub use request::ApiRequest;
pub use response::{ApiResponse, Paging};
pub use routes::{Route, RouteMatch};
