//! Static files (CSS, JS, icon) embedded with `include_str!` and served under `/static/` with an ETag, long-lived caching for versioned URLs, and gzip (compressed once) for clients that accept it.

use std::sync::OnceLock;

use axum::extract::{Path, Query};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::review::sha256_hex;

struct Asset {
    name: &'static str,
    mime: &'static str,
    body: &'static str,
}

const ASSETS: &[Asset] = &[
    Asset {
        name: "app.css",
        mime: "text/css; charset=utf-8",
        body: include_str!("../../static/app.css"),
    },
    Asset {
        name: "app.js",
        mime: "text/javascript; charset=utf-8",
        body: include_str!("../../static/app.js"),
    },
    Asset {
        name: "verify.js",
        mime: "text/javascript; charset=utf-8",
        body: include_str!("../../static/verify.js"),
    },
    Asset {
        name: "favicon.svg",
        mime: "image/svg+xml",
        body: include_str!("../../static/favicon.svg"),
    },
];

/// Each asset gzip-compressed, made on first use.
fn compressed() -> &'static Vec<Option<axum::body::Bytes>> {
    static V: OnceLock<Vec<Option<axum::body::Bytes>>> = OnceLock::new();
    V.get_or_init(|| {
        ASSETS
            .iter()
            .map(|a| super::page_cache::gzip(a.body.as_bytes()))
            .collect()
    })
}

fn versions() -> &'static Vec<String> {
    static V: OnceLock<Vec<String>> = OnceLock::new();
    V.get_or_init(|| {
        ASSETS
            .iter()
            .map(|a| sha256_hex(a.body.as_bytes())[..12].to_owned())
            .collect()
    })
}

/// The versioned URL of an asset (`/static/app.css?v=…`), safe to cache for a year.
pub fn url(name: &str) -> String {
    match ASSETS.iter().position(|a| a.name == name) {
        Some(i) => format!("/static/{name}?v={}", versions()[i]),
        None => format!("/static/{name}"),
    }
}

/// The query of an asset's URL: its version.
#[derive(Debug, Default, serde::Deserialize)]
pub struct VersionQuery {
    #[serde(default)]
    v: Option<String>,
}

/// Names of the embedded files.
pub fn names() -> impl Iterator<Item = &'static str> {
    ASSETS.iter().map(|a| a.name)
}

/// `GET /static/{file}`: cached for a year when asked for at its versioned URL ([`url`]), else
/// revalidated at each use (its ETag answers 304), so that an unversioned or old link never
/// pins an old copy.
pub async fn static_file(
    Path(file): Path<String>,
    Query(q): Query<VersionQuery>,
    headers: HeaderMap,
) -> Response {
    let Some(i) = ASSETS.iter().position(|a| a.name == file) else {
        return (StatusCode::NOT_FOUND, "no such file\n").into_response();
    };
    let asset = &ASSETS[i];
    let etag = format!("\"{}\"", versions()[i]);
    let mut r = if headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag))
    {
        StatusCode::NOT_MODIFIED.into_response()
    } else if super::page_cache::accepts_gzip(&headers)
        && let Some(gz) = &compressed()[i]
    {
        let mut r = (StatusCode::OK, gz.clone()).into_response();
        r.headers_mut()
            .insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
        r
    } else {
        (StatusCode::OK, asset.body).into_response()
    };
    let h = r.headers_mut();
    h.insert(header::VARY, HeaderValue::from_static("Accept-Encoding"));
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(asset.mime));
    let current = q.v.as_deref() == Some(versions()[i].as_str());
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(if current {
            "public, max-age=31536000, immutable"
        } else {
            "no-cache"
        }),
    );
    if let Ok(v) = HeaderValue::from_str(&etag) {
        h.insert(header::ETAG, v);
    }
    r
}
