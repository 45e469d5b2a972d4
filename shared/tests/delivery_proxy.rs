//! The delivery client ignores proxy settings: with `HTTP_PROXY`, `HTTPS_PROXY` and
//! `ALL_PROXY` pointing at a proxy that records connections, a delivery reaches its receiver
//! directly and the proxy sees nothing, while a default client in the same environment goes
//! through the proxy (so the test would see it). Its own test binary: it sets the process's
//! environment.

use catalog::webhooks::url_guard::UrlPolicy;
use catalog::webhooks::WebhookConfig;
use catalog::workers::deliver;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// Answers every connection with `answer` and counts them.
async fn serve(answer: &'static str) -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let seen = Arc::new(AtomicUsize::new(0));
    let count = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = conn.read(&mut buf).await;
                let _ = conn.write_all(answer.as_bytes()).await;
            });
        }
    });
    (port, seen)
}

#[tokio::test]
async fn deliveries_never_go_through_a_proxy_from_the_environment() {
    let (receiver, received) =
        serve("HTTP/1.1 204 No Content\r\ncontent-length: 0\r\nconnection: close\r\n\r\n").await;
    let (proxy, proxied) =
        serve("HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\nconnection: close\r\n\r\n").await;
    let proxy_url = format!("http://127.0.0.1:{proxy}");
    for var in [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
    ] {
        std::env::set_var(var, &proxy_url);
    }
    std::env::remove_var("NO_PROXY");
    std::env::remove_var("no_proxy");
    let url = format!("http://127.0.0.1:{receiver}/hook");

    let cfg = WebhookConfig {
        policy: UrlPolicy {
            allow_loopback: true,
        },
        ..WebhookConfig::default()
    };
    let r = deliver::client(&cfg).post(&url).body("{}").send().await;
    assert_eq!(r.expect("delivered").status(), 204);
    assert_eq!(
        (
            received.load(Ordering::SeqCst),
            proxied.load(Ordering::SeqCst)
        ),
        (1, 0)
    );

    // The control: a client that honours the environment is sent to the proxy.
    let r = reqwest::Client::new().post(&url).body("{}").send().await;
    assert_eq!(r.expect("answered by the proxy").status(), 502);
    assert_eq!(
        (
            received.load(Ordering::SeqCst),
            proxied.load(Ordering::SeqCst)
        ),
        (1, 1)
    );
}
