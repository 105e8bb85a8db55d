//! SSM Parameter Store reads shared by the inventories (cloud accounts, SSH
//! servers): a client from the environment and every parameter under a path;
//! and one SecureString by name (the notification channels' secrets).

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

/// The decrypted value of the SecureString `name`, read once at start. A
/// missing or unreadable parameter, or one stored as plain text (whoever may
/// read SSM would read the secret), is an error that names the parameter and
/// never holds a value.
pub async fn secure_string(client: &aws_sdk_ssm::Client, name: &str) -> Result<String, String> {
    let out = client
        .get_parameter()
        .name(name)
        .with_decryption(true)
        .send()
        .await
        .map_err(|e| {
            let why = match e.as_service_error() {
                Some(se) if se.is_parameter_not_found() => "it does not exist".to_owned(),
                _ => aws_sdk_ssm::error::DisplayErrorContext(&e).to_string(),
            };
            format!("cannot read SSM parameter {name}: {why}")
        })?;
    let p = out
        .parameter
        .ok_or_else(|| format!("cannot read SSM parameter {name}: no parameter came back"))?;
    if p.r#type != Some(aws_sdk_ssm::types::ParameterType::SecureString) {
        return Err(format!(
            "SSM parameter {name} is not a SecureString: store the secret encrypted \
             (aws ssm put-parameter --type SecureString)"
        ));
    }
    p.value
        .ok_or_else(|| format!("cannot read SSM parameter {name}: it has no value"))
}
