//! Console sessions for the tests: a sign-in link made with a key, exchanged for the
//! session cookie and CSRF token, and requests that carry the cookie.

use crate::{Request, Response};
use serde_json::json;

/// A session: the cookie to send and the CSRF token.
pub struct Session {
    pub cookie: String,
    pub csrf: String,
}

pub async fn link(key: &str) -> Response {
    Request::new("POST", "/v1/console-sessions")
        .bearer(key)
        .header("host", "catalog.test:9000")
        .send()
        .await
}

/// The link's token (its fragment).
pub fn token_of(link: &Response) -> String {
    let url = link.body["result"]["url"].as_str().expect("a url");
    url.split_once("#token=")
        .expect("a token fragment")
        .1
        .to_string()
}

pub async fn exchange(token: &str) -> Response {
    Request::new("POST", "/v1/console-sessions/exchange")
        .json(json!({ "token": token }))
        .send()
        .await
}

pub async fn sign_in(key: &str) -> Session {
    let made = link(key).await;
    assert_eq!(made.status, 201, "{:?}", made.body);
    let r = exchange(&token_of(&made)).await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let set = r.header("set-cookie").expect("a session cookie");
    Session {
        cookie: set.split(';').next().unwrap().to_string(),
        csrf: r.body["result"]["csrfToken"].as_str().unwrap().to_string(),
    }
}

impl Session {
    pub fn request(&self, method: &str, path: &str) -> Request {
        Request::new(method, path).header("cookie", &format!("other=1; {}", self.cookie))
    }

    pub async fn get(&self, path: &str) -> Response {
        self.request("GET", path).send().await
    }
}
