//! `make package` and `make deploy` (scripts/package.sh, scripts/deploy.sh) run for real,
//! against stand-ins for what needs AWS: `tests/stubs/aws` and `tests/stubs/sam` on PATH
//! answer from a state folder and log every call, and the tools a deploy must never run
//! (cargo, rustup, java, npm, apt-get, pip) are stubs that log `FORBIDDEN`. The expanded
//! template (scripts/expand-template.sh) shows what the stack deploys: every function through
//! its `live` alias, gradually; infra/deployer.json what deploying it may do.

use catalog::domain::destinations::glob;
use catalog_e2e::repo_root;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
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

    /// The folder `make package` keeps a release of `version` in.
    fn release(&self, version: &str) -> PathBuf {
        self.dir.join("dist/releases").join(version)
    }

    /// A git repository of one commit, standing for a checkout of another version (its
    /// GIT_DIR makes the scripts' `git rev-parse HEAD` answer that commit).
    fn checkout(&self, name: &str) -> (String, String) {
        self.checkout_of(name, &[])
    }

    /// [`Self::checkout`] of a commit holding `files` (path, text).
    fn checkout_of(&self, name: &str, files: &[(&str, &str)]) -> (String, String) {
        let dir = self.dir.join(name);
        let git = |args: &[&str]| {
            let out = Command::new("git")
                .args(["-c", "user.name=test", "-c", "user.email=test@example.com"])
                .args([
                    "-c",
                    "commit.gpgsign=false",
                    "-c",
                    "init.defaultBranch=main",
                ])
                .args(args)
                .env_remove("GIT_DIR")
                .env_remove("GIT_WORK_TREE")
                .output()
                .expect("git runs");
            assert!(out.status.success(), "git {args:?}: {}", text(&out));
            String::from_utf8(out.stdout).unwrap().trim().to_string()
        };
        let path = dir.display().to_string();
        git(&["init", "-q", &path]);
        for (file, text) in files {
            std::fs::write(dir.join(file), text).unwrap();
            git(&["-C", &path, "add", file]);
        }
        git(&["-C", &path, "commit", "-q", "--allow-empty", "-m", name]);
        let commit = git(&["-C", &path, "rev-parse", "HEAD"]);
        (dir.join(".git").display().to_string(), commit)
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

/// The checked-out version, as scripts/package.sh and scripts/deploy.sh compute it
/// (scripts/version.sh).
fn head() -> String {
    let out = Command::new("bash")
        .arg(repo_root().join("scripts/version.sh"))
        .current_dir(repo_root())
        .output()
        .expect("bash runs");
    assert!(out.status.success(), "the version: {}", text(&out));
    String::from_utf8(out.stdout).unwrap().trim().to_string()
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
    let dist = ws.release(&head());
    assert_eq!(
        std::fs::read_to_string(dist.join("VERSION")).unwrap(),
        format!("{}\n", head()),
        "the release is addressed by the commit it was built from"
    );
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
    let packaged = std::fs::read_to_string(ws.release(&head()).join("packaged-prod.yaml")).unwrap();
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
                ws.release(&head()).join("packaged-prod.yaml").display()
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
    // Through the live alias, which its ErrorsAlarm watches, as every other invocation.
    assert!(
        calls.iter().any(|c| c.starts_with(
            "aws lambda invoke --region eu-west-1 --function-name catalog-stub-admin --qualifier live "
        )),
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
    std::fs::write(
        ws.release(&head()).join("functions/products.zip"),
        "tampered",
    )
    .unwrap();
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

/// The deploys' `--template-file` and the code they made live (the stubbed `sam deploy`
/// keeps the template it deployed).
fn deployed(ws: &Workspace) -> (Vec<String>, Vec<String>) {
    let packages = ws
        .calls()
        .into_iter()
        .filter(|c| c.starts_with("sam package"))
        .map(|c| {
            let from = c.split("--template-file ").nth(1).unwrap();
            from.split(' ').next().unwrap().to_string()
        })
        .collect();
    let live = std::fs::read_to_string(ws.dir.join("state/deployed.yaml")).unwrap();
    (packages, code_uris(&live))
}

/// Issue 40, review: `make package` of a tree with uncommitted edits labelled its release
/// with the commit, so deploying that commit (or rolling back to it) could run code that was
/// never committed. Its version is now the commit and a digest of the edits.
#[test]
fn a_package_of_uncommitted_edits_is_never_the_commits_release() {
    let ws = Workspace::new();
    let (git, commit) = ws.checkout_of("edited", &[("code.rs", "fn main() {}\n")]);
    let tree = ws.path("edited");
    let env = [("GIT_DIR", git.as_str()), ("GIT_WORK_TREE", tree.as_str())];
    let package = || {
        let out = ws.run(
            "scripts/package.sh",
            &env,
            &["--no-build", "--zips", &ws.path("zips"), &ws.path("dist")],
        );
        assert!(out.status.success(), "{}", text(&out));
        let folder = String::from_utf8(out.stdout).unwrap();
        folder.trim().rsplit('/').next().unwrap().to_string()
    };
    assert_eq!(package(), commit);
    std::fs::write(ws.dir.join("edited/code.rs"), "fn main() { edited() }\n").unwrap();
    let edited = package();
    assert!(
        edited.starts_with(&format!("{commit}-dirty-")) && edited.len() == commit.len() + 19,
        "{edited}"
    );
    std::fs::write(ws.dir.join("edited/code.rs"), "fn main() { other() }\n").unwrap();
    let other = package();
    assert_ne!(other, edited);
    // a deploy of the edited tree takes its own release, never the commit's
    let out = ws.deploy(&[("STAGE", "prod"), env[0], env[1]]);
    assert!(
        text(&out).contains(&format!("release {other} (the checked-out version)")),
        "{}",
        text(&out)
    );
}

/// Issue 40, 2: a rollback deploys the previous release, not whatever dist/ holds. Every
/// release `make package` makes is kept under DIST/releases/<version>; `make deploy`
/// deploys the checked-out version's and refuses when it has none, unless RELEASE names the
/// kept release to deploy instead (the rollback of infra/README.md, "Roll back").
#[test]
fn a_deploy_takes_the_checked_out_release_or_the_one_named_and_refuses_any_other() {
    let ws = Workspace::new();
    let current = head();
    // Release N-1: built from another commit, with other code.
    let (previous_git, previous) = ws.checkout("previous");
    for function in functions() {
        let zip = ws.dir.join("zips-previous").join(&function);
        std::fs::create_dir_all(&zip).unwrap();
        std::fs::write(
            zip.join("bootstrap.zip"),
            format!("previous zip of {function}"),
        )
        .unwrap();
    }
    let out = ws.run(
        "scripts/package.sh",
        &[("GIT_DIR", &previous_git)],
        &[
            "--no-build",
            "--zips",
            &ws.path("zips-previous"),
            &ws.path("dist"),
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("{}\n", ws.release(&previous).display()),
        "package prints the release's folder"
    );
    // Both releases are kept, each under its version.
    let kept: BTreeSet<String> = std::fs::read_dir(ws.dir.join("dist/releases"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(kept, BTreeSet::from([current.clone(), previous.clone()]));
    for version in [&current, &previous] {
        assert_eq!(
            std::fs::read_to_string(ws.release(version).join("VERSION")).unwrap(),
            format!("{version}\n")
        );
    }
    let package_of =
        |version: &str| format!("{}", ws.release(version).join("template.yaml").display());
    let code_of = |version: &str| {
        let out = ws.run(
            "tests/stubs/sam",
            &[],
            &[
                "package",
                "--template-file",
                &package_of(version),
                "--output-template-file",
                &ws.path(&format!("expected-{version}.yaml")),
            ],
        );
        assert!(out.status.success(), "{}", text(&out));
        code_uris(&std::fs::read_to_string(ws.path(&format!("expected-{version}.yaml"))).unwrap())
    };
    let (current_code, previous_code) = (code_of(&current), code_of(&previous));
    assert_ne!(current_code, previous_code);
    ws.calls();

    // The checked-out version's release.
    let out = ws.deploy(&[("STAGE", "prod")]);
    let shown = text(&out);
    assert!(out.status.success(), "{shown}");
    assert!(
        shown.contains(&format!(
            "[deploy] release {current} (the checked-out version), from {}\n",
            ws.release(&current).display()
        )),
        "{shown}"
    );
    assert_eq!(
        deployed(&ws),
        (vec![package_of(&current)], current_code.clone())
    );

    // The rollback: release N-1's kept artifacts, named, while N is checked out.
    let out = ws.deploy(&[("STAGE", "prod"), ("RELEASE", &previous)]);
    let shown = text(&out);
    assert!(out.status.success(), "{shown}");
    assert!(
        shown.contains(&format!(
            "[deploy] release {previous}, NOT the checked-out version {current}: deploying it because RELEASE names it\n"
        )),
        "{shown}"
    );
    assert_eq!(
        deployed(&ws),
        (vec![package_of(&previous)], previous_code.clone())
    );

    // The old runbook, "check out the previous release, then make deploy", now deploys the
    // previous release too (before, it deployed whatever dist/ held: release N again).
    let out = ws.deploy(&[("STAGE", "prod"), ("GIT_DIR", &previous_git)]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(deployed(&ws), (vec![package_of(&previous)], previous_code));

    // Refused before anything runs: a checked-out version without a package, an unknown
    // release, and a release folder that holds another version.
    let (other_git, other) = ws.checkout("other");
    let fake = "0123456789abcdef0123456789abcdef01234567";
    copy_dir(&ws.release(&previous), &ws.release(fake));
    let dist = ws.path("dist");
    let cases: Vec<(Vec<(&str, &str)>, String)> = vec![
        (
            vec![("GIT_DIR", other_git.as_str())],
            format!(
                "[deploy] no package of the checked-out version {other} in {dist}/releases (kept, newest first: {fake} {previous} {current}): run make package first (or fetch the CI job's artifact into {dist}), or name a kept release to deploy: RELEASE=<version>\n"
            ),
        ),
        (
            vec![("RELEASE", "feedbeef")],
            format!(
                "[deploy] no release feedbeef in {dist}/releases (kept, newest first: {fake} {previous} {current}): check it out and run make package, or fetch its CI artifact into {dist}\n"
            ),
        ),
        (
            vec![("RELEASE", "../../etc")],
            format!("[deploy] RELEASE=../../etc is not a version (a folder name of {dist}/releases)\n"),
        ),
        (
            vec![("RELEASE", fake)],
            format!(
                "[deploy] {} holds the package of version {previous}, not {fake}: package {fake} again\n",
                ws.release(fake).display()
            ),
        ),
    ];
    for (env, refusal) in cases {
        let mut env = env;
        env.push(("STAGE", "prod"));
        let out = ws.deploy(&env);
        let shown = text(&out);
        assert_eq!(out.status.code(), Some(2), "{env:?}: {shown}");
        assert!(shown.ends_with(&refusal), "{env:?}: {shown}");
        let calls = ws.calls();
        assert!(calls.is_empty(), "{env:?}: called {calls:#?}");
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &to.join(entry.file_name()));
        } else {
            std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
        }
    }
}

/// A release whose template is `edit` of the package's (its manifest made anew): what a
/// release that reserves concurrency would hold.
fn edit_release(ws: &Workspace, edit: impl Fn(&str) -> String) {
    let release = ws.release(&head());
    let template = release.join("template.yaml");
    let edited = edit(&std::fs::read_to_string(&template).unwrap());
    std::fs::write(&template, edited).unwrap();
    let out = Command::new("bash")
        .arg("-c")
        .arg("sha256sum template.yaml VERSION functions/*.zip > manifest.sha256")
        .current_dir(&release)
        .output()
        .unwrap();
    assert!(out.status.success());
}

/// Issue 40, 3: a first deploy into an account whose Lambda concurrency cannot hold the
/// stack (a new account's quota is 10) is refused before anything changes, naming the
/// numbers and the quota to raise; ALLOW_LOW_CONCURRENCY=1 deploys with a warning.
#[test]
fn a_deploy_refuses_an_account_without_the_concurrency_the_stack_needs() {
    let ws = Workspace::new();
    let account = |limit: u32, unreserved: u32| {
        std::fs::write(
            ws.dir.join("state/account-concurrency"),
            format!("{limit} {unreserved}"),
        )
        .unwrap()
    };
    let status = |s: Option<&str>| match s {
        Some(s) => std::fs::write(ws.dir.join("state/stack-status"), s).unwrap(),
        None => {
            let _ = std::fs::remove_file(ws.dir.join("state/stack-status"));
        }
    };
    let request = |want: u32| {
        format!("[deploy]   request more (Service Quotas, Lambda \"Concurrent executions\"): aws service-quotas request-service-quota-increase --region eu-west-1 --service-code lambda --quota-code L-B99A9384 --desired-value {want}\n")
    };
    let refused = "[deploy] refused before any change; ALLOW_LOW_CONCURRENCY=1 deploys anyway (the queue consumers and the API then share too little, and a reservation beyond what is unreserved fails the deploy)\n";
    // prod: webhook-delivery's MaximumConcurrency (WebhookDeliveryConcurrency=10) and the
    // import worker's 2, and the 100 Lambda keeps unreserved.
    let needs = "catalog-prod needs 112 (0 reserved by its functions + 12 for its queue consumers' MaximumConcurrency + 100 that Lambda keeps unreserved)";

    // A new account: refused, before the first create and before anything is uploaded.
    account(10, 10);
    let out = ws.deploy(&[("STAGE", "prod")]);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(2), "{shown}");
    assert!(
        shown.ends_with(&format!(
            "[deploy] not enough Lambda concurrency: account {ACCOUNT} (eu-west-1) has 10 of its Lambda concurrency available (10 unreserved of 10), {needs}\n{}{refused}",
            request(1000)
        )),
        "{shown}"
    );
    let calls = ws.calls();
    assert!(
        calls.contains(&"aws lambda get-account-settings --region eu-west-1 --output text --query [AccountLimit.ConcurrentExecutions,AccountLimit.UnreservedConcurrentExecutions]".to_string()),
        "{calls:#?}"
    );
    let changed = |calls: &[String]| {
        calls
            .iter()
            .filter(|c| {
                c.starts_with("sam ")
                    || c.contains(" ssm ")
                    || c.contains("delete-stack")
                    || c.starts_with("invoke")
            })
            .cloned()
            .collect::<Vec<_>>()
    };
    assert_eq!(changed(&calls), Vec::<String>::new());
    assert!(!ws.dir.join("state/stack-status").exists());

    // ... and a stack its failed first create left is not even deleted.
    status(Some("ROLLBACK_COMPLETE"));
    let out = ws.deploy(&[("STAGE", "prod")]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert_eq!(changed(&ws.calls()), Vec::<String>::new());
    status(None);

    // The edge: 112 unreserved is enough, 111 is not (on an update too: the stack reserves
    // nothing, so nothing of the pool is its own).
    for stack in [None, Some("UPDATE_COMPLETE")] {
        status(stack);
        account(1000, 111);
        let out = ws.deploy(&[("STAGE", "prod")]);
        let shown = text(&out);
        assert_eq!(out.status.code(), Some(2), "{stack:?}: {shown}");
        assert!(
            shown.ends_with(&format!(
                "[deploy] not enough Lambda concurrency: account {ACCOUNT} (eu-west-1) has 111 of its Lambda concurrency available (111 unreserved of 1000), {needs}\n{}{refused}",
                request(1001)
            )),
            "{stack:?}: {shown}"
        );
        assert_eq!(changed(&ws.calls()), Vec::<String>::new());
        account(1000, 112);
        let out = ws.deploy(&[("STAGE", "prod")]);
        let shown = text(&out);
        assert!(out.status.success(), "{stack:?}: {shown}");
        assert!(
            shown.contains(&format!("[deploy] Lambda concurrency: account {ACCOUNT} (eu-west-1) has 112 of its Lambda concurrency available (112 unreserved of 1000), {needs}\n")),
            "{stack:?}: {shown}"
        );
        ws.calls();
    }
    status(None);

    // Told: a warning, and the deploy goes on.
    account(10, 10);
    let out = ws.deploy(&[("STAGE", "prod"), ("ALLOW_LOW_CONCURRENCY", "1")]);
    let shown = text(&out);
    assert!(out.status.success(), "{shown}");
    assert!(
        shown.contains(&format!(
            "[deploy] not enough Lambda concurrency: account {ACCOUNT} (eu-west-1) has 10 of its Lambda concurrency available (10 unreserved of 10), {needs}\n{}[deploy] WARNING: deploying anyway (ALLOW_LOW_CONCURRENCY=1)\n",
            request(1000)
        )),
        "{shown}"
    );
    assert_eq!(
        ws.calls()
            .iter()
            .filter(|c| c.starts_with("sam deploy"))
            .count(),
        2
    );
    status(None);

    // The stage's own MaximumConcurrency counts (WebhookDeliveryConcurrency, a parameter).
    let pristine = std::fs::read_to_string(ws.dir.join("samconfig.toml")).unwrap();
    std::fs::write(
        ws.dir.join("samconfig.toml"),
        pristine.replacen(
            r#"WebhookDeliveryConcurrency=\"10\""#,
            r#"WebhookDeliveryConcurrency=\"50\""#,
            1,
        ),
    )
    .unwrap();
    account(1000, 151);
    let out = ws.deploy(&[("STAGE", "prod")]);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(2), "{shown}");
    assert!(
        shown.contains("catalog-prod needs 152 (0 reserved by its functions + 52 for its queue consumers' MaximumConcurrency + 100 that Lambda keeps unreserved)"),
        "{shown}"
    );
    std::fs::write(ws.dir.join("samconfig.toml"), &pristine).unwrap();
    ws.calls();

    // A release that reserves concurrency: 5 for every function (Globals) but products,
    // which reserves WebhookDeliveryConcurrency (10; deployed, `sam package` writes it in
    // the long form, "Ref: ..." on a line of its own): 17 × 5 + 10 = 95. A create needs it all unreserved; on an update
    // the functions hold it already.
    edit_release(&ws, |t| {
        t.replacen("    Tracing: Active\n", "    Tracing: Active\n    ReservedConcurrentExecutions: 5\n", 1)
            .replacen(
                "      FunctionName: !Sub catalog-${Stage}-products\n",
                "      FunctionName: !Sub catalog-${Stage}-products\n      ReservedConcurrentExecutions: !Ref WebhookDeliveryConcurrency\n",
                1,
            )
    });
    account(1000, 201);
    let out = ws.deploy(&[("STAGE", "prod")]);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(2), "{shown}");
    assert!(
        shown.contains(&format!("[deploy] not enough Lambda concurrency: account {ACCOUNT} (eu-west-1) has 201 of its Lambda concurrency available (201 unreserved of 1000), catalog-prod needs 207 (95 reserved by its functions + 12 for its queue consumers' MaximumConcurrency + 100 that Lambda keeps unreserved)\n")),
        "{shown}"
    );
    // An update: the deployed stack (the release before, which reserves nothing) holds
    // none of the 95, so they must be unreserved too (before, the release's own 95 were
    // counted as held, and this update went ahead into a failing deploy).
    status(Some("UPDATE_COMPLETE"));
    account(1000, 112);
    let out = ws.deploy(&[("STAGE", "prod")]);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(2), "{shown}");
    assert!(
        shown.contains(&format!("[deploy] not enough Lambda concurrency: account {ACCOUNT} (eu-west-1) has 112 of its Lambda concurrency available (112 unreserved of 1000), catalog-prod needs 207 (95 reserved by its functions + 12 for its queue consumers' MaximumConcurrency + 100 that Lambda keeps unreserved)\n")),
        "{shown}"
    );
    assert_eq!(changed(&ws.calls()), Vec::<String>::new());
    account(1000, 207);
    let out = ws.deploy(&[("STAGE", "prod")]);
    assert!(out.status.success(), "{}", text(&out));
    // Deployed, its functions hold the 95: the next update needs only the rest.
    account(1000, 112);
    let out = ws.deploy(&[("STAGE", "prod")]);
    let shown = text(&out);
    assert!(out.status.success(), "{shown}");
    assert!(
        shown.contains(&format!("[deploy] Lambda concurrency: account {ACCOUNT} (eu-west-1) has 207 of its Lambda concurrency available (112 unreserved of 1000 + 95 its functions already reserve), catalog-prod needs 207 (95 reserved by its functions + 12 for its queue consumers' MaximumConcurrency + 100 that Lambda keeps unreserved)\n")),
        "{shown}"
    );
}

/// ParameterDigest: every parameter's value, so that a changed parameter publishes new
/// function versions (the SAM transform hashes only the template's text, so a new memory
/// size or setting would otherwise reach $LATEST and never the live alias).
#[test]
fn a_changed_parameter_publishes_new_versions_of_the_functions() {
    let ws = Workspace::new();
    let digests = |ws: &Workspace| -> Vec<String> {
        ws.calls()
            .iter()
            .filter(|c| c.starts_with("sam deploy"))
            .map(|c| {
                let d = c
                    .split("ParameterDigest=\"")
                    .nth(1)
                    .expect("a digest")
                    .to_string();
                d[..d.find('"').unwrap()].to_string()
            })
            .collect()
    };
    let out = ws.deploy(&[("STAGE", "prod")]);
    assert!(out.status.success(), "{}", text(&out));
    let first = digests(&ws);
    // Both passes of the first create: the same, though the table's protection differs.
    assert_eq!(first.len(), 2);
    assert_eq!(first[0], first[1]);
    assert!(
        first[0].len() == 64 && first[0].bytes().all(|b| b.is_ascii_hexdigit()),
        "{first:?}"
    );
    let out = ws.deploy(&[("STAGE", "prod")]);
    assert!(out.status.success());
    assert_eq!(digests(&ws), vec![first[0].clone()], "nothing changed");
    let pristine = std::fs::read_to_string(ws.dir.join("samconfig.toml")).unwrap();
    std::fs::write(
        ws.dir.join("samconfig.toml"),
        pristine.replacen(r#"ApiMemorySize=\"512\""#, r#"ApiMemorySize=\"1024\""#, 1),
    )
    .unwrap();
    let out = ws.deploy(&[("STAGE", "prod")]);
    assert!(out.status.success());
    let changed = digests(&ws);
    assert_eq!(changed.len(), 1);
    assert_ne!(changed[0], first[0]);
    // Every function publishes on it, and records it on its versions.
    let template = read("infra/template.yaml");
    assert_eq!(
        template
            .matches("      AutoPublishCodeSha256: !Ref ParameterDigest\n")
            .count(),
        functions().len()
    );
    let versions = of_type("AWS::Lambda::Version");
    assert_eq!(versions.len(), functions().len());
    for (name, v) in versions {
        assert_eq!(
            v["Properties"]["Description"],
            json!({"Ref": "ParameterDigest"}),
            "{name}"
        );
    }
}

/// The template as CloudFormation receives it: `scripts/expand-template.sh` (the SAM
/// transform `make lint-template` lints), run once per test binary into its own file.
fn expanded() -> &'static Value {
    static EXPANDED: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    EXPANDED.get_or_init(|| catalog_e2e::expand_template(&repo_root().join("infra/template.yaml")))
}

fn resources() -> &'static serde_json::Map<String, Value> {
    expanded()["Resources"].as_object().expect("resources")
}

fn of_type(kind: &str) -> Vec<(&'static String, &'static Value)> {
    catalog_e2e::of_type(expanded(), kind)
}

/// Issue 40, 2: every function has a version and a `live` alias; API Gateway and every
/// event source mapping invoke the alias; every deploy shifts each alias by CodeDeploy,
/// 10 % for 5 minutes, and rolls it back when that function's error alarm on the alias
/// fires; CodeDeploy's role may do only that.
#[test]
fn every_function_is_deployed_gradually_through_its_live_alias() {
    let res = resources();
    let lambdas = of_type("AWS::Lambda::Function");
    assert_eq!(lambdas.len(), functions().len());
    // Function -> its alias, which points at a version of that function.
    let mut alias_of: BTreeMap<&str, &str> = BTreeMap::new();
    for (name, alias) in of_type("AWS::Lambda::Alias") {
        let p = &alias["Properties"];
        assert_eq!(p["Name"], "live", "{name}");
        let function = p["FunctionName"]["Ref"]
            .as_str()
            .expect("the alias of a function");
        let version = p["FunctionVersion"]["Fn::GetAtt"][0]
            .as_str()
            .expect("a version");
        assert_eq!(res[version]["Type"], "AWS::Lambda::Version", "{name}");
        assert_eq!(
            res[version]["Properties"]["FunctionName"],
            json!({"Ref": function})
        );
        assert!(
            alias_of.insert(function, name).is_none(),
            "two aliases of {function}"
        );
    }
    let names: BTreeSet<&str> = lambdas.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        alias_of.keys().copied().collect::<BTreeSet<_>>(),
        names,
        "every function has its alias"
    );
    let aliases: BTreeSet<&str> = alias_of.values().copied().collect();

    // The event source mappings invoke the alias.
    let mappings = of_type("AWS::Lambda::EventSourceMapping");
    assert_eq!(mappings.len(), 3);
    for (name, m) in mappings {
        let target = &m["Properties"]["FunctionName"];
        assert!(
            target["Ref"].as_str().is_some_and(|t| aliases.contains(t)),
            "{name} invokes {target}, not an alias"
        );
    }
    // So do API Gateway's integrations, and only the alias may be invoked by it.
    let apis = of_type("AWS::ApiGatewayV2::Api");
    let mut integrations = 0;
    for (path, methods) in apis[0].1["Properties"]["Body"]["paths"]
        .as_object()
        .unwrap()
    {
        for (method, op) in methods.as_object().unwrap() {
            let Some(uri) = op["x-amazon-apigateway-integration"]["uri"]["Fn::Sub"].as_str() else {
                continue;
            };
            let target = uri
                .split("/functions/${")
                .nth(1)
                .and_then(|t| t.strip_suffix("}/invocations"))
                .unwrap_or_else(|| panic!("{method} {path}: {uri}"));
            assert!(aliases.contains(target), "{method} {path} invokes {target}");
            integrations += 1;
        }
    }
    assert!(integrations > 50, "{integrations} integrations");
    for (name, permission) in of_type("AWS::Lambda::Permission") {
        let target = permission["Properties"]["FunctionName"]["Ref"]
            .as_str()
            .unwrap_or("");
        assert!(
            aliases.contains(target),
            "{name} lets API Gateway invoke {target}"
        );
    }

    // Gradual deployment, rolled back by the function's own error alarm on its alias.
    let mut watched = Vec::new();
    for (function, alias) in &alias_of {
        let update = &res[*alias]["UpdatePolicy"]["CodeDeployLambdaAliasUpdate"];
        let group_name = update["DeploymentGroupName"]["Ref"]
            .as_str()
            .unwrap_or_else(|| panic!("{alias} is not shifted by CodeDeploy"));
        assert_eq!(res[group_name]["Type"], "AWS::CodeDeploy::DeploymentGroup");
        let group = &res[group_name]["Properties"];
        assert_eq!(
            group["DeploymentConfigName"],
            json!({"Fn::Sub": ["CodeDeployDefault.Lambda${ConfigName}", {"ConfigName": "Canary10Percent5Minutes"}]}),
            "{function}: 10 % for 5 minutes, then all"
        );
        assert_eq!(
            group["ServiceRoleArn"],
            json!({"Fn::GetAtt": ["DeploymentRole", "Arn"]})
        );
        assert_eq!(group["AutoRollbackConfiguration"]["Enabled"], true);
        assert!(
            group["AutoRollbackConfiguration"]["Events"]
                .as_array()
                .unwrap()
                .contains(&json!("DEPLOYMENT_STOP_ON_ALARM")),
            "{function}"
        );
        assert_eq!(group["AlarmConfiguration"]["Enabled"], true);
        let alarms = group["AlarmConfiguration"]["Alarms"].as_array().unwrap();
        assert!(
            !alarms.is_empty(),
            "{function}: no alarm stops its deployment"
        );
        for alarm in alarms {
            let name = alarm["Name"]["Ref"]
                .as_str()
                .expect("an alarm of the stack");
            let a = &res[name];
            assert_eq!(a["Type"], "AWS::CloudWatch::Alarm");
            let p = &a["Properties"];
            assert_eq!(
                (&p["Namespace"], &p["MetricName"]),
                (&json!("AWS/Lambda"), &json!("Errors")),
                "{name}"
            );
            assert_eq!(
                p["Dimensions"],
                json!([
                    {"Name": "FunctionName", "Value": {"Ref": function}},
                    {"Name": "Resource", "Value": {"Fn::Sub": format!("${{{function}}}:live")}}
                ]),
                "{name} watches {function}'s alias"
            );
            assert_eq!(
                (&p["Threshold"], &p["ComparisonOperator"]),
                (&json!(0), &json!("GreaterThanThreshold")),
                "{name}"
            );
            watched.push(json!({"Fn::GetAtt": [name, "Arn"]}));
        }
    }

    // CodeDeploy's role: reads exactly those alarms, moves exactly those aliases; SAM made
    // none with its managed policy.
    assert!(res.get("CodeDeployServiceRole").is_none());
    let role = &res["DeploymentRole"]["Properties"];
    assert_eq!(
        role["AssumeRolePolicyDocument"]["Statement"],
        json!([{"Effect": "Allow", "Principal": {"Service": "codedeploy.amazonaws.com"}, "Action": "sts:AssumeRole"}])
    );
    assert!(role["ManagedPolicyArns"].is_null());
    let moved: Vec<Value> = alias_of
        .keys()
        .flat_map(|f| {
            [
                json!({"Fn::GetAtt": [f, "Arn"]}),
                json!({"Fn::Sub": format!("${{{f}.Arn}}:live")}),
            ]
        })
        .collect();
    let sorted = |mut v: Vec<Value>| {
        v.sort_by_key(|x| x.to_string());
        v
    };
    let statements = role["Policies"][0]["PolicyDocument"]["Statement"]
        .as_array()
        .unwrap();
    assert_eq!(statements.len(), 2, "{statements:#?}");
    assert_eq!(
        statements[0]["Action"],
        json!(["cloudwatch:DescribeAlarms"])
    );
    assert_eq!(
        sorted(statements[0]["Resource"].as_array().unwrap().clone()),
        sorted(watched)
    );
    assert_eq!(
        statements[1]["Action"],
        json!([
            "lambda:GetAlias",
            "lambda:UpdateAlias",
            "lambda:GetProvisionedConcurrencyConfig"
        ])
    );
    assert_eq!(
        sorted(statements[1]["Resource"].as_array().unwrap().clone()),
        sorted(moved)
    );
}

/// The deployer's policies (infra/deployer.json) as CloudFormation makes them for one
/// stage: (policy, Sid, statement), every `Fn::Sub` filled in.
fn deployer(stage: &str, partition: &str, region: &str) -> Vec<(String, String, Value)> {
    let template: Value = serde_json::from_str(&read("infra/deployer.json")).expect("JSON");
    fn fill(v: &Value, vars: &[(&str, &str)]) -> Value {
        match v {
            Value::Object(o) if o.len() == 1 && o.contains_key("Fn::Sub") => {
                let mut s = o["Fn::Sub"]
                    .as_str()
                    .expect("Fn::Sub of a string")
                    .to_string();
                for (k, val) in vars {
                    s = s.replace(&format!("${{{k}}}"), val);
                }
                assert!(!s.contains("${"), "{s}: an unknown variable");
                Value::String(s)
            }
            Value::Object(o) if o.len() == 1 && o.contains_key("Ref") => {
                let name = o["Ref"].as_str().unwrap();
                let (_, val) = vars.iter().find(|(k, _)| *k == name).expect("a known Ref");
                Value::String(val.to_string())
            }
            Value::Object(o) => {
                Value::Object(o.iter().map(|(k, x)| (k.clone(), fill(x, vars))).collect())
            }
            Value::Array(a) => Value::Array(a.iter().map(|x| fill(x, vars)).collect()),
            other => other.clone(),
        }
    }
    let vars = [
        ("Stage", stage),
        ("AWS::Partition", partition),
        ("AWS::Region", region),
        ("AWS::AccountId", ACCOUNT),
    ];
    let mut out = Vec::new();
    for (name, r) in template["Resources"].as_object().unwrap() {
        assert_eq!(r["Type"], "AWS::IAM::ManagedPolicy", "{name}");
        for st in r["Properties"]["PolicyDocument"]["Statement"]
            .as_array()
            .unwrap()
        {
            let sid = st["Sid"]
                .as_str()
                .expect("every statement says what it is for");
            out.push((name.clone(), sid.to_string(), fill(st, &vars)));
        }
    }
    out
}

fn list(v: &Value) -> Vec<String> {
    match v {
        Value::String(s) => vec![s.clone()],
        Value::Array(a) => a.iter().map(|x| x.as_str().unwrap().to_string()).collect(),
        _ => vec![],
    }
}

/// The Sids of the statements that allow `action` on `resource` (conditions aside).
fn allowing(policy: &[(String, String, Value)], action: &str, resource: &str) -> Vec<String> {
    policy
        .iter()
        .filter(|(_, _, st)| {
            st["Effect"] == "Allow"
                && list(&st["Action"])
                    .iter()
                    .any(|a| a.eq_ignore_ascii_case(action))
                && list(&st["Resource"]).iter().any(|r| glob(r, resource))
        })
        .map(|(_, sid, _)| sid.clone())
        .collect()
}

/// The statements whose resources are not the stage's own (`catalog-<stage>...`), each
/// with why: nothing narrower exists.
const UNSCOPED: &[(&str, &str)] = &[
    ("WhoAmIAndTheAccountsConcurrency", "sts:GetCallerIdentity and lambda:GetAccountSettings take no resource"),
    ("TheSamTransform", "AWS's AWS::Serverless-2016-10-31 transform, which every change set of a SAM template names"),
    ("SamManagedStack", "the SAM CLI's stack aws-sam-cli-managed-default (resolve_s3), one per account and region"),
    ("SamManagedBucket", "that stack's bucket, named by CloudFormation; its objects are scoped to catalog-<stage>/"),
    ("EventSourceMappingsOfTheStagesFunctions", "mappings are created before they have an ARN: the lambda:FunctionArn condition scopes them to the stage's functions"),
    ("EventSourceMappingsRead", "mapping ARNs are generated UUIDs"),
    ("TheCanaryConfiguration", "AWS's predefined deployment configuration CodeDeployDefault.LambdaCanary10Percent5Minutes"),
    ("LogGroupsList", "DescribeLogGroups and DescribeMetricFilters list the region's log groups"),
    ("ApiAccessLogDelivery", "the log delivery of the API's access logs takes no resource (API Gateway's documented permissions)"),
    ("HttpApiAndDomain", "API and domain ids are generated; API Gateway names its resources by path"),
    ("AlarmTopicKeyCreatedWithTheStageTag", "kms:CreateKey takes no resource: the aws:RequestTag/stage condition scopes it"),
    ("AlarmTopicKeyOfTheStage", "key ids are generated: the aws:ResourceTag/stage condition scopes the key's actions"),
    ("CursorKeyGeneration", "secretsmanager:GetRandomPassword takes no resource"),
];

/// Handler permissions of CloudFormation's resource types (their registry schemas, as
/// cfn-lint ships them) that `make deploy` never needs, and why: the template uses no such
/// feature, or the name is no IAM action.
const NOT_NEEDED: &[(&str, &str, &str)] = &[
    (
        "AWS::ApiGatewayV2::DomainName",
        "apigateway:AddCertificateToDomain",
        "mutual TLS: not configured",
    ),
    (
        "AWS::ApiGatewayV2::DomainName",
        "apigateway:RemoveCertificateFromDomain",
        "mutual TLS: not configured",
    ),
    (
        "AWS::ApiGatewayV2::Stage",
        "apigateway:TagResource",
        "no IAM action: tags are PUT and DELETE on /tags",
    ),
    (
        "AWS::ApiGatewayV2::Stage",
        "apigateway:UntagResource",
        "no IAM action: tags are PUT and DELETE on /tags",
    ),
    (
        "AWS::Budgets::Budget",
        "billing:GetBillingViewData",
        "a budget of a billing view: not set",
    ),
    (
        "AWS::CodeDeploy::DeploymentGroup",
        "codedeploy:RegisterOnPremisesInstance",
        "on-premises instances: Lambda deployments only",
    ),
    (
        "AWS::DynamoDB::Table",
        "dynamodb:AssociateTableReplica",
        "replicas: none",
    ),
    (
        "AWS::DynamoDB::Table",
        "dynamodb:CreateTableReplica",
        "replicas: none",
    ),
    (
        "AWS::DynamoDB::Table",
        "dynamodb:BatchWriteItem",
        "items: replicas and imports only",
    ),
    (
        "AWS::DynamoDB::Table",
        "dynamodb:DeleteItem",
        "items: replicas and imports only",
    ),
    (
        "AWS::DynamoDB::Table",
        "dynamodb:GetItem",
        "items: replicas and imports only",
    ),
    (
        "AWS::DynamoDB::Table",
        "dynamodb:PutItem",
        "items: replicas and imports only",
    ),
    (
        "AWS::DynamoDB::Table",
        "dynamodb:Query",
        "items: replicas and imports only",
    ),
    (
        "AWS::DynamoDB::Table",
        "dynamodb:Scan",
        "items: replicas and imports only",
    ),
    (
        "AWS::DynamoDB::Table",
        "dynamodb:UpdateItem",
        "items: replicas and imports only",
    ),
    (
        "AWS::DynamoDB::Table",
        "dynamodb:ImportTable",
        "ImportSourceSpecification: not set",
    ),
    (
        "AWS::DynamoDB::Table",
        "dynamodb:DescribeImport",
        "ImportSourceSpecification: not set",
    ),
    (
        "AWS::DynamoDB::Table",
        "s3:GetObject",
        "ImportSourceSpecification: not set",
    ),
    (
        "AWS::DynamoDB::Table",
        "s3:GetObjectMetadata",
        "ImportSourceSpecification: not set",
    ),
    (
        "AWS::DynamoDB::Table",
        "s3:ListBucket",
        "ImportSourceSpecification: not set",
    ),
    (
        "AWS::DynamoDB::Table",
        "logs:*",
        "ImportSourceSpecification's logs: not set",
    ),
    (
        "AWS::DynamoDB::Table",
        "dynamodb:PutResourcePolicy",
        "ResourcePolicy: not set",
    ),
    (
        "AWS::DynamoDB::Table",
        "dynamodb:DeleteResourcePolicy",
        "ResourcePolicy: not set",
    ),
    (
        "AWS::DynamoDB::Table",
        "dynamodb:UpdateContributorInsights",
        "ContributorInsightsSpecification: not set",
    ),
    (
        "AWS::DynamoDB::Table",
        "dynamodb:EnableKinesisStreamingDestination",
        "KinesisStreamSpecification: not set",
    ),
    (
        "AWS::DynamoDB::Table",
        "dynamodb:DisableKinesisStreamingDestination",
        "KinesisStreamSpecification: not set",
    ),
    (
        "AWS::DynamoDB::Table",
        "dynamodb:UpdateKinesisStreamingDestination",
        "KinesisStreamSpecification: not set",
    ),
    (
        "AWS::DynamoDB::Table",
        "kinesis:*",
        "KinesisStreamSpecification: not set",
    ),
    (
        "AWS::DynamoDB::Table",
        "kms:*",
        "SSE with DynamoDB's AWS-managed key, whose key policy grants DynamoDB's callers",
    ),
    (
        "AWS::DynamoDB::Table",
        "iam:CreateServiceLinkedRole",
        "replicas and auto scaling: none",
    ),
    (
        "AWS::IAM::Role",
        "iam:AttachRolePolicy",
        "managed policies: none (the wildcard scan refuses them)",
    ),
    (
        "AWS::IAM::Role",
        "iam:DetachRolePolicy",
        "managed policies: none (the wildcard scan refuses them)",
    ),
    (
        "AWS::Lambda::Alias",
        "lambda:PutProvisionedConcurrencyConfig",
        "provisioned concurrency: none",
    ),
    (
        "AWS::Lambda::Alias",
        "lambda:DeleteProvisionedConcurrencyConfig",
        "provisioned concurrency: none",
    ),
    (
        "AWS::Lambda::EventSourceMapping",
        "kms:*",
        "KmsKeyArn (filter criteria encryption): not set",
    ),
    (
        "AWS::Lambda::Function",
        "ec2:*",
        "VpcConfig: none (CKV_AWS_117)",
    ),
    (
        "AWS::Lambda::Function",
        "elasticfilesystem:*",
        "FileSystemConfigs: none",
    ),
    ("AWS::Lambda::Function", "s3files:*", "file systems: none"),
    (
        "AWS::Lambda::Function",
        "kms:*",
        "KmsKeyArn: none (Lambda's AWS-managed key, CKV_AWS_173)",
    ),
    (
        "AWS::Lambda::Function",
        "lambda:GetCodeSigningConfig",
        "CodeSigningConfigArn: none",
    ),
    (
        "AWS::Lambda::Function",
        "lambda:PutFunctionCodeSigningConfig",
        "CodeSigningConfigArn: none",
    ),
    (
        "AWS::Lambda::Function",
        "lambda:DeleteFunctionCodeSigningConfig",
        "CodeSigningConfigArn: none",
    ),
    (
        "AWS::Lambda::Function",
        "lambda:GetLayerVersion",
        "Layers: none",
    ),
    (
        "AWS::Lambda::Function",
        "lambda:PutRuntimeManagementConfig",
        "RuntimeManagementConfig: not set",
    ),
    (
        "AWS::Lambda::Function",
        "lambda:PutFunctionScalingConfig",
        "capacity providers: none",
    ),
    (
        "AWS::Lambda::Function",
        "lambda:PassCapacityProvider",
        "capacity providers: none",
    ),
    (
        "AWS::Lambda::Function",
        "lambda:AssociateRuntimeAlias",
        "runtime aliases: none",
    ),
    (
        "AWS::Lambda::Version",
        "lambda:PutProvisionedConcurrencyConfig",
        "provisioned concurrency: none",
    ),
    (
        "AWS::Lambda::Version",
        "lambda:PutRuntimeManagementConfig",
        "RuntimeManagementConfig: not set",
    ),
    (
        "AWS::Lambda::Version",
        "lambda:PutFunctionScalingConfig",
        "capacity providers: none",
    ),
    (
        "AWS::Logs::LogGroup",
        "logs:AssociateKmsKey",
        "KmsKeyId: none (CKV_AWS_158)",
    ),
    (
        "AWS::Logs::LogGroup",
        "logs:DisassociateKmsKey",
        "KmsKeyId: none (CKV_AWS_158)",
    ),
    (
        "AWS::Logs::LogGroup",
        "logs:PutDataProtectionPolicy",
        "DataProtectionPolicy: not set",
    ),
    (
        "AWS::Logs::LogGroup",
        "logs:DeleteDataProtectionPolicy",
        "DataProtectionPolicy: not set",
    ),
    (
        "AWS::Logs::LogGroup",
        "logs:PutIndexPolicy",
        "FieldIndexPolicies: not set",
    ),
    (
        "AWS::Logs::LogGroup",
        "logs:DeleteIndexPolicy",
        "FieldIndexPolicies: not set",
    ),
    (
        "AWS::Logs::LogGroup",
        "logs:DeleteResourcePolicy",
        "ResourcePolicyDocument: not set",
    ),
    (
        "AWS::Logs::LogGroup",
        "logs:PutBearerTokenAuthentication",
        "bearer token authentication: not set",
    ),
    (
        "AWS::Logs::LogGroup",
        "logs:PutLogGroupDeletionProtection",
        "DeletionProtectionEnabled: not set",
    ),
    (
        "AWS::Logs::LogGroup",
        "firehose:TagDeliveryStream",
        "deliveries to Firehose: none",
    ),
    (
        "AWS::Logs::LogGroup",
        "s3:REST.PUT.OBJECT",
        "no IAM action (deliveries to S3: none)",
    ),
    (
        "AWS::S3::Bucket",
        "s3:DeleteBucketEncryption",
        "no IAM action: s3:PutEncryptionConfiguration",
    ),
    (
        "AWS::S3::Bucket",
        "s3:DeleteBucketCors",
        "no IAM action: s3:PutBucketCORS",
    ),
    (
        "AWS::S3::Bucket",
        "s3:DeleteBucketLifecycle",
        "no IAM action: s3:PutLifecycleConfiguration",
    ),
    (
        "AWS::S3::Bucket",
        "s3:DeleteBucketAnalyticsConfiguration",
        "no IAM action (analytics: none)",
    ),
    (
        "AWS::S3::Bucket",
        "s3:DeleteBucketMetricsConfiguration",
        "no IAM action (metrics: none)",
    ),
    (
        "AWS::S3::Bucket",
        "s3:DeleteBucketReplication",
        "no IAM action (replication: none)",
    ),
    (
        "AWS::S3::Bucket",
        "s3:PutAnalyticsConfiguration",
        "AnalyticsConfigurations: none",
    ),
    (
        "AWS::S3::Bucket",
        "s3:PutMetricsConfiguration",
        "MetricsConfigurations: none",
    ),
    (
        "AWS::S3::Bucket",
        "s3:PutInventoryConfiguration",
        "InventoryConfigurations: none",
    ),
    (
        "AWS::S3::Bucket",
        "s3:PutIntelligentTieringConfiguration",
        "IntelligentTieringConfigurations: none",
    ),
    (
        "AWS::S3::Bucket",
        "s3:PutBucketReplication",
        "ReplicationConfiguration: none",
    ),
    (
        "AWS::S3::Bucket",
        "s3:PutReplicationConfiguration",
        "ReplicationConfiguration: none",
    ),
    (
        "AWS::S3::Bucket",
        "s3:PutBucketWebsite",
        "WebsiteConfiguration: none",
    ),
    (
        "AWS::S3::Bucket",
        "s3:DeleteBucketWebsite",
        "WebsiteConfiguration: none",
    ),
    (
        "AWS::S3::Bucket",
        "s3:PutAccelerateConfiguration",
        "AccelerateConfiguration: none",
    ),
    (
        "AWS::S3::Bucket",
        "s3:PutBucketLogging",
        "LoggingConfiguration: none (CKV_AWS_18)",
    ),
    (
        "AWS::S3::Bucket",
        "s3:PutBucketVersioning",
        "VersioningConfiguration: none (CKV_AWS_21)",
    ),
    (
        "AWS::S3::Bucket",
        "s3:PutBucketObjectLockConfiguration",
        "ObjectLockConfiguration: none",
    ),
    (
        "AWS::S3::Bucket",
        "s3:PutObjectLockConfiguration",
        "ObjectLockConfiguration: none",
    ),
    (
        "AWS::S3::Bucket",
        "s3:PutBucketAcl",
        "ACLs are disabled (BucketOwnerEnforced)",
    ),
    (
        "AWS::S3::Bucket",
        "s3:PutObjectAcl",
        "ACLs are disabled (BucketOwnerEnforced)",
    ),
    (
        "AWS::S3::Bucket",
        "s3:PutBucketAbac",
        "attribute-based access: not set",
    ),
    (
        "AWS::S3::Bucket",
        "s3:DeleteObject",
        "objects: CloudFormation deletes only an empty bucket",
    ),
    (
        "AWS::S3::Bucket",
        "s3:*MetadataTableConfiguration",
        "MetadataTableConfiguration: none",
    ),
    (
        "AWS::S3::Bucket",
        "s3:*Metadata*TableConfiguration",
        "MetadataConfiguration: none",
    ),
    (
        "AWS::S3::Bucket",
        "s3tables:*",
        "MetadataTableConfiguration: none",
    ),
    ("AWS::S3::Bucket", "iam:PassRole", "replication roles: none"),
    (
        "AWS::SNS::Topic",
        "sns:PutDataProtectionPolicy",
        "DataProtectionPolicy: not set",
    ),
    (
        "AWS::SNS::Topic",
        "iam:*",
        "delivery status logging roles: none",
    ),
    (
        "AWS::SNS::Subscription",
        "iam:*",
        "subscription roles (Firehose): none",
    ),
    (
        "AWS::SecretsManager::Secret",
        "secretsmanager:ReplicateSecretToRegions",
        "ReplicaRegions: none",
    ),
    (
        "AWS::SecretsManager::Secret",
        "secretsmanager:RemoveRegionsFromReplication",
        "ReplicaRegions: none",
    ),
];

/// A resource of each type of the template, as the stage `prod` names it: what the type's
/// own service's permissions must reach (and the staging stage's must not).
fn sample(kind: &str, action: &str) -> Option<String> {
    let (r, a) = ("eu-west-1", ACCOUNT);
    if action == "codedeploy:GetDeploymentConfig" {
        return Some(format!("arn:aws:codedeploy:{r}:{a}:deploymentconfig:CodeDeployDefault.LambdaCanary10Percent5Minutes"));
    }
    let arn = match kind {
        "AWS::ApiGatewayV2::Api" => format!("arn:aws:apigateway:{r}::/apis/a1b2c3d4e5"),
        "AWS::ApiGatewayV2::Stage" => format!("arn:aws:apigateway:{r}::/apis/a1b2c3d4e5/stages/$default"),
        "AWS::ApiGatewayV2::DomainName" => format!("arn:aws:apigateway:{r}::/domainnames/api.example.com"),
        "AWS::ApiGatewayV2::ApiMapping" => format!("arn:aws:apigateway:{r}::/domainnames/api.example.com/apimappings/x1y2z3"),
        "AWS::Budgets::Budget" => format!("arn:aws:budgets::{a}:budget/catalog-prod-monthly"),
        "AWS::CloudWatch::Alarm" => format!("arn:aws:cloudwatch:{r}:{a}:alarm:catalog-prod-ProductsErrorsAlarm-1A2B3C4D5E6F"),
        "AWS::CodeDeploy::Application" => format!("arn:aws:codedeploy:{r}:{a}:application:catalog-prod-ServerlessDeploymentApplication-1A2B3C4D5E6F"),
        "AWS::CodeDeploy::DeploymentGroup" => format!("arn:aws:codedeploy:{r}:{a}:deploymentgroup:catalog-prod-ServerlessDeploymentApplication-1A2B3C4D5E6F/catalog-prod-ProductsFunctionDeploymentGroup-7G8H9I"),
        "AWS::DynamoDB::Table" => format!("arn:aws:dynamodb:{r}:{a}:table/catalog-prod"),
        "AWS::Events::Rule" => format!("arn:aws:events:{r}:{a}:rule/catalog-prod-checkpoint-builder"),
        "AWS::IAM::Role" => format!("arn:aws:iam::{a}:role/catalog-prod-ProductsRole-1A2B3C4D5E6F"),
        "AWS::KMS::Alias" => format!("arn:aws:kms:{r}:{a}:alias/catalog-prod-alarms"),
        "AWS::KMS::Key" => format!("arn:aws:kms:{r}:{a}:key/1234abcd-12ab-34cd-56ef-1234567890ab"),
        "AWS::Lambda::Alias" | "AWS::Lambda::Permission" => format!("arn:aws:lambda:{r}:{a}:function:catalog-prod-products:live"),
        "AWS::Lambda::Version" => format!("arn:aws:lambda:{r}:{a}:function:catalog-prod-products:7"),
        "AWS::Lambda::Function" => format!("arn:aws:lambda:{r}:{a}:function:catalog-prod-products"),
        "AWS::Lambda::EventSourceMapping" => format!("arn:aws:lambda:{r}:{a}:event-source-mapping:0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d"),
        "AWS::Logs::LogGroup" => format!("arn:aws:logs:{r}:{a}:log-group:/aws/lambda/catalog-prod-products"),
        "AWS::Logs::MetricFilter" => format!("arn:aws:logs:{r}:{a}:log-group:/aws/http-api/catalog-prod"),
        "AWS::S3::Bucket" | "AWS::S3::BucketPolicy" => format!("arn:aws:s3:::catalog-prod-imports-{a}-{r}"),
        "AWS::SNS::Topic" => format!("arn:aws:sns:{r}:{a}:catalog-prod-alarms"),
        "AWS::SNS::Subscription" => format!("arn:aws:sns:{r}:{a}:catalog-prod-alarms:0a1b2c3d"),
        "AWS::SQS::Queue" | "AWS::SQS::QueuePolicy" => format!("arn:aws:sqs:{r}:{a}:catalog-prod-deliveries"),
        "AWS::SecretsManager::Secret" => format!("arn:aws:secretsmanager:{r}:{a}:secret:catalog-prod-cursor-key-AbCdEf"),
        _ => return None,
    };
    // The type's own service only; another service's permission (iam:PassRole of a
    // function, s3:GetObject of its code) is checked by action.
    let service = kind.split("::").nth(1).unwrap().to_ascii_lowercase();
    let own = action.split(':').next().unwrap();
    (own == service || (own == "apigateway" && service == "apigatewayv2")).then_some(arn)
}

/// The calls the SAM CLI makes for `sam package` (resolve_s3: its managed stack and bucket,
/// the upload) and `sam deploy` (a change set of the stage's stack, through S3).
fn sam_calls() -> Vec<(String, String)> {
    let (r, a) = ("eu-west-1", ACCOUNT);
    let stack = format!("arn:aws:cloudformation:{r}:{a}:stack/catalog-prod/0a1b2c3d");
    let managed =
        format!("arn:aws:cloudformation:{r}:{a}:stack/aws-sam-cli-managed-default/0a1b2c3d");
    let bucket =
        "arn:aws:s3:::aws-sam-cli-managed-default-samclisourcebucket-1a2b3c4d5e6f".to_string();
    let object = format!("{bucket}/catalog-prod/0123456789abcdef0123456789abcdef");
    let transform = format!("arn:aws:cloudformation:{r}:aws:transform/Serverless-2016-10-31");
    let mut calls = vec![
        ("cloudformation:DescribeStacks", managed.clone()),
        ("cloudformation:CreateChangeSet", managed.clone()),
        ("cloudformation:DescribeChangeSet", managed.clone()),
        ("cloudformation:ExecuteChangeSet", managed),
        ("s3:CreateBucket", bucket.clone()),
        ("s3:PutBucketPolicy", bucket.clone()),
        ("s3:PutBucketVersioning", bucket.clone()),
        ("s3:ListBucket", bucket.clone()),
        ("s3:GetBucketLocation", bucket),
        ("s3:PutObject", object.clone()),
        ("s3:GetObject", object),
        ("cloudformation:CreateChangeSet", transform),
    ];
    for action in [
        "cloudformation:DescribeStacks",
        "cloudformation:GetTemplateSummary",
        "cloudformation:CreateChangeSet",
        "cloudformation:DescribeChangeSet",
        "cloudformation:ExecuteChangeSet",
        "cloudformation:DescribeStackEvents",
    ] {
        calls.push((action, stack.clone()));
    }
    calls.into_iter().map(|(a, r)| (a.to_string(), r)).collect()
}

/// Issue 40, 3: infra/deployer.json, the deploying identity's two managed policies per
/// stage, allows what `make deploy` does: every call of scripts/deploy.sh and of the SAM CLI,
/// and, for every resource type of the expanded template, what CloudFormation's handler of
/// that type needs (its registry schema's permissions, minus NOT_NEEDED); on the stage's
/// resources, not another stage's (UNSCOPED aside), within IAM's size limit.
#[test]
fn the_deployer_policy_allows_what_make_deploy_does_on_the_stages_resources_only() {
    let prod = deployer("prod", "aws", "eu-west-1");
    let other = |arn: &str| {
        arn.replace("catalog-prod", "catalog-staging")
            .replace("/catalog/prod/", "/catalog/staging/")
    };
    let unscoped: BTreeMap<&str, &str> = UNSCOPED.iter().copied().collect();
    // Checks one call: allowed on the prod resource, and on staging's only by an unscoped
    // statement.
    let check = |what: &str, action: &str, arn: &str| {
        let by = allowing(&prod, action, arn);
        assert!(!by.is_empty(), "{what}: {action} on {arn} is not allowed");
        if arn != "*" {
            for sid in allowing(&prod, action, &other(arn)) {
                assert!(
                    unscoped.contains_key(sid.as_str()),
                    "{what}: prod's deployer may {action} on staging's {} ({sid})",
                    other(arn)
                );
            }
        }
    };

    // The deploy script's own calls, every one of them.
    let script = read("scripts/deploy.sh");
    let mut seen = BTreeSet::new();
    for call in script.split("\"$AWS\" ").skip(1) {
        let mut words = call.split_whitespace();
        let (service, command) = (words.next().unwrap(), words.next().unwrap());
        let (r, a) = ("eu-west-1", ACCOUNT);
        let (action, arn) = match (service, command) {
            ("sts", "get-caller-identity") => ("sts:GetCallerIdentity", "*".to_string()),
            ("lambda", "get-account-settings") => ("lambda:GetAccountSettings", "*".to_string()),
            ("cloudformation", "describe-stacks" | "wait") => (
                "cloudformation:DescribeStacks",
                format!("arn:aws:cloudformation:{r}:{a}:stack/catalog-prod/0a1b2c3d"),
            ),
            ("cloudformation", "get-template") => (
                "cloudformation:GetTemplate",
                format!("arn:aws:cloudformation:{r}:{a}:stack/catalog-prod/0a1b2c3d"),
            ),
            ("cloudformation", "delete-stack") => (
                "cloudformation:DeleteStack",
                format!("arn:aws:cloudformation:{r}:{a}:stack/catalog-prod/0a1b2c3d"),
            ),
            ("dynamodb", "describe-table") => ("dynamodb:DescribeTable", format!("arn:aws:dynamodb:{r}:{a}:table/catalog-prod")),
            ("ssm", "put-parameter") => (
                "ssm:PutParameter",
                format!("arn:aws:ssm:{r}:{a}:parameter/catalog/prod/first-organization"),
            ),
            ("ssm", "delete-parameter") => (
                "ssm:DeleteParameter",
                format!("arn:aws:ssm:{r}:{a}:parameter/catalog/prod/first-organization"),
            ),
            ("lambda", "invoke") => ("lambda:InvokeFunction", format!("arn:aws:lambda:{r}:{a}:function:catalog-prod-admin:live")),
            _ => panic!("scripts/deploy.sh calls aws {service} {command}: allow it in infra/deployer.json and name it here"),
        };
        check(&format!("deploy.sh: aws {service} {command}"), action, &arn);
        seen.insert(action);
    }
    assert!(
        seen.contains("lambda:GetAccountSettings") && seen.contains("lambda:InvokeFunction"),
        "{seen:?}"
    );
    for (action, arn) in sam_calls() {
        check("the SAM CLI", &action, &arn);
    }

    // What CloudFormation's handlers of the template's resource types need.
    let schemas = std::fs::read_dir(repo_root().join(".tools/lint/lib"))
        .expect("scripts/expand-template.sh installed the linters")
        .map(|e| e.unwrap().path().join("site-packages/cfnlint/data/schemas"))
        .find(|p| p.is_dir())
        .expect("cfn-lint's resource schemas");
    let providers: Value = serde_json::from_str(
        &std::fs::read_to_string(schemas.join("providers/us-east-1.json")).unwrap(),
    )
    .unwrap();
    let kinds: BTreeSet<&str> = resources()
        .values()
        .map(|r| r["Type"].as_str().unwrap())
        .collect();
    let mut excluded_used = BTreeSet::new();
    for kind in &kinds {
        let file = providers[*kind]
            .as_str()
            .unwrap_or_else(|| panic!("no schema of {kind}"));
        let schema: Value = serde_json::from_str(
            &std::fs::read_to_string(schemas.join(format!("resources/{file}.json"))).unwrap(),
        )
        .unwrap();
        let mut needed = BTreeSet::new();
        for handler in ["create", "update", "delete"] {
            for p in schema["handlers"][handler]["permissions"]
                .as_array()
                .into_iter()
                .flatten()
            {
                needed.insert(p.as_str().unwrap().to_string());
            }
        }
        assert!(
            !needed.is_empty(),
            "{kind}: the schema names no permissions"
        );
        for action in needed {
            if let Some(i) = NOT_NEEDED.iter().position(|(k, a, _)| {
                k == kind && glob(&a.to_ascii_lowercase(), &action.to_ascii_lowercase())
            }) {
                assert!(
                    prod.iter()
                        .all(|(_, _, st)| !list(&st["Action"]).iter().any(|a| a
                            .eq_ignore_ascii_case(&action)
                            && sample(kind, &action).is_some_and(|s| list(&st["Resource"])
                                .iter()
                                .any(|r| glob(r, &s))))),
                    "{kind}: {action} is allowed though not needed ({})",
                    NOT_NEEDED[i].2
                );
                excluded_used.insert(i);
                continue;
            }
            match sample(kind, &action) {
                Some(arn) => check(kind, &action, &arn),
                None => assert!(
                    prod.iter().any(|(_, _, st)| list(&st["Action"]).iter().any(|a| a.eq_ignore_ascii_case(&action))),
                    "{kind}: CloudFormation's handler needs {action}: allow it in infra/deployer.json, or say in NOT_NEEDED why the template never does"
                ),
            }
        }
    }
    for (i, (kind, action, _)) in NOT_NEEDED.iter().enumerate() {
        assert!(
            excluded_used.contains(&i) || !kinds.contains(kind),
            "NOT_NEEDED names {action} of {kind}, which its handler does not need"
        );
    }

    // Least privilege: no action wildcard, no Deny to reason about, and every statement
    // on the stage's resources (catalog-<stage>, /catalog/<stage>/) or said why not.
    let mut unscoped_seen = BTreeSet::new();
    for (_, sid, st) in &prod {
        assert_eq!(st["Effect"], "Allow", "{sid}");
        for a in list(&st["Action"]) {
            assert!(!a.contains('*') && !a.contains('?'), "{sid}: {a}");
        }
        let scoped = list(&st["Resource"])
            .iter()
            .all(|r| r.contains("catalog-prod") || r.contains("/catalog/prod/"));
        if !scoped {
            assert!(
                unscoped.contains_key(sid.as_str()),
                "{sid} reaches beyond the stage: {st}"
            );
            unscoped_seen.insert(sid.as_str());
        }
        if list(&st["Resource"]).contains(&"*".to_string()) {
            let condition = st["Condition"].to_string();
            assert!(
                condition.contains("catalog-prod")
                    || condition.contains(":\"prod\"")
                    || sid == "WhoAmIAndTheAccountsConcurrency"
                    || sid == "ApiAccessLogDelivery"
                    || sid == "CursorKeyGeneration",
                "{sid}: Resource * without a condition naming the stage"
            );
        }
    }
    assert_eq!(
        unscoped_seen,
        unscoped.keys().copied().collect(),
        "UNSCOPED names statements that are scoped"
    );

    // Each policy within IAM's 6,144 characters (whitespace aside) for the longest stage,
    // partition and region.
    let longest = deployer("abcdefghijklmnop", "aws-us-gov", "ap-southeast-5");
    let mut policies: BTreeMap<&str, Vec<&Value>> = BTreeMap::new();
    for (policy, _, st) in &longest {
        policies.entry(policy).or_default().push(st);
    }
    assert_eq!(policies.len(), 2);
    for (policy, statements) in policies {
        let doc = json!({"Version": "2012-10-17", "Statement": statements}).to_string();
        let size = doc.chars().filter(|c| !c.is_whitespace()).count();
        assert!(size <= 6144, "{policy}: {size} characters");
    }

    // And CloudFormation and IAM accept it: cfn-lint validates the template and every
    // action's name (zero errors and warnings).
    let lint = Command::new(repo_root().join(".tools/lint/bin/cfn-lint"))
        .args(["--non-zero-exit-code", "warning", "--"])
        .arg(repo_root().join("infra/deployer.json"))
        .output()
        .expect("cfn-lint runs");
    assert!(lint.status.success(), "{}", text(&lint));
}
