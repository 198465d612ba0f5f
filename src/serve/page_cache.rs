//! Rendered staff pages kept per data version: a page asked again (the queue a reviewer reloads, a game stepped through, the account two reviewers open) is answered without rendering it again, and gzip-compressed once for clients that accept it.
//!
//! A page is kept under the version of the data it was rendered from
//! ([`DataSource::version`]: the lake version, which every review action
//! moves), the user it was rendered for (name, role and the session's CSRF
//! token, which the page's forms carry) and its path and query. When the data
//! moves, everything kept is dropped: a page is never answered from older data
//! than a fresh rendering would use. Only `200` HTML answers without cookies
//! of the routes in [`CACHED`] are kept, at most [`MAX_PAGES`] pages and
//! [`MAX_BYTES`] in all (the oldest go first).
//!
//! Requests for a page that is being rendered wait for that rendering: under
//! load a page is rendered once per data version, not once per request.
//!
//! Compression: kept pages are compressed the first time a client accepting
//! gzip asks (`Vary: Accept-Encoding`). The pages carry a CSRF token, the
//! secret a BREACH attack would try to recover through compression; the
//! session cookie is `SameSite=Strict`, so another site cannot have a
//! logged-in browser fetch them, which that attack needs.

use std::collections::{HashMap, VecDeque};
use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};

use axum::body::{Body, Bytes, HttpBody as _};
use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::AppState;
use super::context::Ctx;
use super::users::Role;

/// The routes whose pages are kept (GET only).
pub const CACHED: &[&str] = &["/queue", "/account/{id}", "/game/{id}", "/dashboards"];

/// Most pages kept at once.
pub const MAX_PAGES: usize = 4096;

/// Most bytes of pages kept at once (uncompressed and compressed together).
pub const MAX_BYTES: usize = 64 << 20;

/// A page larger than this is never kept.
const MAX_PAGE: u64 = 4 << 20;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    user: String,
    role: Role,
    csrf: String,
    uri: String,
}

/// A rendered page: the headers it was answered with and its body.
struct Kept {
    headers: HeaderMap,
    body: Bytes,
    gzip: OnceLock<Option<Bytes>>,
}

type Slot = Arc<tokio::sync::OnceCell<Option<Arc<Kept>>>>;

#[derive(Default)]
struct Inner {
    version: Option<u64>,
    slots: HashMap<Key, Slot>,
    /// Keys in the order they were added (the oldest is dropped first).
    order: VecDeque<Key>,
    bytes: usize,
}

/// The pages kept; one per app.
#[derive(Default)]
pub struct PageCache {
    inner: Mutex<Inner>,
}

impl PageCache {
    /// The slot of a page at a version, made if absent; drops everything when the version moved.
    fn slot(&self, version: u64, key: &Key) -> Slot {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if inner.version != Some(version) {
            *inner = Inner {
                version: Some(version),
                ..Inner::default()
            };
        }
        if let Some(s) = inner.slots.get(key) {
            return Arc::clone(s);
        }
        while inner.order.len() >= MAX_PAGES {
            inner.evict_oldest();
        }
        let s: Slot = Arc::default();
        inner.slots.insert(key.clone(), Arc::clone(&s));
        inner.order.push_back(key.clone());
        s
    }

    /// Counts a filled page's bytes, dropping the oldest pages beyond [`MAX_BYTES`]. A slot
    /// dropped meanwhile (a newer version, or the oldest when the cache was full) counts nothing:
    /// its bytes go when the requests holding it end.
    fn account(&self, version: u64, key: &Key, slot: &Slot, bytes: usize) {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if inner.version != Some(version)
            || !inner.slots.get(key).is_some_and(|s| Arc::ptr_eq(s, slot))
        {
            return;
        }
        inner.bytes += bytes;
        while inner.bytes > MAX_BYTES && inner.order.len() > 1 {
            inner.evict_oldest();
        }
    }

    /// Pages kept now (rendered and keepable; for tests and metrics).
    pub fn len(&self) -> usize {
        self.inner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .slots
            .values()
            .filter(|s| matches!(s.get(), Some(Some(_))))
            .count()
    }

    /// Slots, rendered or not.
    #[cfg(test)]
    fn slots(&self) -> usize {
        self.inner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .slots
            .len()
    }

    /// Bytes counted.
    #[cfg(test)]
    fn bytes(&self) -> usize {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).bytes
    }

    /// Whether nothing is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Inner {
    fn evict_oldest(&mut self) {
        if let Some(k) = self.order.pop_front()
            && let Some(s) = self.slots.remove(&k)
            && let Some(Some(p)) = s.get()
        {
            let gz = p.gzip.get().and_then(|g| g.as_ref()).map_or(0, Bytes::len);
            self.bytes = self.bytes.saturating_sub(p.body.len() + gz);
        }
    }
}

/// Whether the client accepts gzip (`Accept-Encoding` names it, or `*`, without `q=0`).
pub fn accepts_gzip(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|item| {
            let mut parts = item.split(';');
            let coding = parts.next().unwrap_or("").trim();
            let refused = parts.any(|p| {
                let p = p.trim().replace(' ', "");
                p.strip_prefix("q=")
                    .and_then(|q| q.parse::<f32>().ok())
                    .is_some_and(|q| q <= 0.0)
            });
            !refused && (coding.eq_ignore_ascii_case("gzip") || coding == "*")
        })
}

/// `bytes` gzip-compressed (default level: a kept page is compressed once).
pub fn gzip(bytes: &[u8]) -> Option<Bytes> {
    let mut enc = flate2::write::GzEncoder::new(
        Vec::with_capacity(bytes.len() / 4),
        flate2::Compression::default(),
    );
    enc.write_all(bytes).ok()?;
    enc.finish().ok().map(Bytes::from)
}

/// The answer from a kept page, compressed when the client accepts it.
fn answer(
    cache: &PageCache,
    version: u64,
    (key, slot): (&Key, &Slot),
    page: &Kept,
    gzip_ok: bool,
) -> Response {
    let mut body = page.body.clone();
    let mut encoded = false;
    if gzip_ok {
        let mut added = 0;
        let gz = page.gzip.get_or_init(|| {
            let gz = gzip(&page.body);
            added = gz.as_ref().map_or(0, Bytes::len);
            gz
        });
        if added > 0 {
            cache.account(version, key, slot, added);
        }
        if let Some(gz) = gz {
            body = gz.clone();
            encoded = true;
        }
    }
    let mut r = Response::new(Body::from(body));
    *r.headers_mut() = page.headers.clone();
    if encoded {
        r.headers_mut()
            .insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
    }
    r.headers_mut().remove(header::CONTENT_LENGTH);
    r.headers_mut()
        .insert(header::VARY, HeaderValue::from_static("Accept-Encoding"));
    r
}

/// The page as it can be kept, or the response unchanged when it cannot.
async fn keepable(r: Response) -> Result<Kept, Response> {
    let html = r
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/html"));
    let small = r.body().size_hint().exact().is_some_and(|n| n <= MAX_PAGE);
    if r.status() != StatusCode::OK
        || !html
        || !small
        || r.headers().contains_key(header::SET_COOKIE)
    {
        return Err(r);
    }
    let (parts, body) = r.into_parts();
    match axum::body::to_bytes(body, MAX_PAGE as usize).await {
        Ok(body) => Ok(Kept {
            headers: parts.headers,
            body,
            gzip: OnceLock::new(),
        }),
        Err(_) => Err((
            StatusCode::INTERNAL_SERVER_ERROR,
            "the page could not be read\n",
        )
            .into_response()),
    }
}

/// Middleware (inside the guard, which sets [`Ctx`]): answers kept pages, keeps new ones.
pub async fn layer(State(app): State<AppState>, req: Request, next: Next) -> Response {
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map(|m| m.as_str().to_owned());
    let user = req.extensions().get::<Ctx>().and_then(|c| c.user.clone());
    let (Some(route), Some(user)) = (route, user) else {
        return next.run(req).await;
    };
    if req.method() != Method::GET || !CACHED.contains(&route.as_str()) {
        return next.run(req).await;
    }
    let version = match app.data().version().await {
        Ok(Some(v)) => v,
        _ => return next.run(req).await,
    };
    let gzip_ok = accepts_gzip(req.headers());
    let key = Key {
        user: user.name,
        role: user.role,
        csrf: user.csrf,
        uri: req
            .uri()
            .path_and_query()
            .map_or_else(|| req.uri().path().to_owned(), |pq| pq.as_str().to_owned()),
    };
    let cache = app.pages();
    let slot = cache.slot(version, &key);
    if let Some(Some(page)) = slot.get() {
        return answer(cache, version, (&key, &slot), page, gzip_ok);
    }
    // Render it (or wait for the request already rendering it).
    let mut mine = Some((req, next));
    let mut uncached: Option<Response> = None;
    let (mine_ref, uncached_ref) = (&mut mine, &mut uncached);
    let (key_ref, slot_ref) = (&key, &slot);
    let kept = slot
        .get_or_init(move || async move {
            let (req, next) = mine_ref.take()?;
            match keepable(next.run(req).await).await {
                Ok(page) => {
                    let page = Arc::new(page);
                    cache.account(version, key_ref, slot_ref, page.body.len());
                    Some(page)
                }
                Err(r) => {
                    *uncached_ref = Some(r);
                    None
                }
            }
        })
        .await
        .clone();
    if let Some(r) = uncached {
        return r;
    }
    match (kept, mine) {
        (Some(page), _) => answer(cache, version, (&key, &slot), &page, gzip_ok),
        // Another request rendered a page that cannot be kept: render ours.
        (None, Some((req, next))) => next.run(req).await,
        (None, None) => (StatusCode::INTERNAL_SERVER_ERROR, "no page\n").into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(uri: &str) -> Key {
        Key {
            user: "rita".into(),
            role: Role::Reviewer,
            csrf: "t".into(),
            uri: uri.into(),
        }
    }

    #[test]
    fn accept_encoding_is_read_with_its_weights() {
        let h = |v: &str| {
            let mut m = HeaderMap::new();
            m.insert(header::ACCEPT_ENCODING, HeaderValue::from_str(v).unwrap());
            accepts_gzip(&m)
        };
        assert!(h("gzip"));
        assert!(h("br, gzip;q=0.8, deflate"));
        assert!(h("*"));
        assert!(h("GZIP"));
        assert!(!h("gzip;q=0"));
        assert!(!h("gzip; q=0.0, br"));
        assert!(!h("br, deflate"));
        assert!(!h("x-gzip-like"));
        assert!(!accepts_gzip(&HeaderMap::new()));
    }

    #[test]
    fn gzip_round_trips() {
        use std::io::Read;
        let page = "<p>queue</p>".repeat(500);
        let gz = gzip(page.as_bytes()).unwrap();
        assert!(gz.len() < page.len() / 10, "{} bytes", gz.len());
        let mut out = String::new();
        flate2::read::GzDecoder::new(&gz[..])
            .read_to_string(&mut out)
            .unwrap();
        assert_eq!(out, page);
    }

    #[test]
    fn a_new_version_drops_every_page_and_the_oldest_go_first() {
        let cache = PageCache::default();
        let a = cache.slot(1, &key("/queue"));
        assert!(Arc::ptr_eq(&a, &cache.slot(1, &key("/queue"))));
        cache.slot(1, &key("/game/g1"));
        assert_eq!(cache.slots(), 2);
        let b = cache.slot(2, &key("/queue"));
        assert!(!Arc::ptr_eq(&a, &b));
        assert_eq!(cache.slots(), 1);
        for i in 0..MAX_PAGES + 10 {
            cache.slot(2, &key(&format!("/game/g{i}")));
        }
        assert_eq!(cache.slots(), MAX_PAGES);
        // The first page added at version 2 was dropped first.
        assert!(!Arc::ptr_eq(&b, &cache.slot(2, &key("/queue"))));
    }

    #[test]
    fn only_pages_still_kept_are_counted() {
        let cache = PageCache::default();
        let a = cache.slot(1, &key("/queue"));
        cache.account(1, &key("/queue"), &a, 100);
        assert_eq!(cache.bytes(), 100);
        // A page of an older version, or a slot replaced under the same key, counts nothing.
        cache.account(0, &key("/queue"), &a, 100);
        let other: Slot = Arc::default();
        cache.account(1, &key("/queue"), &other, 100);
        assert_eq!(cache.bytes(), 100);
        let b = cache.slot(2, &key("/queue"));
        cache.account(1, &key("/queue"), &a, 100);
        assert_eq!(cache.bytes(), 0);
        cache.account(2, &key("/queue"), &b, 7);
        assert_eq!(cache.bytes(), 7);
    }
}
