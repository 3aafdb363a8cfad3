//! Storage options of a cloud store (docs/format.md §1 "Storage options"):
//! timef's own retry keys, the default timeouts, and an unknown key's error
//! with the close matches among the keys the store takes.

#[cfg(any(feature = "s3", feature = "gcs", feature = "azure"))]
use std::time::Duration;

use crate::error::{Error, Result};

/// Default of `timeout`: a request (connect to last response byte) that takes
/// longer fails. A 10 MiB part at 4 Mbit/s per connection fits; a slower link
/// raises it (`--storage-option timeout=120s`).
pub const DEFAULT_TIMEOUT_S: u64 = 20;
/// Default of `connect_timeout`.
pub const DEFAULT_CONNECT_TIMEOUT_S: u64 = 5;
/// Default of `retry_timeout_s`: no retry starts this long after a request's
/// first attempt, so a server that accepts connections and never answers fails
/// a request after one `timeout` (20 s), not after minutes of retries.
pub const DEFAULT_RETRY_TIMEOUT_S: f64 = 15.0;

/// The retry settings timef reads from the options (not `object_store` keys).
#[derive(Default)]
pub(crate) struct Retry {
    max_retries: Option<usize>,
    retry_timeout_s: Option<f64>,
}

fn malformed(url: &str, key: &str, reason: &str) -> Error {
    Error::InvalidUrl { url: url.to_string(), reason: format!("option {key}: {reason}") }
}

/// `options` split into timef's retry settings and the store's own keys (lowercase).
pub(crate) fn split_retry(url: &str, options: &super::StorageOptions) -> Result<(Retry, Vec<(String, String)>)> {
    let mut retry = Retry::default();
    let mut rest = Vec::new();
    for (k, v) in options {
        match k.to_ascii_lowercase().as_str() {
            "max_retries" => retry.max_retries = Some(v.parse().map_err(|_| malformed(url, k, "not a whole number"))?),
            "retry_timeout_s" => {
                let s: f64 = v.parse().map_err(|_| malformed(url, k, "not a number"))?;
                if !(s.is_finite() && s >= 0.0) {
                    return Err(malformed(url, k, "must be >= 0"));
                }
                retry.retry_timeout_s = Some(s);
            }
            _ => rest.push((k.to_ascii_lowercase(), v.clone())),
        }
    }
    Ok((retry, rest))
}

/// The retry configuration of `r` over `object_store`'s defaults, with
/// [`DEFAULT_RETRY_TIMEOUT_S`].
#[cfg(any(feature = "s3", feature = "gcs", feature = "azure"))]
pub(crate) fn retry_config(r: &Retry) -> object_store::RetryConfig {
    let mut c = object_store::RetryConfig::default();
    if let Some(n) = r.max_retries {
        c.max_retries = n;
    }
    c.retry_timeout = Duration::from_secs_f64(r.retry_timeout_s.unwrap_or(DEFAULT_RETRY_TIMEOUT_S));
    c
}

/// The default timeouts as options, set before the user's (which override them).
#[cfg(any(feature = "s3", feature = "gcs", feature = "azure"))]
pub(crate) fn default_timeouts() -> [(String, String); 2] {
    [
        ("timeout".to_string(), format!("{DEFAULT_TIMEOUT_S}s")),
        ("connect_timeout".to_string(), format!("{DEFAULT_CONNECT_TIMEOUT_S}s")),
    ]
}

/// Keys every cloud store takes (`object_store`'s client options), plus timef's own.
#[cfg(any(feature = "s3", feature = "gcs", feature = "azure"))]
const CLIENT_KEYS: &[&str] = &[
    "allow_http",
    "allow_invalid_certificates",
    "connect_timeout",
    "default_content_type",
    "http1_only",
    "http2_only",
    "http2_keep_alive_interval",
    "http2_keep_alive_timeout",
    "http2_keep_alive_while_idle",
    "http2_max_frame_size",
    "pool_idle_timeout",
    "pool_max_idle_per_host",
    "proxy_url",
    "proxy_ca_certificate",
    "proxy_excludes",
    "read_timeout",
    "timeout",
    "user_agent",
    "max_retries",
    "retry_timeout_s",
];

/// The keys of each store (the canonical names of `object_store`'s config keys).
#[cfg(any(feature = "s3", feature = "gcs", feature = "azure"))]
fn store_keys(scheme: &str) -> &'static [&'static str] {
    match scheme {
        "s3" | "s3a" => &[
            "aws_access_key_id",
            "aws_secret_access_key",
            "aws_region",
            "aws_bucket",
            "aws_endpoint",
            "aws_session_token",
            "aws_imdsv1_fallback",
            "aws_virtual_hosted_style_request",
            "aws_s3_express",
            "aws_default_region",
            "aws_metadata_endpoint",
            "aws_unsigned_payload",
            "aws_checksum_algorithm",
            "aws_role_arn",
            "aws_role_session_name",
            "aws_skip_signature",
            "aws_copy_if_not_exists",
            "aws_conditional_put",
            "aws_disable_tagging",
            "aws_request_payer",
            "aws_server_side_encryption",
            "aws_sse_kms_key_id",
            "aws_allow_http",
        ],
        "gs" => &[
            "google_service_account",
            "google_service_account_key",
            "google_bucket",
            "google_base_url",
            "google_application_credentials",
            "google_bearer_token",
            "google_skip_signature",
        ],
        "az" | "azure" | "abfs" | "abfss" | "adl" => &[
            "azure_storage_account_name",
            "azure_storage_account_key",
            "azure_storage_client_id",
            "azure_storage_client_secret",
            "azure_storage_tenant_id",
            "azure_storage_sas_key",
            "azure_storage_token",
            "azure_storage_use_emulator",
            "azure_storage_endpoint",
            "azure_container_name",
            "azure_use_azure_cli",
            "azure_skip_signature",
        ],
        _ => &[],
    }
}

/// At most three keys of the store at `scheme` close to `key`, closest first.
#[cfg(any(feature = "s3", feature = "gcs", feature = "azure"))]
pub(crate) fn close_matches(key: &str, scheme: &str) -> Vec<String> {
    let mut scored: Vec<(usize, &str)> = CLIENT_KEYS
        .iter()
        .chain(store_keys(scheme))
        .map(|k| (strsim::levenshtein(key, k), *k))
        .filter(|(d, k)| *d <= 3.max(key.len() / 3) || k.contains(key) || (key.len() >= 4 && key.contains(k)))
        .collect();
    scored.sort();
    scored.into_iter().take(3).map(|(_, k)| k.to_string()).collect()
}

/// The error of the storage option `key`, which the store at `url` does not take.
#[cfg(any(feature = "s3", feature = "gcs", feature = "azure"))]
pub(crate) fn unknown(url: &str, key: &str, scheme: &str) -> Error {
    Error::UnknownStorageOption { url: url.to_string(), key: key.to_string(), close: close_matches(key, scheme) }
}

// what they test exists only in a build with a cloud backend
#[cfg(all(test, any(feature = "s3", feature = "gcs", feature = "azure")))]
mod tests {
    use super::*;

    #[test]
    fn close_matches_are_the_store_keys_nearest_first() {
        assert_eq!(close_matches("aws_endpont", "s3"), ["aws_endpoint"]);
        assert_eq!(close_matches("timout", "s3"), ["timeout"]);
        assert_eq!(close_matches("google_base_ur", "gs"), ["google_base_url"]);
        assert_eq!(close_matches("bogus_key", "s3"), Vec::<String>::new());
        let e = unknown("s3://b/root", "aws_secret_acess_key", "s3");
        assert_eq!(
            e.to_string(),
            "unknown storage option `aws_secret_acess_key` for s3://b/root (did you mean `aws_secret_access_key`?)"
        );
    }
}
