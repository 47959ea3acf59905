# cronfence — run `make help` for the targets.

GO      ?= go
PKGS    ?= ./...
BENCH   ?= Store|RoundTrip
BINDIR  ?= bin
CONTAINER ?= podman
IMAGE   ?= cronfence:dev
# staticcheck runs at a pinned version, fetched through the Go module proxy
# (go run caches the build): no install step, the same on every machine.
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
FUZZTIME ?= 30s
# make test fuzzes each target for a number of executions, not a duration:
# Go 1.26's fuzz coordinator can report its own -fuzztime deadline as a
# failure, "context deadline exceeded" with no crasher (golang/go#75804,
# fixed in Go 1.27). A count has no deadline to race.
FUZZCOUNT ?= 10000x

.DEFAULT_GOAL := help

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  \033[36m%-12s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## Build a static cronfence binary (no cgo, paths trimmed, symbol and DWARF tables stripped, version and commit stamped) into $(BINDIR)/.
	CGO_ENABLED=0 $(GO) build -trimpath -buildvcs=auto -ldflags="-s -w" -o $(BINDIR)/cronfence ./cmd/cronfence

.PHONY: image
image: build ## Build the container image (FROM scratch around the static binary; see docs/deploy.md) with $(CONTAINER) as $(IMAGE).
	$(CONTAINER) build -t $(IMAGE) .

.PHONY: run
run: ## Serve the example jobs on the embedded SQLite default (the README's first command).
	$(GO) run ./cmd/cronfence serve --config examples/cronfence.yaml

.PHONY: quickstart
quickstart: ## Three replicas of the library in one process, one SQLite file, each slot once.
	$(GO) run ./examples/quickstart

.PHONY: test
test: test-deps lint ## Lint, then every test: the module's with the race detector, each fuzz target for FUZZCOUNT executions, the short chaos suite and the browser tests.
	$(GO) test -race -count=1 -timeout 25m $(PKGS)
	$(MAKE) fuzz FUZZTIME=$(FUZZCOUNT)
	$(MAKE) e2e browser otel riverbridge

.PHONY: test-deps
test-deps: ## Check for what the tests need (gcc, sqlite3, chromium, PostgreSQL, MariaDB); as root, install it with apt-get; else print the command (CRONFENCE_TEST_DEPS=check: never install).
	./scripts/test-deps

.PHONY: test-short
test-short: ## Run the tests fast: no race detector, database tests skipped when no PostgreSQL answers.
	$(GO) test -short -count=1 $(PKGS)

.PHONY: lint
lint: ## Check formatting (gofmt), go vet, staticcheck (pinned, from the Go module proxy) and that go.mod is tidy.
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) run $(STATICCHECK) $(PKGS)
	$(GO) mod tidy -diff
	cd e2e && $(GO) vet ./... && $(GO) run $(STATICCHECK) ./... && $(GO) mod tidy -diff
	cd otel && $(GO) vet ./... && $(GO) run $(STATICCHECK) ./... && $(GO) mod tidy -diff
	cd riverbridge && $(GO) vet ./... && $(GO) run $(STATICCHECK) ./... && $(GO) mod tidy -diff

.PHONY: bench
bench: ## Run the benchmarks: round trips per store operation and per fire, latencies, memory, a prune of a busy hour.
	$(GO) test -p 1 -run '^$$' -bench '$(BENCH)' -benchtime 5000x ./store/postgres/ ./store/sqlite/ ./store/mysql/
	$(GO) test -p 1 -run '^$$' -bench 'Prune' -benchtime 1x -timeout 30m ./store/postgres/ ./store/sqlite/
	$(GO) test -run '^$$' -bench 'Scheduler' -benchtime 1x .

.PHONY: e2e
e2e: ## Chaos suite, short: real serve processes, faults, checker; PostgreSQL, SQLite, MySQL and a short failover run, three runs at a time (~3 min; CHAOS_SEED=N replays).
	cd e2e && CHAOS_FAILOVER_MODES=async,demoted CHAOS_FAILOVER_DURATION=20s $(GO) test -count=1 -v -timeout 30m -parallel 3 \
		-run 'TestChecker|TestChaosShort|TestChaosCatchesBrokenFencing|TestChaosSQLite|TestChaosMySQL$$|TestChaosFailover' ./chaos/

.PHONY: failover
failover: ## Chaos failover run: primary and streaming standby (async, sync, old primary demoted), the primary failed over mid-run again and again, CHAOS_FAILOVER_DURATION each (default 60s); prints the figures for docs/reliability.md.
	cd e2e && CHAOS_FAILOVER_DURATION=$${CHAOS_FAILOVER_DURATION:-60s} $(GO) test -count=1 -v -timeout 30m -run 'TestChaosFailover' ./chaos/

.PHONY: browser
browser: ## Dashboard tests in headless Chromium (/usr/bin/chromium; make test-deps installs it); screenshots go to $ARTIFACTS or a printed temp dir.
	cd e2e && $(GO) test -count=1 -v -timeout 10m ./browser/

.PHONY: otel
otel: ## Tests of the OpenTelemetry module (otel/, a module of its own): three replicas on SQLite, spans in the SDK's in-memory exporter.
	cd otel && $(GO) test -race -count=1 -timeout 5m ./...

.PHONY: riverbridge
riverbridge: ## Tests of the River bridge (riverbridge/, a module of its own): real River workers on PostgreSQL, the enqueuing replica killed before and after its commit.
	cd riverbridge && $(GO) test -race -count=1 -timeout 5m ./...

.PHONY: soak
soak: ## Chaos soak run for CHAOS_DURATION (default 30m); prints the figures for docs/reliability.md and keeps the run's logs (CHAOS_KEEP=0 removes them).
	cd e2e && CHAOS_KEEP=$${CHAOS_KEEP:-1} CHAOS_DURATION=$${CHAOS_DURATION:-30m} $(GO) test -count=1 -v -timeout 0 -run 'TestChaosSoak' ./chaos/

.PHONY: compare
compare: ## Chaos run of cronfence beside the weaker designs (advisory lock, lock released at end) under the same faults, CHAOS_COMPARE_DURATION each (default 60s); prints the table for docs/reliability.md.
	cd e2e && CHAOS_COMPARE=1 CHAOS_COMPARE_DURATION=$${CHAOS_COMPARE_DURATION:-60s} $(GO) test -count=1 -v -timeout 30m -run 'TestChaosCompareDesigns' ./chaos/

.PHONY: fuzz
fuzz: ## Fuzz each Fuzz target (cron parser, config loader, admin API payloads) for FUZZTIME (a duration, default 30s, or a count such as 10000x).
	@set -e; for f in $$(grep -l '^func Fuzz' $$(find . -name '*_test.go' -not -path './e2e/*' | sort)); do \
		for t in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$f); do \
			echo "== $$(dirname $$f) $$t"; \
			$(GO) test -run '^$$' -fuzz "^$$t\$$" -fuzztime $(FUZZTIME) ./$$(dirname $$f); \
		done; \
	done

.PHONY: cover
cover: ## Run the tests with coverage and print the total.
	$(GO) test -count=1 -coverprofile=cover.out $(PKGS)
	$(GO) tool cover -func=cover.out | tail -1
