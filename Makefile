# hilodb — the two commands are `make run` and `make test`.
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := run

GO      ?= go
BIN     := build/bin
WEB     := build/web
SERVER  := $(BIN)/hilodb-server
ADDR    ?= 127.0.0.1:8080
DATA    ?= ./data
# ORIGINS: browser origins (host:port patterns) `make run` lets connect besides
# its own: a dev server on loopback (Vite's http://localhost:5173, say).
ORIGINS ?= localhost:*,127.0.0.1:*,\[::1\]:*
# ARGS: further hilodb-server flags for `make run`, e.g. ARGS='-tokens shop=secret'
ARGS    ?=
WASMEXEC = $(shell $(GO) env GOROOT)/lib/wasm/go_js_wasm_exec
STATICCHECK_VERSION := v0.8.2
TOOLS   := $(CURDIR)/build/tools

TESTCLUSTER := $(BIN)/testcluster

export HILODB_SERVER_BIN := $(CURDIR)/$(SERVER)
export HILODB_TESTCLUSTER_BIN := $(CURDIR)/$(TESTCLUSTER)

.PHONY: run test build server testcluster wasm web edge deps deps-apt deps-npm \
        test-go test-wasm test-js test-edge test-browser test-compat test-ravendb-official test-cluster bench bench-go bench-bridge bench-browser bench-query profile-browser bench-sync wasm-size \
        bench-edge bench-cluster load fuzz lint clean

## run: build everything and start the sync server with the demo app (ARGS='…' adds server flags; ORIGINS sets the allowed dev-server origins)
run: server web
	@echo "hilodb: open http://$(ADDR)/ (data in $(DATA); Ctrl-C stops)"
	exec $(SERVER) -addr $(ADDR) -data $(DATA) -static $(WEB) -origins '$(ORIGINS)' $(ARGS)

## build: server, browser wasm + js package, demo web root, edge worker
build: server web edge

server:
	@mkdir -p $(BIN)
	$(GO) build -trimpath -o $(SERVER) ./cmd/hilodb-server

# testcluster: etcd and sync servers A, B, C for the npm and edge failover tests
testcluster:
	@mkdir -p $(BIN)
	$(GO) build -trimpath -o $(TESTCLUSTER) ./internal/testcluster

wasm:
	bash js/build.sh

web: wasm
	bash js/build-web.sh $(CURDIR)/$(WEB)

edge:
	bash edge/build.sh

## deps: what the tests need: Debian's Chromium and etcd-server, npm packages from lockfiles
deps: deps-apt deps-npm

deps-apt:
	@if [ ! -x /usr/bin/chromium ]; then \
	  echo "installing Debian's chromium"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null; \
	fi
	@if [ ! -x /usr/bin/etcd ]; then \
	  echo "installing Debian's etcd-server"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq etcd-server >/dev/null; \
	fi

deps-npm:
	cd js && npm ci --no-audit --no-fund
	cd edge && npm ci --no-audit --no-fund
	cd playwright-tests && npm ci --no-audit --no-fund
	cd compat && npm ci --no-audit --no-fund

## test: lint, then every test — Go (-race), core/idgen/wasm under wasm, js in Node, edge in workerd, Chromium
test: deps build lint test-go test-cluster test-wasm test-js test-edge test-browser test-compat
	@echo "make test: all suites passed"

test-go:
	$(GO) vet ./...
	$(GO) test -race -count=1 $$($(GO) list ./... | grep -v '/cluster$$')

## test-cluster: three sync servers over a three-member etcd cluster (Debian's etcd-server), real processes
test-cluster: deps-apt
	$(GO) test -race -count=1 -timeout 10m ./cluster/

test-wasm:
	GOOS=js GOARCH=wasm $(GO) test -count=1 -exec="$(WASMEXEC)" ./core/... ./idgen/... ./client/... ./database/... ./wasm/... ./internal/gcfloor/... ./internal/jsontext/... ./internal/hostrand/...

## test-js: the npm package in Node; its failover test starts etcd and three servers (internal/testcluster)
test-js: deps-apt server testcluster wasm
	cd js && npm test

test-edge: deps-apt server testcluster wasm edge
	cd edge && npm test

test-browser: server web
	cd playwright-tests && npm test

## test-compat: the official ravendb and arangojs clients against the real server
test-compat: server wasm
	cd compat && npm test

## bench: figures for docs/benchmarks.md
bench: bench-go bench-bridge bench-sync

bench-go:
	$(GO) test -run '^$$' -bench . -benchmem ./idgen/... ./core/...

## bench-bridge: one get and one put through the npm package in Node, beside the same calls in the Go core under wasm
bench-bridge: wasm
	GOOS=js GOARCH=wasm $(GO) test -run '^$$' -bench '^Benchmark(Put|Get)$$' -benchmem -exec="$(WASMEXEC)" ./core/
	node bench/js/bridge.mjs 20000

## bench-browser: hilodb's browser store against PouchDB 9 (idb, indexeddb) in Chromium, side by side
bench-browser: deps-apt server web
	cd bench/browser && npm ci --no-audit --no-fund && node run.mjs

## bench-query: queries, indexes and live queries on 100,000 documents in Chromium, against PouchDB 9 + pouchdb-find and RxDB (Dexie), side by side
bench-query: deps-apt server web
	cd bench/query && npm ci --no-audit --no-fund && node run.mjs

## profile-browser: CPU profiles of the store's worker and the page during a scenario (SCENARIO=bulk|sequential|reopen-page|find|live…, N, WARM=1 after a warm-up; INTERVAL µs between samples), Go names included; reopen-page prints the store's start, step by step
profile-browser: deps-apt server web
	cd bench/browser && npm ci --no-audit --no-fund && node profile.mjs

## wasm-size: the browser build's size (raw, brotli) and its code by Go package
wasm-size: wasm
	GOOS=js GOARCH=wasm $(GO) build -trimpath -o build/hilodb-named.wasm ./wasm
	GOOS=js GOARCH=wasm $(GO) list -deps ./wasm > build/wasm-deps.txt
	node bench/wasmsize.mjs build/hilodb-named.wasm build/wasm-deps.txt js/dist/hilodb.wasm 30

## bench-edge: the edge worker (local read, HiLo write) beside a plain JS worker in one workerd; cold start
bench-edge: server edge
	cd edge && node bench/run.mjs 2000

## bench-sync: replicate 10,000 documents with hilodb and with PouchDB 9, side by side
bench-sync:
	bash bench/sync.sh 10000

## bench-cluster: leases, identities and pushes per second through 1, 2 and 3 servers on etcd, beside one server on buntdb
bench-cluster: deps-apt server
	$(GO) run ./bench/cluster -server-bin $(SERVER) -duration 5s

## load: 200 websocket clients for 30 s against the real server (figures in docs/benchmarks.md)
load: server
	$(GO) run ./cmd/hilodb-load -server-bin $(SERVER) -clients 200 -duration 30s

## test-ravendb-official: RavenDB's own client test files (not in this repository; see compat/ravendb-official/README.md) against the real server
test-ravendb-official: server
	@test -d "$(RAVENDB_SUITE)/test" || { echo "set RAVENDB_SUITE to a checkout of ravendb-nodejs-client (compat/ravendb-official/README.md)"; exit 2; }
	cd compat && npx mocha --require ./ravendb-official/register.cjs --require ./ravendb-official/hooks.mjs --extension ts --timeout 20000 \
		$(RAVENDB_SUITE)/test/Ported/HiLoTest.ts $(RAVENDB_SUITE)/test/Ported/ConditionalLoadTest.ts $(RAVENDB_SUITE)/test/Ported/Lazy/LazyTest.ts \
		$(RAVENDB_SUITE)/test/Ported/MailingList/LoadAllStartingWith.ts $(RAVENDB_SUITE)/test/Ported/Queries/RegexQueryTest.ts $(RAVENDB_SUITE)/test/Ported/QueryTest.ts

## fuzz: every fuzz target of the repository in turn, 30-60 s each
fuzz:
	$(GO) test -run '^$$' -fuzz=FuzzHandle -fuzztime=60s ./syncserver/
	$(GO) test -run '^$$' -fuzz=FuzzScanLog -fuzztime=60s ./syncserver/storage/
	$(GO) test -run '^$$' -fuzz=FuzzOpSequence -fuzztime=60s ./syncserver/
	$(GO) test -run '^$$' -fuzz=FuzzHTTPDoors -fuzztime=60s ./syncserver/
	$(GO) test -run '^$$' -fuzz='^FuzzParseClientCerts$$' -fuzztime=30s ./syncserver/
	$(GO) test -run '^$$' -fuzz='^FuzzDecodePush$$' -fuzztime=60s ./internal/wire/
	$(GO) test -run '^$$' -fuzz='^FuzzDecodePushReply$$' -fuzztime=30s ./internal/wire/
	$(GO) test -run '^$$' -fuzz='^FuzzPullReplyAppendJSON$$' -fuzztime=30s ./internal/wire/
	$(GO) test -run '^$$' -fuzz='^FuzzDecodeRecord$$' -fuzztime=30s ./syncserver/storage/
	$(GO) test -run '^$$' -fuzz='^FuzzDecodePullFast$$' -fuzztime=30s ./client/
	$(GO) test -run '^$$' -fuzz=FuzzOpenSnapshot -fuzztime=60s ./database/
	$(GO) test -run '^$$' -fuzz=FuzzOpenLog -fuzztime=60s ./database/
	$(GO) test -run '^$$' -fuzz='^FuzzInsertArray$$' -fuzztime=60s ./core/
	$(GO) test -run '^$$' -fuzz=FuzzPlainRun -fuzztime=60s ./internal/jsontext/
	$(GO) test -run '^$$' -fuzz=FuzzHasLoneSurrogate -fuzztime=30s ./internal/jsontext/
	$(GO) test -run '^$$' -fuzz=FuzzMembers -fuzztime=60s ./internal/jsontext/
	$(GO) test -run '^$$' -fuzz='^FuzzScanBody$$' -fuzztime=60s ./core/
	$(GO) test -run '^$$' -fuzz='^FuzzParseSelector$$' -fuzztime=60s ./core/query/
	$(GO) test -run '^$$' -fuzz='^FuzzParse$$' -fuzztime=30s ./core/query/
	$(GO) test -run '^$$' -fuzz='^FuzzAppendKey$$' -fuzztime=30s ./core/query/
	$(GO) test -run '^$$' -fuzz='^FuzzParse$$' -fuzztime=30s ./core/query/rql/
	$(GO) test -run '^$$' -fuzz='^FuzzParse$$' -fuzztime=60s ./core/query/aql/
	$(GO) test -run '^$$' -fuzz='^FuzzCollectionName$$' -fuzztime=30s ./core/
	$(GO) test -run '^$$' -fuzz='^FuzzParseID$$' -fuzztime=30s ./core/
	$(GO) test -run '^$$' -fuzz='^FuzzPendingMarks$$' -fuzztime=60s ./core/
	$(GO) test -run '^$$' -fuzz='^FuzzSyncMeta$$' -fuzztime=30s ./core/
	$(GO) test -run '^$$' -fuzz='^FuzzValidateKey$$' -fuzztime=30s ./core/
	$(GO) test -run '^$$' -fuzz='^FuzzValidatePrefix$$' -fuzztime=30s ./core/
	$(GO) test -run '^$$' -fuzz='^FuzzIDPrefix$$' -fuzztime=30s ./core/naming/
	$(GO) test -run '^$$' -fuzz='^FuzzGetFields$$' -fuzztime=30s ./core/query/
	$(GO) test -run '^$$' -fuzz='^FuzzDecodeAgainstLoop$$' -fuzztime=30s ./core/revision/
	$(GO) test -run '^$$' -fuzz='^FuzzRev$$' -fuzztime=30s ./core/revision/
	$(GO) test -run '^$$' -fuzz='^FuzzDecode$$' -fuzztime=30s ./core/revision/
	$(GO) test -run '^$$' -fuzz='^FuzzUUID$$' -fuzztime=30s ./core/uuid/
	$(GO) test -run '^$$' -fuzz='^FuzzReadIndexes$$' -fuzztime=60s ./database/
	$(GO) test -run '^$$' -fuzz='^FuzzItemTable$$' -fuzztime=30s ./database/
	$(GO) test -run '^$$' -fuzz='^FuzzArangoView$$' -fuzztime=30s ./edge/
	$(GO) test -run '^$$' -fuzz='^FuzzURLCodec$$' -fuzztime=30s ./edge/
	$(GO) test -run '^$$' -fuzz='^FuzzErrorBody$$' -fuzztime=30s ./edge/
	$(GO) test -run '^$$' -fuzz='^FuzzAppendString$$' -fuzztime=30s ./internal/jsontext/
	$(GO) test -run '^$$' -fuzz='^FuzzParseRangeTime$$' -fuzztime=30s ./internal/wire/
	$(GO) test -run '^$$' -fuzz='^FuzzDepthWithin$$' -fuzztime=30s ./syncserver/
	$(GO) test -run '^$$' -fuzz='^FuzzNormalizeValidDoc$$' -fuzztime=60s ./syncserver/

## lint: gofmt, go vet and staticcheck, for the host and for GOOS=js
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	GOOS=js GOARCH=wasm $(GO) vet ./core/... ./idgen/... ./client/... ./database/... ./wasm/... ./edge/... ./internal/gcfloor/... ./internal/jsontext/... ./internal/hostrand/...
	GOBIN=$(TOOLS) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	$(TOOLS)/staticcheck ./...
	GOOS=js GOARCH=wasm $(TOOLS)/staticcheck ./core/... ./idgen/... ./client/... ./database/... ./wasm/... ./edge/... ./internal/hostrand/...

clean:
	rm -rf build js/dist edge/build
