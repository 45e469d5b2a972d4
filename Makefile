# The two commands of the README.
.PHONY: dev console-link test bench build package lint-template build-tools deploy

dev: ## start the whole service locally (API on http://127.0.0.1:9000/v1)
	./scripts/dev.sh

console-link: ## a new single-use sign-in link to the console of the stack make dev runs
	./scripts/console-link.sh

test: ## the full test suite, as CI runs it
	./scripts/test.sh

build: ## every function for arm64 (release, zipped for infra/template.yaml), with zip sizes
	./scripts/build.sh

package: ## build every function and put the zips and the template into DIST (default dist/): what make deploy takes
	DIST="$(DIST)" ./scripts/package.sh

deploy: ## deploy one stage from make package's artifacts, building nothing: make deploy STAGE=prod [DIST=dist] [ORG="Acme"] (infra/samconfig.toml; ORG: the first organization, its key stored in SSM)
	STAGE="$(STAGE)" DIST="$(DIST)" ORG="$(ORG)" ./scripts/deploy.sh

lint-template: ## expand the SAM template offline, then cfn-lint, checkov and the IAM wildcard scan
	./scripts/lint-template.sh

bench: ## ingestion (single, bulk, raw floor, raw transactions) and lists at 10,000 products (optimized build); see docs/performance.md
	./scripts/bench.sh
