# Two commands for a fresh machine: `make figures` and `make test`.
# Each sets up .venv on first use (python3 -m venv + pip); re-running skips what is done.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: setup test figures figures-fresh lab site course
setup: $(STAMP)

# pyproject.toml is the one list of requirements; a change to it reinstalls. Every extra: lab (JupyterLab,
# widgets), site (Sphinx), test (pytest, nbval, playwright, peft), ray (`sweep --executor ray` and its tests).
$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[lab,site,test,ray]'
	touch $@

test: $(STAMP)
	HF_HUB_OFFLINE=1 $(PY) -m pytest

figures: $(STAMP)
	$(PY) -m adapterlab regenerate --profile default

# WORKERS runs train side by side, sharing the cores (2 on the 2-core reference machine: ~1.4x the
# examples per second of one run on both cores; each worker holds ~1.8 GB). It prints the time to
# pass as SINCE to resume an interrupted run: make figures-fresh SINCE=2026-12-01T19:26:48+00:00
WORKERS ?= 2
figures-fresh: $(STAMP)
	$(PY) -m adapterlab regenerate --profile default --workers $(WORKERS) $(if $(SINCE),--since $(SINCE),--fresh)

# JupyterLab refuses to start as root (containers, course servers) unless told --allow-root: added
# only then. UID is the user's id (override to try it: make -n lab UID=0)
UID ?= $(shell id -u)
lab: $(STAMP)
	$(VENV)/bin/jupyter lab $(if $(filter 0,$(UID)),--allow-root )notebooks/

# the course website, from the default profile's executed notebooks (re-running those that are
# missing or older than their source, from cached results): build/site/default/html/index.html
site: $(STAMP)
	$(PY) -m adapterlab.course.site --profile default

# the student version (stubs) and the teacher's version (solutions filled in) of every notebook
course: $(STAMP)
	$(PY) -m adapterlab.course.exercises --out build/course

include benchmarks/Makefile.inc
