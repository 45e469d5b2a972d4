//! The request pipeline every function shares: decode, authenticate, route, check scope,
//! dispatch, and turn any error (or panic) into the JSON error envelope.

use crate::auth::{Authenticator, Principal};
use crate::config::Config;
use crate::context::Context;
use crate::domain::limits::MAX_CONCURRENT_BULK_WRITES;
use crate::error::ApiError;
use crate::http::{routes, ApiRequest, ApiResponse, Query, Route, RouteMatch};
use crate::store::idempotency::Guard;
use crate::store::writes::Origin;
use crate::store::{metrics, Store};
use crate::usage::Tally;
use futures_util::FutureExt;
use lambda_http::{Body, BoxFuture, Response};
use std::panic::AssertUnwindSafe;
use std::time::Instant;

/// Everything a handler needs, built once per cold start: the [`Context`] every function
/// runs on (reached through `Deref`), and what only the HTTP pipeline uses.
pub struct App {
    pub ctx: Context,
    pub auth: Authenticator,
    /// S3, for imports' upload URLs, when an import bucket is configured.
    pub s3: Option<aws_sdk_s3::Client>,
    /// SQS, to start exports on the import queue, when one is configured.
    pub sqs: Option<aws_sdk_sqs::Client>,
    /// This process's leases of the organizations' rate-limit buckets.
    pub limiter: crate::auth::rate::Limiter,
}

impl std::ops::Deref for App {
    type Target = Context;
    fn deref(&self) -> &Context {
        &self.ctx
    }
}

/// One authenticated, routed request.
pub struct Call {
    pub principal: Principal,
    pub route: RouteMatch,
    pub request: ApiRequest,
    /// The query string, checked against the route's parameters (its `Doc::query`, the
    /// names the OpenAPI document lists) before the handler runs: an unknown or repeated
    /// parameter is refused with nothing done, and the handler reads the ones it takes.
    pub query: Query,
    /// The claim of the request's `Idempotency-Key`, when it has one: every write the
    /// request makes is given it, and the first to commit moves the key's record to
    /// `written` in the same transaction (`store/idempotency.rs`).
    pub guard: Option<Guard>,
}

impl Call {
    pub fn org(&self) -> &str {
        &self.principal.org
    }

    /// The claim of the request's `Idempotency-Key`, for its writes.
    pub fn guard(&self) -> Option<&Guard> {
        self.guard.as_ref()
    }

    /// Who the request's entity writes are recorded as (`Principal::actor`), with the
    /// claim of its `Idempotency-Key`.
    pub fn origin(&self) -> Origin<'_> {
        Origin::new(self.principal.actor(), self.guard())
    }

    /// What the call's writes share: its organization, `If-Match` and origin.
    pub fn writer<'a>(&'a self, app: &'a App) -> crate::usecases::write_plan::Writer<'a> {
        crate::usecases::write_plan::Writer {
            cx: app,
            org: self.org(),
            if_match: self.request.if_match.as_deref(),
            origin: self.origin(),
        }
    }

    /// The request's body, a JSON object within the configured size, parsed as a `T`.
    pub fn body<T: serde::de::DeserializeOwned>(&self, app: &App) -> Result<T, ApiError> {
        crate::http::JsonBody::from_request(&self.request, app.config.max_body_bytes)?.parse()
    }
}

pub type Handler = fn(&'static App, Call) -> BoxFuture<'static, Result<ApiResponse, ApiError>>;

/// One route a function serves, declared once: method, path, scope and OpenAPI description
/// (the `Route`), and the handler that answers it.
#[derive(Clone, Copy)]
pub struct Endpoint {
    pub route: Route,
    pub handler: Handler,
}

impl Endpoint {
    pub const fn new(route: Route, handler: Handler) -> Self {
        Self { route, handler }
    }
}

impl AsRef<Route> for Endpoint {
    fn as_ref(&self) -> &Route {
        &self.route
    }
}

/// Turns `async fn name(app: &App, call: &Call) -> Result<ApiResponse, ApiError>` into a
/// [`Handler`], usable in a `const` endpoint table.
macro_rules! handler {
    ($f:path) => {{
        fn handle(
            app: &'static $crate::app::App,
            call: $crate::app::Call,
        ) -> ::lambda_http::BoxFuture<
            'static,
            Result<$crate::http::ApiResponse, $crate::error::ApiError>,
        > {
            Box::pin(async move { $f(app, &call).await })
        }
        handle as $crate::app::Handler
    }};
}
pub(crate) use handler;

/// Concatenates two tables in a `const` (a function serving two route groups).
pub const fn concat<T: Copy, const N: usize>(a: &[T], b: &[T]) -> [T; N] {
    assert!(a.len() + b.len() == N, "concat: wrong length");
    let mut out = [a[0]; N];
    let mut i = 0;
    while i < a.len() {
        out[i] = a[i];
        i += 1;
    }
    while i < N {
        out[i] = b[i - a.len()];
        i += 1;
    }
    out
}

/// What one function serves, and what it builds to serve it.
pub struct Api {
    pub function: &'static str,
    pub endpoints: &'static [Endpoint],
    /// The list engine and clients its handlers use (`context::Parts`).
    pub parts: crate::context::Parts,
}

impl Api {
    /// Its routes, in table order.
    pub fn routes(&self) -> impl Iterator<Item = &'static Route> {
        self.endpoints.iter().map(|e| &e.route)
    }
}

impl App {
    pub fn new(config: Config, store: Store) -> Self {
        Self::over(Context::new(config, store))
    }

    /// The HTTP app over a context.
    pub fn over(ctx: Context) -> Self {
        Self {
            auth: Authenticator::new(ctx.config.auth_cache_ttl),
            ctx,
            s3: None,
            sqs: None,
            limiter: Default::default(),
        }
    }

    /// Builds the app that serves `api` from the environment (with the parts `api` names)
    /// and keeps it for the process's lifetime.
    pub async fn from_env(api: &Api) -> &'static App {
        let config = Context::config_from_env();
        let shared = aws_config::load_from_env().await;
        let s3 = api
            .parts
            .s3
            .filter(|_| config.imports.bucket.is_some())
            .map(|build| build(&shared));
        let sqs = config
            .imports
            .queue_url
            .is_some()
            .then(|| aws_sdk_sqs::Client::new(&shared));
        let mut app = Self::over(Context::from_sdk(config, &shared, api.parts));
        app.s3 = s3;
        app.sqs = sqs;
        Box::leak(Box::new(app))
    }

    /// Runs a function that serves `api` until the Lambda runtime stops: lambda_http's
    /// runtime, with each event first made decodable (`http::event`), so that a request
    /// lambda_http could not decode is answered by the pipeline, never by API Gateway's 500.
    pub async fn run(&'static self, api: &'static Api) -> Result<(), lambda_http::Error> {
        self.run_serving(api, None).await
    }

    /// [`App::run`] for the `console` function: its pages (`site`) besides its API routes.
    pub async fn run_with_site(
        &'static self,
        api: &'static Api,
        site: &'static crate::http::site::Site,
    ) -> Result<(), lambda_http::Error> {
        self.run_serving(api, Some(site)).await
    }

    async fn run_serving(
        &'static self,
        api: &'static Api,
        site: Option<&'static crate::http::site::Site>,
    ) -> Result<(), lambda_http::Error> {
        use crate::http::site::Site;
        lambda_http::runtime(lambda_http::service_fn(
            move |req: lambda_http::Request| async move {
                match site.filter(|_| Site::page_of(req.uri().path()).is_some()) {
                    Some(site) => Ok(site.respond(req.method().as_str(), req.uri().path())),
                    None => self.serve(api, req).await,
                }
            },
        ))
        .layer(lambda_runtime::tower::layer::layer_fn(
            crate::http::event::Readable,
        ))
        .layer(lambda_runtime::layers::TracingLayer::new())
        .run()
        .await
    }

    /// The lambda_http entry point.
    pub async fn serve(
        &'static self,
        api: &'static Api,
        req: lambda_http::Request,
    ) -> Result<Response<Body>, lambda_http::Error> {
        let started = Instant::now();
        let request = ApiRequest::from_lambda(req);
        let (method, path) = (request.method.clone(), request.path.clone());
        let ((response, org), cost) = metrics::counted(self.handle_for(api, request)).await;
        if let Some(org) = &org {
            self.meter
                .record(org, Tally::request(response.status, cost.capacity_milli));
        }
        tracing::info!(
            function = api.function,
            %method,
            %path,
            status = response.status,
            ddb_requests = cost.requests,
            ddb_round_trips = cost.round_trips,
            ms = started.elapsed().as_millis() as u64,
            "request"
        );
        let extra = if self.config.debug_headers {
            vec![
                ("x-catalog-ddb-requests", cost.requests.to_string()),
                ("x-catalog-ddb-round-trips", cost.round_trips.to_string()),
                (
                    "x-catalog-ddb-capacity-milli",
                    cost.capacity_milli.to_string(),
                ),
                // the call's time inside the function, DynamoDB included (the benchmark's
                // split of a warm GET)
                (
                    "x-catalog-serve-us",
                    started.elapsed().as_micros().to_string(),
                ),
            ]
        } else {
            Vec::new()
        };
        // Outside the call's count: usage writes are the process's, not the call's.
        self.meter.flush_due(&self.store).await;
        Ok(response.into_lambda(&extra))
    }

    /// Authenticates, routes and dispatches one request; never fails, never panics outward.
    pub async fn handle(&'static self, api: &'static Api, request: ApiRequest) -> ApiResponse {
        self.handle_for(api, request).await.0
    }

    /// [`App::handle`], with the organization the call was counted against (none when no
    /// key of a real organization was presented).
    async fn handle_for(
        &'static self,
        api: &'static Api,
        request: ApiRequest,
    ) -> (ApiResponse, Option<String>) {
        let mut org = None;
        let outcome = AssertUnwindSafe(self.route_and_dispatch(api, request, &mut org))
            .catch_unwind()
            .await;
        let response = match outcome {
            Ok(Ok(response)) => response,
            Ok(Err(err)) => ApiResponse::error(&err),
            Err(_) => {
                tracing::error!(function = api.function, "handler panicked");
                ApiResponse::error(&ApiError::internal())
            }
        };
        (response, org)
    }

    async fn route_and_dispatch(
        &'static self,
        api: &'static Api,
        request: ApiRequest,
        org: &mut Option<String>,
    ) -> Result<ApiResponse, ApiError> {
        // A public route (the API's description) is dispatched without a key.
        if let Ok(route) = routes::find(api.endpoints, &request.method, &request.path) {
            if route.route.scope.is_none() {
                let handler = api.endpoints[route.index].handler;
                let call = Call {
                    principal: Principal::anonymous(),
                    query: route.route.doc.query.read(&request.query)?,
                    route,
                    request,
                    guard: None,
                };
                return handler(self, call).await;
            }
        }
        let principal = match self.authenticate(&request).await {
            Ok(p) => p,
            Err(e) => return Err(self.failed_authentication(e, &request, org).await),
        };
        *org = Some(principal.org.clone());
        // Every authenticated call takes a token of its organization's bucket first (a call
        // beyond it does no work: 429), and every answer carries the bucket's fields.
        let rate = self
            .limiter
            .admit(&self.store, &principal.org, self.rate_policy(&principal), 1)
            .await?;
        let outcome = self.authorized(api, principal, request).await;
        let with_fields = |mut headers: Vec<(&'static str, String)>| {
            if let Some(rate) = rate.filter(|_| !headers.iter().any(|(n, _)| *n == "ratelimit")) {
                headers.extend(rate.headers());
            }
            headers
        };
        match outcome {
            Ok(mut r) => {
                r.headers = with_fields(r.headers);
                Ok(r)
            }
            Err(mut e) => {
                e.headers = with_fields(e.headers);
                Err(e)
            }
        }
    }

    /// The caller: the `Authorization` header's API key, else the console session of the
    /// `Cookie` header (`auth/session.rs`), else 401.
    async fn authenticate(&self, request: &ApiRequest) -> Result<Principal, ApiError> {
        let secure = !self.config.local_mode;
        let session = request
            .cookie
            .as_deref()
            .filter(|_| request.authorization.is_none())
            .and_then(|c| crate::auth::session::from_cookie(c, secure));
        match session {
            Some(token) => {
                crate::auth::session::authenticate(
                    &self.store,
                    &token,
                    &request.method,
                    request.csrf_token.as_deref(),
                )
                .await
            }
            None => {
                self.auth
                    .authenticate(&self.store, request.authorization.as_deref())
                    .await
            }
        }
    }

    /// A failed authentication with a key id of a real organization (and a secret that
    /// carries its tag, or was issued before tags) takes a token of that
    /// organization's failed-authentication bucket, so guessing a key's secret is rate
    /// limited too (429 once that bucket is empty), while its valid callers, who take from
    /// the other bucket, never pay for it; unknown key ids cost no write (their answers are
    /// cached).
    async fn failed_authentication(
        &self,
        e: ApiError,
        request: &ApiRequest,
        counted_to: &mut Option<String>,
    ) -> ApiError {
        // A secret without its id's tag (or untagged, for a key issued with one) cannot be a
        // guess that works: it costs no storage request, not even the bucket's.
        let tags = self.store.credential_tags();
        let known = request
            .authorization
            .as_deref()
            .and_then(crate::auth::apikey::from_authorization)
            .and_then(|k| {
                let presented = tags.check(crate::auth::apikey::TAG_KIND, &k.key_id, &k.secret);
                let limit = self.auth.known(&k.key_id, presented)?;
                Some((k.org, limit))
            });
        let Some((org, limit)) = known.filter(|_| e.status == 401) else {
            return e;
        };
        let policy = limit.unwrap_or(self.config.rate_limit);
        *counted_to = Some(org.clone());
        let bucket = crate::store::rate::Bucket::FailedAuth;
        match self
            .limiter
            .admit_from(&self.store, &org, bucket, policy, 1)
            .await
        {
            Err(refused) => refused,
            Ok(_) => e,
        }
    }

    /// The organization's rate-limit policy: its own, else the deployment's.
    pub fn rate_policy(&self, principal: &Principal) -> crate::domain::rate::Policy {
        principal.limit.unwrap_or(self.config.rate_limit)
    }

    /// Charges a call that costs `cost` tokens in all (a bulk write's lines) the tokens
    /// beyond the one it paid on arrival: 429 naming the limit when the bucket does not
    /// hold them.
    pub async fn charge(&self, call: &Call, cost: u32) -> Result<(), ApiError> {
        if cost <= 1 {
            return Ok(());
        }
        let policy = self.rate_policy(&call.principal);
        if policy.rate > 0 && cost > policy.burst {
            return Err(crate::auth::rate::over_burst(policy, cost));
        }
        self.limiter
            .admit(&self.store, &call.principal.org, policy, cost - 1)
            .await
            .map(|_| ())
    }

    /// Runs `work` in one of the organization's bulk-write slots (at most
    /// [`MAX_CONCURRENT_BULK_WRITES`] at once over the fleet, so one organization's bulk
    /// load cannot take every instance): 429 naming the limit when all are taken.
    pub async fn in_bulk_slot<T>(
        &self,
        call: &Call,
        work: impl std::future::Future<Output = Result<T, ApiError>>,
    ) -> Result<T, ApiError> {
        // held at most as long as a call can run (the API functions' timeout, 10 s)
        const HOLD: std::time::Duration = std::time::Duration::from_secs(15);
        let slot = self
            .store
            .take_slot(call.org(), "bulk", MAX_CONCURRENT_BULK_WRITES, HOLD)
            .await?
            .ok_or_else(|| {
                ApiError::new(
                    429,
                    format!(
                        "too many concurrent bulk writes: at most {MAX_CONCURRENT_BULK_WRITES} run at once per organization; retry after 1 s"
                    ),
                )
                .with_header("retry-after", "1".to_string())
            })?;
        let out = work.await;
        self.store.give_back_slot(&slot).await;
        out
    }

    /// Routes, checks the scope and dispatches an authenticated call.
    async fn authorized(
        &'static self,
        api: &'static Api,
        principal: Principal,
        request: ApiRequest,
    ) -> Result<ApiResponse, ApiError> {
        let route = routes::find(api.endpoints, &request.method, &request.path)?;
        if let Some(scope) = route.route.scope.filter(|s| !principal.has(*s)) {
            return Err(ApiError::forbidden(format!(
                "this API key lacks the '{}' scope",
                scope.as_str()
            )));
        }
        let handler = api.endpoints[route.index].handler;
        crate::http::etag::readable(request.if_match.as_deref())?;
        let key = crate::http::idempotency::key(&request)?.map(str::to_string);
        // before an Idempotency-Key is claimed: a refused query writes nothing
        let query = route.route.doc.query.read(&request.query)?;
        let call = Call {
            principal,
            route,
            request,
            query,
            guard: None,
        };
        match key {
            None => handler(self, call).await,
            Some(key) => self.once(handler, key, call).await,
        }
    }

    /// Runs a request under its `Idempotency-Key`: claims the key, replays a completed
    /// answer (`Idempotent-Replayed: true`), refuses a key reused for another request (422)
    /// or one still in flight (409), and saves the answer (a 429 or 5xx gives the key back).
    async fn once(
        &'static self,
        handler: Handler,
        key: String,
        mut call: Call,
    ) -> Result<ApiResponse, ApiError> {
        use crate::store::idempotency::Claimed;
        // Bound to the API key that sent it: the same Idempotency-Key from another key of
        // the organization is another request (422), never a replay of this one's answer.
        let fingerprint =
            crate::http::idempotency::fingerprint(&call.principal.key_id, &call.request);
        let token = crate::auth::apikey::prefixed_ulid("ik_");
        let guard = Guard::new(&call.principal.org, &key, &token);
        let reused = || {
            ApiError::new(
                422,
                "Idempotency-Key: already used with another method, path, body or API key",
            )
        };
        match self.store.claim_idempotency_key(&guard, &fingerprint).await? {
            Claimed::Mine => {}
            Claimed::Done { fingerprint: f, .. }
            | Claimed::InFlight { fingerprint: f }
            | Claimed::Written { fingerprint: f }
                if f != fingerprint =>
            {
                return Err(reused())
            }
            Claimed::InFlight { .. } => {
                return Err(ApiError::conflict(
                    "Idempotency-Key: a request with this key is still in flight; retry later",
                ))
            }
            Claimed::Written { .. } => {
                return Err(ApiError::conflict(
                    "Idempotency-Key: the request with this key was applied but its answer was lost; read the resource for the result",
                ))
            }
            Claimed::Done {
                status, body, etag, ..
            } => {
                let mut r = ApiResponse::json(status, serde_json::from_str(&body).unwrap_or_default());
                r.headers.push(("idempotent-replayed", "true".into()));
                if let Some(tag) = etag {
                    r.headers.push(("etag", tag));
                }
                return Ok(r);
            }
        }
        call.guard = Some(guard.clone());
        let response = match handler(self, call).await {
            Ok(r) => r,
            Err(e) => ApiResponse::error(&e),
        };
        // The answer goes out whatever happens to its record: a record left `pending` or
        // `written` makes a repeat wait for the lease or say the answer was lost. A
        // transient refusal (429, 5xx) is no answer to keep: the key is given back, so the
        // retry its `Retry-After` asks for runs the request.
        let saved = if crate::http::idempotency::is_transient(response.status) {
            self.store.release_idempotency_key(&guard).await
        } else {
            let etag = response
                .headers
                .iter()
                .find(|(n, _)| *n == "etag")
                .map(|(_, v)| v.as_str());
            // No credential is kept at rest: the kept body has each one null, whichever
            // route answered (`http/credential.rs`).
            let stored = response.keepable_body().to_string();
            self.store
                .finish_idempotency_key(&guard, response.status, &stored, etag)
                .await
        };
        if let Err(e) = saved {
            tracing::warn!(error = %e, "saving an idempotency key's answer failed");
        }
        Ok(response)
    }
}

#[cfg(test)]
mod tests;
