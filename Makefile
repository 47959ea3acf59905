# cronfence — run `make help` for the targets.

GO      ?= go
PKGS    ?= ./...
BENCH   ?= .

.DEFAULT_GOAL := help

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  \033[36m%-12s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: run
run: ## Serve the example jobs on the embedded SQLite default (the README's first command).
	$(GO) run ./cmd/cronfence serve --config examples/cronfence.yaml

.PHONY: quickstart
quickstart: ## Three replicas of the library in one process, one SQLite file, each slot once.
	$(GO) run ./examples/quickstart

.PHONY: test
test: lint ## Lint, then run every test with the race detector (needs PostgreSQL; see docs/development.md).
	$(GO) test -race -count=1 $(PKGS)

.PHONY: test-short
test-short: ## Run the tests fast: no race detector, database tests skipped when no PostgreSQL answers.
	$(GO) test -short -count=1 $(PKGS)

.PHONY: lint
lint: ## Check formatting (gofmt), go vet and that go.mod is tidy.
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) mod tidy -diff

.PHONY: bench
bench: ## Run the benchmarks: round trips per store operation and per fire, latencies, memory.
	$(GO) test -p 1 -run '^$$' -bench '$(BENCH)' -benchtime 5000x ./store/postgres/ ./store/sqlite/
	$(GO) test -run '^$$' -bench 'Scheduler' -benchtime 1x .

.PHONY: cover
cover: ## Run the tests with coverage and print the total.
	$(GO) test -count=1 -coverprofile=cover.out $(PKGS)
	$(GO) tool cover -func=cover.out | tail -1
