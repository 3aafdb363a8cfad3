//! Building a cloud store's client from its URL, options and environment
//! without ever showing a secret (docs/format.md "Configuration"): every value
//! the client takes that is an `http(s)` URL is checked before the client sees
//! it (one it cannot request panics it; one carrying user info, a query or a
//! fragment would be repeated by its error texts), and the builder's own
//! errors name each value by its key.

#[cfg(any(feature = "s3", feature = "gcs", feature = "azure"))]
use crate::error::Result;

/// Makes ring's rustls provider the process default, unless one is installed
/// already (the embedding program's is kept). This build brings rustls
/// without a provider of its own (`Cargo.toml`, feature `tls`; aws-lc is not
/// built), and reqwest panics building an HTTPS-capable client without one.
/// timef calls it before it builds a cloud client ([`super::Location::parse`]);
/// a program that builds its own `object_store` cloud client for
/// [`super::Location::from_object_store`] calls it first. Idempotent and cheap.
#[cfg(any(feature = "s3", feature = "gcs", feature = "azure"))]
pub fn install_tls_provider() {
    // Err only when a default is already installed: that one serves
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// `text` without user info, query or fragment (where credentials could hide).
pub(super) fn redact(text: &str) -> String {
    match url::Url::parse(text) {
        Ok(u) => format!("{}://{}{}", u.scheme(), u.host_str().unwrap_or(""), u.path()),
        Err(_) => {
            let text = text.split(['?', '#']).next().unwrap_or("");
            match text.split_once("://") {
                // the scheme and path kept, the authority's user info dropped
                Some((scheme, rest)) => {
                    let (authority, path) = rest.split_once('/').map_or((rest, ""), |(a, p)| (a, p));
                    let host = authority.rsplit('@').next().unwrap_or("");
                    let slash = if rest.contains('/') { "/" } else { "" };
                    format!("{scheme}://{host}{slash}{path}")
                }
                None => text.rsplit('@').next().unwrap_or("").to_string(),
            }
        }
    }
}

/// True when the authority of the URL `text` (between `://` and the next
/// `/`) holds user info (`user:password@`), which the URL parser may reject
/// for another reason first (an empty host after it: `file://u:p@/path`).
pub(super) fn has_user_info(text: &str) -> bool {
    text.split_once("://").is_some_and(|(_, rest)| rest.split('/').next().is_some_and(|a| a.contains('@')))
}

/// Builds a cloud store: the builder's `from_env`, the URL, then each option
/// (an unknown key is refused by name, with close matches; its value is never
/// shown). Returns the store and how a forked child builds its own.
#[cfg(any(feature = "s3", feature = "gcs", feature = "azure"))]
macro_rules! cloud_store {
    ($builder:ty, $key:ty, $url:expr, $options:expr, $retry:expr, [$($endpoint:expr),*]) => {{
        use std::sync::Arc;
        use object_store::ObjectStore;
        use $crate::storage::object::{client, invalid, Rebuild};
        use $crate::storage::store_options;
        client::install_tls_provider();
        let mut b = <$builder>::from_env().with_url($url.as_str());
        // every value the builder takes, from the options or the environment
        // (as `from_env` reads them: a cloud prefix, and a key the builder takes)
        let from_env = client::cloud_env().filter(|(k, _)| k.to_ascii_lowercase().parse::<$key>().is_ok());
        let taken: Vec<(String, String)> = $options.iter().cloned().chain(from_env).collect();
        let shown = client::redact($url.as_str());
        for (k, v) in store_options::default_timeouts().into_iter().chain($options) {
            let key: $key = k.parse().map_err(|_| store_options::unknown(&shown, &k, $url.scheme()))?;
            b = b.with_config(key, v);
        }
        // the client panics on an endpoint it cannot make a request URI of
        $(if let Some(endpoint) = b.get_config_value(&$endpoint) {
            client::check_endpoint($url.as_str(), $endpoint.as_ref(), &endpoint)?;
        })*
        client::refuse_urls_with_secrets($url.as_str(), &taken)?;
        let b = b.with_retry(store_options::retry_config(&$retry));
        let built = b.clone().build().map_err(|e| invalid($url.as_str(), client::without_values(e.to_string(), &taken)));
        let store = Arc::new(built?) as Arc<dyn ObjectStore>;
        let rebuild: Rebuild = Box::new(move || Ok(Arc::new(b.clone().build()?) as Arc<dyn ObjectStore>));
        (store, Some(rebuild))
    }};
}
#[cfg(any(feature = "s3", feature = "gcs", feature = "azure"))]
pub(super) use cloud_store;

/// Refuses an endpoint (option `key`, or its environment variable) that is
/// not an `http`/`https` URL with a host, or holds white space or a control
/// character: the cloud clients panic building a request to one. The value is
/// not shown (it may carry user info).
#[cfg(any(feature = "s3", feature = "azure"))]
pub(super) fn check_endpoint(url: &str, key: &str, endpoint: &str) -> Result<()> {
    // the URL parser trims and drops what the client refuses (a CR from a CRLF .env file)
    let clean = !endpoint.chars().any(|c| c.is_whitespace() || c.is_control()) && spelled_http(endpoint);
    let parsed = url::Url::parse(endpoint);
    let ok = clean
        && parsed.is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some_and(|h| !h.is_empty()));
    match ok {
        true => Ok(()),
        false => Err(super::invalid(
            &redact(url),
            format!("the endpoint (option {key}, or its environment variable) is not an http:// or https:// URL with a host"),
        )),
    }
}

/// The environment variables of the cloud clients (`AWS_*`, `GOOGLE_*`,
/// `AZURE_*`: the prefixes the builders' `from_env` reads), as UTF-8.
#[cfg(any(feature = "s3", feature = "gcs", feature = "azure"))]
pub(super) fn cloud_env() -> impl Iterator<Item = (String, String)> {
    std::env::vars_os().filter_map(|(k, v)| {
        let (k, v) = (k.into_string().ok()?, v.into_string().ok()?);
        ["AWS_", "GOOGLE_", "AZURE_"].iter().any(|p| k.starts_with(p)).then_some((k, v))
    })
}

/// Refuses a value the store's client takes (an option's or a cloud
/// environment variable's, `(key, value)` in `taken`) that is an `http(s)://`
/// URL the client cannot request (it panics building the request) or that
/// holds user info, a query or a fragment (an endpoint, a metadata or token
/// service): the clients' error texts repeat each request's URL, so a
/// credential there would be shown. A proxy's URL may hold its credentials:
/// the client sends them and never shows that URL. Names the key, never the
/// value.
#[cfg(any(feature = "s3", feature = "gcs", feature = "azure"))]
pub(super) fn refuse_urls_with_secrets(url: &str, taken: &[(String, String)]) -> Result<()> {
    for (key, value) in taken.iter().filter(|(k, _)| !k.to_ascii_lowercase().contains("proxy")) {
        // what the URL parser reads as http(s) (it drops tabs and reads `http:\\x`
        // as `http://x`), or what is spelled like it
        let parsed = url::Url::parse(value.trim()).ok().filter(|u| matches!(u.scheme(), "http" | "https"));
        let spelled = value.trim_start().get(..5).is_some_and(|h| h.eq_ignore_ascii_case("http:"))
            || value.trim_start().get(..6).is_some_and(|h| h.eq_ignore_ascii_case("https:"));
        let why = match parsed {
            None if !spelled => continue,
            Some(u)
                if !u.username().is_empty()
                    || u.password().is_some()
                    || u.query().is_some()
                    || u.fragment().is_some() =>
            {
                "holds a URL with user info, a query or a fragment, which the store's error texts would show: give \
                 credentials through their own options or environment variables"
            }
            Some(u)
                if u.host_str().is_some_and(|h| !h.is_empty())
                    && spelled_http(value)
                    && !value.chars().any(|c| c.is_whitespace() || c.is_control()) =>
            {
                continue
            }
            _ => {
                "holds a URL the client cannot request (not spelled `http://host` or `https://host`, a bad port, \
                  white space or a control character)"
            }
        };
        return Err(super::invalid(&redact(url), format!("{key} {why}")));
    }
    Ok(())
}

/// True when `value` is spelled `http://host...` or `https://host...` (any
/// case), without a backslash: the URL parser takes other spellings
/// (`http:\\host`, `http:///host`) that the clients cannot request.
#[cfg(any(feature = "s3", feature = "gcs", feature = "azure"))]
fn spelled_http(value: &str) -> bool {
    let rest = ["http://", "https://"]
        .iter()
        .find_map(|p| value.get(..p.len()).filter(|h| h.eq_ignore_ascii_case(p)).map(|_| &value[p.len()..]));
    rest.is_some_and(|rest| !rest.starts_with('/')) && !value.contains('\\')
}

/// `text`, an error of a store's builder, without the values it took
/// (`taken`: options, and the cloud environment variables it read): each is
/// named by its key instead, where the text quotes it or holds it as a word
/// (one not of letters alone, which the text's own words could be).
/// The builders quote a value they cannot parse, and a value may be a
/// secret. One pass over `text`, the longest value first at each place, so a
/// name put in is never replaced again.
#[cfg(any(feature = "s3", feature = "gcs", feature = "azure"))]
pub(super) fn without_values(text: String, taken: &[(String, String)]) -> String {
    let mut values: Vec<&(String, String)> = taken.iter().filter(|(_, v)| !v.is_empty()).collect();
    values.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then_with(|| a.cmp(b)));
    let part = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '-');
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    while at < text.len() {
        let rest = &text[at..];
        let before = text[..at].chars().next_back();
        let found = values.iter().find_map(|(key, value)| {
            let quoted = format!("\"{value}\"");
            if rest.starts_with(&quoted) {
                return Some((key, quoted.len()));
            }
            // unquoted, a value of letters alone (`boolean`) is taken for the text's own word
            let word = rest.starts_with(value.as_str())
                && !value.chars().all(|c| c.is_ascii_alphabetic())
                && !part(before)
                && !part(rest[value.len()..].chars().next());
            word.then_some((key, value.len()))
        });
        match found {
            Some((key, len)) => {
                out.push_str(&format!("<the value of {key}>"));
                at += len;
            }
            None => {
                let c = rest.chars().next().unwrap_or_default();
                out.push(c);
                at += c.len_utf8().max(1);
            }
        }
    }
    out
}
