//! SSM Parameter Store reads shared by the inventories (cloud accounts, SSH
//! servers): a client from the environment and every parameter under a path.

/// `prefix` with exactly one trailing slash, as `GetParametersByPath` wants.
pub fn normalize_prefix(prefix: &str) -> String {
    format!("{}/", prefix.trim_end_matches('/'))
}

/// A client from the environment's AWS config (region, credentials, and
/// `AWS_ENDPOINT_URL` when set).
pub async fn client_from_env() -> aws_sdk_ssm::Client {
    let conf = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
    aws_sdk_ssm::Client::new(&conf)
}

/// Every parameter under `prefix` as (full name, decrypted value), all pages.
pub async fn parameters_under(
    client: &aws_sdk_ssm::Client,
    prefix: &str,
    recursive: bool,
) -> Result<Vec<(String, String)>, String> {
    let mut pages = client
        .get_parameters_by_path()
        .path(prefix)
        .recursive(recursive)
        .with_decryption(true)
        .into_paginator()
        .send();
    let mut out = Vec::new();
    while let Some(page) = pages.next().await {
        let page = page.map_err(|e| {
            format!(
                "GetParametersByPath {prefix}: {}",
                aws_sdk_ssm::error::DisplayErrorContext(e)
            )
        })?;
        for p in page.parameters() {
            if let (Some(name), Some(value)) = (p.name(), p.value()) {
                out.push((name.to_owned(), value.to_owned()));
            }
        }
    }
    Ok(out)
}
