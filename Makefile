# The two commands of the README.
.PHONY: dev console-link test bench build package lint-template build-tools deploy clients generate

dev: ## start the whole service locally (API on http://127.0.0.1:9000/v1)
	./scripts/dev.sh

console-link: ## a new single-use sign-in link to the console of the stack make dev runs
	./scripts/console-link.sh

test: ## the full test suite, as CI runs it
	./scripts/test.sh

build: ## every function for arm64 (release, zipped for infra/template.yaml), with zip sizes
	./scripts/build.sh

package: ## build every function and keep the zips and the template as a release in DIST/releases/<commit>/ (default dist/): what make deploy takes
	DIST="$(DIST)" ./scripts/package.sh

deploy: ## deploy one stage from make package's release of the checked-out version, building nothing: make deploy STAGE=prod [DIST=dist] [RELEASE=<version>] [ORG="Acme"] (infra/samconfig.toml; RELEASE: a kept release instead, the rollback; ORG: the first organization, its key stored in SSM; ALLOW_LOW_CONCURRENCY=1: warn only)
	STAGE="$(STAGE)" DIST="$(DIST)" RELEASE="$(RELEASE)" ORG="$(ORG)" ALLOW_LOW_CONCURRENCY="$(ALLOW_LOW_CONCURRENCY)" ./scripts/deploy.sh

lint-template: ## expand the SAM template offline, then cfn-lint, checkov and the IAM wildcard scan
	./scripts/lint-template.sh

generate: ## rewrite the files derived from the route tables and schemas (OpenAPI document, fallback routes, local router)
	./scripts/generate.sh

clients: ## generate the Python and TypeScript clients from docs/openapi.yaml into target/clients and type-check them
	./scripts/clients.sh

bench: ## ingestion (single, bulk, raw floor, raw transactions) and lists at 10,000 products (optimized build); see docs/performance.md
	./scripts/bench.sh
