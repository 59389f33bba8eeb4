# Every target that needs the environment builds it first, so each works on a fresh clone.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
APT_PACKAGES := openmpi-bin libopenmpi-dev iproute2

.PHONY: setup system-deps test lint run preview crds clean

setup: $(STAMP)

# Debian packages for the MPI plumbing tests; installed only when root and missing.
system-deps:
	@if [ "$$(id -u)" = 0 ] && ! (command -v mpiexec >/dev/null && command -v ip >/dev/null && command -v nsenter >/dev/null); then \
		echo "installing $(APT_PACKAGES)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(APT_PACKAGES) util-linux >/dev/null; \
	fi

$(STAMP): requirements.txt pyproject.toml
	$(MAKE) --no-print-directory system-deps
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -r requirements.txt
	$(BIN)/pip install --quiet --disable-pip-version-check --no-deps -e .
	touch $(STAMP)

test: setup
	$(BIN)/ruff check .
	$(BIN)/pytest -q

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# The main job on the embedded default: preview the distributed ChainerMN example offline.
run: setup
	$(BIN)/trainjobs preview --stack chainermn-mnist --out out/preview/chainermn-mnist

crds: setup
	$(BIN)/trainjobs crds --out crds

clean:
	rm -rf $(VENV) out .pytest_cache .ruff_cache
