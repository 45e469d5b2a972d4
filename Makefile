# The two commands of the README.
.PHONY: dev test bench build-tools

dev: ## start the whole service locally (API on http://127.0.0.1:9000/v1)
	./scripts/dev.sh

test: ## the full test suite, as CI runs it
	./scripts/test.sh

bench: ## list latency at 10,000 products / 30,000 SKUs (optimized build); see docs/performance.md
	./scripts/bench.sh
