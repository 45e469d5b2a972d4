//! The console's pages: the files built into the `console` binary. The page is at `/console`
//! (and `/console/`), never cached, and names one content-hashed folder under
//! `/console/assets/` that holds everything else, cached for a year (a new build is a new
//! folder). Every answer carries a Content-Security-Policy that allows this origin's scripts
//! and styles only: no inline script, no third party, no framing.

use crate::auth::apikey::to_hex;
use lambda_http::{Body, Response};
use sha2::{Digest, Sha256};

/// The local router's (`cargo lambda watch`) entries of the console's pages.
pub const PAGE_PATHS: &[&str] = &["/console", "/console/{*path}"];

/// What `index.html` says where the hashed folder goes.
const ASSETS_MARK: &str = "{{ASSETS}}";

/// The console's files and how to serve them, built once per process.
pub struct Site {
    files: &'static [(&'static str, &'static str)],
    /// `index.html` with the hashed folder filled in, relative to `/console` (the page's
    /// address: API Gateway routes no trailing slash) and to `/console/`.
    index: [String; 2],
    /// The first 12 hex digits of the SHA-256 of every file's name and text.
    folder: String,
    csp: String,
}

impl Site {
    /// The site of `files` (name, text; `index.html` among them), whose page may upload to
    /// `upload_origin` (the imports' presigned URLs) besides this origin.
    pub fn new(
        files: &'static [(&'static str, &'static str)],
        upload_origin: Option<&str>,
    ) -> Self {
        let mut hash = Sha256::new();
        for (name, text) in files {
            hash.update((name.len() as u64).to_le_bytes());
            hash.update(name.as_bytes());
            hash.update((text.len() as u64).to_le_bytes());
            hash.update(text.as_bytes());
        }
        let folder = to_hex(&hash.finalize())[..12].to_string();
        let page = files
            .iter()
            .find(|(n, _)| *n == "index.html")
            .map_or("", |(_, t)| *t);
        let index = [
            page.replace(ASSETS_MARK, &format!("console/assets/{folder}/")),
            page.replace(ASSETS_MARK, &format!("assets/{folder}/")),
        ];
        let connect = match upload_origin {
            Some(origin) => format!("'self' {origin}"),
            None => "'self'".into(),
        };
        let csp = format!(
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' https: data:; \
             connect-src {connect}; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
        );
        Self {
            files,
            index,
            folder,
            csp,
        }
    }

    /// The site of `files` for this deployment: uploads go to `CATALOG_CONSOLE_UPLOAD_ORIGIN`
    /// (the import bucket's address, set by the template), else to the origin of
    /// `AWS_ENDPOINT_URL_S3` (the local stack's S3).
    pub fn from_env(files: &'static [(&'static str, &'static str)]) -> Self {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        let origin = var("CATALOG_CONSOLE_UPLOAD_ORIGIN")
            .or_else(|| var("AWS_ENDPOINT_URL_S3"))
            .and_then(|u| url::Url::parse(&u).ok())
            .map(|u| u.origin().ascii_serialization())
            .filter(|o| o != "null");
        Self::new(files, origin.as_deref())
    }

    /// The hashed folder's name.
    pub fn folder(&self) -> &str {
        &self.folder
    }

    /// The part of `path` after its `console` segment (the first, or the second after a
    /// stage), when `path` is one of the console's pages and not an API route.
    pub fn page_of(path: &str) -> Option<&str> {
        let rest = path.strip_prefix('/')?;
        let after = |p: &'static str| {
            move |s: &str| {
                s.strip_prefix(p)
                    .filter(|r| r.is_empty() || r.starts_with('/'))
                    .map(|r| r.len())
            }
        };
        if let Some(n) = after("console")(rest) {
            return Some(&rest[rest.len() - n..]);
        }
        let (stage, tail) = rest.split_once('/')?;
        (!stage.is_empty() && stage != "v1")
            .then(|| after("console")(tail).map(|n| &tail[tail.len() - n..]))
            .flatten()
    }

    /// The answer to `method path` for a path of [`Site::page_of`].
    pub fn respond(&self, method: &str, path: &str) -> Response<Body> {
        let page = Self::page_of(path).unwrap_or_default();
        let head = method.eq_ignore_ascii_case("HEAD");
        if !head && !method.eq_ignore_ascii_case("GET") {
            return self.error(
                405,
                &format!("{method} is not allowed on the console's pages; use GET"),
            );
        }
        let (content_type, text, cache) = match page {
            "" => (
                "text/html; charset=utf-8",
                self.index[0].as_str(),
                "no-cache",
            ),
            "/" => (
                "text/html; charset=utf-8",
                self.index[1].as_str(),
                "no-cache",
            ),
            _ => match self.asset(page) {
                Some((name, text)) => (
                    content_type(name),
                    text,
                    "public, max-age=31536000, immutable",
                ),
                None => return self.error(404, &format!("no console page at {path}")),
            },
        };
        let body = if head {
            String::new()
        } else {
            text.to_string()
        };
        self.with_headers(Response::builder().status(200))
            .header("content-type", content_type)
            .header("cache-control", cache)
            .body(Body::Text(body))
            .expect("valid headers")
    }

    /// The file at `/assets/<this build's folder>/<name>` (never the page itself).
    fn asset(&self, page: &str) -> Option<(&'static str, &'static str)> {
        let rest = page.strip_prefix("/assets/")?;
        let name = rest.strip_prefix(self.folder.as_str())?.strip_prefix('/')?;
        self.files
            .iter()
            .find(|(n, _)| *n == name && *n != "index.html")
            .copied()
    }

    fn with_headers(
        &self,
        builder: lambda_http::http::response::Builder,
    ) -> lambda_http::http::response::Builder {
        builder
            .header("content-security-policy", self.csp.as_str())
            .header("x-content-type-options", "nosniff")
            .header("x-frame-options", "DENY")
            .header("referrer-policy", "no-referrer")
            .header("cross-origin-opener-policy", "same-origin")
            .header("cross-origin-resource-policy", "same-origin")
    }

    fn error(&self, status: u16, message: &str) -> Response<Body> {
        let mut builder = self
            .with_headers(Response::builder().status(status))
            .header("content-type", "application/json")
            .header("cache-control", "no-cache");
        if status == 405 {
            builder = builder.header("allow", "GET, HEAD");
        }
        builder
            .body(Body::Text(
                serde_json::json!({ "error": message }).to_string(),
            ))
            .expect("valid headers")
    }
}

/// The content type of a file, by its extension.
fn content_type(name: &str) -> &'static str {
    match name.rsplit('.').next() {
        Some("js" | "mjs") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("svg") => "image/svg+xml",
        Some("json") => "application/json",
        Some("html") => "text/html; charset=utf-8",
        _ => "text/plain; charset=utf-8",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILES: &[(&str, &str)] = &[
        (
            "index.html",
            "<script type=\"module\" src=\"{{ASSETS}}app.js\"></script>",
        ),
        ("app.js", "import './ui.js';"),
        ("ui.js", "export {};"),
    ];

    fn text(r: &Response<Body>) -> String {
        match r.body() {
            Body::Text(t) => t.clone(),
            _ => String::new(),
        }
    }

    #[test]
    fn console_paths_are_told_from_api_routes() {
        assert_eq!(Site::page_of("/console"), Some(""));
        assert_eq!(Site::page_of("/console/"), Some("/"));
        assert_eq!(
            Site::page_of("/prod/console/assets/x/app.js"),
            Some("/assets/x/app.js")
        );
        for api in [
            "/v1/console-sessions",
            "/consoles",
            "/v1/console",
            "/a/b/console",
            "/",
        ] {
            assert_eq!(Site::page_of(api), None, "{api}");
        }
    }

    #[test]
    fn the_page_names_the_hashed_folder_and_is_not_cached() {
        let site = Site::new(FILES, Some("http://127.0.0.1:4566"));
        let r = site.respond("GET", "/console/");
        assert_eq!(r.status(), 200);
        assert_eq!(r.headers()["cache-control"], "no-cache");
        assert_eq!(
            text(&r),
            format!(
                "<script type=\"module\" src=\"assets/{}/app.js\"></script>",
                site.folder()
            )
        );
        let csp = r.headers()["content-security-policy"].to_str().unwrap();
        assert!(csp.contains("script-src 'self';"), "{csp}");
        assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
        assert!(
            csp.contains("connect-src 'self' http://127.0.0.1:4566;"),
            "{csp}"
        );
        assert!(!csp.contains("unsafe"), "{csp}");
    }

    #[test]
    fn assets_are_served_from_this_build_s_folder_only_and_cached_for_good() {
        let site = Site::new(FILES, None);
        let path = format!("/console/assets/{}/ui.js", site.folder());
        let r = site.respond("GET", &path);
        assert_eq!(r.status(), 200);
        assert_eq!(
            r.headers()["cache-control"],
            "public, max-age=31536000, immutable"
        );
        assert_eq!(
            r.headers()["content-type"],
            "text/javascript; charset=utf-8"
        );
        assert_eq!(text(&r), "export {};");
        assert_eq!(text(&site.respond("HEAD", &path)), "");
        for missing in [
            "/console/assets/000000000000/ui.js".to_string(),
            format!("/console/assets/{}/index.html", site.folder()),
            format!("/console/assets/{}/none.js", site.folder()),
            "/console/other".into(),
        ] {
            assert_eq!(site.respond("GET", &missing).status(), 404, "{missing}");
        }
        assert_eq!(site.respond("POST", "/console/").status(), 405);
        // the page's own address has no trailing slash (API Gateway routes `/console`), so
        // its folder is named from there
        let page = text(&site.respond("GET", "/console"));
        assert!(
            page.contains(&format!("src=\"console/assets/{}/app.js\"", site.folder())),
            "{page}"
        );
    }

    #[test]
    fn another_build_is_another_folder() {
        const OTHER: &[(&str, &str)] = &[("index.html", ""), ("app.js", "changed")];
        assert_ne!(
            Site::new(FILES, None).folder(),
            Site::new(OTHER, None).folder()
        );
    }
}
