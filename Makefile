# Every target that needs the environment builds it first, so each works on a fresh clone.
# `make run` installs only the core (requirements.txt); each other feature installs its extra on
# first use (requirements-<extra>.txt, with the core's pins as constraints), and `make test`
# installs everything.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
AWS_STAMP := $(VENV)/.installed-aws
IMAGES_STAMP := $(VENV)/.installed-images
PYTORCH_STAMP := $(VENV)/.installed-pytorch
XGBOOST_STAMP := $(VENV)/.installed-xgboost
PADDLE_STAMP := $(VENV)/.installed-paddle
JAX_STAMP := $(VENV)/.installed-jax
TEST_STAMP := $(VENV)/.installed-test
DOCS_STAMP := $(VENV)/.installed-docs
# The TensorFlow image's Python for local runs: TensorFlow needs NumPy 2, Chainer NumPy 1.
TF_VENV := .venv-tensorflow
TF_STAMP := $(TF_VENV)/.installed
# --no-compile: pip would byte-compile every installed module (compiling all of .venv took
# 98 s of CPU here, .venv-tensorflow 38 s); Python compiles the modules a command imports on
# first use instead, and keeps them.
PIP_FLAGS := --quiet --disable-pip-version-check --no-compile
# That needs Python to keep what it compiles: a PYTHONDONTWRITEBYTECODE in the environment (some
# CI images set it) would make every command compile its imports again, every time (the review
# tests ran 1.5x longer for it here; importing pulumi-kubernetes' Job modules took 0.8 s more).
unexport PYTHONDONTWRITEBYTECODE
PIP := $(BIN)/pip install $(PIP_FLAGS)
# An extra installs with the core's pins as constraints, so no extra moves a core pin.
PIP_EXTRA := $(PIP) -c requirements.txt
APT_PACKAGES := openmpi-bin libopenmpi-dev iproute2 openssh-server openssh-client
# The container engine of `trainjobs run --runtime container` and image builds: podman with
# runc (crun fails on cgroups in hybrid mode on these machines), netavark and iptables for pod
# networks, catatonit for pods' infra containers, debootstrap for a Debian base made locally.
ENGINE_PACKAGES := podman runc netavark iptables catatonit debootstrap
# The registry tests' own registry: Debian's docker-registry (the CNCF distribution registry),
# which they serve on 127.0.0.1 with their own config, and htpasswd for its basic auth (bcrypt).
REGISTRY_PACKAGES := docker-registry apache2-utils
# How this machine builds images (trainjobs images configure): its own Debian mirror, pip
# configuration and CA bundle, and no registry (a bootstrapped base, the kubectl stand-in).
# `make engine ENGINE_SETTINGS=` builds from the public sources instead.
ENGINE_SETTINGS ?= --host-config --no-registry
# As root with an engine (others build with `trainjobs images build` themselves).
HAVE_ENGINE = [ "$$(id -u)" = 0 ] && { command -v podman >/dev/null || docker version >/dev/null 2>&1; }

.PHONY: setup setup-aws setup-images setup-pytorch setup-tf setup-test setup-infra setup-all \
	setup-docs system-deps engine-deps engine-settings registry-deps engine \
	container-images test test-frameworks checks lint run run-pytorch run-tf preview docs dist \
	setup-xgboost setup-paddle setup-jax run-xgboost run-paddle run-jax \
	crds images bench clean

# The core: what `make run` (the ChainerMN example), validate, render and preview need.
setup: $(STAMP)
# Extras, each installed on first use by the target that needs it (pip prints nothing while it
# works, so every step says what it installs and how many steps are left).
setup-aws: $(AWS_STAMP)          # GPU node pools, CUDA image repositories, `trainjobs preflight`
setup-images: $(IMAGES_STAMP)    # CUDA image builds (pulumi-docker-build)
setup-pytorch: $(PYTORCH_STAMP)  # local PyTorch runs (CPU torch)
setup-tf: $(TF_STAMP)            # local TensorFlow runs (their own virtualenv)
setup-xgboost: $(XGBOOST_STAMP)  # local XGBoostJob runs (CPU XGBoost)
setup-paddle: $(PADDLE_STAMP)    # local PaddleJob runs (CPU PaddlePaddle)
setup-jax: $(JAX_STAMP)          # local JAXJob runs (CPU JAX)
setup-test: $(TEST_STAMP)        # test, lint and release-check tools
setup-docs: $(DOCS_STAMP)        # the docs site (MkDocs with Material)
setup-infra: setup-aws setup-images  # the infra/ project (`pulumi -C infra up`)
# The TensorFlow virtualenv installs beside the core's extras, which install one after another
# (one pip at a time in a virtualenv).
setup-all: setup
	@$(MAKE) --no-print-directory setup-tf & tf=$$!; \
	$(MAKE) --no-print-directory setup-aws setup-images setup-pytorch setup-xgboost setup-paddle \
		setup-jax setup-test setup-docs; \
	extras=$$?; wait $$tf && [ $$extras = 0 ]

# Debian packages for local runs and the MPI plumbing tests (Open MPI, its headers for
# building mpi4py, iproute2 and util-linux for pod network namespaces, OpenSSH for the ssh
# transport); installed only when root and missing.
system-deps:
	@if [ "$$(id -u)" = 0 ] && ! (command -v mpiexec >/dev/null && command -v mpicc >/dev/null && command -v ip >/dev/null && command -v nsenter >/dev/null && command -v ssh-keygen >/dev/null && test -x /usr/sbin/sshd); then \
		echo "[setup] system packages: installing $(APT_PACKAGES)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(APT_PACKAGES) util-linux >/dev/null; \
	fi

# Installed only when root and missing; without them container runs and image builds are
# unavailable and their tests skip.
engine-deps:
	@if [ "$$(id -u)" = 0 ] && ! (command -v podman && command -v runc && test -x /usr/lib/podman/netavark && command -v iptables && command -v catatonit && command -v debootstrap) >/dev/null 2>&1; then \
		echo "[setup] container engine: installing $(ENGINE_PACKAGES)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(ENGINE_PACKAGES) >/dev/null; \
	fi

# Installed only when root and missing; without them the registry tests skip. The package's
# own service is stopped and disabled where systemd started it: the tests run theirs.
registry-deps:
	@if [ "$$(id -u)" = 0 ] && ! (command -v docker-registry && command -v htpasswd) >/dev/null 2>&1; then \
		echo "[setup] test registry: installing $(REGISTRY_PACKAGES)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(REGISTRY_PACKAGES) >/dev/null; \
		if command -v systemctl >/dev/null && systemctl is-enabled --quiet docker-registry 2>/dev/null; then \
			systemctl disable --now --quiet docker-registry; \
		fi; \
	fi

# This project's engine settings and build settings (out/engine/, never /etc/containers).
engine-settings: setup engine-deps
	@if $(HAVE_ENGINE); then $(BIN)/trainjobs images configure $(ENGINE_SETTINGS); fi

# Then the local images builds start from, made once.
engine: engine-settings
	@if $(HAVE_ENGINE); then $(BIN)/trainjobs images bootstrap; \
	else echo "no container engine (or not root): container images are not built here"; fi

# The CPU images the examples run, tagged as jobs name them; a current image is kept.
container-images: engine
	@if $(HAVE_ENGINE); then $(BIN)/trainjobs images build; fi

# chainer and mpi4py build from sdists with the pinned setuptools and wheel, so those come
# first and the rest installs without build isolation.
$(STAMP): requirements.txt pyproject.toml
	@$(MAKE) --no-print-directory system-deps
	@echo "[setup] core 1/4: creating $(VENV)"
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "[setup] core 2/4: installing setuptools and wheel (build tools, ~10 MB)"
	@$(PIP) $$(grep -E '^(setuptools|wheel)==' requirements.txt | cut -d' ' -f1)
	@echo "[setup] core 3/4: installing Pulumi, pulumi-kubernetes, pydantic, the Kubernetes client and schemas, NumPy, SciPy, scikit-learn (~500 MB)"
	@grep -vE '^(chainer|mpi4py)==' requirements.txt | $(PIP) --no-build-isolation -r /dev/stdin
	@echo "[setup] core 4/4: building Chainer and mpi4py (against Open MPI), installing trainjobs"
	@grep -E '^(chainer|mpi4py)==' requirements.txt | $(PIP) --no-build-isolation -r /dev/stdin
	@$(PIP) --no-deps -e .
	@touch $@
	@echo "[setup] core installed; other features install their extras on first use"

$(AWS_STAMP): requirements-aws.txt | $(STAMP)
	@echo "[setup] aws extra 1/1: installing pulumi-aws, boto3 (~310 MB)"
	@$(PIP_EXTRA) -r requirements-aws.txt
	@touch $@

$(IMAGES_STAMP): requirements-images.txt | $(STAMP)
	@echo "[setup] images extra 1/1: installing pulumi-docker-build (<1 MB)"
	@$(PIP_EXTRA) -r requirements-images.txt
	@touch $@

# torch installs on its own, without its declared dependencies (see requirements-pytorch.txt).
$(PYTORCH_STAMP): requirements-pytorch.txt | $(STAMP)
	@echo "[setup] pytorch extra 1/2: installing sympy, networkx, fsspec, Jinja2 (torch's dependencies, ~100 MB)"
	@grep -vE '^torch==' requirements-pytorch.txt | $(PIP_EXTRA) -r /dev/stdin
	@echo "[setup] pytorch extra 2/2: installing torch (CPU build, ~750 MB installed)"
	@$(PIP) --no-deps $$(grep -E '^torch==' requirements-pytorch.txt | cut -d' ' -f1)
	@touch $@

$(XGBOOST_STAMP): requirements-xgboost.txt | $(STAMP)
	@echo "[setup] xgboost extra 1/1: installing XGBoost (CPU build, ~20 MB installed)"
	@$(PIP_EXTRA) -r requirements-xgboost.txt
	@touch $@

$(PADDLE_STAMP): requirements-paddle.txt | $(STAMP)
	@echo "[setup] paddle extra 1/1: installing PaddlePaddle (CPU build, ~720 MB installed)"
	@$(PIP_EXTRA) -r requirements-paddle.txt
	@touch $@

$(JAX_STAMP): requirements-jax.txt | $(STAMP)
	@echo "[setup] jax extra 1/1: installing JAX and jaxlib (CPU, ~310 MB installed)"
	@$(PIP_EXTRA) -r requirements-jax.txt
	@touch $@

$(TF_STAMP): requirements-tensorflow.txt
	@echo "[setup] tensorflow extra 1/2: creating $(TF_VENV)"
	@test -x $(TF_VENV)/bin/python || $(PYTHON) -m venv $(TF_VENV)
	@echo "[setup] tensorflow extra 2/2: installing TensorFlow 2.20 (CPU) and its closure (~1.3 GB)"
	@$(TF_VENV)/bin/pip install $(PIP_FLAGS) --no-deps -r requirements-tensorflow.txt
	@touch $@

$(DOCS_STAMP): requirements-docs.txt | $(STAMP)
	@echo "[setup] docs extra 1/1: installing MkDocs and Material for MkDocs (~30 MB)"
	@$(PIP_EXTRA) -r requirements-docs.txt
	@touch $@

# moto (a test tool) needs boto3, so the test tools come after the aws extra.
$(TEST_STAMP): requirements-test.txt $(AWS_STAMP) | $(STAMP)
	@echo "[setup] test extra 1/1: installing pytest, pytest-xdist, hypothesis, ruff, mypy, moto, build, twine (~110 MB)"
	@$(PIP_EXTRA) -r requirements-test.txt
	@touch $@

# Every test, on every core: pytest-xdist spreads the pure tests over the cores, while the tests
# that start pods, network namespaces, containers or MPI ranks form one group (tests/conftest.py)
# that a single worker runs one after another. One pytest run, one summary line.
# Two targets share the recipe below:
# - `make test`, the gate, under 12 minutes on a fresh 2-core machine: every test but those
#   that train a framework beyond the core's Chainer, with the core, aws, images, test and docs
#   extras and the images of the core (CORE_IMAGES);
# - `make test-frameworks`: the PyTorch, TensorFlow, XGBoost, PaddlePaddle and JAX examples
#   trained as processes and in their images (every extra, every CPU image). CI runs both.
# Nothing waits for what it does not need (a fresh machine took 19 min one step after another):
# - the images (minutes) build in the background from the moment the core and the engine
#   settings exist, in their own process group, two at a time (most of a build waits on
#   downloads), the whole output in IMAGE_LOG (a line on the terminal as each image is ready),
#   the exit status in IMAGE_LOG.rc; a test that runs an image waits for it
#   (tests/image_builds.py);
# - the docs site, the release artefacts and the static checks run beside the tests (no test
#   reads what they write), their output in CHECKS_LOG, shown when they end;
# - the 20 slowest tests are listed, to see what the serial group spends its time on.
# Whatever ends the recipe (a failure, Ctrl-C) stops the builds too.
# The images whose examples run on the core install (tests/conftest.py, core_images).
CORE_IMAGES := trainjobs/chainer:7.8.1 trainjobs/chainermn:7.8.1
IMAGE_LOG := out/engine/build-logs/make-test.log
CHECKS_LOG := out/test-checks.log
test: SUITE_SETUP := setup-aws setup-images setup-test setup-docs
test: SUITE_IMAGES := $(CORE_IMAGES)
test: SUITE_MARKERS := not frameworks
test: SUITE_CHECKS := docs dist checks
test-frameworks: SUITE_SETUP := setup-all
test-frameworks: SUITE_IMAGES :=
test-frameworks: SUITE_MARKERS := frameworks
test-frameworks: SUITE_CHECKS :=
test test-frameworks: setup engine-settings registry-deps
	@rm -f $(IMAGE_LOG) $(IMAGE_LOG).rc; mkdir -p $(dir $(IMAGE_LOG)); builds=; checks=; \
	trap '[ -z "$$builds" ] || kill -- -$$builds 2>/dev/null' EXIT; \
	if $(HAVE_ENGINE); then \
		echo "[images] building $(or $(SUITE_IMAGES),the CPU images) in the background: $(IMAGE_LOG)"; \
		setsid sh -c '{ $(BIN)/trainjobs images build --jobs 2 $(SUITE_IMAGES) 2>&1; echo $$? >$(IMAGE_LOG).part; } \
			| tee $(IMAGE_LOG) | grep --line-buffered -E "^\[images\] [^ ]+: (built in|up to date|imported)|^error"; \
			mv $(IMAGE_LOG).part $(IMAGE_LOG).rc' & \
		builds=$$!; export TRAINJOBS_TEST_IMAGE_LOG=$(CURDIR)/$(IMAGE_LOG); \
	fi; \
	$(MAKE) --no-print-directory $(SUITE_SETUP) || exit; \
	if [ -n "$(SUITE_CHECKS)" ]; then \
		$(MAKE) --no-print-directory $(SUITE_CHECKS) >$(CHECKS_LOG) 2>&1 & checks=$$!; \
	fi; \
	$(BIN)/pytest -q -n auto --dist loadgroup --durations=20 -m "$(SUITE_MARKERS)"; tested=$$?; \
	checked=0; [ -z "$$checks" ] || { wait $$checks; checked=$$?; cat $(CHECKS_LOG); }; \
	[ $$tested = 0 ] && [ $$checked = 0 ] || exit 1; \
	[ -z "$$builds" ] || { wait $$builds; [ "$$(cat $(IMAGE_LOG).rc)" = 0 ]; }

# The static checks of `make test`: lint, and types of the package and examples/sweep ([tool.mypy]
# files).
checks: setup-test
	$(BIN)/ruff check .
	$(BIN)/python -m mypy

# The docs site; --strict fails on a broken link, a missing page or an unknown anchor.
docs: setup-docs
	@NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet
	@echo "docs: out/site/index.html"

# The release artefacts, built as a user's pip would and checked as PyPI checks them.
dist: setup-test
	@rm -rf out/dist
	@$(BIN)/python -m build --quiet --sdist --wheel --outdir out/dist .
	@$(BIN)/twine check --strict out/dist/*

lint: setup-test
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# The main job on the embedded default: train the distributed ChainerMN example on this
# machine (master + 2 workers, three MPI ranks through real Open MPI).
run: setup
	$(BIN)/trainjobs run jobs/chainermn-mnist.yaml

# The other examples, each with its extras (they need network namespaces: run as root).
run-pytorch: setup setup-pytorch
	$(BIN)/trainjobs run jobs/pytorch-mnist.yaml

run-tf: setup setup-tf
	$(BIN)/trainjobs run jobs/tf-mnist.yaml

# One image carries XGBoost, PaddlePaddle and JAX, so its local runs need the three extras.
run-xgboost: setup setup-xgboost setup-paddle setup-jax
	$(BIN)/trainjobs run jobs/xgboost-digits.yaml

run-paddle: setup setup-xgboost setup-paddle setup-jax
	$(BIN)/trainjobs run jobs/paddle-digits.yaml

run-jax: setup setup-xgboost setup-paddle setup-jax
	$(BIN)/trainjobs run jobs/jax-digits.yaml

# The distributed example as Pulumi would register it, offline (mock runtime, no cluster).
preview: setup
	$(BIN)/trainjobs preview --stack chainermn-mnist --out out/preview/chainermn-mnist

# Benchmarks (not tests): rewrites bench/RESULTS.md. Run on an otherwise idle machine.
bench: setup
	$(BIN)/python bench/run_all.py

crds: setup
	$(BIN)/trainjobs crds --out crds

# Regenerate images/*/Dockerfile from the image declarations (components/images/catalogue.py).
images: setup
	$(BIN)/trainjobs dockerfiles --out images

clean:
	rm -rf $(VENV) $(TF_VENV) out .pytest_cache .ruff_cache
