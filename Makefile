# Every target that needs the environment builds it first, so each works on a fresh clone.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The TensorFlow image's Python for local runs: TensorFlow needs NumPy 2, Chainer NumPy 1.
TF_VENV := .venv-tensorflow
TF_STAMP := $(TF_VENV)/.installed
APT_PACKAGES := openmpi-bin libopenmpi-dev iproute2 openssh-server openssh-client
# The container engine of `trainjobs run --runtime container` and image builds: podman with
# runc (crun fails on cgroups in hybrid mode on these machines), netavark and iptables for pod
# networks, catatonit for pods' infra containers, debootstrap for a Debian base made locally.
ENGINE_PACKAGES := podman runc netavark iptables catatonit debootstrap
# How this machine builds images (trainjobs images configure): its own Debian mirror, pip
# configuration and CA bundle, and no registry (a bootstrapped base, the kubectl stand-in).
# `make engine ENGINE_SETTINGS=` builds from the public sources instead.
ENGINE_SETTINGS ?= --host-config --no-registry
# As root with an engine (others build with `trainjobs images build` themselves).
HAVE_ENGINE = [ "$$(id -u)" = 0 ] && { command -v podman >/dev/null || docker version >/dev/null 2>&1; }

.PHONY: setup system-deps engine-deps engine container-images test lint run preview crds images bench clean

setup: $(STAMP) $(TF_STAMP)

# Debian packages for local runs and the MPI plumbing tests (Open MPI, its headers for
# building mpi4py, iproute2 and util-linux for pod network namespaces, OpenSSH for the ssh
# transport); installed only when root and missing.
system-deps:
	@if [ "$$(id -u)" = 0 ] && ! (command -v mpiexec >/dev/null && command -v mpicc >/dev/null && command -v ip >/dev/null && command -v nsenter >/dev/null && command -v ssh-keygen >/dev/null && test -x /usr/sbin/sshd); then \
		echo "installing $(APT_PACKAGES)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(APT_PACKAGES) util-linux >/dev/null; \
	fi

# chainer and mpi4py build from sdists with the pinned setuptools and wheel, so those come
# first and the rest installs without build isolation; torch comes last, without its declared
# dependencies (it asks for a newer setuptools than chainer allows; see requirements.txt).
# Installed only when root and missing; without them container runs and image builds are
# unavailable and their tests skip.
engine-deps:
	@if [ "$$(id -u)" = 0 ] && ! (command -v podman && command -v runc && test -x /usr/lib/podman/netavark && command -v iptables && command -v catatonit && command -v debootstrap) >/dev/null 2>&1; then \
		echo "installing $(ENGINE_PACKAGES)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(ENGINE_PACKAGES) >/dev/null; \
	fi

# This project's engine settings and build settings (out/engine/, never /etc/containers),
# then the local images builds start from, made once.
engine: setup engine-deps
	@if $(HAVE_ENGINE); then \
		$(BIN)/trainjobs images configure $(ENGINE_SETTINGS) && $(BIN)/trainjobs images bootstrap; \
	else echo "no container engine (or not root): container images are not built here"; fi

# The CPU images the examples run, tagged as jobs name them; a current image is kept.
container-images: engine
	@if $(HAVE_ENGINE); then $(BIN)/trainjobs images build; fi

$(STAMP): requirements.txt pyproject.toml
	$(MAKE) --no-print-directory system-deps
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check $$(grep -E '^(setuptools|wheel)==' requirements.txt | cut -d' ' -f1)
	grep -vE '^torch==' requirements.txt | $(BIN)/pip install --quiet --disable-pip-version-check --no-build-isolation -r /dev/stdin
	$(BIN)/pip install --quiet --disable-pip-version-check --no-deps $$(grep -E '^torch==' requirements.txt | cut -d' ' -f1)
	$(BIN)/pip install --quiet --disable-pip-version-check --no-deps -e .
	touch $(STAMP)

$(TF_STAMP): requirements-tensorflow.txt
	test -x $(TF_VENV)/bin/python || $(PYTHON) -m venv $(TF_VENV)
	$(TF_VENV)/bin/pip install --quiet --disable-pip-version-check --no-deps -r requirements-tensorflow.txt
	touch $(TF_STAMP)

test: setup container-images
	$(BIN)/ruff check .
	$(BIN)/python -m mypy  # the package and examples/sweep ([tool.mypy] files)
	$(BIN)/pytest -q

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# The main job on the embedded default: train the distributed ChainerMN example on this
# machine (master + 2 workers, three MPI ranks through real Open MPI).
run: setup
	$(BIN)/trainjobs run jobs/chainermn-mnist.yaml

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
