# The two commands of the README.
.PHONY: dev test bench build lint-template build-tools deploy

dev: ## start the whole service locally (API on http://127.0.0.1:9000/v1)
	./scripts/dev.sh

test: ## the full test suite, as CI runs it
	./scripts/test.sh

build: ## every function for arm64 (release, zipped for infra/template.yaml), with zip sizes
	./scripts/build.sh

deploy: ## build, package and deploy one stage: make deploy STAGE=prod [ORG="Acme"] (infra/samconfig.toml; prints the API URL and, with ORG, the first key)
	STAGE="$(STAGE)" ORG="$(ORG)" ./scripts/deploy.sh

lint-template: ## expand the SAM template offline, then cfn-lint, checkov and the IAM wildcard scan
	./scripts/lint-template.sh

bench: ## ingestion (single, bulk, raw floor) and lists at 10,000 products (optimized build); see docs/performance.md
	./scripts/bench.sh
