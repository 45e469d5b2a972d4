//! `make package` and `make deploy` (scripts/package.sh, scripts/deploy.sh) run for real,
//! against stand-ins for what needs AWS: `tests/stubs/aws` and `tests/stubs/sam` on PATH
//! answer from a state folder and log every call, and the tools a deploy must never run
//! (cargo, rustup, java, npm, apt-get, pip) are stubs that log `FORBIDDEN`.

use catalog_e2e::repo_root;
use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

const ACCOUNT: &str = "123456789012";
/// The secret part of the key the stubbed admin function answers: it must never be printed
/// nor passed as a command-line argument.
const SECRET: &str = "S3CRETxKEYxNEVERxLOGGED";
const FORBIDDEN: &[&str] = &["cargo", "rustup", "java", "npm", "apt-get", "pip", "pip3"];

/// One deploy workspace: stubs on PATH, a state folder, a package of fake zips, a copy of
/// infra/samconfig.toml with the prod stage's account and alarm recipient filled in.
struct Workspace {
    dir: PathBuf,
}

impl Workspace {
    fn new() -> Self {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "catalog-deploy-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        for sub in ["bin", "state", "zips"] {
            std::fs::create_dir_all(dir.join(sub)).unwrap();
        }
        let stubs = repo_root().join("tests/stubs");
        for tool in ["aws", "sam"] {
            std::os::unix::fs::symlink(stubs.join(tool), dir.join("bin").join(tool)).unwrap();
        }
        for tool in FORBIDDEN {
            std::os::unix::fs::symlink(stubs.join("forbidden"), dir.join("bin").join(tool))
                .unwrap();
        }
        for function in functions() {
            let zip = dir.join("zips").join(&function);
            std::fs::create_dir_all(&zip).unwrap();
            std::fs::write(zip.join("bootstrap.zip"), format!("zip of {function}")).unwrap();
        }
        let config = read("infra/samconfig.toml")
            .replacen(
                "account_id = \"\"",
                &format!("account_id = \"{ACCOUNT}\""),
                1,
            )
            .replacen(
                r#"AlarmEmail=\"\""#,
                r#"AlarmEmail=\"oncall@example.com\""#,
                1,
            );
        std::fs::write(dir.join("samconfig.toml"), config).unwrap();
        let ws = Self { dir };
        let out = ws.run(
            "scripts/package.sh",
            &[],
            &["--no-build", "--zips", &ws.path("zips"), &ws.path("dist")],
        );
        assert!(out.status.success(), "package: {}", text(&out));
        ws
    }

    fn path(&self, sub: &str) -> String {
        self.dir.join(sub).display().to_string()
    }

    /// Runs a script of the repository with the stubs first on PATH.
    fn run(&self, script: &str, env: &[(&str, &str)], args: &[&str]) -> Output {
        let path = format!("{}:{}", self.path("bin"), std::env::var("PATH").unwrap());
        let mut cmd = Command::new("bash");
        cmd.arg(repo_root().join(script))
            .args(args)
            .env("PATH", path)
            .env("STUB_LOG", self.path("log"))
            .env("STUB_STATE", self.path("state"))
            .env("STUB_ACCOUNT", ACCOUNT)
            .env("STUB_SECRET", SECRET)
            .env("SAMCONFIG", self.path("samconfig.toml"))
            .env("DIST", self.path("dist"))
            .env_remove("AWS_REGION")
            .env_remove("AWS_DEFAULT_REGION")
            .env_remove("ORG");
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.output().expect("bash runs")
    }

    fn deploy(&self, env: &[(&str, &str)]) -> Output {
        self.run("scripts/deploy.sh", env, &[])
    }

    /// The calls the stubs logged, and forgets them.
    fn calls(&self) -> Vec<String> {
        let log = std::fs::read_to_string(self.path("log")).unwrap_or_default();
        let _ = std::fs::remove_file(self.path("log"));
        log.lines().map(str::to_string).collect()
    }
}

impl Drop for Workspace {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn read(path: &str) -> String {
    std::fs::read_to_string(repo_root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn functions() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(repo_root().join("functions"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The `CodeUri` values of a template, in order.
fn code_uris(template: &str) -> Vec<String> {
    template
        .lines()
        .filter_map(|l| l.trim().strip_prefix("CodeUri: "))
        .map(str::to_string)
        .collect()
}

fn assert_no_forbidden_tool(calls: &[String]) {
    let forbidden: Vec<&String> = calls
        .iter()
        .filter(|c| c.starts_with("FORBIDDEN"))
        .collect();
    assert!(forbidden.is_empty(), "a deploy ran {forbidden:?}");
}

/// The properties `sam package` uploads when they name a local path. The template may use
/// only `CodeUri`, and only for the build's zips: then the package folder holds everything.
const PACKAGEABLE: &[&str] = &[
    "CodeUri:",
    "ContentUri:",
    "DefinitionUri:",
    "BodyS3Location:",
    "DefinitionS3Location:",
    "TemplateURL:",
    "Location:",
    "SchemaS3Location:",
    "ImageUri:",
];

#[test]
fn the_package_folder_holds_every_artifact_the_template_names() {
    let ws = Workspace::new();
    let dist = ws.dir.join("dist");
    let template = std::fs::read_to_string(dist.join("template.yaml")).unwrap();
    let uris = code_uris(&template);
    let expected: Vec<String> = functions()
        .iter()
        .map(|f| format!("functions/{f}.zip"))
        .collect();
    let mut sorted = uris.clone();
    sorted.sort();
    assert_eq!(
        sorted, expected,
        "one zip per function, each inside the folder"
    );
    for uri in &uris {
        assert!(dist.join(uri).is_file(), "{uri} is in the package");
    }
    for property in PACKAGEABLE.iter().filter(|p| **p != "CodeUri:") {
        assert!(
            !template
                .lines()
                .any(|l| l.trim_start().starts_with(property)),
            "the template names a local artifact through {property}: package it too"
        );
    }
    // Apart from the code paths, the packaged copy is the template itself.
    let original = read("infra/template.yaml");
    assert_eq!(original.lines().count(), template.lines().count());
    for (a, b) in original.lines().zip(template.lines()) {
        if !a.trim_start().starts_with("CodeUri:") {
            assert_eq!(a, b);
        }
    }
    let manifest = std::fs::read_to_string(dist.join("manifest.sha256")).unwrap();
    assert_eq!(
        manifest.lines().count(),
        2 + functions().len(),
        "{manifest}"
    );
}

/// What a Terraform or CDK stack deploys (infra/README.md, "Terraform and CDK"): the
/// template `make deploy` packaged names nothing on the machine that made it.
#[test]
fn the_packaged_template_is_self_contained() {
    let ws = Workspace::new();
    let out = ws.deploy(&[("STAGE", "prod")]);
    assert!(out.status.success(), "{}", text(&out));
    let packaged = std::fs::read_to_string(ws.dir.join("dist/packaged-prod.yaml")).unwrap();
    let uris = code_uris(&packaged);
    assert_eq!(uris.len(), functions().len());
    for uri in uris {
        assert!(uri.starts_with("s3://"), "{uri} is local");
    }
    for line in packaged.lines() {
        assert!(
            !line.contains("../")
                && !line.contains("target/lambda")
                && !line.contains(&ws.path("")),
            "the packaged template names a local path: {line}"
        );
    }
    // And the deploy deployed exactly that template.
    let calls = ws.calls();
    let deploys: Vec<&String> = calls
        .iter()
        .filter(|c| c.starts_with("sam deploy"))
        .collect();
    assert!(!deploys.is_empty());
    for call in deploys {
        assert!(
            call.contains(&format!(
                "--template-file {}",
                ws.path("dist/packaged-prod.yaml")
            )),
            "{call}"
        );
    }
}

#[test]
fn a_first_deploy_creates_the_table_unprotected_then_protects_it_and_bootstraps_once() {
    let ws = Workspace::new();
    // AWS_REGION as CI runners set it, equal to the stage's region: accepted.
    let out = ws.deploy(&[
        ("STAGE", "prod"),
        ("ORG", "Acme"),
        ("AWS_REGION", "eu-west-1"),
    ]);
    let shown = text(&out);
    assert!(out.status.success(), "{shown}");
    let calls = ws.calls();
    assert_no_forbidden_tool(&calls);
    let deploys: Vec<&String> = calls
        .iter()
        .filter(|c| c.starts_with("sam deploy"))
        .collect();
    assert_eq!(deploys.len(), 2, "{calls:#?}");
    assert!(
        deploys[0].contains(r#"TableDeletionProtection="false""#),
        "{}",
        deploys[0]
    );
    assert!(
        deploys[0].contains(r#"AlarmEmail="oncall@example.com""#),
        "{}",
        deploys[0]
    );
    // The second pass names the protection itself: before, it named no parameter, the SAM
    // CLI kept the first pass's "false", and the production table stayed unprotected.
    assert!(
        deploys[1].contains(r#"TableDeletionProtection="true""#),
        "{}",
        deploys[1]
    );
    assert!(
        deploys[1].contains(r#"AlarmEmail="oncall@example.com""#),
        "{}",
        deploys[1]
    );
    assert_eq!(protection(&ws), "true");
    assert!(
        calls.iter().any(|c| c.starts_with(
            "aws dynamodb describe-table --table-name catalog-stub-table --region eu-west-1"
        )),
        "the deploy reads what is true: {calls:#?}"
    );
    assert!(
        shown.contains(
            "table catalog-stub-table: deletion protection on (checked with describe-table)"
        ),
        "{shown}"
    );
    for call in &calls {
        if call.starts_with("sam ") || call.starts_with("aws ") {
            assert!(call.contains("--region eu-west-1"), "{call}");
        }
    }
    // The key went to SSM, encrypted, and nowhere else: not to the output, not to argv.
    assert_eq!(
        calls.iter().filter(|c| c.starts_with("invoke ")).count(),
        1,
        "{calls:#?}"
    );
    assert!(!shown.contains(SECRET), "the key was printed:\n{shown}");
    for call in &calls {
        assert!(!call.contains(SECRET), "the key was an argument: {call}");
    }
    let stored: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(ws.dir.join("state/ssm/catalog_prod_first-organization")).unwrap(),
    )
    .unwrap();
    assert_eq!(stored["Type"], "SecureString");
    let value: serde_json::Value = serde_json::from_str(stored["Value"].as_str().unwrap()).unwrap();
    assert_eq!(value["org"], "org0001");
    assert!(value["key"].as_str().unwrap().ends_with(SECRET));
    assert!(
        shown.contains("/catalog/prod/first-organization"),
        "{shown}"
    );
    assert!(shown.contains("org0001 (Acme)"), "{shown}");

    // The same command again (CI reruns it): an update, no second organization.
    let out = ws.deploy(&[("STAGE", "prod"), ("ORG", "Acme")]);
    let shown = text(&out);
    assert!(out.status.success(), "{shown}");
    let calls = ws.calls();
    assert_eq!(
        calls.iter().filter(|c| c.starts_with("sam deploy")).count(),
        1
    );
    assert!(
        !calls.iter().any(|c| c.starts_with("invoke ")),
        "{calls:#?}"
    );
    assert!(calls
        .iter()
        .filter(|c| c.starts_with("sam deploy"))
        .all(|c| c.contains(r#"TableDeletionProtection="true""#)));
    assert_eq!(protection(&ws), "true");
    assert!(shown.contains("created by an earlier deploy"), "{shown}");
    assert!(!shown.contains(SECRET));
}

/// The table's deletion protection as the stubbed stack left it.
fn protection(ws: &Workspace) -> String {
    std::fs::read_to_string(ws.dir.join("state/table-protection"))
        .unwrap()
        .trim()
        .to_string()
}

/// A stack updated by an earlier `make deploy` (whose second pass left the table
/// unprotected) is protected by the next one, and a table the stack cannot protect fails
/// the deploy loudly, with the command that fixes it.
#[test]
fn every_deploy_leaves_the_table_protected_or_fails_loudly() {
    let ws = Workspace::new();
    std::fs::write(ws.dir.join("state/stack-status"), "UPDATE_COMPLETE").unwrap();
    std::fs::write(ws.dir.join("state/table-protection"), "false").unwrap();
    let out = ws.deploy(&[("STAGE", "prod")]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(protection(&ws), "true");

    let out = ws.deploy(&[("STAGE", "prod"), ("STUB_PROTECTION_STUCK", "1")]);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(2), "{shown}");
    assert!(
        shown.contains("FAILED: table catalog-stub-table has NO deletion protection after this deploy (DeletionProtectionEnabled=False)"),
        "{shown}"
    );
    assert!(
        shown.contains("aws dynamodb update-table --region eu-west-1 --table-name catalog-stub-table --deletion-protection-enabled"),
        "{shown}"
    );
    assert!(!shown.contains("Catalog is deployed"), "{shown}");
}

#[test]
fn a_failed_first_create_is_removed_before_the_next_create() {
    let ws = Workspace::new();
    std::fs::write(ws.dir.join("state/stack-status"), "ROLLBACK_COMPLETE").unwrap();
    let out = ws.deploy(&[("STAGE", "prod")]);
    assert!(out.status.success(), "{}", text(&out));
    let calls = ws.calls();
    let delete = calls
        .iter()
        .position(|c| c.starts_with("aws cloudformation delete-stack --stack-name catalog-prod"))
        .expect("the rolled-back stack is deleted");
    let create = calls
        .iter()
        .position(|c| c.contains(r#"TableDeletionProtection="false""#))
        .expect("then created again, unprotected");
    assert!(delete < create);
}

#[test]
fn an_organization_whose_key_cannot_be_stored_is_not_shown_nor_created_twice() {
    let ws = Workspace::new();
    let out = ws.deploy(&[("STAGE", "prod"), ("ORG", "Acme"), ("STUB_SSM_FAIL", "1")]);
    let shown = text(&out);
    assert!(!out.status.success());
    assert!(!shown.contains(SECRET), "{shown}");
    assert!(
        shown.contains("org0001"),
        "the operator learns which organization: {shown}"
    );
    ws.calls();
    // The marker stays: the next run creates nothing.
    let out = ws.deploy(&[("STAGE", "prod"), ("ORG", "Acme")]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(!ws.calls().iter().any(|c| c.starts_with("invoke ")));
}

/// A refused deploy: what is wrong, the environment, the edit of the configuration that
/// makes it wrong, and what the refusal says.
type Refusal = (
    &'static str,
    Vec<(&'static str, &'static str)>,
    Box<dyn Fn(&str) -> String>,
    &'static str,
);

#[test]
fn deploy_refuses_before_changing_anything() {
    let ws = Workspace::new();
    let staging_account = "account_id = \"\"\nproduction = false";
    let cases: Vec<Refusal> = vec![
        (
            "another region in AWS_REGION",
            vec![("AWS_REGION", "us-east-1")],
            Box::new(|c: &str| c.to_string()),
            "AWS_REGION is us-east-1, but stage prod deploys to eu-west-1",
        ),
        (
            "another region in AWS_DEFAULT_REGION",
            vec![("AWS_DEFAULT_REGION", "us-east-1")],
            Box::new(|c: &str| c.to_string()),
            "AWS_DEFAULT_REGION is us-east-1",
        ),
        (
            "credentials of another account",
            vec![("STUB_ACCOUNT", "999999999999")],
            Box::new(|c: &str| c.to_string()),
            "the credentials are of account 999999999999, stage prod deploys to 123456789012",
        ),
        (
            "no account pinned",
            vec![],
            Box::new(|c: &str| {
                c.replacen(
                    &format!("account_id = \"{ACCOUNT}\""),
                    "account_id = \"\"",
                    1,
                )
            }),
            "set the 12-digit account",
        ),
        (
            "no region pinned",
            vec![],
            Box::new(|c: &str| c.replacen("region = \"eu-west-1\"\n", "", 2)),
            "set the same region",
        ),
        (
            "production without an alarm recipient",
            vec![],
            Box::new(|c: &str| {
                c.replacen(
                    r#"AlarmEmail=\"oncall@example.com\""#,
                    r#"AlarmEmail=\"\""#,
                    1,
                )
            }),
            "its alarms reach nobody",
        ),
        (
            "a stage that does not state its recipient",
            vec![],
            Box::new(|c: &str| c.replacen(r#" AlarmTopicArn=\"\""#, "", 1)),
            "must state AlarmEmail",
        ),
        (
            "an unknown stage",
            vec![("STAGE", "qa")],
            Box::new(|c: &str| c.to_string()),
            "no [qa.deploy.parameters]",
        ),
    ];
    let pristine = std::fs::read_to_string(ws.dir.join("samconfig.toml")).unwrap();
    assert!(
        pristine.contains(staging_account),
        "staging has no account in the repository"
    );
    for (what, env, edit, refusal) in cases {
        std::fs::write(ws.dir.join("samconfig.toml"), edit(&pristine)).unwrap();
        let mut env = env;
        if !env.iter().any(|(k, _)| *k == "STAGE") {
            env.push(("STAGE", "prod"));
        }
        let out = ws.deploy(&env);
        let shown = text(&out);
        assert!(!out.status.success(), "{what}: deployed\n{shown}");
        assert!(shown.contains(refusal), "{what}: {shown}");
        let calls = ws.calls();
        assert!(
            !calls
                .iter()
                .any(|c| c.starts_with("sam ") || c.contains(" ssm ") || c.starts_with("invoke")),
            "{what}: changed something: {calls:#?}"
        );
        assert_no_forbidden_tool(&calls);
    }
    std::fs::write(ws.dir.join("samconfig.toml"), &pristine).unwrap();
    // The staging stage of the repository: no alarm recipient is fine there, an unpinned
    // account is not.
    let out = ws.deploy(&[("STAGE", "staging")]);
    assert!(text(&out).contains("staging: account_id"), "{}", text(&out));
    // Artifacts that are missing or do not match their manifest.
    std::fs::write(ws.dir.join("dist/functions/products.zip"), "tampered").unwrap();
    let out = ws.deploy(&[("STAGE", "prod")]);
    assert!(!out.status.success());
    assert!(
        text(&out).contains("does not match its manifest"),
        "{}",
        text(&out)
    );
    let out = ws.deploy(&[("STAGE", "prod"), ("DIST", &ws.path("nothing"))]);
    assert!(
        text(&out).contains("run make package first"),
        "{}",
        text(&out)
    );
    assert!(!ws.calls().iter().any(|c| c.starts_with("sam ")));
}

/// `make build` (and so `make package`) installs the build's tools only: a CI runner that
/// builds needs no Java, npm or emulators.
#[test]
fn the_build_installs_no_test_tool() {
    let ws = Workspace::new();
    let bin = ws.dir.join("bin");
    // Real cargo and rustup for this check: only Java, npm and apt are forbidden here.
    for tool in ["cargo", "rustup", "pip", "pip3"] {
        std::fs::remove_file(bin.join(tool)).unwrap();
    }
    let out = ws.run("scripts/tools.sh", &[], &["--build"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_no_forbidden_tool(&ws.calls());
    let build = read("scripts/build.sh");
    assert!(
        build.contains("scripts/tools.sh --build\n"),
        "build.sh installs only the build's tools"
    );
    let package = read("scripts/package.sh");
    assert!(package.contains("scripts/build.sh"));
    let deploy = read("scripts/deploy.sh");
    for step in ["scripts/build.sh", "scripts/tools.sh", "cargo "] {
        assert!(!deploy.contains(step), "deploy.sh runs {step}");
    }
}
