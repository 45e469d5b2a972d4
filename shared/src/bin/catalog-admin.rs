//! Operator CLI: creates the table, organizations and API keys, and turns API access on and
//! off, writing straight to the table. `catalog-admin help` lists the commands.

use catalog::admin;
use catalog::store::{table::TABLE, Store, StoreError};
use catalog::Config;
use std::collections::HashMap;
use std::process::ExitCode;

const HELP: &str = "catalog-admin <command> [--flag value ...]

Commands:
  create-table                         create the table (if missing) from the definition in code
  table-yaml                           print the table's CloudFormation properties
  router-toml                          print the cargo-lambda router entries for every route
  served-rs                            print shared/src/api/served.rs (the fallback's routes)
  openapi                              print the OpenAPI 3.1 document (docs/openapi.yaml)
  openapi-json                         print it as JSON (shared/src/api/openapi/document.json)
  create-org --name NAME               create an organization (API access enabled); prints its id
  create-key --org ID [--name N] [--scopes LIST]
                                       create an API key (scopes: catalog:read,catalog:write,
                                       settings:manage or all; default all); the key is printed once
  list-keys --org ID                   list key ids, names, scopes and revocation
  revoke-key --org ID --key KEY_ID     revoke a key
  enable-api --org ID                  enable API access for an organization
  disable-api --org ID                 disable API access for an organization
  set-limits --org ID --rate N [--burst N]
                                       the organization's own rate limit (requests per second,
                                       burst default 2 x rate); --rate 0 removes it
  import --file PATH [--url URL] [--key KEY]
                                       create an import, upload the NDJSON file to it and show
                                       its progress until it finishes (URL and KEY default to
                                       CATALOG_BASE_URL and CATALOG_API_KEY, as .local/env sets)
  export --out PATH [--entity E] [--include LIST] [--search JSON] [--url URL] [--key KEY]
                                       start an export (entity products, variants or skus;
                                       default products with variants,skus), show its progress
                                       and download its gzip NDJSON file to PATH
  console-link [--key KEY] [--url URL]
                                       a single-use sign-in link (10 minutes) to the web console
                                       at URL (default: CATALOG_BASE_URL's /console), acting as
                                       the API key KEY (default CATALOG_API_KEY; settings:manage)
  dev-setup [--env-file PATH] [--base-url URL]
                                       local stack: create the table, reuse the key in PATH if it
                                       still works or create a dev organization and key, and write
                                       CATALOG_BASE_URL and CATALOG_API_KEY to PATH

The table is CATALOG_TABLE (default 'catalog'); the endpoint and credentials come from the
standard AWS configuration (AWS_ENDPOINT_URL_DYNAMODB for DynamoDB Local).";

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((command, rest)) = args.split_first() else {
        eprintln!("{HELP}");
        return ExitCode::from(2);
    };
    let flags = match parse_flags(rest) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("error: {e}\n\n{HELP}");
            return ExitCode::from(2);
        }
    };
    match run(command, &flags).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn parse_flags(rest: &[String]) -> Result<HashMap<String, String>, String> {
    let mut flags = HashMap::new();
    let mut it = rest.iter();
    while let Some(flag) = it.next() {
        let name = flag
            .strip_prefix("--")
            .ok_or_else(|| format!("unexpected argument '{flag}'"))?;
        let value = it.next().ok_or_else(|| format!("--{name} needs a value"))?;
        flags.insert(name.to_string(), value.clone());
    }
    Ok(flags)
}

fn need<'a>(flags: &'a HashMap<String, String>, name: &str) -> Result<&'a str, String> {
    flags
        .get(name)
        .map(String::as_str)
        .ok_or_else(|| format!("--{name} is required"))
}

fn store_err(e: StoreError) -> String {
    match e {
        StoreError::ConditionFailed => "not found, or already exists".to_string(),
        other => other.to_string(),
    }
}

/// The table, its credentials tagged with the deployment's key when `CATALOG_CURSOR_KEY`
/// holds the deployment's secret, else as a local stack's (which a deployment refuses).
async fn store() -> Store {
    Config::from_env().store(Store::client_from_env().await)
}

/// [`store`], for a command that issues a credential: says when it will not work on AWS.
async fn issuing_store() -> Store {
    let config = Config::from_env();
    if config.credential_tags().is_none() && !config.local_mode {
        eprintln!("note: CATALOG_CURSOR_KEY is not set: keys and sign-in links made now work against a local stack only (on AWS, use the admin function or set it to the deployment's secret)");
    }
    config.store(Store::client_from_env().await)
}

/// The API's URL and key: `--url` and `--key`, else `CATALOG_BASE_URL` and `CATALOG_API_KEY`.
fn api_access(flags: &HashMap<String, String>) -> Result<(String, String), String> {
    let from_env = |name: &str, var: &str| {
        flags
            .get(name)
            .cloned()
            .or_else(|| std::env::var(var).ok())
            .ok_or_else(|| format!("--{name} (or {var}) is required"))
    };
    Ok((
        from_env("url", "CATALOG_BASE_URL")?,
        from_env("key", "CATALOG_API_KEY")?,
    ))
}

async fn run(command: &str, flags: &HashMap<String, String>) -> Result<(), String> {
    match command {
        "help" | "--help" | "-h" => println!("{HELP}"),
        "table-yaml" => print!("{}", TABLE.cloudformation_yaml(0)),
        "router-toml" => print!("{}", catalog::api::router_toml()),
        "served-rs" => print!("{}", catalog::api::served_rs()),
        "openapi" => print!("{}", catalog::api::openapi::yaml()),
        "openapi-json" => print!("{}", catalog::api::openapi::json()),
        "export" => {
            let (base, key) = api_access(flags)?;
            let file = std::path::PathBuf::from(need(flags, "out")?);
            let mut request = serde_json::json!({
                "entity": flags.get("entity").map_or("products", String::as_str),
            });
            let include = match flags.get("include") {
                Some(list) => list
                    .split(',')
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect(),
                None if request["entity"] == "products" => vec!["variants".into(), "skus".into()],
                None => Vec::new(),
            };
            request["include"] = serde_json::json!(include);
            if let Some(search) = flags.get("search") {
                request["search"] = serde_json::json!(search);
            }
            let job = catalog::imports::client::export_file(
                base.trim_end_matches('/'),
                &key,
                &request,
                &file,
                std::time::Duration::from_secs(1),
                &mut std::io::stderr(),
            )
            .await?;
            println!("{}", serde_json::to_string_pretty(&job).unwrap_or_default());
            if job["status"] != "succeeded" {
                return Err(format!("the export {}: {}", job["status"], job["error"]));
            }
        }
        "import" => {
            let (base, key) = api_access(flags)?;
            let file = std::path::PathBuf::from(need(flags, "file")?);
            let job = catalog::imports::client::import_file(
                base.trim_end_matches('/'),
                &key,
                &file,
                std::time::Duration::from_secs(1),
                &mut std::io::stderr(),
            )
            .await?;
            for e in job["errors"].as_array().into_iter().flatten().take(10) {
                eprintln!("  line {}: {} {}", e["line"], e["status"], e["error"]);
            }
            println!("{}", serde_json::to_string_pretty(&job).unwrap_or_default());
            if job["status"] == "failed" {
                return Err("the import failed".into());
            }
        }
        "create-table" => {
            let s = store().await;
            let created = s.ensure_table().await.map_err(store_err)?;
            println!(
                "table {} {}",
                s.table(),
                if created { "created" } else { "already exists" }
            );
        }
        "create-org" => {
            let org = admin::create_org(&store().await, need(flags, "name")?)
                .await
                .map_err(store_err)?;
            println!(
                "organization {} ({}) created, API access enabled",
                org.id, org.name
            );
        }
        "create-key" => {
            let scopes =
                admin::parse_scopes(flags.get("scopes").map(String::as_str).unwrap_or("all"))?;
            let name = flags.get("name").map(String::as_str).unwrap_or("default");
            let key = admin::create_key(&issuing_store().await, need(flags, "org")?, name, &scopes)
                .await
                .map_err(store_err)?;
            let scopes: Vec<&str> = key.scopes.iter().map(|s| s.as_str()).collect();
            println!("key id {} scopes {}", key.key_id, scopes.join(","));
            println!("{}", key.plain);
            eprintln!("The key is shown once: store it now.");
        }
        "list-keys" => {
            for k in store()
                .await
                .list_keys(need(flags, "org")?)
                .await
                .map_err(store_err)?
            {
                let state = if k.revoked { "revoked" } else { "active" };
                println!(
                    "{}\t{}\t{}\t{}\t{}",
                    k.key_id,
                    k.name,
                    k.scopes.join(","),
                    state,
                    k.created_at
                );
            }
        }
        "revoke-key" => {
            store()
                .await
                .revoke_key(need(flags, "org")?, need(flags, "key")?)
                .await
                .map_err(store_err)?;
            println!("key revoked (takes effect within the functions' auth cache TTL)");
        }
        "enable-api" | "disable-api" => {
            let enabled = command == "enable-api";
            store()
                .await
                .set_api_enabled(need(flags, "org")?, enabled)
                .await
                .map_err(store_err)?;
            println!(
                "API access {}",
                if enabled { "enabled" } else { "disabled" }
            );
        }
        "set-limits" => {
            let number = |name: &str| -> Result<Option<u32>, String> {
                flags
                    .get(name)
                    .map(|v| {
                        v.parse()
                            .map_err(|_| format!("--{name} must be a whole number"))
                    })
                    .transpose()
            };
            let rate = number("rate")?.ok_or("--rate is required")?;
            let limit =
                admin::set_limits(&store().await, need(flags, "org")?, rate, number("burst")?)
                    .await?;
            match limit {
                Some(l) => println!(
                    "rate limit set: {} requests per second, bursts of {} (within the auth cache TTL)",
                    l.rate, l.burst
                ),
                None => println!("rate limit removed: the deployment's defaults apply"),
            }
        }
        "console-link" => {
            let env = |name: &str| std::env::var(name).ok();
            let key = flags
                .get("key")
                .cloned()
                .or_else(|| env("CATALOG_API_KEY"))
                .ok_or("--key (or CATALOG_API_KEY) is required")?;
            let url = match flags.get("url").cloned() {
                Some(url) => url,
                None => {
                    let base =
                        env("CATALOG_BASE_URL").ok_or("--url (or CATALOG_BASE_URL) is required")?;
                    format!(
                        "{}/console",
                        base.trim_end_matches('/').trim_end_matches("/v1")
                    )
                }
            };
            let s = issuing_store().await;
            let parsed = catalog::auth::apikey::parse(&key)
                .ok_or("--key is not an API key (cat_<id>_<secret>)")?;
            let (link, expires_at) =
                admin::console_link(&s, &parsed.org, &parsed.key_id, Some(&parsed.secret), &url)
                    .await?;
            println!("{link}");
            eprintln!("(single use, until {expires_at})");
        }
        "dev-setup" => dev_setup(flags).await?,
        other => return Err(format!("unknown command '{other}'\n\n{HELP}")),
    }
    Ok(())
}

async fn dev_setup(flags: &HashMap<String, String>) -> Result<(), String> {
    let path = flags
        .get("env-file")
        .map(String::as_str)
        .unwrap_or(".local/env");
    let base_url = flags
        .get("base-url")
        .map(String::as_str)
        .unwrap_or("http://127.0.0.1:9000/v1");
    let s = store().await;
    s.ensure_table().await.map_err(store_err)?;
    let previous = std::fs::read_to_string(path).unwrap_or_default();
    let old_key = previous
        .lines()
        .find_map(|l| l.strip_prefix("CATALOG_API_KEY="))
        .map(str::to_string);
    let key = match old_key {
        Some(k) if admin::key_is_live(&s, &k).await.map_err(store_err)? => k,
        _ => {
            let org = admin::create_org(&s, "Local development")
                .await
                .map_err(store_err)?;
            let scopes = admin::parse_scopes("all")?;
            admin::create_key(&s, &org.id, "local", &scopes)
                .await
                .map_err(store_err)?
                .plain
        }
    };
    if let Some(dir) = std::path::Path::new(path).parent() {
        std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    }
    std::fs::write(
        path,
        format!("CATALOG_BASE_URL={base_url}\nCATALOG_API_KEY={key}\n"),
    )
    .map_err(|e| format!("cannot write {path}: {e}"))?;
    println!("CATALOG_BASE_URL={base_url}");
    println!("CATALOG_API_KEY={key}");
    Ok(())
}
