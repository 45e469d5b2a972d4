//! The web console's API (decisions.md, "Console, test events, event catalog"): sign-in
//! links, their one-time exchange for a session cookie, the session itself and signing out;
//! and the console's pages (`http/site.rs`). Served by the `console` function.

pub use crate::http::site::{Site, PAGE_PATHS};

use crate::app::{handler, Api, App, Call, Endpoint};
use crate::auth::session::{self, Kind, Token, SESSION_SECONDS};
use crate::auth::Scope;
use crate::domain::time::Timestamp;
use crate::error::ApiError;
use crate::http::doc::NO_QUERY;
use crate::http::schema::{self, request};
use crate::http::{ApiResponse, Body, Credential, Doc, Route};
use crate::store::console::ConsoleItem;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub const API: Api = Api {
    function: "console",
    endpoints: ENDPOINTS,
    parts: crate::context::Parts::NONE,
};

const ENDPOINTS: &[Endpoint] = &[
    Endpoint::new(
        Route::new(
            "POST",
            "/console-sessions",
            Scope::SettingsManage,
            Doc::new(
                "Make a single-use sign-in link to the web console, valid 10 minutes; the session it opens acts with the scopes of the calling key",
                NO_QUERY,
                None,
                201,
                Body::Single("ConsoleLink"),
            ),
        ),
        handler!(create_link),
    ),
    Endpoint::new(
        Route::public(
            "POST",
            "/console-sessions/exchange",
            Doc::new(
                "Exchange a sign-in link's token, once, for a console session: sets the session cookie (HttpOnly, SameSite=Strict) and answers the CSRF token its state-changing calls carry",
                NO_QUERY,
                Some(request::<ConsoleSignInRequired>),
                201,
                Body::Single("ConsoleSession"),
            ),
        ),
        handler!(exchange),
    ),
    Endpoint::new(
        Route::new(
            "GET",
            "/console-sessions/current",
            Scope::SettingsManage,
            Doc::new(
                "The console session of the calling cookie, with its CSRF token",
                NO_QUERY,
                None,
                200,
                Body::Single("ConsoleSession"),
            ),
        ),
        handler!(current),
    ),
    Endpoint::new(
        Route::new(
            "DELETE",
            "/console-sessions/current",
            Scope::SettingsManage,
            Doc::delete("Sign out: end the console session of the calling cookie and clear it"),
        ),
        handler!(sign_out),
    ),
];

/// The answer types of this module, for the OpenAPI document.
pub(crate) const ANSWERS: &[crate::http::doc::RequestSchema] =
    &[schema::answer::<LinkView>, schema::answer::<SessionView>];

/// A sign-in link.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "ConsoleLink")]
struct LinkView<'a> {
    /// Opens the console and signs in, once; the token is in the fragment, which browsers
    /// never send to a server (null in an idempotent replay of this answer: no credential
    /// is kept)
    #[schemars(schema_with = "link_url")]
    url: Credential<'a>,
    expires_at: Timestamp,
}

fn link_url(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": ["string", "null"], "format": "uri", "example": "https://api.example.com/console#token=csl_abc123xyz789k3j9x0qa_…"})
}

/// A console session.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "ConsoleSession")]
struct SessionView<'a> {
    /// The organization the session acts in
    org: &'a str,
    #[schemars(schema_with = "scope_list")]
    scopes: Vec<&'static str>,
    /// Sent as `X-CSRF-Token` with every call of the session that is not a read (null in
    /// an idempotent replay of this answer: no credential is kept)
    #[schemars(with = "Option<String>")]
    csrf_token: Credential<'a>,
    expires_at: Timestamp,
}

fn scope_list(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": "array", "items": {"$ref": "#/components/schemas/Scope"}})
}

/// The body of POST /console-sessions/exchange.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "ConsoleSignIn")]
struct SignIn {
    /// The `token` of the link's fragment
    #[schemars(schema_with = "link_token")]
    token: Option<String>,
}

fn link_token(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    use crate::domain::credential_tags::{RANDOM_LEN, TAG_LEN};
    schema::matching(&format!(
        "csl_[a-z0-9]{{20}}_[A-Za-z0-9]{{{}}}",
        RANDOM_LEN + TAG_LEN
    ))
}

schema::requiring!(
    /// A sign-in link's token, to exchange for a session.
    ConsoleSignInRequired = SignIn, ["token"]
);

/// The console's address (`/console`, which API Gateway routes; not `/console/`) as the caller reached this API: its scheme (plain HTTP only in
/// local mode), `Host`, and any stage segment before `/v1`.
fn console_url(app: &App, call: &Call) -> String {
    let scheme = if app.config.local_mode {
        "http"
    } else {
        "https"
    };
    let host = call.request.host.as_deref().unwrap_or("localhost");
    let stage = call.request.path.split("/v1/").next().unwrap_or_default();
    format!("{scheme}://{host}{stage}/console")
}

/// POST /console-sessions.
async fn create_link(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let p = &call.principal;
    let (token, expires_at) = session::new_link(&app.store, &p.org, &p.key_id, &p.scopes).await?;
    let url = format!("{}#token={token}", console_url(app, call));
    Ok(ApiResponse::shown(
        201,
        &LinkView {
            url: Credential(&url),
            expires_at,
        },
    ))
}

/// POST /console-sessions/exchange: takes the link (one conditional delete, so it signs in
/// once) and stores a new session; a cookie the browser already had is never reused.
async fn exchange(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let body: SignIn = call.body(app)?;
    let text = body
        .token
        .ok_or_else(|| ApiError::bad_request("field 'token' is required"))?;
    let link = Token::parse(Kind::Link, &text).ok_or_else(|| {
        ApiError::bad_request("field 'token' is not a console sign-in link's token")
    })?;
    let now = Timestamp::now();
    let refused = || {
        ApiError::new(
            401,
            "this sign-in link is invalid, used or expired: make a new one",
        )
    };
    // a token this deployment never issued is refused before anything is read
    if !link.tagged(Kind::Link, app.store.credential_tags()) {
        return Err(refused());
    }
    // The session acts as the key the token names: a link of a key revoked since, or of an
    // organization whose API access is off now, opens nothing, and is refused before it is
    // taken (a refused exchange changes nothing).
    let (org, key) = app.store.get_org_and_key(link.org(), link.key_id()).await?;
    let scopes: Vec<&'static str> = match (org, key) {
        (Some(org), Some(key)) if org.api_enabled && !key.revoked => key
            .scopes
            .iter()
            .filter_map(|s| Scope::parse(s))
            .map(Scope::as_str)
            .collect(),
        _ => return Err(refused()),
    };
    let Some(taken) = app
        .store
        .take_console_link(link.org(), &link.id, &link.secret_hash(), now)
        .await?
    else {
        return Err(refused());
    };
    let (token, cookie) =
        Token::generate(Kind::Session, &taken.key_id, app.store.credential_tags());
    let expires_at = Timestamp::from_millis(now.millis() + SESSION_SECONDS * 1000);
    let csrf = session::new_csrf();
    let item = ConsoleItem::new(
        link.org(),
        &token.id,
        &taken.key_id,
        token.secret_hash(),
        taken.scopes.clone(),
        expires_at,
        Some(csrf.clone()),
    );
    app.store.put_console_item(&item).await?;
    let view = SessionView {
        org: link.org(),
        scopes,
        csrf_token: Credential(&csrf),
        expires_at,
    };
    let secure = !app.config.local_mode;
    Ok(ApiResponse::shown(201, &view)
        .with_header(
            "set-cookie",
            session::set_cookie(&cookie, SESSION_SECONDS, secure),
        )
        .with_header("cache-control", "no-store"))
}

/// The calling console session; 400 for a call made with an API key.
fn session_of(call: &Call) -> Result<&session::Session, ApiError> {
    call.principal.session.as_ref().ok_or_else(|| {
        ApiError::bad_request("this route is the console's: call it with the console session's cookie, not an API key")
    })
}

/// GET /console-sessions/current.
async fn current(_app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let s = session_of(call)?;
    let view = SessionView {
        org: call.org(),
        scopes: call.principal.scopes.iter().map(|s| s.as_str()).collect(),
        csrf_token: Credential(&s.csrf),
        expires_at: s.expires_at,
    };
    Ok(ApiResponse::shown(200, &view).with_header("cache-control", "no-store"))
}

/// DELETE /console-sessions/current: the session's item goes, so its cookie no longer
/// authenticates anywhere; the cookie is cleared too.
async fn sign_out(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let s = session_of(call)?;
    app.store.delete_console_session(call.org(), &s.id).await?;
    let secure = !app.config.local_mode;
    Ok(
        ApiResponse::single(200, crate::http::render::deleted("current"))
            .with_header("set-cookie", session::set_cookie("", 0, secure)),
    )
}
