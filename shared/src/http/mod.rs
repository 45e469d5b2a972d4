//! HTTP plumbing shared by every function: decoding API Gateway requests, matching routes,
//! reading query parameters and JSON bodies, and writing JSON responses.

pub mod body;
pub mod cursor;
pub mod doc;
pub mod etag;
pub mod event;
pub mod idempotency;
pub mod query;
pub mod render;
pub mod request;
pub mod response;
pub mod routes;

pub use body::JsonBody;
pub use doc::{Body, Doc};
pub use query::Query;
pub use request::ApiRequest;
pub use response::{ApiResponse, Paging};
pub use routes::{Route, RouteMatch};
